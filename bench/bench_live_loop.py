"""Playback looping in the live overlay (issue 43: pay only for what changed, scrubbing).

One character (default MakeHuman, self-collision on) or two (``--pair``: a copy beside
it), built with the panel's Build, the live overlay on. `scene.frame_set` over
consecutive frames of the action, twice, as Blender's looping playback does: the first
loop answers every frame with the live query; on the second every frame's evaluated
positions and triangles are bit for bit those of the first loop, so the overlay takes the
answer it kept (`core.scan.FrameMemo`). Per loop, medians of:

* live update: the handler's own time (`addon.state.STATE.last_seconds`: reading the
  evaluated frame, the query or the memo, polygon pairs, contacts, the overlay's result);
* Blender: `BVHTree.FromObject` + overlap on the same depsgraph (self-overlap, or the
  two trees with ``--pair``), timed after the handler;
* Blender's evaluation: `frame_set` less the handler.

Every frame's live answer of the second loop is compared with the first loop's (polygon
pairs and contacts); the script exits non-zero if one differs. Not a test: nothing here
asserts on time.

Usage (from the repository root):
    bash dev python bench/bench_live_loop.py
    bash dev python bench/bench_live_loop.py --level 1
    bash dev python bench/bench_live_loop.py --pair
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0)
    p.add_argument("--frames", type=int, default=24)
    p.add_argument("--pair", action="store_true", help="two characters, no self-collision")
    args = p.parse_args()
    import bench_self
    import bpy
    from mathutils.bvhtree import BVHTree

    import skin_collide
    from skin_collide.addon import extract, handlers, session
    from skin_collide.addon.state import STATE

    if not os.path.isdir(bench_self.SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({bench_self.SHARED})")
    skin_collide.register()
    handlers.THROTTLE = 0.0
    ob = bench_self.load_one(args.asset, args.level)
    meshes = [ob]
    arm = extract.modifier_report(ob).armature
    if args.pair:
        import scenes

        ob2, _ = scenes.duplicate_character(ob, arm, f"{ob.name}_copy", offset=(0.55, 0, 0),
                                            turn=0.0)
        meshes.append(ob2)
    for o in bpy.context.scene.objects:
        o.select_set(o in meshes)
    bpy.context.view_layer.objects.active = ob
    scene = bpy.context.scene
    scene.skin_collide.self_collision = not args.pair
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    lo = int(arm.animation_data.action.frame_range[0])
    frames = list(range(lo, lo + args.frames))
    scene.frame_set(frames[-1])                         # warm-up: the loop starts afresh
    loops = []
    for _ in range(2):
        rows = []
        for f in frames:
            t0 = time.perf_counter()
            scene.frame_set(f)
            change = (time.perf_counter() - t0) * 1e3
            res = session.live_result(scene)
            if res.error:
                sys.exit(f"frame {f}: {res.error}")
            dg = bpy.context.evaluated_depsgraph_get()
            t0 = time.perf_counter()
            trees = [BVHTree.FromObject(m, dg) for m in meshes]
            trees[0].overlap(trees[-1])
            blender = (time.perf_counter() - t0) * 1e3
            live = STATE.last_seconds * 1e3
            rows.append({"live": live, "blender": blender, "eval": change - live,
                         "answer": (sorted(res.polygon_pairs),
                                    sorted((c.a, c.b, c.length) for c in res.contacts))})
        loops.append(rows)
    for f, r1, r2 in zip(frames, *loops):
        if r1["answer"] != r2["answer"]:
            sys.exit(f"MISMATCH at frame {f}: the second loop's answer differs")
    memo = STATE.frame_memos.get(scene.name_full)

    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    what = "two characters 0.55 m apart" if args.pair else "self-collision"
    print(f"\nLive overlay looping, {args.asset} level {args.level} "
          f"({what}), "
          f"{len(frames)} consecutive frames twice, medians (ms per frame)")
    print("| loop | live update | Blender FromObject + overlap | Blender / live update | "
          "Blender's evaluation | live update / evaluation |")
    print("|---|---|---|---|---|---|")
    for k, rows in enumerate(loops, 1):
        print(f"| {k} | {med(rows, 'live'):.2f} | {med(rows, 'blender'):.2f} | "
              f"{statistics.median(r['blender'] / r['live'] for r in rows):.1f}x | "
              f"{med(rows, 'eval'):.2f} | "
              f"{statistics.median(r['live'] / r['eval'] for r in rows):.2f}x |")
    print(f"Second loop equal to the first on every frame; memo hits {memo.hits if memo else 0}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
