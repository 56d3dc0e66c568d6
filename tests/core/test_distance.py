"""Triangle–triangle distances (`core.geometry.distance`, issue 42), judged by exact
rational arithmetic with another formulation: per candidate the exact minimum of its
quadratic (segment–segment: the critical point of the 2×2 normal equations when it lies
in the unit square, else the four end-point problems; point–triangle: the barycentric
solve of the Gram system when the triangle has an area, else its three edges), the
smallest of the 15, and its square root to 40 digits. Only pairs that
`core.triangles.triangles_intersect` calls disjoint are judged (for those the 15-candidate
minimum is the distance). Pure numpy; no bpy."""
from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction as F

import numpy as np
import pytest

from skin_collide.core.geometry.distance import CERT_REL_TOL, DIST_REL_TOL, pair_distances, triangle_pair_distances
from skin_collide.core.triangles import triangles_intersect

# -- the exact reference, one pair at a time (pure Python rationals) ---------------------


def _sub(p, q):
    return [p[0] - q[0], p[1] - q[1], p[2] - q[2]]


def _dot(p, q):
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


def _cross(u, v):
    return [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]


def _clamp(x):
    return min(max(x, F(0)), F(1))


def point_segment_sq(p, s0, s1):
    d = _sub(s1, s0)
    dd = _dot(d, d)
    w = _sub(p, s0)
    t = _clamp(_dot(w, d) / dd) if dd else F(0)
    v = [w[k] - t * d[k] for k in range(3)]
    return _dot(v, v)


def point_triangle_sq(p, tri):
    best = min(point_segment_sq(p, tri[i], tri[(i + 1) % 3]) for i in range(3))
    e1, e2, q = _sub(tri[1], tri[0]), _sub(tri[2], tri[0]), _sub(p, tri[0])
    a, b, c = _dot(e1, e1), _dot(e1, e2), _dot(e2, e2)
    det = a * c - b * b
    if det:
        r1, r2 = _dot(q, e1), _dot(q, e2)
        u = (r1 * c - r2 * b) / det
        v = (r2 * a - r1 * b) / det
        if u >= 0 and v >= 0 and u + v <= 1:
            w = [q[k] - u * e1[k] - v * e2[k] for k in range(3)]
            best = min(best, _dot(w, w))
    return best


def segment_segment_sq(p0, p1, q0, q1):
    best = min(point_segment_sq(p0, q0, q1), point_segment_sq(p1, q0, q1),
               point_segment_sq(q0, p0, p1), point_segment_sq(q1, p0, p1))
    d1, d2, r = _sub(p1, p0), _sub(q1, q0), _sub(p0, q0)
    a, e, b = _dot(d1, d1), _dot(d2, d2), _dot(d1, d2)
    c, f = _dot(d1, r), _dot(d2, r)
    det = a * e - b * b
    if det > 0:
        s = (b * f - c * e) / det
        t = (a * f - b * c) / det
        if 0 <= s <= 1 and 0 <= t <= 1:
            v = [r[k] + s * d1[k] - t * d2[k] for k in range(3)]
            best = min(best, _dot(v, v))
    return best


def exact_sq(a, b):
    """The exact squared distance of two disjoint triangles a, b (3×3 floats)."""
    A = [[F(float(x)) for x in p] for p in a]
    B = [[F(float(x)) for x in p] for p in b]
    c = [point_triangle_sq(p, B) for p in A] + [point_triangle_sq(p, A) for p in B]
    c += [segment_segment_sq(A[i], A[(i + 1) % 3], B[j], B[(j + 1) % 3])
          for i in range(3) for j in range(3)]
    return min(c)


def exact_sqrt(x: F) -> float:
    with localcontext() as ctx:
        ctx.prec = 40
        return float((Decimal(x.numerator) / Decimal(x.denominator)).sqrt())


# -- helpers -----------------------------------------------------------------------------


def as_arrays(pairs):
    """(V, 3) positions with one triangle per pair on each side: pos_a, tri, pos_b, tri."""
    a = np.array([p[0] for p in pairs], dtype=np.float64).reshape(-1, 3)
    b = np.array([p[1] for p in pairs], dtype=np.float64).reshape(-1, 3)
    tri = np.arange(a.shape[0]).reshape(-1, 3)
    return a, tri, b, tri


def intersecting(pairs):
    pos_a, tri, pos_b, _ = as_arrays(pairs)
    return triangles_intersect(*[pos_a[tri[:, i]] for i in range(3)],
                               *[pos_b[tri[:, i]] for i in range(3)])


