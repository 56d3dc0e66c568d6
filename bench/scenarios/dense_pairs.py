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

    bash dev python -m bench dense-pairs copies 2 3 0.01
    bash dev python -m bench dense-pairs pose 0.002 5 1 [--repeat 5] [--exact]
"""
from __future__ import annotations

import math

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("kind", nargs="?", default="copies", choices=["copies", "pose"])
    p.add_argument("values", nargs="*", help="copies: K [TURN_DEG [SHIFT]]; pose: LO HI SEED")
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--exact", action="store_true")


def blender_reference(meshes, self_collision=False):
    import bpy
    from mathutils.bvhtree import BVHTree

    dg = bpy.context.evaluated_depsgraph_get()
    t0 = timing.now()
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
    return timing.ms_since(t0) / 1000, n


def refresh_once(scene):
    """One Refresh (the live path); (seconds, the operator's report or '')."""
    import bpy

    t0 = timing.now()
    try:
        bpy.ops.skin_collide.refresh()
        msg = ""
    except RuntimeError as exc:
        msg = str(exc)
    return timing.ms_since(t0) / 1000, msg


def run(args) -> int:
    import bpy

    from skin_collide.addon import session

    scenes.require(args.asset)
    repeat, exact, kind, values = args.repeat, args.exact, args.kind, args.values
    scenes.register_addon()
    ob = scenes.load_asset(args.asset)
    scene = bpy.context.scene
    arm = next(m.object for m in ob.modifiers if m.type == "ARMATURE")
    if kind == "pose":
        lo, hi, seed = float(values[0]), float(values[1]), int(values[2])
        random_blender_pose = scenes.tests_module("blender_helpers.py").random_blender_pose

        arm.animation_data_clear()
        random_blender_pose(arm, np.random.default_rng(seed), max_angle=math.radians(170),
                            scale=(lo, hi))
        bpy.context.view_layer.update()
        meshes, label = [ob], f"random pose (scales {lo}-{hi}, seed {seed}), self-collision"
    else:
        k = int(values[0]) if values else 2
        turn = math.radians(float(values[1]) if len(values) > 1 else 3.0)
        shift = float(values[2]) if len(values) > 2 else 0.01
        meshes = [ob] + [scenes.duplicate_character(ob, arm, f"copy{i}",
                                                    offset=(shift * i, 0, 0), turn=turn * i)[0]
                         for i in range(1, k)]
        label = f"{k} copies, turned {math.degrees(turn):.1f} deg, shifted {shift}"
    scenes.select_only(meshes, ob)
    scene.skin_collide.self_collision = kind == "pose"
    bpy.ops.skin_collide.build()
    refresh_once(scene)                              # warm-up (caches, first refit)
    rows = timing.Samples("ref", "ours", "ratio")
    for _ in range(repeat):
        ref, n = blender_reference(meshes, kind == "pose")
        t, msg = refresh_once(scene)
        rows.add(ref=ref, ours=t, ratio=t / ref)
    res = session.live_result(scene)
    print(f"{label}: Blender FromPolygons+overlap min {rows.min('ref'):.3f} s, median "
          f"{rows.median('ref'):.3f} s ({n} triangle pairs)", flush=True)
    print(f"live (Refresh) min {rows.min('ours'):.3f} s, median {rows.median('ours'):.3f} s; "
          f"per-round ratio to Blender: median {rows.median('ratio'):.2f}, max "
          f"{rows.max('ratio'):.2f} ({repeat} rounds); "
          f"query {res.ms if res else 0:.0f} ms; polygon pairs {res.count_text if res else None},"
          f" kept {len(res.polygon_pairs) if res else None}", flush=True)
    print(f"report: {msg or (res.warning if res else '')!r}", flush=True)
    if exact:
        dg = bpy.context.evaluated_depsgraph_get()
        full, t = timing.timed_s(session.query, scene, dg, meshes, exact_count=True)
        print(f"exact (Scan's query): {t:.3f} s, {full.n_pairs} polygon pairs", flush=True)
    return 0


registry.register("dense-pairs", "frames with very many colliding pairs (copies on one spot, "
                  "or a random pose): the live Refresh against Blender's BVHTree", options, run,
                  smoke={"asset": scenes.SMOKE, "repeat": 1, "exact": True}, doc=__doc__)
