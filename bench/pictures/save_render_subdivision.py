"""Save a shared asset with a Subdivision Surface after the Armature modifier of every
skinned mesh, at viewport level 0 and render level N (the light-viewport / smooth-render
set-up, issue 55): the viewport scan checks the mesh's own surface, `scan --as-rendered`
the subdivided one renders draw. For measuring the two on one file.

Usage (from the repository root), MakeHuman at render level 1 (107,024 triangles rendered):
    bash dev python -m bench.pictures.save_render_subdivision --asset makehuman_default.blend \\
        --render-level 1 --out out/makehuman_render_sub1.blend
    /usr/bin/time -f "%e s, %M KB" bash dev skin_collide scan out/makehuman_render_sub1.blend --self
    /usr/bin/time -f "%e s, %M KB" bash dev skin_collide scan out/makehuman_render_sub1.blend --self --as-rendered
Not a test.
"""
from __future__ import annotations

import argparse
import os
import sys

from bench import scenes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--asset", default="makehuman_default.blend")
    ap.add_argument("--render-level", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import bpy

    from skin_collide.addon import extract, files

    files.load_file(scenes.require(args.asset))
    for ob in extract.skinned_meshes(bpy.context.scene):
        sub = ob.modifiers.new("Subdivision", "SUBSURF")
        sub.levels, sub.render_levels = 0, args.render_level
        tris = sum(len(p.vertices) - 2 for p in ob.data.polygons)
        print(f"{ob.name}: {tris} triangles in the viewport, Subdivision Surface render "
              f"level {args.render_level}")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.out), compress=False, copy=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
