"""The artist's workflow, driven through the operators in the pip bpy module."""
import csv
import json

import numpy as np
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """Every test here runs with the add-on registered."""


@pytest.fixture
def demo():
    """The two generated characters, selected; frame 24 is mid-collision."""
    from blender_helpers import selected_demo

    yield selected_demo(bpy)
    bpy.ops.wm.read_homefile(use_empty=True)


def texts():
    return sorted(t.name for t in bpy.data.texts)


def headless_pairs(meshes, frame):
    from skin_collide.addon import scanner

    sc = scanner.Scanner(meshes)
    bpy.context.scene.frame_set(frame)
    pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
    return set(sc.polygon_pairs(sc.query(pos, poses)[0]))


def test_build_scan_export_select(demo, tmp_path):
    a, b = demo
    scene = bpy.context.scene
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert a.skin_collide.data is not None and b.skin_collide.data is not None
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    counts = {item.frame: item.pairs for item in scene.skin_collide.frame_counts}
    assert sorted(counts) == list(range(1, 25))
    report = json.loads(scene.skin_collide.report.as_string())
    assert report["objects"] == ["Left", "Right"]
    by_frame = {f["frame"]: {tuple(p) for p in f["pairs"]} for f in report["frames"]}
    assert max(counts.values()) > 0
    assert scene.frame_current == 1        # the scan puts the frame back
    for f in (1, 12, 13, 18):
        assert by_frame[f] == headless_pairs([a, b], f)
        assert counts[f] == len(by_frame[f])
    js, cs = tmp_path / "r.json", tmp_path / "r.csv"
    assert bpy.ops.skin_collide.export_report(filepath=str(js)) == {"FINISHED"}
    assert bpy.ops.skin_collide.export_report(filepath=str(cs)) == {"FINISHED"}
    assert json.loads(js.read_text()) == report
    rows = list(csv.reader(cs.open()))
    assert rows[0][:5] == ["frame", "object_a", "polygon_a", "object_b", "polygon_b"]
    assert len(rows) - 1 == sum(len(f["pairs"]) for f in report["frames"])
    # Both exports are allow-lists for the headless scan (`--allow`), with the same pairs,
    # and the report's episodes are core.contacts.pairs' (the headless scan's) rule.
    from skin_collide.core.contacts import pairs as contacts
    every = contacts.contact_set(p for fr in report["frames"] for p in fr["pairs"])
    assert contacts.load_allow_list(str(js)) == contacts.load_allow_list(str(cs)) == every
    assert report["episodes"] == [e.to_json() for e in contacts.episodes(
        [(fr["frame"], fr["pairs"]) for fr in report["frames"]])]
    assert report["episodes"] and report["complete"] is True
    # Select the colliding faces of the active mesh at a colliding frame, in Edit Mode.
    f = max(counts, key=counts.get)
    scene.frame_set(f)
    want = {pa for oa, pa, ob_, pb in by_frame[f] if oa == "Left"} | \
           {pb for oa, pa, ob_, pb in by_frame[f] if ob_ == "Left"}
    bpy.ops.object.mode_set(mode="EDIT")
    assert bpy.ops.skin_collide.select_colliding() == {"FINISHED"}
    bpy.ops.object.mode_set(mode="OBJECT")
    sel = np.zeros(len(a.data.polygons), bool)
    a.data.polygons.foreach_get("select", sel)
    assert set(np.nonzero(sel)[0].tolist()) == want and want


def test_markers_at_each_collision_episode(demo):
    scene = bpy.context.scene
    scene.skin_collide.add_markers = True
    bpy.ops.skin_collide.build()
    bpy.ops.skin_collide.scan()
    counts = [(i.frame, i.pairs) for i in scene.skin_collide.frame_counts]
    starts = [f for k, (f, n) in enumerate(counts) if n and (k == 0 or not counts[k - 1][1])]
    assert sorted(m.frame for m in scene.timeline_markers) == starts and starts


