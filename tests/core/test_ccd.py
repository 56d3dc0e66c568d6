"""Continuous collision (`core.geometry.ccd`) against the exact rational reference
(`tests/ccd_reference.py`): never a false negative, on random queries and on every
degenerate family (sliding and coplanar contact, parallel and collinear edges, contact at
t = 0 and t = 1, a vertex on an edge, no motion, 1 km from the origin, tiny and huge
motions); the first-contact time never later than the exact one; and every decided hit
the reference calls a miss within the documented tolerance, by the exact distance."""
from __future__ import annotations

from fractions import Fraction as Fr

import ccd_reference as ref
import numpy as np
import pytest

from skin_collide.core.geometry import ccd

KINDS = (ccd.VERTEX_FACE, ccd.EDGE_EDGE)
FIRST = {ccd.VERTEX_FACE: ref.vertex_face_first, ccd.EDGE_EDGE: ref.edge_edge_first}
D2 = {ccd.VERTEX_FACE: ref.vertex_face_d2, ccd.EDGE_EDGE: ref.edge_edge_d2}


# ---------------------------------------------------------------- query sets

def grid_queries(rng, n, size=4, motion=4):
    """Coordinates on a coarse dyadic grid: contacts, coplanarity and parallel edges are
    common, and exactly representable."""
    x0 = rng.integers(-size, size + 1, (n, 4, 3)) / 4.0
    x1 = x0 + rng.integers(-motion, motion + 1, (n, 4, 3)) / 4.0
    return x0, x1


def float_queries(rng, n):
    x0 = rng.random((n, 4, 3))
    return x0, x0 + 0.5 * rng.standard_normal((n, 4, 3))


def near_queries(rng, n, kind):
    """Queries that touch at a random time on the boundary of a primitive (an edge of the
    triangle; an end of segment a), then moved off it outward by 1e-9 .. 1e-3: misses by
    about that much, the cases a tolerance decides."""
    x0, x1 = float_queries(rng, n)
    t = rng.random(n)[:, None]
    u = rng.random(n)[:, None]
    xt = (1 - t)[:, :, None] * x0 + t[:, :, None] * x1
    gap = 10.0 ** rng.uniform(-9, -3, (n, 1))
    if kind == ccd.VERTEX_FACE:
        # A point of the edge f0 f1, moved away from f2 in the plane.
        e1, e2 = xt[:, 2] - xt[:, 1], xt[:, 3] - xt[:, 1]
        inward = e2 - (np.sum(e2 * e1, 1) / np.sum(e1 * e1, 1))[:, None] * e1
        target = xt[:, 1] + u * e1 - gap * inward / np.linalg.norm(inward, axis=1)[:, None]
        shift, mov = target - xt[:, 0], [0]
    else:
        # Segment b through a point beyond the end ea1 of segment a, on a's line.
        da = xt[:, 1] - xt[:, 0]
        target = xt[:, 1] + gap * da / np.linalg.norm(da, axis=1)[:, None]
        pb = xt[:, 2] + u * (xt[:, 3] - xt[:, 2])
        shift, mov = target - pb, [2, 3]
    for k in mov:
        x0[:, k] += shift
        x1[:, k] += shift
    return x0, x1


def _q(rows0, rows1):
    return np.array(rows0, float), np.array(rows1, float)


