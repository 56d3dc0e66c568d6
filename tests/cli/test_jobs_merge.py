"""Long shots (issue 13): `scan --jobs N` and `merge`.

* `core.report.merge` unit tests: episodes recomputed across chunk boundaries, refit united,
  mismatched or overlapping reports refused;
* through the CLI on a generated scene: `--jobs 2` writes the JSON of `--jobs 1` (minus the
  "ms" fields); three chunk reports merge into the whole-range report; mismatched reports
  are refused with one line and exit 2; SIGINT to `scan --jobs 2` stops both workers and
  keeps the frames they finished, marked interrupted.
"""
import copy
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from skin_collide.core.report import merge


def doc(frames, objects=("A", "B"), refit=None, source=None, complete=True):
    return {"objects": list(objects), "refit": refit or {o: "sphere-tree" for o in objects},
            "complete": complete, "interrupted": False, "frames_requested": len(frames),
            "frames": [{"frame": f, "pairs": [list(p) for p in ps], "ms": 1.0}
                       for f, ps in frames],
            "episodes": [], "source": source or {"file": "x.blend", "method": "sphere-tree",
                                                 "self": False, "first_hit": False,
                                                 "filters": {"ignore_rest_contacts": False,
                                                             "allow": None}}}


def test_merge_recomputes_episodes_across_chunks():
    hit = [("A", 1, "B", 2)]
    a = doc([(1, []), (2, hit), (3, hit)])
    b = doc([(4, hit + [("A", 3, "B", 4)]), (5, [])], refit={"A": "bottom-up", "B": "sphere-tree"})
    m = merge.merge_reports([b, a])
    assert [f["frame"] for f in m["frames"]] == [1, 2, 3, 4, 5]
    assert m["episodes"] == [{"objects": ["A", "B"], "start": 2, "end": 4, "worst_frame": 4,
                              "worst_pairs": 2, "frames": 3, "pairs": 4}]
    assert m["refit"] == {"A": "bottom-up+sphere-tree", "B": "sphere-tree"}
    assert m["frames_requested"] == 5 and m["complete"] and not m["interrupted"]


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(objects=["A", "C"]), "other objects"),
    (lambda d: d["source"].update(self=True), "self"),
    (lambda d: d["source"].update(file="y.blend"), "file"),
    (lambda d: d["source"]["filters"].update(allow="abc"), "filters"),
    (lambda d: d.pop("source"), "no \"source\""),
    (lambda d: d["frames"][0].update(frame=3), "frame 3 is in two reports"),
])
def test_merge_refuses_mismatched_reports(change, words):
    a = doc([(1, []), (2, []), (3, [])])
    b = doc([(4, []), (5, [])])
    merge.merge_reports([a, copy.deepcopy(b)])          # the unchanged pair merges
    change(b)
    with pytest.raises(merge.MergeError, match=words.replace("\"", ".")) as exc:
        merge.merge_reports([a, b])
    assert "\n" not in str(exc.value)


# -- issue 26 §5: the file is identified by its content, not its base name -------------------

def src(path, sha256=None):
    s = {"file": os.path.basename(path), "path": path, "method": "sphere-tree", "self": False,
         "first_hit": False, "filters": {"ignore_rest_contacts": False, "allow": None}}
    if sha256:
        s["sha256"] = sha256
    return s


def test_merge_refuses_two_files_of_one_base_name():
    a = doc([(1, []), (2, [])], source=src("/farm/sh010/pair.blend", "a" * 64))
    b = doc([(3, []), (4, [])], source=src("/farm/sh020/pair.blend", "b" * 64))
    with pytest.raises(merge.MergeError) as exc:
        merge.merge_reports([a, b], names=["sh010_1.json", "sh020_3.json"])
    msg = str(exc.value)
    assert "/farm/sh010/pair.blend" in msg and "/farm/sh020/pair.blend" in msg
    assert "different files" in msg and "\n" not in msg


def test_merge_accepts_one_file_mounted_at_two_paths():
    a = doc([(1, []), (2, [])], source=src("/mnt/a/shots/sh010.blend", "c" * 64))
    b = doc([(3, []), (4, [])], source=src("/net/farm/sh010.blend", "c" * 64))
    m = merge.merge_reports([a, b])
    assert [f["frame"] for f in m["frames"]] == [1, 2, 3, 4]
    assert m["source"]["sha256"] == "c" * 64
    assert merge.source_notes([a, b], ["a.json", "b.json"]) == []


