"""`--as-rendered` on the command line (issue 55): forwarded to `--jobs` workers and to the
farms' chunk scans (OpenJD, Flamenco, OpenCue's command list), recorded in the report's
"source" and "evaluation", refused by `merge` beside a viewport report, and bad input
(a view layer renders skip, `--snapshots`) one line and exit 2 with nothing written over.
The exactness of the render-mode scan itself is tests/blender/test_as_rendered.py's."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run
from test_farm import FLAMENCO_SETTINGS, TEMPLATE, compile_flamenco_job, flamenco_lines

from skin_collide import farm_commands

HERE = Path(__file__).resolve().parent


def one_error_line(res) -> str:
    assert res.returncode == 2, (res.stdout[-2000:], res.stderr[-2000:])
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]


def save_shot(path: Path, *, layer_off: bool = False) -> None:
    """tests/render_scene.py's shot saved to `path` (in a fresh interpreter); `layer_off`:
    its view layer disabled for rendering."""
    code = (
        "import sys, bpy\n"
        f"sys.path.insert(0, {str(HERE.parent)!r})\n"
        "from render_scene import make_render_shot\n"
        "make_render_shot(bpy)\n"
        f"bpy.context.view_layer.use = {not layer_off}\n"
        f"bpy.ops.wm.save_as_mainfile(filepath={str(path)!r})\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0 and path.is_file(), res.stderr


@pytest.fixture(scope="module")
def shot(tmp_path_factory) -> Path:
    pytest.importorskip("bpy")
    path = tmp_path_factory.mktemp("render_shot") / "shot.blend"
    save_shot(path)
    return path


def test_farm_commands_forward_as_rendered():
    res = run("farm-commands", "a.blend", "--frames=1:4", "--chunk=2", "--out=o",
              "--as-rendered=yes")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == ("python3 -m skin_collide scan a.blend --frames=1:2 --method sphere-tree "
                        "--as-rendered --json o/scan_1_2.json")
    assert sum("--as-rendered" in ln for ln in lines) == 2          # the chunks, not the merge
    res = run("farm-commands", "a.blend", "--frames=1:4", "--chunk=2", "--out=o",
              "--as-rendered=no")
    assert res.returncode == 0 and "--as-rendered" not in res.stdout
    assert "--as-rendered" in farm_commands.scan_flags(as_rendered=True)


def test_openjd_template_forwards_as_rendered_in_both_steps():
    text = TEMPLATE.read_text()
    assert text.count('- "--as-rendered={{Param.AsRendered}}"') == 2       # Scan and Merge
    m = re.search(r"name: AsRendered\n\s+type: STRING\n\s+allowedValues: (\[.*\])\n"
                  r"\s+default: (.*)", text)
    assert m and json.loads(m.group(1)) == ["yes", "no"] and m.group(2) == '"no"'


@pytest.mark.parametrize("as_rendered", [True, False])
def test_flamenco_job_type_forwards_as_rendered(as_rendered):
    job = compile_flamenco_job(dict(FLAMENCO_SETTINGS, as_rendered=as_rendered))
    want = farm_commands.plan("/shots/sh010.blend", 1, 48, 10, "/farm/out",
                              farm_commands.scan_flags((), True, "sphere-tree", False, True,
                                                       None, as_rendered=as_rendered))
    assert flamenco_lines(job) == [farm_commands.command_line("/opt/py/bin/python", a)
                                   for a in want.values()]
    keys = {s["key"]: s for s in job["jobType"]["settings"]}
    assert keys["as_rendered"]["default"] is False


@pytest.mark.blender
def test_jobs_workers_scan_as_rendered_and_merge_refuses_mixed_reports(shot, tmp_path):
    one, two, view = tmp_path / "one.json", tmp_path / "two.json", tmp_path / "view.json"
    res = run("scan", shot, "--as-rendered", "--json", one)
    assert res.returncode == 0, res.stderr
    res = run("scan", shot, "--as-rendered", "--jobs", "2", "--json", two)
    assert res.returncode == 0, res.stderr
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert a["evaluation"] == b["evaluation"] == "render"
    assert a["source"]["evaluation"] == b["source"]["evaluation"] == "render"
    assert [f["pairs"] for f in a["frames"]] == [f["pairs"] for f in b["frames"]]
    # A chunk of the render evaluation and one of the viewport's do not merge.
    first, second = tmp_path / "r_1_6.json", tmp_path / "v_7_12.json"
    assert run("scan", shot, "--as-rendered", "--frames", "1:6", "--json", first).returncode == 0
    assert run("scan", shot, "--frames", "7:12", "--json", second).returncode == 0
    line = one_error_line(run("merge", first, second, "--json", view))
    assert "evaluation" in line and not view.exists()
    second.unlink()
    assert run("scan", shot, "--as-rendered", "--frames", "7:12", "--json", second).returncode == 0
    res = run("merge", first, second, "--json", view)
    assert res.returncode == 0, res.stderr
    merged = json.loads(view.read_text())
    assert merged["evaluation"] == "render"
    assert [f["pairs"] for f in merged["frames"]] == [f["pairs"] for f in a["frames"]]


@pytest.mark.blender
def test_bad_input_is_one_line_and_writes_nothing_over(shot, tmp_path):
    off = tmp_path / "layer_off.blend"
    save_shot(off, layer_off=True)
    report = tmp_path / "kept.json"
    report.write_text('{"kept": true}\n')
    line = one_error_line(run("scan", off, "--as-rendered", "--json", report))
    assert "render-mode evaluation" in line and "ViewLayer" in line
    assert report.read_text() == '{"kept": true}\n'
    (tmp_path / "s").mkdir()
    line = one_error_line(run("scan", shot, "--as-rendered", "--snapshots", tmp_path / "s"))
    assert "--snapshots" in line and "--as-rendered" in line
    line = one_error_line(run("doctor", off, "--as-rendered"))
    assert "render-mode evaluation" in line


@pytest.mark.blender
def test_snapshot_as_rendered_collides_the_render_surface(shot, tmp_path):
    from test_viewport_gpu import mesa_egl_present

    if not mesa_egl_present():
        pytest.skip("Mesa's EGL is not installed (libegl-mesa0 libgl1-mesa-dri libgbm1)")
    report = tmp_path / "r.json"
    assert run("scan", shot, "--as-rendered", "--frames", "10:10", "--json", report).returncode == 0
    want = len(json.loads(report.read_text())["frames"][0]["pairs"])
    for flag, line in (("--as-rendered", "evaluation: render"),
                       (None, "evaluation: viewport")):
        png = tmp_path / f"{flag or 'viewport'}.png"
        res = run("snapshot", shot, "--frame", 10, "--png", png, *([flag] if flag else []))
        assert res.returncode == 0, res.stderr[-2000:]
        lines = res.stdout.splitlines()
        assert lines[2].startswith(line) and png.stat().st_size > 0
        n = int(lines[1].split(": ")[1].split()[0])
        assert (n == want) == (flag is not None) and want > 0
