"""Two characters' playback through the pipeline a user runs (issue 43): pairs between them.

Two MakeHuman copies (26,756 triangles each), the copy moved along X by a fraction of
the character's arm span (the X extent of its rest mesh), not turned: 0.9 of the span
and only the arms meet, 0.6 shoulder to shoulder, 0.3 standing in one another. Over
consecutive frames of the action, in one process on the same frames:

* ours: `Scanner([a, b]).run(scene, frames)`, each record's `ms` (the query, polygon
  pairs and contacts; not Blender's evaluation, which both sides share);
* Blender: `BVHTree.FromObject` of both evaluated objects and `overlap` of the two trees
  (local space, the issue's bar), on the depsgraph the record was made from.

Prints per offset the medians and their ratio, and with ``--verbose`` each frame.
``--without-deep`` also answers each frame a second time, on the same depsgraph, with
the deep way off (`core.scan.between.DEEP_SHARE` infinite: boxes or the methods'
volumes, as before it), and compares the pairs.
``--profile`` runs cProfile over our frames of the first offset. Not a test: nothing here
asserts on time.

Usage (from the repository root):
    bash dev python bench/bench_pair_playback.py
    bash dev python bench/bench_pair_playback.py --spans 0.3 --frames 24 --verbose
    bash dev python bench/bench_pair_playback.py --without-deep --level 1
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def run(args, span_fraction: float, profile: bool) -> dict:
    import bench_table3
    import bpy
    import numpy as np
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import extract, files, scanner

    files.load_file(os.path.join(bench_table3.SHARED, args.asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    co = np.array([v.co[0] for v in ob.data.vertices])
    span = float(co.max() - co.min()) * ob.matrix_world.to_scale()[0]
    ob, ob2 = bench_table3.load_pair(args.asset, args.level, (span_fraction * span, 0.0, 0.0),
                                     0.0)
    scene = bpy.context.scene
    arm = extract.modifier_report(ob).armature
    first = int(arm.animation_data.action.frame_range[0])
    frames = list(range(first + args.start, first + args.start + args.frames))
    sc = scanner.Scanner([ob, ob2])
    sc.run(scene, [frames[0]])                      # warm-up: first refit, caches
    from skin_collide.core.scan import between

    ours, bl, npairs, modes, old = [], [], [], set(), []
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
    for f in frames:
        if prof:
            prof.enable()
        rec = sc.step(scene, f)
        if prof:
            prof.disable()
        dg = bpy.context.evaluated_depsgraph_get()
        t0 = time.perf_counter()
        ta = BVHTree.FromObject(ob, dg)
        tb = BVHTree.FromObject(ob2, dg)
        n_bl = len(ta.overlap(tb))
        bl.append((time.perf_counter() - t0) * 1000.0)
        ours.append(rec.ms)
        if args.without_deep:
            share = between.DEEP_SHARE
            between.DEEP_SHARE = float("inf")
            try:
                rec2 = sc.current(scene, dg).record
            finally:
                between.DEEP_SHARE = share
            if rec2.pairs != rec.pairs:
                sys.exit(f"MISMATCH at frame {f}: {len(rec.pairs)} against {len(rec2.pairs)}")
            old.append(rec2.ms)
        npairs.append(len(rec.pairs))
        modes.update(rec.modes)
        if args.verbose:
            print(f"  {span_fraction:.2f} f{f}: ours {rec.ms:.1f} ms, Blender {bl[-1]:.1f} ms "
                  f"({bl[-1] / rec.ms:.1f}x), polygon pairs {len(rec.pairs)}, "
                  f"Blender triangle pairs {n_bl}", flush=True)
    if prof:
        import pstats
        pstats.Stats(prof).sort_stats("cumulative").print_stats(35)
    return {"span": span_fraction, "offset": span_fraction * span, "frames": len(frames),
            "ours": statistics.median(ours), "blender": statistics.median(bl),
            "ratio": statistics.median(b / o for b, o in zip(bl, ours)),
            "pairs": statistics.median(npairs), "modes": "+".join(sorted(modes)),
            "old": statistics.median(old) if old else None,
            "old_ratio": statistics.median(b / o for b, o in zip(bl, old)) if old else None}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0, help="Simple subdivisions of the mesh")
    p.add_argument("--spans", type=float, nargs="+", default=[0.9, 0.6, 0.3],
                   help="the copy's offset along X, as fractions of the arm span")
    p.add_argument("--frames", type=int, default=24, help="consecutive frames")
    p.add_argument("--start", type=int, default=0, help="first frame after the action's start")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--without-deep", action="store_true",
                   help="also time each frame with the deep way off (same depsgraph)")
    args = p.parse_args()

    import bench_table3

    import skin_collide

    if not os.path.isdir(bench_table3.SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({bench_table3.SHARED})")
    skin_collide.register()
    rows = [run(args, s, args.profile and k == 0) for k, s in enumerate(args.spans)]
    print(f"\nTwo characters' playback, {args.asset} level {args.level}, {args.frames} "
          "consecutive frames, medians (ms per frame)")
    extra = " | without the deep way ms | Blender / that" if args.without_deep else ""
    print("| arm spans apart | offset m | polygon pairs | ours ms | Blender FromObject ms "
          f"| Blender / ours{extra} |")
    print("|---|---|---|---|---|---|" + ("---|---|" if args.without_deep else ""))
    for r in rows:
        more = (f" | {r['old']:.2f} | {r['old_ratio']:.2f}" if args.without_deep else "")
        print(f"| {r['span']:.2f} | {r['offset']:.3f} | {r['pairs']:.0f} | {r['ours']:.2f} "
              f"| {r['blender']:.2f} | {r['ratio']:.2f}{more} |")


if __name__ == "__main__":
    main()
