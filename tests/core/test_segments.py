"""Intersection segments of triangle pairs (`core.geometry.segments`, issue 28): hand-made
cases, and random pairs judged by exact rational arithmetic with another formula (the
line where the two planes meet, each triangle's interval on it). Pure numpy; no bpy."""
from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from skin_collide.core.geometry.segments import pair_segments, triangle_segments


def exact_length(a, b) -> float:
    """The length of the intersection of triangles a, b (3×3), in exact rationals: the
    intersection line of the two planes (direction D = nA × nB), each triangle's interval
    of D·x on it (Möller's formulation), their overlap over |D|. 0 for coplanar pairs and
    degenerate triangles (a plane is then not defined: the set is a point or lies in a
    plane)."""
    A = [[F(float(x)) for x in p] for p in a]
    B = [[F(float(x)) for x in p] for p in b]

    def sub(p, q):
        return [p[0] - q[0], p[1] - q[1], p[2] - q[2]]

    def cross(u, v):
        return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]

    def dot(u, v):
        return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]

    na, nb = cross(sub(A[1], A[0]), sub(A[2], A[0])), cross(sub(B[1], B[0]), sub(B[2], B[0]))
    D = cross(na, nb)
    if dot(D, D) == 0:
        return 0.0
    # Crossing, not touching: each has a corner behind the other's plane, and one on or
    # in front of it.
    for T, n, p0 in ((A, nb, B[0]), (B, na, A[0])):
        d = [dot(n, sub(v, p0)) for v in T]
        if not (min(d) < 0 <= max(d)):
            return 0.0

    def interval(T, n, p0):
        d = [dot(n, sub(v, p0)) for v in T]
        if all(x > 0 for x in d) or all(x < 0 for x in d):
            return None
        ts = [dot(D, T[i]) for i in range(3) if d[i] == 0]
        for i, j in ((0, 1), (1, 2), (2, 0)):
            if d[i] * d[j] < 0:
                s = d[i] / (d[i] - d[j])
                ts.append(dot(D, T[i]) + s * (dot(D, T[j]) - dot(D, T[i])))
        return min(ts), max(ts)

    ia, ib = interval(A, nb, B[0]), interval(B, na, A[0])
    if ia is None or ib is None:
        return 0.0
    lo, hi = max(ia[0], ib[0]), min(ia[1], ib[1])
    if hi <= lo:
        return 0.0
    return float(hi - lo) / math.sqrt(float(dot(D, D)))


def seg(a, b):
    p0, p1, ln = triangle_segments(np.array([a], float), np.array([b], float))
    return p0[0], p1[0], float(ln[0])


UP = [[0, 0, 0], [4, 0, 0], [0, 4, 0]]          # in z = 0


def test_crossing_has_its_segment():
    # A vertical triangle through the plane z = 0 along x = 1, y from 0.5 to 1.5.
    b = [[1, 0.5, -1], [1, 1.5, -1], [1, 1, 1]]
    p0, p1, ln = seg(UP, b)
    assert ln == pytest.approx(0.5, rel=1e-15)
    assert sorted([p0.tolist(), p1.tolist()]) == [[1, 0.75, 0], [1, 1.25, 0]]
    assert ln == pytest.approx(exact_length(UP, b), rel=1e-15)


def test_crossing_clipped_by_the_other_triangle():
    # A long vertical triangle whose cut runs beyond the big one: clipped at x + y = 4.
    b = [[-1, 1, -1], [9, 1, -1], [4, 1, 1]]
    p0, p1, ln = seg(UP, b)
    assert ln == pytest.approx(1.5, rel=1e-14)         # cut x 1.5..6.5 at y = 1, kept to 3
    assert ln == pytest.approx(exact_length(UP, b), rel=1e-14)
    assert seg(b, UP)[2] == pytest.approx(1.5, rel=1e-14)      # symmetric


def test_touching_at_a_point_has_zero_length():
    b = [[1, 1, 0], [1, 2, 3], [2, 1, 3]]       # one corner on the face
    p0, p1, ln = seg(UP, b)
    assert ln == 0.0 and np.allclose(p0, [1, 1, 0]) and np.allclose(p1, [1, 1, 0])
    c = [[4, 0, 0], [5, 0, 1], [5, 1, -1]]      # corner on corner
    assert seg(UP, c)[2] == 0.0


