"""Scan frames of a Blender scene for collisions: the glue between bpy and core.scan.

Modes:
* ``on-demand``: sphere trees refitted from the pose matrices (Kavan & Žára 2005), with
  the bottom-up fallback for rigs whose deformation the LBS bound does not cover;
* ``bottom-up``: sphere trees refitted from the evaluated positions every frame;
* ``rebuild``: Blender's own ``mathutils.bvhtree.BVHTree`` rebuilt every frame on the
  evaluated world-space loop triangles of that frame and queried with ``overlap`` (the
  reference).

Every mode uses the triangles Blender draws at the frame (deformed quads are re-split,
`core.geometry.triangulation`); `evaluate` reads them with the positions.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import numpy as np

from ..core import contacts
from ..core import report as core_report
from ..core import scan as core_scan
from ..core import traversal
from . import extract

MODES = ("on-demand", "bottom-up", "rebuild")


@dataclass
class FrameRecord:
    frame: int
    pairs: list[tuple[str, int, str, int]]
    ms: float
    eval_ms: float
    modes: list[str] = field(default_factory=list)


@dataclass
class ScanReport:
    """A scan's frames so far. `refit` maps each object to the refit actually used
    ("on-demand", "bottom-up", "rebuild"; several joined by "+" if it changed between
    frames); `complete` is False until every frame was scanned; `interrupted` is True when
    the scan was stopped (Ctrl-C)."""

    objects: list[str]
    frames: list[FrameRecord]
    refit: dict[str, str]
    build_seconds: dict[str, float]
    complete: bool = True
    interrupted: bool = False
    frames_requested: int = 0

    def episodes(self) -> list[contacts.Episode]:
        return contacts.episodes([(f.frame, f.pairs) for f in self.frames])

    def to_json(self) -> dict:
        return {
            "objects": self.objects,
            "refit": self.refit,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "frames_requested": self.frames_requested or len(self.frames),
            "frames": [{"frame": f.frame, "pairs": [list(p) for p in f.pairs],
                        "ms": round(f.ms, 4)} for f in self.frames],
            "episodes": [e.to_json() for e in self.episodes()],
        }

    def write_json(self, path: str) -> None:
        """Atomic: the file is always a whole document (old or new)."""
        core_report.write_atomic(path, json.dumps(self.to_json(), indent=1))


class Scanner:
    """Build once, then query frame after frame."""

    def __init__(self, meshes: list, mode: str = "on-demand", self_collision: bool = False,
                 first_hit: bool = False):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        if not meshes:
            raise extract.RigError("no skinned mesh to scan")
        self.meshes = meshes
        self.mode = mode
        self.self_collision = self_collision
        self.first_hit = first_hit
        rigs = [extract.rig_from_object(ob) for ob in meshes]
        for rig in rigs:
            if rig.n_triangles == 0:
                raise extract.RigError(f"mesh '{rig.name}' has no faces to collide")
        self.objects = [core_scan.prepare(rig) for rig in rigs]
        #: per mesh, the (T, 3) triangles Blender draws at the last evaluated frame.
        self.triangles: list[np.ndarray] | None = None
        # Contacts not to report: triangle pairs by name (`--ignore-rest-contacts`, see
        # `rest_pose_contacts`) and accepted polygon pairs (`--allow`); both canonical.
        self.ignore_triangles: set[contacts.Contact] = set()
        self.allow_polygons: set[contacts.Contact] = set()

    def refit_label(self, obj) -> str:
        """The refit this scan will use for `obj`, in words (the mode decides)."""
        if self.mode == "rebuild":
            return "Blender BVHTree rebuilt every frame (--mode rebuild)"
        if self.mode == "bottom-up":
            return "bottom-up from evaluated positions (--mode bottom-up)"
        return f"{obj.refit_method} ({obj.refit_reason})"

    def refit_id(self, k: int) -> str:
        """The method id the mode predicts for object `k` (before any frame)."""
        if self.mode != "on-demand":
            return self.mode
        return "on-demand" if self.objects[k].bounds is not None else "bottom-up"

    def rest_pose_contacts(self, scene) -> set[contacts.Contact]:
        """Triangle pairs colliding in the rest pose (armatures switched to Rest Position
        for the evaluation, then restored): the rule of the panel's *Ignore Rest Contacts*
        (`addon.session.store_rest_contacts`), queried with this scan's mode."""
        tri_pairs = rest_pose_pairs(self.meshes, self.objects, self.self_collision,
                                    rebuild=self.mode == "rebuild")
        names = [o.name for o in self.objects]
        return {contacts.canonical((names[i], a, names[j], b))
                for i, j, p in tri_pairs for a, b in p.tolist()}

    def evaluate(self, depsgraph) -> tuple[list[np.ndarray], list]:
        """Evaluated world positions and poses of every mesh at the current frame; the
        frame's triangles are kept in `self.triangles` (used by `query` by default)."""
        positions, poses, tris = [], [], []
        for ob, obj in zip(self.meshes, self.objects):
            pos = extract.evaluated_positions(ob, depsgraph)
            if pos.shape[0] != obj.rig.n_vertices:
                after = extract.modifier_report(ob).after
                if after:
                    raise extract.RigError(
                        f"'{ob.name}': modifiers after the Armature modifier ({', '.join(after)}) "
                        f"change the mesh from {obj.rig.n_vertices} to {pos.shape[0]} vertices; "
                        "disable them in the viewport to scan the skinned cage")
                raise extract.RigError(
                    f"'{ob.name}' has {pos.shape[0]} evaluated vertices but was built with "
                    f"{obj.rig.n_vertices}: its topology changed; rebuild")
            pos, t = extract.evaluated_frame(ob, depsgraph, obj.rig)
            positions.append(pos)
            tris.append(t)
            poses.append(extract.pose_from_object(ob, depsgraph))
        self.triangles = tris
        return positions, poses

    def query(self, positions, poses, triangles=None
              ) -> tuple[list[tuple[int, int, np.ndarray]], float, list[str]]:
        """Triangle pairs per object pair (indices into the frame's triangles, which are
        `triangles`, by default those of the last `evaluate`), query milliseconds and the
        refit used."""
        if triangles is None:
            triangles = self.triangles
        if self.mode == "rebuild":
            t0 = time.perf_counter()
            pairs = bvhtree_pairs(self.objects, positions, self.self_collision, triangles,
                                  poses)
            return pairs, (time.perf_counter() - t0) * 1000.0, ["rebuild"] * len(self.objects)
        res = core_scan.query_frame(self.objects, positions, poses, mode=self.mode,
                                    self_collision=self.self_collision,
                                    first_hit=self.first_hit, triangles=triangles)
        return res.pairs, res.ms, res.modes

    def polygon_pairs(self, tri_pairs) -> list[tuple[str, int, str, int]]:
        res = core_scan.FrameResult(tri_pairs, 0.0)
        names = [o.name for o in self.objects]
        return [(names[i], a, names[j], b)
                for i, a, j, b in core_scan.polygon_pairs(self.objects, res)]

    def _filtered(self, tri_pairs) -> list[tuple[str, int, str, int]]:
        """The frame's polygon pairs after the rest-contact and allow-list filters; with
        `first_hit`, only the first one."""
        if self.ignore_triangles and tri_pairs:
            names = [o.name for o in self.objects]
            found = {(i, a, j, b) for i, j, p in tri_pairs for a, b in p.tolist()}
            kept = contacts.drop_indexed(found, names, self.ignore_triangles)
            grouped: dict[tuple[int, int], list] = {}
            for i, a, j, b in sorted(kept):
                grouped.setdefault((i, j), []).append((a, b))
            tri_pairs = [(i, j, np.array(p, dtype=np.int64)) for (i, j), p in grouped.items()]
        pairs = self.polygon_pairs(tri_pairs)
        if self.allow_polygons:
            pairs = contacts.drop_named(pairs, self.allow_polygons)
        if self.first_hit:
            pairs = pairs[:1]
        return pairs

    def step(self, scene, f: int) -> FrameRecord:
        """Evaluate and query one frame."""
        import bpy

        t0 = time.perf_counter()
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        positions, poses = self.evaluate(dg)
        eval_ms = (time.perf_counter() - t0) * 1000.0
        tri_pairs, ms, modes = self.query(positions, poses)
        return FrameRecord(f, self._filtered(tri_pairs), ms, eval_ms, modes)

    def report(self, records: list[FrameRecord], n_requested: int | None = None,
               interrupted: bool = False) -> ScanReport:
        """The report of `records` (complete when all `n_requested` frames are in)."""
        n_requested = len(records) if n_requested is None else n_requested
        refit = {}
        for k, o in enumerate(self.objects):
            used = sorted({r.modes[k] for r in records if len(r.modes) > k})
            refit[o.name] = "+".join(used) if used else self.refit_id(k)
        return ScanReport([o.name for o in self.objects], records, refit,
                          {o.name: o.build_seconds for o in self.objects},
                          complete=len(records) == n_requested and not interrupted,
                          interrupted=interrupted, frames_requested=n_requested)

    def run(self, scene, frames: list[int], progress=None,
            records: list[FrameRecord] | None = None) -> ScanReport:
        """Step through `frames`; `progress(i, n, record)` is called after each frame.
        Records are appended to `records` (if given) as they come, so a caller keeps the
        frames done when the scan is interrupted."""
        records = [] if records is None else records
        for k, f in enumerate(frames):
            rec = self.step(scene, f)
            records.append(rec)
            if progress is not None:
                progress(k, len(frames), rec)
        return self.report(records, len(frames))


