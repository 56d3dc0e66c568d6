"""What the operators, the frame handler and the overlay share: which meshes take part,
their built data, and the last query's result (kept per scene, in memory)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np

from ..core import scan as core_scan
from . import extract, scanner, storage


class SessionError(ValueError):
    """A user-facing problem; the message says what to do."""


class DegeneratePose(SessionError):
    """Bones of the pose collapse space (zero scale): the frame is not checked, because
    every squashed triangle touches every other one (MakeHuman with spine03 at scale 0:
    2.1 million triangle pairs; Blender's own BVHTree took 29-58 s for that frame,
    bench/bench_degenerate.py)."""


@dataclass
class LiveResult:
    """The last query of a scene: per object, the colliding triangles, the positions and
    the triangles of the frame they were found at (Blender's split of the deformed quads,
    so that the overlay draws exactly the triangles that collide), the polygon pairs, and
    the sphere wireframes drawn so far at this frame (by object name and tree level)."""

    frame: int
    ms: float
    names: list[str]
    positions: list[np.ndarray]
    hit_triangles: list[np.ndarray]
    polygon_pairs: list[tuple[str, int, str, int]]
    triangles: list[np.ndarray] = field(default_factory=list)
    spheres: dict[tuple[str, int], np.ndarray] = field(default_factory=dict)
    error: str = ""
    total_pairs: int = -1
    warning: str = ""
    not_checked: bool = False

    @property
    def n_pairs(self) -> int:
        """The exact number of colliding polygon pairs (`polygon_pairs` may be capped)."""
        return self.total_pairs if self.total_pairs >= 0 else len(self.polygon_pairs)


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

    The quick check (every frame) compares `storage.state_signature` (counts, vertex group
    names, modifiers, shape keys, bones);
    `full_check` also re-reads weights, rest positions and bones (once per scan), which
    catches weight painting since the build.
    """
    from ..core import persist

    ready = [ob for ob in meshes if storage.has_data(ob)]
    if not ready:
        raise SessionError("no collision data yet: press Build first")
    for ob in ready:
        storage.adopt(ob)
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


def load_objects(meshes: list) -> list:
    """The stored collision data of `meshes`; data saved by an older version of the
    add-on (another format) is a SessionError asking for a rebuild."""
    out = []
    for ob in meshes:
        try:
            out.append(storage.load(ob))
        except ValueError as exc:
            raise SessionError(f"'{ob.name}': {exc}") from None
    return out



MAX_PAIRS = 20000
"""At most this many colliding polygon pairs are kept per frame (for the overlay, selection,
bake and reports); the count is always exact. More pairs than this means a broken pose."""