def families(kind):
    """Named degenerate queries that touch (the reference confirms it)."""
    if kind == ccd.VERTEX_FACE:
        tri = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
        fam = {
            "slides in the plane into the face": _q([(-1, .25, 0)] + tri, [(1, .25, 0)] + tri),
            "slides in the plane to meet a moving corner": _q([(-1, 0, 0)] + tri,
                                                              [(-.5, 0, 0), (-.5, 0, 0), (1, 0, 0), (0, 1, 0)]),
            "touches the face at t = 0": _q([(.25, .25, 0)] + tri, [(.25, .25, 1)] + tri),
            "touches the face at t = 1": _q([(.25, .25, 1)] + tri, [(.25, .25, 0)] + tri),
            "crosses an edge at t = 1/2": _q([(.5, 0, 1)] + tri, [(.5, 0, -1)] + tri),
            "crosses a corner": _q([(0, 0, 1)] + tri, [(0, 0, -1)] + tri),
            "no motion, on the face": _q([(.25, .25, 0)] + tri, [(.25, .25, 0)] + tri),
            "no motion, on an edge": _q([(.5, .5, 0)] + tri, [(.5, .5, 0)] + tri),
            "no motion, at a corner": _q([(1, 0, 0)] + tri, [(1, 0, 0)] + tri),
            "collinear triangle pierced": _q([(.5, 0, 1), (0, 0, 0), (1, 0, 0), (2, 0, 0)],
                                             [(.5, 0, -1), (0, 0, 0), (1, 0, 0), (2, 0, 0)]),
            "point triangle meets the point": _q([(0, 0, 1), (0, 0, 0), (0, 0, 0), (0, 0, 0)],
                                                 [(0, 0, -1), (0, 0, 0), (0, 0, 0), (0, 0, 0)]),
            "triangle sweeps onto a static point": _q([(.25, .25, 0), (0, 0, 1), (1, 0, 1), (0, 1, 1)],
                                                      [(.25, .25, 0), (0, 0, -1), (1, 0, -1), (0, 1, 1)]),
            "triangle collapses onto the point": _q([(.2, .2, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0)],
                                                    [(.2, .2, 0), (.2, .2, 0), (.2, .2, 0), (.2, .2, 0)]),
            "everything at one point": _q([(0, 0, 0)] * 4, [(0, 0, 0)] * 4),
            # The coplanarity cubic is -(2t - 1)^2 / 4: a double root, the point inside.
            "touches tangentially at t = 1/2": _q([(.25, 0, -.25), (0, 0, 0), (1, 0, 0), (0, 1, -1)],
                                                  [(.25, .5, .25), (0, 0, 0), (1, 0, 0), (0, 1, 1)]),
            "the triangle tilts through the point": _q([(.25, .25, 1), (0, 0, 0), (1, 0, 0), (0, 1, 0)],
                                      [(.25, .25, 1), (0, 0, 2), (1, 0, 2), (0, 1, 0)]),
        }
    else:
        fam = {
            "cross at t = 1/2": _q([(-1, 0, 1), (1, 0, 1), (0, -1, 0), (0, 1, 0)],
                                   [(-1, 0, -1), (1, 0, -1), (0, -1, 0), (0, 1, 0)]),
            "collinear, sliding into overlap": _q([(0, 0, 0), (1, 0, 0), (3, 0, 0), (4, 0, 0)],
                                                  [(0, 0, 0), (1, 0, 0), (.5, 0, 0), (1.5, 0, 0)]),
            "collinear, end to end at t = 1": _q([(0, 0, 0), (1, 0, 0), (3, 0, 0), (4, 0, 0)],
                                                 [(0, 0, 0), (1, 0, 0), (1, 0, 0), (2, 0, 0)]),
            "parallel, coplanar, meet side by side": _q([(0, 0, 0), (2, 0, 0), (1, 1, 0), (3, 1, 0)],
                                                        [(0, 0, 0), (2, 0, 0), (1, 0, 0), (3, 0, 0)]),
            "parallel, different planes, meet": _q([(0, 0, 0), (2, 0, 0), (1, 1, 1), (3, 1, 1)],
                                                   [(0, 0, 0), (2, 0, 0), (1, -1, -1), (3, -1, -1)]),
            "touch at t = 0": _q([(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0)],
                                 [(-1, 0, 0), (1, 0, 0), (0, -1, 1), (0, 1, 1)]),
            "touch at t = 1": _q([(-1, 0, 0), (1, 0, 0), (0, -1, 1), (0, 1, 1)],
                                 [(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0)]),
            "end point onto the other edge (T)": _q([(-1, 0, 0), (1, 0, 0), (0, 1, 0), (0, 2, 0)],
                                                    [(-1, 0, 0), (1, 0, 0), (0, 0, 0), (0, 1, 0)]),
            "end points meet": _q([(0, 0, 0), (1, 0, 0), (2, 1, 0), (2, 2, 0)],
                                  [(0, 0, 0), (1, 0, 0), (1, 0, 0), (1, 1, 1)]),
            "point edge onto a segment": _q([(-1, 0, 0), (1, 0, 0), (.5, 0, 1), (.5, 0, 1)],
                                            [(-1, 0, 0), (1, 0, 0), (.5, 0, -1), (.5, 0, -1)]),
            "two point edges meet": _q([(0, 0, 0), (0, 0, 0), (1, 1, 1), (1, 1, 1)],
                                       [(1, 1, 1), (1, 1, 1), (0, 0, 0), (0, 0, 0)]),
            "no motion, crossing": _q([(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0)],
                                      [(-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0)]),
            "no motion, collinear overlap": _q([(0, 0, 0), (2, 0, 0), (1, 0, 0), (3, 0, 0)],
                                               [(0, 0, 0), (2, 0, 0), (1, 0, 0), (3, 0, 0)]),
            "edge turns onto the other": _q([(0, 0, 1), (2, 0, 1), (1, -1, 0), (1, 1, 0)],
                                            [(0, 0, 1), (2, 0, -1), (1, -1, 0), (1, 1, 0)]),
        }
    return fam


