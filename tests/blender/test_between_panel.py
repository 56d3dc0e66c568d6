"""Between Frames in the panel (issue 57): Scan Frame Range with the option on a box that
passes through another between frames 1 and 2 (touching at neither) lists the
pass-through, marks its step in the timeline strip, and Frame Contact goes to the
sub-frame of first contact and selects its faces; the result survives save and reload.
First Hit with the option is refused in one line, the scene unchanged; the option off
scans as before."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bone_boxes import armature, box_on_bone  # noqa: E402
from panel_recorder import Recorder  # noqa: E402

GAP = 0.05          # between the boxes at frames 1 and 2
SHIFT = 2.0 + 2 * GAP   # B's move from frame 1 to 2: from one side of A to the other
T_TOUCH = GAP / SHIFT   # when B's face reaches A's, on the linear motion


def build_crossing(path):
    """Boxes A and B (1 m cubes) of one armature, B's bone along +x. B stands GAP to the
    +x side of A at frame 1 and GAP to the -x side at frames 2 and 3 (linear keys): it
    passes through A between frames 1 and 2 and touches A at no frame."""
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = armature("Rig", (("a", (0, 0, 0), (0, 0, 1)), ("b", (1.5, 0, 0.5), (2.5, 0, 0.5))))
    box_on_bone("A", "a", arm, (0, 0, 0.5))
    box_on_bone("B", "b", arm, (1.0 + GAP, 0, 0.5))
    pb = arm.pose.bones["b"]
    for frame, y in ((1, 0.0), (2, -SHIFT), (3, -SHIFT)):       # bone y is world +x
        pb.location = (0.0, y, 0.0)
        pb.keyframe_insert("location", frame=frame)
    _linear_keys(arm)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def _linear_keys(arm):
    """Linear interpolation: Blender's motion between the frames is the straight line the
    check assumes (the sub-frame of first contact is then where the boxes meet)."""
    action = arm.animation_data.action
    curves = list(getattr(action, "fcurves", None) or [])
    if not curves:          # Blender 5: the action's channelbags (layered actions)
        for layer in action.layers:
            for strip in layer.strips:
                for bag in strip.channelbags:
                    curves += list(bag.fcurves)
    assert curves
    for fc in curves:
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"


def open_built(path, between=True, subframes=1):
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    meshes = [bpy.data.objects["A"], bpy.data.objects["B"]]
    for ob in meshes:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = meshes[0]
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    s = scene.skin_collide
    s.between_frames = between
    if between:
        s.subframes = subframes
    return scene, meshes


def evaluated_min_x(ob) -> float:
    dg = bpy.context.evaluated_depsgraph_get()
    ev = ob.evaluated_get(dg)
    m = np.array(ev.matrix_world)
    co = np.array([v.co[:] for v in ev.data.vertices])
    return float((co @ m[:3, :3].T + m[:3, 3])[:, 0].min())


def selected_faces(ob) -> set:
    return {p.index for p in ob.data.polygons if p.select}


@pytest.fixture(scope="module")
def crossing(tmp_path_factory):
    path = tmp_path_factory.mktemp("between_panel") / "crossing.blend"
    build_crossing(path)
    return path


def test_settings_default_off_and_the_panel_offers_them(crossing, registered_addon):
    from skin_collide.panels import main_panel

    scene, _ = open_built(crossing, between=False)
    s = scene.skin_collide
    assert s.between_frames is False and s.subframes == 1
    rna = s.bl_rna.properties["subframes"]
    assert (rna.hard_min, rna.hard_max) == (1, 64)
    icons = bpy.types.UILayout.bl_rna.functions["operator"].parameters["icon"].enum_items
    assert "FRAME_NEXT" in icons.keys()          # the pass-through buttons' icon

    class Layout(Recorder):
        """Any layout call: records `prop` names, the rest returns the layout."""

        def __init__(self):
            super().__init__()
            self.props = []

        def prop(self, data, name, **kw):
            self.props.append(name)

        def operator(self, idname, **kw):
            return super().operator(idname, kw.get("text", ""), kw.get("icon", ""))

        def __getattr__(self, name):
            return lambda *a, **kw: self

    class Panel:
        layout = None

    for on, want in ((False, False), (True, True)):
        s.between_frames = on
        panel = Panel()
        panel.layout = Layout()
        main_panel.SKINCOLLIDE_PT_main.draw(panel, bpy.context)
        assert "between_frames" in panel.layout.props
        assert ("subframes" in panel.layout.props) is want


def test_the_scan_lists_marks_and_frames_the_pass_through(crossing, registered_addon, tmp_path):
    from skin_collide.addon import overlay
    from skin_collide.operators import contacts as contact_ops
    from skin_collide.panels import main_panel

    scene, (a, b) = open_built(crossing)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    assert (scene.frame_current, scene.frame_subframe) == (1, 0.0)
    s = scene.skin_collide
    # No frame collides: the boxes stand GAP apart at every frame.
    assert [(i.frame, i.pairs) for i in s.frame_counts] == [(1, 0), (2, 0), (3, 0)]
    assert [(i.passes > 0, i.step_to) for i in s.frame_counts] == \
        [(True, 2.0), (False, 3.0), (False, -1.0)]
    assert len(s.passes) == 1
    p = s.passes[0]
    assert (p.frame, p.step_to, {p.object_a, p.object_b}) == (1, 2.0, {"A", "B"})
    assert {p.bone_a, p.bone_b} == {"a", "b"} and p.pairs > 0
    # The report: the step's rows and its pass-through, in the headless scan's schema.
    doc = json.loads(s.report.as_string())
    f1, f2, f3 = doc["frames"]
    assert f1["step_to"] == 2 and f2["step_to"] == 3 and "step_to" not in f3
    assert len(f1["passes_through"]) == 1 and f2["passes_through"] == []
    c = f1["passes_through"][0]
    assert c["kind"] == "passes through" and c["step"] == [1, 2]
    t = c["t"]
    assert t == pytest.approx(p.t, abs=1e-6)
    assert 0.0 <= t <= T_TOUCH + 1e-9            # a lower bound of the first contact
    assert t > T_TOUCH - 0.02, (t, T_TOUCH)
    assert {(r[0], r[2]) for r in f1["between"]} <= {("A", "B"), ("B", "A")}
    assert len(f1["between"]) == len(c["pairs"])

    # The timeline strip: nothing red, one violet mark from frame 1 to frame 2.
    frames, counts = overlay.strip_arrays(scene)
    verts, _ = overlay.timeline_strip(frames, counts, lambda f: f * 10.0, 6.0)
    assert verts.size == 0
    starts, ends = overlay.strip_passes(scene)
    assert starts.tolist() == [1.0] and ends.tolist() == [2.0]
    pv, pc = overlay.step_marks(starts, ends, lambda f: f * 10.0, 3.0, bottom=9.0)
    assert pv.shape == (6, 2)
    assert pv[:, 0].min() == pytest.approx(10.0) and pv[:, 0].max() == pytest.approx(20.0)
    assert pv[:, 1].min() == pytest.approx(9.0) and pv[:, 1].max() == pytest.approx(12.0)
    assert np.allclose(pc, overlay.PASS_COLOUR)

    # The panel lists it on the step's frame, not elsewhere.
    rec = Recorder()
    main_panel._draw_passes(rec, scene)
    assert [o.idname for o in rec.ops] == ["skin_collide.frame_contact"]
    assert rec.ops[0].passing == 0
    assert rec.ops[0].text in ("a × b: passes through between 1 and 2",
                               "b × a: passes through between 1 and 2")
    scene.frame_set(2)
    rec = Recorder()
    main_panel._draw_passes(rec, scene)
    assert rec.ops == [] and rec.labels == []

    # Frame Contact: the sub-frame of first contact, its faces selected.
    for ob in (a, b):
        ob.data.polygons.foreach_set("select", [False] * len(ob.data.polygons))
    assert bpy.ops.skin_collide.frame_contact(passing=0) == {"FINISHED"}
    assert scene.frame_current == 1
    assert scene.frame_current + scene.frame_subframe == pytest.approx(1.0 + t, abs=1e-6)
    # There B's face is about to reach A's (x = 0.5): not past it, and near it.
    x = evaluated_min_x(b)
    assert 0.5 - 1e-6 <= x <= 0.5 + 0.02 * SHIFT, x
    faces = contact_ops.passing_faces(c)
    for ob in (a, b):
        assert selected_faces(ob) == faces[ob.name] and faces[ob.name], ob.name
    # Among them the first to meet: A's +x side (where B comes in) and B's -x side.
    assert any(a.data.polygons[i].normal.x > 0.9 for i in faces["A"])
    assert any(b.data.polygons[i].normal.x < -0.9 for i in faces["B"])

    # Saved and opened again: listed and framed as before.
    path = tmp_path / "scanned.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    scene.frame_set(3)
    s = scene.skin_collide
    assert len(s.passes) == 1 and s.passes[0].frame == 1
    assert overlay.strip_passes(scene)[0].tolist() == [1.0]
    a, b = bpy.data.objects["A"], bpy.data.objects["B"]
    for ob in (a, b):
        ob.data.polygons.foreach_set("select", [False] * len(ob.data.polygons))
    assert bpy.ops.skin_collide.frame_contact(passing=0) == {"FINISHED"}
    assert scene.frame_current + scene.frame_subframe == pytest.approx(1.0 + t, abs=1e-6)
    assert selected_faces(a) == faces["A"] and selected_faces(b) == faces["B"]


def test_frame_contact_refuses_a_bad_pass_through_and_changes_nothing(crossing,
                                                                       registered_addon):
    scene, (a, b) = open_built(crossing)
    scene.frame_set(3)
    with pytest.raises(RuntimeError, match="no such pass-through"):
        bpy.ops.skin_collide.frame_contact(passing=0)        # not scanned yet
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    text = scene.skin_collide.report.as_string()
    before = (scene.frame_current, scene.frame_subframe, len(bpy.data.texts),
              selected_faces(a), selected_faces(b))
    with pytest.raises(RuntimeError, match="no such pass-through"):
        bpy.ops.skin_collide.frame_contact(passing=5)
    # A report that no longer holds it (edited by hand): refused, nothing changed.
    scene.skin_collide.report.from_string(text.replace('"passes_through"', '"other"'))
    with pytest.raises(RuntimeError, match="scan again"):
        bpy.ops.skin_collide.frame_contact(passing=0)
    scene.skin_collide.report.from_string("{not json")
    with pytest.raises(RuntimeError, match="cannot be read"):
        bpy.ops.skin_collide.frame_contact(passing=0)
    after = (scene.frame_current, scene.frame_subframe, len(bpy.data.texts),
             selected_faces(a), selected_faces(b))
    assert after == before


def test_first_hit_with_between_frames_is_refused_and_changes_nothing(crossing,
                                                                      registered_addon):
    from skin_collide.addon import session

    scene, _ = open_built(crossing, between=False)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    s = scene.skin_collide
    scene.frame_set(2)
    s.between_frames = True
    before = (scene.frame_current, s.report.as_string(), len(bpy.data.texts),
              [(i.frame, i.pairs, i.passes) for i in s.frame_counts], len(s.passes))
    with pytest.raises(RuntimeError) as err:
        bpy.ops.skin_collide.scan(first_hit=True)
    assert session.BETWEEN_FIRST_HIT in str(err.value)
    assert "\n" not in session.BETWEEN_FIRST_HIT
    after = (scene.frame_current, s.report.as_string(), len(bpy.data.texts),
             [(i.frame, i.pairs, i.passes) for i in s.frame_counts], len(s.passes))
    assert after == before


def test_subframes_find_it_too(crossing, registered_addon):
    scene, _ = open_built(crossing, subframes=4)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    s = scene.skin_collide
    assert len(s.passes) == 1 and (s.passes[0].frame, s.passes[0].step_to) == (1, 2.0)
    assert 0.0 <= s.passes[0].t <= T_TOUCH + 1e-6
    assert s.passes[0].t > T_TOUCH - 0.02


def test_option_off_scans_as_before(crossing, registered_addon):
    """Off: no step is checked, nothing about between frames is stored, and the report
    is the one the scan wrote before the option (the same document as the records')."""
    from skin_collide.addon import overlay

    scene, _ = open_built(crossing, between=False)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    s = scene.skin_collide
    assert [(i.passes, i.step_to) for i in s.frame_counts] == [(0, -1.0)] * 3
    assert len(s.passes) == 0
    assert overlay.strip_passes(scene)[0].size == 0
    doc = json.loads(s.report.as_string())
    for f in doc["frames"]:
        assert not {"between", "step_to", "step_ms", "passes_through"} & set(f)
    # On, then off again: the stored pass-throughs go with the next scan.
    s.between_frames = True
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    assert len(s.passes) == 1
    s.between_frames = False
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    assert len(s.passes) == 0 and overlay.strip_passes(scene)[0].size == 0
    again = json.loads(s.report.as_string())["frames"]
    drop_ms = lambda frames: [{k: v for k, v in f.items() if k != "ms"} for f in frames]  # noqa: E731
    assert drop_ms(again) == drop_ms(doc["frames"])
