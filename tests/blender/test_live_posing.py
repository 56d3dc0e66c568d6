"""Live while posing: the depsgraph handler follows pose edits without a frame change,
throttled; `live_pairs` holds the last live update's pair count; draw callbacks that raise
report once."""
import pytest

from skin_collide.addon.state import STATE

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """Every test here runs with the add-on registered."""


@pytest.fixture
def live_demo():
    """Two built tube characters, live overlay on, at frame 1 (no collision); throttle off."""
    from blender_helpers import selected_demo

    from skin_collide.addon import handlers

    a, b = selected_demo(bpy, build=True)
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    saved = handlers.THROTTLE
    handlers.THROTTLE = 0.0
    yield a, b, bpy.data.objects["Left_rig"]
    handlers.THROTTLE = saved
    STATE.pending = ""
    bpy.ops.wm.read_homefile(use_empty=True)


def bend(arm, amount):
    """Bend the chain as the demo's animation does at its middle, scaled by `amount`."""
    for i, pb in enumerate(arm.pose.bones):
        pb.rotation_euler = (-amount * (0.35 if i else 0.0) * (1 + 0.2 * i), 0.4 * amount, 0.0)


class Spy:
    def __init__(self):
        self.calls = 0

    def __call__(self, *_args):
        self.calls += 1


def test_frame_change_and_pose_edit_fire_different_handlers(live_demo):
    _, _, arm = live_demo
    frame_spy, dg_spy = Spy(), Spy()
    bpy.app.handlers.frame_change_post.append(frame_spy)
    bpy.app.handlers.depsgraph_update_post.append(dg_spy)
    try:
        bpy.context.scene.frame_set(2)
        assert frame_spy.calls == 1 and dg_spy.calls == 0
        bend(arm, 0.5)
        bpy.context.view_layer.update()
        assert frame_spy.calls == 1 and dg_spy.calls >= 1
    finally:
        bpy.app.handlers.frame_change_post.remove(frame_spy)
        bpy.app.handlers.depsgraph_update_post.remove(dg_spy)


def test_posing_updates_live_pairs_without_a_frame_change(live_demo):
    from skin_collide.addon import session

    a, b, arm = live_demo
    scene = bpy.context.scene
    assert scene.frame_current == 1 and scene.skin_collide.live_pairs == 0
    bend(arm, 0.33)                         # Left bends into Right (as at frames 3-6)
    bpy.context.view_layer.update()
    assert scene.frame_current == 1
    n = scene.skin_collide.live_pairs
    assert n > 0 and n == session.live_result(scene).n_pairs
    # The same as the headless scan of this pose.
    from skin_collide.addon import scanner
    sc = scanner.Scanner([a, b])
    pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
    assert set(sc.polygon_pairs(sc.query(pos, poses)[0])) == \
        set(session.live_result(scene).polygon_pairs)
    bend(arm, 0.0)                         # undo the pose
    bpy.context.view_layer.update()
    assert scene.skin_collide.live_pairs == 0


def test_throttled_updates_are_caught_up(live_demo):
    from skin_collide.addon import handlers

    _, _, arm = live_demo
    scene = bpy.context.scene
    bend(arm, 0.1)
    bpy.context.view_layer.update()                  # runs: sets the query's duration
    assert scene.skin_collide.live_pairs == 0 and not handlers.pending()
    handlers.THROTTLE = 1e9                          # the next updates come "too fast"
    bend(arm, 0.33)
    bpy.context.view_layer.update()
    assert handlers.pending() and scene.skin_collide.live_pairs == 0
    handlers.catch_up()                              # what the timer does in Blender
    assert not handlers.pending() and scene.skin_collide.live_pairs > 0
    # While a query runs, an update is only marked; the next handler call catches up.
    handlers.THROTTLE = 0.0
    STATE.busy = True
    try:
        bend(arm, 0.0)
        bpy.context.view_layer.update()
    finally:
        STATE.busy = False
    assert handlers.pending() and scene.skin_collide.live_pairs > 0
    scene.skin_collide.overlay_color = (0, 1, 0, 1)  # an unrelated update
    bpy.context.view_layer.update()
    assert not handlers.pending() and scene.skin_collide.live_pairs == 0


