"""OBB trees with CAB (`obb`): every leaf box holds its deformed vertices, every parent its
children (all three updates), the separating-axis test never separates touching boxes,
the leaf-pair AABB filter keeps every overlapping pair, and two characters collide exactly
as brute force and the sphere tree say (core only; the shared assets in test_obb_assets)."""
import math

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning, triangles
from skin_collide.core.hierarchy import sweep, traversal
from skin_collide.core.methods import registry
from skin_collide.core.methods.base import Frame, Hierarchy
from skin_collide.core.methods.obb import update
from skin_collide.core.methods.obb.build import build
from skin_collide.core.rig import Pose


def branching_rig():
    """Two tubes (5 + 4 bones) whose skeletons share a root: a bone with two children,
    a few unweighted (static) vertices."""
    a = procedural.tube_rig(rings=12, segments=8, n_bones=5)
    b = procedural.tube_rig(rings=10, segments=8, n_bones=4, length=1.6)
    off = a.n_vertices
    rest_b = b.rest_positions @ np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0.0]]) + [0, 0, 0.4]
    bw = b.weight_bone + 5
    bparents = b.bone_parents + 5
    bparents[0] = 0
    brest = b.bone_rest.copy()
    brest[:, :3, :3] = np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0.0]]) @ brest[:, :3, :3]
    brest[:, :3, 3] = brest[:, :3, 3] @ np.array([[1, 0, 0], [0, 0, 1], [0, -1, 0.0]]).T + [0, 0, 0.4]
    ptr = np.concatenate([a.weight_ptr, a.weight_ptr[-1] + b.weight_ptr[1:]])
    value = np.concatenate([a.weight_value, b.weight_value])
    # The last ring of b: unweighted (the static joint's leaf).
    n_last = 8
    last = np.arange(b.n_vertices - n_last, b.n_vertices) + off
    wv = value.copy()
    for v in last:
        wv[ptr[v]:ptr[v + 1]] = 0.0
    keep = wv > 0
    vert = np.repeat(np.arange(off + b.n_vertices), np.diff(ptr))[keep]
    new_ptr = np.zeros(off + b.n_vertices + 1, np.int64)
    np.cumsum(np.bincount(vert, minlength=off + b.n_vertices), out=new_ptr[1:])
    from skin_collide.core.rig import Rig
    return Rig(name="branch", rest_positions=np.concatenate([a.rest_positions, rest_b]),
               triangles=np.concatenate([a.triangles, b.triangles + off]),
               tri_polygon=np.concatenate([a.tri_polygon, b.tri_polygon + a.tri_polygon.max() + 1]),
               weight_ptr=new_ptr,
               weight_bone=np.concatenate([a.weight_bone, bw])[keep],
               weight_value=wv[keep], bone_names=[f"b{i}" for i in range(9)],
               bone_parents=np.concatenate([a.bone_parents, bparents]),
               bone_rest=np.concatenate([a.bone_rest, brest]), bone_deform=np.ones(9, bool))


@pytest.fixture(scope="module")
def rig():
    return branching_rig()


