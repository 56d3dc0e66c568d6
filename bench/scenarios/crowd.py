"""Crowds (issue 13): a grid of walking Cesium Men, our scan against Blender's way.

Per crowd (N characters, grid spacing S × the character's height), all in one process on
the same frames:

Characters stand on a square grid, all walking the same way (``--turn``: each turned by a
random angle, which makes neighbours' arms meet more).

* ours: `Scanner.query` (object pairs only, no self-collision): broad phase on the
  position boxes, then one traversal for the object pairs whose boxes meet;
* ours + reading: the same plus `Scanner.evaluate` (reading the evaluated positions, poses
  and loop triangles from Blender), which Blender's own way does inside FromObject;
* Blender (the bar): ``BVHTree.FromObject`` for every mesh, then ``overlap`` for the pairs
  whose world bounding boxes meet (FromObject is in object space: the bar's pairs are not
  world pairs, it is the cost Blender users pay);
* Blender world: ``FromPolygons`` on the world-space evaluated positions (lists made inside
  the timing) with the same box filter, then ``overlap``: its pairs must equal ours (checked
  on every frame; the bench stops if they differ).

Build time and memory per character are the mean `build_seconds` and the bytes of the
prepared arrays (what persist stores in the .blend) plus the weld ids.

Usage (from the repository root):
    bash dev python bench/bench_crowd.py                      # 10 and 50, spacing 0.35 and 0.6
    bash dev python bench/bench_crowd.py --counts 10 --spacings 0.35 --frames 6

Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import math
import sys

import numpy as np

from bench import registry, scenes, timing


def world_box(ob_eval):
    from mathutils import Vector

    pts = np.array([tuple(ob_eval.matrix_world @ Vector(c)) for c in ob_eval.bound_box])
    return pts.min(axis=0), pts.max(axis=0)


def box_pairs(boxes):
    n = len(boxes)
    return [(i, j) for i in range(n) for j in range(i + 1, n)
            if np.all(boxes[i][0] <= boxes[j][1]) and np.all(boxes[j][0] <= boxes[i][1])]


def run_crowd(n: int, spacing: float, n_frames: int, seed: int, turn: bool = False,
              asset: str = "cesium_man.glb") -> dict:
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import scanner

    ob, arm = scenes.load_body(asset)
    scene = bpy.context.scene
    bpy.context.view_layer.update()
    lo, hi = world_box(ob.evaluated_get(bpy.context.evaluated_depsgraph_get()))
    height = float(hi[2] - lo[2])
    step = spacing * height
    side = int(math.ceil(math.sqrt(n)))
    rng = np.random.default_rng(seed)
    meshes = [ob]
    for k in range(1, n):
        off = ((k % side) * step, (k // side) * step, 0.0)
        ob2, _ = scenes.duplicate_character(ob, arm, f"crowd_{k:02d}", offset=off,
                                            turn=float(rng.uniform(-math.pi, math.pi)) if turn else 0.0)
        meshes.append(ob2)
    sc = scanner.Scanner(meshes)
    frames = scenes.action_frames(ob)
    frames = frames[::max(1, len(frames) // n_frames)][:n_frames]
    rows = timing.Samples("ours", "read", "bl", "blw", "pairs", "obj_pairs", "box_pairs")
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        t0 = timing.now()
        pos, poses = sc.evaluate(dg)
        read = timing.ms_since(t0)
        t0 = timing.now()
        tri_pairs, _, _ = sc.query(pos, poses)
        ours = timing.ms_since(t0)
        # Blender's way (the bar).
        t0 = timing.now()
        evs = [m.evaluated_get(dg) for m in meshes]
        trees = [BVHTree.FromObject(m, dg) for m in meshes]
        cand = box_pairs([world_box(e) for e in evs])
        for i, j in cand:
            trees[i].overlap(trees[j])
        rows["bl"].append(timing.ms_since(t0))
        # Blender in world space: the pairs to compare with.
        t0 = timing.now()
        wtrees = [BVHTree.FromPolygons(p.tolist(), t.tolist(), all_triangles=True)
                  for p, t in zip(pos, sc.triangles)]
        wboxes = [(p.min(axis=0), p.max(axis=0)) for p in pos]
        ref = {}
        for i, j in box_pairs(wboxes):
            ov = wtrees[i].overlap(wtrees[j])
            if ov:
                ref[(i, j)] = set(map(tuple, ov))
        rows["blw"].append(timing.ms_since(t0))
        got = {(i, j): set(map(tuple, p.tolist())) for i, j, p in tri_pairs}
        if got != ref:
            missed = sum(len(ref[k] - got.get(k, set())) for k in ref)
            extra = sum(len(got[k] - ref.get(k, set())) for k in got)
            sys.exit(f"frame {f}: pairs differ from Blender's world overlap "
                     f"({missed} missed, {extra} extra)")
        rows["ours"].append(ours)
        rows["read"].append(read + ours)
        rows["pairs"].append(sum(len(v) for v in got.values()))
        rows["obj_pairs"].append(len(got))
        rows["box_pairs"].append(len(box_pairs(wboxes)))
    med = rows.medians()
    med["tris"] = sum(o.rig.n_triangles for o in sc.objects)
    med["build_s"] = timing.mean(o.build_seconds for o in sc.objects)
    med["mem_kb"] = timing.mean((sum(a.nbytes for a in o.data.arrays().values())
                                 + o.vertex_keys.nbytes) / 1024 for o in sc.objects)
    med["frames"] = len(frames)
    med["height"] = height
    return med


def options(p) -> None:
    p.add_argument("--asset", default="cesium_man.glb")
    p.add_argument("--counts", type=int, nargs="+", default=[10, 50])
    p.add_argument("--spacings", type=float, nargs="+", default=[0.35, 0.6])
    p.add_argument("--frames", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--turn", action="store_true",
                   help="turn each character by a random angle (default: all walk the same way)")


def run(args) -> int:
    scenes.require(args.asset)
    results = []
    for n in args.counts:
        for s in args.spacings:
            r = run_crowd(n, s, args.frames, args.seed, args.turn, args.asset)
            results.append((n, s, r))
            print(f"{n} characters, spacing {s}: ours {r['ours']:.1f} ms, Blender {r['bl']:.1f} ms, "
                  f"Blender world {r['blw']:.1f} ms, pairs {r['pairs']:.0f}", flush=True)
    print(f"\nCrowds of Cesium Men ({results[0][2]['frames']} frames each, medians, ms per frame; "
          "pairs equal Blender's world-space overlap on every frame)")
    print("| characters | spacing (× height) | triangles | box pairs | colliding object pairs "
          "| triangle pairs | ours | ours + reading | Blender (FromObject) | Blender world "
          "(FromPolygons) | ours vs Blender | build s / char | memory KiB / char |")
    print("|" + "---|" * 13)
    for n, s, r in results:
        print(f"| {n} | {s} | {r['tris']:,} | {r['box_pairs']:.0f} | {r['obj_pairs']:.0f} "
              f"| {r['pairs']:.0f} | {r['ours']:.1f} | {r['read']:.1f} | {r['bl']:.1f} "
              f"| {r['blw']:.1f} | {r['bl'] / r['ours']:.2f}× | {r['build_s']:.3f} "
              f"| {r['mem_kb']:.0f} |")


    return 0


registry.register("crowd", "crowds (issue 13): a grid of walking Cesium Men, our scan against "
                  "Blender's BVHTree way", options, run,
                  smoke={"asset": scenes.SMOKE, "counts": [3], "spacings": [0.35], "frames": 2},
                  doc=__doc__)
