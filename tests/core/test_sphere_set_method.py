"""`sphere-set` (core.methods.sphere_set.method): the refitted spheres (leaves and inner nodes)
contain every deformed vertex of their polygons in strong random poses (170° twists,
bones scaled 0.5-2, 10 km from the origin; LBS and Preserve Volume); pairs between two
characters equal brute force and the sphere tree's; the set's own self traversal equals
the self tree; arrays and stored bytes round-trip; the shared Cesium Man crossing itself
(asset, pip bpy) equals the sphere tree."""
import math

import numpy as np
import pytest
from test_obb import _crossing_pair, branching_rig

from skin_collide.core import procedural, scan, skinning, triangles
from skin_collide.core.hierarchy import traversal
from skin_collide.core.methods import registry
from skin_collide.core.methods.base import Frame
from skin_collide.core.methods.sphere_set import method as ss
from skin_collide.core.rig import Pose
from skin_collide.core.scan.carry import object_self_pairs
from skin_collide.core.storage import persist

FAR = np.array([1e4, -7e3, 3e3])


def make_rig(kind):
    return procedural.tube_rig(rings=16, segments=10, n_bones=5) if kind == "tube" else branching_rig()


def strong_poses(rig, n, seed, far=False):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        p = procedural.random_pose(rig, rng, max_angle=math.radians(170), scale_range=(0.5, 2.0))
        if far:
            T = np.eye(4)
            T[:3, 3] = FAR
            p = Pose(p.deform, T @ p.armature_world, T @ p.mesh_world)
        yield p


@pytest.mark.parametrize("kind", ["tube", "branch"])
@pytest.mark.parametrize("skin", ["lbs", "pv"])
@pytest.mark.parametrize("far", [False, True])
def test_refitted_spheres_contain_their_deformed_vertices(kind, skin, far, cheap_union_search):
    rig = make_rig(kind)
    rig.preserve_volume = skin == "pv"
    m = registry.get("sphere-set")
    assert registry.resolve("sphere-set", rig)[0] is m
    # The variational fit once (it is slow); the simple top-down set elsewhere: the refit
    # does not depend on how the set was made.
    real = kind == "tube" and skin == "lbs" and not far
    data = m.prepare(rig, count=24, builder=None if real else "top-down")
    assert data.preserve_volume == (skin == "pv")
    t = data.hier
    N = t.n_nodes
    leaves = np.nonzero(t.first_child < 0)[0]
    # Leaves hold every triangle once; each leaf is one sphere of the set.
    assert np.array_equal(np.sort(data.leaf_tris), np.arange(rig.n_triangles))
    assert np.array_equal(np.sort(data.node_sphere[leaves]), np.unique(data.tri_sphere))
    seg = np.repeat(np.arange(N), np.diff(t.node_vert_ptr))
    for pose in strong_poses(rig, 6, 3, far):
        P = skinning.dqs_rig(rig, pose) if skin == "pv" else skinning.lbs_rig(rig, pose)
        tris = triangles_of(rig, P)
        v = m.volumes(rig, data, Frame(P, tris, pose))
        v.ensure(np.arange(N))
        d = np.linalg.norm(P[t.node_verts] - v.centers[seg], axis=1)
        assert (d <= v.radii[seg]).all(), (d - v.radii[seg]).max()
        # Every frame triangle inside the sphere of its leaf.
        leaf_of = np.repeat(np.arange(N), np.diff(data.leaf_ptr))
        owner = np.empty(rig.n_triangles, np.int64)
        owner[data.leaf_tris] = leaf_of
        dt = np.linalg.norm(P[tris] - v.centers[owner][:, None], axis=2)
        assert (dt <= v.radii[owner][:, None]).all()
        # Not trivially huge: the leaves are smaller than the whole character's sphere
        # (LBS; the Preserve Volume bound is looser, as for the sphere tree).
        assert skin == "pv" or np.median(v.radii[leaves]) < 0.5 * v.radii[0]


