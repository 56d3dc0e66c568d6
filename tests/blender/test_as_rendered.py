"""Issue 55, "what the audience sees": ``scan --as-rendered`` and
``testing.collisions(as_rendered=True)`` check the surfaces renders draw, Blender's
render-mode evaluation, exactly.

The shot (tests/render_scene.py): two overlapping skinned tube characters, each with a
Subdivision Surface at viewport level 0 / render level 2 and a render-only Displace. The
truth is read apart from the product: the test's own render engine (`Oracle`) renders the
saved shot, and inside its ``render(depsgraph)`` (``depsgraph.mode == 'RENDER'``) sets each
frame with ``RenderEngine.frame_set`` and takes Blender's ``BVHTree.overlap`` on the drawn
instances' evaluated loop triangles, mapped to polygon pairs (tests/drawn_oracle.py). On
every frame, in the shot's own animation and in random strong poses (170° twists, scaled
bones, 1 km from the origin): no pair Blender finds is missing (unless judged exactly
disjoint), every reported pair is in Blender's raw overlap or meets exactly or touches.
The viewport scan of the same shot prints one line naming the meshes and the flag.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest
from drawn_oracle import reported, truth, verdict
from render_scene import add_is_viewport_subdivision, make_render_shot
from studio_helpers import report_pairs

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("registered_addon")]
bpy = pytest.importorskip("bpy")

PARTICIPANTS = ["Left", "Right"]
FAR = (1000.0, -1000.0, 500.0)


def render_truths(frames, participants, self_collision: bool) -> dict:
    """Per frame, Blender's truth on the render-mode depsgraph of the current scene
    (`drawn_oracle.truth`), read inside the test's own render engine; the scene's engine
    and camera are put back after."""
    out: dict = {}

    class Oracle(bpy.types.RenderEngine):
        bl_idname = "SKIN_COLLIDE_TEST_ORACLE"
        bl_label = "test oracle"
        bl_use_postprocess = False

        def render(self, depsgraph):
            out["mode"] = depsgraph.mode
            for f in frames:
                self.frame_set(f, 0.0)
                out[f] = truth(depsgraph, participants, self_collision)

    scene = bpy.context.scene
    saved = scene.render.engine, scene.camera
    bpy.utils.register_class(Oracle)
    cam = None
    try:
        if scene.camera is None:
            cam = bpy.data.objects.new("oracle camera", bpy.data.cameras.new("oracle camera"))
            scene.collection.objects.link(cam)
            scene.camera = cam
        scene.render.engine = Oracle.bl_idname
        bpy.ops.render.render()
    finally:
        scene.render.engine, scene.camera = saved
        if cam is not None:
            bpy.data.objects.remove(cam)
        bpy.utils.unregister_class(Oracle)
    assert out.pop("mode") == "RENDER"
    return out


def viewport_truths(frames, participants, self_collision: bool) -> dict:
    scene = bpy.context.scene
    out = {}
    for f in frames:
        scene.frame_set(f)
        out[f] = truth(bpy.context.evaluated_depsgraph_get(), participants, self_collision)
    return out


def run_cli(argv) -> tuple[int, str, str]:
    from skin_collide import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in argv])
        except SystemExit as exc:           # argparse: an option it does not know
            rc = exc.code
    return rc, out.getvalue(), err.getvalue()


def assert_exact(doc: dict, truths: dict, tag: str) -> None:
    by_frame = report_pairs(doc)
    assert sorted(by_frame) == sorted(truths), (tag, sorted(by_frame))
    for f, t in truths.items():
        v = verdict(t, reported(by_frame[f]))
        assert not v.missed and not v.extra and not v.unknown, f"{tag} frame {f}: {v.text()}"


def strong_poses(frames, rng) -> None:
    """On each of `frames`, both armatures keyed in a random strong pose (bones twisted
    up to 170°, scaled 0.6-1.5 per axis), the pair moved together by FAR on the odd
    frames: the two characters stay interlocked."""
    from blender_helpers import random_blender_pose
    from mathutils import Vector

    scene = bpy.context.scene
    arms = [o for o in scene.objects if o.type == "ARMATURE"]
    base = {a.name: a.location.copy() for a in arms}
    for a in arms:
        a.animation_data_clear()
    for k, f in enumerate(frames):
        scene.frame_set(f)
        for a in arms:
            random_blender_pose(a, rng, max_angle=math.radians(170), scale=(0.6, 1.5),
                                translate=0.03)
            a.location = base[a.name] + (Vector(FAR) if k % 2 else Vector((0, 0, 0)))
            for pb in a.pose.bones:
                for prop in ("location", "rotation_quaternion", "scale"):
                    pb.keyframe_insert(prop, frame=f)
            a.keyframe_insert("location", frame=f)
    scene.frame_start, scene.frame_end = frames[0], frames[-1]
    scene.frame_set(frames[0])


@pytest.fixture
def shot(tmp_path) -> Path:
    make_render_shot(bpy)
    path = tmp_path / "render_shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    yield path
    bpy.ops.wm.read_homefile(use_empty=True)


def test_as_rendered_scan_equals_blenders_render_overlap_every_frame(shot, tmp_path):
    report = tmp_path / "render.json"
    rc, out, err = run_cli(["scan", shot, "--self", "--as-rendered", "--json", report])
    assert rc == 0, err
    lines = out.splitlines()
    assert "evaluation: render (the surfaces renders draw: --as-rendered)" in lines
    assert not any("--as-rendered checks" in x for x in lines), out
    doc = json.loads(report.read_text())
    assert doc["evaluation"] == "render" and doc["source"]["evaluation"] == "render"
    assert "notes" not in doc

    bpy.ops.wm.open_mainfile(filepath=str(shot))
    frames = list(range(1, 13))
    truths = render_truths(frames, PARTICIPANTS, True)
    viewport = viewport_truths(frames, PARTICIPANTS, True)
    # The shot is one where renders differ: denser surfaces, and other pairs.
    assert all(len(truths[f].drawn[0].tris) > 4 * len(viewport[f].drawn[0].tris) for f in frames)
    assert sum(len(t.pairs) for t in truths.values()) > 0
    assert any(truths[f].pairs != viewport[f].pairs for f in frames)
    # Polygon indices are those of the surface checked: the render surface's.
    n_render_polys = int(truths[1].drawn[0].poly.max()) + 1
    assert max(p[1] for fr in doc["frames"] for p in fr["pairs"]) < n_render_polys
    assert_exact(doc, truths, "as rendered")


def test_viewport_scan_names_the_meshes_and_the_flag_in_one_line(shot, tmp_path):
    report = tmp_path / "viewport.json"
    rc, out, err = run_cli(["scan", shot, "--json", report])
    assert rc == 0, err
    notes = [x for x in out.splitlines() if "--as-rendered" in x]
    assert len(notes) == 1, out
    assert notes[0].startswith("note: ") and "Left" in notes[0] and "Right" in notes[0]
    assert "Subdivision" in notes[0] and "Displace" in notes[0]
    assert "evaluation: viewport (the surfaces the viewport draws)" in out.splitlines()
    doc = json.loads(report.read_text())
    assert doc["evaluation"] == "viewport"
    assert doc["notes"] == [notes[0][len("note: "):]]
    # The viewport scan is still the viewport's truth.
    bpy.ops.wm.open_mainfile(filepath=str(shot))
    assert_exact(doc, viewport_truths(list(range(1, 13)), PARTICIPANTS, False), "viewport")
    # doctor says it too.
    rc, out, err = run_cli(["doctor", shot])
    assert rc == 0, err
    assert sum("--as-rendered" in x for x in out.splitlines()) == 1, out
    rc, out, err = run_cli(["doctor", shot, "--as-rendered"])
    assert rc == 0, err
    assert "evaluation: render (the surfaces renders draw: --as-rendered)" in out.splitlines()
    assert "evaluated surface: 1,602 vertices" in out, out


def test_as_rendered_in_random_strong_poses_far_from_the_origin(tmp_path):
    make_render_shot(bpy)
    frames = [1, 2, 3, 4]
    strong_poses(frames, np.random.default_rng(55))
    path = tmp_path / "strong.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    report = tmp_path / "strong.json"
    rc, out, err = run_cli(["scan", path, "--self", "--as-rendered", "--json", report])
    assert rc == 0, err
    doc = json.loads(report.read_text())
    bpy.ops.wm.open_mainfile(filepath=str(path))
    truths = render_truths(frames, PARTICIPANTS, True)
    assert all(len(t.pairs) > 0 for t in truths.values())
    far = truths[2].drawn[0].pos.mean(axis=0)
    assert np.linalg.norm(far) > 900.0
    assert_exact(doc, truths, "strong poses")
    bpy.ops.wm.read_homefile(use_empty=True)


def test_testing_as_rendered_leaves_the_scene_unchanged(shot):
    from skin_collide import testing

    bpy.ops.wm.open_mainfile(filepath=str(shot))
    scene = bpy.context.scene
    scene.frame_set(5)
    engine, camera = scene.render.engine, scene.camera
    n_objects, n_cameras = len(bpy.data.objects), len(bpy.data.cameras)
    assert not [im for im in bpy.data.images if im.type == "RENDER_RESULT"]
    meshes = [bpy.data.objects[n] for n in PARTICIPANTS]

    rendered = testing.collisions(meshes, frames=(1, 12), self_collision=False,
                                  ignore_rest_contacts=False, as_rendered=True)
    viewport = testing.collisions(meshes, frames=(1, 12), self_collision=False,
                                  ignore_rest_contacts=False)
    assert (scene.render.engine, scene.camera, scene.frame_current) == (engine, camera, 5)
    assert (len(bpy.data.objects), len(bpy.data.cameras)) == (n_objects, n_cameras)
    assert not [im for im in bpy.data.images if im.type == "RENDER_RESULT"]

    truths = render_truths(list(range(1, 13)), PARTICIPANTS, False)
    colliding = sorted(f for f, t in truths.items() if t.pairs)
    assert sorted({f for e in rendered for f in range(e.start, e.end + 1)}) == colliding
    assert rendered != viewport
    # The oracle's render made a Render Result: the check keeps its active slot.
    result = [im for im in bpy.data.images if im.type == "RENDER_RESULT"]
    assert len(result) == 1
    result[0].render_slots.active_index = 2
    assert testing.collisions(meshes, frames=(1, 12), self_collision=False,
                              ignore_rest_contacts=False, as_rendered=True) == rendered
    assert [im for im in bpy.data.images if im.type == "RENDER_RESULT"] == result
    assert result[0].render_slots.active_index == 2
    with pytest.raises(AssertionError):
        testing.assert_no_collisions(meshes, frames=(1, 12), self_collision=False,
                                     ignore_rest_contacts=False, as_rendered=True)


@pytest.mark.asset
def test_two_cesium_men_with_a_render_level_subdivision(assets_dir, tmp_path):
    """Cesium Man and a copy of it turned 90° (they interpenetrate), each under a
    Subdivision Surface at viewport level 0 / render level 1: the render scan equals
    Blender's overlap on the render depsgraph on four frames of the walk, and differs from
    the viewport's."""
    from test_drawn_shots import cesium_man, copy_character

    ob, arm = cesium_man()
    copy_character(ob, arm, "Cesium_Man.copy")
    names = ["Cesium_Man", "Cesium_Man.copy"]
    for n in names:
        sub = bpy.data.objects[n].modifiers.new("Subdivision", "SUBSURF")
        sub.levels, sub.render_levels = 0, 1
    path = tmp_path / "cesium_render.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    report = tmp_path / "cesium.json"
    rc, out, err = run_cli(["scan", path, "--as-rendered", "--frames", "1:4", "--json", report])
    assert rc == 0, err
    doc = json.loads(report.read_text())
    assert doc["evaluation"] == "render"
    assert all(s.startswith("evaluated surface: 15,900 vertices") for s in doc["surface"].values())
    bpy.ops.wm.open_mainfile(filepath=str(path))
    frames = [1, 2, 3, 4]
    truths = render_truths(frames, names, False)
    viewport = viewport_truths(frames, names, False)
    assert all(len(truths[f].pairs) > 0 for f in frames)
    assert all(truths[f].pairs != viewport[f].pairs for f in frames)
    assert_exact(doc, truths, "cesium men")
    bpy.ops.wm.read_homefile(use_empty=True)


