"""Tests for core.bounds.weight_bounds: per-node corner weight vectors (Kavan & Žára 2005, §4.1).

The reference is a plain brute force in exact rational arithmetic. Weights in the exact
comparisons are dyadic (multiples of 1/64 or 1/1024), so their float sums are exact and the
float code must reproduce the rational corner sets bit for bit, including the many degenerate
boxes (l == h, shared bounds) that coarse grids produce.

Run as a script for the timing benchmark:
    python tests/core/test_weight_bounds.py
"""
from __future__ import annotations

import itertools
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

try:
    from skin_collide.core.bounds.weight_bounds import NodeCorners, box_simplex_corners, node_corners
except ModuleNotFoundError:  # running from a plain checkout without the editable install
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from core.bounds.weight_bounds import NodeCorners, box_simplex_corners, node_corners


# -- reference implementations (deliberately plain loops) ----------------------------------


def brute_corners(lo, hi) -> set[tuple[Fraction, ...]]:
    """Exact corners of {lo ≤ w ≤ hi, Σw = 1}: feasible points with n−1 coordinates at a bound."""
    L = [Fraction(float(x)) for x in lo]
    H = [Fraction(float(x)) for x in hi]
    n = len(L)
    out = set()
    for k in range(n):
        others = [j for j in range(n) if j != k]
        for pattern in itertools.product((False, True), repeat=n - 1):
            w = [Fraction(0)] * n
            for j, up in zip(others, pattern):
                w[j] = H[j] if up else L[j]
            w[k] = 1 - sum(w[j] for j in others)
            if L[k] <= w[k] <= H[k]:
                out.add(tuple(w))
    return out


def as_float_set(corners) -> set[tuple[float, ...]]:
    return {tuple(float(x) for x in c) for c in corners}


def brute_node_corners(joints, weights, members) -> set[tuple[tuple[int, ...], tuple]]:
    """Exact (joint-set, corner) pairs of one node from its member vertex indices."""
    boxes: dict[tuple[int, ...], tuple[list, list]] = {}
    for v in members:
        js = tuple(int(j) for j in joints[v] if j >= 0)
        ws = [float(weights[v, k]) for k in range(len(js))]
        if js not in boxes:
            boxes[js] = (list(ws), list(ws))
        else:
            lo, hi = boxes[js]
            for k, x in enumerate(ws):
                lo[k] = min(lo[k], x)
                hi[k] = max(hi[k], x)
    out = set()
    for js, (lo, hi) in boxes.items():
        for c in as_float_set(brute_corners(lo, hi)):
            out.add((js, c))
    return out


def result_node_set(res: NodeCorners, i: int) -> set[tuple[tuple[int, ...], tuple]]:
    out = set()
    for r in range(res.ptr[i], res.ptr[i + 1]):
        n = int((res.joints[r] >= 0).sum())
        out.add((tuple(int(j) for j in res.joints[r, :n]),
                 tuple(float(x) for x in res.weights[r, :n])))
    return out


# -- input generators ------------------------------------------------------------------------


def dyadic_skin(rng, V, n_joints, K, denom=64, max_n=None):
    """Vertices with random joint-sets (sizes 1..max_n) and weights that are multiples of 1/denom."""
    max_n = K if max_n is None else max_n
    joints = np.full((V, K), -1, dtype=np.int32)
    weights = np.zeros((V, K))
    # Few distinct joint-sets, so many vertices share one and boxes get wide.
    palette = []
    for _ in range(max(3, n_joints)):
        n = int(rng.integers(1, max_n + 1))
        palette.append(np.sort(rng.choice(n_joints, size=n, replace=False)))
    for v in range(V):
        js = palette[int(rng.integers(len(palette)))]
        n = js.size
        cuts = np.sort(rng.choice(np.arange(1, denom), size=n - 1, replace=False))
        parts = np.diff(np.concatenate(([0], cuts, [denom])))
        joints[v, :n] = js
        weights[v, :n] = parts / denom
    return joints, weights