def judge(pairs, rel=DIST_REL_TOL, hit=None):
    """Compare with the exact distance; returns the largest error / L seen. `hit`: which
    pairs intersect (by default `triangles_intersect` on them)."""
    pos_a, tri, pos_b, _ = as_arrays(pairs)
    k = np.arange(tri.shape[0])
    dist, pa, pb, scale, separated = pair_distances(pos_a, tri, k, pos_b, tri, k)
    hit = intersecting(pairs) if hit is None else hit
    assert (~hit).sum() >= 0.5 * hit.size, "the generator should make mostly disjoint pairs"
    worst = 0.0
    # Judged: the pairs the conservative intersection test calls disjoint, and those the
    # separation proof calls disjoint (it may prove pairs closer than that test's
    # touching tolerance).
    for m in np.flatnonzero(~hit | separated):
        a, b = pos_a[tri[m]], pos_b[tri[m]]
        ex = exact_sqrt(exact_sq(a, b))
        err = abs(dist[m] - ex)
        assert err <= rel * scale[m], (m, dist[m], ex, scale[m])
        if separated[m]:
            assert ex > 0 and err <= 2 * CERT_REL_TOL * scale[m]
        worst = max(worst, err / scale[m])
        # The points lie on their triangles and are dist apart (up to the rounding of the
        # global coordinates they are written in).
        slack = rel * scale[m] + 8 * np.spacing(np.abs(np.concatenate([pa[m], pb[m]])).max())
        A = [[F(float(x)) for x in p] for p in a]
        B = [[F(float(x)) for x in p] for p in b]
        assert exact_sqrt(point_triangle_sq([F(float(x)) for x in pa[m]], A)) <= slack
        assert exact_sqrt(point_triangle_sq([F(float(x)) for x in pb[m]], B)) <= slack
        gap = _sub([F(float(x)) for x in pa[m]], [F(float(x)) for x in pb[m]])
        assert abs(exact_sqrt(_dot(gap, gap)) - dist[m]) <= 2 * slack
    return worst


def rotation(rng):
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.diag(r))


# -- generators --------------------------------------------------------------------------


def random_pairs(rng, n):
    return [(rng.random((3, 3)), rng.random((3, 3))) for _ in range(n)]


def close_pairs(rng, n):
    """B near A: A's plane offset by a small gap, moved sideways and turned a little."""
    out = []
    for _ in range(n):
        a = rng.random((3, 3))
        nrm = np.cross(a[1] - a[0], a[2] - a[0])
        nrm /= np.linalg.norm(nrm)
        gap = 10.0 ** rng.uniform(-8, -1)
        b = a + gap * nrm + rng.normal(scale=0.3, size=3)
        b = (b - b.mean(0)) @ rotation(rng).T * 0.0 + b if rng.random() < 0.3 else b
        out.append((a, b))
    return out


def near_parallel_edges(rng):
    """Two edges at angles down to 1e-15 and gaps down to 1e-12, the third corners turned
    away so that the edges hold the closest pair; every configuration rotated and
    offset at random (the reference uses the rounded float64 corners)."""
    out = []
    for ang in (1e-2, 1e-5, 1e-8, 1e-10, 1e-12, 1e-14, 1e-15, 0.0):
        for gap in (1e-1, 1e-4, 1e-8, 1e-12):
            for shift in (0.0, 0.37, 0.9, 1.3):
                a = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.4, -1.0, 0.2]])
                b = np.array([[shift, gap, 0.0], [shift + 1.0, gap + ang, ang * 0.3],
                              [shift + 0.5, gap + 1.0, -0.3]])
                rot = rotation(rng)
                off = rng.normal(size=3)
                out.append((a @ rot.T + off, b @ rot.T + off))
    return out


def parallel_faces(rng):
    """Coplanar-offset pairs: B is A turned in its plane and lifted by a gap (a whole
    region of closest pairs)."""
    out = []
    for gap in (1e-1, 1e-6, 1e-12):
        for _ in range(6):
            a = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.3, 0.8, 0.0]])
            c, s = np.cos(rng.uniform(0, 6.3)), np.sin(rng.uniform(0, 6.3))
            turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
            b = a @ turn.T + np.array([rng.uniform(-0.5, 0.5), rng.uniform(-0.5, 0.5), gap])
            rot = rotation(rng)
            out.append((a @ rot.T, b @ rot.T))
    return out