def test_render_only_character_disabled_in_renders_and_simplify(tmp_path):
    """A third character disabled in viewports only ("Ghost", crossing Left), Right
    disabled in renders, Simplify's render Max Subdivision 1: the viewport scan checks Left
    and Right and its note names all three; the render scan checks Left and Ghost, Left at
    level 1, and equals Blender's render-mode overlap."""
    from skin_collide.addon import demo_rig

    make_render_shot(bpy)
    ghost, _ = demo_rig.build_character("Ghost", location=(-0.45, 0.12, 0.0),
                                        rotation_z=-math.pi / 2, rings=12, segments=8,
                                        frames=12)
    ghost.hide_viewport = True
    bpy.data.objects["Right"].hide_render = True
    scene = bpy.context.scene
    scene.render.use_simplify = True
    scene.render.simplify_subdivision_render = 1
    scene.frame_set(1)
    path = tmp_path / "ghost.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))

    view, rend = tmp_path / "view.json", tmp_path / "render.json"
    rc, out, err = run_cli(["scan", path, "--json", view])
    assert rc == 0, err
    notes = [x for x in out.splitlines() if "--as-rendered" in x]
    assert len(notes) == 1, out
    assert "Ghost: drawn only in renders" in notes[0]
    assert "Right: disabled in renders" in notes[0]
    assert "level 0 in the viewport, 1 in renders" in notes[0]
    assert json.loads(view.read_text())["objects"] == ["Left", "Right"]

    rc, out, err = run_cli(["scan", path, "--self", "--as-rendered", "--json", rend])
    assert rc == 0, err
    doc = json.loads(rend.read_text())
    assert sorted(doc["objects"]) == ["Ghost", "Left"]
    assert doc["surface"]["Left"].startswith("evaluated surface: 402 vertices")
    bpy.ops.wm.open_mainfile(filepath=str(path))
    truths = render_truths(list(range(1, 13)), ["Left", "Ghost"], True)
    assert all(len(t.drawn[[d.name for d in t.drawn].index("Left")].tris) == 800
               for t in truths.values())
    assert_exact(doc, truths, "ghost")
    bpy.ops.wm.read_homefile(use_empty=True)


