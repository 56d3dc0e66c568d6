"""Exact minimum distance between triangle pairs, vectorized, float64. Pure numpy.

For two closed triangles that do not intersect, the minimum Euclidean distance is
attained on a vertex of one and the other triangle (6 pairs) or on an edge of each
(9 pairs). `triangle_pair_distances` evaluates all of them for K pairs at once, as 33
candidates per pair, each the distance between a point of A and a point of B:

* 18 vertex–edge candidates (a vertex of one triangle, its clamped projection on an edge
  of the other). They are the boundary of every edge–edge problem (an end point of one
  segment against the other segment) and the vertex–triangle answer whenever the
  projection of the vertex on the plane falls outside the triangle.
* 9 edge–edge interior candidates: the closest points of the two lines, ``s`` solved from
  the cross product (``s = n·(d2 × r) / n·n``, ``n = d1 × d2``: a relative error of
  u / sin θ, where the Gram form ``a e - b²`` has u / sin² θ), clamped to [0, 1], then
  ``t`` the clamped projection of that point on the other edge. Parallel (``n·n = 0``)
  and zero-length edges fall back to the vertex–edge candidates.
* 6 vertex–face candidates: the distance of a vertex to the plane of the other triangle,
  used only when its projection falls inside. The plane is spanned by the longest edge
  ``e`` and the height vector ``h`` (the third corner minus its projection on the line of
  ``e``), and the vertex's coordinate along ``h`` is taken from its part across ``e``, so
  that a sliver's badly determined plane only turns about its longest edge, by an angle
  its small width multiplies back. Degenerate triangles (collinear or repeated corners,
  ``h = 0``) have no face candidate: their edges are the whole triangle.

Accuracy (docs/clearance.md, "The float64 distance"): coordinates are translated to the
pair's first vertex and scaled by a power of two (exact) so that the pair's largest
coordinate ``L`` maps to [0.5, 1): no square under- or overflows and nothing depends on
the distance from the origin. Every candidate is, up to a few ulps of ``L``, the distance
between a point of A and a point of B, and the candidate of the true closest pair (or
one next to it) is within a few ulps of ``L`` of the true distance, so

    |dist - exact distance| <= DIST_REL_TOL * L          (L: ``scale``),

a margin of more than a thousand over what the tests measure against exact rational
arithmetic (at most ~3e-16 L). Most pairs also get an a-posteriori proof
(`Distances.separated`): the winner's direction ``v = point_b - point_a`` separates the
triangles by ``min v·b - max v·a``, a lower bound of the distance for any ``v``; when it
matches ``dist`` within `CERT_REL_TOL` the pair is proved disjoint and ``dist`` exact to
that bound, whatever the analysis says.

**Intersecting pairs.** For two triangles that intersect, the distance is 0, but the
minimum of these candidates is in general NOT 0 (an edge piercing a face is not a vertex
or edge contact) and must not be used: such pairs are never ``separated``; callers decide
them with `core.triangles.triangle_pairs_intersect` (exact, conservative) and use these
distances only for the pairs it calls disjoint.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["DIST_REL_TOL", "CERT_REL_TOL", "Distances", "triangle_pair_distances",
           "pair_distances"]

#: Error bound of the returned distances relative to the pair's scale ``L`` (the largest
#: absolute coordinate of the six vertices after translating the first vertex of A to the
#: origin, `Distances.scale`): ``|dist - exact| <= DIST_REL_TOL * L`` for every pair that
#: does not intersect (docs/clearance.md).
DIST_REL_TOL: float = 1e-12

#: A pair is `Distances.separated` when its separating gap along the winner's direction
#: exceeds ``CERT_REL_TOL * L`` and is at least ``dist - CERT_REL_TOL * L``: then it is
#: disjoint and ``|dist - exact| <= 2 * CERT_REL_TOL * L`` (the gap's own rounding is
#: below 1e-14 L, docs/clearance.md).
CERT_REL_TOL: float = 1e-13

#: Pairs per block: bounds the memory for any K (the ~15 (3, 9, n) buffers of `_Work`,
#: reused by every block of a call); 1024 and 2048 measured best (512 pays the numpy call
#: overheads, 4096 leaves the cache).
_BLOCK: int = 2048

# The 33 candidates, in the rows they are stacked in (`_kernel`):
#   0-8   corner i of A vs edge j of B        9-17  edge i of A vs corner j of B
#   18-26 edge i of A vs edge j of B          27-29 face of A vs corner j of B
#   30-32 corner i of A vs face of B
# Per row, the corner of each triangle its closest point starts from (3: the start of the
# longest edge, the face frame's base) and whether its frame height counts (face rows).
_I = np.repeat(np.arange(3), 3)
_J = np.tile(np.arange(3), 3)
_FROM_A = np.concatenate([_I, _I, _I, [3, 3, 3], [0, 1, 2]])
_FROM_B = np.concatenate([_J, _J, _J, [0, 1, 2], [3, 3, 3]])
_ROWS = np.arange(33, dtype=np.int64)[:, None]
_LOW6 = np.int64(~63)


class Distances(NamedTuple):
    """`pair_distances`' answer for K pairs.

    dist: (K,) float64 the distance (meaningful only for pairs that do not intersect).
    point_a, point_b: (K, 3) float64 a closest pair of points (rounded to the global
        coordinates they are written in).
    scale: (K,) float64 ``L``: the largest absolute coordinate of the six corners after
        translating the first corner of A to the origin (at most the largest side of the
        box of the six corners).
    separated: (K,) bool proved disjoint (the separating gap exceeds ``CERT_REL_TOL L``),
        with ``|dist - exact| <= 2 CERT_REL_TOL L``; with ``upto``, also the pairs proved
        farther than it. Pairs closer than ``CERT_REL_TOL L``, and intersecting ones, are
        never separated.
    """

    dist: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    scale: np.ndarray
    separated: np.ndarray


def _dot(p: np.ndarray, q: np.ndarray, out: np.ndarray | None = None,
         tmp: np.ndarray | None = None) -> np.ndarray:
    """Dot products over the first axis (x, y, z) of broadcastable arrays p, q, into
    `out` with the scratch `tmp` when given (no temporaries)."""
    out = np.multiply(p[0], q[0], out=out)
    tmp = np.multiply(p[1], q[1], out=tmp)
    out += tmp
    np.multiply(p[2], q[2], out=tmp)
    out += tmp
    return out


def _cross(p: np.ndarray, q: np.ndarray, out: np.ndarray | None = None,
           tmp: np.ndarray | None = None) -> np.ndarray:
    """Cross products over the first axis of broadcastable (3, ...) arrays, into `out`
    (3, ...) with the scratch `tmp` (...) when given."""
    if out is None:
        out = np.empty(np.broadcast_shapes(p.shape, q.shape))
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.multiply(p[i], q[j], out=out[k])
        tmp = np.multiply(p[j], q[i], out=tmp)
        out[k] -= tmp
    return out


def _clamp01(t: np.ndarray, zero: np.ndarray, one: np.ndarray) -> np.ndarray:
    """t clamped to [0, 1] in place. A NaN (0/0: a zero-length edge, parallel lines) goes
    to 0 and an infinity to 0 or 1: there any parameter is a valid point, and other
    candidates cover the answer. fmax/fmin with array bounds: with a scalar bound numpy
    1.24 takes a path four times slower."""
    np.fmax(t, zero, out=t)
    np.fmin(t, one, out=t)
    return t


def _edges(c: np.ndarray) -> np.ndarray:
    """(3 xyz, 3, n) edge i from corner i to corner i + 1 of corners c (3 xyz, 3, n)."""
    e = np.empty_like(c)
    np.subtract(c[:, 1:], c[:, :2], out=e[:, :2])
    np.subtract(c[:, 0], c[:, 2], out=e[:, 2])
    return e


def _longest(sq: np.ndarray) -> np.ndarray:
    """(n,) intp index of the longest of three edges (squared lengths sq (3, n)); the
    first on ties (comparisons: an argmax over the short axis is ten times slower)."""
    k0 = (sq[0] >= sq[1]) & (sq[0] >= sq[2])
    k1 = ~k0 & (sq[1] >= sq[2])
    k = k1.astype(np.intp)
    k += 2 * (~k0 & ~k1)
    return k


#: Added to the squared distance of a vertex–face candidate whose projection falls
#: outside (or whose triangle has no face): larger than any squared distance in scaled
#: local coordinates (at most 12), finite so that the sum is never NaN.
_OUT = 1e300


def _face(c: np.ndarray, e: np.ndarray, sq: np.ndarray, ws: "_Work"
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The corners of each triangle against the face of the other, both sides at once:
    c (3 xyz, 3, 2n) the corners of A (columns :n) then of B (n:), e their edges, sq the
    squared edge lengths (3, 2n). Column j < n is the face of A against the corners of B;
    column n + j the face of B against the corners of A.

    The frame: base = start of the longest edge ee (both angles at it are at most 90°),
    h = third corner minus its projection on that line (at ``lam`` along ee, in [0, 1]),
    normal ee × h; the triangle is (0, 0), (1, 0), (lam, 1) in the (ee, h) coordinates.

    Returns the squared distances to the plane (3, 2n) (+`_OUT` where the projection is
    outside or the triangle has no area), the projection's frame coordinates x and y
    (3, 2n), the longest edge's index k (2n,) and h (3, 2n)."""
    n2 = c.shape[2]
    n = n2 // 2
    col = ws.col2
    zero, one = ws.zero[:3, :n2], ws.one[:3, :n2]
    k = _longest(sq)
    at = k * n2 + col
    base = np.take(c.reshape(3, -1), at, axis=1)              # (3, 2n)
    ee = np.take(e.reshape(3, -1), at, axis=1)
    ee2 = np.take(sq.ravel(), at)
    g = np.take(e.reshape(3, -1), (k + 2) % 3 * n2 + col, axis=1)
    np.negative(g, out=g)                                     # third corner - base
    lam = _clamp01(_dot(g, ee) / ee2, zero[0], one[0])
    h = g - lam * ee
    nrm = _cross(ee, h)
    hh = _dot(h, h)
    nn = _dot(nrm, nrm)
    q = np.empty_like(c)                                      # the other's corners - base
    np.subtract(c[..., n:], base[:, None, :n], out=q[..., :n])
    np.subtract(c[..., :n], base[:, None, n:], out=q[..., n:])
    x = _dot(q, ee[:, None])
    x /= ee2
    # y from the part of q across ee: h is ⟂ ee only up to the rounding of its
    # subtraction, u·|ee|, and q·h would carry q's component along ee times that error,
    # huge next to a sliver's |h|² (docs/clearance.md).
    qp = np.empty_like(q)
    for i in range(3):              # per component: x (3, 2n) against (3, 1, 2n) at once
        np.multiply(x, ee[i], out=qp[i])        # made numpy pick an inner loop of 3
        np.subtract(q[i], qp[i], out=qp[i])
    y = _dot(qp, h[:, None])
    y /= hh
    sqf = _dot(q, nrm[:, None])
    sqf *= sqf
    sqf /= nn
    np.fmax(sqf, zero, out=sqf)                               # 0/0 (no face) -> 0, then:
    inside = (y >= 0.0) & (y <= 1.0) & (x >= lam * y) & (x <= 1.0 - (1.0 - lam) * y)
    inside &= nn > 0.0
    sqf += ~inside * _OUT
    _clamp01(y, zero, one)          # no NaN (no face) for `_kernel`'s product by 0
    return sqf, x, y, k, h


