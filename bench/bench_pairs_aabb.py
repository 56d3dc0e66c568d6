"""Pairs between two characters: the `box-tree` method (the float32 AABB trees of
`core.aabb_tree`, bottom-up box refit from the evaluated positions, level-synchronous
traversal), through `core.scan.query_frame` like any method, against the sphere tree's
on-demand query and Blender's world-space ``FromPolygons`` + ``overlap``.

Same scene as bench_table3.py (two interpenetrating copies), one process, same frames,
medians. Checks that the AABB pairs equal the sphere query's pairs on every frame.

    bash dev python bench/bench_pairs_aabb.py --asset makehuman_default.blend --level 0
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_table3  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0)
    p.add_argument("--stride", type=int, default=6)
    p.add_argument("--offset", type=float, nargs=3, default=[0.55, 0.0, 0.0])
    args = p.parse_args()
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import animation, extract, scanner
    from skin_collide.core import scan as core_scan

    ob, ob2 = bench_table3.load_pair(args.asset, args.level, args.offset, 0.0)
    sc = scanner.Scanner([ob, ob2])
    boxes = [core_scan.prepare(o.rig, "box-tree") for o in sc.objects]
    arm = extract.modifier_report(ob).armature
    frames = animation.action_frames(arm.animation_data.action)[::args.stride]
    tri_lists = [o.rig.triangles.tolist() for o in sc.objects]
    rows = {"aabb": [], "od": [], "blw": [], "pairs": []}
    for f in frames:
        bpy.context.scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        od = core_scan.query_frame(sc.objects, pos, poses, triangles=sc.triangles)
        box = core_scan.query_frame(boxes, pos, poses, triangles=sc.triangles)
        assert box.modes == ["box-tree", "box-tree"]
        pairs = box.pairs[0][2] if box.pairs else np.zeros((0, 2), np.int64)
        rows["aabb"].append(box.ms)
        t0 = time.perf_counter()
        wa = BVHTree.FromPolygons(pos[0].tolist(), tri_lists[0], all_triangles=True)
        wb = BVHTree.FromPolygons(pos[1].tolist(), tri_lists[1], all_triangles=True)
        wa.overlap(wb)
        rows["blw"].append((time.perf_counter() - t0) * 1000)
        rows["od"].append(od.ms)
        rows["pairs"].append(len(pairs))
        ref = od.pairs[0][2] if od.pairs else np.zeros((0, 2), np.int64)
        if set(map(tuple, ref.tolist())) != set(map(tuple, pairs.tolist())):
            sys.exit(f"MISMATCH at frame {f}")
    med = {k: float(np.median(v)) for k, v in rows.items()}
    print(f"\n{args.asset} level {args.level}, {len(frames)} frames, medians")
    print("| AABB pairs ms | sphere on-demand ms | Blender FromPolygons(world)+overlap ms | "
          "pairs | AABB vs Blender | AABB vs on-demand |")
    print("|---|---|---|---|---|---|")
    print(f"| {med['aabb']:.2f} | {med['od']:.2f} | {med['blw']:.2f} | {med['pairs']:.0f} | "
          f"{med['blw'] / med['aabb']:.1f}x | {med['od'] / med['aabb']:.1f}x |")


if __name__ == "__main__":
    main()
