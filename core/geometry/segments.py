"""Intersection segments of triangle pairs, vectorized, float64. Pure numpy.

For two triangles that meet, the intersection is a segment, a point, or (coplanar
triangles) a convex polygon. `triangle_segments` returns, per pair, the segment's two end
points and its length; a single-point touch has length 0, and a coplanar pair is reported
with length 0 by definition (issue 28: coplanar contacts *touch*, they do not cross).

**Crossing, not touching.** Where the triangles only touch, the length is 0 as well:
a pair counts only when each triangle has a corner strictly behind the other's plane
and one on or in front of it (behind: against the normal of the corners' order, which
is Blender's winding, outward on a closed mesh). A corner lying exactly on a plane thus
counts as in front of it: the rule of the surfaces shrunk inward by an infinitesimal
(symbolic perturbation). Two faces resting on each other along an edge, a segmented
mannequin's parts touching face to face or edge to face, give 0; a curve that runs
exactly along a shared edge of two triangles of one surface is counted once, by the
triangle on the inner side. For pairs without a corner exactly on the other's plane
(posed skin in general) the rule changes nothing.

Method (no loop over pairs):

1. **The plane.** One triangle of the pair gives the plane ("plane triangle", Q), the other
   is clipped by it ("cut triangle", C). Q is the better-shaped of the two: the larger
   ``|n| / (longest edge)²`` (twice the area over the squared longest edge). A sliver or a
   degenerate triangle (zero area) is thus never asked for its plane while the other one
   is proper; its own plane, badly determined, is not used at all.
2. **C ∩ plane(Q).** Coordinates are first translated to Q's first vertex (differences of
   Blender's float32 coordinates are exact in float64, so nothing depends on the distance
   from the origin). The signed distances ``d_i = n_Q · (c_i − q_0)`` of C's corners are
   snapped to 0 when within a proven bound of the float64 rounding of their evaluation
   (`_ERR` × the sum of the magnitudes of the terms): a corner that lies on the plane
   exactly is then on it (touching at a point, along an edge, coplanar). C ∩ plane is the
   convex hull of the corners with ``d = 0`` and the points where an edge with strictly
   opposite signs crosses the plane, ``c_i + (c_j − c_i) d_i / (d_i − d_j)``: for a
   non-coplanar pair at most two points, P and Q. All three ``d = 0``: coplanar, length 0.
3. **Clip [P, Q] by Q's triangle in its plane.** With the in-plane edge normals
   ``m_k = n × e_k`` (pointing inside), ``f_k(x) = m_k · (x − q_k) ≥ 0`` on the inside;
   ``f_k`` is affine along [P, Q], so each edge cuts the parameter interval [0, 1] once.
   The segment is ``P + t (Q − P)`` for t in the clipped interval, its length
   ``(t_hi − t_lo) |Q − P|`` (0 when empty).

Accuracy: every step is a few float64 operations on translated coordinates, so the end
points are within a few ulps × the condition of the pair (how far from coplanar it is);
nothing grows with the distance from the origin. The tests judge it against exact
rational arithmetic (`tests/core/test_segments.py`).
"""
from __future__ import annotations

import numpy as np

__all__ = ["triangle_segments", "pair_segments"]

#: Bound on the float64 rounding of ``n · (c − q0)`` relative to the sum of the magnitudes
#: of its terms (a 3×3 determinant of differences: Shewchuk's orient3d bound is
#: (7 + 56ε)ε; the differences themselves may round when the inputs are not float32,
#: hence the slack).
_ERR = 16.0 * np.finfo(np.float64).eps

#: Pairs per block (keeps the temporaries in cache, bounds memory).
_BLOCK = 1 << 14

#: Corner k's successor on the triangle (edge k runs from corner k to corner _NEXT[k]),
#: and the index pairs of a cross product's terms.
_NEXT = np.array([1, 2, 0])
_I1 = np.array([1, 2, 0])
_I2 = np.array([2, 0, 1])

# Layout: coordinates on the FIRST axis, (3 xyz, ...): a vector of K pairs is a (3, K)
# array, the corners of K triangles (3 xyz, 3 corners, K). Each row is then contiguous,
# and a cross product or a dot product is one numpy call per term over all three axes.
# On (K, 3, 3) arrays indexed along their short last axis the same arithmetic ran 1.5x
# slower on 350k pairs and 1.2x slower on 43; the operations are the same, in the same
# order, so the segments are bit for bit those the tests judged against exact rationals.


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Cross products over the first axis of (3, ...) arrays."""
    return u[_I1] * v[_I2] - u[_I2] * v[_I1]


def _dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Dot products over the first axis of (3, ...) arrays, summed x + y + z in order."""
    w = u * v
    return w[0] + w[1] + w[2]


