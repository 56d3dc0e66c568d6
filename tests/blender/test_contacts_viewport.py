"""The intersection curves in the viewport (issue 28), drawn by the real viewport on Mesa's
llvmpipe with the add-on's draw callback, as `tests/blender/test_viewport_gpu.py` does: on a
frame with collisions the curves are drawn where the surfaces cross (the triangles
switched off, so that every overlay pixel is a curve's); on a clean frame, nothing."""
import numpy as np
import pytest
from test_viewport_gpu import SIZE, overlay_demo, project

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

COLOUR = (1.0, 0.1, 0.05, 0.7)
OPAQUE = COLOUR[:3] + (1.0,)             # the curves are drawn opaque


def _curves_only(scene):
    scene.skin_collide.show_triangles = False   # every overlay pixel is a curve's


@pytest.fixture(scope="module")
def curves_demo():
    yield from overlay_demo(_curves_only)


def draw(frame, overlay_on=True):
    from skin_collide.addon import overlay, session, snapshot

    scene = bpy.context.scene
    scene.frame_set(frame)
    res = session.live_result(scene)
    segs = [c.segments.reshape(-1, 3) for c in res.contacts if c.segments.size]
    pts = np.concatenate(segs) if segs else np.zeros((0, 3))
    center, radius, direction = snapshot.framing(res.positions, [pts] if len(pts) else [])
    view, proj = snapshot.look_at(center, radius, direction, SIZE[0] / SIZE[1])
    px = snapshot.render_view(scene, view, proj, *SIZE,
                              draw=overlay._draw_view3d if overlay_on else None)
    return px, view, proj, res, pts


def test_curves_are_drawn_where_the_surfaces_cross(curves_demo):
    from skin_collide.addon import snapshot

    px, view, proj, res, pts = draw(4)
    assert res.n_pairs > 0 and res.contacts and len(pts)
    assert any(c.kind == "crossing" for c in res.contacts)
    mask = snapshot.overlay_mask(px, OPAQUE)
    assert mask.sum() > 20
    xy = project(pts, view, proj)
    ys, xs = np.nonzero(mask)
    lo, hi = xy.min(0) - 3, xy.max(0) + 3             # the line's half width
    assert ((xs >= lo[0]) & (xs <= hi[0]) & (ys >= lo[1]) & (ys <= hi[1])).all()
    bare, *_ = draw(4, overlay_on=False)
    assert snapshot.overlay_mask(bare, OPAQUE).sum() == 0


def test_nothing_is_drawn_on_a_clean_frame(curves_demo):
    from skin_collide.addon import snapshot

    px, _, _, res, pts = draw(1)
    assert res.n_pairs == 0 and not res.contacts
    assert px[..., :3].max() > 0.2
    assert snapshot.overlay_mask(px, OPAQUE).sum() == 0


def test_snapshot_frames_the_largest_contact_and_draws_its_curve(curves_demo):
    from skin_collide.addon import scanner, snapshot

    a, b = curves_demo
    sc = scanner.Scanner([a, b])
    res, px = snapshot.frame_snapshot(sc, bpy.context.scene, 4, None, size=SIZE)
    assert res.contacts and any(c.segments.size for c in res.contacts)
    assert snapshot.overlay_mask(px, OPAQUE).sum() > 20          # the curve, opaque
    _, clean = snapshot.frame_snapshot(sc, bpy.context.scene, 1, None, size=SIZE)
    assert snapshot.overlay_mask(clean, OPAQUE).sum() == 0


def _corners(pts):
    lo, hi = pts.min(0), pts.max(0)
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                     for z in (lo[2], hi[2])])


@pytest.mark.parametrize("aspect", [1.6, 1.0, 0.6])
def test_the_framing_contains_the_focus_box_and_zooms_on_it(aspect):
    """The README's zoomed pictures (`snapshot_result(..., focus=...)`): the camera that
    `framing` and `look_at` make holds the whole bounding box of the focus points, in front
    of it, and the box fills a good share of the picture (not the whole figure's view)."""
    from skin_collide.addon import snapshot

    rng = np.random.default_rng(3)
    body = rng.uniform([-0.3, -0.2, 0.0], [0.3, 0.2, 1.8], (2000, 3))    # a 2 m figure
    focus = rng.uniform([0.1, -0.05, 1.5], [0.3, 0.05, 1.7], (40, 3))     # "the hands"
    center, radius, direction = snapshot.framing([body], [focus])
    for d in snapshot.candidate_directions(direction):
        view, proj = snapshot.look_at(center, radius, d, aspect)
        hom = np.c_[_corners(focus), np.ones(8)] @ (proj @ view).T
        assert (hom[:, 3] > 0).all()                                       # in front
        ndc = hom[:, :3] / hom[:, 3:]
        assert (np.abs(ndc) <= 1).all(), ndc
        span = ndc[:, :2].max(0) - ndc[:, :2].min(0)
        assert span.max() > 0.5, span           # zoomed: the box spans over a quarter


def test_snapshot_frames_the_focus_it_is_given(curves_demo):
    from skin_collide.addon import scanner, snapshot

    a, b = curves_demo
    sc = scanner.Scanner([a, b])
    res = snapshot.scanner_result(sc, bpy.context.scene, 4)
    objects = {o.name: o for o in sc.objects}
    curve = max((c for c in res.contacts if c.segments.size), key=lambda c: c.length)
    pts = curve.segments.reshape(-1, 3)
    view, proj, _ = snapshot.choose_view(bpy.context.scene, res, objects, SIZE, COLOUR, pts)
    xy = project(_corners(pts), view, proj)
    assert (xy >= 0).all() and (xy <= np.array(SIZE)).all()
    px = snapshot.snapshot_result(bpy.context.scene, res, objects, None, SIZE, COLOUR,
                                  focus=pts)
    assert snapshot.overlay_mask(px, OPAQUE).sum() > 20                   # the curve, drawn
