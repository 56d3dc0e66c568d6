"""Clearance in the viewport, drawn (issue 42): the real viewport on Mesa's llvmpipe with
the add-on's draw callbacks, as `tests/blender/test_viewport_gpu.py` does. With the
panel's Clearance at 0.3 on the demo shot (the two tube characters pass within 0.3 of each
other without touching for a few frames), the near faces and closest segments are drawn in
the near colour (amber) where the near contacts are, nothing amber without Clearance; the
timeline strip marks those frames amber."""
import numpy as np
import pytest
from test_viewport_gpu import SIZE, overlay_demo, project

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

NEAR = (1.0, 0.65, 0.0, 0.6)     # the default near colour


def _clearance_on(scene):
    s = scene.skin_collide
    s.clearance_distance = 0.3
    s.clearance = True
    for ob in scene.objects:      # the selection outline is orange too: none
        ob.select_set(False)


@pytest.fixture(scope="module")
def near_demo():
    yield from overlay_demo(_clearance_on)


def amber(px: np.ndarray) -> np.ndarray:
    """(H, W) bool: pixels of the near colour, opaque (segments) or blended at its alpha
    over a grey (faces): red above green by 0.2-0.35, green above blue by 0.39-0.65."""
    r, g, b = px[..., 0], px[..., 1], px[..., 2]
    return (r > 0.5) & (r - g > 0.13) & (r - g < 0.43) & (g - b > 0.31) & (g - b < 0.73)


def draw(frame, overlay_on=True):
    from skin_collide.addon import overlay, session, snapshot

    scene = bpy.context.scene
    scene.frame_set(frame)
    res = session.live_result(scene)
    pts = np.concatenate([np.asarray(c.points) for c in res.near_contacts]) \
        if res.near_contacts else np.zeros((0, 3))
    center, radius, direction = snapshot.framing(res.positions, [pts] if len(pts) else [])
    view, proj = snapshot.look_at(center, radius, direction, SIZE[0] / SIZE[1])
    px = snapshot.render_view(scene, view, proj, *SIZE,
                              draw=overlay._draw_view3d if overlay_on else None)
    return px, view, proj, res


def near_only_frame() -> int:
    """The first frame of the shot with near contacts and no intersection."""
    from skin_collide.addon import session

    scene = bpy.context.scene
    for f in range(scene.frame_start, scene.frame_end + 1):
        scene.frame_set(f)
        res = session.live_result(scene)
        if res.n_pairs == 0 and res.near_contacts:
            return f
    raise AssertionError("no frame passes within the clearance without touching")


def test_near_faces_and_segments_are_drawn_amber(near_demo):
    from skin_collide.addon import overlay

    px, view, proj, res = draw(near_only_frame())
    assert res.n_pairs == 0 and res.near_contacts
    mask = amber(px)
    assert mask.sum() > 30
    tris, lines = overlay.live_near_batches(bpy.context.scene)
    xy = project(np.concatenate([tris, lines]).astype(np.float64), view, proj)
    ys, xs = np.nonzero(mask)
    lo, hi = xy.min(0) - 3, xy.max(0) + 3
    assert ((xs >= lo[0]) & (xs <= hi[0]) & (ys >= lo[1]) & (ys <= hi[1])).all()
    bare, *_ = draw(res.frame, overlay_on=False)
    assert amber(bare).sum() == 0


def test_nothing_amber_with_clearance_off(near_demo):
    s = bpy.context.scene.skin_collide
    frame = near_only_frame()
    s.clearance = False
    try:
        px, _, _, res = draw(frame)
        assert not res.near_contacts
        assert px[..., :3].max() > 0.2
        assert amber(px).sum() == 0
    finally:
        s.clearance = True


def test_timeline_strip_marks_near_frames_amber(near_demo):
    from skin_collide.addon import overlay, snapshot

    scene = bpy.context.scene
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    frames, counts = overlay.strip_arrays(scene)
    near = overlay.strip_near(scene)
    assert near.any() and counts.any()
    px = snapshot.render_region("DOPESHEET_EDITOR", overlay._draw_timeline, height=16)
    cols = amber(px).any(0)                            # per region column
    _, _, region, _ = snapshot.area_of_type("DOPESHEET_EDITOR")
    x = lambda f: region.view2d.view_to_region(float(f), 0.0, clip=False)[0]  # noqa: E731
    inside = np.zeros(cols.size, bool)
    around = np.zeros(cols.size, bool)
    for f in frames[near > 0]:
        a, b = x(f - 0.5), x(f + 0.5)
        inside[max(a + 1, 0):max(b - 1, 0)] = True
        around[max(a - 1, 0):max(b + 2, 0)] = True
    assert inside.any()
    assert cols[inside].all()                # every near-only frame is amber ...
    assert not cols[~around].any()          # ... and nothing else
