"""Pose edits between two characters (issue 29 item 1, "an unmoved character's tree is
reused"): two MakeHumans (`bench_table3.load_pair`), the artist posing A's finger or
forearm while B stands still. The cost of one live update (the overlay's capped query,
with or without self-collision), full query against carried pairs (self pairs and the
pairs between A and B re-checked only where triangles moved). One process, the same
edits; the pairs of both queries are compared on every edit.

Usage (from the repository root):
    bash dev python bench/bench_pose_edits_pair.py --offsets 0.55 0.1
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_pose_edits import edit_and_query  # noqa: E402
from bench_table3 import load_pair  # noqa: E402


def run(asset: str, offset: float, bones: list[str], edits: int, frame: int,
        self_collision: bool) -> list[dict]:
    import bpy

    from skin_collide.addon import extract, scanner
    from skin_collide.addon.session import MAX_PAIRS

    ob, ob2 = load_pair(asset, 0, (offset, 0.0, 0.0), 0.0)
    sc = scanner.Scanner([ob, ob2], self_collision=self_collision)
    carry = [dataclasses.replace(o) for o in sc.objects]
    for o in carry:
        o.carry_self_pairs = True
    # Both capped as the live overlay is (`session.query`: at most MAX_PAIRS pairs).
    sc.max_pairs = MAX_PAIRS
    sc_carry = scanner.Scanner([ob, ob2], self_collision=self_collision, objects=carry)
    sc_carry.max_pairs = MAX_PAIRS
    scene = bpy.context.scene
    scene.frame_set(frame)
    arm = extract.modifier_report(ob).armature
    out = []
    for name in bones:
        pb = arm.pose.bones[name]
        rows = {k: [] for k in ("eval", "full", "carried", "moved", "between", "self")}
        last = None
        for k in range(edits + 1):
            ev, _, pos, poses, a, t_full, b, t_carry = edit_and_query(pb, k, sc, sc_carry)
            same = len(a) == len(b) and all(
                x[:2] == y[:2] and np.array_equal(x[2], y[2]) for x, y in zip(a, b))
            if not same or sc.stopped or sc_carry.stopped:
                sys.exit(f"MISMATCH offset {offset} {name} edit {k}")
            if last is not None and k:                       # edit 0 fills the cache
                moved = (pos[0] != last).any(axis=1)[sc.triangles[0]].any(axis=1)
                n_between = sum(len(p) for i, j, p in a if i != j)
                n_self = sum(len(p) for i, j, p in a if i == j)
                for key, v in (("eval", ev), ("full", t_full), ("carried", t_carry),
                               ("moved", int(moved.sum())), ("between", n_between),
                               ("self", n_self)):
                    rows[key].append(v)
            last = pos[0].copy()
        med = {k: float(np.median(v)) for k, v in rows.items()}
        med.update(bone=name, offset=offset, triangles=int(sc.objects[0].rig.n_triangles))
        out.append(med)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--asset", default="makehuman_default.blend")
    ap.add_argument("--offsets", nargs="+", type=float, default=[0.55, 0.1],
                    help="B placed this far along X from A (m): 0.55 apart, 0.1 overlapping")
    ap.add_argument("--bones", nargs="+", default=["finger2-2.L", "lowerarm01.L"])
    ap.add_argument("--edits", type=int, default=9)
    ap.add_argument("--frame", type=int, default=25)
    ap.add_argument("--no-self", action="store_true", help="self-collision off")
    args = ap.parse_args()
    rows = []
    for offset in args.offsets:
        rows += run(args.asset, offset, args.bones, args.edits, args.frame, not args.no_self)
    print(f"self-collision {'off' if args.no_self else 'on'}; medians over {args.edits} edits")
    print()
    print("| B's offset | bone | moved triangles of A | triangle pairs A×B | self triangle pairs "
          "| full ms | carried ms | full / carried | Blender evaluation ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['offset']:g} m | {r['bone']} | {r['moved']:.0f} | {r['between']:.0f} | "
              f"{r['self']:.0f} | {r['full']:.2f} | {r['carried']:.2f} | "
              f"{r['full'] / r['carried']:.1f}x | {r['eval']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
