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
pairs and contacts); exits non-zero if one differs.

    bash dev python -m bench live-loop
    bash dev python -m bench live-loop --level 1
    bash dev python -m bench live-loop --pair
"""
from __future__ import annotations

import sys

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0)
    p.add_argument("--frames", type=int, default=24)
    p.add_argument("--pair", action="store_true", help="two characters, no self-collision")


def run(args) -> int:
    import bpy

    from skin_collide.addon import handlers, session
    from skin_collide.addon.state import STATE

    scenes.require(args.asset)
    scenes.register_addon()
    handlers.THROTTLE = 0.0
    ob = scenes.load_one(args.asset, args.level)
    meshes = [ob]
    arm = scenes.armature(ob)
    if args.pair:
        ob2, _ = scenes.duplicate_character(ob, arm, f"{ob.name}_copy", offset=(0.55, 0, 0),
                                            turn=0.0)
        meshes.append(ob2)
    scenes.select_only(meshes, ob)
    scene = bpy.context.scene
    scene.skin_collide.self_collision = not args.pair
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    lo = scenes.action_range(ob)[0]
    frames = list(range(lo, lo + args.frames))
    scene.frame_set(frames[-1])                         # warm-up: the loop starts afresh
    loops = []
    for _ in range(2):
        rows = timing.Samples()
        for f in frames:
            t0 = timing.now()
            scene.frame_set(f)
            change = timing.ms_since(t0)
            res = session.live_result(scene)
            if res.error:
                sys.exit(f"frame {f}: {res.error}")
            dg = bpy.context.evaluated_depsgraph_get()
            blender, _ = timing.blender_overlap(meshes, dg)
            live = STATE.last_seconds * 1e3
            rows.add(live=live, blender=blender, eval=change - live,
                     answer=(sorted(res.polygon_pairs),
                             sorted((c.a, c.b, c.length) for c in res.contacts)))
        loops.append(rows)
    for f, a1, a2 in zip(frames, loops[0]["answer"], loops[1]["answer"]):
        if a1 != a2:
            sys.exit(f"MISMATCH at frame {f}: the second loop's answer differs")
    memo = STATE.frame_memos.get(scene.name_full)

    what = "two characters 0.55 m apart" if args.pair else "self-collision"
    print(f"\nLive overlay looping, {args.asset} level {args.level} "
          f"({what}), "
          f"{len(frames)} consecutive frames twice, medians (ms per frame)")
    timing.print_head("loop", "live update", "Blender FromObject + overlap",
                      "Blender / live update", "Blender's evaluation", "live update / evaluation")
    for k, rows in enumerate(loops, 1):
        timing.print_row(k, f"{rows.median('live'):.2f}", f"{rows.median('blender'):.2f}",
                         f"{rows.ratio('blender', 'live'):.1f}x", f"{rows.median('eval'):.2f}",
                         f"{rows.ratio('live', 'eval'):.2f}x")
    print(f"Second loop equal to the first on every frame; memo hits {memo.hits if memo else 0}.")
    return 0


registry.register("live-loop", "the live overlay over consecutive frames twice (looping "
                  "playback answered from memory), against Blender's BVHTree rebuild", options,
                  run, smoke={"asset": scenes.SMOKE, "frames": 3}, doc=__doc__)