def transformed(x0, x1, rng, k):
    """k exact variants of a query: axis permutations, sign flips, dyadic translations and
    scalings (a power of two: exact)."""
    out0, out1 = [x0], [x1]
    for _ in range(k):
        perm = rng.permutation(3)
        sign = rng.choice([-1.0, 1.0], 3)
        shift = rng.integers(-64, 65, 3) / 8.0
        scale = 2.0 ** rng.integers(-3, 4)
        out0.append((x0[:, perm] * sign + shift) * scale)
        out1.append((x1[:, perm] * sign + shift) * scale)
    return np.array(out0), np.array(out1)


# ---------------------------------------------------------------- the checks

def check(kind, x0, x1, tol=ccd.TOL, label=""):
    """Assert no false negative, first-contact times never late, and decided hits the
    reference calls misses within eta = 2 tol M by the exact distance. Returns the number
    of (exact contacts, hits, hits the reference calls misses)."""
    first_fn, d2_fn = FIRST[kind], D2[kind]
    r = ccd.ccd(kind, x0, x1, tol=tol)
    rt = ccd.ccd(kind, x0, x1, tol=tol, first_contact=True)
    m = ccd.extent(x0, x1)
    vmax = np.abs(x1 - x0).max(axis=(1, 2)) * np.sqrt(3.0)
    contacts = fps = 0
    for i in range(len(x0)):
        exact = first_fn(x0[i], x1[i])
        eta = Fr(2.0 * tol * m[i])
        where = f"{label} query {i}: {x0[i].tolist()} -> {x1[i].tolist()}"
        if exact is not None:
            contacts += 1
            assert r.hit[i], f"false negative, {where}"
            assert rt.hit[i], f"false negative (first contact), {where}"
            assert rt.t[i] <= exact.hi, f"first contact {rt.t[i]} later than {float(exact.lo)}, {where}"
        else:
            fps += int(r.hit[i])
            if r.hit[i] and r.decided[i]:
                assert d2_fn(x0[i], x1[i], r.t[i]) <= eta * eta, f"hit beyond tolerance, {where}"
            if rt.hit[i] and rt.decided[i]:
                # Within eta at some time of [t, t + T_TOL]; the distance moves at most
                # 2 vmax per unit time.
                bound = eta + Fr(2.0 * 1.001 * float(vmax[i]) * ccd.T_TOL)
                assert d2_fn(x0[i], x1[i], rt.t[i]) <= bound * bound, f"first contact beyond tolerance, {where}"
    return contacts, int(r.hit.sum()), fps


@pytest.mark.parametrize("kind", KINDS)
def test_reference_on_known_cases(kind):
    """The reference itself: a contact at t = 1/2, a clear miss, an irrational time."""
    if kind == ccd.VERTEX_FACE:
        tri = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
        hit = ref.vertex_face_first([(.25, .25, 1)] + tri, [(.25, .25, -1)] + tri)
        miss = ref.vertex_face_first([(2, 2, 1)] + tri, [(2, 2, -1)] + tri)
    else:
        hit = ref.edge_edge_first([(-1, 0, 1), (1, 0, 1), (0, -1, 0), (0, 1, 0)],
                                  [(-1, 0, -1), (1, 0, -1), (0, -1, 0), (0, 1, 0)])
        miss = ref.edge_edge_first([(-1, 0, 1), (1, 0, 1), (2, -1, 0), (2, 1, 0)],
                                   [(-1, 0, -1), (1, 0, -1), (2, -1, 0), (2, 1, 0)])
    assert hit.exact() and hit.lo == Fr(1, 2)
    assert miss is None
    # The point (0, 0, 2t - 1) against a triangle whose plane turns,
    # x = 1 - t - t (z + 1) / 2: contact where t^2 + t - 1 = 0, t = (sqrt(5) - 1) / 2.
    x0 = [(0, 0, -1), (1, -1, -1), (1, 1, -1), (1, 0, 1)]
    x1 = [(0, 0, 1), (0, -1, -1), (0, 1, -1), (-1, 0, 1)]
    r = ref.vertex_face_first(x0, x1)
    golden = (5 ** .5 - 1) / 2
    assert not r.exact() and r.lo - 1e-12 < golden < r.hi + 1e-12


