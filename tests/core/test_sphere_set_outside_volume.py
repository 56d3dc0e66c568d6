"""Outside volume of spheres (core/methods/sphere_set/outside_volume.py): the closed-form SOTV/SOV
against Monte Carlo on a cube, an icosphere and an open box; the winding number and the
mesh volume on a cube; the union outside volume estimator against a known answer."""
import numpy as np
import pytest

from skin_collide.core.methods.sphere_set import outside_volume as ov
from skin_collide.core.methods.sphere_set import union_volume


def cube(size: float = 1.0, open_top: bool = False):
    """Unit cube [0, size]^3, outward counter-clockwise triangles; without the +z face
    when open_top (a non-watertight mesh)."""
    v = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], float) * size
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    if open_top:
        quads = [q for q in quads if not all(v[i, 2] > 0 for i in q)]
    t = []
    for a, b, c, d in quads:
        t += [(a, b, c), (a, c, d)]
    return v, np.array(t)


def icosphere(subdiv: int = 2):
    """Unit icosphere with outward triangles."""
    p = (1 + 5 ** 0.5) / 2
    v = [(-1, p, 0), (1, p, 0), (-1, -p, 0), (1, -p, 0), (0, -1, p), (0, 1, p), (0, -1, -p),
         (0, 1, -p), (p, 0, -1), (p, 0, 1), (-p, 0, -1), (-p, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    v = [np.array(x, float) / np.linalg.norm(x) for x in v]
    for _ in range(subdiv):
        mid, nf = {}, []

        def m(i, j):
            k = (min(i, j), max(i, j))
            if k not in mid:
                x = v[i] + v[j]
                v.append(x / np.linalg.norm(x))
                mid[k] = len(v) - 1
            return mid[k]

        for a, b, c in f:
            ab, bc, ca = m(a, b), m(b, c), m(c, a)
            nf += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = nf
    return np.array(v), np.array(f)


def mc_outside(center, radius, inside_fn, rng, n=200_000):
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    p = center + d * radius * rng.random(n)[:, None] ** (1 / 3)
    frac = np.mean(~inside_fn(p))
    ball = 4 / 3 * np.pi * radius ** 3
    return frac * ball, ball * np.sqrt(frac * (1 - frac) / n)


def test_mesh_volume_and_winding_number_on_cube():
    v, t = cube(2.0)
    assert ov.mesh_volume(v, t) == pytest.approx(8.0, rel=1e-12)
    assert ov.mesh_volume(v + 1e3, t) == pytest.approx(8.0, rel=1e-9)
    pts = np.array([[1, 1, 1], [0.1, 1.9, 0.5], [3, 3, 3], [-0.1, 1, 1], [1, 1, 2.5]], float)
    w = ov.winding_number(pts, v, t)
    np.testing.assert_allclose(w, [1, 1, 0, 0, 0], atol=1e-12)
    m = ov.prepare_mesh(v, t)
    np.testing.assert_allclose(ov.fast_winding_number(pts, m), w, atol=0.06)


def test_fast_winding_number_matches_exact_on_icosphere():
    v, t = icosphere(3)
    rng = np.random.default_rng(0)
    pts = rng.uniform(-1.3, 1.3, (2000, 3))
    exact = ov.winding_number(pts, v, t)
    fast = ov.fast_winding_number(pts, ov.prepare_mesh(v, t))
    assert np.abs(fast - exact).max() < 0.06
    np.testing.assert_array_equal(fast > 0.5, exact > 0.5)
    inside = ov.classify_inside(pts, ov.prepare_mesh(v, t), 0.2)
    np.testing.assert_array_equal(inside, exact > 0.5)


def test_sotv_matches_the_papers_case_a_and_the_cap():
    o, r = np.zeros((1, 3)), np.ones(1)
    a, b, c = np.array([[0.3, 0.1, 0.4]]), np.array([[-0.2, 0.3, 0.4]]), np.array([[0.0, -0.3, 0.4]])
    vol, sign = ov.sotv(o, r, a, b, c)
    omega = abs(ov._solid_angles(o, a, b, c)[0])
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a))
    assert vol[0] == pytest.approx((omega - area * 0.4) / 3, rel=1e-12)  # (r^3 Ω - D h) / 3
    assert sign[0] == 1.0  # o behind the plane (normal +z)
    a, b, c = np.array([[5.0, -5, 0.4]]), np.array([[0.0, 5, 0.4]]), np.array([[-5.0, -5, 0.4]])
    vol, _ = ov.sotv(o, r, a, b, c)
    assert vol[0] == pytest.approx(np.pi * 0.6 ** 2 * 2.4 / 3, rel=1e-12)  # the cap
    far = np.array([[0.0, 0, 1.5]])
    assert ov.sotv(o, r, a + far - [0, 0, 0.4], b + far - [0, 0, 0.4], c + far - [0, 0, 0.4])[0][0] == 0


def convex_inside(v, t):
    """Exact interior of a convex mesh with outward triangles: behind every face plane."""
    a = v[t[:, 0]]
    n = np.cross(v[t[:, 1]] - a, v[t[:, 2]] - a)

    def inside(p):
        return np.all(p @ n.T < (a * n).sum(1)[None], axis=1)

    return inside


