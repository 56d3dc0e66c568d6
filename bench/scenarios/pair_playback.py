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
``--profile`` runs cProfile over our frames of the first offset.

    bash dev python -m bench pair-playback
    bash dev python -m bench pair-playback --spans 0.3 --frames 24 --verbose
    bash dev python -m bench pair-playback --without-deep --level 1
"""
from __future__ import annotations

import sys

from bench import registry, scenes, timing


def options(p) -> None:
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


def measure(args, span_fraction: float, profile: bool) -> dict:
    import bpy

    from skin_collide.addon import scanner
    from skin_collide.core.scan import between

    span = scenes.x_span(scenes.load_asset(args.asset))
    ob, ob2 = scenes.load_pair(args.asset, args.level, (span_fraction * span, 0.0, 0.0), 0.0)
    scene = bpy.context.scene
    first = scenes.action_range(ob)[0]
    frames = list(range(first + args.start, first + args.start + args.frames))
    sc = scanner.Scanner([ob, ob2])
    sc.run(scene, [frames[0]])                      # warm-up: first refit, caches
    rows = timing.Samples("ours", "blender", "pairs", "old")
    modes = set()
    with timing.profiled(profile) as prof:
        for f in frames:
            if prof:
                prof.enable()
            rec = sc.step(scene, f)
            if prof:
                prof.disable()
            dg = bpy.context.evaluated_depsgraph_get()
            bl, n_bl = timing.blender_overlap([ob, ob2], dg)
            rows.add(blender=bl, ours=rec.ms)
            if args.without_deep:
                share = between.DEEP_SHARE
                between.DEEP_SHARE = float("inf")
                try:
                    rec2 = sc.current(scene, dg).record
                finally:
                    between.DEEP_SHARE = share
                if rec2.pairs != rec.pairs:
                    sys.exit(f"MISMATCH at frame {f}: {len(rec.pairs)} against {len(rec2.pairs)}")
                rows.add(old=rec2.ms)
            rows.add(pairs=len(rec.pairs))
            modes.update(rec.modes)
            if args.verbose:
                print(f"  {span_fraction:.2f} f{f}: ours {rec.ms:.1f} ms, Blender {bl:.1f} ms "
                      f"({bl / rec.ms:.1f}x), polygon pairs {len(rec.pairs)}, "
                      f"Blender triangle pairs {n_bl}", flush=True)
    old = bool(rows["old"])
    return {"span": span_fraction, "offset": span_fraction * span, "frames": len(frames),
            "ours": rows.median("ours"), "blender": rows.median("blender"),
            "ratio": rows.ratio("blender", "ours"),
            "pairs": rows.median("pairs"), "modes": "+".join(sorted(modes)),
            "old": rows.median("old") if old else None,
            "old_ratio": rows.ratio("blender", "old") if old else None}


def run(args) -> int:
    scenes.register_addon()
    rows = [measure(args, s, args.profile and k == 0) for k, s in enumerate(args.spans)]
    print(f"\nTwo characters' playback, {args.asset} level {args.level}, {args.frames} "
          "consecutive frames, medians (ms per frame)")
    extra = ["without the deep way ms", "Blender / that"] if args.without_deep else []
    timing.print_head("arm spans apart", "offset m", "polygon pairs", "ours ms",
                      "Blender FromObject ms", "Blender / ours", *extra)
    for r in rows:
        more = [f"{r['old']:.2f}", f"{r['old_ratio']:.2f}"] if args.without_deep else []
        timing.print_row(f"{r['span']:.2f}", f"{r['offset']:.3f}", f"{r['pairs']:.0f}",
                         f"{r['ours']:.2f}", f"{r['blender']:.2f}", f"{r['ratio']:.2f}", *more)
    return 0


registry.register("pair-playback", "two characters' playback through the Scanner, pairs "
                  "between them, against Blender's BVHTree rebuild (issue 43)", options, run,
                  smoke={"asset": scenes.SMOKE, "frames": 2, "spans": [0.3],
                         "without_deep": True}, doc=__doc__)
