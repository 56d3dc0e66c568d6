"""The `Rig` of a mesh's own data (`source_rig`): its armature's bones, the vertex-group
weights of its deform bones and the mesh-to-armature matrix, or, for a mesh without an
armature, a rig without bones moved by its world matrix (a rigid prop). Building a rig
loops over the vertices once (vertex groups have no bulk accessor).
"""
from __future__ import annotations

import numpy as np

from ...core.rig import Rig
from .mesh import RigError, matrix_to_np, read_topology
from .stack import VirtualArmature, deformers, modifier_report, what_moves


def bone_arrays(arm_ob):
    bones = arm_ob.data.bones
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    parents = np.array([index[b.parent.name] if b.parent else -1 for b in bones], dtype=np.int32)
    J = len(bones)
    rest = np.empty(J * 16, dtype=np.float32)
    if J:
        bones.foreach_get("matrix_local", rest)
    # foreach_get flattens matrices column by column.
    rest = rest.reshape(J, 4, 4).transpose(0, 2, 1).astype(np.float64)
    deform = np.array([b.use_deform for b in bones], dtype=bool)
    return names, index, parents, rest, deform


def read_weights(ob, bone_index: dict[str, int], deform: np.ndarray, me=None):
    """Deform-bone weights of every vertex, in Blender's per-vertex group order, of `ob`'s
    own mesh or of `me` (its evaluated mesh, whose weights index the object's groups too).

    Returns weight_ptr (V + 1,) int64, weight_bone (W,) int32, weight_value (W,) float64,
    and the number of vertex groups that name no deform bone (ignored, as Blender does).
    """
    group_to_bone = np.full(max(len(ob.vertex_groups), 1), -1, dtype=np.int64)
    ignored = 0
    for g in ob.vertex_groups:
        j = bone_index.get(g.name, -1)
        if j >= 0 and deform[j]:
            group_to_bone[g.index] = j
        else:
            ignored += 1
    me = ob.data if me is None else me
    V = len(me.vertices)
    counts = np.zeros(V, dtype=np.int64)
    groups: list[int] = []
    values: list[float] = []
    for v in me.vertices:
        n = 0
        for g in v.groups:
            groups.append(g.group)
            values.append(g.weight)
            n += 1
        counts[v.index] = n
    grp = np.asarray(groups, dtype=np.int64)
    val = np.asarray(values, dtype=np.float32).astype(np.float64)
    bone = group_to_bone[grp] if grp.size else grp
    # Blender skips groups without a deform bone and zero weights (they add nothing,
    # not even to the normalization).
    keep = (bone >= 0) & (val != 0.0) if grp.size else np.zeros(0, dtype=bool)
    vert = np.repeat(np.arange(V), counts)
    kept_counts = np.bincount(vert[keep], minlength=V)
    ptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(kept_counts, out=ptr[1:])
    return ptr, bone[keep].astype(np.int32), val[keep], ignored


def mesh_to_armature_at_rest(ob, arm_ob) -> np.ndarray:
    """(4, 4) float64 ``A⁻¹ M`` of mesh `ob` and armature `arm_ob`, for deciding seams.

    A mesh parented to the armature object gets ``matrix_parent_inverse @ matrix_basis``,
    which does not depend on where the armature stands (root motion, a character far from
    the origin) and is bit for bit the same for parts with the same transforms; otherwise
    the world matrices are used.
    """
    if ob.parent is arm_ob and ob.parent_type in {"OBJECT", "ARMATURE"}:
        return matrix_to_np(ob.matrix_parent_inverse) @ matrix_to_np(ob.matrix_basis)
    return np.linalg.solve(matrix_to_np(arm_ob.matrix_world), matrix_to_np(ob.matrix_world))


def _check_mesh(ob) -> None:
    if ob is None or ob.type != "MESH":
        raise RigError(f"{getattr(ob, 'name', ob)!s} is not a mesh object")
    if ob.mode == "EDIT":
        raise RigError(f"'{ob.name}' is in Edit Mode: switch to Object Mode first")
    if len(ob.data.vertices) == 0:
        raise RigError(f"mesh '{ob.name}' has no vertices")


