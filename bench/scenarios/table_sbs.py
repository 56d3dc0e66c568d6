"""Kavan, O'Sullivan & Žára 2006, Tables 1 and 2, for Blender's Preserve Volume.

Two copies of a character (as in the table3 scenario, no subdivision), Preserve Volume switched
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

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--stride", type=int, default=6)
    p.add_argument("--offset", type=float, nargs=3, default=[0.55, 0.0, 0.0])
    p.add_argument("--max-frames", type=int, default=None, help="at most this many frames")


def run(args) -> int:
    scenes.require(args.asset)
    import bpy

    from skin_collide.addon import scanner
    from skin_collide.core import scan as core_scan
    from skin_collide.core import skinning
    from skin_collide.core.bounds import refit, refit_dqs
    from skin_collide.core.methods.sphere_tree import TreeData

    ob, ob2 = scenes.load_pair(args.asset, 0, args.offset, 0.0)
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
        lbs_objs.append(core_scan.CollisionObject(
            o.name, rig, "sphere-tree", TreeData(o.data.tree, refit.lbs_bounds(o.data.tree, rig)), "",
            o.vertex_keys))
    scene = bpy.context.scene
    frames = scenes.action_frames(ob)[::args.stride][:args.max_frames]
    rows = timing.Samples("lbs", "pv", "bu", "lbs_pairs", "pv_pairs", "lbs_ss", "pv_ss", "bu_ss")
    for f in frames:
        scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        lpos = [skinning.lbs_rig(o.rig, pose) for o, pose in zip(lbs_objs, poses)]
        lq = core_scan.query_frame(lbs_objs, lpos, poses)
        pq = core_scan.query_frame(pv_objs, pos, poses)
        bq = core_scan.query_frame(pv_objs, pos, poses, mode="bottom-up")
        # The Preserve Volume method's on-demand refit (its mode is its method id).
        assert pq.modes == ["sphere-tree-pv"] * 2 and bq.n_pairs == pq.n_pairs
        for k, q in (("lbs", lq), ("pv", pq), ("bu", bq)):
            rows.add(**{k: q.ms, k + "_ss": sum(s.sphere_tests for s in q.stats)})
        rows.add(lbs_pairs=lq.n_pairs, pv_pairs=pq.n_pairs)
        print(f"  f{f}: pairs LBS {lq.n_pairs} PV {pq.n_pairs}; ms LBS {lq.ms:.1f} "
              f"PV {pq.ms:.1f} bottom-up {bq.ms:.1f}", flush=True)
    med = rows.medians()

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


    return 0


registry.register("table-sbs", "Kavan, O'Sullivan & Žára 2006 Tables 1 and 2: Preserve Volume "
                  "refit against the LBS refit and bottom-up, two copies", options, run,
                  smoke={"asset": scenes.SMOKE, "stride": 3, "max_frames": 2}, doc=__doc__)