def _strong_poses(rig, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield procedural.random_pose(rig, rng, max_angle=math.radians(170),
                                     scale_range=(0.5, 2.0))


def _inside(points, c, axes, ext, tol=1e-9):
    local = (points - c) @ axes.T
    return np.abs(local) <= ext + tol * (1 + np.abs(local))


def test_tree_follows_the_skeleton(rig):
    data = build(rig)
    h = data.hierarchy
    # Every triangle in exactly one leaf; a binary tree; leaves: bones with triangles + J.
    assert np.array_equal(np.sort(h.leaf_tris), np.arange(rig.n_triangles))
    assert set(np.unique(data.child_count)) <= {0, 2}
    assert rig.n_bones in data.leaf_bone.tolist()
    assert data.n_leaves == (data.first_child < 0).sum()


@pytest.mark.parametrize("how", update.UPDATES)
def test_every_box_holds_its_deformed_vertices(rig, how):
    """Leaf boxes (mean-weight bound on the LBS, 170° twists, scale 0.5-2) hold every
    deformed vertex of their leaf; every parent (CAB, covariance, AABB*) holds every vertex
    below it."""
    data = build(rig)
    h = data.hierarchy
    # Vertices below each node.
    N = h.n_nodes
    below = [None] * N
    for n in range(N - 1, -1, -1):
        if data.first_child[n] < 0:
            below[n] = np.unique(rig.triangles[h.leaf_tris[h.leaf_ptr[n]:h.leaf_ptr[n + 1]]])
        else:
            f = data.first_child[n]
            below[n] = np.union1d(below[f], below[f + 1])
    for pose in _strong_poses(rig, 8, 11):
        P = skinning.lbs_rig(rig, pose)
        leaf = update.leaf_boxes_lbs(data, pose)
        c, a, e = update.update_tree(data, leaf, pose, how)
        for n in range(N):
            assert _inside(P[below[n]], c[n], a[n], e[n]).all(), (how, n)
        # The unknown-pose fit (rest axes, evaluated vertices) holds them too.
        c2, a2, e2 = update.update_tree(data, update.leaf_boxes_from_positions(data, P),
                                        None, how)
        for n in range(N):
            assert _inside(P[below[n]], c2[n], a2[n], e2[n]).all()


def test_leaf_bound_is_not_trivially_huge(rig):
    """The leaf bound must be usable: at rest it is the rest box plus the float32 margin."""
    from skin_collide.core.rig import rest_pose
    data = build(rig)
    _, _, e = update.leaf_boxes_lbs(data, rest_pose(rig))
    assert np.all(e <= data.box_extent + 1e-3)


def test_sat_agrees_with_sampled_separation():
    """Random box pairs: SAT says disjoint only when they are (checked by the 15 axes
    computed independently, and by shared points); touching boxes (a shared face or edge,
    parallel edges) are never separated."""
    rng = np.random.default_rng(4)
    n = 4000
    ca = rng.normal(size=(n, 3))
    cb = ca + rng.normal(size=(n, 3)) * 1.5
    aa = procedural.random_rotation(rng, math.pi, n)
    ab = procedural.random_rotation(rng, math.pi, n)
    half = n // 4
    ab[:half] = aa[:half]                          # parallel edges
    ea = rng.uniform(0.1, 1.0, (n, 3))
    eb = rng.uniform(0.1, 1.0, (n, 3))
    got = update.obb_overlap(ca, aa, ea, cb, ab, eb)
    # Independent reference: min over candidate axes of the gap.
    def gap(k, axis):
        nrm = np.linalg.norm(axis)
        if nrm < 1e-9:
            return -np.inf
        axis = axis / nrm
        ra = np.abs(aa[k] @ axis) @ ea[k]
        rb = np.abs(ab[k] @ axis) @ eb[k]
        return abs((cb[k] - ca[k]) @ axis) - ra - rb
    for k in range(0, n, 7):
        axes = list(aa[k]) + list(ab[k]) + [np.cross(x, y) for x in aa[k] for y in ab[k]]
        g = max(gap(k, x) for x in axes)
        if g > 1e-6:
            assert not got[k]
        if g < -1e-6:
            assert got[k]
    # Touching: b placed face to face with a (shared face plane), and edge to edge.
    R = procedural.random_rotation(rng, math.pi, 200)
    e = rng.uniform(0.1, 1.0, (200, 3))
    c = rng.normal(size=(200, 3))
    shift = np.einsum("ni,nij->nj", np.stack([2 * e[:, 0], np.zeros(200), np.zeros(200)], 1), R)
    assert update.obb_overlap(c, R, e, c + shift, R, e).all()
    shift = np.einsum("ni,nij->nj", np.stack([2 * e[:, 0], 2 * e[:, 1], np.zeros(200)], 1), R)
    assert update.obb_overlap(c, R, e, c + shift, R, e).all()
    assert not update.obb_overlap(c, R, e, c + 1.001 * shift, R, e).any()


def test_sweep_and_grid_keep_exactly_the_overlapping_boxes():
    rng = np.random.default_rng(2)
    Ta, Tb = 300, 250
    lo_a = rng.uniform(-1, 1, (Ta, 3))
    hi_a = lo_a + rng.uniform(0, 0.3, (Ta, 3))
    lo_b = rng.uniform(-1, 1, (Tb, 3))
    hi_b = lo_b + rng.uniform(0, 0.3, (Tb, 3))
    hi_b[:20] = lo_b[:20]                            # degenerate (flat) boxes
    lo_a[:10, 0] = hi_b[:10, 0]                      # touching on x
    hi_a[:10, 0] = np.maximum(hi_a[:10, 0], lo_a[:10, 0])
    ha = Hierarchy(np.array([-1, -1, -1], np.int32), np.zeros(3, np.int32),
                   np.array([0, 100, 200, 300]), rng.permutation(Ta))
    hb = Hierarchy(np.array([-1, -1], np.int32), np.zeros(2, np.int32),
                   np.array([0, 120, 250]), rng.permutation(Tb))
    la, lb = np.array([0, 1, 2, 0, 2]), np.array([0, 1, 1, 1, 0])
    got_a, got_b = sweep.leaf_pair_candidates(ha, la, lo_a, hi_a, hb, lb, lo_b, hi_b)
    fa, fb = traversal.leaf_triangle_pairs(ha, la, hb, lb)
    meet = ((lo_a[fa] <= hi_b[fb]) & (lo_b[fb] <= hi_a[fa])).all(axis=1)
    want = sorted(zip(fa[meet].tolist(), fb[meet].tolist()))
    assert sorted(zip(got_a.tolist(), got_b.tolist())) == want
    assert len(want) > 50
    ga, ta = sweep.leaf_entries(ha, la)
    gb, tb = sweep.leaf_entries(hb, lb)
    for cell in (None, 0.05, 0.4, 5.0):
        got_a, got_b = sweep.grid_pairs(ga, ta, lo_a, hi_a, gb, tb, lo_b, hi_b, cell)
        assert sorted(zip(got_a.tolist(), got_b.tolist())) == want, cell


def _crossing_pair(rig, seed, n):
    """Pairs of strong poses, the second character moved onto the first."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        a = procedural.random_pose(rig, rng, max_angle=math.radians(170), scale_range=(0.5, 2.0))
        b = procedural.random_pose(rig, rng, max_angle=math.radians(170), scale_range=(0.5, 2.0))
        yield a, Pose(b.deform, a.armature_world, a.mesh_world)


@pytest.mark.parametrize("make", ["tube", "branch"])
def test_obb_equals_brute_force_and_the_sphere_tree(make):
    rig = procedural.tube_rig(rings=14, segments=10, n_bones=5) if make == "tube" else branching_rig()
    m = registry.get("obb")
    assert registry.resolve("obb", rig)[0] is m and not m.supports_self
    prepared = m.load(m.prepare(rig).arrays())
    st = registry.get("sphere-tree")
    st_prep = st.prepare(rig)
    tris = rig.triangles
    seen = filtered = cart = 0
    for pa, pb in _crossing_pair(rig, 7, 6):
        A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)

        def cross(ta, tb):              # the rule between objects (core.scan.exact)
            return (triangles.triangle_pairs_intersect(A, tris, ta, B, tris, tb)
                    & triangles.boxes_meet(A, tris[ta], B, tris[tb]))

        va = m.volumes(rig, prepared, Frame(A, tris, pa))
        vb = m.volumes(rig, prepared, Frame(B, tris, pb))
        got, stats = traversal.collide(va, vb, cross)
        want = scan.brute_force_pairs(A, tris, B, tris)
        sph, _ = traversal.collide(st.volumes(rig, st_prep, Frame(A, tris, pa)),
                                   st.volumes(rig, st_prep, Frame(B, tris, pb)), cross)
        g = {tuple(p) for p in got.tolist()}
        assert g == {tuple(p) for p in want.tolist()} == {tuple(p) for p in sph.tolist()}
        # The generic traversal without the fast path (per-chunk leaf-pair filter).
        slow, _ = traversal.collide(m.volumes(rig, prepared, Frame(A, tris, pa)), vb, cross,
                                    roots=(np.zeros(1, np.int64), np.zeros(1, np.int64)))
        assert {tuple(p) for p in slow.tolist()} == g
        # Unknown pose: the boxes fitted to the evaluated vertices give the same pairs.
        got2, _ = traversal.collide(m.volumes(rig, prepared, Frame(A, tris)),
                                    m.volumes(rig, prepared, Frame(B, tris)), cross)
        assert {tuple(p) for p in got2.tolist()} == g
        seen += len(want)
        filtered += stats.triangle_tests
        cart += va.cartesian
    assert seen > 30
    assert filtered < cart          # the AABB filter removes pairs


def test_obb_falls_back_for_preserve_volume(rig):
    rig.preserve_volume = True
    try:
        m, why = registry.resolve("obb", rig)
        assert m.id != "obb" and any("Preserve Volume" in w for w in why)
    finally:
        rig.preserve_volume = False


def test_chain_regions_from_the_skeleton():
    """Two tubes on one root bone: the root is the torso, each tube a limb, one chain;
    a single tube: torso = root, one limb, no chain. Every triangle has a region, a limb
    is a connected subtree hanging from the torso."""
    from skin_collide.core.methods.chains.regions import regions

    rig = branching_rig()
    r = regions(rig)
    assert r.n_limbs == 2 and r.chains.tolist() == [[1, 2]]
    assert r.bone_region[0] == 0 and set(r.bone_region[1:5]) == {1} and set(r.bone_region[5:9]) == {2}
    assert r.tri_region.shape == (rig.n_triangles,) and set(np.unique(r.tri_region)) <= {0, 1, 2}
    for k, root in enumerate(r.limb_root, start=1):
        assert r.bone_region[rig.bone_parents[root]] == 0
        members = np.nonzero(r.bone_region[:-1] == k)[0]
        for b in members:
            assert b == root or r.bone_region[rig.bone_parents[b]] == k
    single = regions(procedural.tube_rig(rings=10, segments=8, n_bones=4))
    assert single.n_limbs == 1 and single.chains.shape == (0, 2)


def test_chains_self_collision_equals_brute_force_on_covered_pairs():
    """Sphere chains on the branching rig in strong poses: every sphere encloses its
    region's evaluated vertices, and every intersecting pair whose spheres are
    non-adjacent on a chain is found, nothing else."""
    from skin_collide.core import welds
    from skin_collide.core.methods.chains import chains

    rig = branching_rig()
    data = chains.build(rig)
    assert data.uncovered.size == 0 and data.chain_ptr.size == 2
    keys = welds.vertex_weld_ids(rig)[rig.triangles]
    tris = rig.triangles
    seen = 0
    for pose in _strong_poses(rig, 6, 5):
        P = skinning.lbs_rig(rig, pose)
        c, r = chains.frame_spheres(data, P)
        seg = np.repeat(np.arange(data.n_spheres), np.diff(data.sphere_vert_ptr))
        assert (np.linalg.norm(P[data.sphere_verts] - c[seg], axis=1) <= r[seg] * (1 + 1e-12)).all()

        def test(ta, tb):
            far = ~welds.adjacent_pairs(keys, ta, tb)
            hit = np.zeros(ta.size, bool)
            hit[far] = triangles.triangle_pairs_intersect(P, tris, ta[far], P, tris, tb[far])
            return hit

        got, st = chains.self_pairs(data, P, tris, test)
        got1, st1 = chains.self_pairs(data, P, tris, test, mode="M1")
        assert np.array_equal(got, got1) and st1["sphere_tests"] >= st["sphere_tests"]
        want = scan.brute_force_pairs(P, tris, keys=keys)
        s = data.tri_sphere
        want = want[data.covered[s[want[:, 0]], s[want[:, 1]]]]
        assert {tuple(p) for p in got.tolist()} == {tuple(p) for p in want.tolist()}
        assert st["overlapping"] <= st["sphere_tests"]
        seen += len(want)
    assert seen > 10