def source_rig(ob, moved: str = "") -> Rig:
    """The `Rig` of `ob`'s own mesh data (what the Armature modifier receives; for a mesh
    without an armature, its mesh moved by its world matrix), read without evaluating
    anything: the rig of a plain Armature stack, and what the staleness check compares
    for any stack.

    `moved`: for a mesh without an armature, what moves it when its settings do not say
    (`addon.motion` saw its evaluated positions change between frames).

    Raises `RigError` for a non-mesh, a mesh in Edit Mode or without vertices, and a mesh
    that is neither skinned nor moved by anything (`what_moves`, `deformers`). Anything
    that keeps `core.skinning` from reproducing Blender's result exactly goes into
    `Rig.unsupported` (such a rig is refitted bottom-up from Blender's positions).
    """
    if ob is None or ob.type != "MESH":
        raise RigError(f"{getattr(ob, 'name', ob)!s} is not a mesh object")
    report = modifier_report(ob)
    if report.armature is None:
        moved = what_moves(ob) or moved or ", ".join(deformers(ob))
    else:
        moved = ""
    if report.armature is None and not moved:
        raise RigError(f"mesh '{ob.name}' has no armature and nothing moves it "
                       "(no parent, constraint, animation, shape key or modifier): parent "
                       "it to a bone (Ctrl+P > Bone) or an object to check it as a rigid "
                       "prop, or skin it with an Armature modifier")
    _check_mesh(ob)
    if moved:
        return _rigid_rig(ob, moved)
    arm_ob = report.armature
    if arm_ob.type != "ARMATURE":
        raise RigError(f"the Armature modifier of '{ob.name}' points to '{arm_ob.name}', "
                       "which is not an armature")
    mod = report.armature_modifier
    names, index, parents, rest_mats, deform = bone_arrays(arm_ob)
    rest, tris, poly, poly_ptr, poly_verts = read_topology(ob.data)
    ptr, bone, value, ignored = read_weights(ob, index, deform)
    if mod is None:
        mod = VirtualArmature(bool((np.diff(ptr) == 0).any()))

    unsupported: list[str] = []
    notes: list[str] = []
    if report.before:
        unsupported.append("modifiers before the Armature modifier: " + ", ".join(report.before))
    if report.after:
        unsupported.append("modifiers after the Armature modifier: " + ", ".join(report.after))
    if report.other_armatures:
        unsupported.append("more than one Armature modifier: " + ", ".join(report.other_armatures))
    keys = ob.data.shape_keys
    if keys is not None and len(keys.key_blocks) > 1:
        unsupported.append(f"{len(keys.key_blocks) - 1} shape keys (the armature deforms the "
                           "shape-key mix, which the rest pose does not contain)")
    if not mod.use_vertex_groups:
        unsupported.append("the Armature modifier does not use vertex groups")
    if mod.use_bone_envelopes:
        unsupported.append(mod.envelope_reason if report.virtual else
                           "bone envelopes are enabled on the Armature modifier")
    if mod.vertex_group:
        unsupported.append(f"the Armature modifier is masked by vertex group '{mod.vertex_group}'")
    if mod.use_multi_modifier:
        unsupported.append("the Armature modifier uses Multi Modifier")
    used = np.zeros(len(names), dtype=bool)
    used[np.unique(bone)] = True
    bones = arm_ob.data.bones
    bbones = [b.name for b, u in zip(bones, used) if u and b.bbone_segments > 1]
    if bbones:
        unsupported.append("B-Bones with segments > 1 are not supported: " + ", ".join(bbones[:5])
                           + (" ..." if len(bbones) > 5 else ""))
    env_mult = [b.name for b, u in zip(bones, used) if u and b.use_envelope_multiply]
    if env_mult:
        unsupported.append("bones multiply vertex groups by envelopes: " + ", ".join(env_mult[:5]))
    if ignored:
        notes.append(f"{ignored} vertex groups name no deform bone and are ignored, as Blender does")
    return Rig(
        name=ob.name_full, rest_positions=rest, triangles=tris, tri_polygon=poly,
        weight_ptr=ptr, weight_bone=bone, weight_value=value, bone_names=names,
        bone_parents=parents, bone_rest=rest_mats, bone_deform=deform,
        poly_ptr=poly_ptr, poly_verts=poly_verts, preserve_volume=bool(mod.use_deform_preserve_volume),
        unsupported=unsupported, notes=notes,
        armature=arm_ob.name_full, mesh_to_armature=mesh_to_armature_at_rest(ob, arm_ob),
    )


def no_bones(V: int) -> dict:
    """The bone and weight arrays of a rig without bones (every vertex static)."""
    return dict(weight_ptr=np.zeros(V + 1, np.int64), weight_bone=np.zeros(0, np.int32),
                weight_value=np.zeros(0), bone_names=[], bone_parents=np.zeros(0, np.int32),
                bone_rest=np.zeros((0, 4, 4)), bone_deform=np.zeros(0, bool))


def _rigid_rig(ob, moved: str) -> Rig:
    """A rigid prop's rig: no bones, so that every vertex is on the static joint and its
    skinning matrix is the mesh's world matrix (`rigid_pose`). Its own modifiers and shape
    keys move vertices the world matrix does not: `unsupported` (refitted bottom-up)."""
    rest, tris, poly, poly_ptr, poly_verts = read_topology(ob.data)
    unsupported = []
    deform = deformers(ob)
    if deform:
        unsupported.append("deformed without an armature: " + ", ".join(deform))
    note = (f"deformed by {', '.join(deform)}: refitted from Blender's positions" if deform
            else f"rigid: moves with {moved}, one transform per frame")
    return Rig(name=ob.name, rest_positions=rest, triangles=tris, tri_polygon=poly,
               poly_ptr=poly_ptr, poly_verts=poly_verts, unsupported=unsupported,
               notes=[note], rigid=moved, **no_bones(rest.shape[0]))
