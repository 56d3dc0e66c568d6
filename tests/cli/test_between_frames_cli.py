"""`scan --between-frames` on the command line (issue 57): a character that passes through
another between frames 2 and 3 and touches it at no frame. Checked: the report's keys, the
console's pass-through line, the summary and the verdict, the exit codes with and without
--fail-on-collision, the JUnit case of the step, the CSV rows of kind "passes through"
and their t column, `--jobs 2` and two chunk reports merged equal to one run (the step at
the chunk boundary checked once, by the chunk that holds its first frame), merge refusing
reports with and without the check or of other subframes, the farms' commands carrying
the flags and each chunk's --step-to, `skin_collide.testing`, and the usage errors (one
line, exit 2). The continuous check itself is the core's tests'."""
from __future__ import annotations

import copy
import csv
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_helpers import run
from test_farm import FLAMENCO_SETTINGS, TEMPLATE, compile_flamenco_job, flamenco_lines

from skin_collide import farm_commands

HERE = Path(__file__).resolve().parent
LINE = "Body × Runner, bone_5 × bone_0: passes through between frames 2 and 3"

#: The shot: Body, a skinned tube standing at the origin (2 m, radius 0.25), and Runner,
#: the same tube 1.6 m higher, whose rig stands 0.8 m to one side at frames 1-2 and 0.8 m
#: to the other at frames 3-5 (linear keys): their tops cross between frames 2 and 3,
#: 0.3 m apart at every frame.
SHOT = """
import sys, bpy
from skin_collide.addon import demo_rig
bpy.ops.wm.read_homefile(use_empty=True)
demo_rig.build_character("Body", rings=12, segments=8, frames=5, swing=0.05)
_, rig = demo_rig.build_character("Runner", location=(-0.8, 0.0, 1.6), rings=12, segments=8,
                                  frames=5, swing=0.05)
for f, x in ((1, -0.8), (2, -0.8), (3, 0.8), (5, 0.8)):
    rig.location = (x, 0.0, 1.6)
    rig.keyframe_insert("location", frame=f)
scene = bpy.context.scene
scene.frame_start, scene.frame_end = 1, 5
scene.frame_set(1)
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[-1])
"""


def one_error_line(res) -> str:
    assert res.returncode == 2, (res.stdout[-2000:], res.stderr[-2000:])
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), res.stderr
    assert "Traceback" not in res.stderr and "usage:" not in res.stderr
    return lines[0]


