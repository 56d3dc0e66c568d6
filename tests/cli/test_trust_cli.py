"""What the run sees (issue 55, `addon.trust`): no verdict unless the scan sees the shot as
the artist does.

* A rig whose bones are driven by functions a registered text block of the file puts into
  `bpy.app.driver_namespace` (170° swings, scaled bones, 1 km from the origin). Opened
  untrusted, as a scan does by default, Blender refuses those drivers and the bones stay
  put: the scan stops with exit 2 and one line naming the drivers and `--enable-autoexec`
  (it answered exit 0 before). With `--enable-autoexec` every frame equals Blender's
  overlap of what it draws with the file trusted (tests/drawn_oracle.py, read apart from
  the product).
* A driver calling a function only an absent add-on defines: exit 2 naming it, trusted or
  not; `--allow-failed-drivers` checks the shot as it evaluates here (equal to Blender's
  overlap of that), and the report lists the driver.
* A linked character whose library is missing: alone, and beside a local character (exit 0
  before): exit 2 before any frame naming the library; `--allow-missing` checks the local
  one and lists the missing in the report.
* `doctor`, `snapshot`'s loading, `farm-commands` and `--jobs` carry the flags;
  `skin_collide.testing` takes them as keywords.
"""
from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

from conftest import inside_blender_binary  # noqa: E402
from drawn_oracle import reported, truth, verdict  # noqa: E402

if inside_blender_binary():
    pytest.skip("subprocess CLI tests need the pip bpy module (plain pytest run)",
                allow_module_level=True)

FRAMES = (1, 6)
FAR = (1000.0, -800.0, 300.0)

#: The rig's own Python, registered with the file (`Text.use_module`): strong swings and
#: scales, different per bone and frame.
DRIVER_TEXT = """import bpy, math

def swing(frame, i):
    return 2.97 * math.sin(0.9 * frame + 1.3 * i) if i >= 3 else 0.2 * math.sin(frame)

def bend(frame, i):
    return -(1.0 + 0.25 * math.sin(0.8 * frame)) * (1.0 + 0.2 * i) if i else 0.0

def grow(frame, i):
    return 1.0 + 0.45 * math.sin(0.7 * frame + i)

bpy.app.driver_namespace["swing"] = swing
bpy.app.driver_namespace["grow"] = grow
bpy.app.driver_namespace["bend"] = bend
"""


