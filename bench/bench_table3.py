"""Reproduce Kavan & Žára 2005, Table 3 (and Table 2) on the shared assets.

Two copies of a character, subdivided 0..N times (every face split in four, same shape),
placed so that they interpenetrate, animated through the same frames. Per subdivision
level, all in one process on the same frames:

* on-demand refit + traversal (all pairs), and the first-hit query;
* bottom-up refit from the evaluated positions + the same traversal;
* Blender: ``BVHTree.FromObject`` for both meshes + ``overlap`` (the bar);
* Blender's own evaluation of the frame (the Armature modifier), for reference.

Usage (from the repository root):
    bash dev python bench/bench_table3.py --asset makehuman_default.blend --levels 0 1
    bash dev python bench/bench_table3.py --asset cesium_man.glb --levels 0 1 2 --table2

Timings are medians over the frames; ratios are against on-demand. Not a test: nothing
here asserts on time.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scenes  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "assets")


def load_pair(asset: str, level: int, offset, turn):
    import bpy

    from skin_collide.addon import extract, files

    files.load_file(os.path.join(SHARED, asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    scenes.subdivide_rest_mesh(ob, level)
    ob2, _ = scenes.duplicate_character(ob, arm, f"{ob.name}_copy", offset=offset, turn=turn)
    return ob, ob2


def run_level(args, level: int) -> dict:
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import animation, extract, scanner
    from skin_collide.core import scan as core_scan
    from skin_collide.core.bounds import refit

    ob, ob2 = load_pair(args.asset, level, args.offset, math.radians(args.turn))
    t0 = time.perf_counter()
    sc = scanner.Scanner([ob, ob2])
    build_s = (time.perf_counter() - t0) / 2
    scene = bpy.context.scene
    arm = extract.modifier_report(ob).armature
    act = arm.animation_data.action if arm.animation_data else None
    frames = animation.action_frames(act) if act else list(range(scene.frame_start, scene.frame_end + 1))
    frames = frames[::args.stride]
    rows = {k: [] for k in ("eval", "od", "od_ss", "fh", "bu", "bu_ss", "bl", "blw", "pairs",
                            "bl_pairs", "blw_pairs", "tri")}
    for f in frames:
        t0 = time.perf_counter()
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        pos, poses = sc.evaluate(dg)
        rows["eval"].append((time.perf_counter() - t0) * 1000)
        # The frame's triangles (Blender re-splits deformed quads); `evaluate` decided them
        # on the mesh-local positions. Their cost, measured apart (not in the query ms):
        t0 = time.perf_counter()
        for o, p in zip(sc.objects, pos):
            core_scan.frame_triangles(o, p)
        rows["tri"].append((time.perf_counter() - t0) * 1000)
        tris = sc.triangles
        od = core_scan.query_frame(sc.objects, pos, poses, triangles=tris)
        fh = core_scan.query_frame(sc.objects, pos, poses, first_hit=True, triangles=tris)
        bu = core_scan.query_frame(sc.objects, pos, poses, mode="bottom-up", triangles=tris)
        # Converting the triangle lists for FromPolygons is done outside the timing.
        tri_lists = [t.tolist() for t in tris]
        t0 = time.perf_counter()
        ta = BVHTree.FromObject(ob, dg)
        tb = BVHTree.FromObject(ob2, dg)
        ov = ta.overlap(tb)
        rows["bl"].append((time.perf_counter() - t0) * 1000)
        # The correct cross-object query in Blender needs world space: FromObject is local.
        t0 = time.perf_counter()
        wa = BVHTree.FromPolygons(pos[0].tolist(), tri_lists[0], all_triangles=True)
        wb = BVHTree.FromPolygons(pos[1].tolist(), tri_lists[1], all_triangles=True)
        ovw = wa.overlap(wb)
        rows["blw"].append((time.perf_counter() - t0) * 1000)
        rows["blw_pairs"].append(len(ovw))
        rows["od"].append(od.ms)
        rows["fh"].append(fh.ms)
        rows["bu"].append(bu.ms)
        rows["od_ss"].append(sum(s.sphere_tests for s in od.stats))
        rows["bu_ss"].append(sum(s.sphere_tests for s in bu.stats))
        rows["pairs"].append(od.n_pairs)
        rows["bl_pairs"].append(len(ov))
        if args.verbose:
            print(f"  L{level} f{f}: pairs {od.n_pairs} (Blender world {len(ovw)}) on-demand "
                  f"{od.ms:.1f} ms first-hit {fh.ms:.1f} bottom-up {bu.ms:.1f} blender "
                  f"{rows['bl'][-1]:.1f} / world {rows['blw'][-1]:.1f}", flush=True)
    out = {"level": level, "triangles": sc.objects[0].rig.n_triangles,
           "spheres": sc.objects[0].data.tree.n_nodes, "build_s": build_s, "frames": len(frames)}
    for k, v in rows.items():
        out[k] = float(np.median(v))
    out["colliding_frames"] = int(sum(1 for p in rows["pairs"] if p))
    if args.table2:
        f = frames[len(frames) // 2]
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        pos, poses = sc.evaluate(dg)
        o = sc.objects[0]
        fr = refit.frame_transforms(poses[0], o.data.tree)
        alln = np.arange(o.data.tree.n_nodes)
        radii = {
            "reference": o.data.tree.radii,
            "on-demand": refit.refit_on_demand(o.data.tree, o.data.bounds, fr, alln)[1],
            "bottom-up": refit.refit_bottom_up(o.data.tree, sc.triangles[0], pos[0])[1],
            "best": refit.refit_exact(o.data.tree, pos[0])[1],
        }
        lp = o.data.tree.level_ptr
        out["table2"] = {"frame": f, "levels": [
            [d + 1, int(lp[d + 1] - lp[d])] + [float(r[lp[d]:lp[d + 1]].mean()) for r in radii.values()]
            for d in range(lp.size - 1)]}
    return out


def print_tables(args, results: list[dict]) -> None:
    print(f"\nTable 3 ({args.asset}, two interpenetrating copies, medians over frames; "
          f"ms per frame)")
    head = ["Subdivisions"] + [str(r["level"]) for r in results]
    lines = [
        ("Triangles (each)", "triangles", "{:.0f}"), ("Spheres (each)", "spheres", "{:.0f}"),
        ("Colliding triangle pairs", "pairs", "{:.0f}"),
        ("Blender world-space pairs", "blw_pairs", "{:.0f}"),
        ("On-demand ms", "od", "{:.2f}"), ("On-demand S-S", "od_ss", "{:.0f}"),
        ("First-hit ms", "fh", "{:.2f}"), ("Bottom-up ms", "bu", "{:.2f}"),
        ("Bottom-up S-S", "bu_ss", "{:.0f}"),
        ("Blender FromObject+overlap ms (the bar; local space)", "bl", "{:.2f}"),
        ("Blender FromPolygons(world)+overlap ms", "blw", "{:.2f}"),
        ("Blender evaluation ms", "eval", "{:.2f}"), ("Build s (per character)", "build_s", "{:.2f}"),
        ("Frame triangles ms (both, not in the query)", "tri", "{:.2f}"),
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for label, key, fmt in lines:
        print("| " + " | ".join([label] + [fmt.format(r[key]) for r in results]) + " |")
    for label, num, den in (("Speed-up vs bottom-up", "bu", "od"),
                            ("Speed-up vs Blender FromObject", "bl", "od"),
                            ("Speed-up vs Blender world", "blw", "od"),
                            ("On-demand vs Blender evaluation", "eval", "od"),
                            ("First-hit vs all-pairs", "od", "fh")):
        print("| " + " | ".join([label] + [f"{r[num] / max(r[den], 1e-9):.1f}x" for r in results]) + " |")
    for r in results:
        if "table2" in r:
            t2 = r["table2"]
            print(f"\nTable 2 (level {r['level']}, frame {t2['frame']}): average radius per tree level")
            print("| Level | Nodes | Reference | On-demand | Bottom-up | Best |")
            print("|---|---|---|---|---|---|")
            for row in t2["levels"]:
                print("| " + " | ".join([str(row[0]), str(row[1])] + [f"{x:.4f}" for x in row[2:]]) + " |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--levels", type=int, nargs="+", default=[0, 1])
    p.add_argument("--stride", type=int, default=4, help="use every Nth frame of the action")
    p.add_argument("--offset", type=float, nargs=3, default=[0.55, 0.0, 0.0],
                   help="where the copy stands relative to the original (metres)")
    p.add_argument("--turn", type=float, default=0.0, help="copy's turn about Z (degrees)")
    p.add_argument("--table2", action="store_true")
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    if not os.path.isdir(SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({SHARED})")
    results = []
    for level in args.levels:
        print(f"level {level} ...", flush=True)
        results.append(run_level(args, level))
    print_tables(args, results)


if __name__ == "__main__":
    main()
