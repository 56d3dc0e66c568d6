"""Which contacts count: rest-pose contacts, reviewed allow-lists, and collision episodes.

Pure Python (no bpy). The panel (`addon.session.query`) and the headless scan (`cli.py`,
`testing.py`) both filter and summarise through these functions, so a contact accepted in
one is accepted in the other.

A *contact* is a tuple ``(object_a, index_a, object_b, index_b)`` with object names (str)
and element indices (int): triangle indices for rest contacts (the panel's rule), polygon
indices for reports and allow-lists. Pairs are unordered: `canonical` puts the smaller
``(object, index)`` first so that ``(B, 3, A, 7)`` and ``(A, 7, B, 3)`` are the same key.
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from typing import Iterable, Sequence

Contact = tuple[str, int, str, int]


class AllowListError(ValueError):
    """The allow-list file cannot be read; the message says why."""


def canonical(p: Sequence) -> Contact:
    """The unordered contact `p` as a tuple with the smaller (object, index) first."""
    a, ia, b, ib = str(p[0]), int(p[1]), str(p[2]), int(p[3])
    return (a, ia, b, ib) if (a, ia) <= (b, ib) else (b, ib, a, ia)


def contact_set(pairs: Iterable[Sequence]) -> set[Contact]:
    """A set of canonical contacts from any iterable of 4-sequences."""
    return {canonical(p) for p in pairs}


def drop_indexed(found: Iterable[tuple[int, int, int, int]], names: Sequence[str],
                 excluded: set[Contact]) -> set[tuple[int, int, int, int]]:
    """Keep the contacts of `found`, given by object INDEX ``(i, a, j, b)`` into `names`,
    whose named form is not in `excluded` (a set of canonical contacts).

    This is the rule of *Ignore Rest Contacts*: the panel applies it to each frame's
    triangle pairs, the headless scan too (`--ignore-rest-contacts`)."""
    if not excluded:
        return set(found)
    return {p for p in found if canonical((names[p[0]], p[1], names[p[2]], p[3])) not in excluded}


def drop_named(pairs: Iterable[Sequence], excluded: set[Contact]) -> list[Contact]:
    """The contacts of `pairs` (named) not in `excluded`, in their original order and form."""
    return [tuple(p) for p in pairs if canonical(p) not in excluded]


def load_allow_list(path: str) -> set[Contact]:
    """Accepted polygon contacts from a reviewed file.

    Accepted formats (all written by skin_collide): a scan report JSON (``python -m
    skin_collide scan --json``, or *Export Collision Report* as .json): every pair of every
    frame; a JSON object with an ``"allow"`` list of ``[object_a, polygon_a, object_b,
    polygon_b]``; a JSON list of such pairs; or the CSV of *Export Collision Report*
    (columns ``object_a, polygon_a, object_b, polygon_b``). Frames are ignored: an accepted
    contact is accepted on every frame.
    """
    if not os.path.isfile(path):
        raise AllowListError(f"no such allow-list file: {path}")
    try:
        if path.lower().endswith(".csv"):
            with open(path, newline="") as fh:
                rows = list(csv.DictReader(fh))
            need = {"object_a", "polygon_a", "object_b", "polygon_b"}
            if rows and not need <= set(rows[0]):
                raise AllowListError(f"{path}: a CSV allow-list needs the columns "
                                     + ", ".join(sorted(need)))
            return {canonical((r["object_a"], r["polygon_a"], r["object_b"], r["polygon_b"]))
                    for r in rows}
        with open(path) as fh:
            data = json.load(fh)
        if isinstance(data, dict) and "frames" in data:
            return {canonical(p) for fr in data["frames"] for p in fr["pairs"]}
        if isinstance(data, dict) and "allow" in data:
            data = data["allow"]
        if isinstance(data, list):
            return {canonical(p) for p in data}
        raise AllowListError(f"{path}: expected a scan report, {{\"allow\": [...]}} or a list "
                             "of [object_a, polygon_a, object_b, polygon_b]")
    except AllowListError:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise AllowListError(f"cannot read the allow-list {path}: {exc}") from None


@dataclass
class Episode:
    """A run of consecutive scanned frames in which objects `a` and `b` collide (``a == b``
    for self-collision). `worst_frame` has the most pairs (`worst_pairs`); `pairs` counts
    pair-frames over the whole run."""

    a: str
    b: str
    start: int
    end: int
    worst_frame: int
    worst_pairs: int
    frames: int
    pairs: int

    def to_json(self) -> dict:
        return {"objects": [self.a, self.b], "start": self.start, "end": self.end,
                "worst_frame": self.worst_frame, "worst_pairs": self.worst_pairs,
                "frames": self.frames, "pairs": self.pairs}

    def describe(self) -> str:
        who = f"{self.a} (self)" if self.a == self.b else f"{self.a} x {self.b}"
        span = f"frame {self.start}" if self.start == self.end else f"frames {self.start}-{self.end}"
        return f"{who}: {span}, worst frame {self.worst_frame} with {self.worst_pairs} pairs"


def episodes(frames: Sequence[tuple[int, Iterable[Sequence]]]) -> list[Episode]:
    """Collision episodes from ``[(frame, pairs), ...]`` in scan order (pairs named).

    Consecutive means consecutive in the scanned list (so ``--frames 1:10`` with a gap in
    the scan is not assumed). Episodes come sorted by start frame, then object pair.
    """
    open_: dict[tuple[str, str], Episode] = {}
    done: list[Episode] = []
    for frame, pairs in frames:
        counts: dict[tuple[str, str], int] = {}
        for p in pairs:
            key = tuple(sorted((str(p[0]), str(p[2]))))
            counts[key] = counts.get(key, 0) + 1
        for key in [k for k in open_ if k not in counts]:
            done.append(open_.pop(key))
        for key, n in counts.items():
            ep = open_.get(key)
            if ep is None:
                open_[key] = Episode(key[0], key[1], frame, frame, frame, n, 1, n)
            else:
                ep.end, ep.frames, ep.pairs = frame, ep.frames + 1, ep.pairs + n
                if n > ep.worst_pairs:
                    ep.worst_frame, ep.worst_pairs = frame, n
    done.extend(open_.values())
    done.sort(key=lambda e: (e.start, e.a, e.b))
    return done


def summary(eps: Sequence[Episode], limit: int = 6) -> str:
    """One line naming the episodes (the first `limit`, then how many more)."""
    if not eps:
        return "no collision episodes"
    parts = [e.describe() for e in eps[:limit]]
    more = f"; and {len(eps) - limit} more" if len(eps) > limit else ""
    return f"{len(eps)} collision episode(s): " + "; ".join(parts) + more
