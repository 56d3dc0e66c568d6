"""Tests of core.bounds.balls: exact minimal enclosing balls and the quick ball of spheres."""
from __future__ import annotations

import ast
import sys
from itertools import combinations, permutations, product
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
try:
    from skin_collide.core.bounds import balls
except ImportError:  # not installed: import the package straight from the work tree
    sys.path.insert(0, str(ROOT))
    from core.bounds import balls

minimal_balls = balls.minimal_balls
minimal_ball = balls.minimal_ball
approx_balls_of_spheres = balls.approx_balls_of_spheres


# ---------------------------------------------------------------------------------------
# helpers

def brute_force_ball(points: np.ndarray) -> tuple[np.ndarray, float]:
    """Smallest enclosing ball by trying the circumcentre of every subset of <= 4 points.

    The optimal centre is the circumcentre of some affinely independent subset, and any
    centre needs at least the optimal radius to cover all points, so the best answer is the
    circumcentre whose farthest point is nearest; no containment tolerance is involved.
    Independent of the module: circumcentres come from the Gram system solved with
    np.linalg.solve, and (nearly) affinely dependent subsets are skipped.
    """
    pts = np.asarray(points, dtype=np.float64)
    best_c, best_r = None, np.inf
    for m in range(1, min(len(pts), 4) + 1):
        for sub in combinations(range(len(pts)), m):
            q = pts[list(sub)]
            if m == 1:
                c = q[0]
            else:
                a = q[1:] - q[0]
                gram = a @ a.T
                if np.linalg.cond(gram) > 1e12:
                    continue
                lam = np.linalg.solve(gram, 0.5 * np.einsum("ij,ij->i", a, a))
                c = q[0] + lam @ a
            r = float(np.linalg.norm(pts - c, axis=1).max())
            if r < best_r:
                best_c, best_r = c, r
    return best_c, best_r