@pytest.mark.parametrize("shape", ["cube", "icosphere", "open_box"])
def test_sov_matches_monte_carlo(shape):
    rng = np.random.default_rng(1)
    if shape == "icosphere":
        v, t = icosphere(2)
        centers = rng.uniform(-1.2, 1.2, (10, 3))
        radii = rng.uniform(0.2, 1.0, 10)
        inside = convex_inside(v, t)
    else:
        v, t = cube(1.0, open_top=shape == "open_box")
        centers = rng.uniform(-0.3, 1.3, (10, 3))
        radii = rng.uniform(0.1, 0.8, 10)
        inside = convex_inside(*cube(1.0))
        if shape == "open_box":
            # Keep clear of the opening: there the "outside" of an open mesh is a matter
            # of convention (winding number vs crossings along rays from the centre).
            centers[:, 2] = rng.uniform(-0.3, 0.3, 10)
            radii = np.minimum(radii, 0.95 - centers[:, 2])

            def inside(p):  # the open box's interior by its own winding number
                return ov.winding_number(p, v, t) > 0.5

    m = ov.prepare_mesh(v, t)
    sov = ov.sphere_outside_volume(centers, radii, m)
    assert np.all(sov >= 0) and np.all(sov <= 4 / 3 * np.pi * radii ** 3 + 1e-12)
    if shape != "open_box":
        np.testing.assert_allclose(ov.sphere_outside_volume(centers, radii, m, inside="sign"), sov,
                                   atol=1e-12)
    for k in range(len(radii)):
        mc, se = mc_outside(centers[k], radii[k], inside, rng, n=100_000)
        assert abs(sov[k] - mc) <= 4 * se + 1e-9, (k, sov[k], mc, se)


def test_union_outside_volume_of_one_ball_around_a_cube():
    v, t = cube(1.0)
    # A ball of radius 1 at the cube's centre: the ball minus the part inside the cube.
    rng = np.random.default_rng(3)
    mc, _ = mc_outside(np.full(3, 0.5), 1.0, lambda p: np.all((p > 0) & (p < 1), axis=1), rng, 400_000)
    est, se = union_volume.union_outside_volume_estimate(np.full((1, 3), 0.5), np.ones(1), v, t, n_samples=60_000)
    assert se < 0.02
    assert est == pytest.approx(mc, abs=0.02)
    # Two identical balls: the union counts the shared volume once.
    two = union_volume.union_outside_volume(np.full((2, 3), 0.5), np.ones(2), v, t, n_samples=60_000)
    assert two == pytest.approx(est, abs=1e-12)


def _row_wise_pairs(centers, radii, mesh):
    """The (sphere, triangle) pairs as sphere_triangle_pairs found them before it read the
    mesh's columns: (M, 3) differences and their row sums."""
    def near(qi, level, node):
        cen, rad, _ = mesh.levels[level]
        d = cen[node] - centers[qi]
        return (d * d).sum(1) <= (rad[node] + radii[qi]) ** 2

    qi, leaf = ov._descend(mesh, centers, near)
    tri = mesh.leaf_tris[leaf]
    qq, tri = np.repeat(qi, tri.shape[1]), tri.reshape(-1)
    T = len(mesh.triangles)
    qq, tri = qq[tri < T], tri[tri < T]
    d = mesh.centroids[tri] - centers[qq]
    ok = mesh.valid[tri] & ((d * d).sum(1) < (radii[qq] + mesh.bound[tri]) ** 2)
    return qq[ok], tri[ok]


def _row_wise_signed_sotv(centers, radii, si, ti, mesh):
    """The signed SOTV as _signed_sotv computed it from gathered (M, 3) rows: the solid
    angles by _solid_angles and the cut triangles by the public sotv."""
    a, b, c, n = mesh.a[ti], mesh.b[ti], mesh.c[ti], mesh.normals[ti]
    o, r = centers[si], radii[si]
    hs = ((a - o) * n)[:, 0] + ((a - o) * n)[:, 1] + ((a - o) * n)[:, 2]
    full = np.all([((p - o) ** 2)[:, 0] + ((p - o) ** 2)[:, 1] + ((p - o) ** 2)[:, 2] <= r * r
                   for p in (a, b, c)], axis=0)
    w = np.zeros(len(si))
    f = full
    w[f] = (r[f] ** 3 * ov._solid_angles(o[f], a[f], b[f], c[f])
            - ov.mesh_area(mesh)[ti[f]] * hs[f]) / 3.0
    q = ~full & (np.abs(hs) < r)
    vol, sg = ov.sotv(o[q], r[q], a[q], b[q], c[q], n[q])
    w[q] = sg * vol
    return w


def test_sov_on_the_mesh_columns_is_bit_identical_to_the_row_wise_form():
    # The SOV reads contiguous per-triangle columns and reuses the pair tests' corner
    # differences (a speed-up, issue 43): every value must be the same float as before.
    v, t = icosphere(3)
    rng = np.random.default_rng(7)
    v = v * (1.0 + 0.2 * rng.random((len(v), 1))) + 1e3  # irregular, off the origin
    mesh = ov.prepare_mesh(v, t)
    centers = 1e3 + rng.uniform(-1.1, 1.1, (400, 3))
    radii = rng.uniform(0.05, 1.2, 400)
    si, ti = ov.sphere_triangle_pairs(centers, radii, mesh)
    rsi, rti = _row_wise_pairs(centers, radii, mesh)
    np.testing.assert_array_equal(si, rsi)
    np.testing.assert_array_equal(ti, rti)
    got = ov._signed_sotv(centers, radii, si, ti, mesh)
    want = _row_wise_signed_sotv(centers, radii, si, ti, mesh)
    assert np.count_nonzero(want) > 1000  # fully covered and cut triangles both
    assert np.array_equal(got, want)
