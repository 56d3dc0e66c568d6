"""Swept bounds and the mesh-level continuous query (`core.geometry.swept`): the moving
sphere and the two-ended box hold the motion (checked in exact rationals), the sweep finds
every overlapping box pair, and `mesh_pairs` equals brute force through the kernel and
finds every pair that dense sampling with the exact static triangle test sees collide."""
from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np

from skin_collide.core.geometry import ccd, swept
from skin_collide.core.triangles import triangles_intersect


def test_a_moving_sphere_holds_what_it_holds_at_both_ends():
    rng = np.random.default_rng(0)
    n = 300
    c0, c1 = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
    r0, r1 = rng.random(n) * 2, rng.random(n) * 2
    # Points inside each end's sphere (and some on its surface, scaled in by 1 - 1e-12).
    d0, d1 = rng.standard_normal((n, 3)), rng.standard_normal((n, 3))
    d0 /= np.linalg.norm(d0, axis=1)[:, None]
    d1 /= np.linalg.norm(d1, axis=1)[:, None]
    s0 = np.where(rng.random(n) < .3, 1 - 1e-12, rng.random(n))
    s1 = np.where(rng.random(n) < .3, 1 - 1e-12, rng.random(n))
    p0 = c0 + (s0 * r0)[:, None] * d0
    p1 = c1 + (s1 * r1)[:, None] * d1
    held = swept.sphere_holds(c0, r0, c1, r1, p0, p1)
    assert held.mean() > 0.9                  # rounding may put a surface point outside
    for i in np.flatnonzero(held)[:150]:
        for t in (Fr(0), Fr(1, 3), Fr(1, 2), Fr(rng.random()), Fr(1)):
            p = [(1 - t) * Fr(a) + t * Fr(b) for a, b in zip(p0[i], p1[i])]
            c = [(1 - t) * Fr(a) + t * Fr(b) for a, b in zip(c0[i], c1[i])]
            r = (1 - t) * Fr(r0[i]) + t * Fr(r1[i])
            assert sum((x - y) ** 2 for x, y in zip(p, c)) <= r * r
    # Holding one end is not enough.
    assert not swept.sphere_holds(np.zeros(3), 1.0, np.zeros(3), 1.0, np.zeros(3), np.full(3, 2.0))
    c, r = swept.sphere_at(c0[:2], r0[:2], c1[:2], r1[:2], np.array([0.0, 1.0]))
    assert np.array_equal(c, np.stack([c0[0], c1[1]])) and np.array_equal(r, [r0[0], r1[1]])


def test_the_box_of_both_ends_holds_the_moving_triangle():
    rng = np.random.default_rng(1)
    v0, v1 = rng.standard_normal((40, 3)), rng.standard_normal((40, 3)) * 3
    tris = rng.integers(0, 40, (60, 3))
    lo, hi = swept.swept_boxes(v0, v1, tris)
    for k in range(60):
        for t in (Fr(0), Fr(rng.random()), Fr(1)):
            w = rng.dirichlet(np.ones(3))             # a point of the triangle
            for ax in range(3):
                x = sum(Fr(w[m]) * ((1 - t) * Fr(v0[tris[k, m], ax]) + t * Fr(v1[tris[k, m], ax]))
                        for m in range(3)) / sum(Fr(x) for x in w)
                assert Fr(lo[k, ax]) <= x <= Fr(hi[k, ax])


def test_the_sweep_finds_every_overlapping_box_pair():
    rng = np.random.default_rng(2)
    for na, nb, size in ((50, 70, .1), (200, 150, .02), (0, 5, .1), (30, 1, 2.0)):
        lo_a = rng.random((na, 3))
        hi_a = lo_a + rng.random((na, 3)) * size
        lo_b = rng.random((nb, 3))
        hi_b = lo_b + rng.random((nb, 3)) * size
        got = swept.candidate_pairs(lo_a, hi_a, lo_b, hi_b)
        brute = np.argwhere(((lo_a[:, None] <= hi_b[None]) & (lo_b[None] <= hi_a[:, None])).all(axis=2))
        assert np.array_equal(got, brute)
    # Touching boxes (closed) overlap.
    z, o = np.zeros((1, 3)), np.ones((1, 3))
    assert len(swept.candidate_pairs(z, o, o, o + 1)) == 1