def ranges_to_csr(starts, ends):
    """CSR of contiguous vertex ranges [starts, ends)."""
    lens = (ends - starts).astype(np.int64)
    ptr = np.concatenate(([0], np.cumsum(lens))).astype(np.int64)
    verts = np.arange(ptr[-1], dtype=np.int64) - np.repeat(ptr[:-1] - starts, lens)
    return ptr, verts


def halving_ranges(n_items, leaf=1):
    """All ranges of a tree made by recursively halving [0, n_items) down to `leaf` items."""
    s_all, e_all = [], []
    s = np.array([0], dtype=np.int64)
    e = np.array([n_items], dtype=np.int64)
    while s.size:
        s_all.append(s)
        e_all.append(e)
        split = (e - s) > leaf
        s, e = s[split], e[split]
        mid = (s + e) // 2
        s, e = np.concatenate([s, mid]), np.concatenate([mid, e])
    return np.concatenate(s_all), np.concatenate(e_all)


def smooth_skin(rng, V, n_joints=30, K=4, sigma=0.08, keep=0.02):
    """A realistic rig: vertices on a surface patch in Morton order, joint weights from a
    smooth field (Gaussian falloff around joint centres plus low-frequency modulation), top-K
    influences above `keep` of the largest, normalized."""
    uv = rng.random((V, 2))
    q = (uv * 1023).astype(np.int64)
    code = np.zeros(V, dtype=np.int64)
    for b in range(10):
        code |= ((q[:, 0] >> b) & 1) << (2 * b)
        code |= ((q[:, 1] >> b) & 1) << (2 * b + 1)
    uv = uv[np.argsort(code, kind="stable")]
    centers = rng.random((n_joints, 2))
    phase = rng.random((n_joints, 2)) * 2 * np.pi
    d2 = ((uv[:, None, :] - centers[None]) ** 2).sum(-1)
    mod = 1.0 + 0.3 * np.sin(6 * uv[:, None, 0] + phase[None, :, 0]) \
        * np.cos(5 * uv[:, None, 1] + phase[None, :, 1])
    score = np.exp(-d2 / (2 * sigma ** 2)) * mod + 1e-300
    top = np.argsort(-score, axis=1)[:, :K]
    top_w = np.take_along_axis(score, top, axis=1)
    top_w = np.where(top_w >= keep * top_w[:, :1], top_w, 0.0)
    top = np.where(top_w > 0, top, np.iinfo(np.int32).max)
    o = np.argsort(top, axis=1)
    top = np.take_along_axis(top, o, axis=1)
    top_w = np.take_along_axis(top_w, o, axis=1)
    joints = np.where(top_w > 0, top, -1).astype(np.int32)
    weights = top_w / top_w.sum(axis=1, keepdims=True)
    return joints, weights


def vertex_tree(V):
    """Binary tree over vertices in Morton order: N ≈ 2V, M ≈ V·(depth+1)."""
    s, e = halving_ranges(V)
    return ranges_to_csr(s, e)