@pytest.mark.parametrize("kind", KINDS)
def test_families_touch_and_are_found(kind):
    rng = np.random.default_rng(7)
    for name, (x0, x1) in families(kind).items():
        assert FIRST[kind](x0, x1) is not None, f"the reference misses the family {name!r}"
        a0, a1 = transformed(x0, x1, rng, 12)
        contacts, hits, _ = check(kind, a0, a1, label=name)
        assert contacts == hits == len(a0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", ["origin", "1 km", "1 km, inexact"])
@pytest.mark.parametrize("motion", ["tiny", "unit", "huge"])
def test_families_far_away_and_at_every_speed(kind, where, motion):
    """The families 1 km from the origin (exactly, and at 1000.1: rounded positions, the
    reference judges the rounded query) and with motions scaled by 2^-30 and 2^30 around
    the contact (the contact stays where it was: positions move about the t = 0 pose)."""
    offset = {"origin": 0.0, "1 km": 1024.0, "1 km, inexact": 1000.1}[where]
    scale = {"tiny": 2.0 ** -30, "unit": 1.0, "huge": 2.0 ** 30}[motion]
    xs0, xs1 = [], []
    for x0, x1 in families(kind).values():
        xs0.append(x0 + offset)
        xs1.append(x0 + (x1 - x0) * scale + offset)
    x0, x1 = np.array(xs0), np.array(xs1)
    check(kind, x0, x1, label=f"{where}, {motion}")


@pytest.mark.parametrize("kind", KINDS)
def test_random_grid_queries(kind):
    rng = np.random.default_rng(1)
    x0, x1 = grid_queries(rng, 300)
    contacts, hits, fps = check(kind, x0, x1, label="grid")
    assert contacts > 15                      # the set holds contacts to miss
    x0, x1 = grid_queries(rng, 200, size=2, motion=1)
    x0 += 1024.0
    x1 += 1024.0
    check(kind, x0, x1, label="grid 1 km")


@pytest.mark.parametrize("kind", KINDS)
def test_random_float_queries(kind):
    rng = np.random.default_rng(2)
    x0, x1 = float_queries(rng, 300)
    contacts, hits, fps = check(kind, x0, x1, label="float")
    assert contacts > 3


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tol", [1e-6, 1e-4])
def test_near_misses_within_tolerance(kind, tol):
    """Contacts pushed apart by 1e-9 .. 1e-3: hits below the tolerance are allowed, and
    checked by exact distance; anything that touches is found."""
    rng = np.random.default_rng(3)
    x0, x1 = near_queries(rng, 150, kind)
    contacts, hits, fps = check(kind, x0, x1, tol=tol, label="near")
    assert fps > 0                            # some near misses are within the tolerance


@pytest.mark.parametrize("kind", KINDS)
def test_tiny_and_huge_coordinates(kind):
    """Only products of coordinates with parameters in [0, 1]: any exponent range works."""
    rng = np.random.default_rng(4)
    x0, x1 = grid_queries(rng, 60)
    for s in (2.0 ** -600, 2.0 ** 600):
        check(kind, x0 * s, x1 * s, label=f"scaled {s}")


def test_non_finite_input_answers_true():
    x0 = np.zeros((2, 4, 3))
    x1 = np.ones((2, 4, 3))
    x1[0, 2, 1] = np.nan
    x0[1, 0, 0] = np.inf
    r = ccd.ccd(ccd.VERTEX_FACE, x0, x1)
    assert r.hit.all() and not r.decided.any() and (r.t == 0).all()


def test_api_shapes_and_misses():
    rng = np.random.default_rng(5)
    x0, x1 = float_queries(rng, 50)
    for hits_fn, toi_fn in ((ccd.vertex_face_hits, ccd.vertex_face_toi),
                            (ccd.edge_edge_hits, ccd.edge_edge_toi)):
        h = hits_fn(x0, x1)
        h2, t = toi_fn(x0, x1)
        assert h.shape == (50,) and h.dtype == bool and t.dtype == np.float64
        assert np.isinf(t[~h2]).all() and ((t[h2] >= 0) & (t[h2] <= 1)).all()
    assert ccd.vertex_face_hits(np.zeros((0, 4, 3)), np.zeros((0, 4, 3))).shape == (0,)
    for bad in ({"x0": np.zeros((3, 3, 3))}, {"tol": 0.0}, {"tol": 1.0}, {"t_tol": 0.0}):
        args = {"x0": x0, "x1": x1, **bad}
        if "x0" in bad:
            args["x1"] = bad["x0"]
        with pytest.raises(ValueError):
            ccd.ccd(ccd.VERTEX_FACE, args.pop("x0"), args.pop("x1"), **args)


@pytest.mark.parametrize("kind", KINDS)
def test_the_budget_answers_true(kind):
    """Queries still open when their rounds or boxes run out are hits, undecided
    (conservative), with t = 0 after one round (no box rejected yet)."""
    x0, x1 = near_queries(np.random.default_rng(6), 100, kind)
    full = ccd.ccd(kind, x0, x1)
    for budget in ({"max_rounds": 1}, {"max_boxes": 4}):
        r = ccd.ccd(kind, x0, x1, **budget)
        assert (~r.decided).sum() > 10
        assert r.hit[~r.decided].all() and (r.hit >= full.hit).all()


def test_a_shrinking_kernel_is_caught(monkeypatch):
    """The checks can fail: with a negative error bound (boxes rejected when their corner
    values only come near 0, a shrinking bug) the families give false negatives."""
    monkeypatch.setattr(ccd, "_ERR_REL", -1e-3)
    found = False
    for kind in KINDS:
        for name, (x0, x1) in families(kind).items():
            try:
                check(kind, x0[None], x1[None], label=name)
            except AssertionError as e:
                found |= "false negative" in str(e)
    assert found


@pytest.mark.parametrize("kind", KINDS)
def test_corner_values_within_the_error_bound(kind):
    """The inequality the no-false-negative proof rests on (docs/ccd.md): every computed
    corner value is within err = _ERR_REL M_axis (+ _ERR_ABS) of the exact value of the
    untranslated query, on random boxes of random queries, 1 km away and with huge
    motions. (With err = 0 this fails: the rounding is real.)"""
    rng = np.random.default_rng(8)
    n = 150
    x0, x1 = float_queries(rng, n)
    x0[: n // 3] += 1000.1
    x1[: n // 3] += 1000.1
    k = slice(n // 3, 2 * n // 3)
    x1[k] = x0[k] + 1e5 * rng.standard_normal(x0[k].shape)
    depth = rng.integers(0, 30, (n, 3))
    lo = np.floor(rng.random((n, 3)) * 2.0 ** depth) / 2.0 ** depth
    hi = lo + 1.0 / 2.0 ** depth
    c = x0[:, :1]
    d0, d1 = x0 - c, x1 - c
    f = ccd._corner_values(kind == ccd.VERTEX_FACE, d0, d1, lo, hi)
    m_axis = np.maximum(np.abs(d0).max(axis=1), np.abs(d1).max(axis=1))
    err = ccd._ERR_REL * m_axis + ccd._ERR_ABS
    worst = 0.0
    rows = (0, 1, 2, 3)
    for i in range(n):
        p0 = [[Fr(v) for v in x0[i, r]] for r in rows]
        p1 = [[Fr(v) for v in x1[i, r]] for r in rows]
        for it, tt in enumerate((lo[i, 0], hi[i, 0])):
            t = Fr(tt)
            x = [[a + t * (b - a) for a, b in zip(p0[r], p1[r])] for r in rows]
            for iu, uu in enumerate((lo[i, 1], hi[i, 1])):
                for iw, ww in enumerate((lo[i, 2], hi[i, 2])):
                    u, w = Fr(uu), Fr(ww)
                    for k in range(3):
                        if kind == ccd.VERTEX_FACE:
                            exact = x[0][k] - x[1][k] - u * (x[2][k] - x[1][k]) - w * (x[3][k] - x[1][k])
                        else:
                            exact = x[0][k] - x[2][k] + u * (x[1][k] - x[0][k]) - w * (x[3][k] - x[2][k])
                        diff = abs(Fr(f[i, it, iu, iw, k]) - exact)
                        assert diff <= Fr(err[i, k]), f"corner value off by {float(diff)} > {err[i, k]}"
                        worst = max(worst, float(diff) / (2.0 ** -53 * m_axis[i, k]))
    assert 0 < worst < 38             # rounding happens, below the analysis bound 38 u