def test_inert_during_own_writes_renders_and_when_live_is_off(live_demo):
    from skin_collide.addon import handlers

    _, _, arm = live_demo
    scene = bpy.context.scene
    with handlers.quiet():
        bend(arm, 0.33)
        bpy.context.view_layer.update()
    assert scene.skin_collide.live_pairs == 0 and not handlers.pending()
    # A render's depsgraph (here a stand-in with the armature updated) is ignored.
    bend(arm, 0.33)

    class RenderGraph:
        mode = "RENDER"
        updates = [type("U", (), {"id": arm})()]
    handlers.on_depsgraph_update(scene, RenderGraph())
    handlers.on_frame_change(scene, RenderGraph())
    assert scene.skin_collide.live_pairs == 0 and not handlers.pending()
    RenderGraph.mode = "VIEWPORT"           # the same call from the viewport does update
    handlers.on_depsgraph_update(scene, bpy.context.evaluated_depsgraph_get())
    assert scene.skin_collide.live_pairs > 0
    bend(arm, 0.0)
    bpy.context.view_layer.update()
    assert scene.skin_collide.live_pairs == 0
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}      # off
    bend(arm, 0.3)
    bpy.context.view_layer.update()
    assert scene.skin_collide.live_pairs == 0 and not handlers.pending()


def test_handlers_survive_file_load():
    from skin_collide.addon import handlers

    assert handlers.on_depsgraph_update in bpy.app.handlers.depsgraph_update_post
    bpy.ops.wm.read_homefile(use_empty=True)
    assert handlers.on_depsgraph_update in bpy.app.handlers.depsgraph_update_post
    assert handlers.on_frame_change in bpy.app.handlers.frame_change_post


def test_a_failing_draw_callback_reports_once(live_demo, capsys, monkeypatch):
    from skin_collide.addon import overlay

    def boom(scene):
        raise KeyError("broken data")

    monkeypatch.setattr(overlay, "_drawn_for", boom)
    STATE.draw_errors.clear()
    for _ in range(5):
        assert overlay._draw_view3d() is None          # never raises into Blender
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "3D View" in err[0] and "broken data" in err[0]
    assert "broken data" in STATE.draw_errors["3D View"]


