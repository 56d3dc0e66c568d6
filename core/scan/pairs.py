"""What a frame's pairs become for people and for checks: polygon pairs (`polygon_pair_rows`),
and the brute-force oracle the tests compare with (`brute_force_pairs`)."""
from __future__ import annotations

import numpy as np

from .. import triangles as tri_test
from .. import welds
from ..contacts import pairs as contacts
from ..types import FrameResult
from .objects import CollisionObject


def polygon_pair_rows(objects: list[CollisionObject], result: FrameResult) -> np.ndarray:
    """(N, 4) int64 unique unordered polygon pairs (obj a, poly a, obj b, poly b), sorted.

    Triangle pairs map to the mesh's own polygon indices; several triangle pairs of the
    same two polygons (quads) count once, and a polygon never pairs with itself.
    """
    rows = []
    for i, j, pairs in result.pairs:
        if not pairs.size:
            continue
        pp = np.stack([objects[i].rig.tri_polygon[pairs[:, 0]],
                       objects[j].rig.tri_polygon[pairs[:, 1]]], axis=1)
        pp = contacts.normalized_pairs(pp, i == j)
        if i == j:
            pp = pp[pp[:, 0] != pp[:, 1]]
        if pp.size:
            rows.append(np.column_stack([np.full(pp.shape[0], i), pp[:, 0],
                                         np.full(pp.shape[0], j), pp[:, 1]]))
    if not rows:
        return np.zeros((0, 4), dtype=np.int64)
    r = np.concatenate(rows).astype(np.int64, copy=False)
    return r[np.lexsort((r[:, 3], r[:, 2], r[:, 1], r[:, 0]))]


def polygon_pairs(objects: list[CollisionObject],
                  result: FrameResult) -> list[tuple[int, int, int, int]]:
    """`polygon_pair_rows` as tuples of ints."""
    # Column lists zipped: a tuple per row from `tolist()` costs several times more.
    return list(zip(*polygon_pair_rows(objects, result).T.tolist()))


def brute_force_pairs(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray | None = None,
                      tri_b: np.ndarray | None = None, keys: np.ndarray | None = None,
                      block: int = 4_000_000) -> np.ndarray:
    """Every intersecting triangle pair by testing all pairs (small meshes only).

    Self-collision when `pos_b` is None: pairs i < j, adjacent pairs (by `keys`, (T, 3)
    per-triangle keys of `tri_a`: ``vertex_keys[tri_a]``) dropped. Pass the frame's
    triangles (`frame_triangles`), not the rest ones. Between two meshes a pair counts
    only if its float64 boxes meet, the contract of every query path between objects
    (`ExactTest`; docs/clearance.md): disjoint boxes are disjoint triangles, and the
    triangle test's tolerance would call a pair a hair (1e-16) apart touching.
    Returns (K, 2) int64 sorted lexicographically.
    """
    self_mode = pos_b is None
    Ta = tri_a.shape[0]
    Tb = Ta if self_mode else tri_b.shape[0]
    out = []
    rows = max(1, block // max(Tb, 1))
    for s in range(0, Ta, rows):
        ia, ib = np.meshgrid(np.arange(s, min(s + rows, Ta)), np.arange(Tb), indexing="ij")
        ia, ib = ia.ravel(), ib.ravel()
        if self_mode:
            keep = ia < ib
            ia, ib = ia[keep], ib[keep]
            far = ~welds.adjacent_pairs(keys, ia, ib)
            ia, ib = ia[far], ib[far]
            hit = tri_test.triangle_pairs_intersect(pos_a, tri_a, ia, pos_a, tri_a, ib)
        else:
            hit = tri_test.triangle_pairs_intersect(pos_a, tri_a, ia, pos_b, tri_b, ib)
            h = np.flatnonzero(hit)
            hit[h[~tri_test.boxes_meet(pos_a, tri_a[ia[h]], pos_b, tri_b[ib[h]])]] = False
        out.append(np.stack([ia[hit], ib[hit]], 1))
    pairs = np.concatenate(out) if out else np.zeros((0, 2), np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
