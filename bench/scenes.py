"""Benchmark scenes built from the shared assets: subdivided characters and interpenetrating
copies (Kavan & Žára 2005, Table 3 setup: every triangle split into four, same shape)."""
from __future__ import annotations

import math


def subdivide_rest_mesh(ob, levels: int) -> None:
    """Split every face into four, `levels` times, on the rest mesh (vertex groups are
    interpolated, the shape is unchanged: a Simple subdivision applied before the
    Armature modifier)."""
    import bpy

    if levels <= 0:
        return
    mod = ob.modifiers.new("bench_subdiv", "SUBSURF")
    mod.subdivision_type = "SIMPLE"
    mod.levels = levels
    mod.render_levels = levels
    with bpy.context.temp_override(object=ob, active_object=ob):
        bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)
        bpy.ops.object.modifier_apply(modifier=mod.name)


def duplicate_character(ob, arm, name: str, offset=(0.0, 0.25, 0.0), turn: float = math.pi):
    """A full copy (mesh + armature + action) turned by `turn` about Z and moved by
    `offset`, so that two characters interpenetrate."""
    import bpy

    arm2 = arm.copy()
    arm2.data = arm.data.copy()
    arm2.name = f"{name}_rig"
    bpy.context.scene.collection.objects.link(arm2)
    ob2 = ob.copy()
    ob2.data = ob.data.copy()
    ob2.name = name
    bpy.context.scene.collection.objects.link(ob2)
    ob2.parent = arm2 if ob.parent == arm else ob.parent
    for mod in ob2.modifiers:
        if mod.type == "ARMATURE" and mod.object == arm:
            mod.object = arm2
    # Through the world matrix: glTF armatures use quaternion rotation, where editing
    # rotation_euler silently does nothing (the copy would stand exactly on the original).
    from mathutils import Matrix, Vector

    loc, rot, scale = arm.matrix_world.decompose()
    arm2.matrix_world = (Matrix.Translation(loc + Vector(offset)) @ Matrix.Rotation(turn, 4, "Z")
                         @ rot.to_matrix().to_4x4() @ Matrix.Diagonal(scale).to_4x4())
    bpy.context.view_layer.update()
    return ob2, arm2


def framing_view(objects, w: int, h: int):
    """The view and projection matrices (mathutils) looking at `objects`' mesh vertices
    (world space) from the front right, for a w x h viewport (`addon.snapshot.look_at`)."""
    import numpy as np
    from mathutils import Matrix

    from skin_collide.addon import snapshot

    every = np.concatenate([np.array([o.matrix_world @ v.co for v in o.data.vertices])
                            for o in objects])
    view, proj = snapshot.look_at((every.min(0) + every.max(0)) / 2,
                                  0.5 * np.linalg.norm(np.ptp(every, 0)),
                                  np.array([0.3, -1.0, 0.35]), w / h)
    return Matrix(view.tolist()), Matrix(proj.tolist())
