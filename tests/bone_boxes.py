"""Small rigs the Blender tests build by script: an armature with given bones, and boxes
each skinned wholly to one bone (a segmented mannequin's parts). Needs bpy."""
from __future__ import annotations


def armature(name: str, bones) -> object:
    """An armature object `name` linked to the scene, active, with the bones
    ``(name, head, tail)`` of `bones`; back in Object Mode."""
    import bpy

    data = bpy.data.armatures.new(name)
    arm = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    for bone, head, tail in bones:
        b = data.edit_bones.new(bone)
        b.head, b.tail = head, tail
    bpy.ops.object.mode_set(mode="OBJECT")
    return arm


def box_on_bone(name: str, bone: str, arm, location, scale=(1, 1, 1)) -> object:
    """A 1 m cube at `location` scaled by `scale` (applied), every vertex weighted 1 to
    `bone`, with an Armature modifier on `arm`."""
    import bpy

    bpy.ops.mesh.primitive_cube_add(size=1, location=location, scale=scale)
    ob = bpy.context.active_object
    ob.name = name
    bpy.ops.object.transform_apply(location=True, rotation=True, scale=True)
    vg = ob.vertex_groups.new(name=bone)
    vg.add(list(range(len(ob.data.vertices))), 1.0, "REPLACE")
    ob.modifiers.new("Armature", "ARMATURE").object = arm
    return ob