def degenerate_pairs(rng):
    """Collinear corners, repeated corners, points, slivers (caps and needles)."""
    segs = [np.array([[0.0, 0.0, 0.0], [2.0, 4.0, 6.0], [1.0, 2.0, 3.0]]),      # collinear
            np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [1.0, -1.0, 0.5]]),     # repeated
            np.array([[0.5, 0.5, 0.5]] * 3),                                     # a point
            np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 1e-9, 0.0]]),     # cap
            np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 1e-15, 1e-16]]),  # cap
            np.array([[0.0, 0.0, 0.0], [1.0, 1e-10, 0.0], [1.0, -1e-10, 0.0]]),  # needle
            np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [3.0, 0.0, 1e-300]])]   # collinear-ish
    out = []
    for s in segs:
        for _ in range(8):
            rot = rotation(rng)
            a = s @ rot.T + rng.normal(scale=0.1, size=3)
            other = segs[rng.integers(len(segs))] if rng.random() < 0.5 else rng.random((3, 3))
            b = other @ rotation(rng).T + rng.normal(scale=1.0, size=3)
            out.append((a, b) if rng.random() < 0.5 else (b, a))
    # A point right above a sliver's face, and an edge crossing over a cap's long edge.
    cap = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.5, 1e-9, 0.0]])
    out.append((cap, np.array([[0.5, 5e-10, 1e-3]] * 3)))
    out.append((cap, np.array([[0.5, -1.0, 1e-6], [0.5, 1.0, 1e-6], [0.5, 0.0, 2.0]])))
    return out


def sliver_faces(rng, n=120):
    """Points just above the faces of slivers (caps, needles) 1e-16 to 1e-2 wide: the
    vertex–face candidate must read the height across the sliver from the part of the
    point across its longest edge (a regression: the plain dot with h missed these)."""
    out = []
    for _ in range(n):
        w = 10 ** rng.uniform(-16, -2)
        kind = rng.integers(3)
        if kind == 0:                                                    # cap
            a = np.array([[0, 0, 0], [1, 0, 0], [rng.uniform(0, 1), w, w * rng.normal()]])
        elif kind == 1:                                                  # needle
            a = np.array([[0, 0, 0], [1, w, 0], [1, -w * rng.uniform(0, 1), w * rng.normal()]])
        else:
            a = np.array([[0, 0, 0], [1, 0, 0], [rng.uniform(-1, 2), w, w * rng.normal()]])
        p = np.array([rng.uniform(-0.1, 1.1), rng.uniform(-1, 1) * w * 3,
                      10 ** rng.uniform(-15, 0)])
        b = np.array([p, p + rng.normal(size=3) * 0.3 + [0, 0, 1],
                      p + rng.normal(size=3) * 0.3 + [0, 0, 1]])
        rot = rotation(rng)
        out.append((a @ rot.T, b @ rot.T))
    return out


def moved(pairs, offset=None, scale=1.0):
    off = np.zeros(3) if offset is None else np.asarray(offset, dtype=np.float64)
    return [(a * scale + off, b * scale + off) for a, b in pairs]


# -- tests -------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [random_pairs, close_pairs])
def test_random_and_close_pairs(make):
    rng = np.random.default_rng(1)
    assert judge(make(rng, 150)) <= 1e-14


def test_near_parallel_edges():
    worst = judge(near_parallel_edges(np.random.default_rng(2)))
    assert worst <= 1e-14          # well inside DIST_REL_TOL: no sqrt(u) loss when parallel


def test_parallel_faces():
    assert judge(parallel_faces(np.random.default_rng(3))) <= 1e-14


def test_degenerate_triangles():
    assert judge(degenerate_pairs(np.random.default_rng(4))) <= 1e-14


def test_points_over_slivers():
    assert judge(sliver_faces(np.random.default_rng(9))) <= 1e-14


@pytest.mark.parametrize("offset", [(1000.0, -1000.0, 500.0), (-1234.5678, 987.125, 1000.5)])
def test_one_kilometre_from_the_origin(offset):
    """Nothing depends on the distance from the origin: same error relative to the pair."""
    rng = np.random.default_rng(5)
    pairs = (close_pairs(rng, 40) + near_parallel_edges(rng)[::3] + degenerate_pairs(rng)[::3]
             + parallel_faces(rng)[::2])
    assert judge(moved(pairs, offset)) <= 1e-14


@pytest.mark.parametrize("scale", [1e-6, 1e6, 2.0 ** -520, 2.0 ** 500])
def test_tiny_and_huge_scales(scale):
    """Power-of-two scaling inside makes the squares safe at any scale of float64. Which
    pairs intersect is decided at scale 1 (the intersection test's determinants underflow
    at 2**-520; a power of two scales the pairs exactly, intersection is scale-free)."""
    rng = np.random.default_rng(6)
    pairs = close_pairs(rng, 30) + near_parallel_edges(rng)[::4] + degenerate_pairs(rng)[::4]
    hit = intersecting(pairs) if scale in (2.0 ** -520, 2.0 ** 500) else None
    assert judge(moved(pairs, scale=scale), hit=hit) <= 1e-14