def test_save_reload_and_scan_again_identically(demo, tmp_path):
    from skin_collide.addon import storage

    bpy.ops.skin_collide.build()
    bpy.ops.skin_collide.scan()
    before = bpy.context.scene.skin_collide.report.as_string()
    path = tmp_path / "built.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    a = bpy.data.objects["Left"]
    assert storage.has_data(a) and storage.stale_reason(a) == ""
    report = json.loads(bpy.context.scene.skin_collide.report.as_string())
    assert report == json.loads(before)
    assert len(bpy.context.scene.skin_collide.frame_counts) == 24
    bpy.context.scene.skin_collide.report.from_string("")
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}        # no rebuild needed
    assert _same_pairs(before, bpy.context.scene.skin_collide.report.as_string())


def _same_pairs(a: str, b: str) -> bool:
    fa = [(f["frame"], f["pairs"]) for f in json.loads(a)["frames"]]
    fb = [(f["frame"], f["pairs"]) for f in json.loads(b)["frames"]]
    return fa == fb


def test_clear_removes_the_data(demo):
    a, b = demo
    bpy.ops.skin_collide.build()
    assert any(t.startswith(".skin_collide/Left") for t in texts())
    assert bpy.ops.skin_collide.clear() == {"FINISHED"}
    assert a.skin_collide.data is None and b.skin_collide.data is None
    assert not any(t.startswith(".skin_collide/Left") for t in texts())


def test_live_overlay_follows_the_frame(demo):
    from skin_collide.addon import handlers, overlay, session

    scene = bpy.context.scene
    bpy.ops.skin_collide.build()
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    assert scene.skin_collide.live
    seen = 0
    for f in range(1, 25):
        scene.frame_set(f)
        res = session.live_result(scene)
        assert res.frame == f and res.error == ""
        tris, lines = overlay.live_batches(scene)
        assert tris.shape == (3 * sum(h.size for h in res.hit_triangles), 3)
        assert (res.n_pairs > 0) == (tris.shape[0] > 0)
        seen = max(seen, res.n_pairs)
        if res.n_pairs:
            break
    assert seen > 0
    scene.skin_collide.show_spheres = True
    scene.skin_collide.sphere_level = 2
    _, lines = overlay.live_batches(scene)
    assert lines.shape[0] > 0 and lines.shape[0] % 2 == 0
    # One wire set (3 circles of 24 segments) per level-2 node of each object, and every
    # deformed vertex of a node inside its drawn sphere.
    res = session.live_result(scene)
    from skin_collide.addon import storage
    expect = 0
    for name, pos in zip(res.names, res.positions):
        tree = storage.load(scene.objects[name]).data.tree
        lp = tree.level_ptr
        expect += (lp[3] - lp[2]) * 3 * 24 * 2
        wires = res.spheres[(name, 2)].reshape(-1, 144, 3).astype(np.float64)
        for k, node in enumerate(range(lp[2], lp[3])):
            centre = wires[k].mean(axis=0)
            radius = np.linalg.norm(wires[k] - centre, axis=1).max()
            vs = pos[tree.node_verts[tree.node_vert_ptr[node]:tree.node_vert_ptr[node + 1]]]
            assert np.linalg.norm(vs - centre, axis=1).max() <= radius * (1 + 1e-5)
    assert lines.shape[0] == expect

    class RenderGraph:
        mode = "RENDER"

    scene.frame_current = f + 1
    handlers.on_frame_change(scene, RenderGraph())          # renders are left alone
    assert session.live_result(scene).frame == f
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    assert not scene.skin_collide.live


def test_overlay_batch_builders():
    from skin_collide.addon import overlay

    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
    tris = np.array([[0, 1, 2], [0, 1, 3]])
    out = overlay.triangle_overlay(pos, tris, np.array([0]))
    assert out.shape == (3, 3) and out.dtype == np.float32
    assert (out[:, 2] > 0).all()                           # pushed off along +Z
    wires = overlay.sphere_wires(np.zeros((2, 3)), np.array([1.0, 2.0]), segments=8)
    assert wires.shape == (2 * 3 * 8 * 2, 3)
    np.testing.assert_allclose(np.linalg.norm(wires[:48], axis=1), 1.0, atol=1e-6)
    verts, colours = overlay.timeline_strip(np.array([1, 2, 3]), np.array([0, 5, 50]),
                                            lambda f: 10 * f, height=6, bottom=2)
    assert verts.shape == (12, 2) and colours.shape == (12, 4)
    assert verts[:, 0].min() == 15 and verts[:, 0].max() == 35
    assert colours[-1, 3] > colours[0, 3]


