"""Enclosing balls of many point sets at once, in plain numpy.

`minimal_balls` computes the exact minimal enclosing ball of every set of a CSR-packed
collection of 3-D point sets in one vectorized pass, so building the leaves and inner nodes
of a sphere tree never loops over nodes in Python. `approx_balls_of_spheres` is the cheap
bounding ball of groups of spheres that Kavan & Zara's refit uses for inner nodes.

Algorithm of `minimal_balls` (Gärtner's pivoting, run for all sets in lock-step):
every set keeps a support of at most 4 points whose minimal ball is its current ball. Each
round finds, per unfinished set, the point farthest from the current centre. If it lies
inside the ball (up to a relative 1e-12), the set is finished. Otherwise the new ball is the
minimal ball of support ∪ {p}, which has p on its boundary: it is found by trying the
circumscribed ball of every subset of the support together with p (at most 14 subsets) and
keeping the one whose centre needs the smallest radius to cover support ∪ {p}. The radius
grows strictly each round, so the loop ends; in practice after a few dozen rounds.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

__all__ = ["minimal_balls", "minimal_ball", "approx_balls_of_spheres"]

#: A set is finished when its farthest point is within ``r * (1 + _REL_TOL)``.
_REL_TOL = 1e-12
#: Rounds of pivoting before giving up; real inputs need far fewer (tens).
_MAX_ROUNDS = 1000
#: sin² of the angle at p below which a triangle counts as collinear, and the normalized
#: volume |det| / (|a||b||c|) below which a tetrahedron counts as flat. Only there to avoid
#: dividing by (almost) zero: a barely valid subset gets a far-away centre and so a huge
#: covering radius, and loses the selection anyway.
_FLAT_TRIANGLE = 1e-28
_FLAT_TETRA = 1e-14
#: Final radii are multiplied by this: 8 ulps, well above the rounding of a 3-D distance.
_ULP_MARGIN = 1.0 + 8.0 * np.finfo(np.float64).eps
#: Barycentric slack when deciding whether a circumcentre lies in its subset's hull.
_HULL_SLACK = 1e-9
#: Relative handicap of candidates whose centre is outside their subset's hull: with exactly
#: cospherical points several subsets give the same ball, and only one whose hull contains
#: the centre is a true support (one whose minimal ball is the ball), which the pivoting
#: needs to keep the radius growing.
_OFF_HULL_PENALTY = 1e-9


def _pivot_tables(k: int) -> tuple[np.ndarray, ...]:
    """Index tables of the candidate subsets for a support of k points (1 <= k <= 4).

    The candidates are every non-empty subset of the k support slots with at most 3 members,
    each taken together with p: singles first, then pairs, then triples. The empty subset is
    left out: the ball of p alone covers a support only if the support is p itself, which
    cannot happen since p lies outside the support's ball.
    """
    singles = [(i,) for i in range(k)]
    pairs = list(combinations(range(k), 2))
    triples = list(combinations(range(k), 3))
    subsets = singles + pairs + triples
    # Slot k of the extended support holds p; it comes first in every new support and also
    # pads the unused slots (the new count masks them).
    gather = np.full((len(subsets), 4), k, dtype=np.int64)
    for row, sub in enumerate(subsets):
        gather[row, 1:1 + len(sub)] = sub
    new_count = np.array([len(s) + 1 for s in subsets], dtype=np.int64)
    pair_idx = np.array(pairs, dtype=np.int64).reshape(len(pairs), 2)
    triple_idx = np.array(triples, dtype=np.int64).reshape(len(triples), 3)
    return pair_idx, triple_idx, gather, new_count


_TABLES = {k: _pivot_tables(k) for k in range(1, 5)}


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross product of component-major vectors: a, b (3, ...) float64, returns (3, ...)."""
    return np.stack([a[1] * b[2] - a[2] * b[1],
                     a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dot product of component-major vectors: a, b (3, ...) float64, returns (...)."""
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _pivot_k(q: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Minimal ball of q ∪ {p} for A sets whose support has the same size k.

    Args:
        q: (3, A, k) float64 support points, component-major.
        p: (3, A) float64, the point to add (outside the ball of q).

    Returns:
        centers (A, 3) float64, radii (A,) float64, new support (A, 4, 3) float64 with p in
        slot 0 (unused slots hold copies of p), new counts (A,) int64.
    """
    k = q.shape[2]
    pairs, triples, gather, new_count = _TABLES[k]
    n = q.shape[1]
    pc = p[:, :, None]
    parts, valid, in_hull = [0.5 * (q + pc)], [np.ones((n, k), dtype=bool)], [np.ones((n, k), dtype=bool)]

    if len(pairs):
        # Triangles (p, q_i, q_j): centre p + al*a + be*b solves the 2x2 Gram system; its
        # determinant |a|²|b|² - (a·b)² is taken as |a×b|², which does not cancel.
        a = q[:, :, pairs[:, 0]] - pc
        b = q[:, :, pairs[:, 1]] - pc
        aa, bb, ab = _dot(a, a), _dot(b, b), _dot(a, b)
        axb = _cross(a, b)
        det2 = _dot(axb, axb)
        ok = det2 > _FLAT_TRIANGLE * (aa * bb)
        inv = 0.5 / np.where(ok, det2, 1.0)
        al = bb * (aa - ab) * inv
        be = aa * (bb - ab) * inv
        parts.append(pc + al * a + be * b)
        valid.append(ok)
        in_hull.append((al >= -_HULL_SLACK) & (be >= -_HULL_SLACK) & (al + be <= 1 + _HULL_SLACK))

    if len(triples):
        # Tetrahedra (p, q_i, q_j, q_l): x = M⁻¹ h with M rows a, b, c and
        # h = (|a|², |b|², |c|²) / 2, written with the adjugate; the centre's barycentrics
        # come from the same adjugate.
        a = q[:, :, triples[:, 0]] - pc
        b = q[:, :, triples[:, 1]] - pc
        c = q[:, :, triples[:, 2]] - pc
        bxc, cxa, axb = _cross(b, c), _cross(c, a), _cross(a, b)
        det3 = _dot(a, bxc)
        aa, bb, cc = _dot(a, a), _dot(b, b), _dot(c, c)
        ok = np.abs(det3) > _FLAT_TETRA * np.sqrt(aa * bb * cc)
        inv = 1.0 / np.where(ok, det3, 1.0)
        x = (0.5 * inv) * (aa * bxc + bb * cxa + cc * axb)
        parts.append(pc + x)
        l1, l2, l3 = _dot(x, bxc) * inv, _dot(x, cxa) * inv, _dot(x, axb) * inv
        valid.append(ok)
        in_hull.append((l1 >= -_HULL_SLACK) & (l2 >= -_HULL_SLACK) & (l3 >= -_HULL_SLACK)
                       & (l1 + l2 + l3 <= 1 + _HULL_SLACK))

    cand = np.concatenate(parts, axis=2)                             # (3, A, C)
    valid = np.concatenate(valid, axis=1)                            # (A, C)
    in_hull = np.concatenate(in_hull, axis=1)

    # Judge each candidate by the radius its centre needs to cover q ∪ {p}: the minimal
    # ball is the unique smallest such ball, so the argmin is right even when a subset's
    # circumball is numerically shaky, and no containment tolerance is needed.
    ext = np.concatenate([q, pc], axis=2)                            # (3, A, k + 1)
    d = cand[:, :, :, None] - ext[:, :, None, :]                     # (3, A, C, k + 1)
    cover2 = _dot(d, d).max(axis=2)                                  # (A, C)
    key = np.where(valid, cover2 * np.where(in_hull, 1.0, 1.0 + _OFF_HULL_PENALTY), np.inf)
    best = np.argmin(key, axis=1)

    rows = np.arange(n)
    centers = cand[:, rows, best].T
    radii = np.sqrt(cover2[rows, best])
    new_support = ext[:, rows[:, None], gather[best]].transpose(1, 2, 0)
    return centers, radii, new_support, new_count[best]


def _pivot(support: np.ndarray, count: np.ndarray, p: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Minimal ball of support ∪ {p} for A sets at once, given that p lies outside it.

    Sets are grouped by support size so each group tries only the subsets it has.

    Args:
        support: (A, 4, 3) float64 support points; only the first ``count`` slots are used.
        count: (A,) int64 in 1..4, filled support slots.
        p: (A, 3) float64, the point to add (outside the current ball).

    Returns:
        centers (A, 3) float64, radii (A,) float64, new support (A, 4, 3) float64 with p in
        slot 0, new counts (A,) int64.
    """
    n = p.shape[0]
    centers = np.empty((n, 3), dtype=np.float64)
    radii = np.empty(n, dtype=np.float64)
    new_support = np.empty((n, 4, 3), dtype=np.float64)
    new_count = np.empty(n, dtype=np.int64)
    for k in range(1, 5):
        idx = np.flatnonzero(count == k)
        if idx.size == 0:
            continue
        q = support[idx, :k].transpose(2, 0, 1)
        c, r, s, m = _pivot_k(q, p[idx].T)
        centers[idx], radii[idx], new_support[idx], new_count[idx] = c, r, s, m
    return centers, radii, new_support, new_count


def _check_csr(points: np.ndarray, seg_ptr: np.ndarray, what: str = "points"
               ) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (P, 3) array and its CSR offsets; return them as float64 / int64."""
    pts = np.ascontiguousarray(points, dtype=np.float64)
    ptr = np.asarray(seg_ptr)
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise ValueError(f"{what} must have shape (P, 3), got {pts.shape}")
    if ptr.ndim != 1 or ptr.size < 1 or not np.issubdtype(ptr.dtype, np.integer):
        raise ValueError("seg_ptr must be a 1-D integer array of S + 1 offsets")
    ptr = ptr.astype(np.int64, copy=False)
    if ptr[0] != 0 or ptr[-1] != pts.shape[0]:
        raise ValueError(f"seg_ptr must start at 0 and end at {pts.shape[0]}")
    if np.any(np.diff(ptr) <= 0):
        raise ValueError("every set must be non-empty (seg_ptr strictly increasing)")
    if not np.all(np.isfinite(pts)):
        raise ValueError(f"{what} must be finite")
    return pts, ptr


def _starts(counts: np.ndarray) -> np.ndarray:
    """Start offsets (S,) int64 of consecutive segments with the given (S,) counts."""
    starts = np.zeros(counts.size, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    return starts


def minimal_balls(points: np.ndarray, seg_ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact minimal enclosing balls of many point sets at once.

    Args:
        points: (P, 3) float64 points of all sets, set after set.
        seg_ptr: (S + 1,) int64 CSR offsets: set s is ``points[seg_ptr[s]:seg_ptr[s + 1]]``;
            every set must be non-empty.

    Returns:
        centers: (S, 3) float64.
        radii: (S,) float64. Each radius is at least the float64 distance from the returned
            centre to every point of its set (plus an 8-ulp margin), so enclosure holds as
            computed in float64; it exceeds the optimum only by rounding.

    Raises:
        ValueError: malformed input.
        RuntimeError: some set did not converge within the round limit.
    """
    pts, ptr = _check_csr(points, seg_ptr)
    n_sets = ptr.size - 1
    if n_sets == 0:
        return np.zeros((0, 3), dtype=np.float64), np.zeros(0, dtype=np.float64)
    counts = np.diff(ptr)

    # Work relative to each set's first point: rounding then scales with the set's size,
    # not with its distance from the origin (small sets far out would otherwise stall).
    origin = pts[ptr[:-1]]
    rel = pts - np.repeat(origin, counts, axis=0)

    out_center = np.empty((n_sets, 3), dtype=np.float64)
    out_radius = np.empty(n_sets, dtype=np.float64)

    # State of the unfinished sets only; `active` maps them back to set ids. The first
    # point (the local origin) is the starting support, with a ball of radius 0.
    active = np.arange(n_sets)
    cnt = counts
    cur = rel
    center = np.zeros((n_sets, 3), dtype=np.float64)
    radius = np.zeros(n_sets, dtype=np.float64)
    support = np.zeros((n_sets, 4, 3), dtype=np.float64)
    sup_count = np.ones(n_sets, dtype=np.int64)

    for _ in range(_MAX_ROUNDS):
        starts = _starts(cnt)
        diff = cur - np.repeat(center, cnt, axis=0)
        d2 = np.einsum("ij,ij->i", diff, diff)
        far2 = np.maximum.reduceat(d2, starts)
        limit = radius * (1.0 + _REL_TOL)
        grow = far2 > limit * limit
        if not grow.all():
            done = ~grow
            out_center[active[done]] = center[done]
            out_radius[active[done]] = radius[done]
            if not grow.any():
                break
        # First index attaining the maximum in each segment (a segmented argmax).
        at_max = d2 == np.repeat(far2, cnt)
        pos = np.where(at_max, np.arange(d2.size), d2.size)
        far_idx = np.minimum.reduceat(pos, starts)
        p = cur[far_idx[grow]]
        if not grow.all():
            cur = cur[np.repeat(grow, cnt)]
            cnt = cnt[grow]
            active = active[grow]
            support = support[grow]
            sup_count = sup_count[grow]
        center, radius, support, sup_count = _pivot(support, sup_count, p)
    else:
        raise RuntimeError(
            f"minimal_balls: {active.size} set(s) did not converge in {_MAX_ROUNDS} rounds")

    centers = out_center + origin
    # Safety net: measure the final centre against the original coordinates, so every point
    # is enclosed as float64 computes it, whatever rounding the local frame introduced. The
    # few-ulp margin keeps that true when callers sum the squares in another order
    # (np.linalg.norm, (d**2).sum(1), ...), which can differ by an ulp or two.
    diff = pts - np.repeat(centers, counts, axis=0)
    dist = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    radii = np.maximum(out_radius, np.maximum.reduceat(dist, ptr[:-1])) * _ULP_MARGIN
    return centers, radii


def minimal_ball(points: np.ndarray) -> tuple[np.ndarray, float]:
    """Exact minimal enclosing ball of one point set.

    Args:
        points: (N, 3) float64, N >= 1.

    Returns:
        center (3,) float64 and radius (float), as in `minimal_balls`.
    """
    pts = np.asarray(points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[0] == 0:
        raise ValueError("points must have shape (N, 3) with N >= 1")
    centers, radii = minimal_balls(pts, np.array([0, pts.shape[0]], dtype=np.int64))
    return centers[0], float(radii[0])


def approx_balls_of_spheres(centers: np.ndarray, radii: np.ndarray, seg_ptr: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
    """Quick enclosing ball of each group of spheres (Kavan & Zara's refit rule).

    The centre is the mean of the group's sphere centres; the radius is the largest
    ``|c_i - centre| + r_i`` over the group, so every sphere of the group is enclosed.

    Args:
        centers: (P, 3) float64 sphere centres, group after group.
        radii: (P,) float64 sphere radii (non-negative).
        seg_ptr: (G + 1,) int64 CSR offsets: group g is rows ``seg_ptr[g]:seg_ptr[g + 1]``;
            every group must be non-empty.

    Returns:
        ball centres (G, 3) float64 and ball radii (G,) float64.
    """
    cen, ptr = _check_csr(centers, seg_ptr, what="centers")
    rad = np.asarray(radii, dtype=np.float64)
    if rad.shape != (cen.shape[0],):
        raise ValueError(f"radii must have shape ({cen.shape[0]},), got {rad.shape}")
    n_groups = ptr.size - 1
    if n_groups == 0:
        return np.zeros((0, 3), dtype=np.float64), np.zeros(0, dtype=np.float64)
    counts = np.diff(ptr)
    starts = ptr[:-1]
    mean = np.add.reduceat(cen, starts, axis=0) / counts[:, None]
    diff = cen - np.repeat(mean, counts, axis=0)
    reach = np.sqrt(np.einsum("ij,ij->i", diff, diff)) + rad
    return mean, np.maximum.reduceat(reach, starts)
