"""Pure parts of the CI checks: contacts, allow-lists, episodes, JUnit XML, safe writes."""
import json
import os
import xml.etree.ElementTree as ET

import pytest

from skin_collide.cli import _join_negative_frames, build_parser, parse_frames
from skin_collide.core.contacts import pairs as contacts
from skin_collide.core.report import writing as report


def test_canonical_is_unordered():
    assert contacts.canonical(("B", 3, "A", 7)) == contacts.canonical(["A", 7, "B", 3]) \
        == ("A", 7, "B", 3)
    assert contacts.canonical(("A", 9, "A", 2)) == ("A", 2, "A", 9)


def test_contact_index_is_the_rest_contact_rule():
    """Rest contacts drop a frame's pairs in either object order, self pairs in either
    index order; other pairs and other objects stay."""
    import numpy as np

    rest = contacts.ContactIndex([("R", 2, "L", 1), ("L", 8, "L", 3)])
    assert rest and rest.count == 2
    cross = np.array([[1, 2], [5, 6]])
    assert rest.drop("L", "R", cross).tolist() == [[5, 6]]
    assert rest.drop("R", "L", cross[:, ::-1]).tolist() == [[6, 5]]
    self_ = np.array([[3, 8], [8, 3], [2, 4]])
    assert rest.drop("L", "L", self_).tolist() == [[2, 4]]
    assert rest.drop("X", "L", cross).tolist() == cross.tolist()
    assert not contacts.ContactIndex()


def test_contact_index_from_arrays_equals_the_one_by_one_index():
    """Contacts given per object pair, in either orientation and repeated (two characters'
    stored views of the contacts between them), make the index the contacts one by one
    make: the same drops, the same count, each contact once in `as_set`."""
    import numpy as np

    one_by_one = [("R", 2, "L", 1), ("L", 8, "L", 3), ("L", 4, "R", 7)]
    groups = [(("L", "R"), np.array([[1, 2], [4, 7]])), (("R", "L"), np.array([[2, 1]])),
              (("L", "L"), np.array([[8, 3], [3, 8]])), (("R", "R"), np.zeros((0, 2)))]
    a, b = contacts.ContactIndex(one_by_one), contacts.ContactIndex.from_arrays(groups)
    assert b.count == a.count == 3
    frame = np.array([[1, 2], [4, 7], [3, 8], [8, 3], [2, 1], [5, 5]])
    for keys in (("L", "R"), ("R", "L"), ("L", "L"), ("R", "R")):
        assert b.drop(*keys, frame).tolist() == a.drop(*keys, frame).tolist()
    assert b.as_set() == a.as_set() == {("L", 1, "R", 2), ("L", 3, "L", 8), ("L", 4, "R", 7)}


def test_normalized_pairs_and_rows_in():
    import numpy as np

    p = np.array([[5, 2], [2, 5], [1, 9], [1, 9]])
    assert contacts.normalized_pairs(p, True).tolist() == [[1, 9], [2, 5]]
    assert contacts.normalized_pairs(p, False).tolist() == [[1, 9], [2, 5], [5, 2]]
    assert contacts.rows_in(p, np.array([[1, 9]])).tolist() == [False, False, True, True]
    assert contacts.rows_in(p, np.zeros((0, 2), int)).tolist() == [False] * 4


def test_episodes_are_runs_of_consecutive_scanned_frames_per_pair():
    P = ("A", 0, "B", 0)
    S = ("A", 1, "A", 5)
    frames = [(1, []), (2, [P]), (3, [P, P, S]), (4, [S]), (5, []), (6, [P])]
    eps = contacts.episodes(frames)
    got = [(e.a, e.b, e.start, e.end, e.worst_frame, e.worst_pairs, e.frames, e.pairs)
           for e in eps]
    assert got == [("A", "B", 2, 3, 3, 2, 2, 3), ("A", "A", 3, 4, 3, 1, 2, 2),
                   ("A", "B", 6, 6, 6, 1, 1, 1)]
    line = contacts.summary(eps)
    assert line.startswith("3 collision episode(s):") and "A x B: frames 2-3, worst frame 3 " \
        "with 2 pairs" in line and "A (self): frames 3-4" in line
    assert contacts.summary([]) == "no collision episodes"