@pytest.mark.parametrize("case", ["nothing selected", "no armature", "empty range",
                                  "topology changed", "weights painted", "not built"])
def test_bad_input_reports_and_changes_nothing(demo, case):
    a, b = demo
    scene = bpy.context.scene
    if case == "nothing selected":
        for ob in scene.objects:
            ob.select_set(False)
        op, msg = bpy.ops.skin_collide.build, "no mesh selected"
    elif case == "no armature":
        for ob in scene.objects:
            ob.select_set(False)
        me = bpy.data.meshes.new("plain")
        me.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
        plain = bpy.data.objects.new("plain", me)
        scene.collection.objects.link(plain)
        plain.select_set(True)
        op, msg = bpy.ops.skin_collide.build, "'plain' is skipped: nothing moves it"
    elif case == "empty range":
        bpy.ops.skin_collide.build()

        def op():
            return bpy.ops.skin_collide.scan(use_scene_range=False, frame_start=10, frame_end=5)
        msg = "is empty"
    elif case == "topology changed":
        bpy.ops.skin_collide.build()
        me = a.data
        me.vertices.add(1)                                  # an extra (loose) vertex
        me.update()
        op, msg = bpy.ops.skin_collide.scan, "rebuild"
    elif case == "weights painted":
        bpy.ops.skin_collide.build()
        a.vertex_groups["bone_2"].add([7], 0.42, "REPLACE")
        op, msg = bpy.ops.skin_collide.scan, "weights, rest shape or bones .* changed"
    else:
        op, msg = bpy.ops.skin_collide.scan, "press Build first"
    before_texts = texts()
    before_counts = len(scene.skin_collide.frame_counts)
    before_frame = scene.frame_current
    with pytest.raises(RuntimeError, match=msg):
        op()
    assert texts() == before_texts
    assert len(scene.skin_collide.frame_counts) == before_counts
    assert scene.frame_current == before_frame


@pytest.mark.asset
def test_ignore_rest_contacts_on_a_segmented_character(assets_dir):
    from skin_collide.addon import extract, files, session

    files.load_file(str(assets_dir / "platformer_enemy.glb"))
    scene = bpy.context.scene
    ob = extract.skinned_meshes(scene)[0]
    ob.select_set(True)
    bpy.context.view_layer.objects.active = ob
    s = scene.skin_collide
    s.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    rest = session.rest_contacts(scene)
    assert len(rest) > 100                      # 13 islands interpenetrate by design
    arm = extract.modifier_report(ob).armature
    arm.data.pose_position = "REST"
    bpy.context.view_layer.update()
    bpy.ops.skin_collide.refresh()
    assert session.live_result(scene).n_pairs > 0
    s.ignore_rest_contacts = True
    bpy.ops.skin_collide.refresh()
    assert session.live_result(scene).n_pairs == 0
    arm.data.pose_position = "POSE"
    bpy.ops.wm.read_homefile(use_empty=True)


@pytest.mark.asset
def test_baked_highlight_renders_red_where_it_collides(assets_dir, tmp_path):
    from skin_collide.addon import bake, files, session

    files.load_file(str(assets_dir / "makehuman_default.blend"))
    scene = bpy.context.scene
    ob = bpy.data.objects["makehuman_body"]
    ob.select_set(True)
    bpy.context.view_layer.objects.active = ob
    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    counts = {}
    for frame in (1, 25):            # rest pose, then hands pressed together overhead
        scene.frame_set(frame)
        assert bpy.ops.skin_collide.bake_highlight() == {"FINISHED"}
        colours = np.empty(len(ob.data.loops) * 4, np.float32)
        ob.data.color_attributes[bake.ATTRIBUTE].data.foreach_get("color", colours)
        starts = np.empty(len(ob.data.polygons), np.int32)
        ob.data.polygons.foreach_get("loop_start", starts)
        baked = int((colours.reshape(-1, 4)[starts, 1] < 0.1).sum())
        res = session.live_result(scene)
        assert baked == len({p for a, p, b, q in res.polygon_pairs} |
                            {q for a, p, b, q in res.polygon_pairs})
        px = bake.render_preview(scene, [ob], str(tmp_path / f"f{frame}.png"), size=(240, 320))
        counts[frame] = (baked, bake.red_pixels(px), int((px[..., 3] > 0.5).sum()))
    assert counts[1][0] == 0 and counts[1][1] == 0 and counts[1][2] > 1000   # body, no red
    assert counts[25][0] > 100 and counts[25][1] > 20
    bpy.ops.wm.read_homefile(use_empty=True)


