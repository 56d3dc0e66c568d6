"""`core.report.model.from_json`: a report document read back into the report model gives
the document, the episodes and the contact episodes it was written with."""
import json

import numpy as np

from skin_collide.core.contacts import groups as contact_groups
from skin_collide.core.report import writing as core_report
from skin_collide.core.report.model import FrameRecord, ScanReport, from_json, report_source


def _contact(a, b, bones, length, kind, n_segments=2):
    return contact_groups.Contact(a, b, np.array([[0, 1], [2, 3]]), length, kind, bones,
                                  np.array([0.5, 0.25, 1.0]),
                                  np.arange(6 * n_segments, dtype=np.float64).reshape(-1, 6) / 7)


def _report() -> ScanReport:
    frames = [
        FrameRecord(1, [], 0.5, 3.0, ["sphere-tree"]),
        FrameRecord(2, [("A", 0, "B", 1), ("A", 2, "B", 3)], 1.25, 3.0, ["sphere-tree"],
                    contacts=[_contact("A", "B", ("arm", "leg"), 0.125, "crossing")]),
        FrameRecord(3, [("A", 0, "B", 1)], 0.75, 3.0, ["sphere-tree"],
                    contacts=[_contact("A", "B", ("arm", "leg"), 0.0, "touching"),
                              _contact("A", "A", ("hand", None), 0.25, "crossing", 1)]),
        FrameRecord(4, [], 0.0, 0.0, not_checked="the rig could not be evaluated"),
        FrameRecord(5, [("A", 0, "A", 9)], 0.5, 3.0, ["sphere-tree"],
                    contacts=[_contact("A", "A", ("hand", None), 0.5, "crossing", 0)]),
    ]
    return ScanReport(["A", "B"], frames, {"A": "sphere-tree", "B": "sphere-tree"},
                      {"A": 0.1, "B": 0.2}, complete=False, interrupted=True,
                      frames_requested=8, fallback={"B": "obb: no armature"},
                      source=report_source("/x/shot.blend", "sphere-tree", True, False, True),
                      scene="Shot", view_layer="ViewLayer")


def test_a_document_reads_back_into_the_report_it_was_written_from():
    report = _report()
    doc = json.loads(core_report.dumps(report.to_json()))
    back = from_json(doc)
    assert isinstance(back, ScanReport)
    assert back.to_json() == doc
    assert back.objects == report.objects and back.frames_requested == 8
    assert [f.pairs for f in back.frames] == [f.pairs for f in report.frames]
    assert back.episodes() == report.episodes()
    assert back.contact_episodes() == report.contact_episodes() \
        == contact_groups.episodes_of_report(doc["frames"])


def test_a_document_without_contacts_has_no_contact_episodes():
    doc = {"objects": ["A", "B"], "frames": [{"frame": 1, "pairs": [["A", 0, "B", 1]]},
                                             {"frame": 2, "pairs": []}]}
    back = from_json(doc)
    assert back.contact_episodes() == []
    assert [(e.start, e.end) for e in back.episodes()] == [(1, 1)]
    assert back.frames[0].pairs == [("A", 0, "B", 1)]
