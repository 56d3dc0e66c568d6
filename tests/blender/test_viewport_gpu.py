"""The overlay, drawn: the real viewport (GPUOffScreen.draw_view3d on Mesa's llvmpipe) with
the add-on's draw callbacks called inside it, as Blender calls them. One warmed-up session
for the module (the warm-up render and draws cost seconds on llvmpipe)."""
import ctypes

import numpy as np
import pytest

from skin_collide.addon.state import STATE

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

COLOUR = (1.0, 0.1, 0.05, 0.7)      # the default overlay colour
SIZE = (240, 160)


def mesa_egl_present() -> bool:
    for name in ("libEGL_mesa.so.0", "libEGL_mesa.so"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


def overlay_demo(setup=None):
    """For a module fixture (`yield from`): the add-on registered, a GPU context, two built
    tube characters with the live overlay on (`setup(scene)` then adjusts the settings);
    yields (a, b), then empties the scene and unregisters."""
    import skin_collide
    from skin_collide.addon import demo_rig, snapshot

    skin_collide.register()
    try:
        snapshot.ensure_gpu()
    except snapshot.GPUUnavailable as exc:
        skin_collide.unregister()
        if mesa_egl_present():
            raise
        pytest.skip(f"Mesa's EGL is not installed (libegl-mesa0 libgl1-mesa-dri libgbm1): {exc}")
    a, b = demo_rig.build_demo_scene(rings=16, segments=10, frames=24)
    for ob in (a, b):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = a
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    if setup is not None:
        setup(bpy.context.scene)
    yield a, b
    bpy.ops.wm.read_homefile(use_empty=True)
    skin_collide.unregister()


@pytest.fixture(scope="module")
def gpu_demo():
    """Two built tube characters with the live overlay on; a GPU context."""
    yield from overlay_demo()


def draw_live(frame, framed_on_hits=True, overlay_on=True):
    """Go to `frame` (the live handler collides), draw the viewport framed on the frame's
    colliding vertices (or on the characters), then the overlay callback. Returns pixels,
    the matrices and the live result."""
    from skin_collide.addon import overlay, session, snapshot, storage

    scene = bpy.context.scene
    if frame is not None:          # None: a redraw, no frame change
        scene.frame_set(frame)
    res = session.live_result(scene)
    objects = {n: storage.load(scene.objects[n]) for n in res.names}
    hits = [pos[np.unique(objects[n].rig.triangles[h])] if h.size else np.zeros((0, 3))
            for n, pos, h in zip(res.names, res.positions, res.hit_triangles)]
    center, radius, direction = snapshot.framing(res.positions, hits if framed_on_hits else [])
    view, proj = snapshot.look_at(center, radius, direction, SIZE[0] / SIZE[1])
    px = snapshot.render_view(scene, view, proj, *SIZE,
                              draw=overlay._draw_view3d if overlay_on else None)
    return px, view, proj, res, hits


def project(points, view, proj):
    h = np.c_[points, np.ones(len(points))] @ (proj @ view).T
    ndc = h[:, :2] / h[:, 3:]
    return (ndc + 1) / 2 * np.array(SIZE)


def test_overlay_draws_where_the_triangles_collide(gpu_demo):
    from skin_collide.addon import snapshot

    scene = bpy.context.scene
    counts = {it.frame: it.pairs for it in scene.skin_collide.frame_counts}
    assert not counts          # no scan yet: the live handler alone does the work
    px, view, proj, res, hits = draw_live(4)
    assert res.n_pairs > 0
    mask = snapshot.overlay_mask(px, COLOUR)
    assert mask.sum() > 50
    # Every overlay pixel lies where the colliding triangles project.
    xy = project(np.concatenate([h for h in hits if len(h)]), view, proj)
    ys, xs = np.nonzero(mask)
    lo, hi = xy.min(0) - 2, xy.max(0) + 2
    assert ((xs >= lo[0]) & (xs <= hi[0]) & (ys >= lo[1]) & (ys <= hi[1])).all()
    # The same view without the callback has none (the viewport itself is not red).
    bare, *_ = draw_live(4, overlay_on=False)
    assert snapshot.overlay_mask(bare, COLOUR).sum() == 0


def test_no_overlay_pixels_without_collisions(gpu_demo):
    from skin_collide.addon import snapshot

    px, _, _, res, _ = draw_live(1)
    assert res.n_pairs == 0
    assert px[..., :3].max() > 0.2                     # the characters are drawn
    assert snapshot.overlay_mask(px, COLOUR).sum() == 0


def test_redraws_reuse_the_batches(gpu_demo):

    draw_live(5)
    built = STATE.build_count
    draw_live(None)                                    # redraws only
    bpy.context.scene.skin_collide.overlay_color = COLOUR
    draw_live(None)
    assert STATE.build_count == built
    draw_live(6)                                       # a new result: built once more
    assert STATE.build_count == built + 1


def test_show_spheres_draws(gpu_demo):
    s = bpy.context.scene.skin_collide
    s.show_spheres, s.sphere_level = False, 4
    off, *_ = draw_live(1)
    s.show_spheres = True
    try:
        on, *_ = draw_live(1)
    finally:
        s.show_spheres = False
    changed = np.abs(on[..., :3] - off[..., :3]).max(-1) > 0.02
    assert changed.sum() > 100
    # The wires are the overlay colour (translucent): red rises, green and blue do not.
    d = on[..., :3][changed] - off[..., :3][changed]
    assert (d[:, 0] > d[:, 1]).mean() > 0.9


def test_timeline_strip_marks_the_colliding_frames(gpu_demo):
    from skin_collide.addon import overlay, snapshot

    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    frames, counts = overlay.strip_arrays(bpy.context.scene)
    assert counts.max() > 0 and (counts == 0).any()
    px = snapshot.render_region("DOPESHEET_EDITOR", overlay._draw_timeline, height=16)
    red = (px[..., 0] - px[..., 1] > 0.2).any(0)       # per region column
    _, _, region, _ = snapshot.area_of_type("DOPESHEET_EDITOR")
    x = lambda f: region.view2d.view_to_region(float(f), 0.0, clip=False)[0]  # noqa: E731
    hit = frames[counts > 0]
    inside = np.zeros(red.size, bool)
    near = np.zeros(red.size, bool)
    for f in hit:
        a, b = x(f - 0.5), x(f + 0.5)
        inside[max(a + 1, 0):max(b - 1, 0)] = True
        near[max(a - 1, 0):max(b + 2, 0)] = True
    assert inside.any()
    assert red[inside].all()                 # every colliding frame is marked ...
    assert not red[~near].any()              # ... and nothing else
