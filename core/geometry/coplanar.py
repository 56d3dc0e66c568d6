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

__all__ = ["bernstein", "first_coplanar", "never_coplanar", "never_coplanar_rows", "one_side"]

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
    B, E = bernstein(r0, r1, vertex_face)
    return ((B > E).all(axis=0)) | ((B < -E).all(axis=0))


#: The four Bernstein coefficients of the triple product as groups of end triple products
#: (index of the end of a, of b, of c): B_m averages those with m ends at t = 1.
_GROUPS = (((0, 0, 0),), ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
           ((1, 1, 0), (1, 0, 1), (0, 1, 1)), ((1, 1, 1),))


def bernstein(r0, r1, vertex_face: bool) -> tuple[np.ndarray, np.ndarray]:
    """The cubic Bernstein coefficients ``B`` (4, N) of each query's triple product
    (module docstring) and a bound ``E`` (4, N) of their rounding errors: the exact
    coefficient lies in ``[B - E, B + E]``. ``r0``, ``r1``: the 4 rows at t = 0 and 1,
    each (3, N) component-major."""
    a = _edges(r0, vertex_face), _edges(r1, vertex_face)       # a[end] = (a, b, c)
    bc = {(j, k): _cross(a[j][1], a[k][2]) for j in (0, 1) for k in (0, 1)}
    na = [_norm1(a[e][0]) for e in (0, 1)]
    nb = [_norm1(a[e][1]) for e in (0, 1)]
    nc = [_norm1(a[e][2]) for e in (0, 1)]
    B, E = [], []
    for group in _GROUPS:
        val = _dot(a[group[0][0]][0], bc[group[0][1:]])
        err = na[group[0][0]] * nb[group[0][1]] * nc[group[0][2]]
        for i, j, k in group[1:]:
            val = val + _dot(a[i][0], bc[(j, k)])
            err = err + na[i] * nb[j] * nc[k]
        n = len(group)
        # The average of a group (its division rounds once more: 1 u of the result).
        B.append(val / n)
        E.append((err * _ERR_REL + _ERR_ABS) / n + (_U * np.abs(val / n) if n > 1 else 0.0))
    return np.array(B), np.array(E)


_U = 2.0 ** -53

#: Pieces per level of `first_coplanar`'s search (two levels: 1/1024 of the step).
_PIECES = 32


def _piece_matrices(n: int) -> np.ndarray:
    """(n, 4, 4): the Bernstein coefficients on [i/n, (i+1)/n] of a cubic are
    ``M[i] @ B`` (de Casteljau splits of the unit vectors; entries are dyadic with at most
    ~15 bits for n = 32, exact in float64, non-negative, each row summing to 1)."""
    out = np.zeros((n, 4, 4))
    for i in range(n):
        a, b = i / n, (i + 1) / n
        for j in range(4):
            e = np.zeros(4)
            e[j] = 1.0
            left = _split(e, b)[0]                  # on [0, b]
            out[i, :, j] = _split(left, a / b)[1] if a > 0 else left   # on [a, b]
    return out


def _split(c: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """de Casteljau: the coefficients on [0, s] and [s, 1] of a cubic given on [0, 1]."""
    p = [c.astype(float)]
    for _ in range(3):
        q = p[-1]
        p.append((1 - s) * q[:-1] + s * q[1:])
    return np.array([x[0] for x in p]), np.array([x[-1] for x in reversed(p)])


_M = _piece_matrices(_PIECES)


def first_coplanar(B: np.ndarray, E: np.ndarray) -> np.ndarray:
    """(N,) a lower bound of the first t in [0, 1] at which each cubic (`bernstein`'s B, E)
    may vanish, to 1/1024 of the step; ``inf`` where it cannot vanish on [0, 1]. The
    interval is cut into 32 pieces, the first whose coefficients are not all strictly of
    one sign (beyond the error bound) into 32 more; the answer is the left end of the
    first such piece of the second level (or the end of the first level's piece when
    none of its pieces may vanish). A contact needs coplanarity, so this is also a lower
    bound of the first contact of the query."""
    N = B.shape[1]
    tau = np.full(N, np.inf)
    # The coefficients on a piece are convex combinations of B: their errors are at most
    # max E plus the rounding of the combination (4 products and 3 sums of values at most
    # max |B|).
    err = E.max(axis=0) + 8 * _U * np.abs(B).max(axis=0)
    sub = np.einsum("pkj,jn->pkn", _M, B)                       # (32, 4, N)
    may = ~(((sub > err).all(axis=1)) | ((sub < -err).all(axis=1)))   # (32, N)
    hit = may.any(axis=0)
    q = np.flatnonzero(hit)
    if not q.size:
        return tau
    i = np.argmax(may[:, q], axis=0)                            # first piece that may vanish
    piece = sub[i, :, q].T                                      # (4, m)
    err2 = err[q] + 8 * _U * np.abs(piece).max(axis=0)
    sub2 = np.einsum("pkj,jn->pkn", _M, piece)
    may2 = ~(((sub2 > err2).all(axis=1)) | ((sub2 < -err2).all(axis=1)))
    j = np.where(may2.any(axis=0), np.argmax(may2, axis=0), _PIECES)
    tau[q] = (i + j / _PIECES) / _PIECES
    return tau


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
