"""Pairs between two characters: the `box-tree` method (the float32 AABB trees of
`core.aabb_tree`, bottom-up box refit from the evaluated positions, level-synchronous
traversal), through `core.scan.query_frame` like any method, against the sphere tree's
on-demand query and Blender's world-space ``FromPolygons`` + ``overlap``.

Same scene as the table3 scenario (two interpenetrating copies), one process, same frames,
medians. Checks that the AABB pairs equal the sphere query's pairs on every frame.

    bash dev python -m bench pairs-aabb --asset makehuman_default.blend --level 0
"""
from __future__ import annotations

import sys

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0)
    p.add_argument("--stride", type=int, default=6)
    p.add_argument("--offset", type=float, nargs=3, default=[0.55, 0.0, 0.0])
    p.add_argument("--max-frames", type=int, default=None, help="at most this many frames")


def run(args) -> int:
    import bpy

    from skin_collide.addon import scanner
    from skin_collide.core import scan as core_scan

    scenes.require(args.asset)
    ob, ob2 = scenes.load_pair(args.asset, args.level, args.offset, 0.0)
    sc = scanner.Scanner([ob, ob2])
    boxes = [core_scan.prepare(o.rig, "box-tree") for o in sc.objects]
    frames = scenes.action_frames(ob)[::args.stride][:args.max_frames]
    tri_lists = [o.rig.triangles.tolist() for o in sc.objects]
    rows = timing.Samples("aabb", "od", "blw", "pairs")
    for f in frames:
        bpy.context.scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        od = core_scan.query_frame(sc.objects, pos, poses, triangles=sc.triangles)
        box = core_scan.query_frame(boxes, pos, poses, triangles=sc.triangles)
        assert box.modes == ["box-tree", "box-tree"]
        pairs = box.pairs[0][2] if box.pairs else np.zeros((0, 2), np.int64)
        rows["aabb"].append(box.ms)
        # The position lists are made inside the timing, as they always were here.
        t0 = timing.now()
        timing.blender_world_overlap([pos[0].tolist(), pos[1].tolist()], tri_lists)
        rows["blw"].append(timing.ms_since(t0))
        rows["od"].append(od.ms)
        rows["pairs"].append(len(pairs))
        ref = od.pairs[0][2] if od.pairs else np.zeros((0, 2), np.int64)
        if set(map(tuple, ref.tolist())) != set(map(tuple, pairs.tolist())):
            sys.exit(f"MISMATCH at frame {f}")
    med = rows.medians()
    print(f"\n{args.asset} level {args.level}, {len(frames)} frames, medians")
    print("| AABB pairs ms | sphere on-demand ms | Blender FromPolygons(world)+overlap ms | "
          "pairs | AABB vs Blender | AABB vs on-demand |")
    print("|---|---|---|---|---|---|")
    print(f"| {med['aabb']:.2f} | {med['od']:.2f} | {med['blw']:.2f} | {med['pairs']:.0f} | "
          f"{med['blw'] / med['aabb']:.1f}x | {med['od'] / med['aabb']:.1f}x |")


    return 0


registry.register("pairs-aabb", "pairs between two characters: the box-tree method against the "
                  "sphere tree's on-demand query and Blender's world-space BVHTree", options, run,
                  smoke={"asset": scenes.SMOKE, "stride": 3, "max_frames": 2}, doc=__doc__)