def test_geometry_nodes_is_viewport(tmp_path):
    """A Geometry Nodes tree that subdivides only where *Is Viewport* is false: the
    viewport scan names it in its note, the render scan checks the subdivided surface and
    equals Blender's render-mode overlap."""
    from skin_collide.addon import demo_rig

    meshes = demo_rig.build_demo_scene(rings=12, segments=8, frames=12)
    for ob in meshes:
        add_is_viewport_subdivision(bpy, ob)
    path = tmp_path / "gn.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    view, rend = tmp_path / "view.json", tmp_path / "render.json"
    rc, out, err = run_cli(["scan", path, "--json", view])
    assert rc == 0, err
    notes = [x for x in out.splitlines() if "--as-rendered" in x]
    assert len(notes) == 1 and "Render detail (Geometry Nodes) reads Is Viewport" in notes[0], out
    rc, out, err = run_cli(["scan", path, "--as-rendered", "--self", "--json", rend])
    assert rc == 0, err
    doc = json.loads(rend.read_text())
    bpy.ops.wm.open_mainfile(filepath=str(path))
    frames = list(range(1, 13))
    truths = render_truths(frames, PARTICIPANTS, True)
    viewport = viewport_truths(frames, PARTICIPANTS, True)
    assert all(len(truths[f].drawn[0].tris) > 3 * len(viewport[f].drawn[0].tris) for f in frames)
    assert all(s.startswith("evaluated surface: ") for s in doc["surface"].values()), doc["surface"]
    assert_exact(doc, truths, "is viewport")
    bpy.ops.wm.read_homefile(use_empty=True)


