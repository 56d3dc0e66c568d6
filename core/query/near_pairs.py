"""Triangle pairs of two meshes within a distance d: the exact core of `scan --clearance`
(issue 42). Pure numpy.

Every pair (triangle of A, triangle of B) whose exact distance is at most ``d`` is found;
pairs that intersect are told apart (the frame's intersection query reports those).
Steps, each sound (derivations in docs/clearance.md):

1. **Candidates by boxes.** A pair within ``d`` has, on every axis, ``lo_B <= hi_A + d`` and
   ``lo_A - d <= hi_B``. The triangles' float64 boxes are exact (min and max round
   nothing); A's are inflated by ``d`` in float64, which needs no margin: rounding to
   nearest is monotone and ``lo_B`` is a float64, so ``lo_B <= hi_A + d`` (exact) implies
   ``lo_B <= fl(hi_A + d)``. The inflated boxes of A and the boxes of B are then rounded
   outward to float32 and paired by the level-synchronous traversal of the exact AABB
   trees (`core.aabb_tree.cross.cross_candidates`, whose float32 boxes and test are
   proved sound in docs/self_collision.md): every leaf pair whose boxes overlap, once.
   The float32 rows are made per vertex (the vertex inflated by ``d``) and reduced per
   triangle in the tree's slot order (`core.aabb_tree.boxes.frame_stack`): min, max and
   both roundings are monotone, so these are the same bits as the triangle's inflated
   float64 box rounded outward.
2. **Bounds first** (``exact=False``, what a frame's clearance stage runs,
   `core.geometry.pair_bounds`): a pair whose lower bound exceeds ``d`` is dropped, one
   whose corner upper bound is at most ``d`` is kept with that bound, not its distance;
   the rest go on to step 3. The exact distance of a kept pair is computed only when
   asked (`settle`). docs/clearance.md, "Bounds before distances".
3. **Exact distances** (`core.geometry.distance.pair_distances`): the 18 vertex–edge
   candidates, then all 33 for the pairs not yet proved; pairs proved farther than ``d``
   stop after the first pass. Each distance is within ``DIST_REL_TOL * L`` of the exact one
   (``L``: the pair's local scale), so pairs with ``dist <= d + DIST_REL_TOL * L`` are kept:
   no pair within ``d`` is lost, none farther than ``d + 2 DIST_REL_TOL L`` is kept.
4. **Intersecting pairs** (distance 0; their vertex–edge–face minimum is meaningless) are
   those of the intersection query: boxes that meet, and the exact, conservative test
   `core.triangles.triangle_pairs_intersect` says so. That test runs on the pairs that
   the distance step (or the lower bound) could not prove disjoint (a separating
   direction whose gap matches the distance), or that are closer than
   `TOUCH_REL_TOL * L`, where it may call touching pairs intersecting (its tolerance,
   measured, is at most a few 1e-10 L); of those it calls intersecting, the ones whose
   float64 boxes are apart are disjoint (`core.triangles.boxes_meet`, the rule between
   objects), tested on those few only.

A Euclidean gap between the float64 boxes used to drop candidates before step 2 (13% of
them under a garment); the bounds' own lower gap drops 99% of those, and the boxes cost
more to gather than the bounds of the rest (docs/benchmarks.md, "Clearance").

Cost is the box traversal (output sensitive) plus, per candidate pair, 1 to 3 µs with
exact distances or about 0.4 µs of bounds (measured in docs/clearance.md); the trees are
best built once per object and passed in (`cross_tree`, or the object's exact self tree,
`core.scan.carry.for_object`).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import triangles as tri_test
from ..aabb_tree.boxes import frame_stack, levels_of
from ..aabb_tree.cross import TooManyPairs, cross_candidates
from ..aabb_tree.tree import SelfTree, median_split_slots
from ..geometry.distance import DIST_REL_TOL, pair_distances
from ..geometry.pair_bounds import corner_points, pair_bounds
from ..keys import argsort_keys

__all__ = ["NearPairs", "TOUCH_REL_TOL", "TooManyPairs", "near_pairs",
           "near_and_intersecting", "near_or_intersecting_pairs", "candidate_pairs",
           "cross_tree", "decide_pairs", "settle"]

#: Pairs proved disjoint but closer than ``TOUCH_REL_TOL * L`` still go through the exact
#: intersection test, so that a pair it calls intersecting (touching within its
#: tolerance, measured at most a few 1e-10 L) is never also a near pair.
TOUCH_REL_TOL: float = 1e-8

#: Candidate pairs per chunk (bounds, distances, classification): bounds the memory of
#: the per-pair arrays whatever the number of candidates.
_CHUNK: int = 1 << 18


class NearPairs(NamedTuple):
    """`near_or_intersecting_pairs`' answer, K rows, sorted by (triangle of A, of B).

    pairs: (K, 2) int64 (triangle of A, triangle of B).
    dist: (K,) float64 the distance (0 for intersecting pairs).
    intersecting: (K,) bool the pair intersects (`core.triangles` semantics: touching
        within its tolerance counts).
    """

    pairs: np.ndarray
    dist: np.ndarray
    intersecting: np.ndarray


class _Found(NamedTuple):
    """`_query`'s answer: `NearPairs` and, per pair, a closest pair of points (K, 3)
    float64 each where the distance is exact (meaningless for intersecting pairs and
    on the other rows), a lower bound of the distance (K,), whether the distance is
    exact (K,) bool (always, unless bounds decided) and, where it is not, the two
    corners of the upper bound (K,) uint8 (`core.geometry.pair_bounds.PairBounds.corner`)."""

    near: NearPairs
    point_a: np.ndarray
    point_b: np.ndarray
    lower: np.ndarray
    known: np.ndarray
    corner: np.ndarray


def cross_tree(positions: np.ndarray, tris: np.ndarray) -> SelfTree:
    """A box tree of a mesh for `candidate_pairs` (topology only: a balanced median split
    of the triangles' centroids, no self-collision seeds). Build it once per object (0.07
    to 0.15 s for 27k triangles); any positions of the same triangles may be queried with it.
    positions (V, 3) float64, tris (T, 3) int."""
    tris = np.asarray(tris, np.intp)
    H, tri_slot = median_split_slots(np.asarray(positions, np.float64)[tris].mean(axis=1))
    S = 1 << H
    slot_tri = np.full(S, -1, np.intp)
    slot_tri[tri_slot] = np.arange(tris.shape[0])
    none = np.zeros(0, np.intp)
    return SelfTree(H, S, tri_slot, slot_tri, [(none, none)] * (H + 1),
                    np.zeros((tris.shape[0], 3), np.int64), np.zeros(tris.shape[0] + 1, np.intp),
                    none, np.zeros(0, np.int64))


def _check_d(d: float) -> float:
    d = float(d)
    if not (d >= 0.0 and np.isfinite(d)):
        raise ValueError(f"the distance d must be finite and >= 0, got {d}")
    return d


def candidate_pairs(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray,
                    tri_b: np.ndarray, d: float,
                    trees: tuple[SelfTree, SelfTree] | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Every (triangle of A, triangle of B) whose box of A inflated by d meets the box of B:
    a superset of the pairs within distance d (docs/clearance.md, "Candidates").

    Args:
        pos_a: (Va, 3) float64 positions of A; tri_a: (Ta, 3) int triangles of A.
        pos_b, tri_b: the same for B.
        d: float >= 0.
        trees: the two meshes' trees (`cross_tree`, or `SelfTree`s of the same
            triangles); built here when None.
    Returns:
        (K,), (K,) intp triangles of A and of B, each pair once (traversal order).
    """
    d = _check_d(d)
    pos_a = np.asarray(pos_a, np.float64)
    pos_b = np.asarray(pos_b, np.float64)
    tri_a = np.asarray(tri_a, np.intp)
    tri_b = np.asarray(tri_b, np.intp)
    if not tri_a.shape[0] or not tri_b.shape[0]:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    return _candidates(pos_a, tri_a, pos_b, tri_b, d, trees)


