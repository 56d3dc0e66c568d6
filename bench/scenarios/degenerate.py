"""A bone scaled to zero on MakeHuman with self-collision on: one refresh through the
add-on (degenerate-pose check and its message) against Blender's own BVHTree on the same
evaluated frame (FromPolygons on world-space loop triangles + self overlap).

    bash dev python -m bench degenerate [--bone BONE] [--scale SCALE | X,Y,Z]   (spine03, 0 by default)
"""
from __future__ import annotations

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--bone", default="spine03")
    p.add_argument("--scale", default="0", help="the bone's scale: one number or X,Y,Z")


def run(args) -> int:
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import session

    scenes.require(args.asset)
    scenes.register_addon()
    ob = scenes.load_asset(args.asset)
    scene = bpy.context.scene
    ob.select_set(True)
    bpy.context.view_layer.objects.active = ob
    scene.skin_collide.self_collision = True
    bpy.ops.skin_collide.build()
    arm = ob.modifiers[[m.type for m in ob.modifiers].index("ARMATURE")].object
    # Warm: the self-collision tree is built on first use.
    _, first = timing.timed_s(bpy.ops.skin_collide.refresh)
    print(f"first query at rest (builds the self-collision tree) {first:.3f} s")
    bone = args.bone
    scale = tuple(float(v) for v in args.scale.split(","))
    arm.pose.bones[bone].scale = scale * 3 if len(scale) == 1 else scale
    bpy.context.view_layer.update()
    dg = bpy.context.evaluated_depsgraph_get()
    me = ob.evaluated_get(dg).data
    M = ob.matrix_world
    me.calc_loop_triangles()
    verts = [M @ v.co for v in me.vertices]
    tris = [tuple(t.vertices) for t in me.loop_triangles]
    t1 = timing.now()
    tree = BVHTree.FromPolygons(verts, tris, all_triangles=True)
    n = len(tree.overlap(tree))
    ref = timing.ms_since(t1) / 1000
    print(f"Blender FromPolygons+overlap {ref:.2f} s ({n // 2} triangle pairs)", flush=True)
    t0 = timing.now()
    try:
        bpy.ops.skin_collide.refresh()
        msg = ""
    except RuntimeError as exc:           # the operator's one-line report
        msg = str(exc)
    ours = timing.ms_since(t0) / 1000
    res = session.live_result(scene)
    print(f"bone {bone} scale {scale}: ours {ours:.3f} s, ratio to Blender {ours / ref:.4f}; "
          f"pairs {res.n_pairs if res else None}; report: {msg!r}")
    return 0


registry.register("degenerate", "a bone scaled to zero with self-collision on: the add-on's "
                  "refresh (degenerate-pose check) against Blender's BVHTree", options, run,
                  smoke={"asset": scenes.SMOKE, "bone": "bone_3"}, doc=__doc__)
