"""`--scene NAME` (issue 40, item 5): which scene of a .blend the headless commands check.

One generated .blend with four scenes, saved three times (on different scenes):

* "Layout" (the first): two characters far apart, never touching;
* "Shot": the demo's two crossing tubes "Left" and "Right", view layers "Anim" (its first)
  and "Lighting";
* "Retake": the same four objects of "Shot" linked into another scene (the same objects,
  the same animation, the same pairs: only the scene differs);
* "Empty": no character.

`scan --scene Shot` finds the crossings that the default scan of the file saved on
"Layout" does not; reports name their scene and view layer; `merge` refuses chunks of
different scenes; `doctor`, `snapshot`, `farm-commands` (and the Flamenco job type and
the OpenJD template) and `skin_collide.testing` take the scene too. `addon.scenes.use` is
checked in-process with and without a window: the context's scene, its depsgraph and
`frame_set` follow the chosen scene.
"""
import contextlib
import json
import math
import shlex
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

from conftest import inside_blender_binary  # noqa: E402
from test_farm import without_ms  # noqa: E402

if inside_blender_binary():
    pytest.skip("subprocess CLI tests need the pip bpy module (plain pytest run)",
                allow_module_level=True)

SMALL = dict(rings=10, segments=6, frames=12)
SCENES = ["Layout", "Shot", "Retake", "Empty"]


def run(*args):
    return subprocess.run([sys.executable, "-m", "skin_collide", *map(str, args)],
                          capture_output=True, text=True)


def one_error_line(res) -> str:
    assert res.returncode == 2, (res.stdout[-2000:], res.stderr[-2000:])
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]




def _build(folder):
    """The four scenes, saved on "Layout" (two_scenes.blend), on "Empty" (on_empty.blend)
    and on "Shot" with its second view layer in the window (on_shot.blend)."""
    from skin_collide.addon import demo_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    window = bpy.context.window
    layout = bpy.context.scene
    layout.name = "Layout"
    demo_rig.build_character("A", location=(-3.0, 0, 0), rotation_z=-math.pi / 2, **SMALL)
    demo_rig.build_character("B", location=(3.0, 0, 0), rotation_z=math.pi / 2, **SMALL)
    shot = bpy.data.scenes.new("Shot")
    window.scene = shot
    shot.view_layers[0].name = "Anim"
    shot.view_layers.new("Lighting")
    left, left_rig = demo_rig.build_character("Left", location=(-0.45, 0, 0),
                                              rotation_z=-math.pi / 2, **SMALL)
    right, right_rig = demo_rig.build_character("Right", location=(0.45, 0, 0),
                                                rotation_z=math.pi / 2, **SMALL)
    retake = bpy.data.scenes.new("Retake")
    for ob in (left_rig, left, right_rig, right):
        retake.collection.objects.link(ob)
    retake.frame_start, retake.frame_end = 1, SMALL["frames"]
    bpy.data.scenes.new("Empty")
    paths = {}
    for key, scene, layer in (("two", "Layout", None), ("empty", "Empty", None),
                              ("shot", "Shot", "Lighting")):
        window.scene = bpy.data.scenes[scene]
        if layer:
            window.view_layer = bpy.data.scenes[scene].view_layers[layer]
        paths[key] = folder / {"two": "two_scenes.blend", "empty": "on_empty.blend",
                               "shot": "on_shot.blend"}[key]
        bpy.ops.wm.save_as_mainfile(filepath=str(paths[key]))
    bpy.ops.wm.read_homefile(use_empty=True)
    return paths


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("scenes"))


@pytest.fixture(scope="module")
def shot_scan(files, tmp_path_factory):
    out = tmp_path_factory.mktemp("shot_scan") / "shot.json"
    res = run("scan", files["two"], "--scene", "Shot", "--json", out)
    return res, out


# -- scan ---------------------------------------------------------------------------------

def test_scan_scene_finds_the_crossings_of_that_scene(shot_scan):
    res, out = shot_scan
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.splitlines()[0] == "scene: Shot (view layer Anim)"
    doc = json.loads(out.read_text())
    assert (doc["scene"], doc["view_layer"]) == ("Shot", "Anim")
    assert list(doc)[:3] == ["scene", "view_layer", "objects"]
    assert doc["objects"] == ["Left", "Right"]
    assert [f["frame"] for f in doc["frames"]] == list(range(1, 13))     # Shot's range
    assert doc["episodes"] and any(f["pairs"] for f in doc["frames"])


