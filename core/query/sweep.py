"""Candidate triangle pairs of overlapping leaf pairs, by per-triangle AABBs.

Leaves of skeleton-based hierarchies (OBB trees: one leaf per bone) hold hundreds of
triangles, so the cartesian product of a surviving leaf pair is mostly far-apart
triangles. `leaf_pair_candidates` keeps exactly the pairs whose (padded) AABBs overlap:
a sort-and-sweep on x over all leaf pairs at once (the leaf pair is the high half of an
int64 sort key, the outward-rounded float32 coordinate the low half), then y and z. It
never drops a pair whose boxes meet, so with boxes that enclose the triangles (padded
by at least the triangle test's touching tolerance) the exact test sees every pair that
can intersect.
"""
from __future__ import annotations

import numpy as np

from ..methods.base import Hierarchy


def _rows(ptr: np.ndarray, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(leaf pair of each row, row index into leaf_tris) for the leaves' CSR segments."""
    counts = ptr[leaves + 1] - ptr[leaves]
    owner = np.repeat(np.arange(leaves.size, dtype=np.int64), counts)
    off = np.zeros(leaves.size + 1, np.int64)
    np.cumsum(counts, out=off[1:])
    return owner, ptr[leaves][owner] + (np.arange(off[-1]) - off[owner])


def _key(group: np.ndarray, x: np.ndarray, up: bool) -> np.ndarray:
    """int64 keys ordered like (group, x), x rounded outward to float32."""
    f = x.astype(np.float32)
    f = np.nextafter(f, np.float32(np.inf if up else -np.inf))
    u = f.view(np.uint32)
    mono = np.where(u & np.uint32(0x80000000), ~u, u | np.uint32(0x80000000))
    return (group << 32) | mono.astype(np.int64)


def _ranges(starts: np.ndarray, stops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, index) for every index in [starts[k], stops[k])."""
    n = np.maximum(stops - starts, 0)
    owner = np.repeat(np.arange(starts.size, dtype=np.int64), n)
    off = np.zeros(starts.size + 1, np.int64)
    np.cumsum(n, out=off[1:])
    return owner, starts[owner] + (np.arange(off[-1]) - off[owner])


def leaf_pair_candidates(ha: Hierarchy, la: np.ndarray, lo_a: np.ndarray, hi_a: np.ndarray,
                         hb: Hierarchy, lb: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Triangle pairs (tri of leaf la[k], tri of leaf lb[k]) whose AABBs overlap.

    Args:
        ha, hb: the hierarchies; la, lb: (K,) int64 leaf node pairs.
        lo_a, hi_a: (Ta, 3) float64 per-triangle AABBs of object a (closed); same for b.
    Returns:
        (P,), (P,) int64 triangle indices: exactly the pairs of the leaves' cartesian
        products whose boxes share a point (order unspecified, no duplicates).
    """
    ga, ra = _rows(ha.leaf_ptr, la)
    gb, rb = _rows(hb.leaf_ptr, lb)
    ta, tb = ha.leaf_tris[ra], hb.leaf_tris[rb]
    ka_lo, ka_hi = _key(ga, lo_a[ta, 0], False), _key(ga, hi_a[ta, 0], True)
    kb_lo, kb_hi = _key(gb, lo_b[tb, 0], False), _key(gb, hi_b[tb, 0], True)
    ob = np.argsort(kb_lo, kind="stable")
    oa = np.argsort(ka_lo, kind="stable")
    sb, sa = kb_lo[ob], ka_lo[oa]
    # lo_a <= lo_b <= hi_a ...
    i1, j1 = _ranges(np.searchsorted(sb, ka_lo, "left"), np.searchsorted(sb, ka_hi, "right"))
    # ... or lo_b < lo_a <= hi_b: together every pair whose x-intervals overlap, once.
    j2, i2 = _ranges(np.searchsorted(sa, kb_lo, "right"), np.searchsorted(sa, kb_hi, "right"))
    ea = np.concatenate([i1, oa[i2]])
    eb = np.concatenate([ob[j1], j2])
    pa, pb = ta[ea], tb[eb]
    # x again in float64 (the keys were rounded outward), then y and z.
    keep = ((lo_a[pa] <= hi_b[pb]) & (lo_b[pb] <= hi_a[pa])).all(axis=1)
    return pa[keep], pb[keep]


def triangle_boxes(positions: np.ndarray, triangles: np.ndarray, pad: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-triangle AABBs (T, 3), (T, 3) float64, grown by `pad` on every side."""
    p = positions[triangles]
    return p.min(axis=1) - pad, p.max(axis=1) + pad