def triangle_tree(V):
    """Binary tree over F = 2V strip triangles (triangle t uses vertices t//2 .. t//2+2):
    N ≈ 4V nodes whose vertex sets are contiguous ranges."""
    F = 2 * V
    s, e = halving_ranges(F)
    return ranges_to_csr(s // 2, np.minimum(V, (e - 1) // 2 + 3))


# -- box_simplex_corners ---------------------------------------------------------------------


def _check_box_result(lo, hi, owner, corners):
    for g in range(lo.shape[0]):
        got = corners[owner == g]
        want = as_float_set(brute_corners(lo[g], hi[g]))
        assert {tuple(r) for r in got.tolist()} == want, (g, lo[g], hi[g])
        assert len(got) == len(want)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_box_corners_match_bruteforce_dyadic(n):
    rng = np.random.default_rng(n)
    G = 150
    lo = np.empty((G, n))
    hi = np.empty((G, n))
    for g in range(G):
        cnt = int(rng.integers(1, 6))
        pts = np.stack([np.diff(np.concatenate(
            ([0], np.sort(rng.choice(np.arange(1, 64), n - 1, replace=False)), [64]))) / 64
            for _ in range(cnt)])
        lo[g], hi[g] = pts.min(0), pts.max(0)
    owner, corners = box_simplex_corners(lo, hi)
    assert np.all(np.diff(owner) >= 0)
    _check_box_result(lo, hi, owner, corners)


def test_box_corners_large_n_chunked():
    rng = np.random.default_rng(7)
    n, G = 10, 6
    lo = np.empty((G, n))
    hi = np.empty((G, n))
    for g in range(G):
        pts = np.stack([np.diff(np.concatenate(
            ([0], np.sort(rng.choice(np.arange(1, 1024), n - 1, replace=False)), [1024])))
            / 1024 for _ in range(int(rng.integers(2, 8)))])
        lo[g], hi[g] = pts.min(0), pts.max(0)
    # 5 candidates' worth of elements per chunk forces one box per chunk.
    owner, corners = box_simplex_corners(lo, hi, chunk_elems=5)
    owner2, corners2 = box_simplex_corners(lo, hi)
    np.testing.assert_array_equal(owner, owner2)
    np.testing.assert_array_equal(corners, corners2)
    _check_box_result(lo, hi, owner, corners)


def test_box_corners_n12_full_simplex_and_soundness():
    n = 12
    owner, corners = box_simplex_corners(np.zeros((1, n)), np.ones((1, n)))
    # The whole simplex: its corners are the unit vectors.
    np.testing.assert_array_equal(np.sort(corners, axis=0)[::-1][:, ::-1].sum(0), np.ones(n))
    assert {tuple(r) for r in corners.tolist()} == {tuple(r) for r in np.eye(n).tolist()}
    rng = np.random.default_rng(12)
    pts = rng.dirichlet(np.ones(n), size=40)
    owner, corners = box_simplex_corners(pts.min(0)[None], pts.max(0)[None], chunk_elems=4096)
    _assert_support_covers(pts, corners, rng)


def test_paper_examples():
    # Figure 2: two joints with <0.4, 0.6> each -> segment end points.
    _, c = box_simplex_corners([[0.4, 0.4]], [[0.6, 0.6]])
    assert {tuple(r) for r in c.tolist()} == {(0.6, 0.4), (0.4, 0.6)}
    # Figure 3: <0, 0.6>, <0, 1>, <0, 1> -> four corners R1..R4.
    _, c = box_simplex_corners([[0.0, 0.0, 0.0]], [[0.6, 1.0, 1.0]])
    got = {tuple(np.round(r, 12)) for r in c.tolist()}
    assert got == {(0.6, 0.4, 0.0), (0.6, 0.0, 0.4), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)}


def test_degenerate_boxes():
    # n = 1: the only weight is 1.
    owner, c = box_simplex_corners([[1.0], [1.0]], [[1.0], [1.0]])
    np.testing.assert_array_equal(owner, [0, 1])
    np.testing.assert_array_equal(c, [[1.0], [1.0]])
    # l == h with a float sum that is not exactly 1: still exactly one corner, the point.
    w = np.array([0.7, 0.2, 0.1])
    assert w.sum() != 1.0
    owner, c = box_simplex_corners(w[None], w[None])
    assert c.shape == (1, 3)
    assert abs(c.sum() - 1.0) <= 4e-16
    np.testing.assert_allclose(c[0], w, atol=1e-15)
    # Box that touches the simplex only at its upper corner h (Σh = 1).
    lo, hi = np.array([[0.0, 0.0, 0.0, 0.0]]), np.array([[0.25, 0.25, 0.25, 0.25]])
    _, c = box_simplex_corners(lo, hi)
    np.testing.assert_array_equal(c, hi)
    # ... and at its lower corner l (Σl = 1).
    _, c = box_simplex_corners(np.array([[0.5, 0.25, 0.25]]), np.ones((1, 3)))
    np.testing.assert_array_equal(c, [[0.5, 0.25, 0.25]])
    # Some fixed coordinates (l == h) among free ones.
    lo, hi = np.array([[0.25, 0.0, 0.0, 0.125]]), np.array([[0.25, 0.5, 0.75, 0.125]])
    _, c = box_simplex_corners(lo, hi)
    assert {tuple(r) for r in c.tolist()} == as_float_set(brute_corners(lo[0], hi[0]))
    # A box far from the simplex has no corners; one that misses it by < tol is snapped on.
    owner, c = box_simplex_corners([[0.0, 0.0]], [[0.3, 0.3]])
    assert owner.size == 0
    # It cannot be both in the box and on the simplex; the sum wins, the box is kept to tol.
    owner, c = box_simplex_corners([[0.0, 0.0]], [[0.5, 0.5 - 1e-14]])
    assert owner.size == 1 and abs(c.sum() - 1) < 1e-15
    assert np.all(c <= np.array([0.5, 0.5 - 1e-14]) + 1e-12)


