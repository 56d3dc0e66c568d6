"""The method interface: registry, fallback chain, and the generic traversal over the
sphere-tree methods, against brute force (core only)."""
import math

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning, triangles, welds
from skin_collide.core.hierarchy import traversal
from skin_collide.core.methods import registry
from skin_collide.core.methods.base import Frame
from skin_collide.core.rig import Pose


@pytest.fixture(scope="module")
def rig():
    return procedural.tube_rig(rings=14, segments=10, n_bones=5)


def test_registry_lists_the_sphere_tree_methods():
    assert {"sphere-tree", "bottom-up"} <= set(registry.ids())
    with pytest.raises(KeyError, match="known"):
        registry.get("no-such-method")


def test_fallback_chain_is_decided_by_supports(rig):
    m, why = registry.resolve("sphere-tree", rig)
    assert m.id == "sphere-tree" and why == []
    rig.unsupported = ["2 shape keys"]
    try:
        m, why = registry.resolve("sphere-tree", rig)
        assert m.id == "bottom-up" and any("shape keys" in w for w in why)
    finally:
        rig.unsupported = []


def test_the_whole_fallback_policy(rig):
    """LBS rig -> sphere-tree; Preserve Volume -> sphere-tree-pv; anything the bone
    matrices do not determine -> bottom-up, whatever was asked; a method's own
    requirement (PV asked on an LBS rig) passes to its fallback; a chain that ends without
    a method is a ValueError; every registered fallback is itself registered."""
    ids = set(registry.ids())
    for m in registry.methods():
        assert m.fallback is None or m.fallback in ids, m.id
    assert registry.resolve("sphere-tree-pv", rig)[0].id == "bottom-up"
    rig.preserve_volume = True
    try:
        m, why = registry.resolve("sphere-tree", rig)
        assert m.id == "sphere-tree-pv" and len(why) == 1
        rig.unsupported = ["B-Bones"]
        m, why = registry.resolve("sphere-tree", rig)
        assert m.id == "bottom-up" and len(why) == 2 and all("B-Bones" in w for w in why)
    finally:
        rig.preserve_volume = False
        rig.unsupported = []

    class Picky(registry.Method):
        id, label, fallback = "picky-test", "never", None

        def supports(self, rig):
            return "never supports anything"

        def prepare(self, rig):
            raise AssertionError

        def load(self, arrays):
            raise AssertionError

        def volumes(self, rig, prepared, frame):
            raise AssertionError

    registry.register(Picky())
    try:
        with pytest.raises(ValueError, match="no method can collide"):
            registry.resolve("picky-test", rig)
    finally:
        registry.unregister("picky-test")


def _poses(rig, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        a = procedural.random_pose(rig, rng, max_angle=math.radians(150), scale_range=(0.6, 1.5))
        b = procedural.random_pose(rig, rng, max_angle=math.radians(150), scale_range=(0.6, 1.5))
        yield a, Pose(b.deform, a.armature_world, a.mesh_world)


@pytest.mark.parametrize("method_id", ["sphere-tree", "bottom-up", "box-tree"])
def test_generic_traversal_equals_brute_force(rig, method_id):
    m = registry.get(method_id)
    prepared = m.load(m.prepare(rig).arrays())          # through the stored form
    keys = welds.vertex_weld_ids(rig)[rig.triangles]
    tris = rig.triangles
    seen = 0
    for pa, pb in _poses(rig, 6, 3):
        A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)
        va = m.volumes(rig, prepared, Frame(A, tris, pa))
        vb = m.volumes(rig, prepared, Frame(B, tris, pb))

        def cross(ta, tb):              # the rule between objects (core.scan.exact)
            return (triangles.triangle_pairs_intersect(A, tris, ta, B, tris, tb)
                    & triangles.boxes_meet(A, tris[ta], B, tris[tb]))

        def self_(ta, tb):
            far = ~welds.adjacent_pairs(keys, ta, tb)
            hit = np.zeros(ta.size, bool)
            hit[far] = triangles.triangle_pairs_intersect(A, tris, ta[far], A, tris, tb[far])
            return hit

        got, _ = traversal.collide(va, vb, cross)
        want = scan.brute_force_pairs(A, tris, B, tris)
        assert {tuple(p) for p in got.tolist()} == {tuple(p) for p in want.tolist()}
        got_s, _ = traversal.collide(va, None, self_)
        want_s = scan.brute_force_pairs(A, tris, keys=keys)
        assert {tuple(p) for p in got_s.tolist()} == {tuple(p) for p in want_s.tolist()}
        seen += len(want) + len(want_s)
    assert seen > 50


