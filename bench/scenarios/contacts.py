"""What contacts (issue 28) add to a frame: intersection segments, grouping, bones.

Two scenes, in one process, on the same frames (medians over the frames with pairs):

* MakeHuman's benchmark pose (its action; frame 25 among them), self-collision;
* two crossing MakeHumans: the copy standing 0.55 m beside the original (the Table 3
  scene of docs/benchmarks.md), and, as a stress case, on the same spot (every coplanar
  face touches: the report's heaviest case).

Per frame: the query (`Scanner.query`: refit, traversal, exact tests, as the report's
`ms`), then the rest of the pipeline without contacts (unique pairs, polygon pairs), then
the contacts (`core.contacts.groups.frame_contacts`: segments of every triangle pair,
components, lengths, bones, centres) and their JSON, each the best of 3. Prints the
contacts' share of the query.

    bash dev python -m bench contacts
"""
from __future__ import annotations

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--stride", type=int, default=6, help="every Nth frame of the action")
    p.add_argument("--pose-frame", type=int, default=25,
                   help="the benchmark pose's frame, always among the self scene's frames")


def measure(sc, frames, repeat: int = 3) -> dict:
    import bpy

    from skin_collide.core.contacts import groups as contact_groups

    scene = bpy.context.scene
    rows = timing.Samples("query", "polygons", "contacts", "json", "pairs", "tri_pairs",
                          "contacts_n", "crossing_m")
    for f in frames:
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        positions, poses = sc.evaluate(dg)
        best = {}
        for _ in range(repeat):
            tri_pairs, ms, _ = sc.query(positions, poses)
            t0 = timing.now()
            kept = sc.keep(tri_pairs)
            pairs = sc.polygon_pairs(kept)      # (no allow-list here: the reported pairs)
            t1 = timing.now()
            found = contact_groups.frame_contacts(sc.objects, positions, sc.triangles, kept)
            t2 = timing.now()
            contact_groups.to_json(found)
            t3 = timing.now()
            for k, v in (("query", ms), ("polygons", (t1 - t0) * 1e3),
                         ("contacts", (t2 - t1) * 1e3), ("json", (t3 - t2) * 1e3)):
                best[k] = min(best.get(k, float("inf")), v)
        if not pairs:
            continue
        rows.add(**best)
        rows.add(pairs=len(pairs), tri_pairs=sum(p.shape[0] for _, _, p in kept),
                 contacts_n=len(found), crossing_m=sum(c.length for c in found))
    return rows.medians() | {"frames": len(rows["pairs"])}


def self_scene(args) -> dict:
    from skin_collide.addon import scanner

    ob = scenes.load_asset(args.asset)
    frames = sorted(set(scenes.action_frames(ob)[::args.stride]) | {args.pose_frame})
    sc = scanner.Scanner([ob], self_collision=True)
    return measure(sc, frames)


def pair_scene(args, offset) -> dict:
    from skin_collide.addon import scanner

    ob, ob2 = scenes.load_pair(args.asset, 0, offset, 0.0)
    sc = scanner.Scanner([ob, ob2])
    return measure(sc, scenes.action_frames(ob)[::args.stride])


def run(args) -> int:
    scenes.require(args.asset)
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
        timing.print_row(label, *[fmt.format(r[key]) for _, r in cols])
    timing.print_row("**contacts / query**",
                     *[f"**{100 * r['contacts'] / r['query']:.1f}%**" for _, r in cols])
    return 0


registry.register("contacts", "what contacts (segments, grouping, bones) add to a frame: "
                  "one character's self-collision and two crossing characters", options, run,
                  smoke={"asset": scenes.SMOKE, "stride": 4, "pose_frame": 4}, doc=__doc__)
