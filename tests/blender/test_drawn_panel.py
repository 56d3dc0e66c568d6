"""Issue 40: the panel sees what the headless scan sees. On shots where Blender's evaluation
moves meshes by other means than an Armature modifier on a real object (collection
instances of a character whose own collection is excluded, armature parenting, an animated
shape key, a Corrective Smooth after the Armature), the panel's Build + Scan Frame Range
writes the report `scan` writes, and the live overlay (Refresh at each frame) shows the
same pairs on every frame. The shots' pairs against Blender's own overlap are
tests/blender/test_drawn_shots.py's; here the three consumers of the one pipeline must
agree, and each shot must collide (so that the comparison can fail)."""
import json
import math
import subprocess
import sys

import pytest
from conftest import inside_blender_binary

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("registered_addon")]
bpy = pytest.importorskip("bpy")

if inside_blender_binary():
    pytest.skip("compares with the CLI in a subprocess (plain pytest run)",
                allow_module_level=True)

FRAMES = 6


def _character(name, location, rotation_z=0.0):
    from skin_collide.addon import demo_rig

    return demo_rig.build_character(name, location=location, rotation_z=rotation_z,
                                    rings=24, segments=10, frames=FRAMES)


def _armature_parenting(ob, arm) -> None:
    """The Armature modifier replaced by armature parenting (the mesh keeps its place)."""
    for m in list(ob.modifiers):
        if m.type == "ARMATURE":
            ob.modifiers.remove(m)
    world = ob.matrix_world.copy()
    ob.parent, ob.parent_type = arm, "ARMATURE"
    ob.matrix_world = world


def build(kind: str, path) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, FRAMES
    if kind == "instances":
        a, arm = _character("A", (0.0, 0.0, 0.0))
        coll = bpy.data.collections.new("char")
        scene.collection.children.link(coll)
        for ob in (a, arm):
            for c in list(ob.users_collection):
                c.objects.unlink(ob)
            coll.objects.link(ob)
        for k in range(3):
            e = bpy.data.objects.new(f"Crowd{k}", None)
            e.instance_type, e.instance_collection = "COLLECTION", coll
            e.location = (0.3 * k, 0.1 * k, 0.0)
            scene.collection.objects.link(e)
        bpy.context.view_layer.layer_collection.children["char"].exclude = True
    elif kind == "armature parenting":
        for name, x, turn in (("A", -0.2, 0.0), ("B", 0.2, math.pi)):
            ob, arm = _character(name, (x, 0.0, 0.0), turn)
            _armature_parenting(ob, arm)
    elif kind == "shape key":
        _character("A", (0.0, 0.0, 0.0))
        b, arm = _character("B", (0.6, 0.0, 0.0))
        b.modifiers.clear()
        world = b.matrix_world.copy()
        b.parent = None
        b.matrix_world = world
        bpy.data.objects.remove(arm)
        b.shape_key_add(name="Basis")
        lean = b.shape_key_add(name="lean")
        for i, v in enumerate(b.data.vertices):
            lean.data[i].co = v.co.copy()
            lean.data[i].co.x -= 0.6 * (v.co.z / 2.0) ** 2 * 2.0
        for f, value in ((1, 0.0), (FRAMES, 1.0)):
            lean.value = value
            lean.keyframe_insert("value", frame=f)
    elif kind == "corrective smooth":
        a, _ = _character("A", (0.0, 0.0, 0.0))
        b, _ = _character("B", (0.3, 0.0, 0.0), math.pi)
        for ob in (a, b):
            cs = ob.modifiers.new("CS", "CORRECTIVE_SMOOTH")
            cs.factor, cs.iterations = 1.0, 10
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def cli_report(path, out) -> dict:
    res = subprocess.run([sys.executable, "-m", "skin_collide", "scan", str(path), "--self",
                          "--ignore-rest-contacts", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text())


def pairs(doc: dict) -> dict:
    return {f["frame"]: {tuple(p) for p in f["pairs"]} for f in doc["frames"]}


@pytest.mark.parametrize("kind", ["instances", "armature parenting", "shape key",
                                  "corrective smooth"])
def test_panel_and_live_overlay_answer_as_the_scan(kind, tmp_path):
    from skin_collide.addon import session

    path = tmp_path / "shot.blend"
    build(kind, path)
    cli = cli_report(path, tmp_path / "cli.json")
    want = pairs(cli)
    assert any(want.values()), (kind, "the shot must collide")

    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    s = scene.skin_collide
    s.self_collision, s.ignore_rest_contacts = True, True
    for ob in scene.objects:
        if ob.visible_get():
            ob.select_set(True)
    bpy.context.view_layer.objects.active = next(ob for ob in scene.objects
                                                 if ob.visible_get())
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    ui = json.loads(s.report.as_string())
    assert ui["objects"] == cli["objects"], kind
    assert ui["refit"] == cli["refit"], kind
    assert pairs(ui) == want, kind
    for f in range(1, FRAMES + 1):
        scene.frame_set(f)
        assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
        live = session.live_result(scene)
        assert not live.error and not live.more_than, (kind, f, live.error)
        assert set(map(tuple, live.polygon_pairs)) == want[f], (kind, f)