def test_mixed_methods_in_one_scene_equal_brute_force(rig):
    """Objects built with different methods collide through the same query (box trees
    against sphere trees by enclosing spheres, box against box by the whole-tree pass),
    in strong poses and 1 km from the origin."""
    objs = [scan.prepare(rig, m) for m in ("sphere-tree", "box-tree", "box-tree")]
    assert [o.method for o in objs] == ["sphere-tree", "box-tree", "box-tree"]
    far = np.eye(4)
    far[:3, 3] = (1000.0, -500.0, 20.0)
    seen = 0
    for pa, pb in _poses(rig, 4, 9):
        pc = Pose(pa.deform, pb.armature_world, pb.mesh_world)
        poses = [Pose(p.deform, far @ p.armature_world, far @ p.mesh_world) for p in (pa, pb, pc)]
        pos = [skinning.lbs_rig(rig, p) for p in poses]
        res = scan.query_frame(objs, pos, poses, self_collision=True)
        assert res.modes == ["sphere-tree", "box-tree", "box-tree"]
        got = {(i, j): {tuple(p) for p in q.tolist()} for i, j, q in res.pairs}
        for i in range(3):
            for j in range(i, 3):
                ti, tj = res.triangles[i], res.triangles[j]
                if i == j:
                    want = scan.brute_force_pairs(pos[i], ti, keys=objs[i].vertex_keys[ti])
                else:
                    want = scan.brute_force_pairs(pos[i], ti, pos[j], tj)
                assert got.get((i, j), set()) == {tuple(p) for p in want.tolist()}, (i, j)
                seen += len(want)
    assert seen > 50


def test_first_hit_returns_a_true_subset(rig):
    m = registry.get("sphere-tree")
    prepared = m.prepare(rig)
    tris = rig.triangles
    for pa, pb in _poses(rig, 4, 5):
        A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)

        def cross(ta, tb):              # the rule between objects (core.scan.exact)
            return (triangles.triangle_pairs_intersect(A, tris, ta, B, tris, tb)
                    & triangles.boxes_meet(A, tris[ta], B, tris[tb]))

        full, _ = traversal.collide(m.volumes(rig, prepared, Frame(A, tris, pa)),
                                    m.volumes(rig, prepared, Frame(B, tris, pb)), cross)
        first, _ = traversal.collide(m.volumes(rig, prepared, Frame(A, tris, pa)),
                                     m.volumes(rig, prepared, Frame(B, tris, pb)), cross,
                                     first_hit=True)
        assert (first.size > 0) == (full.size > 0)
        assert {tuple(p) for p in first.tolist()} <= {tuple(p) for p in full.tolist()}


def test_leaves_with_several_triangles():
    """A hierarchy whose leaves hold several triangles (as sphere sets, chains and OBB
    trees have) yields every triangle pair of overlapping leaves, and a leaf's own pairs
    in self-collision."""
    from skin_collide.core.hierarchy.traversal import _unordered_pairs, leaf_triangle_pairs
    from skin_collide.core.methods.base import Hierarchy

    h = Hierarchy(np.array([1, -1, -1], np.int32), np.array([2, 0, 0], np.int32),
                  np.array([0, 0, 2, 5]), np.array([7, 8, 1, 2, 3]))
    ta, tb = leaf_triangle_pairs(h, np.array([1]), h, np.array([2]))
    assert sorted(zip(ta.tolist(), tb.tolist())) == [(7, 1), (7, 2), (7, 3), (8, 1), (8, 2), (8, 3)]
    ia, ib = _unordered_pairs(np.array([2]), np.array([3]), with_self=False)
    assert sorted(zip(ia.tolist(), ib.tolist())) == [(2, 3), (2, 4), (3, 4)]


@pytest.mark.parametrize("asked", ["sphere-tree", "bottom-up", "box-tree", "obb"])
def test_the_reported_method_is_the_one_whose_volumes_answer(rig, asked):
    """`scan.frame_method` (the JSON `refit` id) asks the method itself and agrees with
    the `method_id` of the volumes it hands out, with and without a pose: core/scan.py
    names no method."""
    obj = scan.prepare(rig, asked)
    m = registry.get(obj.method)
    pose = procedural.random_pose(rig, np.random.default_rng(5))
    pos = skinning.lbs_rig(rig, pose)
    for p in (pose, None):
        said = scan.frame_method(obj, p, "on-demand")
        vols = m.volumes(rig, obj.data, Frame(pos, rig.triangles, p))
        assert said == (vols.method_id or obj.method), (asked, p is None)
    assert scan.frame_method(obj, None, "on-demand") == (
        "bottom-up" if asked == "sphere-tree" else obj.method)