def sheets(rng, n=4):
    """Two grid sheets on a dyadic grid: A near z = 0, B moving from z = 1 to z = -1, both
    jittered and sheared, so that at t = k/16 every position is exact."""
    ij = np.stack(np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"), -1).reshape(-1, 2)
    quads = [(i * (n + 1) + j, (i + 1) * (n + 1) + j, (i + 1) * (n + 1) + j + 1, i * (n + 1) + j + 1)
             for i in range(n) for j in range(n)]
    tris = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])
    base = np.concatenate([ij / n, np.zeros((len(ij), 1))], axis=1)
    va0 = base + rng.integers(-2, 3, base.shape) / 32
    va1 = va0 + rng.integers(-2, 3, base.shape) / 32
    vb0 = base + [1 / 8, 1 / 16, 1] + rng.integers(-2, 3, base.shape) / 32
    vb1 = vb0 + [rng.integers(-4, 5) / 16, rng.integers(-4, 5) / 16, -2] + rng.integers(-2, 3, base.shape) / 32
    return va0, va1, tris, vb0, vb1, tris.copy()


# The 15 primitive queries of a triangle pair, as rows into its 6 vertices (A's 0-2, B's
# 3-5): A's vertices against B's face, B's against A's face, A's edges against B's edges.
VF_ROWS = [(k, 3, 4, 5) for k in range(3)] + [(3 + k, 0, 1, 2) for k in range(3)]
EDGES = [(0, 1), (1, 2), (2, 0)]
EE_ROWS = [(a0, a1, 3 + b0, 3 + b1) for a0, a1 in EDGES for b0, b1 in EDGES]


def brute(va0, va1, ta, vb0, vb1, tb):
    """All triangle pairs through the kernel directly: (pairs, t). Edges run from their
    smaller vertex id to the larger, as `mesh_pairs` asks them (the same queries)."""
    i, j = np.meshgrid(np.arange(len(ta)), np.arange(len(tb)), indexing="ij")
    i, j = i.ravel(), j.ravel()
    ids = np.concatenate([ta[i], tb[j] + len(va0)], axis=1)                 # (K, 6)
    x0, x1 = np.concatenate([va0, vb0]), np.concatenate([va1, vb1])
    ts = []
    for rows, kind in ((VF_ROWS, ccd.VERTEX_FACE), (EE_ROWS, ccd.EDGE_EDGE)):
        q = ids[:, np.array(rows)]                                          # (K, R, 4)
        if kind == ccd.EDGE_EDGE:
            q = np.concatenate([np.sort(q[:, :, :2], axis=2), np.sort(q[:, :, 2:], axis=2)], axis=2)
        r = ccd.ccd(kind, x0[q.reshape(-1, 4)], x1[q.reshape(-1, 4)], first_contact=True)
        ts.append(r.t.reshape(len(i), -1).min(axis=1))
    t = np.minimum(*ts)
    hit = np.isfinite(t)
    return np.stack([i[hit], j[hit]], axis=1), t[hit]


def test_mesh_pairs_equal_brute_force_and_dense_sampling():
    rng = np.random.default_rng(3)
    for _ in range(3):
        va0, va1, ta, vb0, vb1, tb = sheets(rng)
        pairs, t = swept.mesh_pairs(va0, va1, ta, vb0, vb1, tb)
        bp, bt = brute(va0, va1, ta, vb0, vb1, tb)
        # The same pairs; the times are both lower bounds of the first contact (ours from
        # the capped refinement and the coplanarity cubic, the kernel's to 1e-6), within
        # a few of ours' 2**-10 of each other here.
        assert np.array_equal(pairs, bp)
        assert np.abs(t - bt).max() < 2 ** -7
        assert len(pairs) > 10
        # Dense sampling: a pair disjoint at t = 0 that intersects at t = k/16 (exact
        # positions, exact static test) first touched by a vertex-face or edge-edge
        # contact at some time <= k/16.
        i, j = np.meshgrid(np.arange(len(ta)), np.arange(len(tb)), indexing="ij")
        i, j = i.ravel(), j.ravel()
        found = {tuple(p): tt for p, tt in zip(pairs.tolist(), t)}

        def meets(s):
            a, b = (1 - s) * va0 + s * va1, (1 - s) * vb0 + s * vb1
            return triangles_intersect(a[ta[i, 0]], a[ta[i, 1]], a[ta[i, 2]],
                                       b[tb[j, 0]], b[tb[j, 1]], b[tb[j, 2]])

        apart = ~meets(0.0)
        seen = 0
        for k in range(1, 17):
            for m in np.flatnonzero(apart & meets(k / 16)):
                key = (int(i[m]), int(j[m]))
                assert key in found, f"pair {key} collides at t = {k}/16, not reported"
                assert found[key] <= k / 16
                seen += 1
        assert seen > 10
