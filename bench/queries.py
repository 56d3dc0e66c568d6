"""Queries the scenarios compare ours with, shared between them: the old sphere-tree self
query (`traversal.collide`), which `core.scan.query_frame` used before the AABB self tree."""
from __future__ import annotations

import numpy as np

from bench import timing


def old_self(obj, pos, pose, mode):
    """The old sphere-tree self query on a frame (refit `mode`: on-demand or bottom-up):
    (triangle pairs, ms)."""
    from skin_collide.core import scan as core_scan
    from skin_collide.core import triangles, welds
    from skin_collide.core.hierarchy import traversal

    t0 = timing.now()
    tris = core_scan.frame_triangles(obj, pos)
    spheres = core_scan.volumes(obj, pos, pose, mode, tris)
    keys = obj.vertex_keys[tris]

    def test(a, b):
        hit = np.zeros(a.size, dtype=bool)
        far = np.nonzero(~welds.adjacent_pairs(keys, a, b))[0]
        hit[far] = triangles.triangle_pairs_intersect(pos, tris, a[far], pos, tris, b[far])
        return hit

    pairs, _ = traversal.collide(spheres, None, test)
    return pairs, timing.ms_since(t0)


def as_set(p) -> set:
    """Triangle pairs (n, 2) as a set of sorted tuples."""
    return set(map(tuple, np.sort(p, axis=1).tolist()))
