"""A bone scaled to zero on MakeHuman with self-collision on: one refresh through the
add-on (degenerate-pose check and its message) against Blender's own BVHTree on the same
evaluated frame (FromPolygons on world-space loop triangles + self overlap).

    bash dev python bench/bench_degenerate.py [BONE [SCALE | X,Y,Z]]   (spine03, 0 by default)
"""
import os
import sys
import time

import bpy
from mathutils.bvhtree import BVHTree

import skin_collide  # noqa: E402
from skin_collide.addon import files, session  # noqa: E402

ASSET = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "assets",
                     "makehuman_default.blend")


def main():
    skin_collide.register()
    files.load_file(ASSET)
    scene = bpy.context.scene
    ob = bpy.data.objects["makehuman_body"]
    ob.select_set(True)
    bpy.context.view_layer.objects.active = ob
    scene.skin_collide.self_collision = True
    bpy.ops.skin_collide.build()
    arm = ob.modifiers[[m.type for m in ob.modifiers].index("ARMATURE")].object
    t0 = time.perf_counter()
    bpy.ops.skin_collide.refresh()        # warm: the self-collision tree is built on first use
    print(f"first query at rest (builds the self-collision tree) {time.perf_counter() - t0:.3f} s")
    bone = sys.argv[1] if len(sys.argv) > 1 else "spine03"
    scale = tuple(float(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "0").split(","))
    arm.pose.bones[bone].scale = scale * 3 if len(scale) == 1 else scale
    bpy.context.view_layer.update()
    dg = bpy.context.evaluated_depsgraph_get()
    me = ob.evaluated_get(dg).data
    M = ob.matrix_world
    me.calc_loop_triangles()
    verts = [M @ v.co for v in me.vertices]
    tris = [tuple(t.vertices) for t in me.loop_triangles]
    t1 = time.perf_counter()
    tree = BVHTree.FromPolygons(verts, tris, all_triangles=True)
    n = len(tree.overlap(tree))
    ref = time.perf_counter() - t1
    print(f"Blender FromPolygons+overlap {ref:.2f} s ({n // 2} triangle pairs)", flush=True)
    t0 = time.perf_counter()
    try:
        bpy.ops.skin_collide.refresh()
        msg = ""
    except RuntimeError as exc:           # the operator's one-line report
        msg = str(exc)
    ours = time.perf_counter() - t0
    res = session.live_result(scene)
    print(f"bone {bone} scale {scale}: ours {ours:.3f} s, ratio to Blender {ours / ref:.4f}; "
          f"pairs {res.n_pairs if res else None}; report: {msg!r}")


main()
