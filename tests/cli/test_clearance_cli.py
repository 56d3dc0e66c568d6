"""`scan --clearance D` (issue 42) on the demo shot: the report's clearance, near contacts,
`--near-pairs` lists and near episodes; the clearance gate of `--fail-on-collision`; units
follow the scene's unit scale; bad values are one line and exit 2; `--jobs` and `merge`
carry it."""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.blender
pytest.importorskip("bpy")

from cli_helpers import make_demo, run  # noqa: E402
from conftest import inside_blender_binary  # noqa: E402

if inside_blender_binary():
    pytest.skip("subprocess CLI tests need the pip bpy module (plain pytest run)",
                allow_module_level=True)




@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return make_demo(tmp_path_factory.mktemp("clearance"))[0]


def test_clearance_report_fields_and_near_pairs(demo, tmp_path):
    out = tmp_path / "near.json"
    res = run("scan", demo, "--frames", "1:12", "--json", out, "--clearance", "0.3",
              "--near-pairs")
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert next(iter(doc)) == "clearance" and doc["clearance"] == 0.3
    assert doc["source"]["filters"]["clearance"] == "0.3"
    near_frames = both_frames = 0
    for f in doc["frames"]:
        rows = {(a, pa, b, pb): d for a, pa, b, pb, d in f["near"]}
        assert len(rows) == len(f["near"])
        in_contacts = set()
        for c in f["near_contacts"]:
            assert c["kind"] == "near" and c["objects"] == ["Left", "Right"]
            assert len(c["points"]) == 2 and len(c["bones"]) == 2
            ds = [rows[("Left", x, "Right", y)] for x, y in c["pairs"]]
            assert c["min_distance"] == min(ds) and 0 <= c["min_distance"] <= 0.3 * (1 + 1e-9)
            pa, pb = c["points"]
            gap = sum((u - v) ** 2 for u, v in zip(pa, pb)) ** 0.5
            assert abs(gap - c["min_distance"]) <= 1e-9
            in_contacts |= {("Left", x, "Right", y) for x, y in c["pairs"]}
        assert in_contacts == set(rows)            # the contacts partition the near pairs
        assert all(d <= 0.3 * (1 + 1e-9) for d in rows.values())
        near_frames += bool(rows)
        # A polygon pair is intersecting or near, never both (issue 55).
        hits = {tuple(p) for p in f["pairs"]} | {(b, pb, a, pa) for a, pa, b, pb in f["pairs"]}
        assert not hits & set(rows)
        both_frames += bool(hits) and bool(rows)
    assert near_frames >= 5 and both_frames >= 3
    assert doc["near_episodes"] and all(e["kind"] == "near" for e in doc["near_episodes"])
    assert "closest" in res.stdout and "near episode(s) by bone pair" in res.stdout

    plain = tmp_path / "plain.json"
    res = run("scan", demo, "--frames", "1:12", "--json", plain, "--clearance", "0.3")
    assert res.returncode == 0, res.stderr
    pdoc = json.loads(plain.read_text())
    assert all("near" not in f and "near_contacts" in f for f in pdoc["frames"])
    # Without --near-pairs a near contact gives its pair count, not its pairs.
    assert all("pairs" not in c for f in pdoc["frames"] for c in f["near_contacts"])
    assert [[{**c, "pairs": None} for c in f["near_contacts"]] for f in pdoc["frames"]] == \
        [[{**c, "pairs": None} for c in f["near_contacts"]] for f in doc["frames"]]
    assert all(c["n_pairs"] == len(c["pairs"]) for f in doc["frames"] for c in f["near_contacts"])
    assert [f["pairs"] for f in pdoc["frames"]] == [f["pairs"] for f in doc["frames"]]

    none = tmp_path / "none.json"
    res = run("scan", demo, "--frames", "1:12", "--json", none)
    assert res.returncode == 0, res.stderr
    ndoc = json.loads(none.read_text())
    assert "clearance" not in ndoc and "near_episodes" not in ndoc
    assert all("near_contacts" not in f for f in ndoc["frames"])
    assert [f["pairs"] for f in ndoc["frames"]] == [f["pairs"] for f in doc["frames"]]


