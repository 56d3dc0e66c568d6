"""What the operators, the frame handler and the overlay share: which meshes take part,
their built data, and the last query's result (kept per scene, in memory)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np

from ..core import scan as core_scan
from . import extract, storage


class SessionError(ValueError):
    """A user-facing problem; the message says what to do."""


@dataclass
class LiveResult:
    """The last query of a scene: per object, the colliding triangles and the positions
    they were found at (for the overlay), the polygon pairs, and the sphere wireframes
    drawn so far at this frame (by object name and tree level)."""

    frame: int
    ms: float
    names: list[str]
    positions: list[np.ndarray]
    hit_triangles: list[np.ndarray]
    polygon_pairs: list[tuple[str, int, str, int]]
    spheres: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    error: str = ""

    @property
    def n_pairs(self) -> int:
        return len(self.polygon_pairs)


_live: dict[str, LiveResult] = {}


def live_result(scene) -> LiveResult | None:
    return _live.get(scene.name_full)


def participants(scene, context=None) -> list:
    """The skinned meshes that take part, per the scene settings."""
    s = scene.skin_collide
    if s.source == "COLLECTION":
        if s.collection is None:
            raise SessionError("choose a collection of characters, or use Selected")
        candidates = list(s.collection.all_objects)
    else:
        candidates = list(context.selected_objects) if context is not None else \
            [ob for ob in scene.objects if ob.select_get()]
    meshes = [ob for ob in candidates if ob.type == "MESH"]
    if not meshes:
        raise SessionError("no mesh selected: select the skinned characters to check")
    return meshes


def built(scene, meshes: list, full_check: bool = False) -> list:
    """Meshes with usable built data (raises SessionError when none, or when one is stale).

    The quick check (every frame) compares vertex/face counts and vertex group names;
    `full_check` also re-reads weights, rest positions and bones (once per scan), which
    catches weight painting since the build.
    """
    from ..core import persist

    ready = [ob for ob in meshes if storage.has_data(ob)]
    if not ready:
        raise SessionError("no collision data yet: press Build first")
    for ob in ready:
        reason = storage.stale_reason(ob)
        if not reason and full_check:
            try:
                current = persist.rig_signature(extract.rig_from_object(ob))
            except extract.RigError as exc:
                raise SessionError(str(exc)) from None
            if current != ob.skin_collide.signature:
                reason = (f"the weights, rest shape or bones of '{ob.name}' changed since its "
                          "collision data was built: rebuild")
        if reason:
            raise SessionError(reason)
    return ready


def _pairs_to_sets(result: core_scan.FrameResult) -> set:
    return {(i, int(a), j, int(b)) for i, j, p in result.pairs for a, b in p.tolist()}


def rest_contacts(scene) -> set[tuple[str, int, str, int]]:
    """Triangle pairs (by object name) that collide in the rest pose, from the last build."""
    text = scene.skin_collide.rest_contacts
    if text is None:
        return set()
    return {tuple(p) for p in json.loads(text.as_string() or "[]")}


def store_rest_contacts(scene, meshes, objects, self_collision: bool) -> int:
    """Query the rest pose of `meshes` (armatures switched to Rest Position for the
    evaluation, then restored) and store the colliding triangle pairs."""
    import bpy

    from .handlers import quiet     # the rest-pose switch is not a pose edit

    arms = {extract.modifier_report(ob).armature for ob in meshes}
    saved = {a: a.data.pose_position for a in arms}
    with quiet():
        try:
            for a in arms:
                a.data.pose_position = "REST"
            bpy.context.view_layer.update()
            dg = bpy.context.evaluated_depsgraph_get()
            positions = [extract.evaluated_positions(ob, dg) for ob in meshes]
            res = core_scan.query_frame(objects, positions, [None] * len(objects),
                                        mode="bottom-up", self_collision=self_collision)
        finally:
            for a, pos in saved.items():
                a.data.pose_position = pos
            bpy.context.view_layer.update()
    names = [ob.name for ob in meshes]
    pairs = sorted((names[i], a, names[j], b) for i, a, j, b in _pairs_to_sets(res))
    s = scene.skin_collide
    if s.rest_contacts is None:
        s.rest_contacts = bpy.data.texts.new(storage.TEXT_PREFIX + "rest_contacts")
    s.rest_contacts.from_string(json.dumps(pairs))
    return len(pairs)


def query(scene, depsgraph, meshes: list, objects: list | None = None) -> LiveResult:
    """Collide `meshes` at the scene's current (already evaluated) frame."""
    s = scene.skin_collide
    objects = objects or [storage.load(ob) for ob in meshes]
    t0 = time.perf_counter()
    positions, poses = [], []
    for ob, obj in zip(meshes, objects):
        pos = extract.evaluated_positions(ob, depsgraph)
        if pos.shape[0] != obj.rig.n_vertices:
            raise SessionError(f"'{ob.name}' evaluates to {pos.shape[0]} vertices but was built "
                               f"with {obj.rig.n_vertices}: rebuild (or disable modifiers after "
                               "the Armature modifier)")
        positions.append(pos)
        poses.append(extract.pose_from_object(ob, depsgraph))
    mode = "on-demand" if s.refit_mode == "ON_DEMAND" else "bottom-up"
    res = core_scan.query_frame(objects, positions, poses, mode=mode,
                                self_collision=s.self_collision)
    names = [ob.name for ob in meshes]
    found = _pairs_to_sets(res)
    if s.ignore_rest_contacts:
        rest = rest_contacts(scene)
        found = {p for p in found if (names[p[0]], p[1], names[p[2]], p[3]) not in rest}
    hits = [set() for _ in meshes]
    grouped: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for i, a, j, b in found:
        hits[i].add(a)
        hits[j].add(b)
        grouped.setdefault((i, j), []).append((a, b))
    kept = core_scan.FrameResult([(i, j, np.array(p, dtype=np.int64))
                                  for (i, j), p in grouped.items()], res.ms)
    polys = [(names[i], pa, names[j], pb)
             for i, pa, j, pb in core_scan.polygon_pairs(objects, kept)]
    result = LiveResult(scene.frame_current, (time.perf_counter() - t0) * 1000.0, names,
                        positions, [np.array(sorted(h), dtype=np.int64) for h in hits],
                        sorted(polys))
    _live[scene.name_full] = result
    return result


def record_error(scene, message: str) -> None:
    """Keep a failed live query's message for the panel (the overlay then draws nothing)."""
    _live[scene.name_full] = LiveResult(scene.frame_current, 0.0, [], [], [], [], error=message)


def forget(scene) -> None:
    _live.pop(scene.name_full, None)
