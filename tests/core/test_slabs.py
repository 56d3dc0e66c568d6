"""`core.aabb_tree.slabs`: float32 bounds of the vertices' projections on the cube
diagonals, and the pair test that proves triangles apart before the exact test
(docs/self_collision.md, "Diagonal slabs")."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from skin_collide.core import triangles
from skin_collide.core.aabb_tree import query as q
from skin_collide.core.aabb_tree import slabs

DIAGONALS = [(1, 1, 1), (1, 1, -1), (1, -1, 1), (-1, 1, 1)]


@pytest.mark.parametrize("scale, offset", [(1.0, 0.0), (1e-3, 0.0), (1.0, 1e3), (10.0, -5e4),
                                           (1e-40, 0.0), (1e-300, 0.0), (1e30, 0.0)])
def test_vertex_bounds_hold_in_exact_arithmetic(scale, offset):
    """lo_k <= the exact projection <= hi_k, checked with rationals, for ordinary,
    tiny, subnormal-range, huge and far-from-origin coordinates, zeros and signed
    zeros included."""
    rng = np.random.default_rng(3)
    pos = rng.standard_normal((400, 3)) * scale + offset
    pos[:5] = 0.0
    pos[5:10, 0] = -0.0
    pos[10:15, 1:] = 0.0
    rows = slabs.vertex_slabs(np.ascontiguousarray(pos.T))
    assert rows.dtype == np.float32 and rows.shape == (400, 8)
    for i in range(pos.shape[0]):
        p = [Fraction(float(v)) for v in pos[i]]
        for k, d in enumerate(DIAGONALS):
            exact = sum(c * v for c, v in zip(d, p))
            assert Fraction(float(rows[i, k])) <= exact <= -Fraction(float(rows[i, 4 + k]))


def test_no_bounds_where_float32_cannot_hold_them():
    """Coordinates near the float32 range, infinities and NaN give no bounds (None): a
    bound rounded to an infinity of the wrong sign, or a NaN, would prove pairs apart."""
    for bad in (1e38, -3e37, np.inf, np.nan):
        assert slabs.vertex_slabs(np.array([[bad], [0.0], [0.0]])) is None
    coords = np.array([[0.0, 1.0, 0.0, 1e38], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    c = np.array([[0], [1], [2]])
    assert not slabs.slabs_apart(coords, c, c + 1).any()     # no proof, not "apart"


def _close_pairs(rng, n, spread):
    a0 = rng.standard_normal((n, 3))
    b0 = a0 + rng.standard_normal((n, 3)) * spread
    pts = np.concatenate([a0, a0 + rng.standard_normal((n, 3)) * 0.3,
                          a0 + rng.standard_normal((n, 3)) * 0.3,
                          b0, b0 + rng.standard_normal((n, 3)) * 0.3,
                          b0 + rng.standard_normal((n, 3)) * 0.3])
    ca = np.arange(3 * n).reshape(3, n)
    return np.ascontiguousarray(pts.T), ca, ca + 3 * n


@pytest.mark.parametrize("offset", [0.0, 2e3])
def test_pairs_proved_apart_never_intersect(offset):
    """On random close triangle pairs (near the origin and far from it) the slabs prove
    a good share apart, and never one the exact test finds intersecting; pairs that
    share a vertex, an edge or touch in a point are never proved apart."""
    rng = np.random.default_rng(8)
    coords, ca, cb = _close_pairs(rng, 60_000, 0.5)
    coords = coords + offset
    apart = slabs.slabs_apart(coords, ca, cb)
    hit = triangles.corner_pairs_intersect(coords, ca, coords, cb)
    assert hit.sum() > 1000 and apart.sum() > 10_000
    assert not (apart & hit).any()
    # Shared vertex / edge, and a vertex of B on a face of A.
    shared_v = cb.copy()
    shared_v[0] = ca[0]
    shared_e = cb.copy()
    shared_e[:2] = ca[:2]
    assert not slabs.slabs_apart(coords, ca, shared_v).any()
    assert not slabs.slabs_apart(coords, ca, shared_e).any()
    x = coords.copy()
    w = rng.dirichlet(np.ones(3), ca.shape[1]).T            # a point inside each A
    x[:, cb[0]] = (x[:, ca] * w).sum(axis=1)
    assert not slabs.slabs_apart(x, ca, cb).any()


def test_few_pairs_take_their_corners_only_and_agree():
    """A handful of pairs (a pose edit) bounds only their corners: the same answer as
    bounding every vertex."""
    rng = np.random.default_rng(2)
    coords, ca, cb = _close_pairs(rng, 5000, 0.8)
    every = slabs.slabs_apart(coords, ca, cb)
    for k in (1, 7, 100):
        assert np.array_equal(slabs.slabs_apart(coords, ca[:, :k], cb[:, :k]), every[:k])


def test_exact_test_counts_what_the_slabs_dismissed():
    """The self query's leaf test: the slabs first, then the float64 test on the rest;
    the answer is the float64 test's on every pair."""
    rng = np.random.default_rng(4)
    V, T = 3000, 20_000
    pos = rng.standard_normal((V, 3))
    tris = rng.integers(0, V, (T, 3)).astype(np.intp)
    ta, tb = rng.integers(0, T, 100_000), rng.integers(0, T, 100_000)
    counts = {}
    got = q.exact_test(pos, tris, ta, tb, counts)
    want = triangles.triangle_pairs_intersect(pos, tris, ta, pos, tris, tb)
    assert np.array_equal(got, want)
    assert 0 < counts["slab_apart"] < ta.size
    assert counts["slab_apart"] <= np.count_nonzero(~want)
