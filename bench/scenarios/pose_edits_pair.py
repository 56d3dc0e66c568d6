"""Pose edits between two characters (issue 29 item 1, "an unmoved character's tree is
reused"): two MakeHumans (`scenes.load_pair`), the artist posing A's finger or
forearm while B stands still. The cost of one live update (the overlay's capped query,
with or without self-collision), full query against carried pairs (self pairs and the
pairs between A and B re-checked only where triangles moved). One process, the same
edits; the pairs of both queries are compared on every edit.

    bash dev python -m bench pose-edits-pair --offsets 0.55 0.1
"""
from __future__ import annotations

import dataclasses
import sys

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--offsets", nargs="+", type=float, default=[0.55, 0.1],
                   help="B placed this far along X from A (m): 0.55 apart, 0.1 overlapping")
    p.add_argument("--bones", nargs="+", default=["finger2-2.L", "lowerarm01.L"])
    p.add_argument("--edits", type=int, default=9)
    p.add_argument("--frame", type=int, default=25)
    p.add_argument("--no-self", action="store_true", help="self-collision off")


def measure(asset: str, offset: float, bones: list[str], edits: int, frame: int,
            self_collision: bool) -> list[dict]:
    import bpy

    from skin_collide.addon import scanner
    from skin_collide.addon.session import MAX_PAIRS
    from skin_collide.core.scan import FrameState
    from skin_collide.core.scan.carry import Carried

    ob, ob2 = scenes.load_pair(asset, 0, (offset, 0.0, 0.0), 0.0)
    sc = scanner.Scanner([ob, ob2], self_collision=self_collision)
    carry = [dataclasses.replace(o) for o in sc.objects]
    # Both capped as the live overlay is (`session.query`: at most MAX_PAIRS pairs).
    sc.reconfigure(max_pairs=MAX_PAIRS)
    sc_carry = scanner.Scanner([ob, ob2], self_collision=self_collision, objects=carry)
    sc_carry.reconfigure(max_pairs=MAX_PAIRS, carry=True)      # it carries, as posing does
    sc_carry.carry_state(FrameState(carried=Carried()))
    scene = bpy.context.scene
    scene.frame_set(frame)
    arm = scenes.armature(ob)
    out = []
    for name in bones:
        pb = arm.pose.bones[name]
        rows = timing.Samples("eval", "full", "carried", "moved", "between", "self")
        last = None
        for k in range(edits + 1):
            ev, _, pos, poses, a, t_full, b, t_carry = scenes.edit_and_query(pb, k, sc, sc_carry)
            same = len(a) == len(b) and all(
                x[:2] == y[:2] and np.array_equal(x[2], y[2]) for x, y in zip(a, b))
            if not same or sc.stopped or sc_carry.stopped:
                sys.exit(f"MISMATCH offset {offset} {name} edit {k}")
            if last is not None and k:                       # edit 0 fills the cache
                moved = (pos[0] != last).any(axis=1)[sc.triangles[0]].any(axis=1)
                n_between = sum(len(p) for i, j, p in a if i != j)
                n_self = sum(len(p) for i, j, p in a if i == j)
                rows.add(eval=ev, full=t_full, carried=t_carry, moved=int(moved.sum()),
                         between=n_between, self=n_self)
            last = pos[0].copy()
        med = rows.medians()
        med.update(bone=name, offset=offset, triangles=int(sc.objects[0].rig.n_triangles))
        out.append(med)
    return out


def run(args) -> int:
    rows = []
    for offset in args.offsets:
        rows += measure(args.asset, offset, args.bones, args.edits, args.frame, not args.no_self)
    print(f"self-collision {'off' if args.no_self else 'on'}; medians over {args.edits} edits")
    print()
    timing.print_head("B's offset", "bone", "moved triangles of A", "triangle pairs A×B",
                      "self triangle pairs", "full ms", "carried ms", "full / carried",
                      "Blender evaluation ms")
    for r in rows:
        timing.print_row(f"{r['offset']:g} m", r["bone"], f"{r['moved']:.0f}",
                         f"{r['between']:.0f}", f"{r['self']:.0f}", f"{r['full']:.2f}",
                         f"{r['carried']:.2f}", f"{r['full'] / r['carried']:.1f}x",
                         f"{r['eval']:.2f}")
    return 0


registry.register("pose-edits-pair", "one-bone pose edits on one of two characters: full "
                  "against carried query", options, run,
                  smoke={"asset": scenes.SMOKE, "offsets": [0.1], "bones": ["bone_3"],
                         "edits": 2, "frame": 4}, doc=__doc__)
