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

from ..types import Hierarchy


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


def leaf_entries(h: Hierarchy, leaves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The triangles of `leaves` (K,) as entries: (leaf pair index (E,), triangle (E,))."""
    g, r = _rows(h.leaf_ptr, leaves)
    return g, h.leaf_tris[r]


def candidate_pairs(ga: np.ndarray, ta: np.ndarray, lo_a: np.ndarray, hi_a: np.ndarray,
                    gb: np.ndarray, tb: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (ta[i], tb[j]) with ga[i] == gb[j] whose AABBs overlap, by sort-and-sweep.

    Args:
        ga, ta: (Ea,) int64 group (leaf pair) and triangle of each entry of side a; gb, tb
            the same for side b.
        lo_a, hi_a: (Ta, 3) float64 per-triangle AABBs of object a (closed); same for b.
    Returns:
        (P,), (P,) int64 triangle indices: exactly the pairs whose boxes share a point
        (no duplicates when no entry repeats).
    """
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


def grid_pairs(ga: np.ndarray, ta: np.ndarray, lo_a: np.ndarray, hi_a: np.ndarray,
               gb: np.ndarray, tb: np.ndarray, lo_b: np.ndarray, hi_b: np.ndarray,
               cell: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Same contract as `candidate_pairs`, by a uniform grid instead of a sweep: output
    sensitive where one sweep axis sees many overlapping intervals (long limbs crossing).

    Each entry is put in the cells its box touches (cell size: the median
    of the boxes' largest side); entries of a and b in the same (group, cell) are paired,
    and a pair is kept only in the cell holding the lower corner of its boxes'
    intersection, so it comes out once, and only if its boxes overlap.
    """
    if ga.size == 0 or gb.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    la, ha_ = lo_a[ta], hi_a[ta]
    lb, hb_ = lo_b[tb], hi_b[tb]
    if cell is None:
        side = np.concatenate([(ha_ - la).max(axis=1), (hb_ - lb).max(axis=1)])
        cell = float(np.percentile(side, 50))
        span = float(max(ha_.max() - la.min(), hb_.max() - lb.min()))
        cell = max(cell, span / 1024.0, 1e-300)
    origin = np.minimum(la.min(axis=0), lb.min(axis=0))

    def cells(g, lo, hi):
        c0 = np.floor((lo - origin) / cell).astype(np.int64)
        c1 = np.floor((hi - origin) / cell).astype(np.int64)
        n = c1 - c0 + 1                                  # (E, 3)
        tot = n.prod(axis=1)
        owner = np.repeat(np.arange(g.size), tot)
        off = np.zeros(g.size + 1, np.int64)
        np.cumsum(tot, out=off[1:])
        r = np.arange(off[-1]) - off[owner]
        nx, ny = n[owner, 0], n[owner, 1]
        cx = c0[owner, 0] + r % nx
        cy = c0[owner, 1] + (r // nx) % ny
        cz = c0[owner, 2] + r // (nx * ny)
        return owner, cx, cy, cz

    oa, ax, ay, az = cells(ga, la, ha_)
    ob, bx, by, bz = cells(gb, lb, hb_)
    m = int(max(ax.max(), bx.max(), ay.max(), by.max(), az.max(), bz.max())) + 1
    ka = ((ga[oa] * m + ax) * m + ay) * m + az
    kb = ((gb[ob] * m + bx) * m + by) * m + bz
    order = np.argsort(kb, kind="stable")
    skb = kb[order]
    i, j = _ranges(np.searchsorted(skb, ka, "left"), np.searchsorted(skb, ka, "right"))
    ea, eb = oa[i], ob[order[j]]
    pa, pb = ta[ea], tb[eb]
    keep = ((lo_a[pa] <= hi_b[pb]) & (lo_b[pb] <= hi_a[pa])).all(axis=1)
    # Report each pair in one cell only: the one holding max(lo_a, lo_b).
    corner = np.floor((np.maximum(lo_a[pa], lo_b[pb]) - origin) / cell).astype(np.int64)
    here = np.stack([ax[i], ay[i], az[i]], axis=1)
    keep &= (corner == here).all(axis=1)
    return pa[keep], pb[keep]


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
    ga, ta = leaf_entries(ha, la)
    gb, tb = leaf_entries(hb, lb)
    return candidate_pairs(ga, ta, lo_a, hi_a, gb, tb, lo_b, hi_b)


def triangle_boxes(positions: np.ndarray, triangles: np.ndarray, pad: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Per-triangle AABBs (T, 3), (T, 3) float64, grown by `pad` on every side."""
    p = positions[triangles]
    return p.min(axis=1) - pad, p.max(axis=1) + pad