def test_allow_list_formats(tmp_path):
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps({"objects": ["A", "B"], "frames": [
        {"frame": 1, "pairs": [["B", 4, "A", 2]], "ms": 1.0}]}))
    allow = tmp_path / "allow.json"
    allow.write_text(json.dumps({"allow": [["A", 2, "B", 4]]}))
    csv_path = tmp_path / "export.csv"
    csv_path.write_text("frame,object_a,polygon_a,object_b,polygon_b,ms\n3,A,2,B,4,0.5\n")
    for p in (scan, allow, csv_path):
        assert contacts.load_allow_list(str(p)) == {("A", 2, "B", 4)}
    bad = tmp_path / "bad.json"
    bad.write_text("{\"something\": 1}")
    for p, msg in ((bad, "expected a scan report"), (tmp_path / "none.json", "no such"),
                   (tmp_path / "scan.csv", "no such")):
        with pytest.raises(contacts.AllowListError, match=msg):
            contacts.load_allow_list(str(p))
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(contacts.AllowListError, match="cannot read"):
        contacts.load_allow_list(str(broken))


def test_junit_has_one_case_per_pair_and_self(tmp_path):
    eps = contacts.episodes([(4, [("A", 0, "C", 1)]), (5, [("A", 0, "C", 1)])])
    xml = report.junit_xml("suite", ["A", "B", "C"], True, eps, frames=10)
    path = tmp_path / "j.xml"
    report.write_atomic(str(path), xml)
    suite = ET.parse(path).getroot().find("testsuite")
    cases = {c.get("name"): c.find("failure") for c in suite.iter("testcase")}
    assert sorted(cases) == ["A self", "A x B", "A x C", "B self", "B x C", "C self"]
    assert [n for n, f in cases.items() if f is not None] == ["A x C"]
    assert "frames 4-5" in cases["A x C"].get("message")
    assert suite.get("tests") == "6" and suite.get("failures") == "1"


def test_output_checks_and_atomic_write(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        report.check_output_path(str(tmp_path), "--json")
    with pytest.raises(ValueError, match="does not exist"):
        report.check_output_path(str(tmp_path / "no" / "x.json"), "--json")
    with pytest.raises(ValueError, match="needs a file name"):
        report.check_output_path("", "--json")
    with pytest.raises(ValueError, match="not writable"):
        report.check_output_path("/proc/x.json", "--json")
    target = tmp_path / "r.json"
    assert report.check_output_path(str(target), "--json") == str(target)
    docs = {"n": 0}
    w = report.ProgressiveJSON(str(target), lambda: dict(docs), interval=3600)
    w.flush()
    docs["n"] = 1
    assert not w.maybe_write()              # throttled
    assert json.loads(target.read_text()) == {"n": 0}
    w.flush()
    assert json.loads(target.read_text()) == {"n": 1}
    assert os.listdir(tmp_path) == ["r.json"]     # no temporary file left behind


def test_negative_frames_parse():
    assert _join_negative_frames(["scan", "f", "--frames", "-5:-3"]) == \
        ["scan", "f", "--frames=-5:-3"]
    args = build_parser().parse_args(_join_negative_frames(["scan", "f", "--frames", "-5:-3"]))
    assert parse_frames(args.frames) == (-5, -3)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["scan", "f", "--frames", "-5:-3"])   # what argparse does


def test_exit_codes_are_documented_in_help_and_readme():
    import re

    from skin_collide import cli

    scan = build_parser()._subparsers._group_actions[0].choices["scan"]
    epilog = scan.format_help()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    readme = open(os.path.join(root, "README.md")).read()
    for code in (cli.EXIT_CLEAN, cli.EXIT_COLLISIONS, cli.EXIT_USAGE, cli.EXIT_INTERRUPTED):
        assert re.search(rf"^  {code}\s", epilog, re.M), code
        assert re.search(rf"^\| {code} \|", readme, re.M), code
    for flag in ("--fail-on-collision", "--junit", "--allow", "--ignore-rest-contacts",
                 "--first-hit", "--json", "--mode", "--self", "--frames", "--object"):
        assert flag in epilog and flag in readme, flag
