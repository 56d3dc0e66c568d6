"""Issue 26 §3 through the command line: `scan` checks every output (JSON, JUnit, the
contacts' CSV, the snapshots folder) before the build, refuses to replace a protected file with one line
naming it (exit 2), writes files with the mode a plain open() gives, and keeps the frames
done when an output turns read-only while it runs (`--jobs` too)."""
import json
import os
import signal
import stat
import subprocess
import sys

import pytest

pytestmark = pytest.mark.blender
pytest.importorskip("bpy")

from conftest import inside_blender_binary  # noqa: E402

if inside_blender_binary():
    pytest.skip("subprocess CLI tests need the pip bpy module (plain pytest run)",
                allow_module_level=True)


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "skin_collide", *map(str, args)],
                          capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    path = tmp_path_factory.mktemp("outputs") / "demo.blend"
    res = run("demo", "--out", path, "--rings", "10", "--segments", "6", "--frame-count", "12")
    assert res.returncode == 0, res.stderr
    return path


def _one_error_line(res) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("skin_collide: error: ") and "Traceback" not in res.stderr
    return lines[0]


@pytest.mark.parametrize("flag, name, jobs", [
    ("--json", "reviewed.json", 1),
    ("--junit", "reviewed.xml", 1),
    ("--contacts-csv", "reviewed.csv", 1),
    ("--json", "reviewed.json", 2),
    ("--snapshots", "shots/frame_00005.png", 1),
])
def test_scan_refuses_a_read_only_output_before_the_build(demo, tmp_path, flag, name, jobs):
    target = tmp_path / name
    target.parent.mkdir(exist_ok=True)
    target.write_bytes(b"reviewed")
    target.chmod(0o444)
    value = target.parent if flag == "--snapshots" else target
    res = run("scan", demo, "--frames", "1:4", flag, value, "--jobs", jobs)
    assert res.returncode == 2, res.stderr
    line = _one_error_line(res)
    assert str(target) in line and "read-only" in line
    assert ".skin_collide-" not in line and "'" not in line
    assert "object " not in res.stdout and "worker" not in res.stdout   # nothing built or run
    assert target.read_bytes() == b"reviewed"


def test_scan_outputs_get_the_mode_of_a_plain_open(demo, tmp_path):
    for umask, mode in ((0o022, 0o644), (0o002, 0o664)):
        out, xml = tmp_path / f"s{umask}.json", tmp_path / f"s{umask}.xml"
        res = run("scan", demo, "--frames", "1:3", "--json", out, "--junit", xml, umask=umask)
        assert res.returncode == 0, res.stderr
        assert stat.S_IMODE(out.stat().st_mode) == mode
        assert stat.S_IMODE(xml.stat().st_mode) == mode


def _wait_for_frames(path, proc) -> None:
    """Until the report at `path` lists frames (the scan is under way). (The scan's stdout
    must not be a pipe nobody reads: a full pipe would stop it.)"""
    while proc.poll() is None:
        try:
            if json.loads(path.read_text())["frames"]:
                return
        except (OSError, ValueError, KeyError):
            pass
        try:
            proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
    raise AssertionError(f"the scan ended first: {proc.stderr.read()}")


def test_a_report_that_turns_read_only_during_the_scan_keeps_its_frames(demo, tmp_path):
    out = tmp_path / "scan.json"
    proc = subprocess.Popen([sys.executable, "-m", "skin_collide", "scan", str(demo),
                             "--frames", "1:100000", "--json", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for_frames(out, proc)
    out.chmod(0o444)                          # someone protects it while the scan runs
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), err
    line = lines[0]
    assert str(out) in line and "read-only" in line
    kept = line.rsplit(" ", 1)[-1]
    assert kept != str(out) and os.path.isfile(kept), line
    doc = json.loads(open(kept).read())
    assert doc["frames"] and not doc["complete"] and doc["frames"][0]["frame"] == 1
    os.unlink(kept)


def test_jobs_keep_the_workers_frames_when_the_report_turns_read_only(demo, tmp_path):
    """The parent writes the merged report at the end: a report made read-only meanwhile
    must not throw the workers' frames away."""
    out = tmp_path / "jobs.json"
    out.write_text("{}")
    env = dict(os.environ, TMPDIR=str(tmp_path))        # where the workers' parts go
    proc = subprocess.Popen([sys.executable, "-m", "skin_collide", "scan", str(demo),
                             "--frames", "1:100000", "--jobs", "2", "--json", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    parts = []
    while len(parts) < 2 and proc.poll() is None:
        parts = []
        for root, _, files in os.walk(tmp_path):
            for f in files:
                if f.startswith("part_") and f.endswith(".json"):
                    try:
                        with open(os.path.join(root, f)) as fh:
                            if json.load(fh)["frames"]:
                                parts.append(f)
                    except (OSError, ValueError, KeyError):
                        pass
        try:
            proc.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            pass
    assert len(parts) == 2
    out.chmod(0o444)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 2, err
    lines = [ln for ln in err.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), err
    assert str(out) in lines[0] and "read-only" in lines[0]
    assert out.read_text() == "{}"
    kept = lines[0].rsplit(" ", 1)[-1]
    doc = json.loads(open(kept).read())
    frames = [f["frame"] for f in doc["frames"]]
    assert doc["interrupted"] and frames[0] == 1 and any(f > 50000 for f in frames)
    os.unlink(kept)