def test_the_default_scan_checks_the_scene_the_file_was_saved_on(files, tmp_path):
    out = tmp_path / "default.json"
    res = run("scan", files["two"], "--json", out)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.splitlines()[0] == "scene: Layout (view layer ViewLayer)"
    doc = json.loads(out.read_text())
    assert (doc["scene"], doc["view_layer"]) == ("Layout", "ViewLayer")
    assert doc["objects"] == ["A", "B"] and doc["episodes"] == []


@pytest.mark.parametrize("scene, layer", [(None, "Lighting"), ("Shot", "Lighting"),
                                          ("Layout", "ViewLayer")])
def test_the_view_layer_is_the_windows_in_its_scene_else_the_first(files, tmp_path, scene,
                                                                    layer):
    """on_shot.blend was saved with Shot's second view layer in the window: that one is
    used for Shot; another scene gets its first."""
    out = tmp_path / "r.json"
    res = run("scan", files["shot"], *(["--scene", scene] if scene else []), "--frames", "5:6",
              "--json", out)
    assert res.returncode == 0, res.stderr[-2000:]
    want = scene or "Shot"
    assert res.stdout.splitlines()[0] == f"scene: {want} (view layer {layer})"
    doc = json.loads(out.read_text())
    assert (doc["scene"], doc["view_layer"]) == (want, layer)


def test_an_unknown_scene_is_one_line_listing_the_scenes(files, tmp_path):
    for command in (["scan", files["two"], "--json", tmp_path / "x.json"],
                    ["doctor", files["two"]],
                    ["snapshot", files["two"], "--frame", "1", "--png", tmp_path / "x.png"]):
        res = run(*command, "--scene", "Nope")
        line = one_error_line(res)
        assert "no scene named 'Nope'" in line
        assert "its scenes: 'Empty', 'Layout', 'Retake', 'Shot'" in line     # Blender's order
        assert "scene:" not in res.stdout
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("key, args", [("empty", []), ("two", ["--scene", "Empty"])])
def test_no_character_names_the_scenes_that_have_some(files, tmp_path, key, args):
    res = run("scan", files[key], *args, "--json", tmp_path / "x.json")
    line = one_error_line(res)
    assert "no character in scene 'Empty' (view layer 'ViewLayer')" in line
    # Retake links Shot's characters: it has them too.
    assert "the scenes 'Layout', 'Retake', 'Shot' have characters: pass --scene NAME" in line


# -- merge and --jobs -----------------------------------------------------------------------

def test_merge_refuses_chunks_of_different_scenes(files, tmp_path):
    parts = {}
    for scene, frames in (("Shot", "1:6"), ("Shot", "7:12"), ("Retake", "7:12")):
        parts[scene, frames] = tmp_path / f"{scene}_{frames.replace(':', '_')}.json"
        res = run("scan", files["two"], "--scene", scene, "--frames", frames,
                  "--json", parts[scene, frames])
        assert res.returncode == 0, res.stderr[-2000:]
    a, b, c = (json.loads(parts[k].read_text()) for k in parts)
    # The same objects, file and settings: only the scene tells Retake's chunk apart.
    assert a["objects"] == c["objects"] and a["source"] == c["source"]
    assert [f["pairs"] for f in b["frames"]] == [f["pairs"] for f in c["frames"]]
    res = run("merge", parts["Shot", "1:6"], parts["Retake", "7:12"], "--json",
              tmp_path / "m.json")
    line = one_error_line(res)
    assert "is a scan of scene 'Retake' (view layer 'ViewLayer')" in line
    assert "of scene 'Shot' (view layer 'Anim'): reports of different scenes" in line
    assert not (tmp_path / "m.json").exists()
    res = run("merge", parts["Shot", "1:6"], parts["Shot", "7:12"], "--json", tmp_path / "m.json")
    assert res.returncode == 0, res.stderr
    merged = json.loads((tmp_path / "m.json").read_text())
    assert (merged["scene"], merged["view_layer"]) == ("Shot", "Anim")
    assert list(merged)[:3] == ["scene", "view_layer", "objects"]


def test_merge_refuses_other_view_layers_and_reports_without_a_scene():
    from skin_collide.core.report import merge

    def doc(frame, **top):
        return {**top, "objects": ["A", "B"], "refit": {"A": "sphere-tree", "B": "sphere-tree"},
                "complete": True, "interrupted": False, "frames_requested": 1,
                "frames": [{"frame": frame, "pairs": [], "ms": 1.0}], "episodes": [],
                "source": {"file": "x.blend", "method": "sphere-tree", "self": False,
                           "first_hit": False,
                           "filters": {"ignore_rest_contacts": False, "allow": None}}}

    shot = dict(scene="Shot", view_layer="Anim")
    assert merge.merge_reports([doc(1, **shot), doc(2, **shot)])["scene"] == "Shot"
    assert "scene" not in merge.merge_reports([doc(1), doc(2)])        # older reports
    with pytest.raises(merge.MergeError, match="reports of different view layers"):
        merge.merge_reports([doc(1, **shot), doc(2, scene="Shot", view_layer="Lighting")])
    with pytest.raises(merge.MergeError, match="an unnamed scene .*reports of different scenes"):
        merge.merge_reports([doc(1, **shot), doc(2)])


