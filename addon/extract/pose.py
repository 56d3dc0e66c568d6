"""A character's state at the current frame, read from the evaluated depsgraph: the bone
matrices of its armature (`pose_from_object`), a rigid prop's world matrix (`rigid_pose`),
the evaluated positions and the triangles Blender draws. ``foreach_get`` only: these run
on every frame.
"""
from __future__ import annotations

import numpy as np

from ...core.geometry import triangulation
from ...core.rig import Pose, Rig
from .mesh import RigError, matrix_to_np, read_loop_triangles
from .stack import modifier_report


def pose_from_object(ob, depsgraph, built_rest: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> Pose:
    """The current frame's `Pose` of mesh object `ob` (world space, evaluated).

    `built_rest`: (rest, inverse), (J, 4, 4) float64 each: the bones' rest matrices the
    data was built with (`Rig.bone_rest`) and their inverses, kept by the caller. The
    current rest matrices are still read (a cheap copy) and must equal them bit for bit,
    else RigError: an edited rest skeleton makes built data stale. Only the inversion is
    saved. A rigid rig's pose is `rigid_pose`."""
    arm_ob = modifier_report(ob).armature
    if arm_ob is None:
        raise RigError(f"mesh '{ob.name}' has no Armature modifier with an armature object")
    arm_eval = arm_ob.evaluated_get(depsgraph)
    ob_eval = ob.evaluated_get(depsgraph)
    pbones = arm_eval.pose.bones
    J = len(pbones)
    pose_mats = np.empty(J * 16, dtype=np.float32)
    if J:
        pbones.foreach_get("matrix", pose_mats)
    pose_mats = pose_mats.reshape(J, 4, 4).transpose(0, 2, 1).astype(np.float64)
    rest = np.empty(J * 16, dtype=np.float32)
    if J:
        arm_eval.data.bones.foreach_get("matrix_local", rest)
    rest = rest.reshape(J, 4, 4).transpose(0, 2, 1).astype(np.float64)
    if built_rest is not None:
        if built_rest[0].shape != rest.shape or not np.array_equal(built_rest[0], rest):
            raise RigError(f"the rest pose of '{arm_ob.name}' changed since the collision data "
                           f"of '{ob.name}' was built: rebuild")
        rest_inverse = built_rest[1]
    else:
        rest_inverse = np.linalg.inv(rest)
    deform = pose_mats @ rest_inverse
    arm_world = matrix_to_np(arm_eval.matrix_world)
    correction = getattr(ob, "correction", None)
    if correction is not None:
        # A collection instance (`addon.drawn.Instance`): the same skinning, drawn at the
        # instance's matrix, as if its armature stood there too.
        arm_world = correction(depsgraph) @ arm_world
    return Pose(deform, arm_world, matrix_to_np(ob_eval.matrix_world))


def rigid_pose(ob, depsgraph) -> Pose:
    """The current frame's `Pose` of a rigid prop: no bones, an identity armature matrix
    and the evaluated world matrix, so that the static joint's skinning matrix
    ``A · I · A⁻¹ · M`` is M exactly (`Pose.skinning_matrices`): wherever its parent (a
    bone, an object, a constraint, its animation) puts it."""
    M = matrix_to_np(ob.evaluated_get(depsgraph).matrix_world)
    return Pose(np.zeros((0, 4, 4)), np.eye(4), M)


def evaluated_positions(ob, depsgraph, world: bool = True) -> np.ndarray:
    """Positions of the evaluated mesh: (V, 3) float64, world space unless `world` is False.

    Reads the position attribute with ``foreach_get`` (about 50x faster than
    ``vertices.foreach_get('co')``).
    """
    ob_eval = ob.evaluated_get(depsgraph)
    me = ob_eval.data
    V = len(me.vertices)
    buf = np.empty(V * 3, dtype=np.float32)
    attr = me.attributes.get("position")
    if attr is not None:
        attr.data.foreach_get("vector", buf)
    else:  # edit-mesh wrappers expose no attribute
        me.vertices.foreach_get("co", buf)
    pos = buf.reshape(V, 3).astype(np.float64)
    if world:
        pos = to_world(pos, matrix_to_np(ob_eval.matrix_world))
    return pos


def to_world(local: np.ndarray, M: np.ndarray) -> np.ndarray:
    """(V, 3) float64 ``local @ M[:3, :3].T + M[:3, 3]``: points (V, 3) float64 through the
    4x4 matrix M. A character's mesh often sits under its armature with no turn (MakeHuman,
    Fox: the identity): where the 3x3 part is a permutation with signs, each world
    coordinate is one local coordinate, signed, plus the translation, the values the
    product gives (x * 1 + y * 0 + z * 0 is x exactly; only a zero's sign might differ),
    for a fraction of its time on every frame."""
    R, t = M[:3, :3], M[:3, 3]
    nz = R != 0
    if nz.sum(axis=1).tolist() == [1, 1, 1] and nz.sum(axis=0).tolist() == [1, 1, 1] \
            and (np.abs(R[nz]) == 1).all():
        col = np.argmax(nz, axis=1)
        out = np.empty_like(local)
        for j in range(3):
            np.multiply(local[:, col[j]], R[j, col[j]], out=out[:, j])
            out[:, j] += t[j]
        return out
    return local @ R.T + t


def evaluated_frame(ob, depsgraph, rig: Rig) -> tuple[np.ndarray, np.ndarray]:
    """The frame's world positions (V, 3) float64 and the triangles Blender draws (T, 3)
    int32, in the order of `rig.triangles`.

    Quads are re-split with Blender's own rule on the mesh-local float32 positions (the
    space and precision Blender decides in), so no extra read is needed; meshes with
    n-gons read the evaluated loop triangles instead (polyfill also changes per frame).
    """
    ob_eval = ob.evaluated_get(depsgraph)
    local = evaluated_positions(ob, depsgraph, world=False)
    world = to_world(local, matrix_to_np(ob_eval.matrix_world))
    if triangulation.quads_of(rig).has_ngons:
        tris, _ = read_loop_triangles(ob_eval.data)
        if tris.shape != rig.triangles.shape:
            raise RigError(f"'{ob.name}' evaluates to {tris.shape[0]} triangles but was built "
                           f"with {rig.n_triangles}: its topology changed; rebuild")
    else:
        tris = triangulation.frame_triangles(rig, local)
    return world, tris
