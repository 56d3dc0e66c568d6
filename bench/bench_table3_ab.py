"""Table 3 query time of two code versions on the very same scene and frames (issue 7:
"no worse than 10%, measured in the same run as before and after").

One invocation times one version: `--root DIR` imports the package `skin_collide` from
DIR (a `git worktree` of an older commit) instead of the editable install, and prints the
module path it really imported. The scene is always built by THIS script and this
checkout's bench/scenes.py (MakeHuman, the copy 0.55 m apart along X, as
bench_table3.py), so both versions see the same triangles in the same poses. Run the two
versions alternately (A B A B) and compare medians:

    git worktree add /tmp/pre7 f68d0b5
    for r in 1 2; do
      bash dev python bench/bench_table3_ab.py --root /tmp/pre7 --stride 6
      bash dev python bench/bench_table3_ab.py --stride 6
    done

Timed per frame: wall clock and CPU time of the process (the machine is shared; CPU time
is less sensitive to other jobs), the best of `--repeat` calls, all pairs, every object's
spheres refitted on demand and traversed. `query` is `core.scan.query_frame` alone; where
the version decides the frame's triangles itself (issue 7: Blender re-splits deformed
quads), their cost is timed apart as `tri`, and `query+tri` is reported too. The pair
counts must agree between versions (same scene, same answer). `query_frames_ms` lists,
per frame, the smaller of the wall and CPU bests. Not a test: nothing asserts on time.
"""
from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "assets")


def import_root(root: str | None):
    if root:
        # A directory holding a `skin_collide` link to the old checkout, first on sys.path:
        # the path finder then wins over the editable install's finder (appended last).
        d = tempfile.mkdtemp(prefix="skc_ab_")
        os.symlink(os.path.abspath(root), os.path.join(d, "skin_collide"))
        sys.path.insert(0, d)
    import skin_collide

    return os.path.realpath(os.path.dirname(skin_collide.__file__))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=None, help="checkout to import skin_collide from")
    ap.add_argument("--asset", default="makehuman_default.blend")
    ap.add_argument("--stride", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=3, help="timed queries per frame (min kept)")
    args = ap.parse_args()
    where = import_root(args.root)
    sys.path.insert(0, HERE)
    import bpy  # noqa: F401
    import scenes

    from skin_collide.addon import animation, extract, files, scanner
    from skin_collide.core import scan as core_scan

    files.load_file(os.path.join(SHARED, args.asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    ob2, _ = scenes.duplicate_character(ob, arm, f"{ob.name}_copy", offset=(0.55, 0.0, 0.0),
                                        turn=0.0)
    sc = scanner.Scanner([ob, ob2])
    takes_tris = "triangles" in inspect.signature(core_scan.query_frame).parameters
    scene = bpy.context.scene
    act = arm.animation_data.action
    frames = animation.action_frames(act)[::args.stride]
    q, t, qc, tc, pairs = [], [], [], [], []
    for f in frames:
        scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        best_q = best_t = best_qc = best_tc = math.inf
        for _ in range(args.repeat):
            kw = {}
            if takes_tris:
                t0, c0 = time.perf_counter(), time.process_time()
                tris = [core_scan.frame_triangles(o, p) for o, p in zip(sc.objects, pos)]
                best_t = min(best_t, (time.perf_counter() - t0) * 1000)
                best_tc = min(best_tc, (time.process_time() - c0) * 1000)
                kw["triangles"] = tris
            t0, c0 = time.perf_counter(), time.process_time()
            res = core_scan.query_frame(sc.objects, pos, poses, **kw)
            best_q = min(best_q, (time.perf_counter() - t0) * 1000)
            best_qc = min(best_qc, (time.process_time() - c0) * 1000)
        q.append(best_q)
        t.append(best_t if takes_tris else 0.0)
        qc.append(best_qc)
        tc.append(best_tc if takes_tris else 0.0)
        pairs.append(sum(len(p) for _, _, p in res.pairs))
    out = {"module": where, "frames": len(frames), "query_ms": statistics.median(q),
           "tri_ms": statistics.median(t),
           "query_plus_tri_ms": statistics.median([a + b for a, b in zip(q, t)]),
           "query_cpu_ms": statistics.median(qc), "tri_cpu_ms": statistics.median(tc),
           "query_plus_tri_cpu_ms": statistics.median([a + b for a, b in zip(qc, tc)]),
           "pairs_median": statistics.median(pairs), "pairs_total": sum(pairs),
           # Per frame, the smaller of the wall and CPU bests (where the median comes from).
           "query_frames_ms": [round(min(a, b), 2) for a, b in zip(q, qc)]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
