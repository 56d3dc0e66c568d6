"""Clearance in the viewport (issue 42, `addon/clearance.py`, the panel's Clearance field):
the settings exist, are off by default and survive save and reload (and read through a
linked scene); on two rigged boxes 5 cm apart with a clearance of 10 cm, the live result
has one near contact at the distance an independent brute force finds (Ericson's closest
points over every triangle pair of Blender's evaluated meshes), the overlay's arrays hold
its near triangles and closest segment, the panel lists it with its distance in scene
units, Frame Contact selects its faces on both boxes, Scan Frame Range marks the frame as
near in the timeline strip; turning Clearance off drops it at once, a new distance
queries again; one character with Clearance on is a panel hint, and the scene is left as
it was."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from bone_boxes import armature, box_on_bone  # noqa: E402
from panel_recorder import Recorder  # noqa: E402

GAP = 0.05          # between the boxes at frame 1
D = 0.1             # the clearance


def build_boxes(path):
    """Boxes A and B (1 m cubes) of one armature, B's bone along +x: at frame 1
    B is GAP from A (near), at frame 2 pushed 0.3 into A (intersecting), at frame 3 far."""
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = armature("Rig", (("a", (0, 0, 0), (0, 0, 1)), ("b", (1.5, 0, 0.5), (2.5, 0, 0.5))))
    for name, bone, loc in (("A", "a", (0, 0, 0.5)), ("B", "b", (1.0 + GAP, 0, 0.5))):
        box_on_bone(name, bone, arm, loc)
    pb = arm.pose.bones["b"]
    for frame, y in ((1, 0.0), (2, -0.3), (3, 0.5)):       # bone y is world +x
        pb.location = (0.0, y, 0.0)
        pb.keyframe_insert("location", frame=frame)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, 3
    scene.frame_set(1)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def open_built(path, clearance=True, live=True):
    """Open the boxes, build both, Clearance D on (or not), the live overlay on."""
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    meshes = [bpy.data.objects["A"], bpy.data.objects["B"]]
    for ob in meshes:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = meshes[0]
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    s = scene.skin_collide
    s.clearance_distance = D
    s.clearance = clearance
    if live:
        assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    return scene, meshes


def brute_min_distance(meshes) -> float:
    """The smallest distance between the two evaluated meshes, from Blender's own loop
    triangles and world matrices, by the independent brute force of the core tests."""
    from test_clearance_stage import brute_pair_distances

    dg = bpy.context.evaluated_depsgraph_get()
    out = []
    for ob in meshes:
        ev = ob.evaluated_get(dg)
        me = ev.data
        co = np.array([ev.matrix_world @ v.co for v in me.vertices], dtype=np.float64)
        tris = np.array([t.vertices[:] for t in me.loop_triangles], dtype=np.int64)
        out.append((co, tris))
    (pa, ta), (pb, tb) = out
    ia, ib = np.meshgrid(np.arange(len(ta)), np.arange(len(tb)), indexing="ij")
    return float(brute_pair_distances(pa, ta, ia.ravel(), pb, tb, ib.ravel()).min())


@pytest.fixture(scope="module")
def boxes(tmp_path_factory):
    path = tmp_path_factory.mktemp("clearance_viewport") / "boxes.blend"
    build_boxes(path)
    return path


def test_settings_default_off_and_survive_save_and_reload(tmp_path, registered_addon):
    bpy.ops.wm.read_homefile(use_empty=True)
    s = bpy.context.scene.skin_collide
    assert s.clearance is False
    rna = s.bl_rna.properties
    assert rna["clearance_distance"].subtype == "DISTANCE"
    assert rna["clearance_distance"].unit == "LENGTH"
    assert rna["clearance_distance"].hard_min == 0.0
    assert "self-clearance is not computed" in rna["clearance"].description.lower()
    assert tuple(s.near_color) == pytest.approx((1.0, 0.65, 0.0, 0.6))
    s.clearance, s.clearance_distance = True, 0.025
    s.near_color = (0.2, 0.8, 0.4, 0.5)
    path = tmp_path / "settings.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    assert bpy.context.scene.skin_collide.clearance is False
    bpy.ops.wm.open_mainfile(filepath=str(path))
    s = bpy.context.scene.skin_collide
    assert s.clearance is True and s.clearance_distance == pytest.approx(0.025)
    assert tuple(s.near_color) == pytest.approx((0.2, 0.8, 0.4, 0.5))
    name = bpy.context.scene.name
    # A scene linked from that file reads them as saved.
    bpy.ops.wm.read_homefile(use_empty=True)
    with bpy.data.libraries.load(str(path), link=True) as (src, dst):
        dst.scenes = [name]
    linked = dst.scenes[0]
    assert linked.library is not None
    assert linked.skin_collide.clearance is True
    assert linked.skin_collide.clearance_distance == pytest.approx(0.025)


def test_live_near_contact_overlay_panel_and_frame_contact(boxes, registered_addon):
    from skin_collide.addon import overlay, session
    from skin_collide.operators import contacts as contact_ops
    from skin_collide.panels import main_panel

    scene, meshes = open_built(boxes)
    res = session.live_result(scene)
    assert res.n_pairs == 0 and not res.contacts
    assert res.clearance == pytest.approx(D)
    assert len(res.near_contacts) == 1
    c = res.near_contacts[0]
    assert c.kind == "near" and {c.a, c.b} == {"A", "B"}
    want = brute_min_distance(meshes)
    assert want == pytest.approx(GAP, abs=1e-6)
    assert abs(c.min_distance - want) <= 1e-9
    assert np.linalg.norm(c.points[0] - c.points[1]) == pytest.approx(c.min_distance, abs=1e-9)

    # The overlay: near triangles on both boxes, the closest segment.
    tris, lines = overlay.live_near_batches(scene)
    assert tris.shape[0] > 0 and tris.shape[0] % 3 == 0
    near_tris = dict(zip(res.names, res.near_triangles))
    assert near_tris["A"].size and near_tris["B"].size
    xs = tris[:, 0]
    assert ((xs > 0.4) & (xs < 0.65)).mean() > 0.5      # mostly the facing sides
    assert lines.shape == (2, 3)
    assert np.allclose(lines, np.asarray(c.points, dtype=np.float32))
    assert tuple(scene.skin_collide.near_color) == pytest.approx((1.0, 0.65, 0.0, 0.6))

    # The panel: the count and the distance in scene units; clicking frames and selects.
    rec = Recorder()
    main_panel._draw_clearance(rec, res, scene)
    assert rec.labels == ["1 near contact(s) within 10 cm"]
    rec = Recorder()
    main_panel._draw_contacts(rec, res, scene)
    assert [o.idname for o in rec.ops] == ["skin_collide.frame_contact"]
    assert rec.ops[0].index == len(res.contacts)
    assert rec.ops[0].text == "a × b: 5 cm apart"
    scene.unit_settings.scale_length = 0.01       # one unit is a centimetre
    rec = Recorder()
    main_panel._draw_contacts(rec, res, scene)
    assert rec.ops[0].text == "a × b: 0.5 mm apart"
    scene.unit_settings.scale_length = 1.0
    for ob in meshes:
        ob.data.polygons.foreach_set("select", [False] * len(ob.data.polygons))
    assert bpy.ops.skin_collide.frame_contact(index=rec.ops[0].index) == {"FINISHED"}
    faces = contact_ops.contact_faces(c)
    for ob in meshes:
        sel = {p.index for p in ob.data.polygons if p.select}
        assert sel and sel == faces[ob.name], ob.name
    centre, distance = contact_ops.near_view(c)
    assert np.linalg.norm(np.asarray(c.points) - centre, axis=1).max() < distance


def test_distance_change_requeries_and_off_drops_at_once(boxes, registered_addon):
    from skin_collide.addon import overlay, session

    scene, _ = open_built(boxes)
    s = scene.skin_collide
    assert len(session.live_result(scene).near_contacts) == 1
    s.clearance_distance = 0.01                   # below the gap: no frame change needed
    res = session.live_result(scene)
    assert res.clearance == pytest.approx(0.01) and not res.near_contacts
    s.clearance_distance = D
    assert len(session.live_result(scene).near_contacts) == 1
    s.clearance = False
    res = session.live_result(scene)
    assert res.clearance is None and not res.near_contacts and not res.near_triangles
    tris, lines = overlay.live_near_batches(scene)
    assert tris.size == 0 and lines.size == 0
    rec = Recorder()
    from skin_collide.panels import main_panel
    main_panel._draw_clearance(rec, res, scene)
    main_panel._draw_contacts(rec, res, scene)
    assert rec.labels == [] and rec.ops == []
    scene.frame_set(1)                            # the live handler: still off
    assert not session.live_result(scene).near_contacts
    s.clearance = True                            # on again: queried at once
    assert len(session.live_result(scene).near_contacts) == 1


def test_intersections_keep_their_colour(boxes, registered_addon):
    from skin_collide.addon import session

    scene, _ = open_built(boxes)
    scene.frame_set(2)                            # B pushed into A
    res = session.live_result(scene)
    assert res.n_pairs > 0
    for hit, near in zip(res.hit_triangles, res.near_triangles or [np.zeros(0)] * 2):
        assert not np.intersect1d(hit, near).size


def test_timeline_marks_frames_under_the_clearance(boxes, registered_addon):
    from skin_collide.addon import overlay

    scene, _ = open_built(boxes, live=False)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    frames, counts = overlay.strip_arrays(scene)
    near = overlay.strip_near(scene)
    assert frames.tolist() == [1, 2, 3]
    assert counts[0] == 0 and counts[1] > 0 and counts[2] == 0
    assert near.tolist() == [1, 0, 0]               # frame 1 only: near, no intersection
    colour = tuple(scene.skin_collide.near_color)
    verts, colours = overlay.timeline_strip(frames, counts, lambda f: f * 10.0, 6.0,
                                            near=near, near_colour=colour)
    assert len(verts) == 12                          # frame 2 red, frame 1 amber
    xs = verts[:, 0].reshape(-1, 6)
    amber = np.all(np.isclose(colours, colour, atol=1e-6), axis=1).reshape(-1, 6).all(1)
    assert amber.tolist() == [False, True]
    assert xs[1].min() == pytest.approx(5.0) and xs[1].max() == pytest.approx(15.0)
    assert xs[0].min() == pytest.approx(15.0)        # frame 2, as without clearance
    import json
    doc = json.loads(scene.skin_collide.report.as_string())
    assert doc["clearance"] == pytest.approx(D)
    assert [len(f["near_contacts"]) for f in doc["frames"]] == [1, 0, 0]
    # Without clearance the strip is as before.
    scene.skin_collide.clearance = False
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    assert overlay.strip_near(scene).tolist() == [0, 0, 0]


def test_one_character_is_a_hint_and_changes_nothing(boxes, registered_addon):
    from skin_collide.addon import clearance, session
    from skin_collide.panels import main_panel

    scene, meshes = open_built(boxes, live=False)
    meshes[1].hide_set(True)                      # only A is shown
    before = ([ob.select_get() for ob in meshes], [ob.hide_get() for ob in meshes],
              scene.frame_current, len(bpy.data.objects), len(bpy.data.texts))
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert res.clearance_note == clearance.NEEDS_TWO and not res.near_contacts
    rec = Recorder()
    main_panel._draw_clearance(rec, res, scene)
    assert rec.labels == [clearance.NEEDS_TWO]
    after = ([ob.select_get() for ob in meshes], [ob.hide_get() for ob in meshes],
             scene.frame_current, len(bpy.data.objects), len(bpy.data.texts))
    assert after == before



def test_a_clearance_too_large_for_live_stops_says_so_and_scans_still_count(
        boxes, registered_addon, monkeypatch):
    """The live clearance stage has a work budget (`core.scan.LIVE_LIMIT`): past it the
    frame shows no near contacts and the panel and Refresh say the distance is too large
    to check live, the intersections stay as they are and the scene is unchanged; Scan
    Frame Range has no budget and counts them."""
    from skin_collide.addon import clearance, session
    from skin_collide.core import scan as core_scan
    from skin_collide.panels import main_panel

    scene, meshes = open_built(boxes, live=False)
    scene.frame_set(2)                            # B pushed into A: intersecting
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    hits = session.live_result(scene)
    scene.frame_set(1)                            # B near A
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    near = session.live_result(scene)
    assert hits.n_pairs > 0 and len(near.near_contacts) == 1 and not near.clearance_note
    monkeypatch.setattr(core_scan, "LIVE_LIMIT", 2)
    before = ([ob.select_get() for ob in meshes], scene.frame_current,
              len(bpy.data.objects), len(bpy.data.texts), scene.skin_collide.clearance_distance)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert res.clearance_note == clearance.too_many_text(scene, D)
    assert "more than 2 pairs of boxes" in res.clearance_note
    assert "Scan Frame Range" in res.clearance_note
    assert not res.near_contacts and not res.near_triangles
    rec = Recorder()
    main_panel._draw_clearance(rec, res, scene)
    assert rec.labels == [res.clearance_note]
    after = ([ob.select_get() for ob in meshes], scene.frame_current,
             len(bpy.data.objects), len(bpy.data.texts), scene.skin_collide.clearance_distance)
    assert after == before
    scene.frame_set(2)                            # the intersections are not budgeted
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert res.n_pairs == hits.n_pairs and res.polygon_pairs == hits.polygon_pairs
    # The scan counts every near pair, whatever the live budget.
    scene.frame_set(1)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    import json
    doc = json.loads(scene.skin_collide.report.as_string())
    assert [len(f["near_contacts"]) for f in doc["frames"]] == [1, 0, 0]
