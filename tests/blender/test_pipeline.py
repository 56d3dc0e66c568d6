"""One pipeline (issue 9 §2): the panel's Scan Frame Range and the headless scan are the
same code (`addon.scanner.Scanner`), so they write the same report for the same scene and
settings, rest-contact filter and first hit included."""
import json
import subprocess
import sys

import pytest
from conftest import inside_blender_binary

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

if inside_blender_binary():
    pytest.skip("compares with the CLI in a subprocess (plain pytest run)",
                allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """Every test here runs with the add-on registered."""


@pytest.fixture(scope="module")
def demo_file(tmp_path_factory):
    """The demo's two crossing tubes, with a third standing in Left's sweep so that rest
    contacts exist (the third touches Left at rest)."""
    from skin_collide.addon import demo_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    a, b = demo_rig.build_demo_scene(rings=12, segments=8, frames=16)
    demo_rig.build_character("Third", location=(-0.3, 0.0, 0.0), swing=0.0,
                                 rings=12, segments=8, frames=16)
    path = tmp_path_factory.mktemp("pipe") / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return path


def without_ms(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    for f in doc["frames"]:
        f.pop("ms")
    return doc


def ui_report(path, self_collision, ignore_rest, first_hit):
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    s = scene.skin_collide
    s.self_collision, s.ignore_rest_contacts = self_collision, ignore_rest
    meshes = [ob for ob in scene.objects if ob.type == "MESH"]
    for ob in meshes:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = meshes[0]
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.scan(first_hit=first_hit) == {"FINISHED"}
    return json.loads(s.report.as_string())


def cli_report(path, tmp_path, self_collision, ignore_rest, first_hit):
    out = tmp_path / "cli.json"
    args = [sys.executable, "-m", "skin_collide", "scan", str(path), "--json", str(out)]
    args += ["--self"] if self_collision else []
    args += ["--ignore-rest-contacts"] if ignore_rest else []
    args += ["--first-hit"] if first_hit else []
    res = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("self_collision, ignore_rest, first_hit", [
    (True, True, False), (False, False, False), (True, False, True), (True, True, True)])
def test_panel_scan_and_headless_scan_write_the_same_report(demo_file, tmp_path,
                                                            self_collision, ignore_rest,
                                                            first_hit):
    ui = ui_report(demo_file, self_collision, ignore_rest, first_hit)
    cli = cli_report(demo_file, tmp_path, self_collision, ignore_rest, first_hit)
    # The one difference by design: the headless scan records the digest of the file it
    # read; the panel's scene in memory need not match any file, so it records none.
    import hashlib

    assert ui["source"].pop("sha256") is None
    assert cli["source"].pop("sha256") == hashlib.sha256(demo_file.read_bytes()).hexdigest()
    assert without_ms(ui) == without_ms(cli)
    pairs = sum(len(f["pairs"]) for f in cli["frames"])
    assert pairs > 0                         # the scene does collide: the test can fail
    if first_hit:
        assert all(len(f["pairs"]) <= 1 for f in cli["frames"])
        # A frame is reported colliding exactly when the full scan (same filters) has pairs.
        full = cli_report(demo_file, tmp_path, self_collision, ignore_rest, False)
        assert [bool(f["pairs"]) for f in cli["frames"]] == \
            [bool(f["pairs"]) for f in full["frames"]]


def test_rest_contacts_are_dropped_in_both(demo_file, tmp_path):
    """With the filter on, pairs present at rest are gone from both reports; without it
    they are there (so the filter has something to drop)."""
    on = cli_report(demo_file, tmp_path, True, True, False)
    off = cli_report(demo_file, tmp_path, True, False, False)
    n_on = sum(len(f["pairs"]) for f in on["frames"])
    n_off = sum(len(f["pairs"]) for f in off["frames"])
    assert n_on < n_off
