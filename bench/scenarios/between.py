"""The cost of the check between frames (issue 57): the same frames of one process scanned
with and without `--between-frames`, through `Scanner.run` (the pipeline a user runs),
alternating whole runs. The figure is the report's per-frame ms (`FrameRecord.ms`: the
frame's query and contacts; with the check between frames also its step's continuous
check, `step_ms`, which is shown beside). The last frame of a run has no step (no next
sample) and is left out of both medians.

    bash dev python -m bench between                                   # MakeHuman 27k walk, self
    bash dev python -m bench between --asset cesium_man.glb --pair      # two characters crossing
    bash dev python -m bench between --frames 24 --rounds 5

Prints the medians of every run pooled, the median of the per-frame ratios, the share of
frames more than 3x slower, the means, the slowest step, and the pass-through contacts
and "between" pairs of a run (equal in every round, or it exits non-zero).
"""
from __future__ import annotations

import sys

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--frames", type=int, default=24, help="consecutive frames of the action")
    p.add_argument("--start", type=int, default=0, help="first frame after the action's start")
    p.add_argument("--rounds", type=int, default=3, help="alternating runs of each")
    p.add_argument("--pair", action="store_true",
                   help="two copies standing in one another, turned 90 degrees (pairs "
                        "between objects; without it one character against itself)")
    p.add_argument("--subframes", type=int, default=1)


def measure(args) -> dict:
    import bpy

    from skin_collide.addon import scanner
    from skin_collide.core.scan import ScanSettings

    if args.pair:
        ob, _, ob2, _ = scenes.crossing(args.asset)
        meshes, self_collision = [ob, ob2], False
    else:
        meshes, self_collision = [scenes.load_one(args.asset, 0)], True
    scene = bpy.context.scene
    lo, hi = scenes.action_range(meshes[0])
    frames = list(range(lo + args.start, min(lo + args.start + args.frames, hi + 1)))
    if len(frames) < 2:
        sys.exit(f"need two frames or more: the action runs from {lo} to {hi}")
    made = {}
    for between in (False, True):
        made[between] = scanner.Scanner(
            meshes, settings=ScanSettings(self_collision=self_collision, between=between,
                                          subframes=args.subframes if between else 1))
        made[between].run(scene, frames[:2])                  # build, caches, first refit
    rows = timing.Samples()
    passes = None
    for _ in range(args.rounds):
        for between in (False, True):
            rep = made[between].run(scene, frames)
            for r in rep.frames[:-1]:
                if r.not_checked:
                    continue
                if between:
                    rows.add(between=r.ms, step=r.step_ms, query=r.ms - r.step_ms)
                else:
                    rows.add(without=r.ms)
            if between:
                found = [(r.frame, len(r.passes), len(r.between or ())) for r in rep.frames]
                if passes is not None and found != passes:
                    sys.exit(f"MISMATCH between rounds: {found} != {passes}")
                passes = found
    out = rows.medians()
    out.update(step_max=max(rows["step"]), mean_between=float(sum(rows["between"])
               / len(rows["between"])), mean_without=float(sum(rows["without"])
               / len(rows["without"])),
               slow=sum(1 for x, y in zip(rows["between"], rows["without"]) if x > 3 * y)
               / len(rows["between"]),
               asset=args.asset, frames=len(frames) - 1, triangles=sum(
        int(o.rig.n_triangles) for o in made[True].objects), ratio=rows.ratio("between", "without"),
        passes=sum(p for _, p, _ in passes), between_pairs=sum(b for _, _, b in passes))
    return out


def run(args) -> int:
    scenes.register_addon()
    r = measure(args)
    what = "two characters in one another" if args.pair else "one character, self"
    print(f"\nThe check between frames, {r['asset']} ({what}, {r['triangles']} triangles), "
          f"{r['frames']} steps x {args.rounds} rounds, medians (ms per frame, the report's)")
    timing.print_head("without", "with --between-frames", "of which the step",
                      "with / without", "steps over 3x", "mean without", "mean with",
                      "slowest step", "pass-through contacts", "between pairs")
    timing.print_row(f"{r['without']:.2f}", f"{r['between']:.2f}", f"{r['step']:.2f}",
                     f"{r['ratio']:.2f}", f"{100 * r['slow']:.0f}%", f"{r['mean_without']:.2f}",
                     f"{r['mean_between']:.2f}", f"{r['step_max']:.0f}", f"{r['passes']}",
                     f"{r['between_pairs']}")
    return 0


registry.register("between", "the scan with and without the check between frames, same "
                  "frames, one process (issue 57)", options, run,
                  smoke={"asset": scenes.SMOKE, "frames": 3, "rounds": 1}, doc=__doc__)
