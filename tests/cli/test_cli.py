"""`python -m skin_collide ...` as a pipeline script calls it."""
import re

import pytest

pytestmark = pytest.mark.blender
pytest.importorskip("bpy")

from cli_helpers import make_demo, run  # noqa: E402
from conftest import inside_blender_binary  # noqa: E402

if inside_blender_binary():
    pytest.skip("subprocess CLI tests need the pip bpy module (plain pytest run)",
                allow_module_level=True)


def deviations(stdout: str) -> list[float]:
    return [float(x) for x in re.findall(r"^max_deviation: (\S+)$", stdout, re.M)]


@pytest.fixture(scope="module")
def demo_blend(tmp_path_factory):
    return make_demo(tmp_path_factory.mktemp("demo"))


def test_demo_writes_a_blend_and_doctors_both_characters(demo_blend):
    _, res = demo_blend
    assert "mesh: Left" in res.stdout and "mesh: Right" in res.stdout
    devs = deviations(res.stdout)
    assert len(devs) == 2 and max(devs) < 1e-5


def test_doctor_reports_the_facts_a_rigger_needs(demo_blend):
    path, _ = demo_blend
    res = run("doctor", str(path), "--object", "Left", "--frames", "1:6")
    assert res.returncode == 0, res.stderr
    for key in ("vertices:", "triangles:", "bones:", "max_influences:", "weight_sums:",
                "preserve_volume: off", "shape_keys: 0", "modifiers_before: none",
                "modifiers_after: none", "bbones: none", "refit: sphere-tree: Sphere tree, on-demand LBS refit"):
        assert key in res.stdout, key
    assert "frames: frames 1-6" in res.stdout
    assert len(deviations(res.stdout)) == 1


@pytest.mark.asset
def test_doctor_on_a_shared_asset(assets_dir):
    res = run("doctor", str(assets_dir / "makehuman_default.blend"))
    assert res.returncode == 0, res.stderr
    assert "max_influences: 9" in res.stdout
    assert "off by >1e-3" in res.stdout
    assert deviations(res.stdout)[0] < 1e-3  # metres, on a 1.7 m human


@pytest.mark.parametrize("args, message", [
    (("doctor", "/nonexistent/file.blend"), "no such file"),
    (("doctor", __file__), "unsupported file type"),
    (("doctor", "{demo}", "--object", "Nobody"), "no object named 'Nobody'"),
    (("doctor", "{demo}", "--object", "Left_rig"), "object 'Left_rig' is not a mesh"),
    (("doctor", "{demo}", "--frames", "9:3"), "empty frame range"),
    (("doctor", "{demo}", "--frames", "x"), "expects START:END"),
])
def test_bad_input_is_one_line_and_exit_2(demo_blend, args, message):
    path, _ = demo_blend
    res = run(*[a.replace("{demo}", str(path)) for a in args])
    assert res.returncode == 2
    err = [line for line in res.stderr.splitlines() if line.startswith("skin_collide: error:")]
    assert len(err) == 1 and message in err[0], res.stderr


def test_corrupt_blend_is_a_clean_error(tmp_path):
    bad = tmp_path / "broken.blend"
    bad.write_bytes(b"this is not a blend file")
    res = run("doctor", str(bad))
    assert res.returncode == 2
    assert "skin_collide: error:" in res.stderr


def test_file_without_skinned_mesh(tmp_path):
    import bpy

    bpy.ops.wm.read_homefile(use_empty=True)
    me = bpy.data.meshes.new("m")
    me.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [], [(0, 1, 2)])
    bpy.context.scene.collection.objects.link(bpy.data.objects.new("m", me))
    path = tmp_path / "plain.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    res = run("doctor", str(path))
    assert res.returncode == 2
    assert "no character in" in res.stderr and "nothing moves it" in res.stderr, res.stderr


def test_scan_writes_the_documented_json(demo_blend, tmp_path):
    import json

    path, _ = demo_blend
    out = tmp_path / "scan.json"
    res = run("scan", str(path), "--frames", "1:12", "--json", str(out))
    assert res.returncode == 0, res.stderr
    data = json.loads(out.read_text())
    assert data["objects"] == ["Left", "Right"]
    assert [f["frame"] for f in data["frames"]] == list(range(1, 13))
    for fr in data["frames"]:
        assert isinstance(fr["ms"], float)
        for a, pa, b, pb in fr["pairs"]:
            assert {a, b} <= {"Left", "Right"} and a != b
            assert isinstance(pa, int) and isinstance(pb, int)
        assert len({tuple(p) for p in fr["pairs"]}) == len(fr["pairs"])
    assert any(fr["pairs"] for fr in data["frames"]), "the demo characters collide mid-way"
    assert "frame" in res.stdout and "#" in res.stdout       # progress lines