def test_merge_of_reports_without_a_digest_falls_back_and_says_so():
    # A report with the path but no digest (the panel's, of a file with unsaved changes):
    # the full path decides.
    a = doc([(1, [])], source=src("/shots/sh010/pair.blend"))
    b = doc([(2, [])], source=src("/shots/sh010/pair.blend", "d" * 64))
    assert [f["frame"] for f in merge.merge_reports([a, b])["frames"]] == [1, 2]
    notes = merge.source_notes([a, b], ["a.json", "b.json"])
    assert len(notes) == 1 and "a.json" in notes[0] and "full path" in notes[0]
    c = doc([(3, [])], source=src("/shots/sh020/pair.blend"))
    with pytest.raises(merge.MergeError, match="sh010/pair.blend.*sh020/pair.blend"):
        merge.merge_reports([a, c], names=["a.json", "c.json"])
    # A report of an older skin_collide (the base name only): the name decides, and says so.
    old = doc([(4, [])])
    assert "path" not in old["source"] and "sha256" not in old["source"]
    old2 = doc([(5, [])])
    assert [f["frame"] for f in merge.merge_reports([old, old2])["frames"]] == [4, 5]
    notes = merge.source_notes([old, old2], ["o1.json", "o2.json"])
    assert notes and all("base name" in n for n in notes)


# -- through the command line ---------------------------------------------------------------

blender = pytest.mark.blender


def run(*args, **kw):
    return subprocess.run([sys.executable, "-m", "skin_collide", *args], capture_output=True,
                          text=True, timeout=600, **kw)


def without_ms(d):
    d = copy.deepcopy(d)
    for f in d["frames"]:
        f.pop("ms", None)
    return d


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    pytest.importorskip("bpy")
    from conftest import inside_blender_binary

    if inside_blender_binary():
        pytest.skip("subprocess CLI tests need the pip bpy module")
    d = tmp_path_factory.mktemp("jobs")
    out = d / "demo.blend"
    res = run("demo", "--out", str(out), "--rings", "12", "--segments", "8",
              "--frame-count", "24")
    assert res.returncode == 0, res.stderr
    whole = d / "whole.json"
    res = run("scan", str(out), "--self", "--frames", "1:24", "--json", str(whole))
    assert res.returncode == 0, res.stderr
    return out, d, json.loads(whole.read_text())


@blender
def test_jobs_gives_the_report_of_one_process(demo):
    path, d, whole = demo
    out = d / "jobs2.json"
    res = run("scan", str(path), "--self", "--frames", "1:24", "--jobs", "2", "--json", str(out))
    assert res.returncode == 0, res.stderr
    assert "2 worker processes" in res.stdout
    jobs = json.loads(out.read_text())
    assert sum(len(f["pairs"]) for f in whole["frames"]) > 0 and whole["episodes"]
    assert without_ms(jobs) == without_ms(whole)


@blender
def test_three_chunks_merge_into_the_whole_range(demo):
    path, d, whole = demo
    parts = []
    for k, rng in enumerate(("1:5", "6:19", "20:24")):      # chunk edges inside episodes
        parts.append(d / f"chunk{k}.json")
        res = run("scan", str(path), "--self", "--frames", rng, "--json", str(parts[-1]))
        assert res.returncode == 0, res.stderr
    out = d / "merged.json"
    res = run("merge", *map(str, parts[::-1]), "--json", str(out))
    assert res.returncode == 0, res.stderr
    merged = json.loads(out.read_text())
    assert without_ms(merged) == without_ms(whole)
    # A report of other settings is refused with one line and exit 2.
    other = d / "noself.json"
    assert run("scan", str(path), "--frames", "25:26", "--json", str(other)).returncode == 0
    res = run("merge", str(parts[0]), str(other), "--json", str(d / "bad.json"))
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert res.stderr.startswith("skin_collide: error:") and "self" in res.stderr
    assert not (d / "bad.json").exists()


