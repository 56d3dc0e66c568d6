"""Swept bounds and the mesh-level continuous collision query, under linear motion.
Pure numpy.

Two facts make the broad phase of `core.geometry.ccd` cheap (proofs in docs/ccd.md,
"Swept bounds"):

* A sphere moving linearly from (c0, r0) to (c1, r1) holds, at every t in [0, 1], every
  linearly moving point it holds at both ends: ``|p(t) - c(t)| <= (1 - t) |p0 - c0| +
  t |p1 - c1| <= (1 - t) r0 + t r1`` (`sphere_holds`, `sphere_at`).
* The box of a primitive's vertices at both ends holds the primitive at every t (each
  point of it is a convex combination of its moving vertices, each a convex combination of
  its two ends): `swept_boxes`.

`mesh_pairs` returns every pair (triangle of A, triangle of B) with a vertex-face (both
ways) or edge-edge contact at some t in [0, 1], with a lower bound of its first contact
time: swept boxes, a sort-and-sweep on x over the boxes' lower ends, then the 15
primitive queries of each candidate pair through `ccd.ccd` with ``first_contact``.
"""
from __future__ import annotations

import numpy as np

from . import ccd, coplanar

__all__ = ["sphere_at", "sphere_holds", "swept_boxes", "candidate_pairs", "mesh_pairs",
           "pair_times"]

#: Candidate pairs expanded at a time (bounds the memory of the broad phase).
_PAIR_BLOCK: int = 1 << 18


