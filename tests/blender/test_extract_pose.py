"""Reading a frame (`addon.extract.pose`): the world positions the exact tests collide are
the mesh-local evaluated positions through the object's matrix, bit for bit the product
`local @ R.T + t` whatever the matrix (`to_world` takes one coordinate per axis where the
3x3 part is a permutation with signs, as the identity under an armature at the origin),
and a moved or turned object reads as its product."""
import math

import numpy as np
import pytest

pytestmark = pytest.mark.blender


def _matrices():
    rng = np.random.default_rng(5)
    out = [np.eye(4)]
    for perm, sign in (([2, 0, 1], [-1, 1, -1]), ([1, 0, 2], [1, -1, 1]), ([0, 1, 2], [-1, -1, 1])):
        M = np.eye(4)
        M[:3, :3] = 0.0
        M[np.arange(3), perm] = sign
        M[:3, 3] = rng.normal(size=3) * 1000.0
        out.append(M)
    M = np.eye(4)
    M[:3, :3] = [[-0.0, 0.0, 1.0], [-1.0, -0.0, -0.0], [0.0, -1.0, 0.0]]   # Cesium Man's
    out.append(M)
    for scale in (2.0, 1.0 + 2 ** -52):                       # not a signed permutation
        M = np.eye(4)
        M[0, 0] = scale
        out.append(M)
    c, s = math.cos(0.3), math.sin(0.3)
    M = np.eye(4)
    M[:2, :2] = [[c, -s], [s, c]]
    out.append(M)
    return out


@pytest.mark.parametrize("k", range(8))
def test_to_world_is_the_matrix_product_bit_for_bit(bpy_module, k):
    from skin_collide.addon.extract.pose import to_world

    M = _matrices()[k]
    rng = np.random.default_rng(k)
    local = rng.normal(size=(5000, 3)) * np.array([0.5, 3.0, 1e-3])
    local[:20] = 0.0
    local[20:40] = -0.0
    local[40:60, 1] = -local[40:60, 1]
    got = to_world(local, M)
    want = local @ M[:3, :3].T + M[:3, 3]
    assert got.dtype == np.float64 and got.shape == local.shape
    assert np.array_equal(got, want)
    assert np.array_equal(got[20:], want[20:])


def test_a_moved_or_turned_mesh_reads_as_its_product(bpy_module):
    """A mesh moved 1 km (its matrix's 3x3 part the identity) and one turned too: their
    evaluated world positions are the product of their local ones by their matrices."""
    from skin_collide.addon import extract

    bpy = bpy_module
    for turn in ((0.0, 0.0, 0.0), (0.4, 0.0, 1.1)):
        bpy.ops.mesh.primitive_ico_sphere_add(subdivisions=2)
        ob = bpy.context.active_object
        ob.rotation_euler = turn
        ob.location = (3.0, -2.0, 1000.0)
        bpy.context.view_layer.update()
        dg = bpy.context.evaluated_depsgraph_get()
        local = extract.evaluated_positions(ob, dg, world=False)
        M = np.array(ob.evaluated_get(dg).matrix_world, dtype=np.float64)
        assert np.array_equal(M[:3, :3], np.eye(3)) == (turn == (0.0, 0.0, 0.0))
        world = extract.evaluated_positions(ob, dg)
        np.testing.assert_array_equal(world, local @ M[:3, :3].T + M[:3, 3])