class _Work:
    """Buffers of one block size n, reused by every block of a call: the (3, 9, n)
    arrays would otherwise be fresh pages (page faults) on every block."""

    def __init__(self, n: int):
        self.n = n
        self.col2 = np.arange(2 * n)
        self.zero, self.one = np.zeros((9, 2 * n)), np.ones((9, 2 * n))
        self.c = np.empty((3, 3, 2 * n))            # corners of A, then of B (`_kernel`)
        self.SQ = np.empty((33, n))
        # Parameters along each side's slot (A: columns :n, B: n:); the rows of a corner
        # stay 0 forever.
        self.P = np.zeros((33, 2 * n))
        self.EA, self.EB, self.W, self.V, self.N, self.M = np.empty((6, 3, 9, n))
        self.SA, self.SB, self.T, self.U = np.empty((4, 9, n))


def _kernel(ws: _Work, full: bool = True
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The 33 candidates (`full`), or the 18 vertex–edge ones, of the n pairs whose scaled
    local corners are in ``ws.c`` (3 xyz, 3 corners, 2n float64: A's then B's). Returns
    the smallest squared distance (n,), its closest points (3, n) each, and the
    separating gap along their direction (n,), all scaled local.

    The nine (corner or edge i of A, corner or edge j of B) combinations are laid out as
    contiguous (3 xyz, 9, n) arrays (row 3 i + j): numpy runs flat arrays two to three
    times faster than the same arithmetic broadcast from (3, 1, n) and (1, 3, n)."""
    n = ws.n
    zero, one, SQ, P = ws.zero[:, :n], ws.one[:, :n], ws.SQ, ws.P
    PA, PB = P[:, :n], P[:, n:]
    EA, EB, W, V, N, M = ws.EA, ws.EB, ws.W, ws.V, ws.N, ws.M
    T, U = ws.T, ws.U
    c = ws.c
    la, lb = c[..., :n], c[..., n:]
    e = _edges(c)
    sq = _dot(e, e)                                           # (3, 2n)
    EA.reshape(3, 3, 3, n)[...] = e[:, :, None, :n]           # edge i of A
    EB.reshape(3, 3, 3, n)[...] = e[:, None, :, n:]           # edge j of B
    ws.SA.reshape(3, 3, n)[...] = sq[:, None, :n]
    ws.SB.reshape(3, 3, n)[...] = sq[None, :, n:]
    W.reshape(3, 3, 3, n)[...] = la[:, :, None]
    W.reshape(3, 3, 3, n)[...] -= lb[:, None]                 # a_i - b_j

    # Corner i of A against edge j of B: t1 = clamp(w·eB / |eB|²), v = w - t1 eB.
    t1 = PB[0:9]
    np.divide(_dot(W, EB, T, U), ws.SB, out=t1)
    _clamp01(t1, zero, one)
    np.multiply(t1, EB, out=V)
    np.subtract(W, V, out=V)
    _dot(V, V, SQ[0:9], U)
    # Edge i of A against corner j of B: t2 = clamp(-w·eA / |eA|²), v = w + t2 eA.
    t2 = PA[9:18]
    np.divide(_dot(W, EA, T, U), ws.SA, out=t2)
    np.negative(t2, out=t2)
    _clamp01(t2, zero, one)
    np.multiply(t2, EA, out=V)
    V += W
    _dot(V, V, SQ[9:18], U)
    if not full:
        return _winner(ws, SQ[:18], e, None, None, None)
    # Edge i of A against edge j of B, the lines' closest points, r = w:
    # s = n·(eB × r) / n·n with n = eA × eB, then t the clamped projection on edge j.
    _cross(EA, EB, N, U)
    _cross(EB, W, M, U)
    s3 = PA[18:27]
    np.divide(_dot(N, M, T, U), _dot(N, N, SQ[18:27], U), out=s3)
    _clamp01(s3, zero, one)
    np.multiply(s3, EA, out=V)
    V += W                                                    # (a_i + s eA) - b_j
    t3 = PB[18:27]
    np.divide(_dot(V, EB, T, U), ws.SB, out=t3)
    _clamp01(t3, zero, one)
    np.multiply(t3, EB, out=M)
    V -= M
    _dot(V, V, SQ[18:27], U)
    # Corners of one triangle against the face of the other.
    sqf, x, y, k, h = _face(c, e, sq, ws)
    SQ[27:30] = sqf[:, :n]
    SQ[30:33] = sqf[:, n:]
    PA[27:30] = x[:, :n]
    PB[30:33] = x[:, n:]
    return _winner(ws, SQ, e, y, k, h)


def _winner(ws: _Work, SQ: np.ndarray, e: np.ndarray, y: np.ndarray | None,
            k: np.ndarray | None, h: np.ndarray | None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_kernel`'s answer from its candidates' squared distances SQ (m, n) (the first m
    rows), the edges e (3, 3, 2n) and, when the face rows are in SQ, the face frames'
    heights y (3, 2n), longest edges k (2n,) and height vectors h (3, 2n) (`_face`)."""
    n, c, P = ws.n, ws.c, ws.P
    # The winner: the smallest squared distance. Its index is packed into the low 6
    # bits of the (nonnegative, hence integer-ordered) float64 bits, so that one
    # contiguous min over the rows finds it (an argmin over the rows was 8x slower); a
    # candidate within 64 ulps of the minimum may win, its points are then as good.
    bits = SQ.view(np.int64) & _LOW6
    bits |= _ROWS[:SQ.shape[0]]
    w = (bits.min(axis=0) & 63).astype(np.intp)
    sq_min = SQ.min(axis=0)
    # Its points, both sides at once (columns :n of A, n: of B): the start corner of
    # the slot (the face frame's base, corner k, on face rows), plus the parameter
    # along the slot's edge (the longest edge on face rows), plus y h on face rows.
    n2 = 2 * n
    col2 = ws.col2
    start = np.concatenate([_FROM_A[w], _FROM_B[w]])
    w2 = np.concatenate([w, w])
    s = start * n2 + col2
    if y is not None:
        face = start == 3
        s += face * (k - 3) * n2
    p = np.take(c.reshape(3, -1), s, axis=1)
    p += np.take(P.ravel(), w2 * n2 + col2) * np.take(e.reshape(3, -1), s, axis=1)
    if y is not None:
        r = np.concatenate([w - 27, w - 30])
        np.clip(r, 0, 2, out=r)
        p += (face * np.take(y.ravel(), r * n2 + col2)) * h
    pa, pb = p[:, :n], p[:, n:]
    # The separating gap along v = pb - pa: for any v, (min v·b - max v·a) / |v| is a
    # lower bound of the distance (a nan when v = 0: never a proof).
    d = pb - pa
    gap = (_dot(d[:, None], c[..., n:]).min(axis=0) - _dot(d[:, None], c[..., :n]).max(axis=0))
    gap /= np.sqrt(_dot(d, d))
    return sq_min, pa, pb, gap


def _gathered(pos_a: np.ndarray, tri_a: np.ndarray, ia: np.ndarray, pos_b: np.ndarray,
              tri_b: np.ndarray, ib: np.ndarray):
    """Checked inputs: K, and a function giving the corners (3 xyz, 3 corners, n) of the
    pairs `sel` (a slice or an index array) of each side: gathered from coordinate rows,
    or, with many pairs per triangle, from per-triangle rows of nine coordinates."""
    pa = np.asarray(pos_a, dtype=np.float64)
    pb = np.asarray(pos_b, dtype=np.float64)
    ta = np.asarray(tri_a)
    tb = np.asarray(tri_b)
    ia = np.asarray(ia, dtype=np.intp).ravel()
    ib = np.asarray(ib, dtype=np.intp).ravel()
    if (pa.ndim != 2 or pa.shape[1] != 3 or pb.ndim != 2 or pb.shape[1] != 3 or ta.ndim != 2
            or ta.shape[1] != 3 or tb.ndim != 2 or tb.shape[1] != 3 or ia.shape != ib.shape):
        raise ValueError("positions must be (V, 3), triangles (T, 3), ia and ib (K,) alike")
    if ia.size >= ta.shape[0] + tb.shape[0]:
        # Many pairs per triangle: each triangle's nine coordinates as one row, so that a
        # pair gathers two 72-byte rows instead of six scattered vertices (3x faster).
        rows_a = np.take(pa, ta.ravel().astype(np.intp), axis=0).reshape(-1, 9)
        rows_b = np.take(pb, tb.ravel().astype(np.intp), axis=0).reshape(-1, 9)

        def corners(sel) -> tuple[np.ndarray, np.ndarray]:
            ga = np.take(rows_a, ia[sel], axis=0).reshape(-1, 3, 3)   # (n, corner, xyz)
            gb = np.take(rows_b, ib[sel], axis=0).reshape(-1, 3, 3)
            return ga.transpose(2, 1, 0), gb.transpose(2, 1, 0)
    else:
        # Few pairs: the pairs' own vertex rows, nothing of the whole mesh copied.
        def corners(sel) -> tuple[np.ndarray, np.ndarray]:
            ga = np.take(pa, np.take(ta, ia[sel], axis=0), axis=0)   # (n, corner, xyz)
            gb = np.take(pb, np.take(tb, ib[sel], axis=0), axis=0)
            return ga.transpose(2, 1, 0), gb.transpose(2, 1, 0)

    return ia.size, corners


def pair_distances(pos_a: np.ndarray, tri_a: np.ndarray, ia: np.ndarray, pos_b: np.ndarray,
                   tri_b: np.ndarray, ib: np.ndarray, *, upto: float | None = None
                   ) -> Distances:
    """`triangle_pair_distances` with each pair's scale ``L`` and separation proof.

    Two passes, the second on fewer pairs: first the 18 vertex–edge candidates, whose
    winner is proved the distance (`Distances.separated`) for most pairs of a mesh (the
    gap along its direction matches it); then all 33 candidates for the others.

    Args:
        pos_a, tri_a, ia, pos_b, tri_b, ib: as `triangle_pair_distances`.
        upto: when given (float64 >= 0), pairs proved farther than it (the separating
            gap of the first pass exceeds ``upto + CERT_REL_TOL L``) are not refined:
            their ``dist`` is that gap, a lower bound of the distance above ``upto``,
            and ``separated`` is True. For queries that only want the pairs within a
            distance.
    Returns: `Distances` (dist, point_a, point_b, scale, separated), K rows each.
    """
    k, corners = _gathered(pos_a, tri_a, ia, pos_b, tri_b, ib)
    dist, scale = np.empty(k), np.empty(k)
    sep = np.empty(k, dtype=bool)
    pts = np.empty((2, 3, k))                                 # point_a, point_b as rows
    work: dict[int, _Work] = {}

    def run(rows: np.ndarray | None, full: bool) -> None:
        """One pass over the pairs `rows` (all when None), a block at a time."""
        m = k if rows is None else rows.size
        for start in range(0, m, _BLOCK):
            stop = min(start + _BLOCK, m)
            n = stop - start
            if n not in work:
                work[n] = _Work(n)
            ws = work[n]
            at = slice(start, stop) if rows is None else rows[start:stop]
            ga, gb = corners(at)
            origin = ga[:, 0].copy()                          # (3, n)
            c = ws.c
            np.subtract(ga, origin[:, None], out=c[..., :n])
            np.subtract(gb, origin[:, None], out=c[..., n:])
            L = np.abs(c).reshape(18, n).max(axis=0)
            f, back = _power_of_two_scale(L)
            c.reshape(18, n)[...] *= f
            sq, p, q, gap = _kernel(ws, full)
            d = np.sqrt(sq)
            # Proved: the gap (a lower bound, its rounding below 1e-14 L) is positive and
            # within the tolerance of dist (an upper bound up to a few ulps of L).
            tol = L * f
            tol *= CERT_REL_TOL
            ok = (gap >= d - tol) & (gap > tol)
            d *= back
            if upto is not None and not full:
                far = gap > (upto * f + tol)          # gap > upto + CERT_REL_TOL L, scaled
                d[far] = gap[far] * back[far]         # the lower bound that proved it
                ok |= far
            dist[at] = d
            p *= back
            p += origin
            q *= back
            q += origin
            pts[0][:, at] = p
            pts[1][:, at] = q
            scale[at] = L
            sep[at] = ok

    with np.errstate(invalid="ignore", divide="ignore", over="ignore", under="ignore"):
        run(None, False)
        rest = np.flatnonzero(~sep)
        if rest.size:
            run(rest, True)
    return Distances(dist, pts[0].T, pts[1].T, scale, sep)


def _power_of_two_scale(L: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pair a power of two f with ``L * f`` in [0.5, 1) (L (n,) float64 >= 0, finite),
    and 1 / f, both exact, from the exponent bits (frexp/ldexp run per element). Scaling
    by f is exact, so squares of the local coordinates neither underflow (tiny meshes)
    nor overflow (huge ones); subnormal L keep f = 2**1021 (their squares may underflow),
    L = 0 gives f = 2**1021 times zero coordinates, and L >= 2**1020 scales below 8."""
    e = (L.view(np.int64) >> 52) & 0x7FF                     # biased exponent E
    np.clip(e, 1, 2043, out=e)                                # L in [2**(E-1023), 2**(E-1022))
    f = ((2045 - e) << 52).view(np.float64)                   # 2**(1022 - E)
    back = ((e + 1) << 52).view(np.float64)                   # 2**(E - 1022)
    return f, back


def triangle_pair_distances(pos_a: np.ndarray, tri_a: np.ndarray, ia: np.ndarray,
                            pos_b: np.ndarray, tri_b: np.ndarray, ib: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The minimum distance of K triangle pairs and a closest pair of points, all at once.

    Args:
        pos_a: (Va, 3) float64 vertex positions of mesh A (finite).
        tri_a: (Ta, 3) int vertex indices of the triangles of A.
        ia: (K,) int, the triangle of A of each pair (index into ``tri_a``).
        pos_b, tri_b, ib: the same for mesh B.

    Returns:
        dist: (K,) float64, the distance between triangle ``tri_a[ia[k]]`` and triangle
            ``tri_b[ib[k]]``, within ``DIST_REL_TOL * L`` of the exact distance of the
            float64 triangles **when they do not intersect** (``L``: the pair's scale,
            `Distances.scale`; docs/clearance.md). For intersecting pairs (distance 0)
            the value is the minimum over the vertex and edge candidates, in general
            positive: meaningless; exclude those pairs with
            `core.triangles.triangle_pairs_intersect` first.
        point_a: (K, 3) float64, a point of triangle A at that distance from point_b;
        point_b: (K, 3) float64, a point of triangle B (both within rounding of the
            coordinates; ``dist`` is computed in local coordinates, not from these).

    Degenerate triangles (collinear or repeated corners) are the segment or point they are.
    Work runs in blocks of `_BLOCK` pairs (bounded memory), each fully vectorized.
    """
    r = pair_distances(pos_a, tri_a, ia, pos_b, tri_b, ib)
    return r.dist, r.point_a, r.point_b
