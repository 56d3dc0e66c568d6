"""Contact episodes by bone pair: runs of consecutive scanned frames in which two objects
have a contact between the same two bones (`ContactEpisode`, `contact_episodes`, from a
report's frames `episodes_of_report`), and the lines that name them (`summary`,
`length_text`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


def length_text(x: float) -> str:
    """A length in scene units as people read it (scene units taken as metres)."""
    x = float(x)
    if x == 0.0:
        return "0"
    if x >= 1.0:
        return f"{x:.2f} m"
    if x >= 0.01:
        return f"{x * 100:.1f} cm"
    if x >= 1e-5:
        return f"{x * 1000:.2f} mm"
    return f"{x:.2e}"


@dataclass
class ContactEpisode:
    """A run of consecutive scanned frames in which objects `a`, `b` have a contact
    between bones `bone_a`, `bone_b` (for a self-contact the bone pair in name order).
    `worst_frame` has the longest total crossing (`worst_length`, scene units); `kind` is
    "crossing" when some frame's contact crosses, else "touching"."""

    a: str
    b: str
    bone_a: str | None
    bone_b: str | None
    start: int
    end: int
    worst_frame: int
    worst_length: float
    frames: int
    kind: str

    def to_json(self) -> dict:
        return {"objects": [self.a, self.b], "bones": [self.bone_a, self.bone_b],
                "start": self.start, "end": self.end, "worst_frame": self.worst_frame,
                "worst_length": self.worst_length, "frames": self.frames, "kind": self.kind}

    def describe(self) -> str:
        who = f"{self.a} (self)" if self.a == self.b else f"{self.a} x {self.b}"
        bones = f"{self.bone_a or '-'} × {self.bone_b or '-'}"
        span = f"frame {self.start}" if self.start == self.end else \
            f"frames {self.start}–{self.end}"
        what = f"{length_text(self.worst_length)} of crossing" if self.kind == "crossing" \
            else "touching"
        return f"{who}, {bones}: {span}, worst frame {self.worst_frame}, {what}"


def _episode_key(c: dict) -> tuple:
    a, b = c["objects"]
    ba, bb = c["bones"]
    if (a, b) != tuple(sorted((a, b))):
        a, b, ba, bb = b, a, bb, ba
    if a == b and str(ba) > str(bb):
        ba, bb = bb, ba
    return a, b, ba, bb


def contact_episodes(frames: Sequence[tuple[int, Sequence[dict]]]) -> list[ContactEpisode]:
    """Episodes by bone pair from ``[(frame, contacts as in the report), ...]`` in scan
    order: per (objects, bones), runs of consecutive scanned frames with such a contact."""
    open_: dict[tuple, ContactEpisode] = {}
    done: list[ContactEpisode] = []
    for frame, found in frames:
        totals: dict[tuple, list] = {}
        for c in found:
            t = totals.setdefault(_episode_key(c), [0.0, False])
            t[0] += float(c["length"])
            t[1] |= c["kind"] == "crossing"
        for key in [k for k in open_ if k not in totals]:
            done.append(open_.pop(key))
        for key, (ln, crossing) in totals.items():
            ep = open_.get(key)
            kind = "crossing" if crossing else "touching"
            if ep is None:
                open_[key] = ContactEpisode(*key, frame, frame, frame, ln, 1, kind)
            else:
                ep.end, ep.frames = frame, ep.frames + 1
                if crossing:
                    ep.kind = "crossing"
                if ln > ep.worst_length:
                    ep.worst_frame, ep.worst_length = frame, ln
    done.extend(open_.values())
    done.sort(key=lambda e: (e.start, e.a, e.b, str(e.bone_a), str(e.bone_b)))
    return done


def episodes_of_report(frames: Sequence[dict]) -> list[ContactEpisode]:
    """`contact_episodes` of a report's frames (those that carry contacts)."""
    return contact_episodes([(f["frame"], f["contacts"]) for f in frames
                             if "not_checked" not in f and "contacts" in f])


def summary(eps: Sequence[ContactEpisode], limit: int = 10) -> str:
    """Lines naming the contact episodes (the longest crossings first, `limit` of them,
    then how many more): bounded for the console and JUnit."""
    if not eps:
        return "no contacts"
    top = sorted(eps, key=lambda e: (-(e.kind == "crossing"), -e.worst_length, e.start))
    lines = [f"{len(eps)} contact episode(s) by bone pair:"]
    lines += ["  " + e.describe() for e in top[:limit]]
    if len(eps) > limit:
        lines.append(f"  and {len(eps) - limit} more")
    return "\n".join(lines)