def _candidates(pos_a, tri_a, pos_b, tri_b, d: float, trees, limit: int | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """`candidate_pairs` (positions float64, triangles intp). `limit`: the traversal's
    (`cross_candidates`; raises `TooManyPairs`)."""
    ta, tb = trees if trees is not None else (cross_tree(pos_a, tri_a), cross_tree(pos_b, tri_b))
    if ta.n_triangles != tri_a.shape[0] or tb.n_triangles != tri_b.shape[0]:
        raise ValueError("the trees must be built for the same triangles (cross_tree)")
    # A's boxes inflated by d in float64, both sides rounded outward to float32 rows,
    # made from the vertices in slot order (`frame_stack`: the same bits as inflating
    # each triangle's float64 box and rounding it, since both roundings are monotone;
    # no margin needed, module docstring).
    sa, sb = cross_candidates(ta, levels_of(ta, frame_stack(ta, pos_a, tri_a, d)),
                              tb, levels_of(tb, frame_stack(tb, pos_b, tri_b)), limit=limit)
    return np.take(ta.slot_tri, sa), np.take(tb.slot_tri, sb)


def near_or_intersecting_pairs(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray,
                               tri_b: np.ndarray, d: float,
                               trees: tuple[SelfTree, SelfTree] | None = None) -> NearPairs:
    """Every triangle pair of A and B that intersects or lies within distance d.

    Args:
        pos_a: (Va, 3) float64 positions of mesh A (finite); tri_a: (Ta, 3) int triangles.
        pos_b, tri_b: the same for mesh B.
        d: float >= 0, the clearance.
        trees: per mesh its box tree (`cross_tree`), kept by the caller across frames;
            built here when None.

    Returns:
        `NearPairs` (pairs, dist, intersecting), sorted by pair. Exactly:
        * the pairs of the intersection query (boxes that meet, and
          `core.triangles.triangle_pairs_intersect` calls them intersecting), with
          dist 0;
        * every other pair whose exact distance is at most d, with its distance within
          ``DIST_REL_TOL * L`` (``L``, the pair's local scale, at most the largest side
          of the box of its six corners);
        * no pair farther than ``d + 2 DIST_REL_TOL * L``.
    """
    d = _check_d(d)
    pos_a = np.asarray(pos_a, np.float64)
    pos_b = np.asarray(pos_b, np.float64)
    tri_a = np.asarray(tri_a, np.intp)
    tri_b = np.asarray(tri_b, np.intp)
    return _query(pos_a, tri_a, pos_b, tri_b, d, trees, with_hits=True).near


def near_pairs(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray, tri_b: np.ndarray,
               d: float, trees: tuple[SelfTree, SelfTree] | None = None,
               points: bool = False, exact: bool = True,
               limit: int | None = None) -> tuple[np.ndarray, ...]:
    """The triangle pairs of A and B that do NOT intersect and lie within distance d.

    Intersecting pairs are excluded (the frame's intersection query reports them; use
    `near_or_intersecting_pairs` to get both from one query).

    Args:
        pos_a: (Va, 3) float64 positions of mesh A (finite); tri_a: (Ta, 3) int triangles.
        pos_b, tri_b: the same for mesh B.
        d: float >= 0, the clearance.
        trees: per mesh its box tree (`cross_tree`), built here when None.
        points: also return the closest points the distance step found.
        exact: every returned distance exact (as below). False: pairs whose corner bound
            already proves them within d keep that bound (`core.geometry.pair_bounds`):
            the same pairs, for a fraction of the cost; the answer then also carries,
            per pair, a lower bound and whether its distance is exact (`settle` makes
            chosen rows exact).
        limit: a work budget (the live overlay's): raise `TooManyPairs` once a level of
            the box traversal holds more than this many node pairs, before any pair is
            decided (the candidates, and so the work after them, stay under it).

    Returns:
        pairs: (K, 2) int64 (triangle of A, triangle of B), sorted: every pair whose
            exact distance is at most d and that is not a pair of the intersection query
            (boxes that meet, `core.triangles.triangle_pairs_intersect` says
            intersecting); none farther than ``d + 2 DIST_REL_TOL * L``
            (docs/clearance.md).
        dist: (K,) float64 their distances, each within ``DIST_REL_TOL * L`` of the exact
            one (so possibly above d by that much); without `exact`, an upper bound of
            it (at most d) on the rows not yet exact.
        point_a, point_b: with `points`, (K, 3) float64 each, a closest pair of points
            (world space; `core.geometry.distance.pair_distances`' for the pair), or,
            on rows not exact, the two corners whose distance is the upper bound.
        lower, known: without `exact`, (K,) float64 a lower bound of each distance (the
            distance itself where known) and (K,) bool whether ``dist`` is exact.
    """
    d = _check_d(d)
    r = _query(np.asarray(pos_a, np.float64), np.asarray(tri_a, np.intp),
               np.asarray(pos_b, np.float64), np.asarray(tri_b, np.intp), d, trees,
               with_hits=False, exact=exact, limit=limit)
    out = (r.near.pairs, r.near.dist)
    if points:
        qa, qb = r.point_a, r.point_b
        todo = np.flatnonzero(~r.known)
        if todo.size:               # the corners of the upper bounds, made on request
            qa[todo], qb[todo] = corner_points(pos_a, tri_a, r.near.pairs[todo, 0], pos_b,
                                               tri_b, r.near.pairs[todo, 1], r.corner[todo])
        out += (qa, qb)
    if not exact:
        out += (r.lower, r.known)
    return out


def near_and_intersecting(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray,
                          tri_b: np.ndarray, d: float,
                          trees: tuple[SelfTree, SelfTree] | None = None
                          ) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """One query for both stages of a frame with a clearance: the near pairs (pairs,
    dist, point_a, point_b, lower, known, corner: `near_pairs(..., points=True,
    exact=False)`'s, the points only where the distance is known, the other rows'
    upper bounds named by their corners, `core.geometry.pair_bounds.corner_points`) and
    the intersecting pairs as the intersection query decides them (boxes that meet,
    and `core.triangles.triangle_pairs_intersect` says so), (H, 2) int64 sorted:
    `near_or_intersecting_pairs`' answer split in two. The candidates inflated by d
    include every pair whose boxes meet, so the intersection query's own traversal is
    not needed (`core.scan.frame`'s clearance fold). Arguments as `near_pairs`."""
    d = _check_d(d)
    tri_a = np.asarray(tri_a, np.intp)
    tri_b = np.asarray(tri_b, np.intp)
    r = _query(np.asarray(pos_a, np.float64), tri_a, np.asarray(pos_b, np.float64), tri_b,
               d, trees, with_hits=True, exact=False)
    hit = r.near.intersecting
    near = (r.near.pairs, r.near.dist, r.point_a, r.point_b, r.lower, r.known, r.corner)
    if hit.any():               # most frames have none: no copy of the near rows then
        keep = np.flatnonzero(~hit)
        near = tuple(x[keep] for x in near)
    return near, r.near.pairs[hit]


def settle(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray, tri_b: np.ndarray,
           pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact distances of near pairs (`near_pairs(..., exact=False)` rows not yet
    known): (K,) float64 distances and (K, 3) float64 closest points on A and on B. The
    pairs must not intersect (near pairs never do), so every candidate minimum is valid.
    pairs: (K, 2) int (triangle of A, triangle of B)."""
    pairs = np.asarray(pairs, np.intp).reshape(-1, 2)
    r = pair_distances(pos_a, tri_a, pairs[:, 0], pos_b, tri_b, pairs[:, 1])
    return r.dist, r.point_a, r.point_b


def _none() -> _Found:
    z = np.zeros(0)
    return _Found(NearPairs(np.zeros((0, 2), np.int64), z, np.zeros(0, dtype=bool)),
                  np.zeros((0, 3)), np.zeros((0, 3)), z, np.zeros(0, dtype=bool),
                  np.zeros(0, np.uint8))


class _Decided(NamedTuple):
    """One chunk's candidates decided (n rows): near (within d, or within the distance
    tolerance of it), the distance or its upper bound, a lower bound, whether the
    distance is exact, whether the pair is proved disjoint and farther than the touching
    tolerance (no intersection test needed), the corners of the upper bound (n,) uint8
    where the distance is not exact, and the closest points (2, m, 3) of the near rows
    whose distance is exact, `exact_rows` (m,) intp ascending."""

    near: np.ndarray
    dist: np.ndarray
    lower: np.ndarray
    known: np.ndarray
    proved: np.ndarray
    corner: np.ndarray
    exact_rows: np.ndarray
    points: np.ndarray


def _exact(pos_a, tri_a, ca, pos_b, tri_b, cb, d: float) -> _Decided:
    """Candidates decided by their exact distances (`pair_distances` up to d)."""
    r = pair_distances(pos_a, tri_a, ca, pos_b, tri_b, cb, upto=d)
    near = r.dist <= d + DIST_REL_TOL * r.scale
    proved = r.separated & (r.dist > TOUCH_REL_TOL * r.scale)
    rows = np.flatnonzero(near)
    return _Decided(near, r.dist, r.dist, np.ones(ca.size, dtype=bool), proved,
                    np.zeros(ca.size, np.uint8), rows,
                    _points(pos_a, tri_a, ca, pos_b, tri_b, cb, r, rows, d))


def _bounded(pos_a, tri_a, ca, pos_b, tri_b, cb, d: float) -> _Decided:
    """Candidates decided by corner and gap bounds first (`core.geometry.pair_bounds`):
    a pair whose lower bound exceeds d is dropped, one whose upper bound is at most d is
    near with that bound as its distance (not exact), and only the others get their exact
    distance (docs/clearance.md, "Bounds before distances")."""
    b = pair_bounds(pos_a, tri_a, ca, pos_b, tri_b, cb)
    near = b.upper <= d
    open_ = np.flatnonzero(~near & (b.lower <= d))
    out = _Decided(near, b.upper, b.lower, np.zeros(ca.size, dtype=bool),
                   b.lower > TOUCH_REL_TOL * b.scale, b.corner, np.zeros(0, np.intp),
                   np.zeros((2, 0, 3)))
    if not open_.size:
        return out
    x = _exact(pos_a, tri_a, ca[open_], pos_b, tri_b, cb[open_], d)
    for mine, theirs in zip(out[:5], x[:5]):
        mine[open_] = theirs
    return out._replace(exact_rows=open_[x.exact_rows], points=x.points)


def _query(pos_a, tri_a, pos_b, tri_b, d: float, trees, with_hits: bool,
           exact: bool = True, limit: int | None = None) -> _Found:
    """The pairs of `near_or_intersecting_pairs` (with_hits) or `near_pairs` (without:
    the intersection test then runs only where a near pair could be an intersecting one),
    with the closest points of the rows whose distance is exact (`exact` False: the
    others carry their corner bounds, `_Found`)."""
    if not tri_a.shape[0] or not tri_b.shape[0]:
        return _none()
    ia, ib = _candidates(pos_a, tri_a, pos_b, tri_b, d, trees, limit)
    return decide_pairs(pos_a, tri_a, ia, pos_b, tri_b, ib, d, with_hits, exact)


def decide_pairs(pos_a: np.ndarray, tri_a: np.ndarray, ia: np.ndarray, pos_b: np.ndarray,
                 tri_b: np.ndarray, ib: np.ndarray, d: float, with_hits: bool,
                 exact: bool = True) -> _Found:
    """Steps 2-4 of the module docstring on given candidate pairs (ia[k] of A, ib[k] of
    B; (K,) intp, distinct, any order): `_query`'s answer as if the traversal had found
    exactly these (the face stage, `core.query.near_faces`, hands over the triangle pairs
    of the face pairs its bounds do not decide). Positions float64, triangles intp."""
    if not ia.size:
        return _none()
    top = tri_a.shape[0] * tri_b.shape[0]                   # pair keys a * T_b + b below it
    decide = _exact if exact else _bounded
    parts = []
    for s in range(0, ia.size, _CHUNK):
        ca, cb = ia[s:s + _CHUNK], ib[s:s + _CHUNK]
        # Sorted by (a, b) here, so that every later selection keeps the order (the
        # answer's) and the gathers of A's corners run along memory. The keys are
        # bounded integers: a radix sort (`core.keys`) takes a quarter of `np.argsort`.
        order = argsort_keys(ca * tri_b.shape[0] + cb, top)
        ca, cb = ca[order], cb[order]
        r = decide(pos_a, tri_a, ca, pos_b, tri_b, cb, d)
        # The exact intersection test, on pairs not proved disjoint and farther than
        # that test's touching tolerance can reach (without hits, only where the pair
        # would be a near one); a pair it calls intersecting is one of the intersection
        # query's when its float64 boxes meet (a pair with boxes apart is disjoint).
        doubt = ~r.proved
        if not with_hits:
            doubt &= r.near
        hit = np.zeros(ca.size, dtype=bool)
        t = np.flatnonzero(doubt)
        if t.size:
            hit[t] = tri_test.triangle_pairs_intersect(pos_a, tri_a, ca[t], pos_b, tri_b, cb[t])
            h = np.flatnonzero(hit)
            if h.size:
                hit[h] = tri_test.boxes_meet(pos_a, tri_a[ca[h]], pos_b, tri_b[cb[h]])
        sel = r.near & ~hit
        if with_hits:
            sel |= hit
        # The kept rows by index (one nonzero for all the gathers below).
        idx = np.flatnonzero(sel)
        h = np.take(hit, idx)
        dist, lower, known = (np.take(x, idx) for x in (r.dist, r.lower, r.known))
        if h.any():
            dist[h] = lower[h] = 0.0
            known |= h
        # The exact rows' points, in the answer's rows (an intersecting pair has none).
        pts = np.zeros((2, idx.size, 3))
        ok = ~hit[r.exact_rows]
        if ok.any():
            pts[:, np.searchsorted(idx, r.exact_rows[ok])] = r.points[:, ok]
        parts.append((np.take(ca, idx), np.take(cb, idx), dist, h, pts, lower, known,
                      np.take(r.corner, idx)))
    if not parts:
        return _none()
    pa, pb, dist, hits, pts, lower, known, corner = (
        x[0] if len(parts) == 1 else np.concatenate(x, axis=1 if k == 4 else 0)
        for k, x in enumerate(zip(*parts)))
    if len(parts) > 1:          # each chunk is sorted; chunks of one A triangle may interleave
        order = argsort_keys(pa * tri_b.shape[0] + pb, top)
        pa, pb, dist, hits, lower, known, corner = (
            x[order] for x in (pa, pb, dist, hits, lower, known, corner))
        pts = pts[:, order]
    pairs = np.stack([pa, pb], axis=1).astype(np.int64, copy=False)
    return _Found(NearPairs(pairs, dist, hits), pts[0], pts[1], lower, known, corner)


def _points(pos_a, tri_a, ca, pos_b, tri_b, cb, r, rows: np.ndarray, d: float) -> np.ndarray:
    """(2, K, 3) float64 the closest points of the kept pairs ``rows`` of a chunk, as
    `pair_distances` without ``upto`` gives them: its points for every pair it refined
    or proved; a pair ``upto`` stopped early (its gap above d, so kept only within the
    distance tolerance: rare) gets its points from a full call."""
    pts = np.stack([r.point_a[rows], r.point_b[rows]])
    late = np.flatnonzero(r.dist[rows] > d)
    if late.size:
        k = rows[late]
        full = pair_distances(pos_a, tri_a, ca[k], pos_b, tri_b, cb[k])
        pts[0, late], pts[1, late] = full.point_a, full.point_b
    return pts
