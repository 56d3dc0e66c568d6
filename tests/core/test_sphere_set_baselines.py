"""The simple sphere-set builders (core.methods.sphere_set.baselines): count, containment of every
rest triangle (vertices and dense surface samples), the triangle -> sphere map,
determinism."""
import numpy as np
import pytest

from skin_collide.core import procedural
from skin_collide.core.methods.sphere_set import baselines
from skin_collide.core.methods.sphere_set.types import SphereSet

BUILDERS = sorted(baselines.BUILDERS)


def surface_samples(v, t, per_tri, rng):
    """Random points on every triangle (per_tri each) with their triangle index."""
    T = t.shape[0]
    a, b = rng.random((2, T, per_tri))
    flip = a + b > 1
    a[flip], b[flip] = 1 - a[flip], 1 - b[flip]
    p = v[t]
    pts = (p[:, None, 0] + a[..., None] * (p[:, None, 1] - p[:, None, 0])
           + b[..., None] * (p[:, None, 2] - p[:, None, 0]))
    return pts.reshape(-1, 3), np.repeat(np.arange(T), per_tri)


def check_contains(s: SphereSet, v, t, rng):
    ts = s.info["triangle_sphere"]
    assert ts.shape == (t.shape[0],) and ts.dtype == np.int64
    assert ts.min() >= 0 and ts.max() < s.count
    # Every vertex of each triangle inside its own sphere (float64, with the ball margin).
    d = np.linalg.norm(v[t] - s.centers[ts][:, None], axis=2)
    assert (d <= s.radii[ts][:, None]).all()
    # Dense surface samples inside the union (in their triangle's sphere).
    pts, owner = surface_samples(v, t, 20, rng)
    d = np.linalg.norm(pts - s.centers[ts[owner]], axis=1)
    assert (d <= s.radii[ts[owner]] * (1 + 1e-12)).all()


@pytest.mark.parametrize("name", BUILDERS)
@pytest.mark.parametrize("count", [1, 7, 32, 64])
def test_count_and_containment(name, count):
    rig = procedural.tube_rig(rings=16, segments=12, n_bones=4)
    v, t = rig.rest_positions, rig.triangles
    s = baselines.BUILDERS[name](v, t, count)
    assert s.count == count
    assert np.isfinite(s.centers).all() and (s.radii > 0).all()
    # Every sphere holds a triangle.
    assert np.bincount(s.info["triangle_sphere"], minlength=count).min() > 0
    check_contains(s, v, t, np.random.default_rng(count))


@pytest.mark.parametrize("name", BUILDERS)
def test_more_spheres_than_triangles(name):
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    t = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3]])
    s = baselines.BUILDERS[name](v, t, 10)
    assert s.count == 3
    check_contains(s, v, t, np.random.default_rng(0))


@pytest.mark.parametrize("name", BUILDERS)
def test_deterministic_far_from_origin_and_tighter_with_more(name):
    rig = procedural.tube_rig(rings=20, segments=10, n_bones=3)
    v = rig.rest_positions + np.array([1e4, -2e4, 5e3])
    t = rig.triangles
    a = baselines.BUILDERS[name](v, t, 16)
    b = baselines.BUILDERS[name](v, t, 16)
    assert np.array_equal(a.centers, b.centers) and np.array_equal(a.radii, b.radii)
    check_contains(a, v, t, np.random.default_rng(1))
    # More spheres: a smaller largest sphere.
    c = baselines.BUILDERS[name](v, t, 64)
    assert c.radii.max() <= a.radii.max() * (1 + 1e-9)


@pytest.mark.parametrize("name", BUILDERS)
def test_coincident_centroids(name):
    """Triangles stacked on each other: no endless splitting, still `count` spheres."""
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    t = np.tile(np.array([[0, 1, 2]]), (9, 1))
    s = baselines.BUILDERS[name](v, t, 4)
    assert s.count == 4
    check_contains(s, v, t, np.random.default_rng(2))


def test_bad_input():
    v = np.zeros((3, 3))
    t = np.array([[0, 1, 2]])
    with pytest.raises(ValueError):
        baselines.top_down(v, t, 0)
    with pytest.raises(ValueError):
        baselines.grid_cover(v, np.array([[0, 1, 5]]), 2)
    with pytest.raises(ValueError):
        baselines.top_down(v, np.zeros((0, 3), int), 2)
