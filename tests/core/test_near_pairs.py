"""Near pairs of two meshes (`core.query.near_pairs`, issue 42: `scan --clearance`), judged
against brute force over all triangle pairs (every pair's distance, every pair's exact
intersection test) on small procedural meshes: posed tubes crossing each other, a
"garment" (a tube pushed out along its normals, partly pushed in), the same 1 km from the
origin; the box margin at the rounding limit; reuse of trees; chunking. Pure numpy."""
from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from rig_parts import vertex_normals
from test_distance import exact_sq, exact_sqrt

from skin_collide.core import procedural, skinning
from skin_collide.core.aabb_tree import build
from skin_collide.core.geometry.distance import DIST_REL_TOL, pair_distances
from skin_collide.core.query import near_pairs as near
from skin_collide.core.query.near_pairs import candidate_pairs, cross_tree, near_or_intersecting_pairs, near_pairs
from skin_collide.core.triangles import boxes_meet, triangle_pairs_intersect


def posed_tube(rng, rings=7, segments=9):
    rig = procedural.tube_rig(rings=rings, segments=segments)
    pose = procedural.random_pose(rig, rng, max_angle=1.2, scale_range=(0.8, 1.25))
    return skinning.lbs_rig(rig, pose), rig.triangles.astype(np.int64)


def crossing_tubes(seed):
    """Two posed tubes, B moved so that its centre lies near A's: they cross and pass
    close (intersecting and near pairs)."""
    rng = np.random.default_rng(seed)
    pa, ta = posed_tube(rng)
    pb, tb = posed_tube(rng, rings=6, segments=11)
    pb = pb - pb.mean(axis=0) + pa.mean(axis=0) + rng.normal(scale=0.25, size=3)
    return pa, ta, pb, tb