def test_clearance_gate(demo, tmp_path):
    # Frames 5-8: the characters pass within 0.3 of each other without touching.
    res = run("scan", demo, "--frames", "5:8", "--clearance", "0.3", "--fail-on-collision",
              "--junit", tmp_path / "gate.xml")
    assert res.returncode == 1, res.stdout + res.stderr
    xml = (tmp_path / "gate.xml").read_text()
    assert 'type="clearance"' in xml and 'failures="1"' in xml
    res = run("scan", demo, "--frames", "5:8", "--clearance", "0.3", "--junit",
              tmp_path / "nogate.xml")
    assert res.returncode == 0, res.stderr
    assert 'failures="0"' in (tmp_path / "nogate.xml").read_text()
    res = run("scan", demo, "--frames", "5:8", "--clearance", "1mm", "--fail-on-collision")
    assert res.returncode == 0, res.stdout + res.stderr
    res = run("scan", demo, "--frames", "5:8", "--fail-on-collision")
    assert res.returncode == 0, res.stdout + res.stderr


def test_units_follow_the_scene_unit_scale(demo, tmp_path):
    scaled = tmp_path / "scaled.blend"
    script = ("import bpy, sys; bpy.ops.wm.open_mainfile(filepath=sys.argv[1]); "
              "bpy.context.scene.unit_settings.scale_length = 0.01; "
              "bpy.ops.wm.save_as_mainfile(filepath=sys.argv[2])")
    res = subprocess.run([sys.executable, "-c", script, str(demo), str(scaled)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    for flag, want in (("30cm", 30.0), ("0.5", 0.5), ("2 mm", 0.2)):
        out = tmp_path / "u.json"
        res = run("scan", scaled, "--frames", "5:5", "--json", out, "--clearance", flag)
        assert res.returncode == 0, res.stderr
        # Blender keeps scale_length in float32 (0.01 is 0.0099999998).
        assert json.loads(out.read_text())["clearance"] == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("args, message", [
    (("--clearance=-1mm",), "must be a finite distance >= 0"),
    (("--clearance", "2furlongs"), "not a distance"),
    (("--clearance", "abc"), "not a distance"),
    (("--clearance", "inf"), "must be a finite distance >= 0"),
    (("--near-pairs",), "give --clearance D"),
])
def test_bad_clearance_is_one_line_and_exit_2(demo, args, message):
    res = run("scan", demo, "--frames", "1:2", *args)
    assert res.returncode == 2
    err = [line for line in res.stderr.splitlines() if line.startswith("skin_collide: error:")]
    assert len(err) == 1 and message in err[0], res.stderr


def test_jobs_and_merge_carry_the_clearance(demo, tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    res = run("scan", demo, "--frames", "1:12", "--json", one, "--clearance", "0.3",
              "--near-pairs")
    assert res.returncode == 0, res.stderr
    res = run("scan", demo, "--frames", "1:12", "--json", two, "--clearance", "0.3",
              "--near-pairs", "--jobs", "2")
    assert res.returncode == 0, res.stderr
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert b["clearance"] == 0.3
    assert [f["near"] for f in a["frames"]] == [f["near"] for f in b["frames"]]
    assert a["near_episodes"] == b["near_episodes"]
    # Chunks of other clearances do not merge.
    c1, c2 = tmp_path / "c1.json", tmp_path / "c2.json"
    assert run("scan", demo, "--frames", "1:6", "--json", c1, "--clearance", "0.3").returncode == 0
    assert run("scan", demo, "--frames", "7:12", "--json", c2, "--clearance", "0.2").returncode == 0
    res = run("merge", c1, c2, "--json", tmp_path / "m.json")
    assert res.returncode == 2 and "differ" in res.stderr, res.stderr


def test_farm_commands_forward_the_clearance(demo):
    res = run("farm-commands", demo, "--frames", "1:12", "--chunk", "6", "--out", "o",
              "--clearance", "2mm", "--near-pairs")
    assert res.returncode == 0, res.stderr
    lines = [line for line in res.stdout.splitlines() if " scan " in line]
    assert len(lines) == 2 and all("--clearance 2mm --near-pairs" in line for line in lines)
    res = run("farm-commands", demo, "--frames", "1:12", "--chunk", "6", "--out", "o",
              "--clearance", "2xx")
    assert res.returncode == 2 and "not a distance" in res.stderr


@pytest.mark.parametrize("args, message", [
    (("--clearance", "-1mm"), "--clearance '-1mm': must be a finite distance >= 0"),
    (("--clearance",), "--clearance needs a value: a distance D"),
    (("--clearance", "--near-pairs"), "--clearance needs a value: a distance D"),
])
def test_negative_or_missing_clearance_is_exactly_one_line(demo, args, message):
    # argparse would take "-1mm" for an option and print its usage over several lines.
    res = run("scan", demo, "--frames", "1:2", *args)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"skin_collide: error: {message}"), res.stderr
    assert res.stdout == ""


def without_ms(doc: dict) -> dict:
    return {**doc, "frames": [{k: v for k, v in f.items() if k != "ms"} for f in doc["frames"]]}


def test_merged_clearance_chunks_equal_the_whole_scan(demo, tmp_path):
    flags = ("--clearance", "0.3", "--near-pairs")
    whole, c1, c2, merged = (tmp_path / n for n in ("whole.json", "c1.json", "c2.json", "m.json"))
    assert run("scan", demo, "--frames", "1:12", "--jobs", "1", "--json", whole,
               *flags).returncode == 0
    assert run("scan", demo, "--frames", "1:6", "--jobs", "1", "--json", c1, *flags).returncode == 0
    assert run("scan", demo, "--frames", "7:12", "--jobs", "1", "--json", c2,
               *flags).returncode == 0
    res = run("merge", c2, c1, "--json", merged)
    assert res.returncode == 0, res.stderr
    w, m = json.loads(whole.read_text()), json.loads(merged.read_text())
    # A near episode runs across the chunks' edge (frames 6 | 7): merge joined it.
    assert any(e["start"] <= 6 < e["end"] for e in w["near_episodes"])
    assert m["clearance"] == w["clearance"] == 0.3
    assert [f["near_contacts"] for f in m["frames"]] == [f["near_contacts"] for f in w["frames"]]
    assert [f["near"] for f in m["frames"]] == [f["near"] for f in w["frames"]]
    assert m["near_episodes"] == w["near_episodes"]
    assert without_ms(m) == without_ms(w)
    assert "near episode(s) by bone pair" in res.stdout


def test_jobs_2_equals_jobs_1_with_a_clearance(demo, tmp_path):
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    for jobs, out in (("1", one), ("2", two)):
        res = run("scan", demo, "--frames", "1:12", "--jobs", jobs, "--json", out,
                  "--clearance", "0.3")
        assert res.returncode == 0, res.stderr
    a, b = json.loads(one.read_text()), json.loads(two.read_text())
    assert a["near_episodes"] and any(f["near_contacts"] for f in a["frames"])
    assert without_ms(a) == without_ms(b)


def test_contacts_csv_from_scan_jobs_and_merge(demo, tmp_path):
    """`--contacts-csv OUT.csv` (scan, scan --jobs, merge): the report's contacts as CSV,
    the near contacts as rows of kind "near" with their min_distance; the same file from
    every path; an output named twice is one line, exit 2, before anything runs."""
    import csv

    from skin_collide.core.contacts.contact import CSV_COLUMNS, contacts_csv

    out, table = tmp_path / "whole.json", tmp_path / "whole.csv"
    res = run("scan", demo, "--frames", "1:12", "--json", out, "--clearance", "0.3",
              "--contacts-csv", table)
    assert res.returncode == 0, res.stderr
    assert str(table) in res.stdout                        # "wrote ..., whole.csv"
    doc = json.loads(out.read_text())
    text = table.read_text()
    assert text == contacts_csv(doc)
    rows = list(csv.DictReader(text.splitlines()))
    assert list(rows[0]) == list(CSV_COLUMNS)
    want = sum(len(f.get("contacts", [])) + len(f.get("near_contacts", []))
               for f in doc["frames"])
    assert len(rows) == want
    near = [r for r in rows if r["kind"] == "near"]
    assert near and all(0 <= float(r["min_distance"]) <= 0.3 * (1 + 1e-9) for r in near)
    assert all(r["length"] == "" for r in near)
    assert any(r["kind"] != "near" and r["min_distance"] == "" for r in rows)

    jobs = tmp_path / "jobs.csv"
    res = run("scan", demo, "--frames", "1:12", "--clearance", "0.3", "--jobs", "2",
              "--contacts-csv", jobs)
    assert res.returncode == 0, res.stderr
    assert jobs.read_text() == text

    c1, c2, merged = tmp_path / "c1.json", tmp_path / "c2.json", tmp_path / "merged.csv"
    for part, frames in ((c1, "1:6"), (c2, "7:12")):
        assert run("scan", demo, "--frames", frames, "--json", part, "--clearance",
                   "0.3").returncode == 0
    res = run("merge", c1, c2, "--json", tmp_path / "m.json", "--contacts-csv", merged)
    assert res.returncode == 0, res.stderr
    assert merged.read_text() == text

    same = tmp_path / "same.json"
    res = run("scan", demo, "--frames", "1:2", "--json", same, "--contacts-csv", same)
    assert res.returncode == 2 and not same.exists()
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert lines == ["skin_collide: error: --json and --contacts-csv name the same file"], \
        res.stderr
    res = run("merge", c1, "--json", same, "--contacts-csv", same)
    assert res.returncode == 2 and "--json and --contacts-csv name the same file" in res.stderr