@pytest.mark.asset
@pytest.mark.parametrize("asset", ["fox.glb", "cesium_man.glb"])
def test_workflow_on_a_shared_asset(assets_dir, tmp_path, asset):
    """Two copies of a real character walking through each other: build, scan, overlay,
    select, export, save, reload, scan again, clear."""
    import math
    import sys
    from pathlib import Path

    from skin_collide.addon import extract, files, overlay, session

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import scenes

    files.load_file(str(assets_dir / asset))
    scene = bpy.context.scene
    ob = extract.skinned_meshes(scene)[0]
    arm = extract.modifier_report(ob).armature
    ob2, _ = scenes.duplicate_character(ob, arm, "copy", offset=(0.0, 0.0, 0.0), turn=math.pi / 2)
    for o in (ob, ob2):
        o.select_set(True)
    bpy.context.view_layer.objects.active = ob
    act = arm.animation_data.action
    first, last = (int(x) for x in act.frame_range)
    scene.frame_start, scene.frame_end = first, min(last, first + 11)
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    report = json.loads(scene.skin_collide.report.as_string())
    assert report["objects"] == [ob.name, ob2.name]
    colliding = [f for f in report["frames"] if f["pairs"]]
    assert colliding, "the copies must interpenetrate"
    f = colliding[0]["frame"]
    assert {tuple(p) for p in colliding[0]["pairs"]} == headless_pairs([ob, ob2], f)
    scene.frame_set(f)
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    tris, _ = overlay.live_batches(scene)
    assert tris.shape[0] == 3 * sum(h.size for h in session.live_result(scene).hit_triangles) > 0
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.skin_collide.select_colliding() == {"FINISHED"}
    sel = np.zeros(len(ob.data.polygons), bool)
    ob.data.polygons.foreach_get("select", sel)
    assert sel.sum() == len({p[1] for p in colliding[0]["pairs"]})
    out = tmp_path / "report.csv"
    assert bpy.ops.skin_collide.export_report(filepath=str(out)) == {"FINISHED"}
    assert len(out.read_text().splitlines()) - 1 == sum(len(x["pairs"]) for x in report["frames"])
    name = ob.name
    path = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    assert _same_pairs(json.dumps(report), scene.skin_collide.report.as_string())
    for o in scene.objects:
        o.select_set(o.type == "MESH")
    assert bpy.ops.skin_collide.clear() == {"FINISHED"}
    assert not [t for t in bpy.data.texts if t.name.startswith(".skin_collide/" + name)]
    bpy.ops.wm.read_homefile(use_empty=True)


def test_show_spheres_draws_the_methods_own_volumes(demo):
    """With the panel's Method set to box-tree, Build makes box trees and *Show Spheres*
    draws the boxes of the chosen level (12 edges each, enclosing the level's triangles),
    through `Method.drawable`; the sphere tree keeps its balls."""
    from skin_collide.addon import overlay, session, storage

    scene = bpy.context.scene
    scene.skin_collide.method = "box-tree"
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    objs = {ob.name: storage.load(ob) for ob in demo}
    assert {o.method for o in objs.values()} == {"box-tree"}
    for f in range(1, 25):
        scene.frame_set(f)
        assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
        res = session.live_result(scene)
        if res.n_pairs:
            break
    assert res.modes == ["box-tree", "box-tree"] and res.n_pairs > 0
    for level in (0, 3):
        _, lines = overlay.result_arrays(res, objs, True, level)
        n_boxes = 0
        for _k, name in enumerate(res.names):
            tree = objs[name].data.tree
            n_boxes += int((tree.slot_tri.reshape(2 ** level, -1) >= 0).any(axis=1).sum())
        assert lines.shape == (24 * n_boxes, 3)
    # The root box encloses every evaluated vertex of its object.
    _, root = overlay.result_arrays(res, {res.names[0]: objs[res.names[0]]}, True, 0)
    lo, hi = root.min(axis=0), root.max(axis=0)
    pos = res.positions[0]
    assert (pos >= lo - 1e-6).all() and (pos <= hi + 1e-6).all()