def test_pose_edits_with_self_collision_carry_pairs_and_equal_refresh(live_demo, monkeypatch):
    """Issue 29 item 1 through the handlers: with self-collision on, each pose edit's live
    answer (pairs carried over where nothing moved) equals a fresh Refresh of that pose,
    and the edits after the first re-check only part of the mesh."""
    import math

    from skin_collide.addon import session
    from skin_collide.core import aabb_tree as sc

    a, b, arm = live_demo
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    moved = []
    real = sc.self_pairs

    def spy(*args, **kw):
        if kw.get("moved") is not None:
            moved.append(int(kw["moved"].sum()))
        return real(*args, **kw)

    monkeypatch.setattr(sc, "self_pairs", spy)
    bones = list(arm.pose.bones)
    for k, pb in enumerate(bones):             # fold Left onto itself
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = (math.radians(70) if k else 0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    for step, angle in enumerate((75, 80, 70, 85)):   # edit the last bone only, and undo
        bones[-1].rotation_euler = (math.radians(angle - 3), 0.0, 0.0)
        bpy.context.view_layer.update()                # a full answer to carry from
        n_moved = len(moved)
        bones[-1].rotation_euler = (math.radians(angle), 0.0, 0.0)
        bpy.context.view_layer.update()
        assert len(moved) > n_moved, step              # this update re-checked what moved
        live = session.live_result(scene)
        assert live.error == "" and live.n_pairs > 0
        assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
        fresh = session.live_result(scene)
        assert set(live.polygon_pairs) == set(fresh.polygon_pairs), step
        assert live.n_pairs == fresh.n_pairs
    assert max(moved) > 0                              # the edits did move triangles


def test_hidden_characters_take_no_part_in_the_overlay(live_demo):
    """A character hidden in the viewport (disabled in viewports: Blender evaluates only
    its rest mesh; or with the eye: not drawn) takes no part in the live overlay or in
    Refresh; shown again, it does. All hidden: no result and no error; Refresh says why."""
    from skin_collide.addon import session

    a, b, arm = live_demo
    scene = bpy.context.scene
    bend(arm, 0.33)                         # Left bends into Right
    bpy.context.view_layer.update()
    both = session.live_result(scene)
    assert set(both.names) == {a.name_full, b.name_full}
    assert any(p[0] != p[2] for p in both.polygon_pairs)       # pairs between the two
    for hide, show in ((lambda: setattr(b, "hide_viewport", True),
                        lambda: setattr(b, "hide_viewport", False)),
                       (lambda: b.hide_set(True), lambda: b.hide_set(False))):
        hide()
        bpy.context.view_layer.update()
        alone = session.live_result(scene)
        assert alone.error == "" and alone.names == [a.name_full]
        assert all(p[0] == p[2] == a.name for p in alone.polygon_pairs)
        assert scene.skin_collide.live_pairs == alone.n_pairs
        assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
        assert session.live_result(scene).names == [a.name_full]
        show()
        bpy.context.view_layer.update()
        again = session.live_result(scene)
        assert set(again.names) == {a.name_full, b.name_full}
        assert set(again.polygon_pairs) == set(both.polygon_pairs)
    a.hide_set(True)
    b.hide_set(True)
    bend(arm, 0.3)
    bpy.context.view_layer.update()
    assert session.live_result(scene) is None and scene.skin_collide.live_pairs == 0
    with pytest.raises(RuntimeError, match="every built character is hidden"):
        bpy.ops.skin_collide.refresh()


def live_answer(scene) -> tuple:
    from skin_collide.addon import session

    res = session.live_result(scene)
    return (res.frame, res.n_pairs, sorted(res.polygon_pairs),
            sorted((c.a, c.b, round(c.length, 12)) for c in res.contacts))


def fresh_answer(scene, meshes) -> tuple:
    """The frame queried afresh, as Refresh does (nothing carried, no memo)."""
    from skin_collide.addon import scanner

    sc = scanner.Scanner(meshes, self_collision=scene.skin_collide.self_collision)
    out = sc.current(scene, bpy.context.evaluated_depsgraph_get())
    return sorted(out.record.pairs)


def test_frames_seen_before_are_answered_from_memory(live_demo):
    """Playback looping over frames already answered: each frame whose evaluated inputs
    are bit for bit those of its last answer takes that answer (`core.scan.FrameMemo`),
    equal to the first pass and to a fresh query; a pose edited there, or a setting
    changed, is answered anew."""
    a, b, arm = live_demo
    scene = bpy.context.scene
    frames = list(range(1, 9))
    first = []
    for f in frames:
        scene.frame_set(f)
        first.append(live_answer(scene))
    assert any(n for _, n, _, _ in first)                 # the tubes cross on some frames
    memo = STATE.frame_memos[scene.name_full]
    hits = memo.hits
    again = []
    for f in frames:
        scene.frame_set(f)
        again.append(live_answer(scene))
    assert memo.hits == hits + len(frames) and STATE.frame_memos[scene.name_full] is memo
    assert again == first
    for f, (_, _, pairs, _) in zip(frames, first):
        scene.frame_set(f)
        assert sorted(pairs) == fresh_answer(scene, [a, b])
    # A pose edited on a frame answered before: answered anew, as a fresh query.
    scene.frame_set(5)
    hits = memo.hits
    bend(arm, 0.6)
    bpy.context.view_layer.update()
    assert memo.hits == hits
    assert sorted(live_answer(scene)[2]) == fresh_answer(scene, [a, b])
    # Self-collision switched on: another memo; the frames seen are answered anew.
    scene.skin_collide.self_collision = True
    scene.frame_set(4)
    assert STATE.frame_memos[scene.name_full] is not memo
    assert sorted(live_answer(scene)[2]) == fresh_answer(scene, [a, b])


def test_a_capped_frame_is_never_answered_from_memory(live_demo, monkeypatch):
    """A frame whose live query stopped early (at the cap, or a dense frame) holds a
    subset: it is not kept, and visiting it again queries it again."""
    from skin_collide.core.scan import pipeline
    from skin_collide.core.types import QueryStats

    scene = bpy.context.scene
    real = pipeline.query
    capped = {5}

    def query(*args, **kw):
        res = real(*args, **kw)
        if scene.frame_current in capped:
            res.stats.append(QueryStats(extra={"stopped": True}))   # as a capped frame says
        return res

    monkeypatch.setattr(pipeline, "query", query)
    for f in (1, 5):
        scene.frame_set(f)
    memo = STATE.frame_memos[scene.name_full]
    hits, misses = memo.hits, memo.misses
    scene.frame_set(1)                                     # complete: kept
    scene.frame_set(5)
    assert (memo.hits, memo.misses) == (hits + 1, misses + 1)
    capped.clear()
    scene.frame_set(1)
    scene.frame_set(5)                                     # complete now: kept from here
    scene.frame_set(1)
    scene.frame_set(5)
    assert memo.hits == hits + 4