def csr(sets: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Pack a list of (n_i, 3) arrays into points (P, 3) and seg_ptr (S + 1,)."""
    ptr = np.zeros(len(sets) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(s) for s in sets])
    return np.concatenate(sets).astype(np.float64), ptr


def assert_encloses(points: np.ndarray, center: np.ndarray, radius: float) -> None:
    dist = np.sqrt(np.einsum("ij,ij->i", points - center, points - center))
    assert np.all(dist <= radius), (dist.max() - radius) / max(radius, 1e-300)


def assert_optimal(points: np.ndarray, center: np.ndarray, radius: float) -> None:
    """Optimality certificate: the centre lies in the hull of the points on the sphere.

    Checked for the usual general-position case of 2..4 affinely independent boundary
    points, by solving for barycentric coordinates.
    """
    dist = np.linalg.norm(points - center, axis=1)
    on = points[dist >= radius * (1 - 1e-9)]
    on = np.unique(on, axis=0)
    assert 2 <= len(on) <= 4, len(on)
    a = (on[1:] - on[0]).T
    lam, *_ = np.linalg.lstsq(a, center - on[0], rcond=None)
    bary = np.concatenate([[1 - lam.sum()], lam])
    assert np.linalg.norm(on[0] + a @ lam - center) <= 1e-9 * radius
    assert np.all(bary >= -1e-9), bary


def sphere_points(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


# ---------------------------------------------------------------------------------------
# exactness against brute force

def random_small_set(rng: np.random.Generator) -> np.ndarray:
    n = int(rng.integers(1, 13))
    kind = rng.integers(0, 6)
    if kind == 0:
        pts = rng.uniform(-1, 1, (n, 3))
    elif kind == 1:
        pts = rng.normal(size=(n, 3)) * rng.uniform(0.1, 3, 3)
    elif kind == 2:  # cospherical
        pts = sphere_points(rng, n) * 2.5
    elif kind == 3:  # integer grid: many ties, collinear and coplanar subsets
        pts = rng.integers(0, 3, (n, 3)).astype(np.float64)
    elif kind == 4:  # coplanar, tilted
        pts = np.c_[rng.uniform(-1, 1, (n, 2)), np.zeros(n)] @ np.linalg.qr(rng.normal(size=(3, 3)))[0]
    else:  # duplicates
        base = rng.uniform(-1, 1, (max(1, n // 3), 3))
        pts = base[rng.integers(0, len(base), n)]
    return pts + rng.uniform(-10, 10, 3)


def test_matches_brute_force_on_small_random_sets():
    rng = np.random.default_rng(1234)
    sets = [random_small_set(rng) for _ in range(240)]
    points, ptr = csr(sets)
    centers, radii = minimal_balls(points, ptr)
    assert centers.shape == (len(sets), 3) and centers.dtype == np.float64
    assert radii.shape == (len(sets),) and radii.dtype == np.float64
    for s, pts in enumerate(sets):
        _, r_ref = brute_force_ball(pts)
        assert radii[s] == pytest.approx(r_ref, rel=1e-9, abs=1e-12), s
        assert_encloses(pts, centers[s], radii[s])


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_per_set(seed):
    rng = np.random.default_rng(seed)
    for _ in range(10):
        pts = random_small_set(rng)
        c, r = minimal_ball(pts)
        c_ref, r_ref = brute_force_ball(pts)
        assert isinstance(r, float)
        assert r == pytest.approx(r_ref, rel=1e-9, abs=1e-12)
        if r_ref > 0:
            assert np.linalg.norm(c - c_ref) <= 1e-6 * r_ref
        assert_encloses(pts, c, r)


# ---------------------------------------------------------------------------------------
# degenerate and special inputs

@pytest.mark.parametrize("radius,offset", [(1.0, 0.0), (1e-3, 1e4), (1e4, -3e3), (1e-3, 0.0)])
def test_points_on_a_sphere(radius, offset):
    rng = np.random.default_rng(7)
    center = np.array([offset, -0.5 * offset, 0.25 * offset])
    pts = center + radius * sphere_points(rng, 200)
    c, r = minimal_ball(pts)
    # Coordinates near `offset` carry absolute rounding of ~eps * |offset|.
    tol = 1e-12 + 1e-14 * abs(offset) / radius
    assert r == pytest.approx(radius, rel=tol)
    assert np.linalg.norm(c - center) <= tol * radius * 10
    assert_encloses(pts, c, r)


@pytest.mark.parametrize("side,offset", [(1.0, 0.0), (2e-3, 5e3), (1e4, 1e4)])
def test_cube_corners(side, offset):
    corners = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float)
    rng = np.random.default_rng(3)
    for _ in range(4):
        pts = offset + side * corners[rng.permutation(8)]
        c, r = minimal_ball(pts)
        assert r == pytest.approx(side * np.sqrt(3) / 2, rel=1e-10)
        assert np.allclose(c, offset + side * 0.5, rtol=0, atol=1e-10 * side)
        assert_encloses(pts, c, r)


def test_single_point_and_duplicates():
    p = np.array([[1.5, -2.0, 3.25]])
    c, r = minimal_ball(p)
    assert r == 0.0 and np.array_equal(c, p[0])
    c, r = minimal_ball(np.repeat(p, 17, axis=0))
    assert r == 0.0 and np.array_equal(c, p[0])
    # Many copies of two points: the ball on the segment between them.
    q = np.array([[1.5, 2.0, 3.25]])
    pts = np.concatenate([np.repeat(p, 5, axis=0), np.repeat(q, 7, axis=0)])[np.random.default_rng(0).permutation(12)]
    c, r = minimal_ball(pts)
    assert r == pytest.approx(2.0, rel=1e-14)
    assert np.allclose(c, [1.5, 0.0, 3.25], atol=1e-14)


def test_two_points():
    a, b = np.array([1e4, 1e4, -1e4]), np.array([1e4 + 3e-3, 1e4 - 4e-3, -1e4])
    c, r = minimal_ball(np.array([a, b]))
    assert r == pytest.approx(2.5e-3, rel=1e-9)
    assert np.allclose(c, (a + b) / 2, rtol=0, atol=1e-12)


def test_collinear():
    rng = np.random.default_rng(11)
    direction = np.array([1.0, 2.0, -2.0]) / 3.0
    t = rng.uniform(-5, 7, 300)
    pts = np.array([4.0, 5.0, 6.0]) + t[:, None] * direction
    c, r = minimal_ball(pts)
    assert r == pytest.approx((t.max() - t.min()) / 2, rel=1e-12)
    assert np.allclose(c, np.array([4.0, 5.0, 6.0]) + (t.max() + t.min()) / 2 * direction, atol=1e-12)
    assert_encloses(pts, c, r)


def test_coplanar_regular_polygon_and_disk():
    # 12-gon with its circumcircle of radius 3 in a tilted plane, plus points inside it.
    rng = np.random.default_rng(5)
    basis = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    ang = np.arange(12) * (2 * np.pi / 12)
    ring = 3.0 * np.c_[np.cos(ang), np.sin(ang), np.zeros(12)]
    inner = np.c_[rng.uniform(-2, 2, (50, 2)), np.zeros(50)]
    center = np.array([10.0, -20.0, 30.0])
    pts = center + np.concatenate([inner, ring])[rng.permutation(62)] @ basis
    c, r = minimal_ball(pts)
    assert r == pytest.approx(3.0, rel=1e-12)
    assert np.allclose(c, center, atol=1e-11)
    assert_encloses(pts, c, r)


def test_exactly_cospherical_integer_points_match_brute_force():
    # Signed permutations of integer vectors lie exactly on one sphere: every subset ties.
    families = []
    for v in [(1, 2, 3), (0, 1, 2), (1, 1, 2), (0, 3, 4), (2, 3, 6)]:
        pts = {tuple(a * b for a, b in zip(perm, sign))
               for perm in permutations(v) for sign in product((-1, 1), repeat=3)}
        families.append(np.array(sorted(pts), dtype=np.float64))
    rng = np.random.default_rng(17)
    sets = []
    for _ in range(120):
        fam = families[rng.integers(len(families))]
        pts = fam[rng.choice(len(fam), int(rng.integers(3, min(len(fam), 10) + 1)), replace=False)]
        if rng.random() < 0.5:  # some interior points too
            pts = np.concatenate([pts, rng.integers(-1, 2, (3, 3)).astype(np.float64)])
        sets.append(pts)
    points, ptr = csr(sets)
    centers, radii = minimal_balls(points, ptr)
    for s, pts in enumerate(sets):
        _, r_ref = brute_force_ball(pts)
        assert radii[s] == pytest.approx(r_ref, rel=1e-9), s
        assert_encloses(pts, centers[s], radii[s])


@pytest.mark.parametrize("push", [1e-7, 1e-9])
def test_point_barely_outside_a_sphere_grows_the_ball(push):
    # Stopping early (a loose "inside" test) would leave the radius at about 1 + push.
    rng = np.random.default_rng(23)
    pts = sphere_points(rng, 9)
    pts[4] *= 1 + push
    c, r = minimal_ball(pts)
    _, r_ref = brute_force_ball(pts)
    assert r == pytest.approx(r_ref, rel=1e-12)
    assert r < 1 + push - 1e-3 * push
    assert_encloses(pts, c, r)


@pytest.mark.parametrize("scale,offset", [(1e-3, 1e4), (1e4, 0.0), (1e-3, -7.0)])
def test_scale_invariance(scale, offset):
    rng = np.random.default_rng(99)
    sets = [random_small_set(rng) for _ in range(60)]
    points, ptr = csr(sets)
    c0, r0 = minimal_balls(points, ptr)
    c1, r1 = minimal_balls(points * scale + offset, ptr)
    # Rounding of the shifted coordinates is ~eps * |offset| absolute.
    atol = 1e-12 * scale + 1e-14 * abs(offset) * 30
    assert np.allclose(r1, r0 * scale, rtol=1e-12, atol=atol)
    for s, pts in enumerate(sets):
        assert_encloses(pts * scale + offset, c1[s], r1[s])


def test_larger_sets_are_optimal_and_enclosing():
    rng = np.random.default_rng(42)
    sets = [rng.uniform(-1, 1, (2000, 3)), rng.normal(size=(5000, 3)) * [3.0, 1.0, 0.2],
            sphere_points(rng, 3000) * rng.uniform(0, 1, (3000, 1)) ** 0.1 + 4.0,
            rng.exponential(size=(1000, 3))]
    for pts in sets:
        c, r = minimal_ball(pts)
        assert_encloses(pts, c, r)
        assert_optimal(pts, c, r)


# ---------------------------------------------------------------------------------------
# batching

def test_batched_equals_per_set_with_uneven_sizes():
    rng = np.random.default_rng(2024)
    sizes = np.concatenate([[1, 2, 3, 4, 5000], rng.integers(1, 400, 35), [1, 5000, 1]])
    sets = []
    for i, n in enumerate(sizes):
        shape = rng.uniform(0.01, 5, 3)
        sets.append(rng.normal(size=(n, 3)) * shape + rng.uniform(-100, 100, 3))
        if i % 5 == 0:  # sprinkle duplicates
            sets[-1][: n // 2] = sets[-1][0]
    points, ptr = csr(sets)
    centers, radii = minimal_balls(points, ptr)
    for s, pts in enumerate(sets):
        c, r = minimal_ball(pts)
        assert r == pytest.approx(radii[s], rel=1e-12, abs=0)
        assert np.allclose(c, centers[s], rtol=0, atol=1e-9 * max(r, 1e-300))
        assert_encloses(pts, centers[s], radii[s])


def test_no_sets_and_bad_input():
    c, r = minimal_balls(np.zeros((0, 3)), np.array([0]))
    assert c.shape == (0, 3) and r.shape == (0,)
    with pytest.raises(ValueError):
        minimal_balls(np.zeros((3, 3)), np.array([0, 0, 3]))  # empty set
    with pytest.raises(ValueError):
        minimal_balls(np.zeros((3, 3)), np.array([0, 2]))  # does not cover all points
    with pytest.raises(ValueError):
        minimal_balls(np.zeros((3, 2)), np.array([0, 3]))
    with pytest.raises(ValueError):
        minimal_ball(np.zeros((0, 3)))


# ---------------------------------------------------------------------------------------
# approximate ball of spheres

def test_approx_balls_of_spheres_enclose_and_follow_the_rule():
    rng = np.random.default_rng(8)
    sizes = rng.integers(1, 40, 200)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    cen = rng.normal(size=(ptr[-1], 3)) * 5 + np.repeat(rng.uniform(-1e3, 1e3, (200, 3)), sizes, axis=0)
    rad = rng.uniform(0, 2, ptr[-1])
    bc, br = approx_balls_of_spheres(cen, rad, ptr)
    assert bc.shape == (200, 3) and br.shape == (200,)
    for g in range(200):
        c, r = cen[ptr[g]:ptr[g + 1]], rad[ptr[g]:ptr[g + 1]]
        mean = c.mean(axis=0)
        assert np.allclose(bc[g], mean, rtol=0, atol=1e-9)
        # Every sphere lies inside the group's ball, and one touches it.
        reach = np.linalg.norm(c - bc[g], axis=1) + r
        assert np.all(reach <= br[g] * (1 + 1e-14))
        assert reach.max() == pytest.approx(br[g], rel=1e-12)


def test_approx_ball_of_one_sphere_is_that_sphere():
    bc, br = approx_balls_of_spheres(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
                                     np.array([0.5, 0.0]), np.array([0, 1, 2]))
    assert np.array_equal(bc, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert np.array_equal(br, [0.5, 0.0])
    with pytest.raises(ValueError):
        approx_balls_of_spheres(np.zeros((2, 3)), np.zeros(3), np.array([0, 2]))


# ---------------------------------------------------------------------------------------

def test_module_needs_only_numpy():
    tree = ast.parse((ROOT / "core" / "bounds" / "balls.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert imported <= {"numpy", "itertools", "__future__"}, imported
