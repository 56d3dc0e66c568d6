"""The numpy side of rigid props (issue 26 item 7): a rig without bones, every vertex on the
virtual static joint, posed by its world matrix alone (`addon.extract.rigid_pose`: no
bones, an identity armature matrix). Every method answers it exactly, against brute force,
in strong transforms (rotated, scaled, sheared, far from the origin), between a prop and
a skinned character and within the prop."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.methods import registry
from skin_collide.core.rig import Pose


def rigid(rig, name: str = "prop"):
    """`rig` with no bones: what `addon.extract` makes of a mesh parented to a bone (its
    rest positions float32 values, as Blender stores them)."""
    V = rig.n_vertices
    return replace(rig, name=name,
                   rest_positions=rig.rest_positions.astype(np.float32).astype(np.float64),
                   weight_ptr=np.zeros(V + 1, np.int64),
                   weight_bone=np.zeros(0, np.int32), weight_value=np.zeros(0),
                   bone_names=[], bone_parents=np.zeros(0, np.int32),
                   bone_rest=np.zeros((0, 4, 4)), bone_deform=np.zeros(0, bool),
                   armature="", rigid="bone 'hand' of 'rig'")


def world(rng, centre: np.ndarray) -> np.ndarray:
    """A strong world matrix (rotation, scale 0.6–1.5, shear) about `centre`."""
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    M = np.eye(4)
    M[:3, :3] = q @ np.diag(rng.uniform(0.6, 1.5, 3)) @ (np.eye(3) + 0.1 * rng.normal(size=(3, 3)))
    M[:3, 3] = centre + rng.uniform(-0.3, 0.3, 3)
    return M


def float32_positions(rig, pose) -> np.ndarray:
    """World positions as Blender hands them over: float32 mesh-local coordinates (the
    rest mesh: a rigid prop has no deformation) mapped by the world matrix."""
    local = rig.rest_positions.astype(np.float32).astype(np.float64)
    return local @ pose.mesh_world[:3, :3].T + pose.mesh_world[:3, 3]


@pytest.mark.parametrize("method", ["sphere-tree", "bottom-up", "box-tree", "obb", "chains",
                                    "sphere-set"])
@pytest.mark.parametrize("far", [0.0, 1000.0])
def test_a_rigid_prop_against_a_character_equals_brute_force(method, far):
    rng = np.random.default_rng(int(far) + len(method))
    body = procedural.tube_rig(rings=10, segments=8, n_bones=4)
    prop = rigid(procedural.tube_rig(rings=4, segments=6, n_bones=1, length=0.8, radius=0.3))
    # A sphere set from the top-down baseline (the variational fit takes minutes; the
    # refit and the query are the same code either way).
    options = {"count": 16, "builder": "top-down"} if method == "sphere-set" else {}
    objs = [scan.prepare(body, method, **options), scan.prepare(prop, method, **options)]
    assert registry.resolve(method, prop)[0].id == objs[1].method
    found_pairs = found_self = 0
    for k in range(6):
        bpose = procedural.random_pose(body, rng)
        bpose.armature_world[:3, 3] += far
        bpose.mesh_world[:3, 3] += far
        body_pos = skinning.skin_rig(body, bpose)
        # The prop where the body is (a random pose throws the body anywhere).
        centre = body_pos[rng.integers(body_pos.shape[0])]
        ppose = Pose(np.zeros((0, 4, 4)), np.eye(4), world(rng, centre))
        # The skinning matrix of a rigid prop is its world matrix, exactly.
        assert np.array_equal(ppose.skinning_matrices()[0], ppose.mesh_world)
        pos = [body_pos, float32_positions(prop, ppose)]
        assert np.allclose(skinning.skin_rig(prop, ppose), pos[1], rtol=0, atol=1e-9 * (1 + far))
        res = scan.query_frame(objs, pos, [bpose, ppose], self_collision=True)
        got = {(i, j): {tuple(p) for p in q.tolist()} for i, j, q in res.pairs}
        tris = res.triangles
        want = scan.brute_force_pairs(pos[0], tris[0], pos[1], tris[1])
        assert got.get((0, 1), set()) == {tuple(p) for p in want.tolist()}, (method, k)
        own = scan.brute_force_pairs(pos[1], tris[1], keys=objs[1].vertex_keys[tris[1]])
        assert {tuple(sorted(p)) for p in got.get((1, 1), set())} == \
               {tuple(p) for p in own.tolist()}, (method, k)
        found_pairs += want.shape[0]
        found_self += own.shape[0]
    assert found_pairs > 0