def test_jobs_workers_scan_the_chosen_scene(files, shot_scan, tmp_path):
    from skin_collide import cli

    args = cli.build_parser().parse_args(["scan", "x.blend", "--scene", "Shot", "--self"])
    assert cli._worker_flags(args)[:2] == ["--scene", "Shot"]
    _, whole = shot_scan
    out = tmp_path / "jobs.json"
    res = run("scan", files["two"], "--scene", "Shot", "--jobs", "2", "--json", out)
    assert res.returncode == 0, res.stderr[-2000:]
    if "worker processes" not in res.stdout:
        pytest.skip("--jobs 2 was capped to one process on this machine")
    assert "scene: Shot (view layer Anim)" in res.stdout.splitlines()
    assert without_ms(json.loads(out.read_text())) == without_ms(json.loads(whole.read_text()))


# -- doctor, snapshot -------------------------------------------------------------------------

def test_doctor_scene_measures_that_scenes_meshes(files):
    res = run("doctor", files["two"], "--scene", "Shot")
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert lines[1] == "scene: Shot (view layer Anim)"
    assert [ln for ln in lines if ln.startswith("mesh: ")] == ["mesh: Left", "mesh: Right"]
    # Measured against Blender's evaluation of Shot's frames: only there are the meshes posed.
    devs = [float(ln.split()[1]) for ln in lines if ln.startswith("max_deviation: ")]
    assert len(devs) == 2 and max(devs) < 1e-4, res.stdout
    res = run("doctor", files["two"])
    assert res.returncode == 0, res.stderr[-2000:]
    assert [ln for ln in res.stdout.splitlines() if ln.startswith("mesh: ")] == ["mesh: A",
                                                                                 "mesh: B"]


def test_snapshot_scene(files, tmp_path):
    from test_viewport_gpu import mesa_egl_present

    if not mesa_egl_present():
        pytest.skip("Mesa's EGL is not installed (libegl-mesa0 libgl1-mesa-dri libgbm1)")
    res = run("scan", files["two"], "--scene", "Shot", "--json", tmp_path / "s.json")
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads((tmp_path / "s.json").read_text())
    worst = doc["episodes"][0]["worst_frame"]
    res = run("snapshot", files["two"], "--scene", "Shot", "--frame", worst, "--png",
              tmp_path / "s.png")
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert lines[0] == "scene: Shot (view layer Anim)"
    n = int(lines[1].split(": ")[1].split()[0])
    assert n == doc["episodes"][0]["worst_pairs"] > 0
    assert (tmp_path / "s.png").stat().st_size > 0


# -- farm-commands, the Flamenco job type, the OpenJD template ------------------------------

def test_farm_commands_pass_the_scene_to_every_chunk(files, shot_scan, tmp_path):
    res = run("farm-commands", files["two"], "--frames", "1:12", "--chunk", "6", "--scene",
              "Shot", "--self=no", "--out", tmp_path)
    assert res.returncode == 0, res.stderr
    lines = [shlex.split(ln) for ln in res.stdout.splitlines()]
    assert len(lines) == 3
    for line in lines[:-1]:
        assert line[3] == "scan" and line[6:8] == ["--scene", "Shot"], line
    assert lines[-1][3] == "merge" and "--scene" not in lines[-1]
    # The job template's spelling: an empty --scene= is the saved scene.
    res = run("farm-commands", files["two"], "--frames", "1:12", "--chunk", "6", "--scene=",
              "--out", tmp_path)
    assert res.returncode == 0 and "--scene" not in res.stdout
    # Running the chunks and the merge: the report of `scan --scene Shot`.
    base = ["farm-commands", files["two"], "--frames=1:12", "--chunk=6", "--scene=Shot",
            f"--out={tmp_path}"]
    for chunk in ("1-6", "7-12", "merge"):
        res = run(*base, f"--run={chunk}")
        assert res.returncode == 0, res.stderr[-2000:]
    merged = json.loads((tmp_path / "report.json").read_text())
    _, whole = shot_scan
    assert without_ms(merged) == without_ms(json.loads(whole.read_text()))


