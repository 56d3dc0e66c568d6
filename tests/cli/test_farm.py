"""Issue 30: a shot on a render farm engine.

* `core.report.chunks`: the one cut of a frame range into farm chunks (OpenJD's CONTIGUOUS task
  chunking), and the range-expression names farms give chunks;
* `farm-commands`: the OpenCue command list, and its `--run` that the OpenJD template's
  tasks call (bad input: one line, exit 2; a chunk cut otherwise is refused);
* the Flamenco job type's compileJob, run with Node against a stand-in for the Manager's
  `author` module (tests/cli/flamenco_author_stub.js): its tasks, commands and dependencies;
* the Open Job Description template run for real with `openjd run` (openjd-cli from PyPI,
  installed by this module into .cache/ on first use) on a generated two-character shot,
  48 frames in chunks of 10: the merged report is `scan --jobs 1`'s up to the "ms" fields,
  its commands are the ones `farm-commands` prints and the Flamenco job runs, and a failing
  chunk fails the job with its one-line error.
"""
from __future__ import annotations

import copy
import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_helpers import run

from skin_collide import farm_commands
from skin_collide.core.contacts.contact import contacts_csv
from skin_collide.core.report import chunks

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "farm" / "openjd" / "skin_collide_scan.yaml"
JOB_TYPE = REPO / "farm" / "flamenco" / "skin_collide_scan.js"
STUB = Path(__file__).resolve().parent / "flamenco_author_stub.js"
OPENJD_CLI = "openjd-cli==0.8.0"


def one_error_line(res) -> str:
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), res.stderr
    return lines[0]


def without_ms(doc):
    doc = copy.deepcopy(doc)
    for f in doc["frames"]:
        f.pop("ms", None)
    return doc


# -- core.report.chunks ----------------------------------------------------------------------------

