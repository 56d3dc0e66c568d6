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
rounding error (docs/ccd.md, "The coplanarity filter").
"""
from __future__ import annotations

import numpy as np

__all__ = ["never_coplanar"]

#: The rounding bound of one computed coefficient, relative to the same sums taken over
#: absolute values: the edges (1 rounding each, relative to themselves), a product in
#: the cross product (1) and its difference (1), a product in the dot (1) and its two
#: sums (2), the average's sums and division (3): at most 11 roundings on each term,
#: 16 u covers them.
_ERR_REL: float = 16.0 * 2.0 ** -53

#: Below the smallest normal, relative bounds do not hold: an absolute floor.
_ERR_ABS: float = 2.0 ** -1000


def _edges(x: np.ndarray, vertex_face: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three edges (a, b, c) from row 0, each (N, 3)."""
    if vertex_face:
        return x[:, 0] - x[:, 1], x[:, 2] - x[:, 1], x[:, 3] - x[:, 1]
    return x[:, 1] - x[:, 0], x[:, 2] - x[:, 0], x[:, 3] - x[:, 0]


def _cross(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.stack([p[:, 1] * q[:, 2] - p[:, 2] * q[:, 1],
                     p[:, 2] * q[:, 0] - p[:, 0] * q[:, 2],
                     p[:, 0] * q[:, 1] - p[:, 1] * q[:, 0]], axis=1)


def _abs_cross(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return np.stack([p[:, 1] * q[:, 2] + p[:, 2] * q[:, 1],
                     p[:, 2] * q[:, 0] + p[:, 0] * q[:, 2],
                     p[:, 0] * q[:, 1] + p[:, 1] * q[:, 0]], axis=1)


def _dot(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    return p[:, 0] * q[:, 0] + p[:, 1] * q[:, 1] + p[:, 2] * q[:, 2]


def never_coplanar(x0: np.ndarray, x1: np.ndarray, vertex_face: bool) -> np.ndarray:
    """(N,) bool: True where the four points of each query, moving linearly from ``x0``
    to ``x1`` ((N, 4, 3) float64), are never coplanar for t in [0, 1], proven despite
    rounding; False where they may be (then only the kernel decides). The edges are
    differences of the given positions, each rounded once relative to itself (no
    translation first, whose rounding would be relative to the query's extent)."""
    a0, b0, c0 = _edges(x0, vertex_face)
    a1, b1, c1 = _edges(x1, vertex_face)
    bc = {(0, 0): _cross(b0, c0), (1, 0): _cross(b1, c0), (0, 1): _cross(b0, c1),
          (1, 1): _cross(b1, c1)}
    A = [np.abs(a0), np.abs(a1)]
    Bv, Cv = [np.abs(b0), np.abs(b1)], [np.abs(c0), np.abs(c1)]
    terms = ((0, 0, 0),), ((1, 0, 0), (0, 1, 0), (0, 0, 1)), \
        ((1, 1, 0), (1, 0, 1), (0, 1, 1)), ((1, 1, 1),)
    pos = np.ones(len(x0), bool)
    neg = np.ones(len(x0), bool)
    a = (a0, a1)
    for group in terms:
        val = sum(_dot(a[i], bc[(j, k)]) for i, j, k in group) / len(group)
        err = _ERR_REL * sum(_dot(A[i], _abs_cross(Bv[j], Cv[k])) for i, j, k in group) \
            / len(group) + _ERR_ABS
        pos &= val > err
        neg &= val < -err
    return pos | neg
