"""Cheap lower and upper bounds of the distance between triangle pairs, or between pairs of
faces given by up to four corners, vectorized, float64. Pure numpy.

The clearance stage (`core.query.near_pairs`, issue 42) must decide, for every candidate pair,
whether it lies within ``d``, but needs the exact distance of only a few: the closest pair
of each near contact (and, with ``scan --near-pairs``, of each listed polygon pair). A
garment over a body has a hundred thousand triangle pairs within ``d`` a frame; these
bounds decide about nine in ten of them for a fraction of the exact kernel's cost
(`core.geometry.distance`; measured in docs/clearance.md, "Bounds before distances"):

* **upper**: the smallest of the 9 corner–corner distances. Corners are points of the
  triangles, so the distance is at most this; its two corners are a pair of points of
  the triangles that far apart.
* **lower**: the larger of two separating gaps. For any direction ``v``,
  ``(min_j v·b_j - max_i v·a_i) / |v|`` is at most the distance of the triangles (the
  corners' extreme projections are the triangles', and projection onto a unit vector
  shortens every segment); taken along the centroids' direction and along the closest
  corners' direction, clamped at 0. A positive lower bound proves the pair disjoint.
  `plane_lower` takes the same gap along the two triangles' normals: tighter for
  near-parallel layers (a garment), and worth its cost where a bound is to be settled.
  Any direction gives a valid bound, so a sliver's badly rounded normal costs tightness,
  never soundness.

Faces: the corner tables (``tri_a``, ``tri_b``) may have 4 columns instead of 3, a
quad's corners (a triangle's in a 4-column table repeats one). The bounds then hold for
the convex hulls of the corners, so for every pair of the two faces' triangles, however
the quads are split: the upper bound is the distance of two corners (points of the
faces' triangles), the lower bound a gap of the corners' projections (the hulls'
extremes). docs/clearance.md, "Faces first".

Rounding (docs/clearance.md, "Bounds before distances"): the corners are used as given.
A corner difference is one rounded subtraction (relative error at most u = 2⁻⁵³), so a
corner distance is within a few u of itself, relatively: `UPPER_REL_TOL` times it is
added to the upper bound, which then holds for the float64 triangles and decides "within
d" soundly whatever the distance from the origin. A gap's projections are short sums
of products of a direction's coordinates and the corners', at most ``L`` (the largest
absolute coordinate of either mesh): each gap is within a few tens of ulps of ``L``, and
`BOUND_REL_TOL` ``* L`` (about ten thousand times that; a nanometre 1 km from the
origin) is taken off the lower bound.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["BOUND_REL_TOL", "PairBounds", "UPPER_REL_TOL", "corner_points", "pair_bounds",
           "plane_lower"]

#: Taken off the lower bound, relative to the meshes' scale ``L``: a gap's rounding is a
#: few tens of ulps of ``L`` (module docstring).
BOUND_REL_TOL: float = 1e-12

#: Added to the upper bound, relative to itself: a corner distance's rounding is a few
#: ulps of that distance (module docstring).
UPPER_REL_TOL: float = 1e-12

#: Pairs per block: the block's (3, 3, n) arrays stay in cache. 4096 was best while each
#: block also translated its corners (2048, 8192, 16384 slower); without that, 8192
#: (the whole clearance frame on the shirt 1.07x faster than 4096, alternating).
_BLOCK: int = 8192


class PairBounds(NamedTuple):
    """`pair_bounds`' answer for K pairs.

    lower: (K,) float64 a lower bound of the distance (>= 0); > 0 proves the pair
        disjoint.
    upper: (K,) float64 an upper bound of the distance: the distance of the two corners
        `corner` names plus its rounding allowance.
    corner: (K,) uint8 ``3 i + j``: corner i of the pair's triangle of A and corner j of
        its triangle of B are that far apart (`corner_points` makes them; nothing is made
        per pair until asked: most rows are never read).
    scale: float ``L``, the largest absolute coordinate of the two meshes (the lower
        bounds' rounding is relative to it).
    """

    lower: np.ndarray
    upper: np.ndarray
    corner: np.ndarray
    scale: float


def corner_points(pos_a: np.ndarray, tri_a: np.ndarray, ia: np.ndarray, pos_b: np.ndarray,
                  tri_b: np.ndarray, ib: np.ndarray, corner: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(K, 3), (K, 3) float64 the corners that `corner` (K,) int (`PairBounds.corner`)
    names for the pairs (ia[k] of A, ib[k] of B): the positions as given, bit for bit."""
    corner = np.asarray(corner, np.intp)
    tri_a = np.asarray(tri_a, np.intp)
    tri_b = np.asarray(tri_b, np.intp)
    kb = tri_b.shape[1]
    out = []
    for pos, tri, idx, c in ((pos_a, tri_a, ia, corner // kb), (pos_b, tri_b, ib, corner % kb)):
        v = tri.ravel()[np.asarray(idx, np.intp) * tri.shape[1] + c]
        out.append(np.asarray(pos, np.float64)[v])
    return out[0], out[1]


def _rows(pos: np.ndarray, tri: np.ndarray, many: bool):
    """A function giving the corners of faces `idx` (m,) as a contiguous (3 xyz,
    k corners, m) float64 array (`tri` (F, k)): from per-face rows of 3 k coordinates
    when the pairs are many per face (two contiguous gathers a pair), else from the
    pairs' own vertex rows (nothing of the whole mesh copied)."""
    k = tri.shape[1]
    if many:
        rows = np.ascontiguousarray(pos[tri].transpose(2, 1, 0).reshape(3 * k, -1))

        def get(idx: np.ndarray) -> np.ndarray:
            return np.take(rows, idx, axis=1).reshape(3, k, -1)
    else:
        def get(idx: np.ndarray) -> np.ndarray:
            g = np.take(pos, np.take(tri, idx, axis=0), axis=0)   # (m, corner, xyz)
            return np.ascontiguousarray(g.transpose(2, 1, 0))
    return get


def _norm(v: np.ndarray) -> np.ndarray:
    """(n,) |v| of v (3, n)."""
    return np.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])


def _projections(v: np.ndarray, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(k corners, n) each: the corners A, B (3 xyz, k corners, n) projected on v (3, n)."""
    pa = A[0] * v[0]
    pa += A[1] * v[1]
    pa += A[2] * v[2]
    pb = B[0] * v[0]
    pb += B[1] * v[1]
    pb += B[2] * v[2]
    return pa, pb


def _gap(v: np.ndarray, A: np.ndarray, B: np.ndarray, norm: np.ndarray | None = None
         ) -> np.ndarray:
    """(n,) the separating gap of corners A, B (3 xyz, k corners, n) along v (3, n):
    min v·b - max v·a over |v| (NaN for v = 0, which proves nothing). `norm`: |v| when
    the caller has it (`_norm`, the same bits)."""
    pa, pb = _projections(v, A, B)
    g = pb.min(axis=0)
    g -= pa.max(axis=0)
    g /= _norm(v) if norm is None else norm
    return g


def _gap_either(v: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(n,) the larger of the gaps along v and along -v (`_gap(v, A, B)` and
    `_gap(v, B, A)`, bit for bit: dividing by |v| > 0 is monotone, so the max commutes
    with it), from one projection of each triangle's corners."""
    pa, pb = _projections(v, A, B)
    g = pb.min(axis=0)
    g -= pa.max(axis=0)
    h = pa.min(axis=0)
    h -= pb.max(axis=0)
    np.fmax(g, h, out=g)
    g /= _norm(v)
    return g


def _blocks(pos_a, tri_a, ia, pos_b, tri_b, ib):
    """The pairs (ia[k] of A, ib[k] of B) a block at a time: K, ``L`` (the largest
    absolute coordinate of the two meshes, float) and an iterator of (start, stop, A, B)
    with A, B (3 xyz, k corners, n) float64 the block's corners (k: each table's columns,
    3 or 4)."""
    pos_a = np.asarray(pos_a, np.float64)
    pos_b = np.asarray(pos_b, np.float64)
    tri_a = np.asarray(tri_a, np.intp)
    tri_b = np.asarray(tri_b, np.intp)
    if not (3 <= tri_a.shape[1] <= 4 and 3 <= tri_b.shape[1] <= 4):
        raise ValueError("corner tables have 3 or 4 columns")
    ia = np.asarray(ia, np.intp).ravel()
    ib = np.asarray(ib, np.intp).ravel()
    if ia.shape != ib.shape:
        raise ValueError("ia and ib must be (K,) alike")
    k = ia.size
    many = k >= tri_a.shape[0] + tri_b.shape[0]
    get_a, get_b = _rows(pos_a, tri_a, many), _rows(pos_b, tri_b, many)
    L = max((float(np.abs(p).max()) for p in (pos_a, pos_b) if p.size), default=0.0)

    def blocks():
        for s in range(0, k, _BLOCK):
            e = min(s + _BLOCK, k)
            yield s, e, get_a(ia[s:e]), get_b(ib[s:e])         # (3 xyz, 3 corners, n)
    return k, L, blocks()


def pair_bounds(pos_a: np.ndarray, tri_a: np.ndarray, ia: np.ndarray, pos_b: np.ndarray,
                tri_b: np.ndarray, ib: np.ndarray) -> PairBounds:
    """Lower and upper bounds of the distance of the triangle pairs (ia[k] of A, ib[k] of B),
    or of the face pairs of 4-corner tables (module docstring, "Faces").

    Args:
        pos_a: (Va, 3) float64 positions of A (finite); tri_a: (Ta, k) int triangles of A
            (k = 3), or faces' corners (k = 4).
        pos_b, tri_b: the same for B. ia, ib: (K,) int the pairs.
    Returns:
        `PairBounds` (lower, upper, corner, scale), K rows each, with
        ``lower <= exact distance <= upper`` for every pair (module docstring); `corner`
        is ``kb i + j`` (kb: B's columns).
    """
    k, L, blocks = _blocks(pos_a, tri_a, ia, pos_b, tri_b, ib)
    ka, kb = np.shape(tri_a)[1], np.shape(tri_b)[1]
    lower, upper = np.empty(k), np.empty(k)
    corner = np.empty(k, np.uint8)
    tol = BOUND_REL_TOL * L
    rows = np.arange(ka * kb, dtype=np.int64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        for s, e, A, B in blocks:
            n = e - s
            # The squared corner distances, row kb i + j (corner i of A, j of B), row by
            # row on contiguous arrays (broadcast (3, 3, 1, n) - (3, 1, 3, n) measured
            # three times slower).
            d2 = np.empty((ka * kb, n))
            tmp = np.empty(n)
            for i in range(ka):
                for j in range(kb):
                    r = d2[kb * i + j]
                    np.subtract(A[0, i], B[0, j], out=r)
                    r *= r
                    for x in (1, 2):
                        np.subtract(A[x, i], B[x, j], out=tmp)
                        tmp *= tmp
                        r += tmp
            # The winner's row packed into the low bits of the (nonnegative) float bits,
            # so that one min finds value and row (an argmin over rows is much slower); a
            # row within 16 ulps of the minimum may win: its distance is as good, and the
            # bound is computed from its own corners. At most 16 rows: 4 bits.
            bits = d2.view(np.int64)
            bits &= ~np.int64(15)
            bits |= rows
            w = (bits.min(axis=0) & 15).astype(np.intp)
            col = np.arange(n)
            ca = np.take(A.reshape(3, ka * n), (w // kb) * n + col, axis=1)   # (3, n)
            cb = np.take(B.reshape(3, kb * n), (w % kb) * n + col, axis=1)
            v = cb - ca
            up = _norm(v)
            g = _gap(v, A, B, norm=up)
            if ka == kb:                       # the centroids' direction, times k
                cen = B.sum(axis=1)
                cen -= A.sum(axis=1)
            else:
                cen = B.mean(axis=1) - A.mean(axis=1)
            np.fmax(g, _gap(cen, A, B), out=g)                 # NaN (v = 0) loses to a gap
            g -= tol
            np.fmax(g, 0.0, out=g)
            up *= 1.0 + UPPER_REL_TOL
            lower[s:e], upper[s:e], corner[s:e] = g, up, w
    return PairBounds(lower, upper, corner, L)


def plane_lower(pos_a: np.ndarray, tri_a: np.ndarray, ia: np.ndarray, pos_b: np.ndarray,
                tri_b: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """(K,) float64 a lower bound of the distance of the pairs (ia[k] of A, ib[k] of B):
    the larger separating gap along the two triangles' normals (module docstring), less
    its rounding allowance, clamped at 0. Arguments as `pair_bounds`; a 4-corner face's
    direction is the cross product of its diagonals (a triangle's normal when a corner
    repeats; any direction bounds soundly)."""
    k, L, blocks = _blocks(pos_a, tri_a, ia, pos_b, tri_b, ib)
    lower = np.empty(k)
    with np.errstate(invalid="ignore", divide="ignore"):
        for s, e, A, B in blocks:
            n = e - s
            g = np.zeros(n)
            for T in (A, B):
                if T.shape[1] == 4:
                    e1 = T[:, 2] - T[:, 0]
                    e2 = T[:, 3] - T[:, 1]
                else:
                    e1 = T[:, 1] - T[:, 0]
                    e2 = T[:, 2] - T[:, 0]
                nrm = np.stack([e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                                e1[0] * e2[1] - e1[1] * e2[0]])
                # Either sign: the gap of A below B along -n is B's above A along n.
                np.fmax(g, _gap_either(nrm, A, B), out=g)
            g -= BOUND_REL_TOL * L
            np.fmax(g, 0.0, out=g)
            lower[s:e] = g
    return lower
