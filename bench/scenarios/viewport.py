"""What the live overlay costs: a viewport redraw against a frame change.

Two MakeHuman copies (26,756 triangles each, 0.55 m apart, arms interpenetrating), built
and with the live overlay on, headless on Mesa's llvmpipe (see addon/snapshot.py). Per
frame (every Nth frame of the action), medians over the frames:

* frame change: `scene.frame_set` (Blender's evaluation + the live handler's query);
* first draw: the overlay callback just after the change (builds arrays and GPU batches);
* redraw: the callback again with nothing changed (batches reused);
* redraw, rebuilding: the callback with the cache dropped first (what every redraw cost
  before the cache: rebuild arrays and batches);
* the viewport itself: `GPUOffScreen.draw_view3d` at the same size (Blender's own drawing,
  software OpenGL), for scale.
Each draw is followed by a 1-pixel read-back, so the GPU (here the CPU) work is counted.

Usage (from the repository root):
    bash dev python bench/bench_viewport.py --stride 6

Not a test: nothing here asserts on time.
"""
from __future__ import annotations

from bench import registry, scenes, timing


def timed(fn, sync) -> float:
    t0 = timing.now()
    fn()
    sync()
    return timing.ms_since(t0)


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--stride", type=int, default=6)
    p.add_argument("--size", default="640x400")
    p.add_argument("--redraws", type=int, default=5, help="cached redraws timed per frame")
    p.add_argument("--max-frames", type=int, default=None, help="at most this many frames")


def run(args) -> int:
    import bpy
    import gpu

    from skin_collide.addon import overlay, session, snapshot

    scenes.require(args.asset)
    scenes.register_addon()
    ob, ob2 = scenes.load_pair(args.asset, 0, (0.55, 0.0, 0.0), 0.0)
    scene = bpy.context.scene
    scenes.select_only([ob, ob2], ob)
    with timing.Timer() as built:
        bpy.ops.skin_collide.build()
    print(f"built 2 x {len(ob.data.polygons)} polygons in {built.s:.1f} s")
    arm = ob.find_armature() or ob.parent
    first, last = (int(x) for x in arm.animation_data.action.frame_range)
    frames = list(range(first, last + 1, args.stride))[:args.max_frames]
    snapshot.ensure_gpu()
    w, h = (int(v) for v in args.size.split("x"))
    window, area, region, space = snapshot.area_of_type("VIEW_3D")
    vm, pm = scenes.framing_view((ob, ob2), w, h)
    off = gpu.types.GPUOffScreen(w, h)
    scene.skin_collide.live = True
    print(f"{len(frames)} frames ({first}-{last}, every {args.stride}), {w}x{h}, "
          f"{gpu.platform.renderer_get()}")
    rows = []
    for self_collision in (False, True):
        scene.skin_collide.self_collision = self_collision
        t = timing.Samples("change", "query", "first", "redraw", "rebuild", "viewport", "pairs")
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            sync = lambda: fb.read_color(0, 0, 1, 1, 4, 0, "FLOAT")  # noqa: E731
            with bpy.context.temp_override(window=window, area=area, region=region):
                for f in frames:
                    t["change"].append(timed(lambda: scene.frame_set(f), lambda: None))
                    res = session.live_result(scene)
                    t["query"].append(res.ms)
                    t["pairs"].append(res.n_pairs)
                    gpu.matrix.load_matrix(vm)
                    gpu.matrix.load_projection_matrix(pm)
                    t["first"].append(timed(overlay._draw_view3d, sync))
                    t["redraw"].append(timing.median([timed(overlay._draw_view3d, sync)
                                                      for _ in range(args.redraws)]))

                    def rebuild():
                        overlay.forget_drawn()
                        overlay._draw_view3d()
                    t["rebuild"].append(timed(rebuild, sync))
        t.rows["viewport"] = [timed(lambda: off.draw_view3d(scene, bpy.context.view_layer, space,
                                                       region, vm, pm), lambda: None)
                         for _ in range(3)]
        rows.append((self_collision, t.medians()))
    off.free()
    print("\n| | self-collision off | self-collision on |\n|---|---|---|")
    label = {"pairs": "Colliding polygon pairs (median)", "change": "Frame change ms",
             "query": "  of which the live query ms", "first": "First draw after a change ms",
             "redraw": "Redraw, nothing changed, ms", "rebuild": "Redraw rebuilding batches ms "
             "(before the cache)", "viewport": "Blender's own viewport draw ms (llvmpipe)"}
    for key in ("pairs", "change", "query", "first", "redraw", "rebuild", "viewport"):
        print(f"| {label[key]} | " + " | ".join(f"{r[key]:.2f}" if key != "pairs" else
                                                 f"{r[key]:.0f}" for _, r in rows) + " |")
    print("| Frame change / redraw | " + " | ".join(f"{r['change'] / r['redraw']:.0f}x"
                                                  for _, r in rows) + " |")
    print("| Rebuilding / cached redraw | " + " | ".join(f"{r['rebuild'] / r['redraw']:.1f}x"
                                                       for _, r in rows) + " |")


    return 0


registry.register("viewport", "what the live overlay costs: a viewport redraw against a "
                  "frame change (two characters, headless)", options, run,
                  smoke={"asset": scenes.SMOKE, "stride": 3, "max_frames": 2, "redraws": 2},
                  doc=__doc__)