def triangles_of(rig, positions):
    from skin_collide.core.geometry import triangulation
    return triangulation.frame_triangles(rig, positions)


@pytest.mark.parametrize("kind", ["tube", "branch"])
def test_pairs_equal_brute_force_and_the_sphere_tree(kind):
    rig = make_rig(kind)
    m = registry.get("sphere-set")
    data = m.load(m.prepare(rig, count=32, builder="top-down").arrays())
    st = registry.get("sphere-tree")
    st_prep = st.prepare(rig)
    tris = rig.triangles
    seen = tests = cart = 0
    for pa, pb in _crossing_pair(rig, 11, 5):
        A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)

        def cross(ta, tb):              # the rule between objects (core.scan.exact)
            return (triangles.triangle_pairs_intersect(A, tris, ta, B, tris, tb)
                    & triangles.boxes_meet(A, tris[ta], B, tris[tb]))

        va = m.volumes(rig, data, Frame(A, tris, pa))
        vb = m.volumes(rig, data, Frame(B, tris, pb))
        got, stats = traversal.collide(va, vb, cross)
        want = scan.brute_force_pairs(A, tris, B, tris)
        sph, _ = traversal.collide(st.volumes(rig, st_prep, Frame(A, tris, pa)),
                                   st.volumes(rig, st_prep, Frame(B, tris, pb)), cross)
        g = {tuple(p) for p in got.tolist()}
        assert g == {tuple(p) for p in want.tolist()} == {tuple(p) for p in sph.tolist()}
        # Unknown pose: exact balls of the evaluated vertices, same pairs.
        got2, _ = traversal.collide(m.volumes(rig, data, Frame(A, tris)),
                                    m.volumes(rig, data, Frame(B, tris)), cross)
        assert {tuple(p) for p in got2.tolist()} == g
        # Against the sphere tree of the other character (sphere overlap across kinds).
        mixed, _ = traversal.collide(m.volumes(rig, data, Frame(A, tris, pa)),
                                     st.volumes(rig, st_prep, Frame(B, tris, pb)), cross)
        assert {tuple(p) for p in mixed.tolist()} == g
        seen += len(want)
        tests += stats.triangle_tests
        cart += va.cartesian
    assert seen > 30
    assert tests < cart                 # the AABB filter removes pairs


def test_scan_with_sphere_set_equals_sphere_tree(monkeypatch, cheap_union_search):
    """Through `scan.query_frame` (broad phase, fast path, stacked traversal), two
    characters and self-collision. Object pairs with few triangles where their boxes meet
    skip the trees (`scan.between.BOX_PAIRS_MAX`): set to 0 here, so the sets are traversed."""
    monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", 0)
    monkeypatch.setattr(scan.between, "DEEP_SHARE", float("inf"))
    rig = procedural.tube_rig(rings=16, segments=10, n_bones=5)
    rig2 = procedural.tube_rig(rings=12, segments=8, n_bones=4, name="other")
    objs = [scan.prepare(r, ss.SphereSetMethod.id, count=16) for r in (rig, rig2)]     # the real fit, 16 spheres
    refs = [scan.prepare(r, "sphere-tree") for r in (rig, rig2)]
    assert [o.method for o in objs] == ["sphere-set"] * 2
    rng = np.random.default_rng(4)
    total = traversed = 0
    for _ in range(4):
        pa = procedural.random_pose(rig, rng, max_angle=math.radians(170))
        pb = procedural.random_pose(rig2, rng, max_angle=math.radians(170))
        pb = Pose(pb.deform, pa.armature_world, pa.mesh_world)
        pos = [skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig2, pb)]
        got = scan.query_frame(objs, pos, [pa, pb], self_collision=True)
        traversed += got.stats[0].extra["traversed_pairs"]
        want = scan.query_frame(refs, pos, [pa, pb], self_collision=True)
        g = {(i, j, tuple(p)) for i, j, q in got.pairs for p in q.tolist()}
        w = {(i, j, tuple(p)) for i, j, q in want.pairs for p in q.tolist()}
        assert g == w
        # The older bottom-up mode refits a sphere tree of each object: the same pairs.
        bu = scan.query_frame(objs, pos, [pa, pb], mode="bottom-up", self_collision=True)
        assert {(i, j, tuple(p)) for i, j, q in bu.pairs for p in q.tolist()} == w
        total += len(g)
    assert total > 30 and traversed > 0


