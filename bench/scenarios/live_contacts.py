"""What contacts cost in the live overlay's frame (issue 43: "contacts at most 25% of the
live frame" with two MakeHumans standing in one another).

Two MakeHuman copies (26,756 triangles each), the copy on the original's spot (every
face touches its twin) or beside it (``--offset``), built with the panel's Build, the live
overlay on, rest contacts counted (Ignore Rest Contacts off, unless ``--ignore-rest``),
headless on Mesa's llvmpipe (addon/snapshot.py). Per frame of the action (every Nth),
`scene.frame_set` runs Blender's evaluation and the live handler (the live query, capped
as the panel caps it: docs/workflow.md, "Limits"), then the overlay's first
draw after the change. Timed:

* frame change: `scene.frame_set` (Blender's evaluation and the handler);
* live update: the handler's own time (`addon.state.STATE.last_seconds`): the query,
  polygon pairs, contacts, near contacts;
* contacts: the time spent inside `core.contacts.groups.frame_contacts` during the
  handler (segments, grouping, lengths, bones; wrapped, nothing else changed);
* first draw: the overlay callback after the change (arrays, the contacts' curves,
  GPU batches).

Prints, per frame and as medians, contacts / live update and contacts / (live update +
first draw). One process.

    bash dev python -m bench live-contacts
    bash dev python -m bench live-contacts --offset 0.55     # arms crossing
"""
from __future__ import annotations

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--offset", type=float, default=0.0, help="the copy moved along X (m)")
    p.add_argument("--stride", type=int, default=6)
    p.add_argument("--self-collision", action="store_true")
    p.add_argument("--ignore-rest", action="store_true",
                   help="keep the panel's Ignore Rest Contacts on (with the copy on the "
                        "same spot it hides nearly every pair)")
    p.add_argument("--max-frames", type=int, default=None, help="at most this many frames")


def run(args) -> int:
    import bpy
    import gpu

    from skin_collide.addon import overlay, session, snapshot
    from skin_collide.addon.state import STATE
    from skin_collide.core.contacts import groups

    scenes.require(args.asset)
    scenes.register_addon()
    ob, ob2 = scenes.load_pair(args.asset, 0, (args.offset, 0.0, 0.0), 0.0)
    scene = bpy.context.scene
    scenes.select_only([ob, ob2], ob)
    bpy.ops.skin_collide.build()
    arm = ob.find_armature() or ob.parent
    first, last = (int(x) for x in arm.animation_data.action.frame_range)
    frames = list(range(first, last + 1, args.stride))[:args.max_frames]

    spent = [0.0]
    original = groups.frame_contacts

    def timed_contacts(*a, **k):
        t0 = timing.now()
        try:
            return original(*a, **k)
        finally:
            spent[0] += timing.ms_since(t0) / 1e3

    # The scanner reaches it as `contact_groups.frame_contacts`: the module attribute.
    groups.frame_contacts = timed_contacts

    snapshot.ensure_gpu()
    w, h = 640, 400
    window, area, region, _ = snapshot.area_of_type("VIEW_3D")
    vm, pm = scenes.framing_view((ob, ob2), w, h)
    off = gpu.types.GPUOffScreen(w, h)
    scene.skin_collide.self_collision = args.self_collision
    # Two characters standing in one another touch at rest too: with Ignore Rest Contacts
    # on (the default) their pairs would mostly be dropped. Off, every pair counts.
    scene.skin_collide.ignore_rest_contacts = args.ignore_rest
    scene.skin_collide.live = True
    scene.frame_set(frames[0])                     # warm up: first query, memo, batches
    rows = timing.Samples("change", "update", "contacts", "draw", "pairs")
    with off.bind():
        fb = gpu.state.active_framebuffer_get()
        with bpy.context.temp_override(window=window, area=area, region=region):
            for f in frames:
                spent[0] = 0.0
                t0 = timing.now()
                scene.frame_set(f)
                t1 = timing.now()
                gpu.matrix.load_matrix(vm)
                gpu.matrix.load_projection_matrix(pm)
                overlay._draw_view3d()
                fb.read_color(0, 0, 1, 1, 4, 0, "FLOAT")
                t2 = timing.now()
                res = session.live_result(scene)
                rows["change"].append((t1 - t0) * 1e3)
                rows["update"].append(STATE.last_seconds * 1e3)
                rows["contacts"].append(spent[0] * 1e3)
                rows["draw"].append((t2 - t1) * 1e3)
                rows["pairs"].append(res.n_pairs if res is not None else 0)
                print(f"  frame {f}: change {rows['change'][-1]:.1f} ms, live update "
                      f"{rows['update'][-1]:.1f} ms, contacts {rows['contacts'][-1]:.1f} ms "
                      f"({100 * rows['contacts'][-1] / rows['update'][-1]:.0f}%), first draw "
                      f"{rows['draw'][-1]:.1f} ms, pairs {rows['pairs'][-1]}"
                      f"{' (capped)' if res is not None and res.more_than else ''}", flush=True)
    off.free()
    groups.frame_contacts = original
    med = rows.medians()
    share = np.array(rows["contacts"]) / np.array(rows["update"])
    share_draw = np.array(rows["contacts"]) / (np.array(rows["update"]) + np.array(rows["draw"]))
    print(f"\n{len(frames)} frames ({first}-{last}, every {args.stride}), copy offset "
          f"{args.offset} m, self-collision {'on' if args.self_collision else 'off'}, "
          f"rest contacts {'ignored' if args.ignore_rest else 'counted'}, "
          f"{gpu.platform.renderer_get()}")
    print("| | median |\n|---|---|")
    for key, label in (("pairs", "polygon pairs shown"), ("change", "frame change ms"),
                       ("update", "live update ms (the handler)"),
                       ("contacts", "of which contacts ms"), ("draw", "first draw ms")):
        print(f"| {label} | {med[key]:.0f} |" if key == "pairs" else
              f"| {label} | {med[key]:.1f} |")
    print(f"| **contacts / live update** | **{100 * timing.median(share):.1f}%** "
          f"(max {100 * share.max():.1f}%) |")
    print(f"| contacts / (live update + first draw) | {100 * timing.median(share_draw):.1f}% |")


    return 0


registry.register("live-contacts", "what contacts cost in the live overlay's frame (two "
                  "characters, the live handler and the first draw, headless)", options, run,
                  smoke={"asset": scenes.SMOKE, "stride": 3, "max_frames": 2}, doc=__doc__)