def test_box_corners_rejects_bad_input():
    with pytest.raises(ValueError):
        box_simplex_corners([[0.6, 0.0]], [[0.5, 1.0]])
    with pytest.raises(ValueError):
        box_simplex_corners(np.zeros((2, 0)), np.zeros((2, 0)))


# -- node_corners ----------------------------------------------------------------------------


def _random_tree_csr(rng, V):
    """A halving tree plus random non-contiguous nodes (with duplicates) and empty nodes."""
    s, e = halving_ranges(V, leaf=2)
    ptr, verts = ranges_to_csr(s, e)
    extra = [rng.choice(V, size=int(rng.integers(1, 40)), replace=True) for _ in range(30)]
    extra.insert(3, np.zeros(0, dtype=np.int64))
    extra.append(np.zeros(0, dtype=np.int64))
    lens = np.array([len(x) for x in extra])
    ptr = np.concatenate([ptr, ptr[-1] + np.cumsum(lens)]).astype(np.int64)
    verts = np.concatenate([verts] + [x.astype(np.int64) for x in extra])
    return ptr, verts


@pytest.mark.parametrize("seed,K,max_n,V,chunk", [
    (0, 4, 4, 240, None), (1, 4, 2, 240, None), (2, 6, 6, 240, None), (3, 3, 1, 240, None),
    (4, 4, 4, 240, 7),      # tiny chunks: interval and candidate loops run many blocks
    (5, 8, 8, 50, 300),     # large joint-sets, several boxes per candidate chunk
])
def test_node_corners_match_bruteforce(seed, K, max_n, V, chunk):
    rng = np.random.default_rng(seed)
    joints, weights = dyadic_skin(rng, V, n_joints=max(7, K + 1), K=K, max_n=max_n)
    ptr, verts = _random_tree_csr(rng, V)
    kw = {} if chunk is None else {"chunk_elems": chunk}
    res = node_corners(joints, weights, ptr, verts, **kw)
    N = ptr.size - 1
    assert res.ptr.shape == (N + 1,) and res.ptr.dtype == np.int64
    assert res.joints.dtype == np.int32 and res.weights.dtype == np.float64
    assert res.joints.shape == res.weights.shape == (res.ptr[-1], K)
    for i in range(N):
        members = verts[ptr[i]:ptr[i + 1]]
        want = brute_node_corners(joints, weights, members)
        got = result_node_set(res, i)
        assert got == want, i
        assert res.ptr[i + 1] - res.ptr[i] == len(want), i  # no duplicate rows
        assert res.sets_per_node[i] == len({tuple(joints[v]) for v in members})