def _normalized(p: np.ndarray, same: bool) -> np.ndarray:
    """(K, 2) int64 pairs, unique rows in sorted order, each self pair (`same`) as
    (min, max). Rows are packed into one int64 key (much faster than unique on rows)."""
    if not p.size:
        return p.reshape(0, 2)
    if same:
        p = np.sort(p, axis=1)
    base = int(p.max()) + 1
    k = np.unique(p[:, 0] * base + p[:, 1])
    return np.stack([k // base, k % base], axis=1)


def _rows_in(p: np.ndarray, known: np.ndarray) -> np.ndarray:
    """(K,) bool: which rows of `p` (K, 2) are rows of `known` (M, 2)."""
    base = int(max(p.max(initial=0), known.max(initial=0))) + 1
    return np.isin(p[:, 0] * base + p[:, 1], known[:, 0] * base + known[:, 1])


def _rest_by_pair(scene) -> dict:
    """Rest contacts grouped by (uid a, uid b) as (M, 2) int64 triangle pairs."""
    grouped: dict = {}
    for a_id, a, b_id, b in _read_contacts(scene):
        grouped.setdefault((a_id, b_id), []).append((a, b))
        if a_id != b_id:        # the objects may come in the other order in a query
            grouped.setdefault((b_id, a_id), []).append((b, a))
    return {k: np.array(v, dtype=np.int64).reshape(-1, 2) for k, v in grouped.items()}


def _contacts_text(scene, create: bool = False):
    import bpy

    s = scene.skin_collide
    if s.rest_contacts is None and create:
        s.rest_contacts = bpy.data.texts.new(storage.TEXT_PREFIX + "rest_contacts")
    return s.rest_contacts


def _read_contacts(scene) -> list:
    text = _contacts_text(scene)
    if text is None:
        return []
    try:
        data = json.loads(text.as_string() or "[]")
    except ValueError:
        return []
    return [tuple(p) for p in data if isinstance(p, list) and len(p) == 4]


def rest_contacts(scene) -> set[tuple[str, int, str, int]]:
    """Triangle pairs that collide in the rest pose, by the objects' stable ids
    (`storage.uid`), so that renaming a mesh or rebuilding another keeps them."""
    return set(_read_contacts(scene))


def store_rest_contacts(scene, meshes, objects, self_collision: bool) -> int:
    """Query the rest pose of `meshes` (armatures switched to Rest Position for the
    evaluation, then restored) and store the colliding triangle pairs. Contacts of other
    characters are kept; those between a rebuilt mesh and another built, up-to-date mesh
    are recomputed with it. Returns the number of contacts involving `meshes`."""
    built_ids = {storage.uid(ob) for ob in meshes}
    others = [ob for ob in scene.objects if ob.type == "MESH" and ob not in meshes
              and storage.has_data(ob) and not storage.stale_reason(ob)]
    try:
        other_objs = [storage.load(ob) for ob in others]
    except ValueError:
        others, other_objs = [], []
    group = list(meshes) + others
    objs = list(objects) + other_objs
    from .handlers import quiet     # the rest-pose switch is not a pose edit

    with quiet():
        pairs = scanner.rest_pose_pairs(group, objs, self_collision)
    ids = [storage.uid(ob) for ob in group]
    new = set()
    for i, j, p in pairs:
        if ids[i] in built_ids or ids[j] in built_ids:
            p = _normalized(np.asarray(p, dtype=np.int64).reshape(-1, 2), i == j)
            new |= {(ids[i], a, ids[j], b) for a, b in p.tolist()}
    kept = {p for p in _read_contacts(scene) if p[0] not in built_ids and p[2] not in built_ids}
    _contacts_text(scene, create=True).from_string(json.dumps(sorted(kept | new)))
    return len(new)


def forget_contacts(uids: set[str]) -> None:
    """Drop the rest contacts involving `uids` (their data was cleared)."""
    import bpy

    for scene in bpy.data.scenes:
        text = _contacts_text(scene)
        if text is None:
            continue
        old = _read_contacts(scene)
        kept = [p for p in old if p[0] not in uids and p[2] not in uids]
        if len(kept) != len(old):
            text.from_string(json.dumps(sorted(kept)))


def _check_rig_matches(ob, obj) -> None:
    """The armature the modifier uses now must have the bones the data was built with."""
    arm = extract.modifier_report(ob).armature
    if arm is None:
        raise SessionError(f"'{ob.name}' has no Armature modifier with an armature object "
                           "any more: restore it, or rebuild")
    if arm.type != "ARMATURE":
        raise SessionError(f"the Armature modifier of '{ob.name}' points to '{arm.name}', "
                           "which is not an armature")
    bones = arm.data.bones
    names = obj.rig.bone_names
    if len(bones) != len(names) or any(b.name != n for b, n in zip(bones, names)):
        raise SessionError(f"the armature of '{ob.name}' ('{arm.name}', {len(bones)} bones) "
                           f"is not the one it was built with ({len(names)} bones): rebuild")


def degenerate_bones(ob, obj, pose, tol: float = 1e-3) -> list[str]:
    """Deform bones weighting `ob` whose pose matrix (nearly) collapses space: a singular
    value at most `tol` (relative to the rest pose, which is 1). They squash skin to a
    point, a line, a plane or a millimetre-sized blob, which makes almost every triangle
    touch every other one."""
    rig = obj.rig
    used = np.zeros(rig.n_bones, dtype=bool)
    if rig.weight_bone.size:
        used[np.unique(rig.weight_bone)] = True
    if not used.any() or pose.deform.shape[0] != rig.n_bones:
        return []
    lin = pose.deform[used, :3, :3]
    sv = np.linalg.svd(lin, compute_uv=False)                     # (U, 3), descending
    # Blender hands the matrices over in float32: allow its rounding at the threshold.
    bad = ~np.isfinite(sv).all(axis=1) | (sv[:, 2] <= tol * (1 + 1e-6))
    names = np.array(rig.bone_names, dtype=object)[used]
    return [str(n) for n in names[bad]]


def query(scene, depsgraph, meshes: list, objects: list | None = None) -> LiveResult:
    """Collide `meshes` at the scene's current (already evaluated) frame.

    Raises SessionError (never another exception type for a user-caused problem): missing
    or changed armature, vertex count changed by modifiers, unreadable data. At most
    `MAX_PAIRS` polygon pairs are kept; `LiveResult.total_pairs` is the exact count and
    `LiveResult.warning` says when the list is capped. A pose whose bones collapse space
    raises `DegeneratePose` before any work (the frame is not checked).
    """
    s = scene.skin_collide
    objects = objects or load_objects(meshes)
    t0 = time.perf_counter()
    positions, poses, frame_tris = [], [], []
    degenerate: list[str] = []
    for ob, obj in zip(meshes, objects):
        _check_rig_matches(ob, obj)
        n = len(ob.evaluated_get(depsgraph).data.vertices)
        if n != obj.rig.n_vertices:
            raise SessionError(f"'{ob.name}' evaluates to {n} vertices but was built "
                               f"with {obj.rig.n_vertices}: rebuild (or disable modifiers after "
                               "the Armature modifier)")
        try:
            pos, tris = extract.evaluated_frame(ob, depsgraph, obj.rig)
        except extract.RigError as exc:
            raise SessionError(str(exc)) from None
        positions.append(pos)
        frame_tris.append(tris)
        try:
            pose = extract.pose_from_object(ob, depsgraph)
        except extract.RigError as exc:
            raise SessionError(str(exc)) from None
        poses.append(pose)
        degenerate += [f"{ob.name}: {b}" for b in degenerate_bones(ob, obj, pose)]
    if degenerate:
        raise DegeneratePose(
            "bones scaled to (almost) zero squash the skin (" + ", ".join(degenerate[:4])
            + (" ..." if len(degenerate) > 4 else "") + f"): frame {scene.frame_current} is "
            "not checked, since every squashed triangle touches every other; fix the pose")
    mode = "on-demand" if s.refit_mode == "ON_DEMAND" else "bottom-up"
    res = core_scan.query_frame(objects, positions, poses, mode=mode,
                                self_collision=s.self_collision, triangles=frame_tris)
    ids = [storage.uid(ob) for ob in meshes]
    names = [ob.name for ob in meshes]
    rest = _rest_by_pair(scene) if s.ignore_rest_contacts else {}
    hits = [[] for _ in meshes]
    poly_rows = []
    for i, j, p in res.pairs:
        p = _normalized(np.asarray(p, dtype=np.int64).reshape(-1, 2), i == j)
        known = rest.get((ids[i], ids[j]))
        if known is not None and p.size:
            p = p[~_rows_in(p, known)]
        if not p.size:
            continue
        hits[i].append(p[:, 0])
        hits[j].append(p[:, 1])
        pp = np.stack([objects[i].rig.tri_polygon[p[:, 0]],
                       objects[j].rig.tri_polygon[p[:, 1]]], axis=1).astype(np.int64)
        pp = _normalized(pp, i == j)
        if i == j:
            pp = pp[pp[:, 0] != pp[:, 1]]                 # a polygon never pairs with itself
        if pp.size:
            poly_rows.append((i, j, pp))
    # Sorted by (name a, polygon a, name b, polygon b), as core.scan.polygon_pairs would.
    poly_rows.sort(key=lambda r: (names[r[0]], names[r[1]]))
    n_polys = sum(r[2].shape[0] for r in poly_rows)
    polys = []
    for i, j, pp in poly_rows:
        room = MAX_PAIRS - len(polys)
        if room <= 0:
            break
        polys += [(names[i], a, names[j], b) for a, b in pp[:room].tolist()]
    polys.sort()
    warning = ""
    if n_polys > MAX_PAIRS:
        warning = f"{n_polys} colliding pairs: only the first {MAX_PAIRS} are kept"
    hit_tris = [np.unique(np.concatenate(h)) if h else np.zeros(0, dtype=np.int64)
                for h in hits]
    result = LiveResult(scene.frame_current, (time.perf_counter() - t0) * 1000.0, names,
                        positions, [t.astype(np.int64) for t in hit_tris], polys,
                        total_pairs=n_polys, warning=warning, triangles=frame_tris)
    _live[scene.name_full] = result
    return result


def not_checked(scene, message: str) -> LiveResult:
    """The result of a frame that was not checked (see `DegeneratePose`): no pairs, the
    reason in `error`, `not_checked` set."""
    res = LiveResult(scene.frame_current, 0.0, [], [], [], [], error=message, not_checked=True)
    _live[scene.name_full] = res
    return res


def record_error(scene, message: str) -> None:
    """Keep a failed live query's message for the panel (the overlay then draws nothing)."""
    _live[scene.name_full] = LiveResult(scene.frame_current, 0.0, [], [], [], [], error=message)


def forget(scene) -> None:
    _live.pop(scene.name_full, None)