def without_times(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    for f in doc["frames"]:
        f.pop("ms", None)
        f.pop("step_ms", None)
    return doc


@pytest.fixture(scope="module")
def shot(tmp_path_factory) -> Path:
    pytest.importorskip("bpy")
    from conftest import inside_blender_binary

    if inside_blender_binary():
        pytest.skip("subprocess CLI tests need the pip bpy module")
    path = tmp_path_factory.mktemp("between") / "shot.blend"
    res = subprocess.run([sys.executable, "-c", SHOT, str(path)], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0 and path.is_file(), res.stderr
    return path


@pytest.fixture(scope="module")
def one_run(shot, tmp_path_factory):
    """`scan --between-frames --fail-on-collision` with every output: (run, report, folder)."""
    d = tmp_path_factory.mktemp("one_run")
    res = run("scan", shot, "--between-frames", "--fail-on-collision", "--json", d / "r.json",
              "--junit", d / "r.xml", "--contacts-csv", d / "r.csv")
    return res, json.loads((d / "r.json").read_text()), d


def test_the_report_has_each_step_and_the_pass_through(one_run):
    res, doc, _ = one_run
    frames = {f["frame"]: f for f in doc["frames"]}
    assert all(not f["pairs"] for f in frames.values())          # at no frame
    assert doc["source"]["between"] == {"subframes": 1}
    for f in (1, 2, 3, 4):
        assert frames[f]["step_to"] == f + 1 and frames[f]["step_ms"] >= 0
        assert frames[f]["step_ms"] <= frames[f]["ms"]
    # The scene ends at 5: no step from it, and a note says so.
    assert not {"between", "step_to", "passes_through"} & set(frames[5])
    assert any("no step is checked from the last frame 5" in n for n in doc["notes"])
    assert "note: no step is checked from the last frame 5" in res.stdout
    # Only the step 2 -> 3 touches, and only between the frames.
    assert [f for f in (1, 2, 3, 4) if frames[f]["between"]] == [2]
    assert [f for f in (1, 2, 3, 4) if frames[f]["passes_through"]] == [2]
    rows = frames[2]["between"]
    assert all(r[0] == "Body" and r[2] == "Runner" and 0.0 <= r[4] <= 1.0 for r in rows)
    (c,) = frames[2]["passes_through"]
    assert c["kind"] == "passes through" and c["step"] == [2, 3] and 0.0 <= c["t"] <= 1.0
    assert c["objects"] == ["Body", "Runner"] and c["bones"] == ["bone_5", "bone_0"]
    assert sorted(map(tuple, c["pairs"])) == sorted((r[1], r[3]) for r in rows)
    assert c["t"] == min(r[4] for r in rows)


def test_the_console_names_it_and_fails(one_run):
    res, _, _ = one_run
    assert res.returncode == 1, res.stderr
    lines = res.stdout.splitlines()
    assert f"  {LINE}" in lines
    assert any(ln.startswith("0 of 5 frames collide; 1 of 4 steps between frames passes "
                             "through;") for ln in lines), res.stdout
    verdict = lines[-1]
    assert "no collision episodes" not in verdict and LINE in verdict, verdict


def test_without_fail_on_collision_it_exits_0_and_without_the_flag_sees_nothing(shot):
    res = run("scan", shot, "--between-frames")
    assert res.returncode == 0, res.stderr
    assert f"  {LINE}" in res.stdout.splitlines()
    # The frames alone: clean, which is why the check exists.
    res = run("scan", shot, "--fail-on-collision")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-1] == "no collision episodes"
    assert "passes through" not in res.stdout


def test_junit_fails_the_step(one_run):
    _, _, d = one_run
    suite = ET.parse(d / "r.xml").getroot().find("testsuite")
    cases = {tc.get("name"): tc for tc in suite.findall("testcase")}
    assert cases["Body x Runner"].find("failure") is None             # no frame collides
    fl = cases["between frames 2 and 3"].find("failure")
    assert fl is not None and fl.get("type") == "passes through" and fl.get("message") == LINE
    assert suite.get("tests") == "2" and suite.get("failures") == "1"


def test_csv_rows_of_kind_passes_through_with_t(one_run):
    _, doc, d = one_run
    with open(d / "r.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[-1] == "t"
    (row,) = rows
    c = doc["frames"][1]["passes_through"][0]
    assert (row["frame"], row["kind"], row["object_a"], row["object_b"], row["bone_a"],
            row["bone_b"]) == ("2", "passes through", "Body", "Runner", "bone_5", "bone_0")
    assert float(row["t"]) == c["t"] and int(row["pairs"]) == len(c["pairs"])
    assert row["min_distance"] == ""


def test_from_json_round_trip(one_run):
    from skin_collide.core.report import model

    _, doc, _ = one_run
    again = model.from_json(doc)
    doc2 = again.to_json()
    assert doc2["frames"] == doc["frames"]
    (ep,) = again.pass_episodes()
    assert ep.describe() == LINE and ep.steps == 1 and (ep.start, ep.end) == (2, 3)


def test_jobs_2_is_one_run_with_the_boundary_step_checked_once(shot, one_run, tmp_path):
    _, doc, _ = one_run
    out = tmp_path / "j.json"
    res = run("scan", shot, "--between-frames", "--jobs", "2", "--json", out,
              "--fail-on-collision")
    assert res.returncode == 1, res.stderr
    assert "frames 1-5 in 2 worker processes: 1-2, 3-5" in res.stdout   # 2 -> 3 spans them
    assert f"  {LINE}" in res.stdout.splitlines()
    assert "no collision episodes" not in res.stdout.splitlines()[-1]
    assert without_times(json.loads(out.read_text())) == without_times(doc)


def test_two_chunks_merge_into_one_run(shot, one_run, tmp_path):
    _, doc, _ = one_run
    a, b, m = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "m.json"
    # The first chunk checks the step into the second (--step-to, as the farms pass it).
    res = run("scan", shot, "--between-frames", "--frames", "1:2", "--step-to", "3",
              "--json", a)
    assert res.returncode == 0, res.stderr
    res = run("scan", shot, "--between-frames", "--frames", "3:5", "--json", b)
    assert res.returncode == 0, res.stderr
    first = json.loads(a.read_text())
    assert [f.get("step_to") for f in first["frames"]] == [2, 3]
    assert first["frames"][1]["passes_through"]
    res = run("merge", a, b, "--json", m, "--junit", tmp_path / "m.xml")
    assert res.returncode == 0, res.stderr
    assert f"  {LINE}" in res.stdout.splitlines()
    merged = json.loads(m.read_text())
    assert without_times(merged) == without_times(doc)
    # The step at the boundary once.
    assert sum(len(f.get("passes_through", [])) for f in merged["frames"]) == 1
    # Without --step-to the first chunk's last frame steps into the scene's next frame:
    # the same report (the default rule); with --step-to none it has no step.
    c = tmp_path / "c.json"
    res = run("scan", shot, "--between-frames", "--frames", "1:2", "--json", c)
    assert res.returncode == 0, res.stderr
    assert without_times(json.loads(c.read_text()))["frames"] == \
        without_times(first)["frames"]
    res = run("scan", shot, "--between-frames", "--frames", "1:2", "--step-to", "none",
              "--json", c, "--fail-on-collision")
    assert res.returncode == 0, res.stderr
    assert "between" not in json.loads(c.read_text())["frames"][1]
    assert "no step is checked from the last frame 2 (--step-to none)" in res.stdout


def test_merge_refuses_mixing_with_and_without_the_check(shot, tmp_path):
    with_, without, sub2 = tmp_path / "w.json", tmp_path / "wo.json", tmp_path / "s.json"
    assert run("scan", shot, "--between-frames", "--frames", "1:2", "--json",
               with_).returncode == 0
    assert run("scan", shot, "--frames", "3:5", "--json", without).returncode == 0
    assert run("scan", shot, "--between-frames", "--subframes", "2", "--frames", "3:5",
               "--json", sub2).returncode == 0
    line = one_error_line(run("merge", with_, without, "--json", tmp_path / "m.json"))
    assert "no --between-frames" in line and "different settings" in line
    line = one_error_line(run("merge", with_, sub2, "--json", tmp_path / "m.json"))
    assert "--subframes 2" in line and "--subframes 1" in line
    assert not (tmp_path / "m.json").exists()


def test_subframes_sample_within_the_step(shot, tmp_path):
    out = tmp_path / "s.json"
    res = run("scan", shot, "--between-frames", "--subframes", "4", "--json", out,
              "--fail-on-collision")
    assert res.returncode == 1, res.stderr
    doc = json.loads(out.read_text())
    assert doc["source"]["between"] == {"subframes": 4}
    frames = {f["frame"]: f for f in doc["frames"]}
    assert frames[2]["step_to"] == 3 and frames[2]["passes_through"]


@pytest.mark.parametrize("args, words", [
    (["--between-frames", "--first-hit"], "cannot be combined with --first-hit"),
    (["--subframes", "4"], "it needs --between-frames"),
    (["--between-frames", "--subframes", "0"], "from 1 to 64"),
    (["--between-frames", "--subframes", "65"], "from 1 to 64"),
    (["--between-frames", "--subframes", "two"], "from 1 to 64"),
    (["--between-frames", "--subframes", "-3"], "from 1 to 64"),
    (["--between-frames", "--subframes"], "--subframes needs a value"),
    (["--step-to", "9"], "it needs --between-frames"),
    (["--between-frames", "--frames", "1:4", "--step-to", "4"], "must end after it"),
    (["--between-frames", "--step-to", "soon"], "a frame (a whole number) or none"),
])
def test_usage_errors_are_one_line(tmp_path, args, words):
    out = tmp_path / "r.json"
    res = run("scan", tmp_path / "missing.blend", *args, "--json", out)
    assert words in one_error_line(res)
    assert not out.exists()


def test_step_to_before_the_scene_end_is_one_line(shot, tmp_path):
    # Known only once the file gives the scene's range (1:5).
    res = run("scan", shot, "--between-frames", "--step-to", "3", "--json", tmp_path / "r.json")
    assert "--step-to 3: the last frame's step must end after it (frame 5)" in one_error_line(res)


# -- the farms ------------------------------------------------------------------------------

def test_farm_commands_carry_the_flags_and_each_chunks_step():
    res = run("farm-commands", "a.blend", "--frames=1:5", "--chunk=2", "--out=o",
              "--between-frames", "--subframes=4")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == ("python3 -m skin_collide scan a.blend --frames=1:2 --step-to=3 "
                        "--method sphere-tree --between-frames --subframes 4 "
                        "--json o/scan_1_2.json")
    assert "--step-to=5 " in lines[1]
    assert "--step-to" not in lines[2] and "--between-frames" in lines[2]   # the shot's end
    assert lines[3].startswith("python3 -m skin_collide merge ")
    # The OpenJD template's spelling: =no and Subframes 1 are the plain scan.
    res = run("farm-commands", "a.blend", "--frames=1:5", "--chunk=2", "--out=o",
              "--between-frames=no", "--subframes=1")
    assert res.returncode == 0 and "--step-to" not in res.stdout
    assert "--between" not in res.stdout and "--subframes" not in res.stdout
    res = run("farm-commands", "a.blend", "--frames=1:5", "--chunk=2", "--out=o",
              "--between-frames=no", "--subframes=3")
    assert "it needs --between-frames" in one_error_line(res)
    res = run("farm-commands", "a.blend", "--frames=1:5", "--chunk=2", "--out=o",
              "--between-frames=yes", "--first-hit=yes")
    assert "--first-hit" in one_error_line(res)


def test_openjd_template_forwards_the_flags_in_both_steps():
    text = TEMPLATE.read_text()
    for flag, param in (("--between-frames", "BetweenFrames"), ("--subframes", "Subframes")):
        assert text.count(f'- "{flag}={{{{Param.{param}}}}}"') == 2, flag   # Scan and Merge
    assert re.search(r'name: BetweenFrames\n\s+type: STRING\n\s+allowedValues: \["yes", "no"\]'
                     r'\n\s+default: "no"', text)
    assert re.search(r"name: Subframes\n\s+type: INT\n\s+default: 1\n\s+minValue: 1\n"
                     r"\s+maxValue: 64", text)


@pytest.mark.parametrize("between, subframes", [(True, 1), (True, 4), (False, 1)])
def test_flamenco_job_type_forwards_the_flags_and_steps(between, subframes):
    settings = dict(FLAMENCO_SETTINGS, frames="1-25", between_frames=between,
                    subframes=subframes)
    job = compile_flamenco_job(settings)
    want = farm_commands.plan("/shots/sh010.blend", 1, 25, 10, "/farm/out",
                              farm_commands.scan_flags((), True, "sphere-tree", False, True,
                                                       None, between_frames=between,
                                                       subframes=subframes))
    assert flamenco_lines(job) == [farm_commands.command_line("/opt/py/bin/python", a)
                                   for a in want.values()]
    scans = flamenco_lines(job)[:-1]
    assert all(("--between-frames" in ln) == between for ln in scans)
    assert [("--step-to" in ln) for ln in scans] == [between, between, False]
    if between:
        assert "--step-to=10 " in scans[0] and "--step-to=18 " in scans[1]   # 1-9, 10-17, 18-25


def test_the_farm_chunks_merge_into_one_run(shot, one_run, tmp_path):
    """farm-commands --run, chunk by chunk, then its merge: the report of one run."""
    _, doc, _ = one_run
    base = ["farm-commands", shot, "--frames=1:5", "--chunk=2", f"--out={tmp_path}",
            "--between-frames", f"--python={sys.executable}"]
    for chunk in ("1,2", "3,4", "5"):
        res = run(*base, "--run", chunk)
        assert res.returncode == 0, res.stderr
    res = run(*base, "--run", "merge")
    assert res.returncode == 0, res.stderr
    merged = json.loads((tmp_path / "report.json").read_text())
    assert without_times(merged) == without_times(doc)
    assert (tmp_path / "report.contacts.csv").read_text() == \
        (one_run[2] / "r.csv").read_text()


# -- skin_collide.testing --------------------------------------------------------------------

TESTING = """
import sys
from skin_collide import testing
from skin_collide.core.contacts.passing import PassEpisode
path = sys.argv[-1]
assert testing.collisions(path, self_collision=False) == []
eps = testing.collisions(path, self_collision=False, between_frames=True)
assert [type(e) for e in eps] == [PassEpisode], eps
assert eps[0].describe() == {line!r}, eps[0].describe()
testing.assert_no_collisions(path, self_collision=False)
try:
    testing.assert_no_collisions(path, self_collision=False, between_frames=True, subframes=2)
except AssertionError as exc:
    assert {line!r} in str(exc), str(exc)
else:
    raise SystemExit("no AssertionError")
try:
    testing.collisions(path, self_collision=False, subframes=2)
except ValueError as exc:
    assert "subframes" in str(exc)
else:
    raise SystemExit("no ValueError")
print("ok", flush=True)
# Leave as the command line does (cli.errors): bpy 4.2 can crash tearing itself down at
# interpreter exit after a file was loaded several times in one process.
import os
os._exit(0)
"""


def test_testing_between_frames(shot):
    res = subprocess.run([sys.executable, "-c", TESTING.format(line=LINE), str(shot)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]