def run(*args):
    return subprocess.run([sys.executable, "-m", "skin_collide", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def one_error_line(res) -> str:
    assert res.returncode == 2, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), res.stderr[-2000:]
    # No traceback of ours (Blender prints its failing drivers' own).
    blocks = res.stderr.split("Traceback (most recent call last):")[1:]
    assert all(b.lstrip().startswith('File "<bpy driver>"') for b in blocks), res.stderr[-2000:]
    return lines[0]


def _drive(arm, expression_of) -> None:
    """Replace the bones' animation by scripted drivers (`expression_of(i, axis)`): X and Y
    (the twist) rotations, and the Y scale."""
    arm.animation_data_clear()
    for i, pb in enumerate(arm.pose.bones):
        pb.rotation_mode = "XYZ"
        for axis in (0, 1):
            fc = pb.driver_add("rotation_euler", axis)
            fc.driver.type = "SCRIPTED"
            fc.driver.expression = expression_of(i, axis)
        fc = pb.driver_add("scale", 1)
        fc.driver.type = "SCRIPTED"
        fc.driver.expression = f"grow(frame, {i})"


def _two_characters(offset=FAR):
    from skin_collide.addon import demo_rig

    a, b = demo_rig.build_demo_scene(rings=10, segments=6, frames=FRAMES[1])
    for ob in (a, b):
        ob.parent.location = tuple(x + o for x, o in zip(ob.parent.location, offset))
    return a, b


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """The shots, saved: drivers calling the file's functions, a driver calling an absent
    add-on's, and a linked character whose library is then moved away."""
    folder = tmp_path_factory.mktemp("trust")
    out = {}
    a, b = _two_characters()
    text = bpy.data.texts.new("rig_drivers.py")
    text.write(DRIVER_TEXT)
    text.use_module = True
    for ob, sign in ((a, 1), (b, -1)):
        # Bent towards each other, each bone twisted up to 170° about its axis.
        _drive(ob.parent, lambda i, axis, s=sign: (f"bend(frame, {i})" if axis == 0 else
                                                   f"{s} * swing(frame, {i})"))
    out["python"] = folder / "python_drivers.blend"
    bpy.context.scene.frame_set(FRAMES[0])
    bpy.ops.wm.save_as_mainfile(filepath=str(out["python"]))

    a, b = _two_characters()
    fc = a.parent.pose.bones[2].driver_add("rotation_euler", 0)
    fc.driver.type = "SCRIPTED"
    fc.driver.expression = "studio_tools_bend(frame) * 0.5"
    out["addon"] = folder / "addon_driver.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(out["addon"]))

    # A rig script whose function raises at the range's last frame only.
    a, b = _two_characters()
    text = bpy.data.texts.new("fragile.py")
    text.write("import bpy\n"
               "def fragile(frame):\n"
               "    if frame >= %d:\n"
               "        raise RuntimeError('rig script broke')\n"
               "    return 0.1 * frame\n"
               "bpy.app.driver_namespace['fragile'] = fragile\n" % FRAMES[1])
    text.use_module = True
    fc = b.parent.pose.bones[1].driver_add("rotation_euler", 0)
    fc.driver.type = "SCRIPTED"
    fc.driver.expression = "fragile(frame)"
    out["raises"] = folder / "raising_driver.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(out["raises"]))

    # A character library, linked beside a local character, then moved away.
    from skin_collide.addon import demo_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    demo_rig.build_character("Hero", location=(-0.45, 0.0, 0.0), rotation_z=-math.pi / 2,
                             rings=10, segments=6, frames=FRAMES[1])
    lib = folder / "hero_lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(lib))
    for name, local in (("linked_alone", False), ("linked_beside", True)):
        bpy.ops.wm.read_homefile(use_empty=True)
        with bpy.data.libraries.load(str(lib), link=True, relative=True) as (src, dst):
            dst.objects = ["Hero", "Hero_rig"]
        for ob in dst.objects:
            bpy.context.scene.collection.objects.link(ob)
        if local:
            demo_rig.build_character("Extra", location=(0.45, 0.0, 0.0),
                                     rotation_z=math.pi / 2, rings=10, segments=6,
                                     frames=FRAMES[1])
        bpy.context.scene.frame_start, bpy.context.scene.frame_end = FRAMES
        out[name] = folder / f"{name}.blend"
        bpy.ops.wm.save_as_mainfile(filepath=str(out[name]))
    out["library"] = lib
    return out


def _missing_library(shots) -> Path:
    """The library moved away (the shots that link it now miss it)."""
    lib = shots["library"]
    if lib.is_file():
        lib.rename(lib.with_name("hero_lib_moved.blend"))
    return lib


def _truth(path: Path, trusted: bool) -> dict:
    """Blender's overlap of what it draws, every frame, the file opened as asked."""
    bpy.ops.wm.open_mainfile(filepath=str(path), use_scripts=trusted)
    scene = bpy.context.scene
    out = {}
    for f in range(FRAMES[0], FRAMES[1] + 1):
        scene.frame_set(f)
        out[f] = truth(bpy.context.evaluated_depsgraph_get(), ["Left", "Right"], False)
    bpy.ops.wm.read_homefile(use_empty=True)
    return out


def _judge(doc: dict, truths: dict) -> int:
    """Every frame of the report against the truth: nothing missed, nothing beyond it that
    neither meets nor touches. The number of Blender's pairs."""
    by_frame = {f["frame"]: f["pairs"] for f in doc["frames"]}
    assert sorted(by_frame) == sorted(truths)
    total = 0
    for f, t in truths.items():
        v = verdict(t, reported(by_frame[f]))
        assert not v.missed and not v.extra and not v.unknown, (f, v.text())
        total += v.oracle
    return total


def test_python_drivers_untrusted_stop_the_scan_naming_them(shots, tmp_path):
    out = tmp_path / "untrusted.json"
    res = run("scan", shots["python"], "--frames", "%d:%d" % FRAMES, "--json", out)
    line = one_error_line(res)
    assert "driver(s) Blender could not evaluate" in line
    assert 'Left_rig pose.bones["bone_0"].rotation_euler[0]' in line
    assert "--enable-autoexec" in line and "--allow-failed-drivers" in line
    assert "and 31 more" in line                    # five named, the rest counted
    assert not out.exists() or json.loads(out.read_text())["frames"] == []
    # The same for doctor, the render-mode evaluation and the testing helper.
    line = one_error_line(run("doctor", shots["python"]))
    assert "--enable-autoexec" in line
    line = one_error_line(run("scan", shots["python"], "--frames", "%d:%d" % FRAMES,
                              "--as-rendered"))
    assert 'Left_rig pose.bones["bone_0"].rotation_euler[0]' in line
    from skin_collide import testing

    with pytest.raises(ValueError, match="enable_autoexec=True"):
        testing.collisions(str(shots["python"]), frames=FRAMES, self_collision=False)


def test_python_drivers_trusted_equal_blender_trusted(shots, tmp_path):
    out = tmp_path / "trusted.json"
    res = run("scan", shots["python"], "--frames", "%d:%d" % FRAMES, "--json", out,
              "--enable-autoexec")
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["autoexec"] is True and doc["failed_drivers"] == []
    assert doc["source"]["filters"]["autoexec"] is True
    truths = _truth(shots["python"], trusted=True)
    n = _judge(doc, truths)
    # The drivers matter: untrusted, Blender draws far fewer pairs on these frames.
    still = _truth(shots["python"], trusted=False)
    assert n > 0 and n != sum(len(t.pairs) for t in still.values())
    from skin_collide import testing

    # Trusted and as rendered (the same surfaces here): the same pairs.
    rendered = tmp_path / "rendered.json"
    res = run("scan", shots["python"], "--frames", "%d:%d" % FRAMES, "--json", rendered,
              "--enable-autoexec", "--as-rendered")
    assert res.returncode == 0, res.stderr[-2000:]
    assert [f["pairs"] for f in json.loads(rendered.read_text())["frames"]] == \
        [f["pairs"] for f in doc["frames"]]
    eps = testing.collisions(str(shots["python"]), frames=FRAMES, self_collision=False,
                             ignore_rest_contacts=False, enable_autoexec=True)
    frames = {f for e in eps for f in range(e.start, e.end + 1)}
    assert frames == {f["frame"] for f in doc["frames"] if f["pairs"]}


def test_a_driver_of_an_absent_addon(shots, tmp_path):
    for trusted in ((), ("--enable-autoexec",)):
        line = one_error_line(run("scan", shots["addon"], "--frames", "%d:%d" % FRAMES,
                                  *trusted))
        assert "studio_tools_bend" in line and "add-on" in line
        assert 'Left_rig pose.bones["bone_2"].rotation_euler[0]' in line
    out = tmp_path / "allowed.json"
    res = run("scan", shots["addon"], "--frames", "%d:%d" % FRAMES, "--json", out,
              "--allow-failed-drivers")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "--allow-failed-drivers" in res.stdout and "bone_2" in res.stdout
    doc = json.loads(out.read_text())
    assert doc["autoexec"] is False
    assert doc["failed_drivers"] == [["Left_rig", 'pose.bones["bone_2"].rotation_euler[0]',
                                      "studio_tools_bend(frame) * 0.5"]]
    assert _judge(doc, _truth(shots["addon"], trusted=False)) > 0


def test_a_missing_library_alone_and_beside_a_local_character(shots, tmp_path):
    _missing_library(shots)
    for name in ("linked_alone", "linked_beside"):
        out = tmp_path / f"{name}.json"
        line = one_error_line(run("scan", shots[name], "--json", out, "--self"))
        assert "linked data did not load" in line and "hero_lib.blend" in line
        assert "Hero" in line and "--allow-missing" in line
        assert not out.exists() or json.loads(out.read_text())["frames"] == []
    line = one_error_line(run("doctor", shots["linked_beside"]))
    assert "hero_lib.blend" in line
    out = tmp_path / "allowed.json"
    res = run("scan", shots["linked_beside"], "--json", out, "--self", "--allow-missing")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "not checked (--allow-missing)" in res.stdout
    doc = json.loads(out.read_text())
    assert doc["objects"] == ["Extra"]
    (miss,) = doc["missing"]
    assert miss["path"].endswith("hero_lib.blend") and "Hero [hero_lib.blend]" in miss["objects"]
    from skin_collide import testing

    with pytest.raises(ValueError, match="allow_missing=True"):
        testing.collisions(str(shots["linked_beside"]))
    testing.collisions(str(shots["linked_beside"]), allow_missing=True)


def test_the_flags_reach_farms_and_jobs(shots, tmp_path):
    res = run("farm-commands", shots["python"], "--frames", "1:6", "--chunk", "3",
              "--out", tmp_path, "--enable-autoexec", "--allow-failed-drivers=no",
              "--allow-missing=yes")
    assert res.returncode == 0, res.stderr
    scans = [shlex.split(x) for x in res.stdout.splitlines() if " scan " in x]
    assert len(scans) == 2
    for argv in scans:
        assert "--enable-autoexec" in argv and "--allow-missing" in argv
        assert "--allow-failed-drivers" not in argv
    out = tmp_path / "jobs.json"
    res = run("scan", shots["python"], "--frames", "%d:%d" % FRAMES, "--json", out,
              "--enable-autoexec", "--jobs", "2")
    assert res.returncode == 0, res.stderr[-2000:]
    one = tmp_path / "one.json"
    assert run("scan", shots["python"], "--frames", "%d:%d" % FRAMES, "--json", one,
               "--enable-autoexec").returncode == 0
    a, b = json.loads(out.read_text()), json.loads(one.read_text())
    assert [f["pairs"] for f in a["frames"]] == [f["pairs"] for f in b["frames"]]
    assert a["autoexec"] is True
    line = one_error_line(run("scan", shots["python"], "--frames", "%d:%d" % FRAMES,
                              "--jobs", "2"))
    assert "--enable-autoexec" in line


def test_a_driver_that_raises_is_one_line_and_keeps_the_report(shots, tmp_path):
    """Trusted, the script's function raises at one frame: exit 2, one line naming the
    driver, whether the characters' sampling met it or the scan did (then the report of
    the frames done is kept, with why there is no verdict)."""
    out = tmp_path / "raises.json"
    res = run("scan", shots["raises"], "--frames", "%d:%d" % FRAMES, "--json", out,
              "--enable-autoexec")
    line = one_error_line(res)
    assert 'Right_rig pose.bones["bone_1"].rotation_euler[0] (fragile(frame))' in line
    assert "--allow-failed-drivers" in line
    if out.exists():
        doc = json.loads(out.read_text())
        assert doc["frames"] == [] or "driver(s) Blender could not evaluate" in doc["error"]