@pytest.mark.parametrize("kind", ["tube", "branch"])
def test_own_self_traversal_equals_the_self_tree(kind):
    rig = make_rig(kind)
    obj = scan.prepare(rig, "bottom-up")
    obj.method, obj.data = "sphere-set", ss.build(rig, 32, builder="top-down")
    m = registry.get("sphere-set")
    assert m.supports_self
    found = 0
    for pose in strong_poses(rig, 5, 9):
        P = skinning.lbs_rig(rig, pose)
        tris = triangles_of(rig, P)
        keys = obj.vertex_keys[tris]

        def test(ta, tb):
            adj = (keys[ta][:, :, None] == keys[tb][:, None, :]).any(axis=(1, 2))
            hit = np.zeros(ta.size, bool)
            k = np.nonzero(~adj)[0]
            hit[k] = triangles.triangle_pairs_intersect(P, tris, ta[k], P, tris, tb[k])
            return hit

        got, _ = traversal.collide(m.volumes(rig, obj.data, Frame(P, tris, pose)), None, test)
        want = object_self_pairs(obj, P, tris)
        assert {tuple(p) for p in got.tolist()} == {tuple(p) for p in want.tolist()}
        found += len(want)
    assert found > 0


def same(x, y) -> bool:
    x, y = np.asarray(x), np.asarray(y)
    return np.array_equal(x, y, equal_nan=x.dtype.kind == "f")


def test_round_trip_arrays_and_stored_bytes():
    rig = branching_rig()
    rig.preserve_volume = True
    obj = scan.prepare(rig, "bottom-up")
    obj.method, obj.data = "sphere-set", ss.build(rig, 32, builder="grid")
    a = obj.data.arrays()
    back = registry.get("sphere-set").load(a)
    b = back.arrays()
    assert a.keys() == b.keys()
    for k in a:
        assert same(a[k], b[k]), k
    loaded = persist.from_bytes(persist.to_bytes(obj))
    assert loaded.method == "sphere-set" and loaded.data.preserve_volume
    c = loaded.data.arrays()
    for k in a:
        assert same(a[k], c[k]), k
        assert np.asarray(a[k]).dtype.kind == np.asarray(c[k]).dtype.kind, k
    # The loaded data refits like the built data.
    pose = next(strong_poses(rig, 1, 2))
    P = skinning.dqs_rig(rig, pose)
    m = registry.get("sphere-set")
    d1 = m.drawable(rig, obj.data, Frame(P, rig.triangles, pose), 99)
    d2 = m.drawable(rig, loaded.data, Frame(P, rig.triangles, pose), 99)
    assert np.allclose(d1.centers, d2.centers) and np.allclose(d1.radii, d2.radii)
    assert d1.radii.size == (obj.data.hier.first_child < 0).sum()


def test_fallbacks_and_builders(monkeypatch):
    rig = procedural.tube_rig(rings=8, segments=6, n_bones=3)
    rig.unsupported = ["shape keys"]
    mm, why = registry.resolve("sphere-set", rig)
    assert mm.id == "bottom-up" and "shape keys" in why[0]
    rig.unsupported = []
    # Without the variational fit the method builds the top-down baseline.
    monkeypatch.setattr(ss, "variational_available", lambda: False)
    d = ss.build(rig, count=10)
    assert d.builder == "top-down" and d.set_radii.size == 10
    g = ss.build(rig, count=10, builder="grid")
    assert g.builder == "grid"
    with pytest.raises(ValueError):
        ss.build(rig, count=0)