def rest_pose_pairs(meshes: list, objects: list, self_collision: bool,
                    rebuild: bool = False) -> list[tuple[int, int, np.ndarray]]:
    """Triangle pairs (indices into the rest pose's evaluated triangles) colliding in the
    rest pose: armatures switched to Rest Position for the evaluation, then restored. The
    one rule behind the panel's *Ignore Rest Contacts* and `scan --ignore-rest-contacts`.
    Bottom-up from the evaluated positions (the pose bones' matrices do not follow Rest
    Position, so the LBS bound must not be used), or Blender's BVHTree with `rebuild`."""
    import bpy

    arms = {extract.modifier_report(ob).armature for ob in meshes}
    arms.discard(None)
    saved = {a: a.data.pose_position for a in arms}
    try:
        for a in arms:
            a.data.pose_position = "REST"
        bpy.context.view_layer.update()
        dg = bpy.context.evaluated_depsgraph_get()
        frames = [extract.evaluated_frame(ob, dg, obj.rig) for ob, obj in zip(meshes, objects)]
        positions, tris = [f[0] for f in frames], [f[1] for f in frames]
        if rebuild:
            return bvhtree_pairs(objects, positions, self_collision, tris)
        return core_scan.query_frame(objects, positions, [None] * len(objects),
                                     mode="bottom-up", self_collision=self_collision,
                                     triangles=tris).pairs
    finally:
        for a, pos in saved.items():
            a.data.pose_position = pos
        bpy.context.view_layer.update()


