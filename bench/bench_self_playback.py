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
cProfile over our frames. Not a test: nothing here asserts on time.

Usage (from the repository root):
    bash dev python bench/bench_self_playback.py
    bash dev python bench/bench_self_playback.py --asset cesium_man.glb --level 1
    bash dev python bench/bench_self_playback.py --frames 49 --start 0 --verbose
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def run(args) -> dict:
    import bench_self
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import extract, scanner

    ob = bench_self.load_one(args.asset, args.level)
    scene = bpy.context.scene
    arm = extract.modifier_report(ob).armature
    lo, hi = (int(x) for x in arm.animation_data.action.frame_range)
    frames = list(range(lo + args.start, min(lo + args.start + args.frames, hi + 1)))
    if not frames:
        sys.exit(f"no frames: the action runs from {lo} to {hi}")
    sc = scanner.Scanner([ob], self_collision=True)
    sc.run(scene, [frames[0]])                          # build, first refit, caches
    rows = []
    checked = with_pairs = 0
    prof = None
    if args.profile:
        import cProfile
        prof = cProfile.Profile()
    for k, f in enumerate(frames):
        t0 = time.perf_counter()
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        t1 = time.perf_counter()
        if prof:
            prof.enable()
        out = sc.current(scene, dg)
        t2 = time.perf_counter()
        if prof:
            prof.disable()
        tree = BVHTree.FromObject(ob, dg)
        n_bl = len(tree.overlap(tree))
        t3 = time.perf_counter()
        rec = out.record
        if not rec.not_checked:
            rows.append({"eval": (t1 - t0) * 1e3, "whole": (t2 - t1) * 1e3, "ms": rec.ms,
                         "blender": (t3 - t2) * 1e3, "pairs": len(rec.pairs)})
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
        if args.verbose and rows:
            r = rows[-1]
            print(f"  f{f}: whole {r['whole']:.2f} ms (query + contacts {r['ms']:.2f}), "
                  f"Blender {r['blender']:.2f} ms, evaluation {r['eval']:.2f} ms, "
                  f"polygon pairs {r['pairs']}, Blender triangle pairs {n_bl}", flush=True)
    if prof:
        import pstats
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)

    if not rows:
        sys.exit("no frame could be checked")

    def med(key):
        return statistics.median(r[key] for r in rows)
    return {"asset": args.asset, "triangles": int(sc.triangles[0].shape[0]),
            "frames": len(rows), "whole": med("whole"), "ms": med("ms"),
            "reading": statistics.median(r["whole"] - r["ms"] for r in rows),
            "blender": med("blender"), "eval": med("eval"), "pairs": med("pairs"),
            "ratio": statistics.median(r["blender"] / r["whole"] for r in rows),
            "ratio_ms": statistics.median(r["blender"] / r["ms"] for r in rows),
            "checked": checked, "with_pairs": with_pairs}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0, help="Simple subdivisions of the mesh")
    p.add_argument("--frames", type=int, default=24, help="consecutive frames")
    p.add_argument("--start", type=int, default=0, help="first frame after the action's start")
    p.add_argument("--check", type=int, default=4,
                   help="compare every Nth frame with a scanner built anew (0: never)")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()

    import bench_self

    import skin_collide

    if not os.path.isdir(bench_self.SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({bench_self.SHARED})")
    skin_collide.register()
    r = run(args)
    print(f"\nSelf-collision playback through the pipeline, {r['asset']} level {args.level} "
          f"({r['triangles']} triangles), {r['frames']} consecutive frames, medians (ms per "
          "frame)")
    print("| polygon pairs | ours whole | reading | query + contacts | Blender FromObject + "
          "self-overlap | Blender / whole | Blender / (query + contacts) | Blender's "
          "evaluation |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {r['pairs']:.0f} | {r['whole']:.2f} | {r['reading']:.2f} | {r['ms']:.2f} | "
          f"{r['blender']:.2f} | {r['ratio']:.2f} | {r['ratio_ms']:.2f} | {r['eval']:.2f} |")
    print(f"Checked against a scanner built anew: {r['checked']} frames, equal; "
          f"{r['with_pairs']} of them with polygon pairs.")


if __name__ == "__main__":
    main()
