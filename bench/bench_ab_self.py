"""Self-collision of one character, two versions of the code in one process: A (a commit,
checked out into a temporary git worktree and imported under another name) against B
(this checkout), on the same frames, alternating which goes first, with Blender's
`BVHTree.FromObject` + self-overlap run before each query (its work evicts part of the
cache, as Blender's own work does between frames of playback). Both answers must be equal
on every frame (the script stops otherwise). Prints the medians and their difference.

Runs of one version differ from day to day on this machine by more than most changes;
A and B in one process, interleaved, differ by far less: this is how a change to the
per-frame query is measured (docs/benchmarks.md).

Usage (from the repository root):
    bash dev python bench/bench_ab_self.py --rev HEAD~1 --asset makehuman_default.blend --level 0
    bash dev python bench/bench_ab_self.py --rev 0f47e90 --asset cesium_man.glb --level 1
    bash dev python bench/bench_ab_self.py --rev f935662 --frame   # the whole frame query
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_self import load_one  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def import_version(rev: str, where: str, name: str = "skin_collide_a"):
    """The package at commit `rev`, checked out into `where`, imported as `name`."""
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", where, rev],
                   check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(where, "__init__.py"), submodule_search_locations=[where])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    try:                    # the AABB tree's package, since core/ has rooms and before
        tree = importlib.import_module(f"{name}.core.aabb_tree")
    except ModuleNotFoundError:
        tree = importlib.import_module(f"{name}.core.self_collision")
    return tree, importlib.import_module(f"{name}.core.scan")


def run(args, where: str) -> None:
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import animation, extract, scanner
    from skin_collide.core import aabb_tree as self_b
    from skin_collide.core import scan as scan_b

    versions = [import_version(args.rev, where), (self_b, scan_b)]
    ob = load_one(args.asset, args.level)
    sc = scanner.Scanner([ob], self_collision=True)
    obj = sc.objects[0]
    rig = obj.rig
    trees = [m.build(rig.rest_positions, rig.triangles, obj.vertex_keys) for m, _ in versions]
    # --frame: each version's whole frame query (`core.scan.query_frame`, self-collision
    # on), on an object that version prepared itself.
    objs = [scan.prepare(rig) for _, scan in versions] if args.frame else None
    scene = bpy.context.scene
    arm = extract.modifier_report(ob).armature
    act = arm.animation_data.action if arm.animation_data else None
    frames = animation.action_frames(act) if act else list(range(scene.frame_start,
                                                                   scene.frame_end + 1))
    frames = frames[::args.stride]
    ms = [[], []]
    for _ in range(args.reps):
        for k, f in enumerate(frames):
            scene.frame_set(f)
            dg = bpy.context.evaluated_depsgraph_get()
            pos, poses = sc.evaluate(dg)
            answers = [None, None]
            for i in ((0, 1) if k % 2 else (1, 0)):
                tree = BVHTree.FromObject(ob, dg)
                tree.overlap(tree)
                module, scan = versions[i]
                t0 = time.perf_counter()
                if objs is not None:
                    res = scan.query_frame([objs[i]], pos, poses, self_collision=True,
                                           triangles=sc.triangles)
                    answers[i] = np.concatenate([q for _, _, q in res.pairs]) \
                        if res.pairs else np.zeros((0, 2), np.int64)
                else:
                    tris = scan.frame_triangles(obj, pos[0])
                    answers[i] = module.self_pairs(trees[i], pos[0], tris, trees[i].weld_ids)
                ms[i].append((time.perf_counter() - t0) * 1000)
            if not np.array_equal(answers[0], answers[1]):
                sys.exit(f"frame {f}: the two versions' pairs differ")
    a, b = np.median(ms[0]), np.median(ms[1])
    print(f"{args.asset} level {args.level}, {len(frames)} frames x {args.reps}: "
          f"A ({args.rev}) {a:.3f} ms, B (this checkout) {b:.3f} ms, "
          f"B - A {b - a:+.3f} ms ({(b - a) / a * 100:+.1f}%)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rev", default="HEAD", help="commit of version A (default HEAD)")
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0, help="Simple subdivisions of the mesh")
    p.add_argument("--stride", type=int, default=1, help="every n-th frame of the action")
    p.add_argument("--reps", type=int, default=2, help="passes over the frames")
    p.add_argument("--frame", action="store_true",
                   help="time the whole frame query (core.scan.query_frame), not the self tree")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = os.path.join(tmp, "a")
        try:
            run(args, where)
        finally:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", where],
                           capture_output=True)


if __name__ == "__main__":
    main()
