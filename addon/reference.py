"""Blender's own answer, the reference method (`Method.in_core` False, "rebuild"):
``mathutils.bvhtree.BVHTree`` rebuilt every frame on the evaluated world-space triangles and
queried with ``overlap``, filtered with the core's adjacency rules. `ask` hands it to the
frame pipeline (`core.scan.pipeline.collide`) in place of the core's query.
"""
from __future__ import annotations

import time

import numpy as np

from ..core import scan as core_scan
from ..core import welds
from ..core.types import FrameInputs, FrameResult


def ask(objects: list, inputs: FrameInputs, settings, filters, carried=None) -> FrameResult:
    """The frame's query answered by Blender's BVHTree (and, with a clearance, the core's
    clearance stage beside it: `core.scan.clearance_frame`). Nothing is carried."""
    t0 = time.perf_counter()
    pairs = bvhtree_pairs(objects, inputs.positions, settings.self_collision,
                          inputs.triangles, inputs.poses)
    res = FrameResult(pairs, 0.0, modes=[settings.method] * len(objects),
                      triangles=inputs.triangles)
    if settings.clearance is not None:
        try:
            res.near = core_scan.clearance_frame(objects, inputs.positions, inputs.poses,
                                                 settings.clearance, inputs.triangles,
                                                 limit=settings.clearance_limit,
                                                 intersecting=pairs)
        except core_scan.TooManyPairs as exc:
            res.near_stopped = exc.count
    res.ms = (time.perf_counter() - t0) * 1000.0
    return res


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
            keys = core_scan.frame_keys(objects[i], positions[i])
            keys = objects[i].vertex_keys if keys is None else keys
            far = ~welds.adjacent_pairs(keys[tris[i]], pairs[:, 0], pairs[:, 1])
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
