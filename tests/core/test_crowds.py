"""Crowds (issue 13), core only: the object-level broad phase (core.query.broad_phase) and the one
traversal for all object pairs (core.query.multi) behind `scan.query_frame`.

* sort-and-sweep returns exactly the pairs of boxes that meet (touching included);
* crowds of strongly posed tube characters 1 km from the origin: `query_frame` equals
  brute force on every object pair (zero missed pairs), and the pairs of the old loop of
  one `traversal.collide` per object pair; objects that meet nobody get no volumes.
"""
import math

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core import triangles as tri_test
from skin_collide.core.hierarchy import traversal
from skin_collide.core.query import broad_phase
from skin_collide.core.rig import Pose


def brute_boxes(lo, hi):
    n = lo.shape[0]
    return [(i, j) for i in range(n) for j in range(i + 1, n)
            if np.all(lo[i] <= hi[i]) and np.all(lo[j] <= hi[j])
            and np.all(lo[i] <= hi[j]) and np.all(lo[j] <= hi[i])]


@pytest.mark.parametrize("seed", range(6))
def test_sweep_equals_all_pairs(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 60))
    # Coordinates on a coarse grid, so that touching faces and equal starts are common.
    lo = rng.integers(0, 12, size=(n, 3)).astype(float)
    hi = lo + rng.integers(0, 4, size=(n, 3))
    if n > 3:
        hi[0] = lo[0] - 1.0                 # an empty box meets nothing
    got = [tuple(p) for p in broad_phase.sweep_pairs(lo, hi).tolist()]
    assert got == brute_boxes(lo, hi)
    if n > 10:
        assert got                          # the case is not trivial


def test_boxes_enclose_positions():
    rng = np.random.default_rng(3)
    pos = [rng.normal(size=(k, 3)) * 1000.0 + 1e3 for k in (5, 1, 40)] + [np.zeros((0, 3))]
    lo, hi = broad_phase.position_boxes(pos)
    for p, a, b in zip(pos[:3], lo, hi):
        assert np.all(p >= a) and np.all(p <= b)
    assert [tuple(p) for p in broad_phase.sweep_pairs(lo, hi).tolist()] == brute_boxes(lo, hi)


@pytest.fixture(scope="module")
def tube():
    rig = procedural.tube_rig(rings=12, segments=8, n_bones=5)
    return rig, scan.prepare(rig)