def test_known_values():
    a = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    cases = [
        (a + [0.0, 0.0, 2.0], 2.0),                                  # stacked, face to face
        (np.array([[2.0, 0.0, 0.0], [3.0, 0.0, 0.0], [3.0, 1.0, 0.0]]), 1.0),  # coplanar
        (np.array([[0.5, -1.0, 1.0], [0.5, 1.0, 1.0], [0.5, 0.0, 5.0]]), 1.0),  # edge over face
        (np.array([[0.2, 0.2, -3.0]] * 3), 3.0),                     # a point under the face
        (np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0], [3.0, 3.0, 0.0]]), 0.5 ** 0.5),  # segment
    ]
    pos_b = np.concatenate([c for c, _ in cases])
    tri_b = np.arange(pos_b.shape[0]).reshape(-1, 3)
    k = np.arange(len(cases))
    dist, pa, pb = triangle_pair_distances(a, np.array([[0, 1, 2]]), np.zeros_like(k),
                                           pos_b, tri_b, k)
    np.testing.assert_allclose(dist, [v for _, v in cases], rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.linalg.norm(pa - pb, axis=1), dist, atol=1e-15)


def test_intersecting_pairs_are_not_zero():
    """The docstring's warning: a crossing pair's candidate minimum is positive."""
    a = np.array([[-10.0, -10.0, 0.0], [10.0, -10.0, 0.0], [0.0, 10.0, 0.0]])
    b = np.array([[0.0, 0.0, -1.0], [0.5, 0.0, 1.0], [-0.5, 0.2, 1.0]])   # pierces A
    dist, _, _ = triangle_pair_distances(a, [[0, 1, 2]], [0], b, [[0, 1, 2]], [0])
    assert triangles_intersect(a[:1], a[1:2], a[2:], b[:1], b[1:2], b[2:])[0]
    assert dist[0] == 1.0          # B's corners over A's face; the distance is 0


def test_crossing_pairs_are_never_proved_apart():
    """Random pairs that certainly cross (an edge of B through A's face, well inside):
    the separation proof never holds, whatever the candidate minimum says."""
    rng = np.random.default_rng(10)
    pairs = []
    for _ in range(300):
        a = rng.random((3, 3))
        nrm = np.cross(a[1] - a[0], a[2] - a[0])
        w = rng.dirichlet([2.0, 2.0, 2.0])
        x = w @ a                                          # a point inside A
        up = rng.uniform(0.01, 1.0) * nrm / np.linalg.norm(nrm)
        tilt = rng.normal(scale=0.3, size=3)
        b = np.array([x + up + tilt * 0.1, x - up - tilt * 0.1, x + rng.normal(size=3)])
        pairs.append((a, b))
    pos_a, tri, pos_b, _ = as_arrays(pairs)
    k = np.arange(tri.shape[0])
    r = pair_distances(pos_a, tri, k, pos_b, tri, k)
    assert intersecting(pairs).all() and not r.separated.any()


def test_upto_stops_at_far_pairs():
    """With `upto`, pairs proved farther keep the lower bound that proved it (above upto,
    below the distance); the others are as without."""
    rng = np.random.default_rng(11)
    pairs = close_pairs(rng, 200)
    pos_a, tri, pos_b, _ = as_arrays(pairs)
    k = np.arange(tri.shape[0])
    full = pair_distances(pos_a, tri, k, pos_b, tri, k)
    cut = pair_distances(pos_a, tri, k, pos_b, tri, k, upto=0.05)
    far = cut.dist != full.dist
    assert far.any() and (~far).any() and cut.separated[far].all()
    assert (cut.dist[far] > 0.05).all()
    assert (cut.dist[far] <= full.dist[far] + 2 * CERT_REL_TOL * cut.scale[far]).all()


def test_blocks_and_shapes():
    """Many pairs (several blocks) give the values of each pair alone; K = 0 works."""
    rng = np.random.default_rng(7)
    pos_a, pos_b = rng.random((300, 3)), rng.random((200, 3)) + 0.5
    tri_a = rng.integers(0, 300, size=(100, 3))
    tri_b = rng.integers(0, 200, size=(90, 3))
    ia = rng.integers(0, 100, size=10_000)
    ib = rng.integers(0, 90, size=10_000)
    dist, pa, pb = triangle_pair_distances(pos_a, tri_a, ia, pos_b, tri_b, ib)
    assert dist.shape == (10_000,) and pa.shape == pb.shape == (10_000, 3)
    for k in rng.integers(0, 10_000, size=20):
        one = triangle_pair_distances(pos_a, tri_a, ia[k:k + 1], pos_b, tri_b, ib[k:k + 1])
        assert one[0][0] == dist[k]
        assert (one[1][0] == pa[k]).all() and (one[2][0] == pb[k]).all()
    empty = triangle_pair_distances(pos_a, tri_a, [], pos_b, tri_b, [])
    assert empty[0].shape == (0,) and empty[1].shape == (0, 3)
