"""The first live updates after Build: what an artist waits for on the first pose edit
after pressing Build (the panel's Build, then one bone turned by ±6° per edit, the live
pose handler `addon.handlers._update` timed per edit), with the Build's own time. The
first update used to decode the data the Build had just written and build the self tree
again; `--drop-kept` times it with the decoded data forgotten (as after reopening the
file, before any decoding), `--reopen SECONDS` after saving with the live overlay on,
opening the file again and waiting SECONDS (the data is decoded in the background from the
moment the file is open).
`--characters 2` builds a second copy of the character too (1 m away), and `--batch 1`
makes the Build take one character at a time, as it did before it built one per core.

    bash dev python -m bench first-update --levels 0 1
"""
from __future__ import annotations

import math
import os
import sys
import tempfile

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--levels", nargs="+", type=int, default=[0, 1])
    p.add_argument("--bone", default="finger2-2.L")
    p.add_argument("--edits", type=int, default=4)
    p.add_argument("--characters", type=int, choices=(1, 2), default=1)
    p.add_argument("--batch", type=int, default=None,
                   help="characters built per step of the Build (default: one per core)")
    p.add_argument("--reopen", type=float, default=None, metavar="SECONDS",
                   help="save with the live overlay on, open the file again, wait SECONDS, "
                        "then pose (the Build column then adds the file's opening time)")
    p.add_argument("--drop-kept", action="store_true",
                   help="forget the session's decoded data after Build (as after reopening)")
    p.add_argument("--frame", type=int, default=25, help="the frame posed")


def measure(asset: str, level: int, bone: str, edits: int, drop_kept: bool, characters: int,
            batch: int | None, reopen_wait: float | None, frame: int = 25) -> dict:
    import bpy

    from skin_collide.addon import handlers
    from skin_collide.addon.state import STATE
    from skin_collide.operators import build

    ob = scenes.load_one(asset, level)
    chosen = [ob]
    if characters == 2:
        arm = scenes.armature(ob)
        chosen.append(scenes.duplicate_character(ob, arm, f"{ob.name}_copy",
                                                 offset=(1.0, 0.0, 0.0), turn=0.0)[0])
    if batch is not None:
        build.batch_size = lambda: batch
    scenes.select_only(chosen, ob)
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    scene.frame_set(frame)
    with timing.Timer() as t:
        bpy.ops.skin_collide.build()
    build_s = t.s
    if drop_kept:
        STATE.objects.clear()                      # as after reopening the file
        STATE.verified.clear()
    open_s = None
    if reopen_wait is not None:                    # save with the overlay on, open again
        name = ob.name
        handlers._prefetch_on_load = lambda: True  # as in an interactive session
        scene.skin_collide.live = True
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "reopen.blend")
            bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
            bpy.ops.wm.read_homefile(use_empty=True)
            STATE.objects.clear()                  # as in a new Blender session
            STATE.verified.clear()
            with timing.Timer() as t:
                bpy.ops.wm.open_mainfile(filepath=path)
            open_s = t.s
        timing.sleep(reopen_wait)
        scene, ob = bpy.context.scene, bpy.data.objects[name]
        scene.skin_collide.live = False            # only the timed updates below run
    pb = scenes.armature(ob).pose.bones[bone]
    times = []
    for k in range(edits):
        scenes.rotate(pb, math.radians(6.0) * (1 if k % 2 else -1))
        dg = bpy.context.evaluated_depsgraph_get()
        dg.update()
        t0 = timing.now()
        handlers._update(scene, dg)
        times.append(timing.ms_since(t0))
        live = STATE.live[scene.name_full]
        if live.error:
            sys.exit(f"OVERLAY {asset} L{level} edit {k}: {live.error}")
    sides = np.zeros(len(ob.data.polygons), dtype=np.int64)
    ob.data.polygons.foreach_get("loop_total", sides)
    return {"triangles": int((sides - 2).sum()), "build": build_s, "updates": times,
            "open": open_s}


def run(args) -> int:
    scenes.require(args.asset)
    scenes.register_addon()
    print("| level | triangles | Build s | " +
          " | ".join(f"update {k + 1} ms" for k in range(args.edits)) + " |")
    print("|---|---|---|" + "---|" * args.edits)
    for level in args.levels:
        r = measure(args.asset, level, args.bone, args.edits, args.drop_kept, args.characters,
                    args.batch, args.reopen, args.frame)
        built = f"{r['build']:.2f}" if r["open"] is None else \
            f"{r['build']:.2f} (open {r['open']:.2f})"
        print(f"| {level} | {r['triangles']} | {built} | " +
              " | ".join(f"{t:.1f}" for t in r["updates"]) + " |")
    return 0


registry.register("first-update", "the first live updates after the panel's Build (one bone "
                  "posed per edit), with the Build's own time", options, run,
                  smoke={"asset": scenes.SMOKE, "levels": [0], "bone": "bone_3", "edits": 2,
                         "frame": 4}, doc=__doc__)
