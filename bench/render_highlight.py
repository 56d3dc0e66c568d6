"""Render the README picture: MakeHuman's benchmark pose (frame 25), self-collisions baked
in red, Cycles on the CPU.

    bash dev python bench/render_highlight.py [OUT.png]
"""
import os
import sys

import bpy

import skin_collide
from skin_collide.addon import bake, files

HERE = os.path.dirname(os.path.abspath(__file__))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "docs", "highlight_makehuman_f25.png")
skin_collide.register()
files.load_file(os.path.join(HERE, "..", "..", "shared", "assets", "makehuman_default.blend"))
scene = bpy.context.scene
ob = bpy.data.objects["makehuman_body"]
ob.select_set(True)
bpy.context.view_layer.objects.active = ob
scene.skin_collide.self_collision = True
bpy.ops.skin_collide.build()
scene.frame_set(25)
bpy.ops.skin_collide.bake_highlight()
px = bake.render_preview(scene, [ob], os.path.abspath(out), size=(300, 400), samples=8)
print(f"wrote {out}: {bake.red_pixels(px)} highlighted pixels")
