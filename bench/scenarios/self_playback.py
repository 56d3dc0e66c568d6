"""Self-collision playback through the pipeline a user runs (issue 43's first bar).

One character, consecutive frames of its action, one process, the same frames on both
sides:

* ours, *whole*: `Scanner([ob], self_collision=True).current(scene, depsgraph)` on the
  evaluated frame: reading Blender's evaluated positions, triangles and pose (with the
  rig and degenerate-pose checks), the query, polygon pairs and contacts; its parts are
  *reading* (the whole less the record's `ms`) and *query + contacts* (`ms`);
* Blender: `BVHTree.FromObject(ob, depsgraph)` + `tree.overlap(tree)` on the same
  depsgraph (the bar: 10x);
* Blender's evaluation of the frame (`frame_set`), which both sides need first and
  neither's time includes.

Every `--check`-th frame (4: the first, fifth, ...) is answered again by a `Scanner`
built anew, which has seen no earlier frame (nothing carried: seed hints, memos), and the
polygon pairs must be equal (exits non-zero if not); its time is not counted, and the
table says how many checked frames had pairs to compare. A frame whose pose cannot be
checked (degenerate bones) is left out of the medians.

Prints medians and their ratio, and with ``--verbose`` each frame; ``--profile`` runs
cProfile over our frames.

    bash dev python -m bench self-playback
    bash dev python -m bench self-playback --asset cesium_man.glb --level 1
    bash dev python -m bench self-playback --frames 49 --start 0 --verbose
"""
from __future__ import annotations

import gc
import sys

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0, help="Simple subdivisions of the mesh")
    p.add_argument("--frames", type=int, default=24, help="consecutive frames")
    p.add_argument("--start", type=int, default=0, help="first frame after the action's start")
    p.add_argument("--check", type=int, default=4,
                   help="compare every Nth frame with a scanner built anew (0: never)")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--profile", action="store_true")


def measure(args) -> dict:
    import bpy

    from skin_collide.addon import scanner

    ob = scenes.load_one(args.asset, args.level)
    scene = bpy.context.scene
    lo, hi = scenes.action_range(ob)
    frames = list(range(lo + args.start, min(lo + args.start + args.frames, hi + 1)))
    if not frames:
        sys.exit(f"no frames: the action runs from {lo} to {hi}")
    sc = scanner.Scanner([ob], self_collision=True)
    sc.run(scene, [frames[0]])                          # build, first refit, caches
    rows = timing.Samples()
    checked = with_pairs = 0
    with timing.profiled(args.profile) as prof:
        for k, f in enumerate(frames):
            t0 = timing.now()
            scene.frame_set(f)
            dg = bpy.context.evaluated_depsgraph_get()
            ev = timing.ms_since(t0)
            t1 = timing.now()
            if prof:
                prof.enable()
            out = sc.current(scene, dg)
            if prof:
                prof.disable()
            whole = timing.ms_since(t1)
            blender, n_bl = timing.blender_overlap([ob], dg)
            rec = out.record
            if not rec.not_checked:
                rows.add(eval=ev, whole=whole, ms=rec.ms, blender=blender,
                         pairs=len(rec.pairs), reading=whole - rec.ms)
            if args.check and k % args.check == 0:
                # Outside the timed part: a build, then one frame.
                fresh = scanner.Scanner([ob], self_collision=True)        # built anew
                again = fresh.current(scene, dg).record
                if again.pairs != rec.pairs:
                    sys.exit(f"MISMATCH at frame {f}: {len(rec.pairs)} polygon pairs played, "
                             f"{len(again.pairs)} fresh")
                checked += 1
                with_pairs += bool(rec.pairs)
                del fresh, again
                gc.collect()                    # not inside the next frame's time
            if args.verbose and len(rows):
                r = {k: rows.last(k) for k in ("whole", "ms", "blender", "eval", "pairs")}
                print(f"  f{f}: whole {r['whole']:.2f} ms (query + contacts {r['ms']:.2f}), "
                      f"Blender {r['blender']:.2f} ms, evaluation {r['eval']:.2f} ms, "
                      f"polygon pairs {r['pairs']}, Blender triangle pairs {n_bl}", flush=True)
    if not len(rows):
        sys.exit("no frame could be checked")
    out = rows.medians()
    out.update(asset=args.asset, triangles=int(sc.triangles[0].shape[0]), frames=len(rows),
               ratio=rows.ratio("blender", "whole"), ratio_ms=rows.ratio("blender", "ms"),
               checked=checked, with_pairs=with_pairs)
    return out


def run(args) -> int:
    scenes.register_addon()
    r = measure(args)
    print(f"\nSelf-collision playback through the pipeline, {r['asset']} level {args.level} "
          f"({r['triangles']} triangles), {r['frames']} consecutive frames, medians (ms per "
          "frame)")
    timing.print_head("polygon pairs", "ours whole", "reading", "query + contacts",
                      "Blender FromObject + self-overlap", "Blender / whole",
                      "Blender / (query + contacts)", "Blender's evaluation")
    timing.print_row(f"{r['pairs']:.0f}", f"{r['whole']:.2f}", f"{r['reading']:.2f}",
                     f"{r['ms']:.2f}", f"{r['blender']:.2f}", f"{r['ratio']:.2f}",
                     f"{r['ratio_ms']:.2f}", f"{r['eval']:.2f}")
    print(f"Checked against a scanner built anew: {r['checked']} frames, equal; "
          f"{r['with_pairs']} of them with polygon pairs.")
    return 0


registry.register("self-playback", "one character's self-collision playback through the "
                  "Scanner, against Blender's BVHTree rebuild (issue 43)", options, run,
                  smoke={"asset": scenes.SMOKE, "frames": 3, "check": 2}, doc=__doc__)