def test_a_crowd_of_one_character_fits_one_sphere_set(monkeypatch):
    """Five copies of one character (own names and armatures, the same rest mesh, weights
    and bones) scanned with `sphere-set` fit one set, which every copy uses; a rig that
    differs fits its own (issue 43)."""
    import dataclasses

    fits = []

    def counted(vertices, triangles, count, seed=0, progress=None, should_stop=None, builder=None):
        fits.append(count)
        return ss.baselines.top_down(vertices, triangles, count, seed=seed)

    monkeypatch.setattr(ss, "fit_set", counted)
    base = procedural.tube_rig(rings=8, segments=6, n_bones=3)
    copies = [dataclasses.replace(base, name=f"Fox.{k:03d}", armature=f"Fox_Arm.{k:03d}")
              for k in range(5)]
    objs = scan.prepare_shared(copies, "sphere-set", count=6)
    assert fits == [6]
    assert [o.name for o in objs] == [f"Fox.{k:03d}" for k in range(5)]
    assert all(o.method == "sphere-set" and o.data is objs[0].data for o in objs)
    assert [o.rig.armature for o in objs] == [f"Fox_Arm.{k:03d}" for k in range(5)]
    other = dataclasses.replace(base, name="Other", rest_positions=base.rest_positions * 1.01)
    scan.prepare_shared(copies + [other], "sphere-set", count=6)
    assert fits == [6, 6, 6]


ASSET = "cesium_man.glb"


@pytest.mark.asset
@pytest.mark.blender
def test_crossing_cesium_men_equal_the_sphere_tree(bpy_module, assets_dir, monkeypatch):
    from conftest import ASSET_FILES
    if ASSET not in ASSET_FILES:
        pytest.skip(f"{ASSET} is not in the shared assets")
    from test_obb_assets import _crossing as crossing
    from test_obb_assets import _states as states

    from skin_collide.addon import extract, scanner

    bpy = bpy_module
    ob, arm, ob2, arm2 = crossing(bpy, assets_dir, ASSET)
    # One set for both copies (the same rest mesh and weights), made by the quick top-down
    # builder: the pairs do not depend on how the set was made, and the variational fit
    # of 64 spheres on Cesium Man takes minutes.
    rigs = [extract.rig_from_object(o) for o in (ob, ob2)]
    data = ss.build(rigs[0], 64, builder="top-down")
    objs = []
    for r in rigs:
        o = scan.prepare(r, "bottom-up")
        o.method, o.asked, o.data = "sphere-set", "sphere-set", data
        objs.append(o)
    sset = scanner.Scanner([ob, ob2], method="sphere-set", objects=objs)
    monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", 0)     # through the sets, not the box path
    monkeypatch.setattr(scan.between, "DEEP_SHARE", float("inf"))
    ref = scanner.Scanner([ob, ob2], method="sphere-tree")
    assert [o.method for o in sset.objects] == ["sphere-set"] * 2, [o.reason for o in sset.objects]
    rng = np.random.default_rng(5)
    found = 0
    for state in states(bpy, arm, arm2, rng):
        pos, poses = sset.evaluate(bpy.context.evaluated_depsgraph_get())
        got, _, _ = sset.query(pos, poses)
        want, _, _ = ref.query(pos, poses, sset.triangles)
        g = {tuple(p) for i, j, q in got if i != j for p in q.tolist()}
        w = {tuple(p) for i, j, q in want if i != j for p in q.tolist()}
        assert g == w, (state, len(g - w), len(w - g))
        # Every leaf sphere holds Blender's evaluated vertices of its polygons.
        m = registry.get("sphere-set")
        for o, p, pose, tris in zip(sset.objects, pos, poses, sset.triangles):
            t = o.data.hier
            v = m.volumes(o.rig, o.data, Frame(p, tris, pose))
            v.ensure(np.arange(t.n_nodes))
            seg = np.repeat(np.arange(t.n_nodes), np.diff(t.node_vert_ptr))
            assert (np.linalg.norm(p[t.node_verts] - v.centers[seg], axis=1)
                    <= v.radii[seg]).all(), (state, o.name)
        found += len(g)
    assert found > 0, "the copies never touched: the test would prove nothing"