def test_node_corners_invariants_and_groups():
    rng = np.random.default_rng(5)
    V = 3000
    joints, weights = smooth_skin(rng, V, n_joints=12, K=4)
    ptr, verts = triangle_tree(V)
    res = node_corners(joints, weights, ptr, verts)
    R = res.ptr[-1]
    valid = res.joints >= 0
    # -1 padding at the end, ascending joints, zero weight at padding.
    assert np.all(valid[:, :-1] | ~valid[:, 1:])
    assert np.all(~valid[:, 1:] | (res.joints[:, 1:] > res.joints[:, :-1]))
    assert np.all(res.weights[~valid] == 0)
    assert np.all(res.weights[valid] >= 0)
    np.testing.assert_allclose(res.weights.sum(1), 1.0, rtol=0, atol=1e-14)
    # Group CSR is consistent with the node CSR, and one joint-set per group.
    assert res.set_ptr[-1] == R
    assert np.all(np.diff(res.set_ptr) > 0)
    np.testing.assert_array_equal(np.bincount(res.group_node, minlength=ptr.size - 1),
                                  res.sets_per_node)
    first = res.set_ptr[:-1]
    gid = np.repeat(np.arange(first.size), np.diff(res.set_ptr))
    assert np.all(res.joints == res.joints[first][gid])
    np.testing.assert_array_equal(res.ptr[res.group_node] <= first, True)
    # Corners lie in their box: within [min, max] of the group's vertex weights.
    for i in rng.choice(ptr.size - 1, 200, replace=False):
        members = verts[ptr[i]:ptr[i + 1]]
        for r in range(res.ptr[i], res.ptr[i + 1]):
            same = np.all(joints[members] == res.joints[r], axis=1)
            mw = weights[members[same]]
            assert same.any()
            assert np.all(res.weights[r] >= mw.min(0) - 1e-15)
            assert np.all(res.weights[r] <= mw.max(0) + 1e-15)


def _assert_support_covers(points, corners, rng, n_dirs=400, atol=1e-12):
    """max over points of f·p ≤ max over corners of f·c for random and axis directions f."""
    n = points.shape[1]
    f = np.concatenate([rng.standard_normal((n_dirs, n)), np.eye(n), -np.eye(n)])
    assert np.all((points @ f.T).max(0) <= (corners @ f.T).max(0) + atol)


def test_soundness_generic_weights():
    """Every vertex weight lies in the hull of its (node, joint-set) corners.

    Checked with support functions over many directions in the global joint space, and
    exactly (interval / polygon containment) for joint-sets of size 2 and 3.
    """
    rng = np.random.default_rng(11)
    V = 1500
    J = 10
    joints, weights = smooth_skin(rng, V, n_joints=J, K=4, sigma=0.15)
    assert len({int((r >= 0).sum()) for r in joints}) >= 3
    ptr, verts = _random_tree_csr(rng, V)
    res = node_corners(joints, weights, ptr, verts)

    def dense(j, w):
        out = np.zeros((j.shape[0], J))
        for k in range(j.shape[1]):
            m = j[:, k] >= 0
            out[np.flatnonzero(m), j[m, k]] = w[m, k]
        return out

    f = np.concatenate([rng.standard_normal((300, J)), np.eye(J), -np.eye(J)])
    vproj = dense(joints, weights) @ f.T
    cproj = dense(res.joints, res.weights) @ f.T
    for i in range(ptr.size - 1):
        members = verts[ptr[i]:ptr[i + 1]]
        for r0, r1 in zip(res.set_ptr[:-1][res.group_node == i], res.set_ptr[1:][res.group_node == i]):
            js = res.joints[r0]
            same = members[np.all(joints[members] == js, axis=1)]
            assert same.size
            assert np.all(vproj[same].max(0) <= cproj[r0:r1].max(0) + 1e-12)
            n = int((js >= 0).sum())
            c = res.weights[r0:r1, :n]
            p = weights[same, :n]
            if n == 2:
                assert np.all(p[:, 0] >= c[:, 0].min() - 1e-12)
                assert np.all(p[:, 0] <= c[:, 0].max() + 1e-12)
            elif n == 3 and c.shape[0] >= 3:
                _assert_in_polygon(p[:, :2], c[:, :2])


