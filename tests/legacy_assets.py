"""Copies of the shared .blend characters for a Blender that cannot read them.

The shared `makehuman_default.blend` was saved by Blender 5.0, whose file format 4.2 LTS
cannot read. Blender 4.5 LTS reads it and writes the 4.x format that 4.2 reads, with the
same mesh, weights, rig and action (its posed vertices at frame 25 are bit-identical in
4.2 and 5.0). `bash dev test --bpy V` runs this script:

    python tests/legacy_assets.py unreadable SRC_DIR      (with the tested bpy)
        prints "unreadable: NAME" for each .blend file of SRC_DIR that this bpy cannot
        open (Blender prints its own lines on stdout too)
    python tests/legacy_assets.py convert SRC.blend DST.blend   (with bpy 4.5)
        saves SRC as DST in the format of this bpy
"""
from __future__ import annotations

import os
import sys


def _quiet_open(bpy, path: str) -> bool:
    try:
        bpy.ops.wm.open_mainfile(filepath=path, load_ui=False)
    except RuntimeError:
        return False
    return True


def main(argv: list[str]) -> int:
    import bpy

    if len(argv) == 2 and argv[0] == "unreadable":
        names = sorted(n for n in os.listdir(argv[1]) if n.endswith(".blend"))
        bad = [n for n in names if not _quiet_open(bpy, os.path.join(argv[1], n))]
        sys.stdout.write("".join(f"unreadable: {n}\n" for n in bad))
        return 0
    if len(argv) == 3 and argv[0] == "convert":
        if not _quiet_open(bpy, argv[1]):
            print(f"legacy_assets: bpy {bpy.app.version_string} cannot open {argv[1]}",
                  file=sys.stderr)
            return 1
        tmp = argv[2] + ".tmp.blend"
        bpy.ops.wm.save_as_mainfile(filepath=tmp, copy=True, compress=False)
        os.replace(tmp, argv[2])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    from skin_collide.cli import exit_process

    exit_process(main(sys.argv[1:]))     # bpy 4.5 hangs in its exit handlers otherwise