def test_chunks_by_size_cut_as_openjd_task_chunking():
    assert chunks.by_size(1, 48, 10) == [(1, 10), (11, 20), (21, 29), (30, 39), (40, 48)]
    assert chunks.by_size(1, 50, 10) == [(1, 10), (11, 20), (21, 30), (31, 40), (41, 50)]
    assert chunks.by_size(1, 12, 10) == [(1, 6), (7, 12)]
    assert chunks.by_size(5, 5, 10) == [(5, 5)]
    assert chunks.by_size(1, 3, 1) == [(1, 1), (2, 2), (3, 3)]
    assert chunks.by_size(-5, -2, 3) == [(-5, -4), (-3, -2)]
    for start, end, size in ((1, 48, 10), (1001, 1237, 17), (-20, 7, 4), (3, 3, 1)):
        parts = chunks.by_size(start, end, size)
        frames = [f for a, b in parts for f in range(a, b + 1)]
        assert frames == list(range(start, end + 1))            # contiguous, whole, in order
        lengths = [b - a + 1 for a, b in parts]
        assert max(lengths) <= size and max(lengths) - min(lengths) <= 1
        assert len(parts) == -(-(end - start + 1) // size)
    with pytest.raises(chunks.ChunkError, match="at least 1"):
        chunks.by_size(1, 10, 0)
    with pytest.raises(chunks.ChunkError, match="empty"):
        chunks.by_size(5, 4, 2)


def test_jobs_chunks_are_core_chunks_evenly():
    from skin_collide import cli

    assert cli._chunks(1, 24, 2) == chunks.evenly(1, 24, 2) == [(1, 12), (13, 24)]
    assert chunks.evenly(1, 3, 8) == [(1, 1), (2, 2), (3, 3)]


@pytest.mark.parametrize("text, want", [
    ("7", (7, 7)), ("7,8", (7, 8)), ("7-16", (7, 16)), ("7-7", (7, 7)), ("-5--3", (-5, -3)),
    ("-2-3", (-2, 3)), (" 1 - 10 ", (1, 10)),
])
def test_parse_chunk_reads_the_farms_names(text, want):
    assert chunks.parse_chunk(text) == want
    assert chunks.parse_chunk(chunks.chunk_name(*want)) == want


@pytest.mark.parametrize("text", ["7,9", "1-10:2", "10-1", "1-4,9", "a", ""])
def test_parse_chunk_refuses_what_is_not_one_contiguous_range(text):
    with pytest.raises(chunks.ChunkError) as exc:
        chunks.parse_chunk(text)
    assert "\n" not in str(exc.value)


# -- farm-commands (no Blender needed) ------------------------------------------------------

def test_farm_commands_prints_a_scan_per_chunk_then_the_merge():
    res = run("farm-commands", "shots/sh 010.blend", "--frames", "1:48", "--chunk", "10",
              "--self", "--ignore-rest-contacts", "--allow", "ok.json", "--out", "/farm/out/",
              "--python", "/opt/py/bin/python")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 6
    flags = ["--self", "--method", "sphere-tree", "--ignore-rest-contacts", "--allow", "ok.json"]
    reports = []
    for line, (a, b) in zip(lines, chunks.by_size(1, 48, 10)):
        reports.append(f"/farm/out/scan_{a}_{b}.json")
        assert shlex.split(line) == ["/opt/py/bin/python", "-m", "skin_collide", "scan",
                                     "shots/sh 010.blend", f"--frames={a}:{b}", *flags,
                                     "--json", reports[-1]]
    assert shlex.split(lines[-1]) == ["/opt/py/bin/python", "-m", "skin_collide", "merge",
                                      *reports, "--json", "/farm/out/report.json",
                                      "--junit", "/farm/out/report.xml",
                                      "--contacts-csv", "/farm/out/report.contacts.csv"]
    scans = run("farm-commands", "shots/sh 010.blend", "--frames", "1:48", "--chunk", "10",
                "--self", "--ignore-rest-contacts", "--allow", "ok.json", "--out", "/farm/out/",
                "--python", "/opt/py/bin/python", "--part", "scans")
    merge = run("farm-commands", "shots/sh 010.blend", "--frames", "1:48", "--chunk", "10",
                "--self", "--ignore-rest-contacts", "--allow", "ok.json", "--out", "/farm/out/",
                "--python", "/opt/py/bin/python", "--part", "merge")
    assert scans.stdout.splitlines() == lines[:-1] and merge.stdout.splitlines() == lines[-1:]
    # The job template's spelling of the switches: --self=yes|no, an empty --allow.
    res = run("farm-commands", "a.blend", "--frames=-5:-2", "--chunk=3", "--out=o", "--self=no",
              "--first-hit=yes", "--allow=", "--method=box-tree")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == ("python3 -m skin_collide scan a.blend --frames=-5:-4 "
                                          "--method box-tree --first-hit --json o/scan_-5_-4.json")


@pytest.mark.parametrize("args, words", [
    (("--chunk", "0"), "--chunk must be at least 1, got 0"),
    (("--chunk", "10", "--run", "21-30"), "--run 21-30: not one of the chunks"),
    (("--chunk", "10", "--run", "1,3"), "not a contiguous frame range"),
])
def test_farm_commands_bad_input_is_one_line(args, words):
    res = run("farm-commands", "a.blend", "--frames", "1:48", "--out", "o", *args)
    assert words in one_error_line(res)
    assert res.stdout == ""


def test_farm_commands_empty_range_is_one_line():
    res = run("farm-commands", "a.blend", "--frames", "9:1", "--chunk", "2", "--out", "o")
    assert "empty frame range 9:1" in one_error_line(res)


def test_merge_refuses_one_file_for_json_and_junit(tmp_path):
    res = run("merge", tmp_path / "a.json", "--json", tmp_path / "m.json", "--junit",
              tmp_path / "m.json")
    assert "--json and --junit name the same file" in one_error_line(res)


# -- the Flamenco job type, with Node -------------------------------------------------------

def node_executable() -> str:
    """Node, installed with apt-get where it is missing and we are root (as CI is)."""
    node = shutil.which("node")
    if node is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "install", "-y", "-qq", "nodejs"], ["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "nodejs"]):
            subprocess.run(cmd, capture_output=True, env=env, timeout=600)
            node = shutil.which("node")
            if node:
                break
    if node is None:
        pytest.skip("Node.js is not installed and cannot be installed here (apt-get nodejs "
                    "needs root): the Flamenco job type is not checked")
    return node


def compile_flamenco_job(settings: dict) -> dict:
    res = subprocess.run([node_executable(), str(STUB), str(JOB_TYPE),
                          json.dumps({"name": "sh010", "settings": settings})],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def flamenco_lines(job: dict) -> list[str]:
    """Each task's one command as a shell line (an `exec`: exe, then args)."""
    out = []
    for task in job["tasks"]:
        assert len(task["commands"]) == 1 and task["commands"][0]["name"] == "exec", task
        p = task["commands"][0]["parameters"]
        out.append(shlex.join([p["exe"], *p["args"]]))
    return out


FLAMENCO_SETTINGS = {"frames": "1-48", "chunk_size": 10, "output_dir": "/farm/out",
                     "self": True, "method": "sphere-tree", "first_hit": False,
                     "ignore_rest_contacts": True, "allow": "", "python": "/opt/py/bin/python",
                     "blendfile": "/shots/sh010.blend"}


def test_flamenco_job_type_chunks_1_48_by_10_then_merges():
    job = compile_flamenco_job(FLAMENCO_SETTINGS)
    names = [t["name"] for t in job["tasks"]]
    assert names == ["scan-1-10", "scan-11-20", "scan-21-29", "scan-30-39", "scan-40-48", "merge"]
    assert all(t["type"] == "blender" for t in job["tasks"])
    assert [t["dependencies"] for t in job["tasks"][:-1]] == [[]] * 5
    assert job["tasks"][-1]["dependencies"] == names[:-1]          # every chunk, nothing else
    # The commands farm-commands prints for the same shot and settings.
    res = run("farm-commands", "/shots/sh010.blend", "--frames", "1:48", "--chunk", "10",
              "--self", "--ignore-rest-contacts", "--out", "/farm/out",
              "--python", "/opt/py/bin/python")
    assert res.returncode == 0, res.stderr
    assert flamenco_lines(job) == res.stdout.splitlines()
    settings = {s["key"]: s for s in job["jobType"]["settings"]}
    assert settings["method"]["choices"] == list(farm_commands_method_ids())
    assert settings["chunk_size"]["default"] == 10


def farm_commands_method_ids():
    from skin_collide.core.methods import registry

    return registry.ids()


@pytest.mark.parametrize("frames, size, flags", [
    ("1..12", 10, {}), ("-5--1", 2, {"first_hit": True}), ("1001-1237", 17, {"allow": "ok.json"}),
    ("7", 3, {"method": "box-tree", "self": False}),
])
def test_flamenco_job_type_agrees_with_farm_commands(frames, size, flags):
    settings = dict(FLAMENCO_SETTINGS, frames=frames, chunk_size=size, **flags)
    job = compile_flamenco_job(settings)
    start, end = chunks.parse_chunk(frames.replace("..", "-"))
    want = farm_commands.plan("/shots/sh010.blend", start, end, size, "/farm/out",
                              farm_commands.scan_flags(
                                  (), settings["self"], settings["method"], settings["first_hit"],
                                  settings["ignore_rest_contacts"], settings["allow"] or None))
    assert [t["name"] for t in job["tasks"]] == [f"scan-{n}" if n != "merge" else n for n in want]
    assert flamenco_lines(job) == [farm_commands.command_line("/opt/py/bin/python", a)
                                   for a in want.values()]


def test_flamenco_job_type_refuses_a_range_with_gaps():
    res = subprocess.run([node_executable(), str(STUB), str(JOB_TYPE),
                          json.dumps({"settings": dict(FLAMENCO_SETTINGS, frames="1-10,20-30")})],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode != 0 and "not one contiguous range" in res.stderr


# -- the Open Job Description template, run with openjd-cli ---------------------------------

def openjd_executable() -> Path:
    """openjd-cli in a virtual environment of its own under .cache/ (installed from PyPI on
    first use, by one test run at a time), or SKIN_COLLIDE_OPENJD."""
    given = os.environ.get("SKIN_COLLIDE_OPENJD")
    if given:
        return Path(given)
    venv = REPO / ".cache" / ("venv-" + OPENJD_CLI.replace("==", "-"))
    exe, stamp = venv / "bin" / "openjd", venv / ".installed"
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / (venv.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists():
            shutil.rmtree(venv, ignore_errors=True)
            res = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True,
                                 text=True, timeout=600)
            assert res.returncode == 0, res.stderr
            res = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                                  "--disable-pip-version-check", OPENJD_CLI],
                                 capture_output=True, text=True, timeout=600)
            assert res.returncode == 0, f"pip install {OPENJD_CLI} failed: {res.stderr[-2000:]}"
            stamp.write_text(OPENJD_CLI + "\n")
    assert exe.exists(), exe
    return exe


def test_openjd_template_passes_openjd_check():
    res = subprocess.run([str(openjd_executable()), "check", str(TEMPLATE)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr


def test_template_lists_the_registry_methods():
    text = TEMPLATE.read_text()
    m = re.search(r"name: Method\n\s+type: STRING\n\s+allowedValues: (\[.*\])", text)
    assert m and json.loads(m.group(1)) == list(farm_commands_method_ids())


blender = pytest.mark.blender


@pytest.fixture(scope="module")
def shot(tmp_path_factory):
    """A generated two-character shot (48 frames) and its `scan --jobs 1` report."""
    pytest.importorskip("bpy")
    from conftest import inside_blender_binary

    if inside_blender_binary():
        pytest.skip("subprocess CLI tests need the pip bpy module")
    d = tmp_path_factory.mktemp("farm")
    blend = d / "shot.blend"
    res = run("demo", "--out", blend, "--rings", "12", "--segments", "8", "--frame-count", "48")
    assert res.returncode == 0, res.stderr
    whole = d / "whole.json"
    res = run("scan", blend, "--self", "--frames", "1:48", "--jobs", "1", "--json", whole)
    assert res.returncode == 0, res.stderr
    return blend, json.loads(whole.read_text())


def openjd_run(blend: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(openjd_executable()), "run", str(TEMPLATE), "-p", f"File={blend}",
         "-p", "FrameStart=1", "-p", "FrameEnd=48", "-p", "ChunkSize=10",
         "-p", f"OutputDir={out}", "-p", "Self=yes", "-p", f"Python={sys.executable}"],
        capture_output=True, text=True, timeout=1200)


def task_chunks(log: str) -> list[str]:
    return re.findall(r"Frame\(CHUNK\[INT\]\) = (\S+)", log)


def ran(log: str) -> list[str]:
    return re.findall(r"running: (.*)$", log, re.M)


@pytest.fixture(scope="module")
def openjd_job(shot, tmp_path_factory):
    blend, whole = shot
    out = tmp_path_factory.mktemp("openjd_out")
    res = openjd_run(blend, out)
    return res, out


@blender
def test_openjd_job_merges_into_the_report_of_one_process(shot, openjd_job):
    blend, whole = shot
    res, out = openjd_job
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    parts = chunks.by_size(1, 48, 10)
    assert task_chunks(res.stdout) == [f"{a}-{b}" for a, b in parts]   # OpenJD's cut is ours
    merged = json.loads((out / "report.json").read_text())
    assert sum(len(f["pairs"]) for f in whole["frames"]) > 0 and whole["episodes"]
    # An episode crosses a chunk edge: merge joined it.
    edges = {b for _, b in parts[:-1]}
    assert any(e["start"] <= b < e["end"] for e in whole["episodes"] for b in edges)
    assert without_ms(merged) == without_ms(whole)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["report.contacts.csv", "report.json", "report.xml"]
        + [f"scan_{a}_{b}.json" for a, b in parts])
    assert (out / "report.contacts.csv").read_text() == contacts_csv(merged)
    suite = ET.parse(out / "report.xml").getroot()
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"Left x Right", "Left self", "Right self"}
    assert cases["Left x Right"].find("failure") is not None


