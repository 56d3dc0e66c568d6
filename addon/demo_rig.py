"""A generated, animated skinned character, so the project needs no downloaded asset.

The "character" is a capped tube (quads along the body, n-gon caps) skinned to a chain of
bones with smooth weights over up to four bones, animated with bends and twists. Two of
them facing each other pass through each other half-way through the animation, which gives
the collision scan something to find. Built through ``bpy.data`` (one mode switch for the
edit bones), so it works headless.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.procedural import chain_weights, tube_geometry


def build_character(name: str = "Demo", location=(0.0, 0.0, 0.0), rotation_z: float = 0.0,
                    rings: int = 48, segments: int = 24, n_bones: int = 6,
                    length: float = 2.0, radius: float = 0.25, frames: int = 48,
                    preserve_volume: bool = False, swing: float = 1.0):
    """Create an animated skinned tube character in the current scene.

    Returns (mesh object, armature object). The animation runs from frame 1 to `frames`:
    the chain bends towards +Y (in its own frame) and twists, then returns.
    """
    import bpy

    scene = bpy.context.scene
    arm_data = bpy.data.armatures.new(f"{name}_armature")
    arm_ob = bpy.data.objects.new(f"{name}_rig", arm_data)
    scene.collection.objects.link(arm_ob)
    arm_ob.location = location
    arm_ob.rotation_euler = (0.0, 0.0, rotation_z)
    bpy.context.view_layer.objects.active = arm_ob
    bpy.ops.object.mode_set(mode="EDIT")
    seg = length / n_bones
    names = []
    parent = None
    for i in range(n_bones):
        eb = arm_data.edit_bones.new(f"bone_{i}")
        eb.head = (0.0, 0.0, i * seg)
        eb.tail = (0.0, 0.0, (i + 1) * seg)
        if parent is not None:
            eb.parent = parent
            eb.use_connect = True
        parent = eb
        names.append(eb.name)
    bpy.ops.object.mode_set(mode="OBJECT")

    verts, faces = tube_geometry(rings, segments, length, radius)
    me = bpy.data.meshes.new(f"{name}_mesh")
    me.from_pydata(verts.tolist(), [], faces)
    me.update()
    ob = bpy.data.objects.new(name, me)
    scene.collection.objects.link(ob)
    ob.parent = arm_ob
    weights = chain_weights(verts[:, 2], n_bones, length)
    for j, bname in enumerate(names):
        vg = ob.vertex_groups.new(name=bname)
        nz = np.nonzero(weights[:, j])[0]
        for v in nz.tolist():
            vg.add([v], float(weights[v, j]), "REPLACE")
    mod = ob.modifiers.new("Armature", "ARMATURE")
    mod.object = arm_ob
    mod.use_deform_preserve_volume = preserve_volume

    for pb in arm_ob.pose.bones:
        pb.rotation_mode = "XYZ"
    mid = (1 + frames) // 2
    for f, amount in ((1, 0.0), (mid, 1.0), (frames, 0.0)):
        for i, pb in enumerate(arm_ob.pose.bones):
            bend = swing * amount * (0.35 if i else 0.0) * (1 + 0.2 * i)
            pb.rotation_euler = (-bend, 0.4 * amount * swing, 0.0)
            pb.keyframe_insert("rotation_euler", frame=f)
    scene.frame_start, scene.frame_end = 1, frames
    return ob, arm_ob


def build_demo_scene(rings: int = 48, segments: int = 24, frames: int = 48,
                     preserve_volume: bool = False):
    """Two tube characters facing each other that collide mid-animation.

    Returns the two mesh objects.
    """
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    a, _ = build_character("Left", location=(-0.45, 0.0, 0.0), rotation_z=-math.pi / 2,
                           rings=rings, segments=segments, frames=frames,
                           preserve_volume=preserve_volume)
    b, _ = build_character("Right", location=(0.45, 0.0, 0.0), rotation_z=math.pi / 2,
                           rings=rings, segments=segments, frames=frames,
                           preserve_volume=preserve_volume)
    bpy.context.scene.frame_set(1)
    return a, b
