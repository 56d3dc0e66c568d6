"""Issue 26 item 7: rigid meshes parented to bones or objects (helmets, eyes, weapons,
armour plates) are characters too. Each moves with its bone or parent, one transform per
frame, in Selected and Collection modes and in the headless scan; a mesh that nothing
moves (no Armature modifier, no parent, constraint or animation) is skipped with a note,
not an error. The truth is Blender's ``BVHTree.overlap`` of the evaluated meshes, read by
the test itself (tests/studio_helpers.py), on every frame and in strong random poses."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import inside_blender_binary
from studio_helpers import compare, no_coincident_vertices, report_pairs, strong_poses

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

FRAMES = 16
PROPS = ["Helmet", "Shield"]
SKIP_NOTE = ("'Icosphere' is skipped: nothing moves it in frames 1-16 (no armature, parent, "
             "constraint, animation, shape key, cache or deforming modifier; the same "
             "evaluated positions at frames 1, 5, 9, 12, 16)")


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """The panel's operators are used too."""


def _mesh(name: str, verts, faces):
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(v) for v in np.asarray(verts).tolist()], [], faces)
    me.update()
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    return ob


def box(name: str, size=(0.35, 0.35, 0.3)):
    s = np.asarray(size) / 2
    v = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)]) * s
    faces = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    return _mesh(name, v, faces)


def ball(name: str, radius=0.2, rings=6, segments=8):
    """A UV sphere: quads, triangle fans at the poles, no coincident vertices."""
    verts = [(0.0, 0.0, -radius)]
    for i in range(1, rings):
        t = math.pi * i / rings - math.pi / 2
        for j in range(segments):
            a = 2 * math.pi * j / segments
            verts.append((radius * math.cos(t) * math.cos(a), radius * math.cos(t) * math.sin(a),
                          radius * math.sin(t)))
    verts.append((0.0, 0.0, radius))
    top = len(verts) - 1
    faces = []
    for j in range(segments):
        faces.append((0, 1 + (j + 1) % segments, 1 + j))
        faces.append((top, 1 + (rings - 2) * segments + j,
                      1 + (rings - 2) * segments + (j + 1) % segments))
    for i in range(rings - 2):
        for j in range(segments):
            a, b = 1 + i * segments + j, 1 + i * segments + (j + 1) % segments
            faces.append((a, b, b + segments, a + segments))
    return _mesh(name, verts, faces)


def props_demo():
    """The demo's two crossing tubes; a Helmet parented to the top bone of Left, a Shield
    parented to an animated Empty that carries it across the tubes, and a static,
    unparented Icosphere. Returns (Left, Right, Helmet, Shield, Icosphere)."""
    from mathutils import Matrix

    from skin_collide.addon import demo_rig

    a, b = demo_rig.build_demo_scene(rings=12, segments=8, frames=FRAMES)
    arm = a.parent
    scene = bpy.context.scene
    helmet = box("Helmet")
    helmet.parent = arm
    helmet.parent_type = "BONE"
    helmet.parent_bone = "bone_5"
    bpy.context.view_layer.update()
    top = arm.matrix_world @ arm.pose.bones["bone_5"].tail      # Left's head, at rest
    helmet.matrix_world = Matrix.Translation(top)
    carrier = bpy.data.objects.new("Carrier", None)
    scene.collection.objects.link(carrier)
    for f, x in ((1, -0.9), (FRAMES, 0.9)):
        carrier.location = (x, 0.0, 1.2)
        carrier.keyframe_insert("location", frame=f)
    shield = ball("Shield")
    shield.parent = carrier
    ico = ball("Icosphere", radius=0.3)
    ico.location = (3.0, 3.0, 0.0)
    scene.frame_set(1)
    return a, b, helmet, shield, ico


def judged_scan(meshes, self_collision=True) -> tuple:
    """A fresh Scanner over `meshes`, compared with Blender on every frame; returns the
    Scanner and its report."""
    from skin_collide.addon import scanner

    scene = bpy.context.scene
    sc = scanner.Scanner(meshes, self_collision=self_collision)
    no_coincident_vertices(sc)
    totals = np.zeros(3, int)
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        totals += compare(sc, meshes, bpy.context.evaluated_depsgraph_get(), self_collision,
                          f"frame {f}")
    report = sc.run(scene, list(range(1, FRAMES + 1))).to_json()
    scene.frame_set(1)
    return sc, report, totals