def test_along_an_edge():
    # An edge lying on the face, the rest in front of it (UP's normal is +z): touching.
    b = [[1, 1, 0], [2, 1, 0], [1.5, 1, 2]]
    assert seg(UP, b)[2] == 0.0 and seg(b, UP)[2] == 0.0
    # The same edge, the rest behind the face: it is inside, it crosses along the edge.
    c = [[2, 1, 0], [1, 1, 0], [1.5, 1, -2]]
    assert seg(UP, c)[2] == pytest.approx(1.0, rel=1e-15)
    assert exact_length(UP, c) == pytest.approx(1.0, rel=1e-15)
    d = [[9, 1, 0], [-1, 1, 0], [1, 1, -2]]     # behind, the edge running past the face
    assert seg(UP, d)[2] == pytest.approx(3.0, rel=1e-15)
    # A face crossing a flat quad exactly along its diagonal: counted once, by one of
    # the quad's two triangles.
    quad_a = [[0, 0, 0], [2, 0, 0], [2, 2, 0]]
    quad_b = [[0, 0, 0], [2, 2, 0], [0, 2, 0]]
    wall = [[-1, -1, -1], [3, 3, -1], [1, 1, 1]]
    la, lb = seg(quad_a, wall)[2], seg(quad_b, wall)[2]
    assert sorted([la, lb]) == pytest.approx([0.0, 2 * 2 ** 0.5], rel=1e-15)
    assert [exact_length(quad_a, wall), exact_length(quad_b, wall)] == \
        pytest.approx([la, lb], rel=1e-15)


def test_segmented_parts_touching_face_to_face_and_edge_to_face():
    """Two unit cubes stacked (outward normals), as a segmented mannequin's parts: every
    pair of their faces that meets only touches."""
    def cube(z0):
        v = np.array([[x, y, z0 + z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], float)
        quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2),
                 (1, 3, 7, 5)]
        return np.array([v[[q[0], q[k], q[k + 1]]] for q in quads for k in (1, 2)])
    lower, upper = cube(0.0), cube(1.0)
    a = np.repeat(lower, len(upper), axis=0)
    b = np.tile(upper, (len(lower), 1, 1))
    assert (triangle_segments(a, b)[2] == 0.0).all()
    # Pushed 1 cm into each other, they cross: a square of 4 m around each cube (the top
    # one's sides at z = 1, the bottom one's at z = 0.99), and the vertical corner edges
    # between them (8 × 1 cm, where two side faces of the shrunk cubes cross).
    b2 = b - [0, 0, 0.01]
    ln = triangle_segments(a, b2)[2]
    assert ln.sum() == pytest.approx(2 * 4.0 + 8 * 0.01, rel=1e-9)
    want = sum(exact_length(x, y) for x, y in zip(a, b2))
    assert ln.sum() == pytest.approx(want, rel=1e-12)


def test_coplanar_overlap_has_zero_length():
    b = [[1, 1, 0], [5, 1, 0], [1, 5, 0]]
    p0, p1, ln = seg(UP, b)
    assert ln == 0.0
    assert np.isfinite(p0).all()
    assert seg(UP, UP)[2] == 0.0                # identical triangles
    # Identical triangles whose normal rounds (not axis-aligned): still coplanar.
    rng = np.random.default_rng(3)
    t = rng.normal(size=(200, 3, 3)).astype(np.float32).astype(float)
    assert (triangle_segments(t, t)[2] == 0.0).all()
    assert (triangle_segments(t, t[:, [1, 2, 0]])[2] == 0.0).all()


