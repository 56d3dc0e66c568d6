"""The variational sphere-set fit (core/sphere_set/variational.py) on small procedural
shapes: every triangle inside its assigned ball (corners and dense surface samples),
determinism for a seed, E_r falling with the count, Esc (should_stop) ending the fit with a
valid cover."""
import numpy as np
import pytest

from skin_collide.core.procedural import fan_triangulate, tube_geometry
from skin_collide.core.sphere_set import SphereSet
from skin_collide.core.sphere_set.variational import cover_triangles, fit

FAST = dict(n_interior=600, n_surface=200, e_r_samples=20_000, max_iterations=10)


@pytest.fixture(scope="module")
def tube():
    v, faces = tube_geometry(rings=12, segments=12, length=2.0, radius=0.25)
    t, _ = fan_triangulate(faces)
    return v, t.astype(np.int64)


@pytest.fixture(scope="module")
def tube_fits(tube):
    v, t = tube
    return {n: fit(v, t, n, seed=0, **FAST) for n in (2, 5, 12)}


def surface_samples(v, t, n, rng):
    a, b, c = v[t[:, 0]], v[t[:, 1]], v[t[:, 2]]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    k = rng.choice(len(t), size=n, p=area / area.sum())
    u, w = np.sqrt(rng.random(n)), rng.random(n)
    return (1 - u)[:, None] * a[k] + (u * (1 - w))[:, None] * b[k] + (u * w)[:, None] * c[k], k


def assert_covers(s: SphereSet, v, t):
    ts = s.info["triangle_sphere"]
    assert ts.shape == (len(t),) and ts.dtype == np.int64
    # Every corner of every triangle is in the ball assigned to it (so the whole triangle).
    d = np.linalg.norm(v[t] - s.centers[ts][:, None, :], axis=2)
    assert np.all(d <= s.radii[ts][:, None])
    # Dense surface samples: each inside its triangle's ball, hence inside the union.
    p, k = surface_samples(v, t, 20_000, np.random.default_rng(5))
    assert np.all(np.linalg.norm(p - s.centers[ts[k]], axis=1) <= s.radii[ts[k]])


def test_every_triangle_is_inside_one_ball(tube, tube_fits):
    v, t = tube
    for n, s in tube_fits.items():
        assert s.centers.shape == (n, 3) and s.radii.shape == (n,)
        assert s.centers.dtype == np.float64 and s.radii.dtype == np.float64
        assert_covers(s, v, t)
        assert s.mesh_volume > 0 and s.outside_volume >= 0
        assert s.info["iterations"] >= 1 and s.info["teleports"] >= 0
        assert s.build_seconds > 0


def test_relative_outside_volume_falls_with_the_count(tube_fits):
    e = [tube_fits[n].relative_outside_volume for n in (2, 5, 12)]
    assert e[0] > e[1] > e[2], e


def test_same_seed_same_set(tube, tube_fits):
    v, t = tube
    again = fit(v, t, 5, seed=0, **FAST)
    np.testing.assert_array_equal(again.centers, tube_fits[5].centers)
    np.testing.assert_array_equal(again.radii, tube_fits[5].radii)
    np.testing.assert_array_equal(again.info["triangle_sphere"], tube_fits[5].info["triangle_sphere"])
    assert again.outside_volume == tube_fits[5].outside_volume


def test_esc_stops_with_a_valid_cover(tube):
    v, t = tube
    calls = []
    fractions = []

    def stop():
        calls.append(1)
        return len(calls) > 3

    s = fit(v, t, 6, seed=1, progress=fractions.append, should_stop=stop, **FAST)
    assert s.info["stopped"] is True
    assert len(calls) == 4  # polled until it said stop, then no more rounds
    assert_covers(s, v, t)
    assert fractions[0] == 0.0 and fractions[-1] == 1.0
    assert all(b >= a for a, b in zip(fractions, fractions[1:]))


def test_stopped_before_the_first_round_still_covers(tube):
    v, t = tube
    s = fit(v, t, 4, seed=0, should_stop=lambda: True, **FAST)
    assert s.info["stopped"] is True
    assert_covers(s, v, t)


def test_cover_triangles_grows_the_cheapest_ball():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [5, 0, 0], [6, 0, 0], [5, 1, 0]], float)
    t = np.array([[0, 1, 2], [3, 4, 5]])
    centres = np.array([[0.3, 0.3, 0.0], [5.3, 0.3, 0.0]])
    r, ts = cover_triangles(centres, np.array([0.1, 2.0]), v, t, shrink=False)
    np.testing.assert_array_equal(ts, [0, 1])
    assert r[1] == pytest.approx(2.0, rel=1e-8)  # already holds its triangle: unchanged
    assert r[0] >= np.linalg.norm(v[:3] - centres[0], axis=1).max()
    # The shrink pass: ball 1 only needs its own triangle's farthest corner.
    r, ts = cover_triangles(centres, np.array([0.1, 2.0]), v, t)
    np.testing.assert_array_equal(ts, [0, 1])
    for k in range(2):
        far = np.linalg.norm(v[t[k]] - centres[k], axis=1).max()
        assert far <= r[k] <= far * (1 + 1e-8) + 1e-11


def test_shrink_drops_a_ball_that_another_one_covers():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    t = np.array([[0, 1, 2]])
    centres = np.array([[0.3, 0.3, 0.0], [0.3, 0.3, 0.1]])
    r, ts = cover_triangles(centres, np.array([1.0, 3.0]), v, t)
    assert r[1] < 1e-9 and ts[0] == 0  # the big ball went first and gave its triangle away


def test_bad_input():
    v = np.zeros((3, 3))
    with pytest.raises(ValueError):
        fit(v, np.zeros((0, 3), np.int64), 4)
    with pytest.raises(ValueError):
        fit(v, np.array([[0, 1, 2]]), 0)


def test_open_and_flat_meshes():
    """A box without its top (not watertight) and a single triangle (no volume)."""
    from test_sphere_set_outside_volume import cube

    v, t = cube(1.0, open_top=True)
    s = fit(v, t, 4, seed=0, **FAST)
    assert_covers(s, v, t)
    assert s.mesh_volume > 0 and np.isfinite(s.outside_volume)
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    s = fit(v, np.array([[0, 1, 2]]), 3, seed=0, **FAST)
    assert_covers(s, v, np.array([[0, 1, 2]]))