def _normal_and_bound(t: np.ndarray, rel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(3, K) signed distances (times |n|) of points `rel` (3 xyz, 3, K), given relative
    to t's first corner, from the plane of triangles t (3 xyz, 3 corners, K), snapped to
    0 within the rounding bound of their evaluation; and t's (3, K) normal."""
    e1 = t[:, 1] - t[:, 0]
    e2 = t[:, 2] - t[:, 0]
    n = _cross(e1, e2)
    a1, a2 = np.abs(e1), np.abs(e2)
    nabs = a1[_I1] * a2[_I2] + a1[_I2] * a2[_I1]
    d = _dot(rel, n[:, None])
    bound = _ERR * _dot(np.abs(rel), nabs[:, None])
    d[np.abs(d) <= bound] = 0.0
    return d, n


def _quality2(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|n|² and (longest edge)⁴ of triangles t (3 xyz, 3 corners, K): the shape
    |n| / longest² is compared as |n_a|² L_b⁴ against |n_b|² L_a⁴ (no division, no
    square root)."""
    e = t[:, _NEXT] - t                                        # (3 xyz, 3 edges, K)
    n = _cross(e[:, 0], -e[:, 2])
    sq = _dot(e, e)
    sq = np.maximum(np.maximum(sq[0], sq[1]), sq[2])
    return _dot(n, n), sq * sq


def _block(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`triangle_segments` of (K, 3, 3) float64 corners a, b (module docstring, Method)."""
    A = np.ascontiguousarray(a.transpose(2, 1, 0))             # (3 xyz, 3 corners, K)
    B = np.ascontiguousarray(b.transpose(2, 1, 0))
    K = A.shape[2]
    na2, la4 = _quality2(A)
    nb2, lb4 = _quality2(B)
    swap = na2 * lb4 > nb2 * la4                               # the plane triangle: the
    plane = np.where(swap, A, B)                               # better shaped
    cut = np.where(swap, B, A)
    o = plane[:, 0].copy()                                     # translate: nothing
    pl = plane - o[:, None]                                    # depends on |o|
    ct = cut - o[:, None]
    d, n = _normal_and_bound(pl, ct)                           # cut corners vs plane
    dp, _ = _normal_and_bound(ct, pl - ct[:, 0:1])             # plane corners vs cut
    # Crossing, not touching: each triangle has a corner strictly behind the other's plane
    # and one on or in front of it (a corner on a plane counts as in front: the surfaces
    # shrunk inward by an infinitesimal; see the module docstring).
    crosses = (d < 0).any(0) & (d >= 0).any(0) & (dp < 0).any(0) & (dp >= 0).any(0)
    coplanar = ~(d != 0).any(0)
    # Candidates: the three corners on the plane, the three edges crossing it.
    dn = d[_NEXT]
    cross = d * dn < 0
    t = np.divide(d, d - dn, out=np.zeros_like(d), where=cross)
    cand = np.concatenate([ct, ct + (ct[:, _NEXT] - ct) * t], axis=1)    # (3, 6, K)
    ok = np.concatenate([d == 0, cross], axis=0)
    ok &= ~coplanar
    has = ok.any(0)
    first = np.argmax(ok, axis=0)
    last = 5 - np.argmax(ok[::-1], axis=0)
    cols = np.arange(K)
    flat = cand.reshape(3, 6 * K)
    P = np.take(flat, first * K + cols, axis=1)
    Q = np.take(flat, last * K + cols, axis=1)
    PQ = Q - P
    # Clip [P, Q] by the plane triangle's three edges, in its plane: f_k affine along it.
    m = _cross(n[:, None], pl[:, _NEXT] - pl)                  # (3, 3 edges, K) inward
    fp = _dot(P[:, None] - pl, m)
    df = _dot(PQ[:, None], m)
    tk = np.divide(-fp, df, out=np.zeros_like(fp), where=df != 0)
    up = np.where(df > 0, tk, 0.0)
    lo = np.maximum(np.maximum(np.maximum(up[0], up[1]), up[2]), 0.0)
    down = np.where(df < 0, tk, 1.0)
    hi = np.minimum(np.minimum(np.minimum(down[0], down[1]), down[2]), 1.0)
    outside = ((df == 0) & (fp < 0)).any(0)
    meet = has & ~outside & (hi >= lo)
    lo = np.where(meet, lo, 0.0)
    hi = np.where(meet, hi, 0.0)
    p0 = P + PQ * lo + o
    p1 = P + PQ * hi + o
    length = (hi - lo) * np.sqrt(_dot(PQ, PQ))
    # Coplanar pairs, and pairs that do not meet (in float64): a point to show, length 0.
    mid = (A[:, 0] + A[:, 1] + A[:, 2] + B[:, 0] + B[:, 1] + B[:, 2]) / 6.0
    miss = ~meet
    p0[:, miss] = mid[:, miss]
    p1[:, miss] = mid[:, miss]
    return p0.T, p1.T, np.where(meet & crosses, length, 0.0)


def triangle_segments(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The intersection segments of triangle pairs.

    Args:
        a, b: (K, 3, 3) float corners of the pairs' triangles (world space).

    Returns:
        p0, p1: (K, 3) float64 end points of each pair's segment (equal for a single-point
            touch; for a coplanar pair, or a pair that does not meet in float64, the
            midpoint of the two centroids: a point to show, not a segment);
        length: (K,) float64 segment lengths (0 for coplanar, single-point and no contact).
    """
    a = np.asarray(a, dtype=np.float64).reshape(-1, 3, 3)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 3, 3)
    if a.shape != b.shape:
        raise ValueError("a and b must both be (K, 3, 3)")
    K = a.shape[0]
    p0, p1, ln = np.empty((K, 3)), np.empty((K, 3)), np.empty(K)
    for s in range(0, K, _BLOCK):
        e = min(K, s + _BLOCK)
        p0[s:e], p1[s:e], ln[s:e] = _block(a[s:e], b[s:e])
    return p0, p1, ln


def pair_segments(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray,
                  tri_b: np.ndarray, pairs: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`triangle_segments` of triangle pairs ``pairs`` (K, 2) of two meshes (positions
    (V, 3), triangles (T, 3)); the same mesh twice for self pairs."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return triangle_segments(pos_a[tri_a[pairs[:, 0]]], pos_b[tri_b[pairs[:, 1]]])
