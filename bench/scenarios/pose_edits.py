"""Pose edits with the live overlay's self-collision (issue 29 item 1): the cost of one
update after a one-bone edit, full query against carried pairs (only what moved is
re-checked), against Blender's `BVHTree.FromObject` + self-`overlap` and Blender's own
evaluation of the edit. One process, the same edits; the pairs of both queries are
compared on every edit. *Overlay update* is the whole live update the add-on's pose
handler runs (`addon.handlers._update`: reading the evaluated positions and triangles,
the carried query, contacts and the overlay's result), on the built object.

    bash dev python -m bench pose-edits --levels 0 1
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--levels", nargs="+", type=int, default=[0, 1])
    p.add_argument("--bones", nargs="+", default=["finger2-2.L", "lowerarm01.L"])
    p.add_argument("--edits", type=int, default=9)
    p.add_argument("--frame", type=int, default=25)


def measure(asset: str, level: int, bones: list[str], edits: int, frame: int) -> list[dict]:
    import bpy

    from skin_collide.addon import handlers, scanner
    from skin_collide.addon.session import MAX_PAIRS
    from skin_collide.addon.state import STATE
    from skin_collide.core.scan import FrameState
    from skin_collide.core.scan.carry import Carried

    ob = scenes.load_one(asset, level)
    scenes.select_only([ob], ob)
    bpy.ops.skin_collide.build()
    bpy.context.scene.skin_collide.self_collision = True
    sc = scanner.Scanner([ob], self_collision=True)
    full = sc.objects[0]
    carry = dataclasses.replace(full)
    # Both capped as the live overlay is (`session.query`: at most MAX_PAIRS pairs).
    sc.reconfigure(max_pairs=MAX_PAIRS)
    sc_carry = scanner.Scanner([ob], self_collision=True, objects=[carry])
    sc_carry.reconfigure(max_pairs=MAX_PAIRS, carry=True)      # it carries, as posing does
    sc_carry.carry_state(FrameState(carried=Carried()))
    scene = bpy.context.scene
    scene.frame_set(frame)
    arm = scenes.armature(ob)
    out = []
    for name in bones:
        pb = arm.pose.bones[name]
        rows = timing.Samples("eval", "full", "carried", "overlay", "blender", "moved", "pairs")
        last = None
        for k in range(edits + 1):
            ev, dg, pos, poses, a, t_full, b, t_carry = scenes.edit_and_query(pb, k, sc, sc_carry)
            pa = a[0][2] if a else np.zeros((0, 2), np.int64)
            pbs = b[0][2] if b else np.zeros((0, 2), np.int64)
            if not np.array_equal(pa, pbs) or sc.stopped or sc_carry.stopped:
                sys.exit(f"MISMATCH {asset} L{level} {name} edit {k}")
            t0 = timing.now()
            handlers._update(scene, dg)
            t_overlay = timing.ms_since(t0)
            live = STATE.live[scene.name_full]
            if live.error or live.total_pairs != len(sc.polygon_pairs(a)):
                sys.exit(f"OVERLAY {asset} L{level} {name} edit {k}: {live.error or live.total_pairs}")
            t_bl, _ = timing.blender_overlap([ob], dg)
            tris = sc.triangles[0]
            if last is not None and k:                       # edit 0 fills the cache
                moved = (pos[0] != last).any(axis=1)[tris].any(axis=1)
                rows.add(eval=ev, full=t_full, carried=t_carry, overlay=t_overlay,
                         blender=t_bl, moved=int(moved.sum()), pairs=len(pa))
            last = pos[0].copy()
        med = rows.medians()
        med.update(bone=name, level=level, triangles=int(full.rig.n_triangles))
        out.append(med)
    return out


def run(args) -> int:
    scenes.register_addon()
    rows = []
    for level in args.levels:
        rows += measure(args.asset, level, args.bones, args.edits, args.frame)
    timing.print_head("triangles", "bone", "moved triangles", "pairs", "full ms", "carried ms",
                      "overlay update ms", "Blender FromObject+overlap ms", "Blender evaluation ms",
                      "carried vs Blender", "overlay update vs Blender", "carried vs full",
                      "carried / evaluation", "overlay update / evaluation")
    for r in rows:
        timing.print_row(r["triangles"], r["bone"], f"{r['moved']:.0f}", f"{r['pairs']:.0f}",
                         f"{r['full']:.2f}", f"{r['carried']:.2f}", f"{r['overlay']:.2f}",
                         f"{r['blender']:.2f}", f"{r['eval']:.2f}",
                         f"{r['blender'] / r['carried']:.1f}x", f"{r['blender'] / r['overlay']:.1f}x",
                         f"{r['full'] / r['carried']:.1f}x", f"{r['carried'] / r['eval']:.1f}x",
                         f"{r['overlay'] / r['eval']:.1f}x")
    return 0


registry.register("pose-edits", "one-bone pose edits with self-collision: full against "
                  "carried query and the overlay update, against Blender's BVHTree rebuild",
                  options, run, smoke={"asset": scenes.SMOKE, "levels": [0],
                                       "bones": ["bone_3"], "edits": 2, "frame": 4},
                  doc=__doc__)