def prop_pairs(report) -> set:
    """The object pairs (sorted names) that collide on some frame, involving a prop."""
    return {tuple(sorted((p[0], p[2]))) for f in report["frames"] for p in f["pairs"]
            if {p[0], p[2]} & set(PROPS)}


@pytest.mark.parametrize("source", ["SELECTED", "COLLECTION"])
def test_props_take_part_in_selected_and_collection_modes(bpy_module, capfd, source):
    a, b, helmet, shield, ico = props_demo()
    scene = bpy.context.scene
    s = scene.skin_collide
    s.self_collision = True
    everyone = [a, b, helmet, shield, ico]
    if source == "COLLECTION":
        cast = bpy.data.collections.new("Cast")
        scene.collection.children.link(cast)
        for ob in everyone:
            cast.objects.link(ob)
        s.source, s.collection = "COLLECTION", cast
        for ob in scene.objects:
            ob.select_set(False)
    else:
        for ob in everyone:
            ob.select_set(True)
        bpy.context.view_layer.objects.active = a
    capfd.readouterr()
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    out = capfd.readouterr().out
    assert "Built 4 character(s)" in out and SKIP_NOTE in out, out
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    panel = json.loads(s.report.as_string())
    assert sorted(panel["objects"]) == ["Helmet", "Left", "Right", "Shield"]
    # The same pairs as a fresh Scanner's, which equal Blender's on every frame.
    order = [bpy.data.objects[n] for n in panel["objects"]]
    sc, fresh, totals = judged_scan(order)
    assert report_pairs(panel) == report_pairs(fresh)
    assert totals[0] > 0
    # The props collide (the helmet sits on Left's head, the shield crosses Right's
    # sweep), and they move with one transform per frame: the on-demand refit of their
    # sphere trees.
    assert {("Helmet", "Left"), ("Right", "Shield")} <= prop_pairs(panel), prop_pairs(panel)
    assert {n: panel["refit"][n] for n in PROPS} == {"Helmet": "sphere-tree",
                                                      "Shield": "sphere-tree"}


def test_nothing_that_moves_is_an_error_only_when_nothing_else_is_left(bpy_module):
    from skin_collide.addon import session

    a, b, helmet, shield, ico = props_demo()
    for ob in bpy.context.scene.objects:
        ob.select_set(ob == ico)
    bpy.context.view_layer.objects.active = ico
    with pytest.raises(RuntimeError, match="Icosphere.* nothing moves it"):
        bpy.ops.skin_collide.build()
    with pytest.raises(session.SessionError, match="no character to check") as exc:
        session.participants_and_notes(bpy.context.scene)
    assert SKIP_NOTE in str(exc.value)
    # With a character beside it, the static mesh is only noted.
    helmet.select_set(True)
    assert session.participants_and_notes(bpy.context.scene) == ([helmet], [SKIP_NOTE])


@pytest.mark.parametrize("far", [None, (1000.0, -1000.0, 500.0), (-7000.0, 7000.0, 1000.0)])
def test_props_in_strong_random_poses_equal_blender(bpy_module, far):
    from skin_collide.addon import scanner

    a, b, helmet, shield, ico = props_demo()
    arms = [a.parent, b.parent]
    carrier = shield.parent
    for ob in arms + [carrier]:
        ob.animation_data_clear()
    carrier.location = (-0.2, 0.0, 1.0)
    meshes = [a, b, helmet, shield]
    sc = scanner.Scanner(meshes, self_collision=True)
    assert sc.objects[2].rig.rigid == "bone 'bone_5' of 'Left_rig'"
    assert sc.objects[3].rig.rigid == "parent 'Carrier'"
    rng = np.random.default_rng(7 if far is None else int(abs(far[0])))
    totals = np.zeros(3, int)
    for k in range(3):
        strong_poses(bpy, arms, rng, None if far is None else np.asarray(far))
        if far is not None and k == 0:
            from mathutils import Matrix, Vector
            carrier.matrix_world = Matrix.Translation(Vector(far)) @ carrier.matrix_world
            bpy.context.view_layer.update()
        dg = bpy.context.evaluated_depsgraph_get()
        pos = sc.evaluate(dg)[0]
        if far is not None:
            assert all(np.abs(p).max() > 900.0 for p in pos)
        totals += compare(sc, meshes, dg, True, f"pose {k} far {far}")
    print(f"props far={far}: {totals.tolist()}")
    assert totals[0] > 0