def bvhtree_pairs(objects, positions, self_collision: bool,
                  triangles=None, poses: list | None = None
                  ) -> list[tuple[int, int, np.ndarray]]:
    """Blender's BVHTree rebuild + overlap on world-space triangles, as triangle pairs.

    `triangles`: per object, the frame's (T, 3) triangles (Blender's evaluated loop
    triangles, `Scanner.evaluate`); None decides the quads from `positions`.

    Self pairs come back in both orders and include adjacent triangles that Blender does
    not skip (sharing one vertex, or a welded seam); they are deduplicated, and all pairs
    are filtered with the same adjacency rules as `core.scan.query_frame` (weld ids within
    a mesh, seam ids decided at build between meshes; `poses` as given to `query_frame`).
    """
    from mathutils.bvhtree import BVHTree

    if triangles is None:
        triangles = [None] * len(objects)
    tris = [core_scan.frame_triangles(o, p) if t is None else t
            for o, p, t in zip(objects, positions, triangles)]
    trees = [BVHTree.FromPolygons(p.tolist(), t.tolist(), all_triangles=True, epsilon=0.0)
             for t, p in zip(tris, positions)]
    out = []
    n = len(objects)
    poses = [None] * n if poses is None else poses
    seams = core_scan.seam_ids(objects)
    jobs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if self_collision:
        jobs += [(i, i) for i in range(n)]
    for i, j in jobs:
        raw = trees[i].overlap(trees[j])
        if not raw:
            continue
        pairs = np.asarray(raw, dtype=np.int64)
        if i == j:
            pairs = np.unique(np.sort(pairs, axis=1), axis=0)
            pairs = pairs[pairs[:, 0] != pairs[:, 1]]
            far = ~traversal.adjacent_pairs(objects[i].vertex_keys[tris[i]], pairs[:, 0],
                                            pairs[:, 1])
        elif seams[i] is not None and seams[j] is not None and \
                core_scan.seams_apply(objects[i], objects[j], poses[i], poses[j]):
            far = ~core_scan.seam_pairs(seams[i], tris[i], pairs[:, 0],
                                        seams[j], tris[j], pairs[:, 1])
        else:
            far = np.ones(pairs.shape[0], dtype=bool)
        pairs = pairs[far]
        if pairs.size:
            out.append((i, j, pairs))
    return out
