"""Contact episodes by bone pair: runs of consecutive scanned frames in which two objects
have a contact between the same two bones (`ContactEpisode`, `contact_episodes`, from a
report's frames `episodes_of_report`), and the lines that name them (`summary`,
`length_text`). The runs themselves (`keyed_runs`, `best_frame`, `report_frames`,
`summary_lines`) are built here once for every kind of episode: near episodes
(`core.contacts.clearance`) use them too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


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
class Episode:
    """What every episode by bone pair has (`ContactEpisode`, `core.contacts.clearance`'s
    `NearEpisode` add their measure): objects `a`, `b`, bones `bone_a`, `bone_b`, and the
    run's first and last scanned frames."""

    a: str
    b: str
    bone_a: str | None
    bone_b: str | None
    start: int
    end: int

    def span(self) -> str:
        """"frame 7" or "frames 7–12"."""
        return f"frame {self.start}" if self.start == self.end else \
            f"frames {self.start}–{self.end}"


@dataclass
class ContactEpisode(Episode):
    """A run of consecutive scanned frames in which objects `a`, `b` have a contact
    between bones `bone_a`, `bone_b` (for a self-contact the bone pair in name order).
    `worst_frame` has the longest total crossing (`worst_length`, scene units); `kind` is
    "crossing" when some frame's contact crosses, else "touching"."""

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
        span = self.span()
        what = f"{length_text(self.worst_length)} of crossing" if self.kind == "crossing" \
            else "touching"
        return f"{who}, {bones}: {span}, worst frame {self.worst_frame}, {what}"


def _episode_key(c: dict) -> tuple:
    """(object A, object B, bone A, bone B) of a contact as in the report: the objects in
    name order (the bones follow them), a self-contact's bones in name order."""
    a, b = c["objects"]
    ba, bb = c["bones"]
    if (a, b) != tuple(sorted((a, b))):
        a, b, ba, bb = b, a, bb, ba
    if a == b and str(ba) > str(bb):
        ba, bb = bb, ba
    return a, b, ba, bb


def keyed_runs(frames: Sequence[tuple[int, Sequence[dict]]], fold: Callable[[Any, dict], Any],
               empty: Any) -> list[tuple[tuple, list[tuple[int, Any]]]]:
    """The episodes of every kind, built once: from ``[(frame, contacts as in the report),
    ...]`` in scan order, per bone-pair key (`_episode_key`) the runs of consecutive scanned
    frames with such a contact, each run as ``(key, [(frame, value), ...])`` where a
    frame's value folds its contacts of that key (``fold(value, contact)`` from `empty`).
    Sorted by first frame, then key (a key has one run per first frame)."""
    open_: dict[tuple, list] = {}
    done: list[tuple[tuple, list]] = []
    for frame, found in frames:
        values: dict[tuple, Any] = {}
        for c in found:
            key = _episode_key(c)
            values[key] = fold(values.get(key, empty), c)
        for key in [k for k in open_ if k not in values]:
            done.append((key, open_.pop(key)))
        for key, value in values.items():
            open_.setdefault(key, []).append((frame, value))
    done.extend(open_.items())
    done.sort(key=lambda run: (run[1][0][0], run[0][0], run[0][1], str(run[0][2]),
                               str(run[0][3])))
    return done


def best_frame(run: Sequence[tuple[int, float]], better: Callable[[float, float], bool]
               ) -> tuple[int, float]:
    """The (frame, value) of a run whose value no later one is `better` than: the first
    of the best."""
    best = run[0]
    for item in run[1:]:
        if better(item[1], best[1]):
            best = item
    return best


def report_frames(frames: Sequence[dict], field: str) -> list[tuple[int, list]]:
    """``[(frame, its list `field`)]`` of a report's frames that were checked and carry
    `field` ("contacts", "near_contacts"): what `keyed_runs` reads."""
    return [(f["frame"], f[field]) for f in frames if "not_checked" not in f and field in f]


def summary_lines(eps: Sequence, first: Callable, what: str, none: str, limit: int = 10
                  ) -> str:
    """Lines naming episodes (`describe()` each) in `first` order, `limit` of them, then
    how many more; `none` when there are none: bounded for the console and JUnit."""
    if not eps:
        return none
    lines = [f"{len(eps)} {what} episode(s) by bone pair:"]
    lines += ["  " + e.describe() for e in sorted(eps, key=first)[:limit]]
    if len(eps) > limit:
        lines.append(f"  and {len(eps) - limit} more")
    return "\n".join(lines)


def _fold_contact(value: tuple[float, bool], c: dict) -> tuple[float, bool]:
    """A frame's total crossing length and whether some contact crosses."""
    return value[0] + float(c["length"]), value[1] or c["kind"] == "crossing"


def contact_episodes(frames: Sequence[tuple[int, Sequence[dict]]]) -> list[ContactEpisode]:
    """Episodes by bone pair from ``[(frame, contacts as in the report), ...]`` in scan
    order: per (objects, bones), runs of consecutive scanned frames with such a contact."""
    out = []
    for key, run in keyed_runs(frames, _fold_contact, (0.0, False)):
        worst, length = best_frame([(f, v[0]) for f, v in run], lambda x, y: x > y)
        kind = "crossing" if any(v[1] for _, v in run) else "touching"
        out.append(ContactEpisode(*key, run[0][0], run[-1][0], worst, length, len(run), kind))
    return out


def episodes_of_report(frames: Sequence[dict]) -> list[ContactEpisode]:
    """`contact_episodes` of a report's frames (those that carry contacts)."""
    return contact_episodes(report_frames(frames, "contacts"))


def summary(eps: Sequence[ContactEpisode], limit: int = 10) -> str:
    """Lines naming the contact episodes (the longest crossings first, `limit` of them,
    then how many more): bounded for the console and JUnit."""
    return summary_lines(eps, lambda e: (-(e.kind == "crossing"), -e.worst_length, e.start),
                         "contact", "no contacts", limit)
