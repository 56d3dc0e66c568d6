"""addon.scanner: a scan answers a held pose (a frame whose evaluated positions and
triangles are bit for bit those of the frame before) once, with the same records as
querying every frame."""
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """Every test here runs with the add-on registered."""


def without_ms(rec) -> tuple:
    return (rec.frame, rec.pairs, rec.modes, rec.not_checked,
            [(c.a, c.b, c.length, c.pairs.tolist()) for c in rec.contacts])


def test_a_held_pose_is_answered_once_and_the_same(monkeypatch):
    from skin_collide.addon import demo_rig, scanner
    from skin_collide.core.scan import pipeline

    bpy.ops.wm.read_homefile(use_empty=True)
    a, b = demo_rig.build_demo_scene(rings=12, segments=8, frames=16)
    arm = bpy.data.objects["Left_rig"]
    # Left: frames 1-4 bend it, 5-10 hold the bend of frame 10 (the tubes cross), 11-12
    # bend it on; Right stands still.
    scene = bpy.context.scene
    for rig in bpy.data.objects:
        if rig.type == "ARMATURE" and rig.animation_data is not None:
            rig.animation_data.action = None

    def frame_change(scene_, *_):
        f = scene_.frame_current
        g = 10 if 5 <= f <= 9 else f
        for i, pb in enumerate(arm.pose.bones):
            pb.rotation_euler = (0.05 * g * (i + 1), 0.02 * g, 0.0)

    bpy.app.handlers.frame_change_pre.append(frame_change)
    try:
        frames = list(range(1, 13))
        queried = []
        real = pipeline.query

        def query(*args, **kw):
            queried.append(scene.frame_current)
            return real(*args, **kw)

        monkeypatch.setattr(pipeline, "query", query)
        sc = scanner.Scanner([a, b], self_collision=True)
        report = sc.run(scene, frames)
        assert queried == [1, 2, 3, 4, 5, 11, 12]                 # 6-10 hold 5's pose
        assert sc.frame_memo is None                               # kept for the run only
        assert all(r.pairs == report.frames[4].pairs != [] for r in report.frames[4:10])
        # Every frame queried on its own gives the same records.
        monkeypatch.setattr(pipeline, "query", real)
        for rec in report.frames:
            fresh = scanner.Scanner([a, b], self_collision=True)
            assert without_ms(fresh.step(scene, rec.frame)) == without_ms(rec)
    finally:
        bpy.app.handlers.frame_change_pre.remove(frame_change)
        bpy.ops.wm.read_homefile(use_empty=True)