@blender
def test_openjd_job_runs_the_commands_of_farm_commands_and_flamenco(shot, openjd_job):
    blend, _ = shot
    res, out = openjd_job
    assert res.returncode == 0, res.stdout[-4000:]
    commands = ran(res.stdout)
    printed = run("farm-commands", blend, "--frames", "1:48", "--chunk", "10", "--self",
                  "--out", out, "--python", sys.executable)
    assert printed.returncode == 0, printed.stderr
    assert commands == printed.stdout.splitlines()
    job = compile_flamenco_job(dict(FLAMENCO_SETTINGS, blendfile=str(blend), output_dir=str(out),
                                    python=sys.executable, ignore_rest_contacts=False))
    assert flamenco_lines(job) == commands
    assert job["tasks"][-1]["dependencies"] == [t["name"] for t in job["tasks"][:-1]]


@blender
def test_a_failing_chunk_fails_the_openjd_job_with_its_line(shot, tmp_path):
    blend, _ = shot
    signed = tmp_path / "scan_21_29.json"            # a chunk report that must not be replaced
    signed.write_text("{}")
    signed.chmod(0o444)
    res = openjd_run(blend, tmp_path)
    assert res.returncode != 0, res.stdout[-4000:]
    errors = [ln for ln in res.stdout.splitlines() if "skin_collide:" in ln]
    assert len(errors) == 1, res.stdout[-4000:]
    assert errors[0].endswith(f"skin_collide: error: --json {signed} is read-only (no write "
                              "permission for anyone): it is not replaced")
    assert "21-29" in task_chunks(res.stdout)[-1]              # the job stopped at that chunk
    assert not [c for c in ran(res.stdout) if " merge " in c]  # and never merged
    assert not (tmp_path / "report.json").exists()
    assert signed.read_text() == "{}"


