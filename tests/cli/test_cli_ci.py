"""Rig checks in CI (issue 15) and a scan that never loses its work (issue 7 §5):
exit codes, JUnit XML, allow-lists, progressive/atomic reports, Ctrl-C, stdout hygiene.

One generated .blend per scene, few subprocesses (each pays the bpy start-up)."""
import json
import math
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

pytestmark = pytest.mark.blender
pytest.importorskip("bpy")

from conftest import inside_blender_binary  # noqa: E402
from repo_copy import dev_env, fresh_copy  # noqa: E402

if inside_blender_binary():
    pytest.skip("subprocess CLI tests need the pip bpy module (plain pytest run)",
                allow_module_level=True)

SMALL = dict(rings=10, segments=6, frames=12)


def run(*args):
    return subprocess.run([sys.executable, "-m", "skin_collide", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def _save(path, third_at=None, apart=False):
    """The demo's two crossing tubes (or, `apart`, two that never touch), optionally with a
    third tube standing at `third_at` (x, y)."""
    import bpy

    from skin_collide.addon import demo_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    x = 3.0 if apart else 0.45
    demo_rig.build_character("Left", location=(-x, 0, 0), rotation_z=-math.pi / 2, **SMALL)
    demo_rig.build_character("Right", location=(x, 0, 0), rotation_z=math.pi / 2, **SMALL)
    if third_at is not None:
        demo_rig.build_character("Third", location=(*third_at, 0), swing=0.0, **SMALL)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    return path


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    d = tmp_path_factory.mktemp("ci")
    return {"cross": _save(d / "cross.blend"),
            "apart": _save(d / "apart.blend", apart=True),
            # a third character standing where Left's tube sweeps: new crossings
            "third": _save(d / "third.blend", third_at=(-0.45, 0.0))}


@pytest.fixture(scope="module")
def crossing_scan(scenes, tmp_path_factory):
    d = tmp_path_factory.mktemp("cross_out")
    out, xml = d / "scan.json", d / "scan.xml"
    # frames -2..0 are outside the scene and action range; `--frames -2:12` must parse
    res = run("scan", scenes["cross"], "--frames", "-2:12", "--fail-on-collision",
              "--json", out, "--junit", xml)
    return res, out, xml


def test_crossing_characters_fail_with_episodes_and_junit(crossing_scan):
    res, out, xml = crossing_scan
    assert res.returncode == 1, res.stderr
    data = json.loads(out.read_text())
    assert data["complete"] is True and data["interrupted"] is False
    assert data["refit"] == {"Left": "sphere-tree", "Right": "sphere-tree"}
    assert [f["frame"] for f in data["frames"]] == list(range(-2, 13))
    colliding = [f["frame"] for f in data["frames"] if f["pairs"]]
    assert colliding
    # the episodes are the runs of consecutive colliding frames
    eps = data["episodes"]
    spans = [(e["start"], e["end"]) for e in eps]
    runs, start = [], None
    for k, f in enumerate(colliding):
        if start is None:
            start = f
        if k + 1 == len(colliding) or colliding[k + 1] != f + 1:
            runs.append((start, f))
            start = None
    assert spans == runs
    for e in eps:
        worst = max((f for f in data["frames"] if e["start"] <= f["frame"] <= e["end"]),
                    key=lambda f: len(f["pairs"]))
        assert e["worst_pairs"] == len(worst["pairs"])
    last = res.stdout.strip().splitlines()[-1]
    assert last.startswith(f"{len(eps)} collision episode(s):")
    assert f"frames {eps[0]['start']}-{eps[0]['end']}" in last or f"frame {eps[0]['start']}" in last
    # one line before scanning about frames outside the animation
    assert "note: 3 of 15 frames lie outside the scene range 1:12 and 3 outside the action" \
        in res.stdout
    # stdout has only the command's lines: Blender's log went to stderr
    assert "Read blend" not in res.stdout and "Read blend" in res.stderr
    suite = ET.parse(xml).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert set(cases) == {"Left x Right"}
    fail = cases["Left x Right"].find("failure")
    assert fail is not None and f"frames {eps[0]['start']}" in fail.get("message") \
        or f"frame {eps[0]['start']}" in fail.get("message")
    assert suite.get("failures") == "1"


def test_never_touching_characters_pass(scenes, tmp_path):
    xml = tmp_path / "apart.xml"
    res = run("scan", scenes["apart"], "--self", "--fail-on-collision", "--junit", xml)
    assert res.returncode == 0, res.stdout + res.stderr
    suite = ET.parse(xml).getroot().find("testsuite")
    names = [c.get("name") for c in suite.iter("testcase")]
    assert sorted(names) == ["Left self", "Left x Right", "Right self"]
    assert not list(suite.iter("failure")) and suite.get("failures") == "0"
    assert res.stdout.strip().splitlines()[-1] == "no collision episodes"


def test_allow_list_signs_off_known_contacts_and_catches_new_ones(scenes, crossing_scan,
                                                                   tmp_path):
    _, reviewed, _ = crossing_scan
    res = run("scan", scenes["cross"], "--fail-on-collision", "--allow", reviewed)
    assert res.returncode == 0, res.stdout[-500:] + res.stderr
    # the same reviewed list as the CSV the panel exports
    csv_path = tmp_path / "reviewed.csv"
    rows = ["frame,object_a,polygon_a,object_b,polygon_b,ms"]
    for f in json.loads(reviewed.read_text())["frames"]:
        rows += [f"{f['frame']},{b},{pb},{a},{pa},0" for a, pa, b, pb in f["pairs"]]  # reversed
    csv_path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "third.json"
    res = run("scan", scenes["third"], "--fail-on-collision", "--allow", csv_path,
              "--json", out)
    assert res.returncode == 1, res.stderr
    data = json.loads(out.read_text())
    objs = {tuple(sorted(e["objects"])) for e in data["episodes"]}
    assert objs and all("Third" in o for o in objs)       # only the new crossings remain


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_keeps_the_frames_done(scenes, tmp_path, sig):
    out = tmp_path / "long.json"
    proc = subprocess.Popen([sys.executable, "-u", "-m", "skin_collide", "scan",
                             str(scenes["cross"]), "--frames", "1:100000", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if sum("frame" in ln and "/100000" in ln for ln in lines) >= 6:
                break
        # the report on disk is already a valid, incomplete document
        early = json.loads(out.read_text())
        assert early["complete"] is False and early["interrupted"] is False
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    stdout = "".join(lines) + rest
    assert "note: 99988 of 100000 frames lie outside the scene range 1:12" in stdout
    assert "estimate:" in stdout
    err_lines = [ln for ln in err.splitlines() if ln.startswith("skin_collide:")]
    assert len(err_lines) == 1 and "interrupted after" in err_lines[0], err
    assert "Traceback" not in err
    data = json.loads(out.read_text())
    assert data["interrupted"] is True and data["complete"] is False
    assert data["frames_requested"] == 100000
    done = [f["frame"] for f in data["frames"]]
    assert len(done) >= 6 and done == list(range(1, len(done) + 1))


def test_extension_build_command_of_the_readme(tmp_path):
    """`bash dev build`, as the README writes it, on a fresh copy of the repository (no
    dist/), makes the zip; a broken manifest fails the command."""
    import re

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    readme = open(os.path.join(root, "README.md")).read()
    assert re.search(r"^bash dev build\s*$", readme, re.M), "README shows `bash dev build`"
    clone = fresh_copy(tmp_path / "clone")
    env = dev_env()
    res = subprocess.run(["bash", "dev", "build"], cwd=clone, env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert [p.suffix for p in (clone / "dist").iterdir()] == [".zip"]
    manifest = clone / "blender_manifest.toml"
    manifest.write_text(re.sub(r'^version = .*$', 'version = "not semver"',
                               manifest.read_text(), flags=re.M))
    res = subprocess.run(["bash", "dev", "build"], cwd=clone, env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode != 0
