"""Render the README picture: MakeHuman's benchmark pose (frame 25), self-collisions baked
in red, Cycles on the CPU.

    bash dev python -m bench.pictures.render_highlight [OUT.png]
"""
import os
import sys

from bench import scenes


def main(argv: list[str]) -> int:
    import bpy

    from skin_collide.addon import bake

    out = argv[0] if argv else os.path.join(scenes.ROOT, "docs", "highlight_makehuman_f25.png")
    scenes.register_addon()
    ob = scenes.load_asset("makehuman_default.blend")
    scene = bpy.context.scene
    ob.select_set(True)
    bpy.context.view_layer.objects.active = ob
    scene.skin_collide.self_collision = True
    bpy.ops.skin_collide.build()
    scene.frame_set(25)
    bpy.ops.skin_collide.bake_highlight()
    px = bake.render_preview(scene, [ob], os.path.abspath(out), size=(300, 400), samples=8)
    print(f"wrote {out}: {bake.red_pixels(px)} highlighted pixels")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
