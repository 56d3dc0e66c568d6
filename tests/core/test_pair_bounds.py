"""Lower and upper bounds of triangle-pair distances (`core.geometry.pair_bounds`),
against the exact kernel (`core.geometry.distance`, itself judged against rationals):
random pairs at every scale and 1 km from the origin, pairs that touch or cross,
slivers and collapsed triangles. Pure numpy."""
from __future__ import annotations

import numpy as np
import pytest

from skin_collide.core.geometry.distance import DIST_REL_TOL, pair_distances
from skin_collide.core.geometry.pair_bounds import corner_points, pair_bounds, plane_lower
from skin_collide.core.triangles import triangle_pairs_intersect


def soup(rng, n, spread, offset=0.0):
    """n triangles of random corners around random centres within `spread`, as
    (3n, 3) positions and (n, 3) triangles."""
    centres = rng.uniform(-spread, spread, (n, 1, 3))
    pos = centres + rng.normal(scale=0.1, size=(n, 3, 3))
    return (pos + offset).reshape(-1, 3), np.arange(3 * n).reshape(n, 3)


def pairs_of(na, nb, rng, k):
    return rng.integers(0, na, k), rng.integers(0, nb, k)


def check(pa, ta, ia, pb, tb, ib):
    b = pair_bounds(pa, ta, ia, pb, tb, ib)
    r = pair_distances(pa, ta, ia, pb, tb, ib)
    hit = triangle_pairs_intersect(pa, ta, ia, pb, tb, ib)
    exact = np.where(hit, 0.0, r.dist)
    tol = DIST_REL_TOL * r.scale
    assert (b.lower >= 0).all()
    assert (b.lower <= exact + tol).all(), "a lower bound above the distance"
    assert (b.upper >= exact - tol).all(), "an upper bound below the distance"
    assert (b.lower[hit] == 0).all()
    planes = plane_lower(pa, ta, ia, pb, tb, ib)
    assert (planes >= 0).all() and (planes <= exact + tol).all(), "a plane gap above the distance"
    assert (planes[hit] == 0).all()
    # The upper bound is the distance of the two corners it names, bit for bit corners.
    qa, qb = corner_points(pa, ta, ia, pb, tb, ib, b.corner)
    assert b.corner.dtype == np.uint8 and (b.corner < 9).all()
    assert (np.abs(np.linalg.norm(qa - qb, axis=1) - b.upper)
            <= 4 * tol + 1e-15 * np.abs(pa).max()).all()
    ca, cb = pa[ta[ia]], pb[tb[ib]]
    assert (qa == ca[np.arange(ia.size), b.corner // 3]).all()
    assert (qb == cb[np.arange(ib.size), b.corner % 3]).all()
    # ... and the smallest of the nine corner distances.
    nine = np.linalg.norm(ca[:, :, None] - cb[:, None], axis=3).reshape(-1, 9).min(axis=1)
    assert (np.abs(b.upper - nine) <= 4 * tol + 1e-15 * np.abs(pa).max()).all()
    return b, exact


@pytest.mark.parametrize("spread,offset", [(1.0, 0.0), (0.3, 0.0), (1.0, 1000.0),
                                           (1e-4, 0.0), (1e4, -3e5)])
def test_bounds_hold_at_every_scale(spread, offset):
    rng = np.random.default_rng(int(spread * 7) % 97)
    pa, ta = soup(rng, 300, spread, offset)
    pb, tb = soup(rng, 250, spread, offset)
    if spread < 1:      # small triangles near one another: scale them with the spread
        pa = (pa - offset) * spread * 10 + offset
        pb = (pb - offset) * spread * 10 + offset
    ia, ib = pairs_of(300, 250, rng, 6000)
    b, exact = check(pa, ta, ia, pb, tb, ib)
    assert (b.lower > 0).any() and (b.upper > exact).any()


def test_touching_crossing_and_degenerate_pairs():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(200, 3, 3))
    other = base + rng.normal(scale=0.05, size=base.shape)   # crossing or close
    other[:20] = base[:20]                                   # the same triangle
    other[20:40, 0] = base[20:40, 1]                         # sharing a corner
    other[40:60, 1] = other[40:60, 0]                        # collapsed to a segment
    other[60:80] = other[60:80, :1]                          # collapsed to a point
    base[80:100, 2] = base[80:100, 0] + 1e-9 * (base[80:100, 1] - base[80:100, 0])  # slivers
    pa, pb = base.reshape(-1, 3) + 500.0, other.reshape(-1, 3) + 500.0
    t = np.arange(600).reshape(200, 3)
    i = np.arange(200)
    b, exact = check(pa, t, i, pb, t, i)
    assert (exact == 0).sum() > 20 and (b.lower[:20] == 0).all()


def test_parallel_layers_are_decided_by_the_bounds():
    """A layer 0.5 above a grid of unit triangles, d = 1: every pair right above is
    proved within d by its corners, every pair more than two cells away proved farther
    by a gap."""
    g = np.stack(np.meshgrid(np.arange(12.0), np.arange(12.0), indexing="ij"), -1).reshape(-1, 2)
    pos = np.concatenate([g, np.zeros((g.shape[0], 1))], axis=1)
    v = np.arange(144).reshape(12, 12)
    tri = np.concatenate([np.stack([v[:-1, :-1], v[1:, :-1], v[1:, 1:]], -1).reshape(-1, 3),
                          np.stack([v[:-1, :-1], v[1:, 1:], v[:-1, 1:]], -1).reshape(-1, 3)])
    top = pos + [0, 0, 0.5]
    n = tri.shape[0]
    ia, ib = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    ia, ib = ia.ravel(), ib.ravel()
    b, exact = check(pos, tri, ia, top, tri, ib)
    same = ia == ib
    assert (b.upper[same] <= 0.5 + 1e-12).all()
    far = exact > 3.0
    assert far.any() and (b.lower[far] > 1.0).all()
    # Along the normals the layers' gap is the bound: every pair is at least 0.5 apart.
    assert (plane_lower(pos, tri, ia, top, tri, ib) >= 0.5 - 1e-10).all()


@pytest.mark.parametrize("offset", [0.0, 1000.0])
def test_face_bounds_hold_for_every_split_of_two_quads(offset):
    """Four-corner tables (quads, and triangles with a repeated corner): the bounds hold
    for every triangle pair of the two faces, whichever diagonal splits each quad, and
    the upper bound is the distance of the two corners it names."""
    rng = np.random.default_rng(11)
    n = 400
    centres = rng.uniform(-1.0, 1.0, (n, 1, 3))
    pa = (centres + rng.normal(scale=0.15, size=(n, 4, 3))).reshape(-1, 3) + offset
    pb = (centres + rng.normal(scale=0.15, size=(n, 4, 3))
          + rng.normal(scale=0.05, size=(n, 1, 3))).reshape(-1, 3) + offset
    qa = np.arange(4 * n).reshape(n, 4)
    qb = qa.copy()
    qb[:50, 3] = qb[:50, 0]                         # triangles padded with their corner 0
    ia, ib = rng.integers(0, n, 5000), rng.integers(0, n, 5000)
    ia[:n], ib[:n] = np.arange(n), np.arange(n)     # the faces over one another
    b = pair_bounds(pa, qa, ia, pb, qb, ib)
    splits = ([[0, 1, 2], [0, 2, 3]], [[0, 1, 3], [1, 2, 3]])
    best = np.full(ia.size, np.inf)
    for sa in splits:
        for sb in splits:
            for x in sa:
                for y in sb:
                    ta, tb = qa[:, x], qb[:, y]
                    r = pair_distances(pa, ta, ia, pb, tb, ib)
                    hit = triangle_pairs_intersect(pa, ta, ia, pb, tb, ib)
                    exact = np.where(hit, 0.0, r.dist)
                    tol = DIST_REL_TOL * r.scale
                    assert (b.lower <= exact + tol).all(), "a lower bound above a split's distance"
                    planes = plane_lower(pa, qa, ia, pb, qb, ib)
                    assert (planes <= exact + tol).all()
                    best = np.minimum(best, exact)
    # The upper bound is at least each split's face distance (some triangle pair of
    # every split is that close or closer: the corners are points of both splits).
    one = np.full(ia.size, np.inf)
    for x in splits[0]:
        for y in splits[0]:
            r = pair_distances(pa, qa[:, x], ia, pb, qb[:, y], ib)
            hit = triangle_pairs_intersect(pa, qa[:, x], ia, pb, qb[:, y], ib)
            one = np.minimum(one, np.where(hit, 0.0, r.dist))
    assert (b.upper >= one - 1e-9).all()
    assert b.corner.dtype == np.uint8 and (b.corner < 16).all()
    ca, cb = corner_points(pa, qa, ia, pb, qb, ib, b.corner)
    assert (ca == pa[qa[ia, b.corner // 4]]).all() and (cb == pb[qb[ib, b.corner % 4]]).all()
    sixteen = np.linalg.norm(pa[qa[ia]][:, :, None] - pb[qb[ib]][:, None], axis=3)
    small = sixteen.reshape(-1, 16).min(axis=1)
    assert (np.abs(b.upper - small) <= 1e-11 * small + 1e-15 * (1 + offset)).all()
    assert (b.lower > 0).any() and (b.upper < 0.3).any()
    # Mixed tables (triangles of A, faces of B) hold too.
    tri = qa[:, :3]
    m = pair_bounds(pa, tri, ia, pb, qb, ib)
    r = pair_distances(pa, tri, ia, pb, qb[:, :3], ib)
    hit = triangle_pairs_intersect(pa, tri, ia, pb, qb[:, :3], ib)
    assert (m.lower <= np.where(hit, 0.0, r.dist) + DIST_REL_TOL * r.scale).all()
    assert (m.corner < 12).all()