def test_slivers_and_degenerate_triangles():
    # A needle (zero area: collinear corners) piercing the face: a point.
    needle = [[1, 1, -1], [1, 1, 1], [1, 1, 3]]
    assert seg(UP, needle)[2] == 0.0
    assert seg(needle, UP)[2] == 0.0
    # A sliver 1e-9 thick crossing the face: its segment, where the plane of the sliver
    # would be badly determined (the face gives the plane).
    sliver = [[0.5, 1, -1], [3.0, 1, 1], [0.5, 1 + 1e-9, -1]]
    for p, q in ((UP, sliver), (sliver, UP)):
        ln = seg(p, q)[2]
        assert ln == pytest.approx(exact_length(p, q), rel=1e-9)
        assert ln == pytest.approx(0.5e-9, rel=1e-6)    # the cut at z = 0: (1.75, 1, 0), 1/2 nm
    # Two degenerate triangles: length 0.
    assert seg(needle, [[0, 0, 0], [2, 2, 0], [4, 4, 0]])[2] == 0.0


def test_ten_km_from_the_origin():
    off = np.array([10_000.0, -10_000.0, 10_000.0], dtype=np.float32).astype(float)
    a = np.array(UP, float) * 0.01 + off        # 4 cm triangles 10 km out
    b = np.array([[1, 0.5, -1], [1, 1.5, -1], [1, 1, 1]], float) * 0.01 + off
    a, b = a.astype(np.float32).astype(float), b.astype(np.float32).astype(float)
    p0, p1, ln = seg(a, b)
    assert ln == pytest.approx(exact_length(a, b), rel=1e-9)
    assert ln == pytest.approx(0.005, rel=0.05)     # float32 there: a 1 mm grid
    assert np.allclose((p0 + p1) / 2, off + [0.01, 0.01, 0], atol=2e-3)


def _random_pairs(rng, n, scale=1.0, offset=0.0):
    """Pairs that mostly cross: b's corners around a point of a, float32 coordinates."""
    a = rng.normal(size=(n, 3, 3)) * scale
    w = rng.dirichlet([1, 1, 1], size=n)
    c = np.einsum("ki,kij->kj", w, a)
    b = c[:, None, :] + rng.normal(size=(n, 3, 3)) * scale
    a, b = a + offset, b + offset
    return a.astype(np.float32).astype(float), b.astype(np.float32).astype(float)


@pytest.mark.parametrize("scale, offset", [(1.0, 0.0), (0.01, 1000.0), (0.05, 10_000.0),
                                           (1e-4, 0.0)])
def test_random_pairs_against_exact_rationals(scale, offset):
    rng = np.random.default_rng(int(scale * 1e4) + int(offset))
    a, b = _random_pairs(rng, 300, scale, offset)
    p0, p1, ln = triangle_segments(a, b)
    want = np.array([exact_length(x, y) for x, y in zip(a, b)])
    assert (want > 0).sum() > 100                      # most pairs cross
    size = scale * 4
    assert np.allclose(ln, want, rtol=1e-9, atol=1e-12 * size)
    # End points are world coordinates: rounded to the ulps of the offset.
    assert np.allclose(np.linalg.norm(p1 - p0, axis=1), ln, rtol=1e-12,
                       atol=1e-12 * size + 1e-15 * offset)
    # The order of the pair does not matter.
    assert np.allclose(triangle_segments(b, a)[2], want, rtol=1e-9, atol=1e-12 * size)


def test_end_points_lie_on_both_triangles():
    rng = np.random.default_rng(7)
    a, b = _random_pairs(rng, 400)
    p0, p1, ln = triangle_segments(a, b)
    for T in (a, b):
        e1, e2 = T[:, 1] - T[:, 0], T[:, 2] - T[:, 0]
        n = np.cross(e1, e2)
        n /= np.linalg.norm(n, axis=1)[:, None]
        for p in (p0, p1):
            dist = np.abs(((p - T[:, 0]) * n).sum(1))
            assert (dist[ln > 0] < 1e-12 * 10).all()


def test_pair_segments_indexes_meshes():
    pos = np.array(UP + [[1, 0.5, -1], [1, 1.5, -1], [1, 1, 1]], float)
    tris = np.array([[0, 1, 2], [3, 4, 5]])
    ln = pair_segments(pos, tris, pos, tris, np.array([[0, 1], [1, 0]]))[2]
    assert ln == pytest.approx([0.5, 0.5])
    assert triangle_segments(np.zeros((0, 3, 3)), np.zeros((0, 3, 3)))[2].shape == (0,)
