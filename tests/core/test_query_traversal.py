"""The generic traversal (core.hierarchy.traversal) finds exactly the pairs brute force finds,
through `scan.query_frame` and directly (core only)."""
import math

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.hierarchy import traversal
from skin_collide.core.rig import Pose


@pytest.fixture(scope="module")
def world():
    rig = procedural.tube_rig(rings=16, segments=10, n_bones=5)
    return rig, scan.prepare(rig)


def frames(rig, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        a = procedural.random_pose(rig, rng, max_angle=math.radians(130), scale_range=(0.7, 1.4))
        b = procedural.random_pose(rig, rng, max_angle=math.radians(130), scale_range=(0.7, 1.4))
        b = Pose(b.deform, a.armature_world, a.mesh_world)   # same place: they interpenetrate
        yield a, b


def as_set(result, i, j):
    return {tuple(p) for a, b, pairs in result.pairs if (a, b) == (i, j) for p in pairs.tolist()}


@pytest.mark.parametrize("mode", ["on-demand", "bottom-up"])
def test_equals_brute_force(world, mode):
    rig, obj = world
    seen_cross = seen_self = 0
    for pa, pb in frames(rig, 12, 11):
        A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)
        res = scan.query_frame([obj, obj], [A, B], [pa, pb], mode=mode, self_collision=True)
        # The frame's triangles: quads re-split as Blender would at these positions.
        ta, tb = res.triangles
        assert np.array_equal(ta, scan.frame_triangles(obj, A))
        cross = {tuple(p) for p in scan.brute_force_pairs(A, ta, B, tb).tolist()}
        self_ = {tuple(p) for p in scan.brute_force_pairs(A, ta, keys=obj.vertex_keys[ta]).tolist()}
        assert as_set(res, 0, 1) == cross
        assert as_set(res, 0, 0) == self_
        seen_cross += len(cross)
        seen_self += len(self_)
    assert seen_cross > 100 and seen_self > 50   # the poses really collide


def test_small_chunks_give_the_same_pairs(world):
    rig, obj = world
    from skin_collide.core import triangles
    from skin_collide.core.bounds import refit

    for pa, pb in frames(rig, 20, 12):
        A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)
        if scan.query_frame([obj, obj], [A, B], [pa, pb]).n_pairs > 20:
            break

    from skin_collide.core.methods.sphere_tree import SphereVolumes

    def spheres(pose):
        fr = refit.frame_transforms(pose, obj.data.tree)
        return SphereVolumes(obj.data.tree, lambda n: refit.refit_on_demand(obj.data.tree, obj.data.bounds, fr, n))

    def test(ta, tb):
        return triangles.triangle_pairs_intersect(A, rig.triangles, ta, B, rig.triangles, tb)

    big, _ = traversal.collide(spheres(pa), spheres(pb), test)
    small, st = traversal.collide(spheres(pa), spheres(pb), test, chunk=7)
    assert st.chunks > 50 and big.shape[0] > 20
    assert {tuple(p) for p in big.tolist()} == {tuple(p) for p in small.tolist()}


def test_first_hit_is_a_true_subset_and_cheaper(world):
    rig, obj = world
    for pa, pb in frames(rig, 8, 13):
        A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)
        full = scan.query_frame([obj, obj], [A, B], [pa, pb])
        first = scan.query_frame([obj, obj], [A, B], [pa, pb], first_hit=True)
        assert (first.n_pairs > 0) == (full.n_pairs > 0)
        assert as_set(first, 0, 1) <= as_set(full, 0, 1)
        assert sum(s.sphere_tests for s in first.stats) <= sum(s.sphere_tests for s in full.stats)


def test_far_apart_objects_cost_only_their_box(world):
    rig, obj = world
    pa, pb = next(frames(rig, 1, 14))
    far = pb.armature_world.copy()
    far[:3, 3] += 100.0
    pb = Pose(pb.deform, far, far @ np.linalg.solve(pb.armature_world, pb.mesh_world))
    A, B = skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)
    res = scan.query_frame([obj, obj], [A, B], [pa, pb])
    # The object-level broad phase drops the pair: no volume is refitted or tested.
    assert res.n_pairs == 0 and res.stats[0].sphere_tests == 0
    assert res.stats[0].refitted == 0 and res.stats[0].extra["object_pairs"] == 0


def test_adjacency_uses_welded_positions():
    from skin_collide.core import welds
    from skin_collide.core.rig import Rig

    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0.0], [1, 1, 0]])
    tris = np.array([[0, 1, 2], [3, 4, 2], [0, 2, 4]])
    rig = Rig("w", pos, tris, np.arange(3), np.arange(6), np.zeros(5, np.int32), np.ones(5),
              ["b"], np.array([-1]), np.eye(4)[None], np.ones(1, bool))
    keys = welds.vertex_weld_ids(rig)[tris]
    # Vertex 3 duplicates vertex 1's position and weights (a seam): triangles 0 and 1 share it.
    assert welds.adjacent_pairs(keys, np.array([0, 0]), np.array([1, 2])).tolist() == [True, True]
