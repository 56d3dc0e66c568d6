"""Diagonal slabs: a float32 test that proves triangle pairs apart before the exact test.

Two triangles whose boxes overlap are mostly apart along some other direction: on the
leaf pairs of a MakeHuman or Cesium Man frame the four cube diagonals ``(1, 1, 1)``,
``(1, 1, -1)``, ``(1, -1, 1)``, ``(-1, 1, 1)`` separate 86-89% of them (the pairs'
projections on one of them are disjoint intervals), more than the exact test's own
first stage. A triangle's projection on a direction is the interval spanned by its three
vertices' projections, so per vertex the four projections are bounded in float32, below
and above (`vertex_slabs`), and a pair is apart when on some diagonal one triangle's
lower bound exceeds the other's upper bound (`slabs_apart`). The rows and the test are
those of the boxes (`boxes`): ``[lo (4), -hi (4)]``, two 16-byte halves, a sum of float32
values whose sign is exact. Bounds and proof: docs/self_collision.md, "Diagonal slabs".
"""
from __future__ import annotations

import numpy as np

from .boxes import boxes_overlap, min_of_three, swap_halves

#: With a = |x| + |y| + |z| (rounded), ``a * _REL + _ABS`` exceeds the rounding error
#: of a projection ``±x ± y ± z`` in float64 (about 2**-52 a) plus half a float32 spacing
#: at any value of magnitude <= a (2**-24 a for normal values, 2**-150 below): a bound
#: moved out by it and rounded to the nearest float32 is still a bound
#: (docs/self_collision.md, "Diagonal slabs").
_REL = 2.0 ** -23
_ABS = 2.0 ** -149
#: Above this magnitude a bound could round to an infinity of the wrong sign: no proof.
_LIMIT = 1e37


def vertex_slabs(rows: np.ndarray) -> np.ndarray | None:
    """(V, 8) float32 ``[lo_0..lo_3, -hi_0..-hi_3]`` per vertex: lo_k <= the exact
    projection of the vertex on diagonal k <= hi_k. rows: (3, V) float64, the x, y, z
    rows of the vertices. None when a coordinate is too large (or not finite) for
    float32 bounds."""
    x, y, z = rows
    a = np.abs(x)
    a += np.abs(y)
    a += np.abs(z)
    if not a.max(initial=0.0) < _LIMIT:
        return None
    a *= _REL
    a += _ABS
    s = x + y
    d = x - y
    p = np.empty((8, x.size))
    np.add(s, z, out=p[0])                         # x + y + z
    np.subtract(s, z, out=p[1])                    # x + y - z
    np.add(d, z, out=p[2])                         # x - y + z
    np.subtract(z, d, out=p[3])                    # -x + y + z
    np.negative(p[:4], out=p[4:])
    p -= a                                         # lo - margin, -(hi + margin)
    out = np.empty((x.size, 8), np.float32)
    out[...] = p.T                                 # rounded to nearest: still bounds
    return out


def slabs_apart(coords: np.ndarray, ca: np.ndarray, cb: np.ndarray) -> np.ndarray:
    """(n,) bool: triangle pairs whose projections on some diagonal are disjoint, so the
    triangles are apart (never true of a pair that shares a point). coords: (3, V)
    float64 vertex rows; ca, cb: (3, n) intp the corners of the pairs' triangles."""
    n = ca.shape[1]
    if not n:
        return np.zeros(0, bool)
    if 6 * n < coords.shape[1]:
        # Few pairs (a pose edit's): the bounds of their corners only.
        slabs = vertex_slabs(np.take(coords, np.concatenate([ca, cb]).ravel(), axis=1))
        ca = np.arange(3 * n).reshape(3, n)
        cb = ca + 3 * n
    else:
        slabs = vertex_slabs(coords)
    if slabs is None:
        return np.zeros(n, bool)
    # A triangle's row is the min of its three vertices' rows (its lows and negated
    # highs); the pair's test is the boxes' test on them.
    a = min_of_three(slabs, ca.ravel())
    b = min_of_three(slabs, cb.ravel())
    return ~boxes_overlap(a, swap_halves(b))
