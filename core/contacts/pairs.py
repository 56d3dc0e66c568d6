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
from typing import Hashable, Iterable, Sequence

import numpy as np

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


def normalized_pairs(p: np.ndarray, same: bool) -> np.ndarray:
    """(K, 2) int64 index pairs as unique rows in sorted order; with `same` (both indices
    into one object) each row as (min, max). Rows are packed into one int64 key, which is
    much faster than `np.unique(axis=0)`."""
    p = np.asarray(p, dtype=np.int64).reshape(-1, 2)
    if not p.size:
        return p
    if same:
        p = np.sort(p, axis=1)
    base = int(p.max()) + 1
    k = np.unique(p[:, 0] * base + p[:, 1])
    return np.stack([k // base, k % base], axis=1)


def rows_in(p: np.ndarray, known: np.ndarray) -> np.ndarray:
    """(K,) bool: which rows of `p` (K, 2) int are rows of `known` (M, 2) int."""
    if not p.size or not known.size:
        return np.zeros(p.shape[0], dtype=bool)
    base = int(max(p.max(), known.max())) + 1
    return np.isin(p[:, 0] * base + p[:, 1], known[:, 0] * base + known[:, 1])


class ContactIndex:
    """Contacts ``(key_a, index_a, key_b, index_b)`` grouped by object pair, to drop them
    from a frame's index pairs with whole-array operations (the rest-contact rule, for the
    panel and the headless scan alike). Keys are whatever identifies an object across the
    session: names headless, stable ids in the panel (they survive renames)."""

    def __init__(self, contacts: Iterable[Sequence] = ()):
        grouped: dict[tuple, list] = {}
        self.count = 0                     # contacts given (each unordered pair once)
        for ka, a, kb, b in contacts:
            self.count += 1
            grouped.setdefault((ka, kb), []).append((int(a), int(b)))
            if ka != kb:            # the objects may come in the other order in a query
                grouped.setdefault((kb, ka), []).append((int(b), int(a)))
            else:                   # self pairs: either order
                grouped[(ka, kb)].append((int(b), int(a)))
        self._by_pair = {k: np.array(v, dtype=np.int64).reshape(-1, 2)
                         for k, v in grouped.items()}

    @classmethod
    def from_arrays(cls, groups: Iterable[tuple[tuple, np.ndarray]]) -> "ContactIndex":
        """The index of contacts given per object pair: ``((key_a, key_b), (K, 2) index
        pairs)`` items, in either orientation and with repeats (two characters' stored
        views of the contacts between them). Whole-array work: the same index as from the
        contacts one by one, for hundreds of thousands of them."""
        merged: dict[tuple, list] = {}
        for (ka, kb), p in groups:
            p = np.asarray(p, dtype=np.int64).reshape(-1, 2)
            if ka != kb and str(kb) < str(ka):
                ka, kb, p = kb, ka, p[:, ::-1]
            merged.setdefault((ka, kb), []).append(p)
        out = cls()
        for (ka, kb), parts in merged.items():
            p = normalized_pairs(np.concatenate(parts), ka == kb)
            if not p.size:
                continue
            out.count += p.shape[0]
            if ka == kb:                     # self pairs: either order
                out._by_pair[(ka, kb)] = np.concatenate([p, p[:, ::-1]])
            else:
                out._by_pair[(ka, kb)] = p
                out._by_pair[(kb, ka)] = np.ascontiguousarray(p[:, ::-1])
        return out

    def merged(self, groups: Iterable[tuple[tuple, np.ndarray]]) -> "ContactIndex":
        """This index with more contacts given per object pair (as `from_arrays`)."""
        return ContactIndex.from_arrays(list(self._by_pair.items()) + list(groups))

    def as_set(self) -> set[tuple]:
        """Every contact once: the keys of an object pair in one order, a self pair as
        (min, max)."""
        out = set()
        for (ka, kb), p in self._by_pair.items():
            if ka == kb:
                out |= {(ka, a, kb, b) for a, b in p.tolist() if a < b}
            elif str(ka) < str(kb):
                out |= {(ka, a, kb, b) for a, b in p.tolist()}
        return out

    def __bool__(self) -> bool:
        return bool(self._by_pair)

    def drop(self, key_a: Hashable, key_b: Hashable, pairs: np.ndarray) -> np.ndarray:
        """The rows of `pairs` ((K, 2) int indices of objects `key_a`, `key_b`) that are
        not known contacts."""
        known = self._by_pair.get((key_a, key_b))
        if known is None or not pairs.size:
            return pairs
        return pairs[~rows_in(pairs, known)]


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
