"""`core.scan.pairs`: the brute-force oracle the query paths are checked against."""
import numpy as np

from skin_collide.core import triangles as tri_test
from skin_collide.core.scan.pairs import brute_force_pairs


def _quads(dz: float):
    """Two overlapping unit quads, B `dz` above A in z."""
    z = 0.1
    up = z + dz if dz else np.nextafter(z, 1.0)
    a = np.array([[0, 0, z], [1, 0, z], [1, 1, z], [0, 1, z]], float)
    b = np.array([[.5, .5, up], [1.5, .5, up], [1.5, 1.5, up], [.5, 1.5, up]], float)
    t = np.array([[0, 1, 2], [0, 2, 3]])
    return a, t, b, t


def test_between_a_pair_counts_only_when_its_boxes_meet():
    """B one ulp above A: the triangle test's tolerance calls the quads touching, but
    their float64 boxes are apart (disjoint triangles), and every query path between
    objects says they do not intersect (`ExactTest`); the oracle must say the same. The
    same quads in one plane do intersect, for both."""
    a, ta, b, tb = _quads(0.0)
    ia, ib = np.meshgrid(np.arange(2), np.arange(2), indexing="ij")
    assert tri_test.triangle_pairs_intersect(a, ta, ia.ravel(), b, tb, ib.ravel()).any()
    assert brute_force_pairs(a, ta, b, tb).shape == (0, 2)
    flat = b.copy()
    flat[:, 2] = a[0, 2]
    got = brute_force_pairs(a, ta, flat, tb)
    assert got.shape[0] > 0
    assert got.tolist() == sorted(got.tolist())


def test_between_a_clear_crossing_is_found():
    """B tilted through A: pairs found, sorted, each truly crossing."""
    a, ta, b, tb = _quads(1e-3)
    b[[1, 2], 2] -= 0.2                 # B dips through A's plane
    got = brute_force_pairs(a, ta, b, tb)
    assert got.shape[0] > 0
    assert tri_test.triangle_pairs_intersect(a, ta, got[:, 0], b, tb, got[:, 1]).all()