def garment(seed, offset=0.012):
    """A tube and its copy pushed out along the normals by `offset`, except a band pushed
    in (it crosses the tube there)."""
    rng = np.random.default_rng(seed)
    pa, ta = posed_tube(rng, rings=8, segments=10)
    push = np.full(pa.shape[0], offset)
    push[: pa.shape[0] // 6] = -offset
    return pa, ta, pa + vertex_normals(pa, ta) * push[:, None], ta.copy()


def brute(pa, ta, pb, tb):
    """Every pair: (ia, ib, dist, hit), hit as the intersection query decides it: the
    triangles' boxes meet and the exact test says they intersect."""
    ia, ib = np.meshgrid(np.arange(ta.shape[0]), np.arange(tb.shape[0]), indexing="ij")
    ia, ib = ia.ravel(), ib.ravel()
    r = pair_distances(pa, ta, ia, pb, tb, ib)
    ca, cb = pa[ta[ia]], pb[tb[ib]]
    meet = ((ca.min(axis=1) <= cb.max(axis=1)) & (cb.min(axis=1) <= ca.max(axis=1))).all(axis=1)
    hit = meet & triangle_pairs_intersect(pa, ta, ia, pb, tb, ib)
    return ia, ib, r.dist, hit


def size_of(pa, pb):
    both = np.concatenate([pa, pb])
    return float((both.max(axis=0) - both.min(axis=0)).max())


def check(pa, ta, pb, tb, d):
    """near_pairs and near_or_intersecting_pairs against brute force."""
    size = size_of(pa, pb)
    eps = 1e-9 * size
    ia, ib, dist, hit = brute(pa, ta, pb, tb)
    key = ia * tb.shape[0] + ib
    # Near, not intersecting: sure (within d - eps), allowed (within d + eps).
    sure = set(key[~hit & (dist <= d - eps)].tolist())
    allowed = set(key[~hit & (dist <= d + eps)].tolist())
    pairs, got = near_pairs(pa, ta, pb, tb, d)
    assert pairs.dtype == np.int64 and pairs.shape[1] == 2 and got.shape == (pairs.shape[0],)
    assert (np.lexsort((pairs[:, 1], pairs[:, 0])) == np.arange(pairs.shape[0])).all()
    found = pairs[:, 0] * tb.shape[0] + pairs[:, 1]
    assert np.unique(found).size == found.size
    assert sure <= set(found.tolist()) <= allowed
    ref = dict(zip(key.tolist(), dist.tolist()))
    assert all(abs(g - ref[k]) <= eps for k, g in zip(found.tolist(), got.tolist()))
    # Bounds first (exact=False): the same pairs; exact rows as above, the others carry
    # an upper bound at most d (two corners that far apart), a lower bound below the
    # distance, and `settle` makes them exact.
    lazy, up, qa, qb, low, known = near_pairs(pa, ta, pb, tb, d, points=True, exact=False)
    assert (lazy == pairs).all()
    assert (up[known] == got[known]).all() and (low[known] == got[known]).all()
    assert (up <= d + eps).all() and (low <= got + eps).all() and (got <= up + eps).all()
    assert np.allclose(np.linalg.norm(qa - qb, axis=1), up, rtol=0, atol=eps)
    todo = np.flatnonzero(~known)
    corner_a = np.abs(pa[ta[lazy[todo, 0]]] - qa[todo, None]).max(axis=2).min(axis=1)
    corner_b = np.abs(pb[tb[lazy[todo, 1]]] - qb[todo, None]).max(axis=2).min(axis=1)
    ulps = 4e-16 * (1 + np.abs(pa).max() + np.abs(pb).max())
    assert corner_a.max(initial=0) <= ulps and corner_b.max(initial=0) <= ulps
    exact_d, _, _ = near.settle(pa, ta, pb, tb, lazy[todo])
    assert (exact_d == got[todo]).all()
    # With the intersecting pairs: exactly brute force's hits, at distance 0.
    r = near_or_intersecting_pairs(pa, ta, pb, tb, d)
    found2 = r.pairs[:, 0] * tb.shape[0] + r.pairs[:, 1]
    assert set(found2[r.intersecting].tolist()) == set(key[hit].tolist())
    assert (r.dist[r.intersecting] == 0).all()
    assert (found2[~r.intersecting] == found).all() and (r.dist[~r.intersecting] == got).all()
    # A sample of the distances against exact rationals.
    for k in range(0, found.size, max(1, found.size // 25)):
        a, b = pa[ta[pairs[k, 0]]], pb[tb[pairs[k, 1]]]
        assert abs(got[k] - exact_sqrt(exact_sq(a, b))) <= eps
    return len(sure), int(hit.sum())


@pytest.mark.parametrize("seed", [0, 2, 4])
@pytest.mark.parametrize("rel_d", [0.0, 0.01, 0.05])
def test_crossing_tubes(seed, rel_d):
    pa, ta, pb, tb = crossing_tubes(seed)
    n_near, n_hit = check(pa, ta, pb, tb, rel_d * size_of(pa, pb))
    assert n_hit > 0 and (rel_d == 0 or n_near > 0)


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("rel_d", [0.003, 0.01, 0.03])
def test_garment(seed, rel_d):
    """The thin gap: most pairs near each other are near pairs (and the band pushed in
    gives intersecting ones)."""
    pa, ta, pb, tb = garment(seed)
    n_near, n_hit = check(pa, ta, pb, tb, rel_d * size_of(pa, pb))
    assert n_near > 50 and n_hit > 0


@pytest.mark.parametrize("make,seed", [(crossing_tubes, 5), (garment, 6)])
def test_one_kilometre_from_the_origin(make, seed):
    pa, ta, pb, tb = make(seed)
    off = np.array([1000.0, -1000.0, 500.0])
    d = 0.01 * size_of(pa, pb)
    n_near, _ = check(pa + off, ta, pb + off, tb, d)
    assert n_near > 0


def test_the_box_margin_at_the_rounding_limit():
    """Two parallel faces whose gap is the largest float64 step within d of A's side:
    ``hi_A + d`` rounds either way, and the pair is within d; it must never be lost."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        x0 = float(rng.uniform(-2000, 2000))
        d = float(10.0 ** rng.uniform(-6, 0))
        # The largest float64 x1 with x1 - x0 <= d exactly.
        s = F(x0) + F(d)
        x1 = float(s)
        if F(x1) > s:
            x1 = float(np.nextafter(x1, -np.inf))
        assert F(x1) - F(x0) <= F(d)
        a = np.array([[x0, 0.0, 0.0], [x0, 1.0, 0.0], [x0, 0.0, 1.0]])
        b = np.array([[x1, 0.1, 0.1], [x1, 0.6, 0.1], [x1, 0.1, 0.6]])
        tri = np.array([[0, 1, 2]])
        ia, ib = candidate_pairs(a, tri, b, tri, d)
        assert ia.tolist() == [0] and ib.tolist() == [0]
        pairs, dist = near_pairs(a, tri, b, tri, d)
        assert pairs.tolist() == [[0, 0]]
        assert abs(dist[0] - float(F(x1) - F(x0))) <= DIST_REL_TOL * 2.0 * max(abs(x0), 1.0)
        # And from the other side (B to the left of A).
        pairs, _ = near_pairs(b * [-1, 1, 1], tri, a * [-1, 1, 1], tri, d)
        assert pairs.tolist() == [[0, 0]]


def test_trees_chunks_and_empty(monkeypatch):
    pa, ta, pb, tb = garment(8)
    d = 0.02 * size_of(pa, pb)
    want = near_or_intersecting_pairs(pa, ta, pb, tb, d)
    # The caller's trees: topology-only ones, or the exact self trees of the objects.
    for trees in [(cross_tree(pa, ta), cross_tree(pb, tb)),
                  (build(pa, ta, np.arange(pa.shape[0])), build(pb, tb, np.arange(pb.shape[0])))]:
        got = near_or_intersecting_pairs(pa, ta, pb, tb, d, trees)
        assert (got.pairs == want.pairs).all() and (got.dist == want.dist).all()
    monkeypatch.setattr(near, "_CHUNK", 97)
    got = near_or_intersecting_pairs(pa, ta, pb, tb, d)
    assert (got.pairs == want.pairs).all() and (got.dist == want.dist).all()
    far = near_pairs(pa, ta, pb + 100.0, tb, d)
    assert far[0].shape == (0, 2) and far[1].shape == (0,)
    none = near_pairs(pa, ta, pb, tb[:0], d)
    assert none[0].shape == (0, 2)
    with pytest.raises(ValueError):
        near_pairs(pa, ta, pb, tb, -1.0)
    with pytest.raises(ValueError):
        near_pairs(pa, ta, pb, tb, float("nan"))
    with pytest.raises(ValueError):             # trees of other triangles
        near_pairs(pa, ta, pb, tb, d, (cross_tree(pa, ta[:-1]), cross_tree(pb, tb)))


def test_a_limit_stops_the_traversal_past_it_and_changes_nothing_below_it():
    """`near_pairs(..., limit=)`: the box traversal raises `TooManyPairs` once a level
    holds more node pairs than the limit (its leaf level holds every candidate, so a
    limit under the candidates' count stops it); a limit it stays under changes nothing."""
    pa, ta, pb, tb = garment(3)
    d = 0.05
    ia, _ = candidate_pairs(pa, ta, pb, tb, d)
    want = near_pairs(pa, ta, pb, tb, d, points=True, exact=False)
    got = near_pairs(pa, ta, pb, tb, d, points=True, exact=False, limit=10 * ia.size)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(near.TooManyPairs) as info:
        near_pairs(pa, ta, pb, tb, d, exact=False, limit=ia.size - 1)
    assert info.value.count >= ia.size


def test_a_touching_pair_with_boxes_apart_is_near_not_intersecting():
    """Two parallel triangles 1e-13 apart: the exact intersection test calls them touching
    (its tolerance), but their float64 boxes are apart, so by the rule between objects
    they do not intersect (as `cross_pairs` decides): a near pair at its distance, in
    both queries that tell intersecting pairs apart."""
    pa = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    pb = np.array([[0.1, 0.1, 1e-13], [0.9, 0.1, 1e-13], [0.1, 0.9, 1e-13]])
    t = np.array([[0, 1, 2]])
    one = np.array([0])
    assert triangle_pairs_intersect(pa, t, one, pb, t, one).all()
    assert not boxes_meet(pa, t, pb, t).any()
    r = near_or_intersecting_pairs(pa, t, pb, t, 0.01)
    assert r.pairs.tolist() == [[0, 0]] and not r.intersecting.any()
    assert abs(r.dist[0] - 1e-13) <= 1e-20
    found, hits = near.near_and_intersecting(pa, t, pb, t, 0.01)
    assert hits.shape == (0, 2) and found[0].tolist() == [[0, 0]]