def crowd(rig, n, spacing, seed, far=1000.0):
    """`n` tubes on a grid `spacing` apart, strong random poses, `far` metres out."""
    rng = np.random.default_rng(seed)
    side = int(math.ceil(math.sqrt(n)))
    poses, positions = [], []
    for k in range(n):
        p = procedural.random_pose(rig, rng, max_angle=math.radians(130), scale_range=(0.7, 1.4))
        t = np.eye(4)
        t[:3, 3] = np.array([k % side, k // side, 0.0]) * spacing + far - p.armature_world[:3, 3]
        p = Pose(p.deform, t @ p.armature_world, t @ p.mesh_world)
        poses.append(p)
        positions.append(skinning.lbs_rig(rig, p))
    return poses, positions


def per_pair_loop(objs, positions, poses, tris):
    """The old query: one traversal per object pair, every pair."""
    out = {}
    for i in range(len(objs)):
        for j in range(i + 1, len(objs)):
            va = scan.volumes(objs[i], positions[i], poses[i], "on-demand", tris[i])
            vb = scan.volumes(objs[j], positions[j], poses[j], "on-demand", tris[j])

            def test(ta, tb, i=i, j=j):
                return tri_test.triangle_pairs_intersect(positions[i], tris[i], ta,
                                                         positions[j], tris[j], tb)

            p, _ = traversal.collide(va, vb, test)
            if p.size:
                out[(i, j)] = {tuple(x) for x in p.tolist()}
    return out


def as_dict(res):
    return {(i, j): {tuple(x) for x in p.tolist()} for i, j, p in res.pairs if i != j}


@pytest.mark.parametrize("mode, box_max, method", [
    ("on-demand", None, "sphere-tree"), ("bottom-up", None, "sphere-tree"),
    ("on-demand", 0, "sphere-tree"), ("on-demand", 10**9, "sphere-tree"),
    ("on-demand", 0, "box-tree")])
def test_crowd_equals_brute_force_far_from_origin(tube, mode, box_max, method, monkeypatch):
    """Default split between the triangle-box pass and the traversal; all pairs through
    the traversal (0; box trees through their own whole-tree pass); all through the
    triangle-box pass (10**9)."""
    rig, obj = tube
    if method != "sphere-tree":
        obj = scan.prepare(rig, method)
    if box_max is not None:
        monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", box_max)
    seen = 0
    for n, spacing, seed in [(9, 1.0, 2), (12, 1.2, 2), (9, 1.6, 0)]:
        poses, positions = crowd(rig, n, spacing, seed)
        objs = [obj] * n
        res = scan.query_frame(objs, positions, poses, mode=mode)
        tris = res.triangles
        brute = {}
        for i in range(n):
            for j in range(i + 1, n):
                p = scan.brute_force_pairs(positions[i], tris[i], positions[j], tris[j])
                if p.size:
                    brute[(i, j)] = {tuple(x) for x in p.tolist()}
        assert as_dict(res) == brute
        seen += len(brute)
        if mode == "on-demand" and box_max is None and method == "sphere-tree":
            assert as_dict(res) == per_pair_loop(objs, positions, poses, tris)
    assert seen >= 15                     # crowds that really collide


def test_objects_meeting_nobody_get_no_volumes(tube, monkeypatch):
    rig, obj = tube
    monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", 0)          # every pair traverses
    monkeypatch.setattr(scan.between, "DEEP_SHARE", float("inf"))
    poses, positions = crowd(rig, 6, 1.6, seed=5)
    far = np.eye(4)
    far[:3, 3] = 50.0                       # object 5 stands alone
    poses[5] = Pose(poses[5].deform, far @ poses[5].armature_world, far @ poses[5].mesh_world)
    positions[5] = skinning.lbs_rig(rig, poses[5])
    asked = []
    real = scan.volumes
    monkeypatch.setattr(scan.between, "volumes", lambda o, pos, *a: asked.append(
        next(k for k, p in enumerate(positions) if p is pos)) or real(o, pos, *a))
    res = scan.query_frame([obj] * 6, positions, poses, self_collision=True)
    assert 5 not in asked and asked
    assert res.modes == ["sphere-tree"] * 6
    # Self-collision still runs for every object, the lonely one included.
    assert sum(1 for i, j, _ in res.pairs if i == j) >= 1
    assert not any(5 in (i, j) for i, j, _ in res.pairs if i != j)


def test_first_hit_in_crowds_is_a_true_subset(tube):
    rig, obj = tube
    poses, positions = crowd(rig, 9, 1.0, seed=2)
    full = scan.query_frame([obj] * 9, positions, poses)
    first = scan.query_frame([obj] * 9, positions, poses, first_hit=True)
    assert full.n_pairs > 0 and first.n_pairs > 0
    f, g = as_dict(full), as_dict(first)
    assert len(g) == 1 and all(g[k] <= f[k] for k in g)


@pytest.mark.parametrize("seed", range(4))
def test_triangle_box_pairing_equals_all_pairs(seed):
    """`sweep_two_sets` and `subdivide` (cells cut in two, on a coarse grid so that boxes
    touch and lie on cuts) keep exactly the box-meeting pairs of each group."""
    rng = np.random.default_rng(seed)
    T = 400
    tlo = rng.integers(0, 16, size=(T, 3)).astype(float)
    thi = tlo + rng.integers(0, 3, size=(T, 3))
    pa = rng.integers(0, 3, 150)
    ga = rng.integers(0, T, 150)
    pb = rng.integers(0, 3, 170)
    gb = rng.integers(0, T, 170)
    want = {(a, b) for p, a in zip(pa, ga) for q, b in zip(pb, gb)
            if p == q and np.all(tlo[a] <= thi[b]) and np.all(tlo[b] <= thi[a])}
    got = broad_phase.sweep_two_sets(pa, ga, pb, gb, tlo, thi)
    assert set(zip(*[x.tolist() for x in got])) == want and len(want) > 20
    glo = np.full((3, 3), 0.0)
    ghi = np.full((3, 3), 18.0)
    qa, qga, qb, qgb = broad_phase.subdivide(pa, ga, pb, gb, tlo, thi, glo, ghi, leaf=4)
    got = broad_phase.sweep_two_sets(qa, qga, qb, qgb, tlo, thi)
    assert set(zip(*[x.tolist() for x in got])) == want
    assert qa.max() > 3                      # cells were really cut


def _stacked(pos, tris):
    n = len(pos)
    tri_off = np.zeros(n + 1, np.int64)
    np.cumsum([t.shape[0] for t in tris], out=tri_off[1:])
    v_off = np.zeros(n + 1, np.int64)
    np.cumsum([p.shape[0] for p in pos], out=v_off[1:])
    T = np.concatenate([t.astype(np.int64) + o for t, o in zip(tris, v_off[:-1])])
    PT = np.ascontiguousarray(np.concatenate(pos).T)
    return tri_off, v_off, PT, T


@pytest.mark.parametrize("seed", range(4))
def test_box_filtered_pairs_one_pair_and_many_agree_with_brute_force(seed):
    """`box_filtered_pairs` (vertex outcodes, shrink rounds to their fixed point): on a
    coarse grid (boxes touching, corners on the intersection's faces), one object pair
    alone (its own path) and the same pair among others give the same pairs: exactly the
    triangle pairs whose boxes meet, each once; a pair whose boxes are apart gives none."""
    rng = np.random.default_rng(seed)
    pos = [rng.integers(0, 10, size=(60, 3)).astype(float) + o
           for o in ([0, 0, 0], [4, 3, 2], [40, 0, 0])]
    tris = [rng.integers(0, 60, size=(150, 3)).astype(np.int32) for _ in pos]
    tri_off, v_off, PT, T = _stacked(pos, tris)
    olo, ohi = broad_phase.position_boxes(pos)
    lo, hi = PT.T[T].min(axis=1), PT.T[T].max(axis=1)
    want = {(a, b) for a in range(tri_off[0], tri_off[1]) for b in range(tri_off[1], tri_off[2])
            if np.all(lo[a] <= hi[b]) and np.all(lo[b] <= hi[a])}
    assert len(want) > 20
    for pairs in (np.array([[0, 1]]), np.array([[0, 2], [0, 1], [1, 2]])):
        ta, tb, big, _, _ = broad_phase.box_filtered_pairs(pairs, tri_off, v_off, PT, T,
                                                           olo, ohi, 10**6)
        got = list(zip(ta.tolist(), tb.tolist()))
        assert len(got) == len(set(got)) and set(got) == want and not big.size
    # Over the limit: the pair goes to the traversal, with a box holding every contact.
    ta, tb, big, blo, bhi = broad_phase.box_filtered_pairs(np.array([[0, 1]]), tri_off, v_off,
                                                           PT, T, olo, ohi, 10)
    assert not ta.size and big.tolist() == [0]
    pts = [PT.T[T[g]] for g in {g for p in want for g in p}]
    assert all(np.all(blo[0] <= p.max(axis=0)) and np.all(p.min(axis=0) <= bhi[0]) for p in pts)
    none = broad_phase.box_filtered_pairs(np.zeros((0, 2), np.int64), tri_off, v_off, PT, T,
                                          olo, ohi, 10)
    assert all(x.size == 0 for x in none[:3])
    # Deep (issue 43): past the deep threshold the pair goes to its trees with the count
    # of triangles whose boxes meet the unshrunk intersection, and no list is made.
    ilo, ihi = np.maximum(olo[0], olo[1]), np.minimum(ohi[0], ohi[1])
    meets = np.all(lo <= ihi, axis=1) & np.all(ilo <= hi, axis=1)
    count = int(meets[tri_off[0]:tri_off[2]].sum())
    for share, deep in ((0.01, True), (1.0, False)):
        ta, tb, big, blo, bhi, kept = broad_phase.box_filtered_pairs(
            np.array([[0, 1]]), tri_off, v_off, PT, T, olo, ohi, 10**6, counts=True,
            deep_share=share, deep_min=1)
        assert big.tolist() == ([0] if deep else []) and (not ta.size) == deep
        if deep:
            assert kept.tolist() == [count] and np.array_equal(blo[0], ilo)
        else:
            assert set(zip(ta.tolist(), tb.tolist())) == want