# -- the Blender-binary variant: farm/blender_python.sh ---------------------------------------

WRAPPER = REPO / "farm" / "blender_python.sh"

FAKE_BLENDER = """#!{python}
# Stands in for a Blender binary: checks the arguments the wrapper gives it, then runs the
# --python-expr code with sys.argv as Blender sets it (its whole command line).
import sys
argv = list(sys.argv)
k = argv.index("--python-expr")
assert argv[1:k] == ["--background", "--factory-startup", "--python-exit-code", "2"], argv
assert argv[k + 2] == "--", argv
exec(compile(argv[k + 1], "<python-expr>", "exec"), {{"__name__": "__main__"}})
"""


@blender
def test_the_blender_wrapper_runs_a_chunk_as_the_template_does(shot, openjd_job, tmp_path):
    blend, _ = shot
    res, out = openjd_job
    assert res.returncode == 0
    fake = tmp_path / "blender"
    fake.write_text(FAKE_BLENDER.format(python=sys.executable))
    fake.chmod(0o755)
    env = dict(os.environ, BLENDER=str(fake))
    mine = tmp_path / "mine"
    mine.mkdir()
    steps = farm_commands.plan(str(blend), 1, 48, 10, str(mine), ["--self", "--method",
                                                                   "sphere-tree"])
    got = subprocess.run([str(WRAPPER), "-m", "skin_collide", *steps["1-10"]], env=env,
                         capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stderr
    assert without_ms(json.loads((mine / "scan_1_10.json").read_text())) == \
        without_ms(json.loads((out / "scan_1_10.json").read_text()))
    # Its exit status is skin_collide's: a chunk that cannot write its report fails (2).
    bad = subprocess.run([str(WRAPPER), "-m", "skin_collide", "scan", str(blend),
                          "--frames=1:2", "--json", str(tmp_path / "missing" / "x.json")],
                         env=env, capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "skin_collide: error:" in bad.stderr


def test_the_blender_wrapper_refuses_other_arguments():
    res = subprocess.run([str(WRAPPER), "scan", "x.blend"], capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2
    assert res.stderr.strip() == "blender_python.sh: expected '-m skin_collide ARGS', got 'scan x.blend'"


# -- built data travels: the Disk Cache folder beside the .blend -----------------------------

BUILD_TO_DISK = """
import sys, bpy, skin_collide
from skin_collide.cli import exit_process
skin_collide.register()
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
bpy.context.scene.skin_collide.data_location = "DISK"
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[2])     # saved first: the cache needs a folder
meshes = [ob for ob in bpy.context.scene.objects if ob.type == "MESH"]
for ob in meshes:
    ob.select_set(True)
bpy.context.view_layer.objects.active = meshes[0]
assert bpy.ops.skin_collide.build() == {"FINISHED"}
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[2])
skin_collide.unregister()
exit_process(0)
"""


@blender
def test_a_disk_cache_shot_travels_with_its_cache_folder(shot, tmp_path):
    blend, whole = shot
    studio = tmp_path / "studio"
    studio.mkdir()
    res = subprocess.run([sys.executable, "-c", BUILD_TO_DISK, str(blend), str(studio / "sh.blend")],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    cache = sorted(p.name for p in (studio / "skin_collide_cache").iterdir())
    assert len(cache) == 2
    want = {f["frame"]: f["pairs"] for f in whole["frames"] if 1 <= f["frame"] <= 10}
    for name, with_cache in (("with_cache", True), ("alone", False)):
        farm = tmp_path / name
        farm.mkdir()
        shutil.copy(studio / "sh.blend", farm / "sh.blend")
        if with_cache:
            shutil.copytree(studio / "skin_collide_cache", farm / "skin_collide_cache")
        stamps = {p.name: p.stat().st_mtime_ns for p in farm.rglob("*.skcb")}
        steps = farm_commands.plan(str(farm / "sh.blend"), 1, 48, 10, str(farm),
                                   farm_commands.scan_flags(self_collision=True))
        res = run(*steps["1-10"])
        assert res.returncode == 0, res.stderr
        assert res.stdout.count("loaded from the .blend") == 2 and "built in" not in res.stdout
        got = json.loads((farm / "scan_1_10.json").read_text())
        assert {f["frame"]: f["pairs"] for f in got["frames"]} == want
        after = {p.name: p.stat().st_mtime_ns for p in farm.rglob("*.skcb")}
        if with_cache:
            assert after == stamps                      # read, not rebuilt
        else:
            assert sorted(after) == cache               # rebuilt, and written beside the file


# -- the clearance flags (issue 42) in both job templates -----------------------------------

def test_openjd_template_forwards_the_clearance_in_both_steps():
    text = TEMPLATE.read_text()
    for flag, param in (("--clearance", "Clearance"), ("--near-pairs", "NearPairs")):
        assert text.count(f'- "{flag}={{{{Param.{param}}}}}"') == 2, flag   # Scan and Merge
        assert re.search(rf"- name: {param}\n\s+type: STRING\n", text), param
    m = re.search(r"name: NearPairs\n\s+type: STRING\n\s+allowedValues: (\[.*\])\n\s+default: (.*)",
                  text)
    assert m and json.loads(m.group(1)) == ["yes", "no"] and m.group(2) == '"no"'
    assert re.search(r'name: Clearance\n\s+type: STRING\n\s+default: ""', text)
    # The template's spelling reaches the scans: an empty Clearance is none.
    res = run("farm-commands", "a.blend", "--frames=1:4", "--chunk=2", "--out=o",
              "--clearance=2mm", "--near-pairs=yes", "--allow=", "--self=no")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == ("python3 -m skin_collide scan a.blend --frames=1:2 "
                                          "--method sphere-tree --clearance 2mm --near-pairs "
                                          "--json o/scan_1_2.json")
    res = run("farm-commands", "a.blend", "--frames=1:4", "--chunk=2", "--out=o",
              "--clearance=", "--near-pairs=no")
    assert res.returncode == 0 and "--clearance" not in res.stdout and "--near" not in res.stdout
    res = run("farm-commands", "a.blend", "--frames=1:4", "--chunk=2", "--out=o",
              "--clearance=", "--near-pairs=yes")
    assert "give --clearance D" in one_error_line(res)
    res = run("farm-commands", "a.blend", "--frames=1:4", "--chunk=2", "--out=o",
              "--clearance=-1mm")
    assert "must be a finite distance >= 0" in one_error_line(res)


@pytest.mark.parametrize("clearance, near_pairs", [("2mm", True), ("0.05", False), ("", False)])
def test_flamenco_job_type_forwards_the_clearance(clearance, near_pairs):
    settings = dict(FLAMENCO_SETTINGS, clearance=clearance, near_pairs=near_pairs)
    job = compile_flamenco_job(settings)
    want = farm_commands.plan("/shots/sh010.blend", 1, 48, 10, "/farm/out",
                              farm_commands.scan_flags(
                                  (), True, "sphere-tree", False, True, None,
                                  clearance=clearance or None, near_pairs=near_pairs))
    assert flamenco_lines(job) == [farm_commands.command_line("/opt/py/bin/python", a)
                                   for a in want.values()]
    assert all(("--clearance" in line) == bool(clearance) and
               ("--near-pairs" in line) == near_pairs for line in flamenco_lines(job)[:-1])
    keys = {s["key"]: s for s in job["jobType"]["settings"]}
    assert keys["clearance"]["default"] == "" and keys["near_pairs"]["default"] is False