def _assert_in_polygon(p, c):
    """Points p (m,2) inside the convex hull of c (k,2), by the sign of edge cross products."""
    ctr = c.mean(0)
    ang = np.arctan2(c[:, 1] - ctr[1], c[:, 0] - ctr[0])
    poly = c[np.argsort(ang)]
    nxt = np.roll(poly, -1, axis=0)
    edge = nxt - poly
    rel = p[:, None, :] - poly[None]
    cross = edge[None, :, 0] * rel[:, :, 1] - edge[None, :, 1] * rel[:, :, 0]
    assert np.all(cross >= -1e-12)


def test_float32_weights_are_renormalized():
    rng = np.random.default_rng(3)
    V = 800
    joints, weights = smooth_skin(rng, V, n_joints=8, K=4, sigma=0.2)
    w32 = weights.astype(np.float32).astype(np.float64)  # rows now sum to 1 ± ~1e-7
    ptr, verts = vertex_tree(V)
    res = node_corners(joints, w32, ptr, verts)
    np.testing.assert_allclose(res.weights.sum(1), 1.0, rtol=0, atol=1e-14)
    wn = w32 / w32.sum(1, keepdims=True)
    for i in range(0, ptr.size - 1, 7):
        members = verts[ptr[i]:ptr[i + 1]]
        for r0, r1 in zip(res.set_ptr[:-1][res.group_node == i], res.set_ptr[1:][res.group_node == i]):
            same = members[np.all(joints[members] == res.joints[r0], axis=1)]
            _assert_support_covers(wn[same], res.weights[r0:r1], rng, n_dirs=50)


def test_member_order_and_duplicates_do_not_matter():
    rng = np.random.default_rng(9)
    V = 400
    joints, weights = dyadic_skin(rng, V, n_joints=6, K=4)
    ptr, verts = vertex_tree(V)
    a = node_corners(joints, weights, ptr, verts)
    # Reverse every node's list and list each member twice.
    lens = np.diff(ptr)
    node = np.repeat(np.arange(lens.size), lens)
    rev = verts[np.lexsort((-np.arange(verts.size), node))]
    b = node_corners(joints, weights, 2 * ptr, np.repeat(rev, 2))
    np.testing.assert_array_equal(a.ptr, b.ptr)
    for i in range(0, lens.size, 5):
        assert result_node_set(a, i) == result_node_set(b, i)


