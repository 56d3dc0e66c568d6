"""The variational sphere-set fit (core/methods/sphere_set/variational.py) on small procedural
shapes: every surface point inside the UNION of the balls (every vertex, and dense random
surface samples independent of and denser than the fit's own), `triangle_sphere` a valid
grouping, determinism for a seed, E_r falling with the count, Esc (should_stop) ending the
fit with a valid cover; the cover pass (`cover_surface`) on hand-made cases."""
import numpy as np
import pytest

from skin_collide.core.methods.sphere_set.types import SphereSet
from skin_collide.core.methods.sphere_set.variational import cover_surface, fit
from skin_collide.core.procedural import fan_triangulate, tube_geometry

FAST = dict(n_interior=600, n_surface=200, e_r_samples=20_000, max_iterations=10,
            union_surface=2000, union_outside=20_000, union_attempts=10)


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


def union_gap(s: SphereSet, p: np.ndarray) -> float:
    """max over points p of min over balls of |p - c| - r (<= 0: every point inside)."""
    d = np.linalg.norm(p[:, None, :] - s.centers[None], axis=2) - s.radii[None]
    return float(d.min(1).max())


def assert_covers(s: SphereSet, v, t, n=60_000):
    ts = s.info["triangle_sphere"]
    assert ts.shape == (len(t),) and ts.dtype == np.int64
    assert ts.min() >= 0 and ts.max() < s.count
    # Every vertex, every edge midpoint and dense random surface samples inside the union.
    # The samples are independent of the fit's (another generator, random barycentrics)
    # and denser than its leaf patches on these shapes.
    assert union_gap(s, v[np.unique(t)]) <= 0.0
    assert union_gap(s, 0.5 * (v[t] + v[np.roll(t, 1, axis=1)]).reshape(-1, 3)) <= 0.0
    p, _ = surface_samples(v, t, n, np.random.default_rng(5))
    assert union_gap(s, p) <= 0.0


def test_every_surface_point_is_inside_the_union(tube, tube_fits):
    v, t = tube
    for n, s in tube_fits.items():
        assert s.centers.shape == (n, 3) and s.radii.shape == (n,)
        assert s.centers.dtype == np.float64 and s.radii.dtype == np.float64
        assert_covers(s, v, t)
        assert s.mesh_volume > 0 and s.outside_volume >= 0
        assert s.info["iterations"] >= 1 and s.info["teleports"] >= 0
        assert s.build_seconds > 0


def test_union_coverage_with_a_coarse_cover_eps(tube):
    """With leaf samples 100x coarser than the default (eps = 2 % of the box diagonal),
    random test samples far denser than every leaf are still all inside: the coverage is
    proven (depth >= covering radius), not sampled."""
    v, t = tube
    s = fit(v, t, 5, seed=3, cover_eps=0.02, **FAST)
    assert s.info["cover"]["eps"] > 0.04
    assert_covers(s, v, t, n=200_000)


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


def test_cover_surface_closes_a_gap_between_two_balls():
    """Two balls holding the corners of a long thin triangle but not its middle: the cover
    grows one of them until the whole triangle is inside the union, at depth >= eps for
    the leaf samples, and the radii only grow where they must."""
    v = np.array([[0, 0, 0], [2, 0, 0], [1, 0.2, 0]], float)
    t = np.array([[0, 1, 2]])
    centres = np.array([[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [50.0, 0.0, 0.0]])
    radii = np.array([0.6, 0.6, 0.1])
    r, ts, st = cover_surface(centres, radii, v, t, 1e-3, shrink=False)
    assert np.all(r >= radii) and r[2] == pytest.approx(0.1, rel=1e-8)  # far ball untouched
    assert max(r[0], r[1]) > 0.6  # the middle was not covered
    s = SphereSet(centres, r)
    p, _ = surface_samples(v, t, 50_000, np.random.default_rng(1))
    assert union_gap(s, np.vstack([p, v, [[1, 0, 0], [1, 0.2, 0]]])) <= 0.0
    assert st["patches"] > 1 and st["levels"] > 1 and ts[0] in (0, 1)


def test_cover_surface_keeps_a_covering_set_and_shrinks():
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], float)
    t = np.array([[0, 1, 2]])
    centres = np.array([[0.3, 0.3, 0.0], [0.3, 0.3, 0.1]])
    r, ts, st = cover_surface(centres, np.array([1.0, 3.0]), v, t, 1e-3)
    # The big ball goes first (largest radius) and gives everything to the small one,
    # which then shrinks to what the triangle (one patch) needs: its farthest corner.
    need = np.linalg.norm(v - centres[0], axis=1).max()
    assert r[1] < 1e-9 and r[0] == pytest.approx(need, rel=1e-8) and ts[0] == 0
    assert st["patches"] == 1 and st["leaf_samples"] == 0


def test_cover_surface_leaf_holds_its_corners():
    """A small triangle (a leaf at once) outside a ball: the ball grows to its farthest
    corner (which is at most |g - c| + rho, the leaf sample g at depth rho)."""
    v = np.array([[1, 0, 0], [1.0005, 0, 0], [1, 0.0005, 0]], float)
    t = np.array([[0, 1, 2]])
    c = np.array([[0.0, 0.0, 0.0]])
    r, _, st = cover_surface(c, np.array([0.5]), v, t, 1e-3, shrink=False)
    far = np.linalg.norm(v, axis=1).max()
    g = v.mean(0)
    assert far <= r[0] <= np.linalg.norm(g) + np.linalg.norm(v - g, axis=1).max() + 1e-9
    assert st["leaf_samples"] == 1 and st["levels"] == 1


def test_relative_outside_volume_of_a_flat_mesh():
    assert np.isinf(SphereSet(np.zeros((1, 3)), np.ones(1), 1.0, 0.0).relative_outside_volume)
    assert np.isnan(SphereSet(np.zeros((1, 3)), np.ones(1), 0.0, 0.0).relative_outside_volume)
    assert SphereSet(np.zeros((1, 3)), np.ones(1), 1.0, 4.0).relative_outside_volume == 0.25


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