@blender
def test_interrupting_jobs_keeps_the_frames_done(demo, tmp_path):
    path, d, _ = demo
    out = tmp_path / "int.json"
    env = dict(os.environ, TMPDIR=str(tmp_path))        # where the workers' parts go
    proc = subprocess.Popen([sys.executable, "-m", "skin_collide", "scan", str(path), "--self",
                             "--frames", "1:100000", "--jobs", "2", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = 0
    t0 = time.monotonic()
    while seen < 2 and time.monotonic() - t0 < 120:   # both workers report frames done
        time.sleep(0.5)
        seen = 0
        for root, _, files in os.walk(tmp_path):
            for f in files:
                if f.startswith("part_") and f.endswith(".json"):
                    try:
                        seen += bool(json.loads(open(os.path.join(root, f)).read())["frames"])
                    except (ValueError, OSError):
                        pass
    assert seen == 2
    proc.send_signal(signal.SIGINT)                    # the parent only, as a CI runner does
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    rep = json.loads(out.read_text())
    assert rep["interrupted"] and not rep["complete"]
    frames = [f["frame"] for f in rep["frames"]]
    assert frames and frames[0] == 1 and any(f > 50000 for f in frames)   # both chunks
    assert not [p for p in os.listdir(tmp_path) if p.startswith("skin_collide_jobs_")]


@blender
def test_chunks_of_a_built_file_load_the_built_data(demo):
    """The farm recipe: the panel's Build stored in the .blend; a chunk scan loads it (no
    rebuild) and reports the same pairs."""
    import bpy

    import skin_collide

    path, d, whole = demo
    built = d / "built.blend"
    skin_collide.register()
    try:
        bpy.ops.wm.open_mainfile(filepath=str(path))
        meshes = [ob for ob in bpy.context.scene.objects if ob.type == "MESH"]
        for ob in meshes:
            ob.select_set(True)
        bpy.context.view_layer.objects.active = meshes[0]
        assert bpy.ops.skin_collide.build() == {"FINISHED"}
        bpy.ops.wm.save_as_mainfile(filepath=str(built))
    finally:
        skin_collide.unregister()
    out = d / "built.json"
    res = run("scan", str(built), "--self", "--frames", "1:24", "--json", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("loaded from the .blend") == 2 and "built in" not in res.stdout
    got = without_ms(json.loads(out.read_text()))
    want = without_ms(whole)
    assert got["source"].pop("file") == "built.blend" and want["source"].pop("file") == "demo.blend"
    for key in ("path", "sha256"):                      # another file: another path and digest
        assert got["source"].pop(key) != want["source"].pop(key)
    assert got == want
    # Another method than the one built for: the scan builds.
    res = run("scan", str(built), "--frames", "1:2", "--method", "bottom-up")
    assert res.returncode == 0, res.stderr
    assert "loaded from the .blend" not in res.stdout and res.stdout.count("built in") == 2


@blender
def test_merge_tells_two_files_of_one_name_apart(demo, tmp_path):
    """Issue 26 §5: chunks of sh010/pair.blend and sh020/pair.blend are refused, naming
    both; chunks of one file reached by two paths (a farm mounting it elsewhere) merge."""
    import shutil

    path, d, whole = demo
    whole = copy.deepcopy(whole)                          # the module's, changed below
    sh010, sh020, mnt = (tmp_path / "sh010" / "pair.blend", tmp_path / "sh020" / "pair.blend",
                         tmp_path / "mnt" / "sh010" / "pair.blend")
    for p in (sh010, sh020, mnt):
        p.parent.mkdir(parents=True)
    shutil.copy(path, sh010)
    shutil.copy(path, mnt)
    res = run("demo", "--out", str(sh020), "--rings", "12", "--segments", "8",
              "--frame-count", "30")                     # the same objects, another shot
    assert res.returncode == 0, res.stderr
    chunks = {}
    for name, blend, rng in (("a", sh010, "1:12"), ("b", sh020, "13:24"), ("c", mnt, "13:24")):
        chunks[name] = tmp_path / f"{name}.json"
        res = run("scan", str(blend), "--self", "--frames", rng, "--json", str(chunks[name]))
        assert res.returncode == 0, res.stderr
    out = tmp_path / "merged.json"
    res = run("merge", str(chunks["a"]), str(chunks["b"]), "--json", str(out))
    assert res.returncode == 2, res.stdout
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error:"), res.stderr
    assert str(sh010) in lines[0] and str(sh020) in lines[0]
    assert not out.exists()
    res = run("merge", str(chunks["a"]), str(chunks["c"]), "--json", str(out))
    assert res.returncode == 0, res.stderr
    merged = json.loads(out.read_text())
    assert merged["source"].pop("path") == str(sh010)
    assert merged["source"].pop("sha256") == whole["source"].pop("sha256")
    whole["source"].pop("path")
    merged["source"]["file"] = whole["source"]["file"]
    assert without_ms(merged) == without_ms(whole)


# -- issue 26 §10: how many workers, and workers that hang or die --------------------------

def test_jobs_are_capped_at_the_cores():
    from skin_collide import cli

    assert cli.cap_jobs(2, 2) == (2, None)
    n, note = cli.cap_jobs(99, 2)
    assert n == 2 and "--jobs 99" in note and "2 cores" in note and "\n" not in note
    assert cli.cap_jobs(3, 1)[0] == 1 and "1 core " in cli.cap_jobs(3, 1)[1]
    assert cli.usable_cores() >= 1


@blender
@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_jobs_below_one_are_refused(demo, jobs):
    path, d, _ = demo
    res = run("scan", str(path), "--frames", "1:4", f"--jobs={jobs}")
    assert res.returncode == 2, res.stdout
    lines = res.stderr.strip().splitlines()
    assert lines == [f"skin_collide: error: --jobs must be at least 1, got {jobs}"]
    assert "object " not in res.stdout


@blender
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_jobs_beyond_the_usable_cores_run_on_those_cores(demo, tmp_path):
    path, d, whole = demo
    one = {min(os.sched_getaffinity(0))}
    out = tmp_path / "capped.json"
    res = run("scan", str(path), "--self", "--frames", "1:24", "--jobs", "99",
              "--json", str(out), preexec_fn=lambda: os.sched_setaffinity(0, one))
    assert res.returncode == 0, res.stderr
    notes = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(notes) == 1 and "--jobs 99" in notes[0] and "1 core " in notes[0], res.stderr
    assert "worker processes" not in res.stdout            # one core: scanned in-process
    assert without_ms(json.loads(out.read_text())) == without_ms(whole)


def _hook(tmp_path, code):
    """A `sitecustomize` for the scan's processes: fault injection in the workers only."""
    folder = tmp_path / "hook"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(code)
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(folder)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


HANG_AT_EXIT = """
import os, sys, threading
if "--jobs" not in sys.argv and any(a.startswith("--frames=") for a in sys.argv):
    # bpy 4.5's exit: the work is done and written, the process never ends.
    def _exit_hangs(status):
        threading.Event().wait()
    os._exit = _exit_hangs
"""


@blender
def test_a_worker_that_hangs_at_exit_is_reaped_and_its_frames_kept(demo, tmp_path):
    path, d, whole = demo
    out = tmp_path / "hang.json"
    res = run("scan", str(path), "--self", "--frames", "1:24", "--jobs", "2",
              "--json", str(out), env=_hook(tmp_path, HANG_AT_EXIT))
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("did not exit") == 2, res.stdout
    assert without_ms(json.loads(out.read_text())) == without_ms(whole)


DIE_MID_CHUNK = """
import os, signal, sys
if "--frames=13:24" in sys.argv:
    import skin_collide.cli.scan as cli
    _real = cli._progress
    def _progress(k, n, rec):
        _real(k, n, rec)
        if k == 2:
            os.kill(os.getpid(), signal.SIGKILL)     # as the out-of-memory killer does
    cli._progress = _progress
"""


@blender
def test_a_worker_that_dies_fails_the_scan_and_keeps_the_other_frames(demo, tmp_path):
    path, d, whole = demo
    out = tmp_path / "died.json"
    res = run("scan", str(path), "--self", "--frames", "1:24", "--jobs", "2",
              "--json", str(out), env=_hook(tmp_path, DIE_MID_CHUNK))
    assert res.returncode == 2, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(lines) == 1 and lines[0].startswith("skin_collide: error: "), res.stderr
    assert "frames 13-24" in lines[0] and "SIGKILL" in lines[0] and str(out) in lines[0]
    rep = json.loads(out.read_text())
    assert not rep["complete"] and "frames 13-24" in rep["error"]
    got = {f["frame"]: f["pairs"] for f in rep["frames"]}
    assert set(range(1, 13)) <= set(got)                  # the finished worker's chunk
    assert all(got[f["frame"]] == f["pairs"] for f in whole["frames"] if f["frame"] in got)
