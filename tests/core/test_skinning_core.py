"""Pure-numpy properties of core.skinning (no Blender)."""
import math

import numpy as np
import pytest

from skin_collide.core import procedural, skinning
from skin_collide.core.rig import Pose, rest_pose, transform_points


@pytest.fixture
def rig():
    return procedural.tube_rig(rings=12, segments=10, n_bones=5)


def rigid(rng):
    m = np.eye(4)
    m[:3, :3] = procedural.random_rotation(rng, math.pi, 1)[0]
    m[:3, 3] = rng.uniform(-2, 2, 3)
    return m


def test_rest_pose_is_identity_in_world(rig):
    world = np.eye(4)
    world[:3, 3] = (1.0, 2.0, 3.0)
    pose = rest_pose(rig, mesh_world=world)
    expect = rig.rest_positions + (1.0, 2.0, 3.0)
    for fn in (skinning.lbs_rig, skinning.dqs_rig):
        np.testing.assert_allclose(fn(rig, pose), expect, atol=1e-12)


def test_same_rigid_transform_everywhere_moves_rigidly(rig):
    rng = np.random.default_rng(1)
    m = rigid(rng)
    pose = Pose(np.repeat(m[None], rig.n_bones, 0), np.eye(4), np.eye(4))
    expect = transform_points(m, rig.rest_positions)
    np.testing.assert_allclose(skinning.lbs_rig(rig, pose), expect, atol=1e-10)
    np.testing.assert_allclose(skinning.dqs_rig(rig, pose), expect, atol=1e-10)
    joints, weights = rig.padded_influences()
    np.testing.assert_allclose(skinning.sbs(rig.rest_positions, joints, weights,
                                            pose.skinning_matrices()), expect, atol=1e-10)


def test_lbs_is_the_weighted_sum_of_bone_transforms(rig):
    rng = np.random.default_rng(2)
    pose = procedural.random_pose(rig, rng)
    C = pose.skinning_matrices()
    out = skinning.lbs_rig(rig, pose)
    for v in rng.choice(rig.n_vertices, 20, replace=False):
        a, b = rig.weight_ptr[v], rig.weight_ptr[v + 1]
        w = rig.weight_value[a:b] / rig.weight_value[a:b].sum()
        expect = sum(wi * transform_points(C[j], rig.rest_positions[v:v + 1])[0]
                     for wi, j in zip(w, rig.weight_bone[a:b]))
        np.testing.assert_allclose(out[v], expect, atol=1e-10)


def test_dqs_of_two_rigid_bones_preserves_distance_to_rotation_axis():
    # A vertex half-way between two bones that differ by a pure rotation about an axis
    # through the origin: DQS keeps its distance to that axis (no candy-wrapper collapse),
    # while LBS shrinks it.
    from skinning_helpers import two_bone_rig
    rig, pose = two_bone_rig(angle=math.radians(170))
    dq = skinning.dqs_rig(rig, pose)
    lb = skinning.lbs_rig(rig, pose)
    r_rest = np.linalg.norm(rig.rest_positions[:, :2], axis=1)
    np.testing.assert_allclose(np.linalg.norm(dq[:, :2], axis=1), r_rest, rtol=1e-9)
    assert np.linalg.norm(lb[:, :2], axis=1).min() < 0.2 * r_rest.min()


def test_sbs_rotation_centre_makes_two_joint_twist_exact():
    from skinning_helpers import two_bone_rig
    rig, pose = two_bone_rig(angle=math.radians(120))
    joints, weights = rig.padded_influences()
    out = skinning.sbs(rig.rest_positions, joints, weights, pose.skinning_matrices())
    # Half-weighted vertices turn by half the angle about the shared axis (Z).
    expect_angle = np.arctan2(rig.rest_positions[:, 1], rig.rest_positions[:, 0]) + math.radians(60)
    got = np.arctan2(out[:, 1], out[:, 0])
    np.testing.assert_allclose(np.cos(got - expect_angle), 1.0, atol=1e-9)
    np.testing.assert_allclose(out[:, 2], rig.rest_positions[:, 2], atol=1e-9)


def test_static_vertices_use_the_virtual_joint(rig):
    r = procedural.tube_rig(rings=4, segments=6, n_bones=3)
    # Scale vertex 0's weights down to a total of 5e-5: Blender leaves it in place.
    a, b = r.weight_ptr[0], r.weight_ptr[1]
    r.weight_value[a:b] *= 5e-5 / r.weight_value[a:b].sum()
    joints, weights = r.padded_influences()
    assert joints[0, 0] == r.n_bones and weights[0, 0] == 1.0
    pose = procedural.random_pose(r, np.random.default_rng(3))
    world0 = transform_points(pose.mesh_world, r.rest_positions[:1])[0]
    np.testing.assert_allclose(skinning.lbs_rig(r, pose)[0], world0, atol=1e-12)
    np.testing.assert_allclose(skinning.dqs_rig(r, pose)[0], world0, atol=1e-12)


def test_matrix_quaternion_round_trip():
    rng = np.random.default_rng(4)
    R = procedural.random_rotation(rng, math.pi, 500)
    q = skinning.matrix_to_quat(R)
    assert (q[:, 0] >= 0).all()
    np.testing.assert_allclose(skinning.quat_to_matrix(q), R, atol=1e-12)