def test_flamenco_job_type_passes_the_scene(tmp_path):
    from test_farm import FLAMENCO_SETTINGS, compile_flamenco_job, flamenco_lines

    from skin_collide import farm_commands

    settings = dict(FLAMENCO_SETTINGS, frames="1-12", chunk_size=6, scene="Shot")
    job = compile_flamenco_job(settings)
    want = farm_commands.plan("/shots/sh010.blend", 1, 12, 6, "/farm/out",
                              farm_commands.scan_flags((), True, "sphere-tree", False, True,
                                                       None, scene="Shot"))
    assert flamenco_lines(job) == [farm_commands.command_line("/opt/py/bin/python", a)
                                   for a in want.values()]
    assert all("--scene" in line for line in flamenco_lines(job)[:-1])
    setting = {s["key"]: s for s in job["jobType"]["settings"]}["scene"]
    assert setting["default"] == "" and setting["eval"] == "C.scene.name_full"
    job = compile_flamenco_job(dict(settings, scene=""))
    assert not any("--scene" in line for line in flamenco_lines(job))


def test_openjd_template_passes_its_scene_parameter():
    from test_farm import TEMPLATE

    text = TEMPLATE.read_text()
    assert "  - name: Scene\n    type: STRING\n    default: \"\"\n" in text
    # Both steps (Scan and Merge) build the same plan, so both pass it.
    assert text.count('- "--scene={{Param.Scene}}"') == 2


# -- skin_collide.testing ---------------------------------------------------------------------

@pytest.fixture
def empty_after():
    yield
    bpy.ops.wm.read_homefile(use_empty=True)


def test_testing_collisions_scene(files, empty_after):
    from skin_collide import testing

    eps = testing.collisions(files["two"], scene="Shot", self_collision=False)
    assert eps and {(e.a, e.b) for e in eps} == {("Left", "Right")}
    assert bpy.context.scene.name == "Layout"                 # the window's scene is put back
    assert testing.collisions(files["two"], self_collision=False) == []
    with pytest.raises(AssertionError, match="collision episode"):
        testing.assert_no_collisions(files["two"], scene="Shot", self_collision=False)
    testing.assert_no_collisions(files["two"], scene="Layout", self_collision=False)
    with pytest.raises(ValueError, match="no scene named 'Nope'.*'Layout', 'Retake', 'Shot'"):
        testing.collisions(files["two"], scene="Nope")
    with pytest.raises(ValueError, match="no character in scene 'Empty'.*'Layout', 'Retake', "
                                         "'Shot' have characters: pass scene=NAME"):
        testing.collisions(files["empty"])
    # Objects of another scene than the window's, with that scene.
    bpy.ops.wm.open_mainfile(filepath=str(files["two"]))
    shot = bpy.data.scenes["Shot"]
    obs = [bpy.data.objects["Left"], bpy.data.objects["Right"]]
    assert testing.collisions(obs, scene="Shot", self_collision=False) == eps
    assert bpy.context.scene.name == "Layout" and shot.frame_current == 1


# -- addon.scenes.use: the context follows the chosen scene -----------------------------------

def _evaluated_left(scene):
    """Left's evaluated vertex positions at the context's current frame."""
    dg = bpy.context.evaluated_depsgraph_get()
    assert dg.scene == scene
    me = bpy.data.objects["Left"].evaluated_get(dg).to_mesh()
    try:
        co = np.empty(3 * len(me.vertices), np.float64)
        me.vertices.foreach_get("co", co)
    finally:
        bpy.data.objects["Left"].evaluated_get(dg).to_mesh_clear()
    return co


@pytest.mark.parametrize("window", ["window", "no window"])
def test_scenes_use_makes_the_scene_the_contexts(files, empty_after, window):
    from skin_collide.addon import extract, scenes

    bpy.ops.wm.open_mainfile(filepath=str(files["two"]))
    layout, shot = bpy.data.scenes["Layout"], bpy.data.scenes["Shot"]
    outer = (bpy.context.temp_override(window=None) if window == "no window"
             else contextlib.nullcontext())
    with outer:
        assert (bpy.context.window is None) == (window == "no window")
        assert bpy.context.scene == layout
        assert extract.character_meshes(shot.objects)[0] == []     # Shot is not evaluated
        with scenes.use(shot) as (scene, layer):
            assert (scene, layer.name) == (shot, "Anim")
            assert bpy.context.scene == shot and bpy.context.view_layer.name == "Anim"
            assert [ob.name for ob in extract.character_meshes(shot.objects)[0]] == \
                ["Left", "Right"]
            shot.frame_set(1)
            rest = _evaluated_left(shot)
            shot.frame_set(6)                                        # mid-animation
            posed = _evaluated_left(shot)
            assert np.abs(posed - rest).max() > 0.1
        assert bpy.context.scene == layout
        assert (scenes.choose(None)[0], scenes.choose("Retake")[1].name) == (layout, "ViewLayer")
