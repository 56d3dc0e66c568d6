"""Pose edits with the live overlay's self-collision (issue 29 item 1): the cost of one
update after a one-bone edit, full query against carried pairs (only what moved is
re-checked), against Blender's `BVHTree.FromObject` + self-`overlap` and Blender's own
evaluation of the edit. One process, the same edits; the pairs of both queries are
compared on every edit. *Overlay update* is the whole live update the add-on's pose
handler runs (`addon.handlers._update`: reading the evaluated positions and triangles,
the carried query, contacts and the overlay's result), on the built object.

Usage (from the repository root):
    bash dev python bench/bench_pose_edits.py --levels 0 1
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_self import load_one  # noqa: E402


def rotate(pb, angle: float) -> None:
    """Turn a pose bone by `angle` about its local X, whatever its rotation mode."""
    from mathutils import Quaternion

    q = Quaternion((1, 0, 0), angle)
    if pb.rotation_mode == "QUATERNION":
        pb.rotation_quaternion = pb.rotation_quaternion @ q
    else:
        e = pb.rotation_euler.copy()
        e.x += angle
        pb.rotation_euler = e


def edit_and_query(pb, k: int, sc, sc_carry):
    """Edit `k` of pose bone `pb` (±6° about its X, alternating), Blender's evaluation of
    it, then the full query (`sc`) and the carried one (`sc_carry`, on the same positions
    and triangles). Returns (evaluation ms, depsgraph, positions, poses, full pairs, full
    ms, carried pairs, carried ms)."""
    import bpy

    rotate(pb, math.radians(6.0) * (1 if k % 2 else -1))
    t0 = time.perf_counter()
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    ev = (time.perf_counter() - t0) * 1000
    pos, poses = sc.evaluate(dg)
    t0 = time.perf_counter()
    a, _, _ = sc.query(pos, poses)
    t_full = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    b, _, _ = sc_carry.query(pos, poses, sc.triangles)
    t_carry = (time.perf_counter() - t0) * 1000
    return ev, dg, pos, poses, a, t_full, b, t_carry


def run(asset: str, level: int, bones: list[str], edits: int, frame: int) -> list[dict]:
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import extract, handlers, scanner
    from skin_collide.addon.session import MAX_PAIRS
    from skin_collide.addon.state import STATE

    ob = load_one(asset, level)
    for o in bpy.context.scene.objects:
        o.select_set(o == ob)
    bpy.context.view_layer.objects.active = ob
    bpy.ops.skin_collide.build()
    bpy.context.scene.skin_collide.self_collision = True
    sc = scanner.Scanner([ob], self_collision=True)
    full = sc.objects[0]
    carry = dataclasses.replace(full)
    carry.carry_self_pairs = True
    # Both capped as the live overlay is (`session.query`: at most MAX_PAIRS pairs).
    sc.max_pairs = MAX_PAIRS
    sc_carry = scanner.Scanner([ob], self_collision=True, objects=[carry])
    sc_carry.max_pairs = MAX_PAIRS
    scene = bpy.context.scene
    scene.frame_set(frame)
    arm = extract.modifier_report(ob).armature
    out = []
    for name in bones:
        pb = arm.pose.bones[name]
        rows = {k: [] for k in ("eval", "full", "carried", "overlay", "blender", "moved",
                                "pairs")}
        last = None
        for k in range(edits + 1):
            ev, dg, pos, poses, a, t_full, b, t_carry = edit_and_query(pb, k, sc, sc_carry)
            pa = a[0][2] if a else np.zeros((0, 2), np.int64)
            pbs = b[0][2] if b else np.zeros((0, 2), np.int64)
            if not np.array_equal(pa, pbs) or sc.stopped or sc_carry.stopped:
                sys.exit(f"MISMATCH {asset} L{level} {name} edit {k}")
            t0 = time.perf_counter()
            handlers._update(scene, dg)
            t_overlay = (time.perf_counter() - t0) * 1000
            live = STATE.live[scene.name_full]
            if live.error or live.total_pairs != len(sc.polygon_pairs(a)):
                sys.exit(f"OVERLAY {asset} L{level} {name} edit {k}: {live.error or live.total_pairs}")
            t0 = time.perf_counter()
            bt = BVHTree.FromObject(ob, dg)
            bt.overlap(bt)
            t_bl = (time.perf_counter() - t0) * 1000
            tris = sc.triangles[0]
            if last is not None and k:                       # edit 0 fills the cache
                moved = (pos[0] != last).any(axis=1)[tris].any(axis=1)
                for key, v in (("eval", ev), ("full", t_full), ("carried", t_carry),
                               ("overlay", t_overlay),
                               ("blender", t_bl), ("moved", int(moved.sum())),
                               ("pairs", len(pa))):
                    rows[key].append(v)
            last = pos[0].copy()
        med = {k: float(np.median(v)) for k, v in rows.items()}
        med.update(bone=name, level=level, triangles=int(full.rig.n_triangles))
        out.append(med)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--asset", default="makehuman_default.blend")
    ap.add_argument("--levels", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--bones", nargs="+", default=["finger2-2.L", "lowerarm01.L"])
    ap.add_argument("--edits", type=int, default=9)
    ap.add_argument("--frame", type=int, default=25)
    args = ap.parse_args()
    import skin_collide

    skin_collide.register()
    rows = []
    for level in args.levels:
        rows += run(args.asset, level, args.bones, args.edits, args.frame)
    print("| triangles | bone | moved triangles | pairs | full ms | carried ms | "
          "overlay update ms | Blender FromObject+overlap ms | Blender evaluation ms | "
          "carried vs Blender | overlay update vs Blender | carried vs full | "
          "carried / evaluation | overlay update / evaluation |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['triangles']} | {r['bone']} | {r['moved']:.0f} | {r['pairs']:.0f} | "
              f"{r['full']:.2f} | {r['carried']:.2f} | {r['overlay']:.2f} | "
              f"{r['blender']:.2f} | {r['eval']:.2f} | "
              f"{r['blender'] / r['carried']:.1f}x | {r['blender'] / r['overlay']:.1f}x | "
              f"{r['full'] / r['carried']:.1f}x | {r['carried'] / r['eval']:.1f}x | "
              f"{r['overlay'] / r['eval']:.1f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
