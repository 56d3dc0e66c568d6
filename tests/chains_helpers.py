"""Generated characters with several limbs for the sphere-chains method (a chain joins two
limbs through the torso, so the tube characters of the demo, one limb each, have none)."""
import math

import numpy as np

from skin_collide.core import procedural
from skin_collide.core.rig import Rig


def _frame_to(d: np.ndarray) -> np.ndarray:
    """A rotation taking +Z to the unit vector `d` (columns: x, y, z axes)."""
    z = d / np.linalg.norm(d)
    a = np.array([1.0, 0, 0]) if abs(z[0]) < 0.9 else np.array([0, 1.0, 0])
    x = np.cross(a, z)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1)


def limb_directions(limbs: int) -> list[np.ndarray]:
    """Limbs spread around the torso, tilted down a little."""
    return [np.array([math.cos(2 * math.pi * k / limbs), math.sin(2 * math.pi * k / limbs),
                      -0.3]) for k in range(limbs)]


def star_geometry(limbs: int = 3, rings: int = 10, segments: int = 8, n_bones: int = 3,
                  length: float = 1.2, radius: float = 0.12):
    """A torso (a short upright tube weighted to the root bone) and `limbs` tubes leaving
    it, each skinned to its own chain of `n_bones` bones.

    Returns (verts (V, 3), quads list, weights (V, 1 + limbs * n_bones), bone heads,
    bone tails, parents): bone 0 is the root; limb k's bones are 1 + k n .. (k + 1) n."""
    tv, tf = procedural.tube_geometry(rings, segments, 0.6, 0.3)
    verts = [tv - [0, 0, 0.3]]
    faces = [list(f) for f in tf]
    J = 1 + limbs * n_bones
    weights = [np.zeros((tv.shape[0], J))]
    weights[0][:, 0] = 1.0
    heads, tails, parents = [(0, 0, -0.3)], [(0, 0, 0.3)], [-1]
    off = tv.shape[0]
    for k, d in enumerate(limb_directions(limbs)):
        R = _frame_to(d)
        start = 0.2 * R[:, 2]
        lv, lf = procedural.tube_geometry(rings, segments, length, radius)
        verts.append(lv @ R.T + start)
        faces += [[i + off for i in f] for f in lf]
        w = np.zeros((lv.shape[0], J))
        w[:, 1 + k * n_bones:1 + (k + 1) * n_bones] = procedural.chain_weights(
            lv[:, 2], n_bones, length)
        weights.append(w)
        seg = length / n_bones
        for i in range(n_bones):
            heads.append(tuple(start + R[:, 2] * i * seg))
            tails.append(tuple(start + R[:, 2] * (i + 1) * seg))
            parents.append(0 if i == 0 else len(parents) - 1)
        off += lv.shape[0]
    return (np.concatenate(verts), faces, np.concatenate(weights), heads, tails,
            np.array(parents, np.int32))


def star_rig(limbs: int = 3, **kw) -> Rig:
    """The star character as a core `Rig` (pure numpy; bones along their Y axis)."""
    verts, faces, w, heads, tails, parents = star_geometry(limbs, **kw)
    tris, owner = procedural.fan_triangulate([tuple(f) for f in faces])
    J = w.shape[1]
    rest = np.zeros((J, 4, 4))
    for j in range(J):
        y = np.subtract(tails[j], heads[j])
        R = _frame_to(y)                    # z -> bone direction; Blender's bone Y is it
        rest[j, :3, :3] = np.stack([R[:, 0], R[:, 2], -R[:, 1]], axis=1)
        rest[j, :3, 3] = heads[j]
        rest[j, 3, 3] = 1.0
    vert, bone = np.nonzero(w)
    ptr = np.zeros(verts.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(vert, minlength=verts.shape[0]), out=ptr[1:])
    return Rig(name="star", rest_positions=verts, triangles=tris, tri_polygon=owner,
               weight_ptr=ptr, weight_bone=bone.astype(np.int32), weight_value=w[vert, bone],
               bone_names=["root"] + [f"limb_{j}" for j in range(1, J)], bone_parents=parents,
               bone_rest=rest, bone_deform=np.ones(J, bool))


def star_character(bpy, name: str = "Star", limbs: int = 3, location=(0.0, 0.0, 0.0), **kw):
    """The star character in the current Blender scene: (mesh object, armature object)."""
    verts, faces, w, heads, tails, parents = star_geometry(limbs, **kw)
    scene = bpy.context.scene
    arm_data = bpy.data.armatures.new(f"{name}_armature")
    arm = bpy.data.objects.new(f"{name}_rig", arm_data)
    scene.collection.objects.link(arm)
    arm.location = location
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    names, ebs = [], []
    for j, (h, t, p) in enumerate(zip(heads, tails, parents)):
        eb = arm_data.edit_bones.new("root" if j == 0 else f"limb_{j}")
        eb.head, eb.tail = h, t
        if p >= 0:
            eb.parent = ebs[p]
        ebs.append(eb)
        names.append(eb.name)
    bpy.ops.object.mode_set(mode="OBJECT")
    me = bpy.data.meshes.new(f"{name}_mesh")
    me.from_pydata(verts.tolist(), [], faces)
    me.update()
    ob = bpy.data.objects.new(name, me)
    scene.collection.objects.link(ob)
    ob.parent = arm
    for j, bname in enumerate(names):
        vg = ob.vertex_groups.new(name=bname)
        for v in np.nonzero(w[:, j])[0].tolist():
            vg.add([v], float(w[v, j]), "REPLACE")
    mod = ob.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    bpy.context.view_layer.update()
    return ob, arm
