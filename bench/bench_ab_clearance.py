"""Clearance, two versions of the code in one process: the whole frame a scan runs with a
clearance (`Scanner(..., clearance=D).current`), A (a commit, checked out into a temporary
git worktree and imported under another name, `bench_ab_self.import_version`) against B
(this checkout), on the scenes of `bench_clearance.py` (a shirt over MakeHuman's torso,
two MakeHumans passing close; D = 1% of the height), alternating which goes first, on the
same evaluated depsgraph. The answers must agree on every frame (the script stops
otherwise): the intersecting polygon pairs, and the near contacts' polygon pairs, bones
and closest distances (their points as far apart as the distance).

Prints per scene the medians of each version's frame and the geometric mean of the
per-frame ratios A / B.

Usage (from the repository root):
    bash dev python bench/bench_ab_clearance.py --rev HEAD~1
    bash dev python bench/bench_ab_clearance.py --rev 509c490 --scenes shirt --repeat 7
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_clearance  # noqa: E402
import scenes  # noqa: E402
from bench_ab_self import ROOT, import_version  # noqa: E402


def _answer(out) -> tuple:
    """What both versions must agree on: intersecting polygon pairs, and per near contact
    (objects, polygon pairs, bones, closest distance)."""
    rec = out.record
    hits = tuple(sorted(map(tuple, rec.pairs)))
    near = tuple(sorted((c.a, c.b, tuple(map(tuple, c.pairs.tolist())), tuple(c.bones),
                         c.min_distance) for c in rec.near_contacts))
    for c in rec.near_contacts:
        gap = float(np.linalg.norm(np.asarray(c.points[0]) - np.asarray(c.points[1])))
        if abs(gap - c.min_distance) > 1e-9:
            sys.exit(f"a near contact's points are {gap} apart, its distance {c.min_distance}")
    return hits, near


def run_scene(args, name: str, scanner_a) -> dict:
    import bpy

    from skin_collide.addon import animation, scanner

    body, arm = bench_clearance.load_body(args.asset)
    h = bench_clearance.height(body)
    d = 0.01 * h
    if name == "shirt":
        other = bench_clearance.make_shirt(body, 0.005 * h)
    else:
        other, _ = scenes.duplicate_character(body, arm, "body_copy",
                                              offset=(args.offset, 0.0, 0.0), turn=0.0)
    obs = [other, body] if name == "shirt" else [body, other]
    sc = {"A": scanner_a.Scanner(obs, clearance=d), "B": scanner.Scanner(obs, clearance=d)}
    scene = bpy.context.scene
    frames = animation.action_frames(arm.animation_data.action)[::args.stride][:args.max_frames]
    times = {"A": [], "B": []}
    ratios = []
    for k, f in enumerate([frames[0]] + frames):         # the first frame warms up
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        per = {"A": [], "B": []}
        answers = {}
        for rep in range(args.repeat):
            for v in (("A", "B") if rep % 2 == 0 else ("B", "A")):
                t0 = time.perf_counter()
                out = sc[v].current(scene, dg)
                per[v].append((time.perf_counter() - t0) * 1000.0)
                answers[v] = _answer(out)
        if answers["A"] != answers["B"]:
            sys.exit(f"{name} frame {f}: the two versions' answers differ")
        if not k:
            continue
        a, b = statistics.median(per["A"]), statistics.median(per["B"])
        times["A"].append(a)
        times["B"].append(b)
        ratios.append(a / b)
        if args.verbose:
            print(f"  {name} frame {f}: A {a:.1f} ms, B {b:.1f} ms ({a / b:.3f}), "
                  f"{len(answers['B'][1])} near contacts", flush=True)
    return {"scene": name, "A": statistics.median(times["A"]),
            "B": statistics.median(times["B"]),
            "ratio": float(np.exp(np.mean(np.log(ratios)))), "frames": len(ratios)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", required=True, help="the commit A")
    ap.add_argument("--asset", default="makehuman_default.blend")
    ap.add_argument("--scenes", nargs="+", default=["shirt", "pair"], choices=["shirt", "pair"])
    ap.add_argument("--offset", type=float, default=0.85)
    ap.add_argument("--stride", type=int, default=6)
    ap.add_argument("--max-frames", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5, help="answers of each version per frame")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    import skin_collide

    if not os.path.isdir(bench_clearance.SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({bench_clearance.SHARED})")
    skin_collide.register()
    where = tempfile.mkdtemp(prefix="skin_collide_a_")
    os.rmdir(where)
    try:
        import_version(args.rev, where)
        scanner_a = importlib.import_module("skin_collide_a.addon.scanner")
        rows = [run_scene(args, s, scanner_a) for s in args.scenes]
    finally:
        subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", where],
                       capture_output=True)
    print(f"\nThe whole clearance frame, A = {args.rev} against B = this checkout "
          f"({args.repeat} answers of each per frame, alternating), medians in ms")
    print("| scene | frames | A ms | B ms | A / B (geometric mean per frame) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scene']} | {r['frames']} | {r['A']:.1f} | {r['B']:.1f} | {r['ratio']:.3f} |")


if __name__ == "__main__":
    main()
