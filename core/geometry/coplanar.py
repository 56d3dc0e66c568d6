"""A sound filter before the continuous kernel (`ccd`): four points that never become
coplanar during a linear motion cannot touch as vertex-face or edge-edge. Pure numpy.

The four points of a query (rows ``v, f0, f1, f2`` or ``ea0, ea1, eb0, eb1``) are
coplanar at t iff the triple product ``f(t) = a(t) . (b(t) x c(t))`` vanishes, with the
three edges ``a, b, c`` from the first row (``v - f0, f1 - f0, f2 - f0``, or ``ea1 - ea0,
eb0 - ea0, eb1 - ea0``), each linear in t. The triple product is trilinear, so in the
cubic Bernstein basis its coefficients are averages of the triple products of the ends:
``B0 = T(a0, b0, c0)``, ``B1 = (T(a1, b0, c0) + T(a0, b1, c0) + T(a0, b0, c1)) / 3``,
``B2 = (T(a1, b1, c0) + T(a1, b0, c1) + T(a0, b1, c1)) / 3``, ``B3 = T(a1, b1, c1)``;
on [0, 1], f lies in their convex hull, so four coefficients of one strict sign prove
f never vanishes (Tang, Manocha & Tong's Bernstein sign classification, 2014, as a
filter only). A coefficient counts as signed only beyond a bound of its float64
rounding error (docs/ccd.md, "The coplanarity filters").
"""
from __future__ import annotations

import numpy as np

__all__ = ["never_coplanar", "never_coplanar_rows", "one_side"]

#: The rounding bound of one computed triple product ``a . (b x c)``, relative to
#: ``|a|_1 |b|_1 |c|_1`` (which bounds the sum of its six terms' magnitudes): the edges
#: (1 rounding each, relative to themselves), a product in the cross product (1) and its
#: difference (1), a product in the dot (1) and its two sums (2): at most 8 roundings on
#: each term, and the averages of B1, B2 add 3; 16 u covers them.
_ERR_REL: float = 16.0 * 2.0 ** -53

#: Below the smallest normal, relative bounds do not hold: an absolute floor.
_ERR_ABS: float = 2.0 ** -1000


def _edges(x, vertex_face: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three edges (a, b, c) from the 4 rows `x` (each (3, N) component-major), each
    (3, N)."""
    if vertex_face:
        return x[0] - x[1], x[2] - x[1], x[3] - x[1]
    return x[1] - x[0], x[2] - x[0], x[3] - x[0]


def _cross(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.stack([p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2],
                     p[0] * q[1] - p[1] * q[0]])


def _dot(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


def _norm1(p: np.ndarray) -> np.ndarray:
    a = np.abs(p)
    return a[0] + a[1] + a[2]


def never_coplanar(x0: np.ndarray, x1: np.ndarray, vertex_face: bool) -> np.ndarray:
    """(N,) bool: True where the four points of each query, moving linearly from ``x0``
    to ``x1`` ((N, 4, 3) float64), are never coplanar for t in [0, 1], proven despite
    rounding; False where they may be (then only the kernel decides). The edges are
    differences of the given positions, each rounded once relative to itself (no
    translation first, whose rounding would be relative to the query's extent)."""
    return never_coplanar_rows(x0.transpose(1, 2, 0), x1.transpose(1, 2, 0), vertex_face)


def never_coplanar_rows(r0, r1, vertex_face: bool) -> np.ndarray:
    """`never_coplanar` of queries given component-major: ``r0``, ``r1`` the 4 rows at
    t = 0 and t = 1, each a (3, N) array (or (4, 3, N))."""
    a = _edges(r0, vertex_face), _edges(r1, vertex_face)       # a[end] = (a, b, c)
    bc = {(j, k): _cross(a[j][1], a[k][2]) for j in (0, 1) for k in (0, 1)}
    na = [_norm1(a[e][0]) for e in (0, 1)]
    nb = [_norm1(a[e][1]) for e in (0, 1)]
    nc = [_norm1(a[e][2]) for e in (0, 1)]
    groups = (((0, 0, 0),), ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
              ((1, 1, 0), (1, 0, 1), (0, 1, 1)), ((1, 1, 1),))
    pos = np.ones(na[0].shape[0], bool)
    neg = np.ones(na[0].shape[0], bool)
    for group in groups:
        val = _dot(a[group[0][0]][0], bc[group[0][1:]])
        err = na[group[0][0]] * nb[group[0][1]] * nc[group[0][2]]
        for i, j, k in group[1:]:
            val = val + _dot(a[i][0], bc[(j, k)])
            err = err + na[i] * nb[j] * nc[k]
        err = err * _ERR_REL + _ERR_ABS
        # A group's sum has the sign of its average (B1, B2 are sums over 3).
        pos &= val > err
        neg &= val < -err
    return pos | neg


def one_side(plane0: np.ndarray, plane1: np.ndarray, points0: np.ndarray,
             points1: np.ndarray) -> np.ndarray:
    """(K,) bool: True where the three points of each query stay strictly on one side of
    the plane of its triangle for all t in [0, 1], proven despite rounding: then no point
    of the points' triangle ever meets the plane, and the two triangles cannot touch
    (their contact point would lie in both). Each point's signed distance, scaled, is the
    vertex-face triple product of `never_coplanar`; the test asks one sign of all twelve
    Bernstein coefficients of the three. ``plane0``, ``plane1``: the triangle's corners
    (3 axes, 3 corners, K) at t = 0 and 1; ``points0``, ``points1`` the same for the
    points."""
    b = [p[:, 1] - p[:, 0] for p in (plane0, plane1)]          # (3, K) per end
    c = [p[:, 2] - p[:, 0] for p in (plane0, plane1)]
    n = {(j, k): _cross(b[j], c[k]) for j in (0, 1) for k in (0, 1)}
    nbc = {(j, k): _norm1(b[j]) * _norm1(c[k]) for j in (0, 1) for k in (0, 1)}
    groups = (((0, 0, 0),), ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
              ((1, 1, 0), (1, 0, 1), (0, 1, 1)), ((1, 1, 1),))
    K = plane0.shape[-1]
    pos = np.ones(K, bool)
    neg = np.ones(K, bool)
    for v in range(3):
        d = [pts[:, v] - p[:, 0] for pts, p in ((points0, plane0), (points1, plane1))]
        nd = [_norm1(x) for x in d]
        for group in groups:
            i, j, k = group[0]
            val = _dot(d[i], n[(j, k)])
            err = nd[i] * nbc[(j, k)]
            for i, j, k in group[1:]:
                val = val + _dot(d[i], n[(j, k)])
                err = err + nd[i] * nbc[(j, k)]
            err = err * _ERR_REL + _ERR_ABS
            pos &= val > err
            neg &= val < -err
    return pos | neg
