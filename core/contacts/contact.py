"""One contact of a frame (`Contact`: its polygon pairs, length, kind, bones, centre and
intersection curve; how they are made: `groups`) and how reports hold them: a frame's
contacts as JSON, with the segments listed up to a bound per frame (`to_json`), and a
report's contacts as CSV (`contacts_csv`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

#: Segments listed per frame in a report (the longest contacts' first); the lengths and
#: the counts stay exact.
SEGMENTS_PER_FRAME = 2000


@dataclass
class Contact:
    """One contact of a frame (see the module docstring)."""

    a: str
    b: str
    pairs: np.ndarray                       # (N, 2) int polygon pairs, [A side, B side]
    length: float
    kind: str
    bones: tuple
    center: np.ndarray                      # (3,)
    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))  # (S, 6)
    #: a contact of kind "passes through" (issue 57): its first contact, a lower bound
    #: in [0, 1] of the step, and the step's two samples (frames, fractional with
    #: subframes); None for a frame's contacts
    t: float | None = None
    step: tuple | None = None

    def summary_json(self) -> dict:
        """What episodes read: objects, bones, length, kind."""
        return {"objects": [self.a, self.b], "bones": list(self.bones),
                "length": float(self.length), "kind": self.kind}

    def to_json(self, max_segments: int | None = None) -> dict:
        seg = self.segments if max_segments is None else self.segments[:max(0, max_segments)]
        out = {"objects": [self.a, self.b], "pairs": self.pairs.tolist(),
               "length": float(self.length), "kind": self.kind,
               "bones": list(self.bones), "center": [float(x) for x in self.center],
               "segments": np.round(seg, 9).tolist()}
        if seg.shape[0] < self.segments.shape[0]:
            out["segments_total"] = int(self.segments.shape[0])
        if self.t is not None:
            out["t"] = float(self.t)
            out["step"] = [float(x) if x != int(x) else int(x) for x in self.step]
        return out


def to_json(found: Sequence[Contact], max_segments: int = SEGMENTS_PER_FRAME) -> list[dict]:
    """A frame's contacts for the report: segments listed up to `max_segments` for the
    frame, longest contacts first (`segments_total` on a contact whose list is cut)."""
    room = {}
    left = max_segments
    for k in sorted(range(len(found)), key=lambda k: -found[k].length):
        room[k] = left
        left = max(0, left - found[k].segments.shape[0])
    return [c.to_json(room[k]) for k, c in enumerate(found)]


SEGMENTS_LIMIT_TEXT = (f"segments are listed up to {SEGMENTS_PER_FRAME} per frame, longest "
                       "contacts first (segments_total on a contact whose list is cut); "
                       "lengths and pairs are exact")


CSV_COLUMNS = ("frame", "object_a", "object_b", "bone_a", "bone_b", "kind", "length",
               "pairs", "center_x", "center_y", "center_z", "min_distance", "t")


def _csv_row(frame: int, c: dict) -> list:
    """One contact's CSV row (`CSV_COLUMNS`). An intersection contact (crossing,
    touching) has a length and a blank min_distance; a near contact (`scan --clearance`,
    `core.contacts.clearance`) a blank length, its min_distance, and as centre the midpoint of
    its two closest points; a contact of kind "passes through" (`scan --between-frames`,
    `core.contacts.passing`) is one of the step from `frame` to the next checked frame, with
    length 0, its centre where it first touches and its first contact `t` in [0, 1] of the
    step (blank for the other kinds)."""
    n = len(c["pairs"]) if "pairs" in c else c.get("n_pairs", 0)
    head = [frame, *c["objects"], *("" if b is None else b for b in c["bones"]), c["kind"]]
    if c["kind"] == "near":
        pa, pb = c["points"]
        center = [(float(x) + float(y)) / 2.0 for x, y in zip(pa, pb)]
        return [*head, "", n, *map(repr, center), repr(float(c["min_distance"])), ""]
    t = repr(float(c["t"])) if c.get("t") is not None else ""
    return [*head, repr(float(c["length"])), n, *map(repr, c["center"]), "", t]


def contacts_csv(report: dict) -> str:
    """A report's contacts as CSV text, one row per contact of every frame (`CSV_COLUMNS`;
    `pairs` is the contact's pair count): a frame's intersection contacts, then its near
    contacts (kind "near", in a clearance scan's report), then the pass-through contacts
    of its step to the next checked frame (kind "passes through", `scan --between-frames`).
    Frames without contacts (older reports, frames not checked) give no rows."""
    import csv
    import io

    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for fr in report.get("frames", []):
        for c in [*fr.get("contacts", []), *fr.get("near_contacts", []),
                  *fr.get("passes_through", [])]:
            w.writerow(_csv_row(fr["frame"], c))
    return out.getvalue()
