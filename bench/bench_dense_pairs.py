"""Non-degenerate frames with very many colliding pairs, on MakeHuman:

* `copies K TURN_DEG SHIFT`: K copies standing on the same spot, each turned a little about
  Z and shifted a little (every surface crosses the others everywhere), between objects;
* `pose LO HI SEED`: one character, self-collision, a random pose with 170-degree twists
  and per-axis bone scales in [LO, HI] (above the degenerate-bone threshold of 1/1000).

One refresh through the add-on (build done first; the second query is timed) against
Blender's own BVHTree on the same evaluated frame (FromPolygons on world-space loop
triangles per object, overlap per object pair or of the tree with itself).

    bash dev python bench/bench_dense_pairs.py copies 2 3 0.01
    bash dev python bench/bench_dense_pairs.py pose 0.002 5 1
"""
import math
import os
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


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "copies"
    args = sys.argv[2:]
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
    ref, n = blender_reference(meshes, kind == "pose")
    print(f"{label}: Blender FromPolygons+overlap {ref:.2f} s ({n} triangle pairs)",
          flush=True)
    for attempt in range(2):
        t0 = time.perf_counter()
        try:
            bpy.ops.skin_collide.refresh()
            msg = ""
        except RuntimeError as exc:
            msg = str(exc)
        ours = time.perf_counter() - t0
    res = session.live_result(scene)
    print(f"ours {ours:.3f} s (query {res.ms if res else 0:.0f} ms; ratio to Blender {ours / ref:.2f}); polygon pairs "
          f"{res.n_pairs if res else None}, kept {len(res.polygon_pairs) if res else None}; "
          f"report: {msg or (res.warning if res else '')!r}")


main()