def test_scan_modes_agree_and_first_hit_is_a_subset(demo_blend, tmp_path):
    import json

    path, _ = demo_blend
    results = {}
    for mode in ("on-demand", "bottom-up", "rebuild"):
        out = tmp_path / f"{mode}.json"
        res = run("scan", str(path), "--mode", mode, "--self", "--json", str(out))
        assert res.returncode == 0, res.stderr
        results[mode] = [{tuple(p) for p in f["pairs"]} for f in json.loads(out.read_text())["frames"]]
        refit = json.loads(out.read_text())["refit"]
        want = {"on-demand": "sphere-tree"}.get(mode, mode)
        assert refit == {"Left": want, "Right": want}     # the method actually used
        lines = [ln for ln in res.stdout.splitlines() if ln.startswith("object ")]
        assert len(lines) == 2
        assert all(f"refit: {want} (" in ln for ln in lines), lines
    assert results["on-demand"] == results["bottom-up"] == results["rebuild"]
    out = tmp_path / "first.json"
    assert run("scan", str(path), "--first-hit", "--json", str(out)).returncode == 0
    first = [[tuple(p) for p in f["pairs"]] for f in json.loads(out.read_text())["frames"]]
    for f_all, f_first in zip(results["on-demand"], first):
        cross = {p for p in f_all if p[0] != p[2]}
        assert set(f_first) <= cross and bool(f_first) == bool(cross)
        assert len(f_first) <= 1        # --first-hit: exactly one pair per colliding frame


@pytest.mark.parametrize("args, message", [
    (("scan", "{demo}", "--object", "Left", "--json", "{out}"), "pass --self"),
    (("scan", "{demo}", "--frames", "5:4", "--json", "{out}"), "empty frame range"),
    (("scan", "/nope.glb", "--json", "{out}"), "no such file"),
    (("scan", "{demo}", "--json", "/nonexistent_dir/x.json"), "folder for --json does not exist"),
    (("scan", "{demo}", "--json", "{tmp}"), "is a directory"),
    (("scan", "{demo}", "--json", "/proc/skin_collide.json"), "is not writable"),
    (("scan", "{demo}", "--json", ""), "needs a file name"),
    (("scan", "{demo}", "--junit", "/proc/x.xml"), "is not writable"),
    (("scan", "{demo}", "--allow", "/nope.json", "--json", "{out}"), "no such allow-list"),
])
def test_scan_bad_input(demo_blend, tmp_path, args, message):
    path, _ = demo_blend
    res = run(*[a.replace("{demo}", str(path)).replace("{out}", str(tmp_path / "o.json"))
                .replace("{tmp}", str(tmp_path)) for a in args])
    assert res.returncode == 2
    assert message in res.stderr, res.stderr
    assert len([ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]) == 1
    assert "Traceback" not in res.stderr


def test_scan_of_a_mesh_with_a_subdivision_after_the_armature(tmp_path):
    """A stack that changes the topology is scanned on the surface Blender draws (issue 26
    item 8; tests/blender/test_modifier_stacks.py compares it with Blender), refitted bottom-up,
    and the scan says so."""
    import json

    import bpy

    from skin_collide.addon import demo_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    ob, _ = demo_rig.build_character("Solo", rings=8, segments=6, frames=6)
    ob.modifiers.new("Subdivision", "SUBSURF")
    n = len(ob.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices)
    path = tmp_path / "subsurf.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    res = run("scan", str(path), "--self", "--json", str(tmp_path / "o.json"))
    assert res.returncode == 0, res.stderr
    surface = f"evaluated surface: {n:,} vertices after Subdivision Surface"
    assert f"surface: {surface}" in res.stdout
    doc = json.loads((tmp_path / "o.json").read_text())
    assert doc["surface"] == {"Solo": surface} and doc["refit"] == {"Solo": "bottom-up"}


def test_preserve_volume_scan_says_its_refit_and_equals_blender(tmp_path):
    """A Preserve Volume scene: the JSON `refit` names the on-demand Preserve Volume refit
    (not the bottom-up fallback), and the pairs equal `--method rebuild` (Blender's own
    BVHTree on the evaluated loop triangles) on every frame."""
    import json

    blend = tmp_path / "pv.blend"
    res = run("demo", "--out", str(blend), "--rings", "12", "--segments", "8",
              "--frame-count", "12", "--preserve-volume")
    assert res.returncode == 0, res.stderr
    frames = {}
    for method in ("sphere-tree", "rebuild"):
        out = tmp_path / f"{method}.json"
        res = run("scan", str(blend), "--method", method, "--self", "--json", str(out))
        assert res.returncode == 0, res.stderr
        data = json.loads(out.read_text())
        want = "sphere-tree-pv" if method == "sphere-tree" else "rebuild"
        assert data["refit"] == {"Left": want, "Right": want}
        frames[method] = [{tuple(p) for p in f["pairs"]} for f in data["frames"]]
    assert frames["sphere-tree"] == frames["rebuild"]
    assert any(frames["rebuild"]), "the demo characters collide mid-way"
