"""Non-degenerate frames with very many colliding pairs, on MakeHuman:

* `copies K TURN_DEG SHIFT`: K copies standing on the same spot, each turned a little about
  Z and shifted a little (every surface crosses the others everywhere), between objects;
* `pose LO HI SEED`: one character, self-collision, a random pose with 170-degree twists
  and per-axis bone scales in [LO, HI] (above the degenerate-bone threshold of 1/1000).

The live path (Refresh through the add-on, capped at `session.MAX_PAIRS` and at the
candidate budget; build done first, one warm-up) against Blender's own BVHTree on the same
evaluated frame (FromPolygons on world-space loop triangles per object, overlap per object
pair or of the tree with itself), alternated REPEAT times in the same process (default 5)
so that the machine's load hits both alike; min and median of each, and the median of the
per-round ratios. `--exact` also times the uncapped query (as Scan Frame Range runs it).

    bash dev python bench/bench_dense_pairs.py copies 2 3 0.01
    bash dev python bench/bench_dense_pairs.py pose 0.002 5 1 [--repeat 5] [--exact]
"""
import math
import os
import statistics
import sys
import time

import bpy
from mathutils.bvhtree import BVHTree

import skin_collide  # noqa: E402
from skin_collide.addon import files, session  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import scenes  # noqa: E402

ASSET = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "assets",
                     "makehuman_default.blend")


def blender_reference(meshes, self_collision=False):
    dg = bpy.context.evaluated_depsgraph_get()
    t0 = time.perf_counter()
    trees = []
    for ob in meshes:
        me = ob.evaluated_get(dg).data
        me.calc_loop_triangles()
        M = ob.matrix_world
        trees.append(BVHTree.FromPolygons([M @ v.co for v in me.vertices],
                                          [tuple(t.vertices) for t in me.loop_triangles],
                                          all_triangles=True))
    if self_collision:
        n = len(trees[0].overlap(trees[0])) // 2      # each pair twice
    else:
        n = sum(len(trees[i].overlap(trees[j]))
                for i in range(len(trees)) for j in range(i + 1, len(trees)))
    return time.perf_counter() - t0, n


def refresh_once(scene):
    """One Refresh (the live path); (seconds, the operator's report or '')."""
    t0 = time.perf_counter()
    try:
        bpy.ops.skin_collide.refresh()
        msg = ""
    except RuntimeError as exc:
        msg = str(exc)
    return time.perf_counter() - t0, msg


def main():
    argv = sys.argv[1:]
    repeat, exact = 5, "--exact" in argv
    if "--repeat" in argv:
        k = argv.index("--repeat")
        repeat = int(argv[k + 1])
        del argv[k:k + 2]
    argv = [a for a in argv if a != "--exact"]
    kind = argv[0] if argv else "copies"
    args = argv[1:]
    skin_collide.register()
    files.load_file(ASSET)
    scene = bpy.context.scene
    ob = bpy.data.objects["makehuman_body"]
    arm = next(m.object for m in ob.modifiers if m.type == "ARMATURE")
    if kind == "pose":
        lo, hi, seed = float(args[0]), float(args[1]), int(args[2])
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
        import numpy as np
        from blender_helpers import random_blender_pose

        arm.animation_data_clear()
        random_blender_pose(arm, np.random.default_rng(seed), max_angle=math.radians(170),
                            scale=(lo, hi))
        bpy.context.view_layer.update()
        meshes, label = [ob], f"random pose (scales {lo}-{hi}, seed {seed}), self-collision"
    else:
        k = int(args[0]) if args else 2
        turn = math.radians(float(args[1]) if len(args) > 1 else 3.0)
        shift = float(args[2]) if len(args) > 2 else 0.01
        meshes = [ob] + [scenes.duplicate_character(ob, arm, f"copy{i}",
                                                    offset=(shift * i, 0, 0), turn=turn * i)[0]
                         for i in range(1, k)]
        label = f"{k} copies, turned {math.degrees(turn):.1f} deg, shifted {shift}"
    for o in scene.objects:
        o.select_set(o in meshes)
    bpy.context.view_layer.objects.active = ob
    scene.skin_collide.self_collision = kind == "pose"
    bpy.ops.skin_collide.build()
    refresh_once(scene)                              # warm-up (caches, first refit)
    refs, ours, ratios = [], [], []
    for _ in range(repeat):
        ref, n = blender_reference(meshes, kind == "pose")
        t, msg = refresh_once(scene)
        refs.append(ref)
        ours.append(t)
        ratios.append(t / ref)
    res = session.live_result(scene)
    med = statistics.median
    print(f"{label}: Blender FromPolygons+overlap min {min(refs):.3f} s, median {med(refs):.3f} s"
          f" ({n} triangle pairs)", flush=True)
    print(f"live (Refresh) min {min(ours):.3f} s, median {med(ours):.3f} s; per-round ratio "
          f"to Blender: median {med(ratios):.2f}, max {max(ratios):.2f} ({repeat} rounds); "
          f"query {res.ms if res else 0:.0f} ms; polygon pairs {res.count_text if res else None},"
          f" kept {len(res.polygon_pairs) if res else None}", flush=True)
    print(f"report: {msg or (res.warning if res else '')!r}", flush=True)
    if exact:
        dg = bpy.context.evaluated_depsgraph_get()
        t0 = time.perf_counter()
        full = session.query(scene, dg, meshes, exact_count=True)
        print(f"exact (Scan's query): {time.perf_counter() - t0:.3f} s, "
              f"{full.n_pairs} polygon pairs", flush=True)

main()