def test_input_validation():
    joints = np.array([[0, 1], [1, -1]], dtype=np.int32)
    weights = np.array([[0.5, 0.5], [1.0, 0.0]])
    ptr = np.array([0, 2], dtype=np.int64)
    verts = np.array([0, 1], dtype=np.int64)
    node_corners(joints, weights, ptr, verts)
    with pytest.raises(ValueError):  # a referenced vertex without joints
        node_corners(np.array([[0, 1], [-1, -1]], dtype=np.int32), weights, ptr, verts)
    with pytest.raises(ValueError):  # descending joints
        node_corners(np.array([[1, 0], [1, -1]], dtype=np.int32), weights, ptr, verts)
    with pytest.raises(ValueError):  # padding before a joint
        node_corners(np.array([[-1, 0], [1, -1]], dtype=np.int32), weights, ptr, verts)
    with pytest.raises(ValueError):  # vertex index out of range
        node_corners(joints, weights, ptr, np.array([0, 2]))
    with pytest.raises(ValueError):  # ptr does not match verts
        node_corners(joints, weights, np.array([0, 3]), verts)
    # An unreferenced vertex without joints is fine; empty inputs give empty results.
    res = node_corners(np.array([[0, 1], [-1, -1]], dtype=np.int32), weights,
                       np.array([0, 1, 1]), np.array([0]))
    np.testing.assert_array_equal(res.ptr, [0, 1, 1])
    res = node_corners(joints, weights, np.zeros(4, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert res.ptr.tolist() == [0, 0, 0, 0] and res.joints.shape == (0, 2)


def test_realistic_tree_sizes_small():
    rng = np.random.default_rng(0)
    V = 2000
    joints, weights = smooth_skin(rng, V)
    ptr, verts = triangle_tree(V)
    res = node_corners(joints, weights, ptr, verts)
    # The root holds every vertex, so its sets are all distinct joint-sets.
    assert res.sets_per_node[0] == len({tuple(r) for r in joints.tolist()})
    assert np.all(res.corners_per_node >= res.sets_per_node)
    assert np.all(res.sets_per_node[np.diff(ptr) > 0] >= 1)


# -- entry_limit (issue 29: the refit keeps corners only for nodes under its limit) -----------


def _random_boxes(rng, G, n, V=12):
    """Boxes of random (not dyadic) weight vectors, as a node's vertices give them."""
    w = rng.dirichlet(np.ones(n) * 0.7, size=(G, V))
    w[:, :, int(rng.integers(n))] *= rng.uniform(0, 3)
    w /= w.sum(axis=2, keepdims=True)
    return w.min(axis=1), w.max(axis=1)


@pytest.mark.parametrize("n", [2, 3, 5, 7])
def test_interior_counts_bound_the_rows(n):
    """The lemma behind the pruning: the strictly interior candidates of any one free
    coordinate, and of all of them together, are rows `box_simplex_corners` returns."""
    from skin_collide.core.bounds.weight_bounds import _interior_counts
    rng = np.random.default_rng(n)
    lo, hi = _random_boxes(rng, 200, n)
    hi[:20, 0] = lo[:20, 0]                      # fixed coordinates (the `dup` patterns)
    owner, _ = box_simplex_corners(lo, hi)
    rows = np.bincount(owner, minlength=lo.shape[0])
    counts = np.stack([_interior_counts(lo, hi, k, chunk_elems=64) for k in range(n)])
    assert (counts <= rows).all() and (counts.sum(axis=0) <= rows).all()
    # Not vacuous (two joints: every corner of such a box sits at bounds, so none counts).
    assert counts.sum() > 0 or n == 2


@pytest.mark.parametrize("seed,K,dyadic", [(0, 6, True), (1, 8, False), (2, 4, False)])
def test_entry_limit_keeps_every_node_under_it_bit_for_bit(seed, K, dyadic):
    rng = np.random.default_rng(seed)
    V = 240
    if dyadic:
        joints, weights = dyadic_skin(rng, V, n_joints=K + 3, K=K)
    else:
        joints = np.full((V, K), -1, dtype=np.int32)
        weights = np.zeros((V, K))
        for v in range(V):
            n = int(rng.integers(1, K + 1))
            joints[v, :n] = np.sort(rng.choice(K + 3, n, replace=False))
            weights[v, :n] = rng.dirichlet(np.ones(n))
    ptr, verts = _random_tree_csr(rng, V)
    full = node_corners(joints, weights, ptr, verts)
    # Batches of any size give the same bits (the sums run in a fixed order).
    small = node_corners(joints, weights, ptr, verts, chunk_elems=37)
    assert full.weights.tobytes() == small.weights.tobytes()
    assert np.array_equal(full.ptr, small.ptr) and np.array_equal(full.joints, small.joints)
    N = ptr.size - 1
    rows = np.diff(full.ptr)
    row_node = np.repeat(np.arange(N), rows)
    entries = np.bincount(row_node, weights=(full.joints >= 0).sum(axis=1), minlength=N)
    pruned_any = False
    for limit in (0, 3, 12, 40, 64, 10**9):
        lim = node_corners(joints, weights, ptr, verts, entry_limit=limit, chunk_elems=37)
        for i in range(N):
            a = slice(full.ptr[i], full.ptr[i + 1])
            b = slice(lim.ptr[i], lim.ptr[i + 1])
            same = (full.joints[a].tobytes() == lim.joints[b].tobytes()
                    and full.weights[a].tobytes() == lim.weights[b].tobytes())
            if entries[i] <= limit:
                assert same, (limit, i)
            else:
                assert same or (b.stop == b.start and lim.sets_per_node[i] == 0), (limit, i)
                pruned_any |= b.stop == b.start and rows[i] > 0
        assert lim.set_ptr[-1] == lim.ptr[-1] and lim.group_node.size == lim.set_ptr.size - 1
    assert pruned_any                              # the limit did skip some nodes