@pytest.mark.skipif(inside_blender_binary(), reason="runs the CLI in a subprocess")
def test_headless_scan_takes_the_props_and_notes_the_rest(bpy_module, tmp_path):
    props_demo()
    path = tmp_path / "props.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    a, b, helmet, shield = (bpy.data.objects[n] for n in ("Left", "Right", "Helmet", "Shield"))
    _, fresh, _ = judged_scan([a, b, helmet, shield])
    out = tmp_path / "cli.json"
    res = subprocess.run([sys.executable, "-m", "skin_collide", "scan", str(path), "--self",
                          "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr
    assert f"note: {SKIP_NOTE}" in res.stdout.splitlines(), res.stdout
    assert "rigid, moves with bone 'bone_5' of 'Left_rig'" in res.stdout
    cli = json.loads(out.read_text())
    assert cli["objects"] == ["Left", "Right", "Helmet", "Shield"]
    assert report_pairs(cli) == report_pairs(fresh)
    assert {("Helmet", "Left"), ("Right", "Shield")} <= prop_pairs(cli)
    # Naming a mesh that nothing moves is an error (one line), as any unknown object is.
    res = subprocess.run([sys.executable, "-m", "skin_collide", "scan", str(path), "--self",
                          "--object", "Icosphere"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 2 and "nothing moves it" in res.stderr, res.stderr


@pytest.mark.asset
def test_robot_expressive_rigid_parts_equal_blender(bpy_module, assets_dir):
    """Robot Expressive: 4 skinned meshes and 15 rigid parts hanging from bones (or from
    empties under bones); all 19 take part, self-collision, against Blender in its
    running action and a strong pose (three head parts carry shape keys: refitted
    bottom-up)."""
    from test_strong_poses_blender import weld_keys

    from skin_collide.addon import animation, extract, files, scanner

    files.load_file(str(assets_dir / "robot_expressive.glb"))
    scene = bpy.context.scene
    meshes, notes = extract.character_meshes(scene.objects)
    assert len(meshes) == 19 and notes == []
    sc = scanner.Scanner(meshes, self_collision=True)
    rigid = [o for o in sc.objects if o.rig.rigid]
    assert len(rigid) == 15
    assert {o.method for o in rigid} == {"sphere-tree", "bottom-up"}
    keys = weld_keys([o.rig for o in sc.objects])
    arm = next(extract.modifier_report(m).armature for m in meshes
               if extract.modifier_report(m).armature is not None)
    # glTF's animation name; Blender 4.2's importer appends the armature's
    act = next(a for a in animation.actions_for(arm)
               if a.name == "Running" or a.name.startswith("Running_"))
    animation.use_action(arm, act)
    totals = np.zeros(3, int)
    for f in animation.action_frames(act)[::4]:
        scene.frame_set(f)
        totals += compare(sc, meshes, bpy.context.evaluated_depsgraph_get(), True,
                          f"robot frame {f}", keys)
    arm.animation_data_clear()
    strong_poses(bpy, [arm], np.random.default_rng(3))
    totals += compare(sc, meshes, bpy.context.evaluated_depsgraph_get(), True,
                      "robot strong pose", keys)
    print(f"robot_expressive: {totals.tolist()}")
    assert totals[0] > 0


def test_a_prop_scaled_to_zero_leaves_the_frame_not_checked(bpy_module):
    """Scaling a prop to zero (a common way to hide it) squashes it to a point, where
    every triangle touches every other: that frame is not checked, and says which prop,
    as a bone scaled to zero does; the other frames are."""
    from skin_collide.addon import scanner

    a, b, helmet, shield, ico = props_demo()
    helmet.keyframe_insert("scale", frame=1)
    helmet.scale = (0.0, 0.0, 0.0)
    helmet.keyframe_insert("scale", frame=8)
    helmet.scale = (1.0, 1.0, 1.0)
    helmet.keyframe_insert("scale", frame=9)
    sc = scanner.Scanner([a, b, helmet, shield], self_collision=True)
    report = sc.run(bpy.context.scene, [7, 8, 9]).to_json()
    status = {f["frame"]: f.get("not_checked", "") for f in report["frames"]}
    assert status[7] == "" and status[9] == "", status
    assert "Helmet: its world matrix" in status[8], status
