"""Kavan, O'Sullivan & Žára 2006, Tables 1 and 2, for Blender's Preserve Volume.

Two copies of a character (as in bench_table3.py, no subdivision), Preserve Volume switched
on in both Armature modifiers, animated through the same frames. All in one process:

* Table 1 (one frame, the middle one): min / avg / max sphere radius per tree level for the
  rest spheres, the on-demand LBS refit (of the same pose's LBS mesh), the on-demand
  Preserve Volume refit (`core.bounds.refit_dqs`) and the exact minimal ball of each node's
  Preserve Volume vertices.
* Table 2 (medians over the frames; query ms: refit + traversal + exact tests, all pairs
  and self-collision off):
  - LBS on-demand: the same rig without Preserve Volume, on `core.skinning.lbs_rig` of the
    frame's pose (identical to Blender's LBS within 1.4e-6 of the size);
  - PV on-demand: the Preserve Volume refit on Blender's evaluated Preserve Volume mesh;
  - bottom-up: refit from those evaluated positions.

Usage (from the repository root):
    bash dev python bench/bench_table_sbs.py --asset makehuman_default.blend --stride 6
    bash dev python bench/bench_table_sbs.py --asset cesium_man.glb --stride 4 --offset 0.35 0 0

Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scenes  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "assets")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--stride", type=int, default=6)
    p.add_argument("--offset", type=float, nargs=3, default=[0.55, 0.0, 0.0])
    args = p.parse_args()
    if not os.path.isdir(SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({SHARED})")

    import bpy

    from skin_collide.addon import animation, extract, files, scanner
    from skin_collide.core import scan as core_scan
    from skin_collide.core import skinning
    from skin_collide.core.bounds import refit, refit_dqs

    files.load_file(os.path.join(SHARED, args.asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    ob2, _ = scenes.duplicate_character(ob, arm, f"{ob.name}_copy", offset=args.offset, turn=0.0)
    for o in (ob, ob2):
        for mod in o.modifiers:
            if mod.type == "ARMATURE":
                mod.use_deform_preserve_volume = True
    sc = scanner.Scanner([ob, ob2])
    pv_objs = sc.objects
    assert all(isinstance(o.data.bounds, refit_dqs.DqsBounds) for o in pv_objs)
    lbs_objs = []
    for o in pv_objs:
        rig = o.rig.__class__(**{**o.rig.__dict__})
        rig.preserve_volume = False
        lbs_objs.append(core_scan.CollisionObject(o.name, rig, o.data.tree, refit.lbs_bounds(o.data.tree, rig),
                                                  "lbs", "", o.keys))
    scene = bpy.context.scene
    act = arm.animation_data.action if arm.animation_data else None
    frames = animation.action_frames(act) if act else list(range(scene.frame_start, scene.frame_end + 1))
    frames = frames[::args.stride]
    rows = {k: [] for k in ("lbs", "pv", "bu", "lbs_pairs", "pv_pairs", "lbs_ss", "pv_ss", "bu_ss")}
    for f in frames:
        scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        lpos = [skinning.lbs_rig(o.rig, pose) for o, pose in zip(lbs_objs, poses)]
        lq = core_scan.query_frame(lbs_objs, lpos, poses)
        pq = core_scan.query_frame(pv_objs, pos, poses)
        bq = core_scan.query_frame(pv_objs, pos, poses, mode="bottom-up")
        assert pq.modes == ["on-demand"] * 2 and bq.n_pairs == pq.n_pairs
        for k, q in (("lbs", lq), ("pv", pq), ("bu", bq)):
            rows[k].append(q.ms)
            rows[k + "_ss"].append(sum(s.sphere_tests for s in q.stats))
        rows["lbs_pairs"].append(lq.n_pairs)
        rows["pv_pairs"].append(pq.n_pairs)
        print(f"  f{f}: pairs LBS {lq.n_pairs} PV {pq.n_pairs}; ms LBS {lq.ms:.1f} "
              f"PV {pq.ms:.1f} bottom-up {bq.ms:.1f}", flush=True)
    med = {k: float(np.median(v)) for k, v in rows.items()}

    f = frames[len(frames) // 2]
    scene.frame_set(f)
    pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
    o, lo, pose = pv_objs[0], lbs_objs[0], poses[0]
    alln = np.arange(o.data.tree.n_nodes)
    radii = {
        "Reference": o.data.tree.radii,
        "LBS refit": refit.refit_on_demand(lo.data.tree, lo.data.bounds,
                                           refit.frame_transforms(pose, lo.data.tree), alln)[1],
        "PV refit": refit_dqs.refit_on_demand_dqs(o.data.tree, o.data.bounds,
                                                  refit_dqs.dqs_frame(pose, o.data.tree, o.rig.bone_rest), alln)[1],
        "Exact (PV)": refit.refit_exact(o.data.tree, pos[0])[1],
    }
    lp = o.data.tree.level_ptr
    print(f"\nTable 1 ({args.asset}, frame {f}, {o.rig.n_triangles} triangles, "
          f"{o.data.tree.n_nodes} spheres): sphere radius per tree level, min / avg / max")
    print("| Level | Nodes | " + " | ".join(radii) + " |")
    print("|---|---|" + "---|" * len(radii))
    for d in range(lp.size - 1):
        cells = []
        for r in radii.values():
            x = r[lp[d]:lp[d + 1]]
            cells.append(f"{x.min():.4f} / {x.mean():.4f} / {x.max():.4f}")
        print(f"| {d + 1} | {lp[d + 1] - lp[d]} | " + " | ".join(cells) + " |")
    print(f"\nTable 2 ({args.asset}, two copies, {len(frames)} frames, medians; query ms)")
    print("| | LBS on-demand | PV on-demand | PV bottom-up |")
    print("|---|---|---|---|")
    print(f"| Query ms | {med['lbs']:.2f} | {med['pv']:.2f} | {med['bu']:.2f} |")
    print(f"| Sphere tests | {med['lbs_ss']:.0f} | {med['pv_ss']:.0f} | {med['bu_ss']:.0f} |")
    print(f"| Colliding pairs | {med['lbs_pairs']:.0f} | {med['pv_pairs']:.0f} | {med['pv_pairs']:.0f} |")
    print(f"| vs LBS on-demand | 1.00x | {med['pv'] / med['lbs']:.2f}x | {med['bu'] / med['lbs']:.2f}x |")
    print(f"\nPV on-demand / LBS on-demand = {med['pv'] / med['lbs']:.2f} (target < 1.3); "
          f"bottom-up / PV on-demand = {med['bu'] / med['pv']:.2f}")


if __name__ == "__main__":
    main()
