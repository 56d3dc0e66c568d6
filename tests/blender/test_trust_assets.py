"""What the run sees (issue 55), held out on real characters (../shared/assets, made by
others):

* MakeHuman given a studio-style rig script, a registered text block whose functions drive
  the left arm through the torso (170° swings, a scaled forearm), the armature 1 km from
  the origin. Untrusted, the scan stops (exit 2, the drivers named); trusted
  (`--enable-autoexec`), every frame's self pairs equal Blender's overlap of what it draws
  with the file trusted (tests/drawn_oracle.py), and differ from what it draws untrusted.
* MakeHuman linked from a library that is then gone, beside a local Cesium Man: exit 2
  naming the library; `--allow-missing` checks Cesium Man, equal to Blender's overlap.
"""
from __future__ import annotations

import contextlib
import io
import json

import pytest
from conftest import ASSET_FILES, ASSETS
from drawn_oracle import reported, truth, verdict

# In-process CLI runs read the add-on's properties: registered (and unregistered after) by the
# fixture, not left behind by the CLI.
pytestmark = [pytest.mark.asset, pytest.mark.blender, pytest.mark.usefixtures("registered_addon")]
bpy = pytest.importorskip("bpy")

ASSET = "makehuman_default.blend"
FRAMES = (10, 13)
RIG_SCRIPT = """import bpy, math

def sweep(frame, k):
    return 2.97 * math.sin(0.5 * frame + k)

def stretch(frame):
    return 1.0 + 0.5 * math.sin(0.3 * frame)

bpy.app.driver_namespace["sweep"] = sweep
bpy.app.driver_namespace["stretch"] = stretch
"""


def _scan(argv: list[str]) -> tuple[int, str, str]:
    """`python -m skin_collide ARGV` in this process: exit code, stdout, stderr."""
    from skin_collide import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def shot(tmp_path_factory):
    if ASSET not in ASSET_FILES:
        pytest.skip(f"{ASSET} missing")
    from skin_collide.addon import files

    files.load_file(str(ASSETS / ASSET))
    arm = bpy.data.objects["makehuman_armature"]
    arm.location = (arm.location.x + 1000.0, arm.location.y - 700.0, arm.location.z + 200.0)
    text = bpy.data.texts.new("studio_rig.py")
    text.write(RIG_SCRIPT)
    text.use_module = True
    for bone, k in (("upperarm01.L", 0.0), ("lowerarm01.L", 1.1), ("upperarm01.R", 2.3)):
        pb = arm.pose.bones[bone]
        pb.rotation_mode = "XYZ"
        for axis in (0, 2):
            fc = pb.driver_add("rotation_euler", axis)
            fc.driver.type = "SCRIPTED"
            fc.driver.expression = f"sweep(frame, {k + axis})"
    fc = arm.pose.bones["lowerarm01.L"].driver_add("scale", 1)
    fc.driver.type = "SCRIPTED"
    fc.driver.expression = "stretch(frame)"
    path = tmp_path_factory.mktemp("trust_assets") / "makehuman_driven.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


def _truth(path, trusted: bool) -> dict:
    bpy.ops.wm.open_mainfile(filepath=str(path), use_scripts=trusted)
    scene = bpy.context.scene
    out = {}
    for f in range(FRAMES[0], FRAMES[1] + 1):
        scene.frame_set(f)
        out[f] = truth(bpy.context.evaluated_depsgraph_get(), ["makehuman_body"], True)
    bpy.ops.wm.read_homefile(use_empty=True)
    return out


def test_makehuman_driven_by_its_rig_script(shot, tmp_path):
    report = tmp_path / "untrusted.json"
    rc, out, err = _scan(["scan", str(shot), "--self", "--frames", "%d:%d" % FRAMES,
                          "--json", str(report)])
    assert rc == 2, (out[-1500:], err[-1500:])
    line = [x for x in err.splitlines() if x.startswith("skin_collide: error:")]
    assert len(line) == 1 and "makehuman_armature" in line[0]
    assert "--enable-autoexec" in line[0]

    report = tmp_path / "trusted.json"
    rc, out, err = _scan(["scan", str(shot), "--self", "--frames", "%d:%d" % FRAMES,
                          "--json", str(report), "--enable-autoexec"])
    assert rc == 0, (out[-1500:], err[-1500:])
    doc = json.loads(report.read_text())
    assert doc["autoexec"] is True and not doc["failed_drivers"]
    by_frame = {f["frame"]: f["pairs"] for f in doc["frames"]}
    truths = _truth(shot, trusted=True)
    still = _truth(shot, trusted=False)
    differ = 0
    for f, t in truths.items():
        v = verdict(t, reported(by_frame[f]))
        assert not v.missed and not v.extra and not v.unknown, (f, v.text())
        differ += t.pairs != still[f].pairs
    assert differ == len(truths), "the rig script's drivers must change what Blender draws"
    print({f: len(t.pairs) for f, t in truths.items()})


def test_a_linked_makehuman_gone_beside_a_local_cesium_man(tmp_path):
    if ASSET not in ASSET_FILES or "cesium_man.glb" not in ASSET_FILES:
        pytest.skip("assets missing")
    import shutil

    from skin_collide.addon import files

    lib = tmp_path / "characters" / "makehuman_lib.blend"
    lib.parent.mkdir()
    shutil.copyfile(ASSETS / ASSET, lib)
    files.load_file(str(ASSETS / "cesium_man.glb"))
    scene = bpy.context.scene
    with bpy.data.libraries.load(str(lib), link=True, relative=True) as (src, dst):
        dst.objects = ["makehuman_body", "makehuman_armature"]
    for ob in dst.objects:
        scene.collection.objects.link(ob)
        ob.location.x += 2.0 if ob.type == "ARMATURE" else 0.0
    shot = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(shot))
    names = [o.name_full for o in scene.objects if o.type == "MESH" and o.library is None]
    bpy.ops.wm.read_homefile(use_empty=True)
    lib.unlink()                                  # the farm node's mount has no such file

    rc, out, err = _scan(["scan", str(shot), "--self", "--frames", "1:2"])
    line = [x for x in err.splitlines() if x.startswith("skin_collide: error:")]
    assert rc == 2 and len(line) == 1, (out[-1500:], err[-1500:])
    assert "makehuman_lib.blend" in line[0] and "makehuman_body" in line[0]
    report = tmp_path / "allowed.json"
    rc, out, err = _scan(["scan", str(shot), "--self", "--frames", "1:2", "--allow-missing",
                          "--json", str(report)])
    assert rc == 0, (out[-1500:], err[-1500:])
    doc = json.loads(report.read_text())
    assert doc["objects"] == names and len(doc["missing"]) == 1
    bpy.ops.wm.open_mainfile(filepath=str(shot))
    for f in (1, 2):
        bpy.context.scene.frame_set(f)
        t = truth(bpy.context.evaluated_depsgraph_get(), names, True)
        pairs = next(x["pairs"] for x in doc["frames"] if x["frame"] == f)
        v = verdict(t, reported(pairs))
        assert not v.missed and not v.extra and not v.unknown, (f, v.text())
    bpy.ops.wm.read_homefile(use_empty=True)
