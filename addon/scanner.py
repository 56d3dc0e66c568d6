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
    objects: list[str]
    frames: list[FrameRecord]
    refit: dict[str, str]
    build_seconds: dict[str, float]

    def to_json(self) -> dict:
        return {
            "objects": self.objects,
            "frames": [{"frame": f.frame, "pairs": [list(p) for p in f.pairs],
                        "ms": round(f.ms, 4)} for f in self.frames],
        }

    def write_json(self, path: str) -> None:
        with open(path, "w") as fh:
            json.dump(self.to_json(), fh, indent=1)


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

    def run(self, scene, frames: list[int], progress=None) -> ScanReport:
        """Step through `frames`; `progress(i, n, record)` is called after each frame."""
        import bpy

        records = []
        for k, f in enumerate(frames):
            t0 = time.perf_counter()
            scene.frame_set(f)
            dg = bpy.context.evaluated_depsgraph_get()
            positions, poses = self.evaluate(dg)
            eval_ms = (time.perf_counter() - t0) * 1000.0
            tri_pairs, ms, modes = self.query(positions, poses)
            rec = FrameRecord(f, self.polygon_pairs(tri_pairs), ms, eval_ms, modes)
            records.append(rec)
            if progress is not None:
                progress(k, len(frames), rec)
        return ScanReport([o.name for o in self.objects], records,
                          {o.name: f"{o.refit_method} ({o.refit_reason})" for o in self.objects},
                          {o.name: o.build_seconds for o in self.objects})


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