def test_cycles_adaptive_subdivision_is_named(tmp_path):
    """Cycles dices an Adaptive Subdivision at render time, geometry no depsgraph holds:
    the render scan says it checks the modifier's render level instead (console and
    notes)."""
    make_render_shot(bpy)
    bpy.context.scene.render.engine = "CYCLES"
    left = bpy.data.objects["Left"]
    mod = left.modifiers["Subdivision"]
    if hasattr(mod, "use_adaptive_subdivision"):
        mod.use_adaptive_subdivision = True
    else:                           # 4.2 LTS keeps the switch in the object's Cycles settings
        left.cycles.use_adaptive_subdivision = True
    path = tmp_path / "adaptive.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    report = tmp_path / "r.json"
    rc, out, err = run_cli(["scan", path, "--as-rendered", "--frames", "1:2", "--json", report])
    assert rc == 0, err
    notes = [x for x in out.splitlines() if "Adaptive Subdivision" in x]
    assert len(notes) == 1 and notes[0].startswith("note: Left: Cycles dices"), out
    doc = json.loads(report.read_text())
    assert doc["notes"] == [notes[0][len("note: "):]]
    bpy.ops.wm.open_mainfile(filepath=str(path))
    assert bpy.context.scene.render.engine == "CYCLES"
    bpy.ops.wm.read_homefile(use_empty=True)
