"""Save a shared asset with Simple subdivision applied to the rest mesh of every skinned
mesh (`bench.scenes.subdivide_rest_mesh`, the setup of the table3 and self scenarios), so
that the command-line `scan` can be measured on large meshes as a whole process.

Usage (from the repository root), MakeHuman at 428,096 triangles (level 2):
    bash dev python -m bench.pictures.save_subdivided --asset makehuman_default.blend --level 2 \\
        --out out/makehuman_428k.blend
    /usr/bin/time -v bash dev skin_collide scan out/makehuman_428k.blend --self --frames 25:25
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
    ap.add_argument("--level", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import bpy

    from skin_collide.addon import extract, files

    files.load_file(scenes.require(args.asset))
    for ob in extract.skinned_meshes(bpy.context.scene):
        scenes.subdivide_rest_mesh(ob, args.level)
        tris = sum(len(p.vertices) - 2 for p in ob.data.polygons)
        print(f"{ob.name}: {tris} triangles, {len(ob.data.vertices)} vertices")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=os.path.abspath(args.out), compress=False, copy=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
