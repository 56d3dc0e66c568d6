"""What contacts (issue 28) add to a frame: intersection segments, grouping, bones.

Two scenes, in one process, on the same frames (medians over the frames with pairs):

* MakeHuman's benchmark pose (its action; frame 25 among them), self-collision;
* two crossing MakeHumans: the copy standing 0.55 m beside the original (the Table 3
  scene of docs/benchmarks.md), and, as a stress case, on the same spot (every coplanar
  face touches: the report's heaviest case).

Per frame: the query (`Scanner.query`: refit, traversal, exact tests, as the report's
`ms`), then the rest of the pipeline without contacts (unique pairs, polygon pairs), then
the contacts (`core.contacts.groups.frame_contacts`: segments of every triangle pair,
components, lengths, bones, centres) and their JSON. Prints the contacts' share of the
query.

Usage (from the repository root):
    bash dev python bench/bench_contacts.py
Not a test: nothing here asserts on time.
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


def measure(sc, frames, repeat: int = 3) -> dict:
    import bpy

    from skin_collide.core.contacts import groups as contact_groups

    scene = bpy.context.scene
    rows = {"query": [], "polygons": [], "contacts": [], "json": [], "pairs": [],
            "tri_pairs": [], "contacts_n": [], "crossing_m": []}
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        positions, poses = sc.evaluate(dg)
        best = {}
        for _ in range(repeat):
            tri_pairs, ms, _ = sc.query(positions, poses)
            t0 = time.perf_counter()
            kept = sc.keep(tri_pairs)
            pairs = sc._polygons(kept)
            t1 = time.perf_counter()
            found = contact_groups.frame_contacts(sc.objects, positions, sc.triangles, kept)
            t2 = time.perf_counter()
            contact_groups.to_json(found)
            t3 = time.perf_counter()
            for k, v in (("query", ms), ("polygons", (t1 - t0) * 1e3),
                         ("contacts", (t2 - t1) * 1e3), ("json", (t3 - t2) * 1e3)):
                best[k] = min(best.get(k, math.inf), v)
        if not pairs:
            continue
        for k, v in best.items():
            rows[k].append(v)
        rows["pairs"].append(len(pairs))
        rows["tri_pairs"].append(sum(p.shape[0] for _, _, p in kept))
        rows["contacts_n"].append(len(found))
        rows["crossing_m"].append(sum(c.length for c in found))
    return {k: float(np.median(v)) if v else float("nan") for k, v in rows.items()} | \
        {"frames": len(rows["pairs"])}


def self_scene(args) -> dict:
    import bpy

    from skin_collide.addon import animation, extract, files, scanner

    files.load_file(os.path.join(SHARED, "makehuman_default.blend"))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    act = arm.animation_data.action if arm.animation_data else None
    frames = animation.action_frames(act) if act else \
        list(range(bpy.context.scene.frame_start, bpy.context.scene.frame_end + 1))
    frames = sorted(set(frames[::args.stride]) | {25})
    sc = scanner.Scanner([ob], self_collision=True)
    return measure(sc, frames)


def pair_scene(args, offset) -> dict:
    import bpy

    from skin_collide.addon import animation, extract, files, scanner

    files.load_file(os.path.join(SHARED, "makehuman_default.blend"))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    ob2, _ = scenes.duplicate_character(ob, arm, f"{ob.name}_copy", offset=offset, turn=0.0)
    act = arm.animation_data.action if arm.animation_data else None
    frames = animation.action_frames(act) if act else \
        list(range(bpy.context.scene.frame_start, bpy.context.scene.frame_end + 1))
    sc = scanner.Scanner([ob, ob2])
    return measure(sc, frames[::args.stride])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--stride", type=int, default=6, help="every Nth frame of the action")
    args = p.parse_args()
    if not os.path.isdir(SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({SHARED})")
    cols = [("MakeHuman self (benchmark pose)", self_scene(args)),
            ("two MakeHumans 0.55 m apart", pair_scene(args, (0.55, 0.0, 0.0))),
            ("two MakeHumans on one spot", pair_scene(args, (0.0, 0.0, 0.0)))]
    print("| | " + " | ".join(n for n, _ in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for key, label, fmt in (("frames", "frames with pairs", "{:.0f}"),
                            ("pairs", "polygon pairs (median)", "{:.0f}"),
                            ("tri_pairs", "triangle pairs (median)", "{:.0f}"),
                            ("contacts_n", "contacts (median)", "{:.0f}"),
                            ("crossing_m", "crossing length, m (median)", "{:.3f}"),
                            ("query", "query ms", "{:.2f}"),
                            ("polygons", "unique + polygon pairs ms", "{:.2f}"),
                            ("contacts", "contacts ms", "{:.2f}"),
                            ("json", "contacts' JSON ms", "{:.2f}")):
        print(f"| {label} | " + " | ".join(fmt.format(r[key]) for _, r in cols) + " |")
    print("| **contacts / query** | " + " | ".join(
        f"**{100 * r['contacts'] / r['query']:.1f}%**" for _, r in cols) + " |")


if __name__ == "__main__":
    main()