def sphere_at(c0: np.ndarray, r0: np.ndarray, c1: np.ndarray, r1: np.ndarray,
              t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """The moving sphere at time t: centre (..., 3) ``(1 - t) c0 + t c1`` and radius (...)
    ``(1 - t) r0 + t r1``."""
    t = np.asarray(t, dtype=np.float64)
    return (1.0 - t)[..., None] * c0 + t[..., None] * c1, (1.0 - t) * r0 + t * r1


def sphere_holds(c0: np.ndarray, r0: np.ndarray, c1: np.ndarray, r1: np.ndarray,
                 p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """Whether the sphere moving from (c0, r0) to (c1, r1) holds the point moving from p0
    to p1 at every t in [0, 1]: it suffices to hold it at both ends (module docstring).
    Centres and points (..., 3), radii (...); returns (...) bool."""
    return ((np.linalg.norm(p0 - c0, axis=-1) <= r0) & (np.linalg.norm(p1 - c1, axis=-1) <= r1))


def swept_boxes(v0: np.ndarray, v1: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per triangle, the box of its 3 vertices at t = 0 and t = 1: it holds the triangle at
    every t. ``v0``, ``v1``: (V, 3) float64; ``tris``: (T, 3) int. Returns lo, hi (T, 3)."""
    corners = np.concatenate([v0[tris], v1[tris]], axis=1)                  # (T, 6, 3)
    return corners.min(axis=1), corners.max(axis=1)


def candidate_pairs(lo_a: np.ndarray, hi_a: np.ndarray, lo_b: np.ndarray,
                    hi_b: np.ndarray) -> np.ndarray:
    """Every (i, j) whose closed boxes overlap, (K, 2) int64, sorted. Sort and sweep on x:
    B sorted by its lower x; for box i of A, the B boxes with ``lo_b.x`` in
    ``[lo_a.x - w, hi_a.x]`` (``w`` the widest B box on x) hold all its x-overlaps; those
    ranges are expanded on arrays, in blocks, and filtered on all three axes."""
    if len(lo_a) == 0 or len(lo_b) == 0:
        return np.empty((0, 2), np.int64)
    order = np.argsort(lo_b[:, 0], kind="stable")
    sx = lo_b[order, 0]
    width = float((hi_b[:, 0] - lo_b[:, 0]).max())
    first = np.searchsorted(sx, lo_a[:, 0] - width, side="left")
    end = np.searchsorted(sx, hi_a[:, 0], side="right")
    count = np.maximum(end - first, 0)
    out = []
    # Blocks of A boxes whose ranges add up to about _PAIR_BLOCK candidates.
    cum = np.cumsum(count)
    starts = np.searchsorted(cum, np.arange(0, int(cum[-1]), _PAIR_BLOCK), side="right")
    bounds = np.unique(np.concatenate([[0], starts, [len(lo_a)]]))
    for s, e in zip(bounds[:-1], bounds[1:]):
        c = count[s:e]
        i = np.repeat(np.arange(s, e), c)
        offs = np.arange(len(i)) - np.repeat(np.cumsum(c) - c, c)
        j = order[np.repeat(first[s:e], c) + offs]
        ok = ((lo_a[i] <= hi_b[j]) & (lo_b[j] <= hi_a[i])).all(axis=1)
        out.append(np.stack([i[ok], j[ok]], axis=1))
    pairs = np.concatenate(out) if out else np.empty((0, 2), np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def mesh_pairs(va0: np.ndarray, va1: np.ndarray, tris_a: np.ndarray, vb0: np.ndarray,
               vb1: np.ndarray, tris_b: np.ndarray, *, tol: float = ccd.TOL,
               t_tol: float = ccd.T_TOL) -> tuple[np.ndarray, np.ndarray]:
    """Every (triangle of A, triangle of B) pair with a vertex-face or edge-edge contact at
    some t in [0, 1] (within ``tol``, docs/ccd.md), and a lower bound of its first contact.

    ``va0``, ``va1``: (Va, 3) float64 vertices of A at t = 0 and 1, ``tris_a`` (Ta, 3) int;
    the same for B. Returns pairs (K, 2) int64 sorted, and t (K,) float64. A pair that
    already interpenetrates at t = 0 (an edge through a face, no vertex-face or edge-edge
    contact during the motion) is a static intersection, for the triangle test at frames,
    and is not reported."""
    va0, va1, vb0, vb1 = (np.asarray(v, dtype=np.float64) for v in (va0, va1, vb0, vb1))
    tris_a = np.asarray(tris_a, dtype=np.int64).reshape(-1, 3)
    tris_b = np.asarray(tris_b, dtype=np.int64).reshape(-1, 3)
    cand = candidate_pairs(*swept_boxes(va0, va1, tris_a), *swept_boxes(vb0, vb1, tris_b))
    t = pair_times(va0, va1, tris_a, vb0, vb1, tris_b, cand[:, 0], cand[:, 1], tol=tol,
                   t_tol=t_tol)
    hit = np.isfinite(t)
    return cand[hit], t[hit]


def pair_times(va0: np.ndarray, va1: np.ndarray, tris_a: np.ndarray, vb0: np.ndarray,
               vb1: np.ndarray, tris_b: np.ndarray, ta: np.ndarray, tb: np.ndarray, *,
               tol: float = ccd.TOL, t_tol: float = ccd.T_TOL) -> np.ndarray:
    """Per candidate triangle pair (ta[k] of A, tb[k] of B), a lower bound of its first
    vertex-face (both ways) or edge-edge contact during the step, ``inf`` where none
    (within ``tol``, docs/ccd.md). (K,) float64.

    Two sound filters go first, on arrays over the pairs' 15 primitive queries: a
    primitive whose box inequalities do not each hold at one end of the step cannot touch
    (`_near_at_an_end`; the argument of `core.aabb_tree.motion`), and four points never
    coplanar during the step cannot touch (`coplanar.never_coplanar`); the kernel
    (`ccd.ccd`, first contact) decides the rest (on MakeHuman's walk, 12 of the 18,000
    queries the box filter leaves of a step's 220,000)."""
    tris_a = np.asarray(tris_a, dtype=np.int64).reshape(-1, 3)
    tris_b = np.asarray(tris_b, dtype=np.int64).reshape(-1, 3)
    ca, cb = tris_a[np.asarray(ta, np.int64)], tris_b[np.asarray(tb, np.int64)]  # (K, 3)
    t = np.full(len(ca), np.inf)
    if not len(ca):
        return t
    a0, a1, b0, b1 = va0[ca], va1[ca], vb0[cb], vb1[cb]                 # (K, 3, 3)
    box_a = [a0.min(axis=1), a0.max(axis=1), a1.min(axis=1), a1.max(axis=1)]
    box_b = [b0.min(axis=1), b0.max(axis=1), b1.min(axis=1), b1.max(axis=1)]
    # Vertex-face, both ways: corner c of one triangle against the other.
    for p0, p1, f0, f1, fbox in ((a0, a1, b0, b1, box_b), (b0, b1, a0, a1, box_a)):
        near = _near_at_an_end((p0, p1), (p0, p1), [b[:, None] for b in fbox])  # (K, 3)
        k, c = np.nonzero(near)
        if k.size:
            q0 = np.concatenate([p0[k, c][:, None], f0[k]], axis=1)         # (m, 4, 3)
            q1 = np.concatenate([p1[k, c][:, None], f1[k]], axis=1)
            np.minimum.at(t, k, _times(ccd.VERTEX_FACE, q0, q1, tol, t_tol))
    # Edge-edge: edge i of A against edge j of B.
    # Each edge from its smaller vertex id to the larger: an edge of two triangles is the
    # same query from both, whichever triangle asks it.
    ea0, ea1 = _edge_ends(a0, a1, ca)                                       # (K, 3, 2, 3)
    eb0, eb1 = _edge_ends(b0, b1, cb)
    lo_a = (ea0.min(axis=2)[:, :, None], ea1.min(axis=2)[:, :, None])
    hi_a = (ea0.max(axis=2)[:, :, None], ea1.max(axis=2)[:, :, None])
    box = [eb0.min(axis=2)[:, None], eb0.max(axis=2)[:, None], eb1.min(axis=2)[:, None],
           eb1.max(axis=2)[:, None]]
    k, i, j = np.nonzero(_near_at_an_end(lo_a, hi_a, box))                 # (K, 3, 3)
    if k.size:
        q0 = np.concatenate([ea0[k, i], eb0[k, j]], axis=1)                 # (m, 4, 3)
        q1 = np.concatenate([ea1[k, i], eb1[k, j]], axis=1)
        np.minimum.at(t, k, _times(ccd.EDGE_EDGE, q0, q1, tol, t_tol))
    return t


#: A triangle's three edges as corner pairs.
_EDGE = np.array([[0, 1], [1, 2], [2, 0]])


def _edge_ends(x0: np.ndarray, x1: np.ndarray, ids: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """The corners (K, 3, 3) at both ends as the triangles' edges (K, 3, 2, 3), each from
    its smaller vertex id (`ids` (K, 3)) to the larger."""
    local = np.broadcast_to(_EDGE, (len(ids), 3, 2)).copy()
    e = np.take_along_axis(ids, local.reshape(len(ids), 6), axis=1).reshape(-1, 3, 2)
    flip = e[:, :, 0] > e[:, :, 1]
    local[flip] = local[flip][:, ::-1]
    at = local.reshape(len(ids), 6, 1)
    return (np.take_along_axis(x0, at, axis=1).reshape(-1, 3, 2, 3),
            np.take_along_axis(x1, at, axis=1).reshape(-1, 3, 2, 3))


def _times(kind: str, q0: np.ndarray, q1: np.ndarray, tol: float, t_tol: float
           ) -> np.ndarray:
    """Per query (U, 4, 3) a lower bound of its first contact, ``inf`` where none: the
    coplanarity filter, then the kernel on what it leaves."""
    t = np.full(len(q0), np.inf)
    rest = np.flatnonzero(~coplanar.never_coplanar(q0, q1, kind == ccd.VERTEX_FACE))
    if rest.size:
        r = ccd.ccd(kind, q0[rest], q1[rest], tol=tol, first_contact=True, t_tol=t_tol)
        t[rest] = r.t
    return t


def _near_at_an_end(lo_a: tuple, hi_a: tuple, box_b: list) -> np.ndarray:
    """Whether two moving primitives may touch: every box inequality holds at t = 0 or at
    t = 1 (a box's low end over time is a min of linear functions, never below its
    chord; its high end never above: `core.aabb_tree.motion`). ``lo_a``, ``hi_a``: the
    first primitive's box at both ends (a point's is itself); ``box_b``: the second's
    [lo0, hi0, lo1, hi1]; broadcast (..., 3). Plain comparisons of the given numbers:
    exact. (...,) bool."""
    lo0, hi0, lo1, hi1 = box_b
    ok = ((lo_a[0] <= hi0) | (lo_a[1] <= hi1)) & ((lo0 <= hi_a[0]) | (lo1 <= hi_a[1]))
    return ok.all(axis=-1)
