"""Continuous collision kernel (`core.geometry.ccd`): queries per second, and the false
positives against the exact rational reference (`tests/ccd_reference.py`).

    bash dev python -m bench ccd [--speed N] [--exact N] [--sheet N]   (50000, 1000, 20)

Query sets (seeded): "random": four points uniform in the unit cube, each moving by a
normal step of 0.3 (4% vertex-face and 11% edge-edge contacts); "short moves": steps of
0.05 (under 1% and 2%, closer to what a broad phase hands over); "near misses": contacts
moved off the boundary of a primitive by 1e-9 .. 1e-3 (log-uniform; tests/core/test_ccd.py
`near_queries`; N_SPEED / 10 of them: slow). Speed: best of 3, one thread. Exact: the reference decides each query;
a false positive is a hit it calls a miss, an undecided one a hit from the budget.
Meshes: `swept.mesh_pairs` on the two grid sheets of tests/core/test_swept.py (SHEET x SHEET
quads each, 2 SHEET^2 triangles; B sweeps through A: a stress case, most candidates touch).
"""
from __future__ import annotations

import sys
import time

import numpy as np

from bench import registry, scenes
from skin_collide.core.geometry import ccd, swept


def _helpers():
    """The exact rational reference and the query and sheet makers of the test suite
    (`tests/ccd_reference.py`, `tests/core/test_ccd.py`, `tests/core/test_swept.py`),
    imported by their files; `test_ccd` imports the reference by its module name."""
    ref = scenes.tests_module("ccd_reference.py")
    sys.modules.setdefault("ccd_reference", ref)
    return ref, scenes.tests_module("core/test_ccd.py"), scenes.tests_module("core/test_swept.py")


def queries(name, n, kind, seed=0):
    rng = np.random.default_rng(seed)
    if name == "near misses":
        return _helpers()[1].near_queries(rng, n, kind)
    x0 = rng.random((n, 4, 3))
    return x0, x0 + {"random": 0.3, "short moves": 0.05}[name] * rng.standard_normal((n, 4, 3))


def speed(n):
    print(f"{'set':<12} {'kind':<12} {'hits':>6} {'hits q/s':>10} {'first contact q/s':>18}")
    for name in ("random", "short moves", "near misses"):
        for kind in (ccd.VERTEX_FACE, ccd.EDGE_EDGE):
            m = n // 10 if name == "near misses" else n
            x0, x1 = queries(name, m, kind)
            rates = []
            for first in (False, True):
                best = np.inf
                for _ in range(3):
                    t0 = time.perf_counter()
                    r = ccd.ccd(kind, x0, x1, first_contact=first)
                    best = min(best, time.perf_counter() - t0)
                rates.append(m / best)
            print(f"{name:<12} {kind:<12} {r.hit.mean():6.1%} {rates[0]:10,.0f} {rates[1]:18,.0f}")


def exact(n):
    print(f"\n{'set':<12} {'kind':<12} {'tol':>6} {'contacts':>9} {'hits':>6} "
          f"{'false pos.':>10} {'rate':>7} {'undecided':>9} {'max d/(tol M)':>13}")
    for name in ("random", "near misses"):
        for kind in (ccd.VERTEX_FACE, ccd.EDGE_EDGE):
            x0, x1 = queries(name, n, kind, seed=1)
            ref = _helpers()[0]
            first_of = {ccd.VERTEX_FACE: ref.vertex_face_first, ccd.EDGE_EDGE: ref.edge_edge_first}
            d2_of = {ccd.VERTEX_FACE: ref.vertex_face_d2, ccd.EDGE_EDGE: ref.edge_edge_d2}
            truth = np.array([first_of[kind](x0[i], x1[i]) is not None for i in range(n)])
            for tol in (1e-6, 1e-4):
                r = ccd.ccd(kind, x0, x1, tol=tol)
                assert r.hit[truth].all()
                fps = np.flatnonzero(r.hit & ~truth)
                fp = len(fps)
                m = ccd.extent(x0, x1)
                # The exact distance at the returned time, in units of tol M (bound: 2).
                worst = max([float(d2_of[kind](x0[i], x1[i], r.t[i])) ** 0.5 / (tol * m[i])
                             for i in fps if r.decided[i]], default=0.0)
                print(f"{name:<12} {kind:<12} {tol:6.0e} {truth.sum():9d} {r.hit.sum():6d} "
                      f"{fp:10d} {fp / n:7.2%} {(~r.decided).sum():9d} {worst:13.3f}")


def meshes(n):
    va0, va1, ta, vb0, vb1, tb = _helpers()[2].sheets(np.random.default_rng(0), n)
    t0 = time.perf_counter()
    cand = swept.candidate_pairs(*swept.swept_boxes(va0, va1, ta), *swept.swept_boxes(vb0, vb1, tb))
    t1 = time.perf_counter()
    pairs, t = swept.mesh_pairs(va0, va1, ta, vb0, vb1, tb)
    t2 = time.perf_counter()
    print(f"\nmesh_pairs, {len(ta)} x {len(tb)} triangles: {len(cand)} candidate pairs "
          f"({t1 - t0:.3f} s), {len(pairs)} touching pairs, {t2 - t1:.1f} s in all")




def options(p) -> None:
    p.add_argument("--speed", type=int, default=50_000, help="queries per set for the speeds")
    p.add_argument("--exact", type=int, default=1000,
                   help="queries per set judged by the exact reference")
    p.add_argument("--sheet", type=int, default=20, help="quads per side of the two sheets")


def run(args) -> int:
    speed(args.speed)
    exact(args.exact)
    meshes(args.sheet)
    return 0


registry.register("ccd", "continuous collision kernel: queries per second, false positives "
                  "against the exact reference, mesh pairs between two sheets", options, run,
                  smoke=dict(speed=2000, exact=20, sheet=3), doc=__doc__)
