"""Near contacts (issue 42, `scan --clearance D`): a frame's near pairs (the clearance
stage's polygon pairs of two different objects with a non-intersecting triangle pair
within D, `core.scan.clearance`) grouped like intersection contacts, and their episodes. Pure
numpy.

Per object pair (A, B), the near polygon pairs (the stage's rows, `core.scan.clearance.NearResult`:
a pair of polygons is near at the minimum distance over its triangle pairs) group into
the connected components of the graph where each pair joins its two polygons and two
polygons of one side that share a vertex (weld ids) are joined: `core.contacts.groups`'
rule and its helpers (`_components_of`, `_bones`), not a copy. Each **near contact**
carries:

* ``pairs``: its polygon pairs [polygon of A, polygon of B] (sorted; in the report only
  with `--near-pairs`, ``n_pairs`` always);
* ``kind``: ``"near"``;
* ``min_distance``: the smallest distance of its pairs (float64, scene units), and
  ``points``: the two closest points [on A, on B] of the triangle pair attaining it;
* ``bones``: per side, the deform bone with the largest summed weight over the side's
  polygons (as for intersection contacts).

Episodes by bone pair (built as contact episodes are, `core.contacts.episodes.keyed_runs`):
runs of consecutive scanned frames with a near contact of the same
objects and bones, with the closest distance and its frame.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from . import episodes
from .bones import _bones
from .episodes import length_text
from .groups import _components_of
from .pairs import canonical


@dataclass
class NearContact:
    """One near contact of a frame (see the module docstring)."""

    a: str
    b: str
    pairs: np.ndarray               # (N, 2) int64 polygon pairs [A side, B side]
    min_distance: float
    points: np.ndarray              # (2, 3) float64 closest points [on A, on B]
    bones: tuple
    kind: str = "near"

    def summary_json(self) -> dict:
        """What episodes read: objects, bones, the closest distance."""
        return {"objects": [self.a, self.b], "bones": list(self.bones),
                "min_distance": float(self.min_distance), "kind": self.kind}

    def to_json(self, pairs: bool = True) -> dict:
        """The report's form; `pairs` False leaves out the polygon pairs (their count
        `n_pairs` stays): under a garment they are most of the report."""
        out = {"objects": [self.a, self.b], "kind": self.kind, "n_pairs": int(self.pairs.shape[0])}
        if pairs:
            out["pairs"] = self.pairs.tolist()
        out.update(min_distance=float(self.min_distance),
                   points=[[float(x) for x in p] for p in self.points], bones=list(self.bones))
        return out


def _group_min(values: np.ndarray, group: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group 0..n-1 of the rows (`group` (K,) intp), the smallest of `values` (K,)
    and the first row attaining it: (n,) float64, (n,) intp (-1 for empty groups)."""
    best = np.full(n, np.inf)
    np.minimum.at(best, group, values)
    at = np.flatnonzero(values == best[group])
    first = np.full(n, -1, np.intp)
    g, i = np.unique(group[at], return_index=True)
    first[g] = at[i]
    return best, first


def polygon_near_pairs(obj_a, obj_b, r) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The polygon pairs of an object pair's near result `r` (`core.scan.clearance.NearResult`,
    every row settled here: this is the exact, per-pair answer): (N, 2) int64 polygon
    pairs sorted, (N,) float64 each one's minimum distance over its triangle pairs, and
    (N,) intp the row of `r` attaining it (its own: `r`'s rows are polygon pairs)."""
    r.settled()
    return r.polys, r.dist, np.arange(r.polys.shape[0])


#: Rows settled at a time by `_settle_closest`: the first batch small (it usually holds
#: the minimum, which then stops the rest), later ones doubling up to the exact kernel's
#: block.
_SETTLE_FIRST: int = 256
_SETTLE_BATCH: int = 2048

#: Rows in doubt past which a first batch is settled before the normals' gaps: the gaps
#: cost about 0.08 µs a row, a batch about 0.6 ms, and the batch pays when it leaves
#: far fewer rows (shirt frames with 38k rows in doubt: 15.5 -> 13.0 ms of near contacts;
#: with 10k the batch cost 0.1-0.7 ms more than it saved).
_SETTLE_EARLY: int = 16384


def _settle_closest(r, rows: np.ndarray, comp: np.ndarray, C: int) -> None:
    """Settle (`NearResult.settle`) the rows `rows` of `r` that may attain their group's
    minimum distance (`comp` (K,) each row's group 0..C-1), no more than needed.

    A group's minimum is at most ``U``, the smallest distance or upper bound of its rows,
    and a row whose lower bound exceeds ``U`` cannot attain it. The rows still in doubt
    (after a first batch of the smallest lower bounds, when they are many) get the
    tighter bound along their normals (`NearResult.tighten`), then are settled
    in ascending order of their lower bounds, a batch at a time, each batch
    lowering ``U`` to the exact distances it found, so that rows whose lower bound is
    above the group's true minimum are mostly never computed (on a garment the corners
    give ``U`` ten times the true minimum; docs/clearance.md, "Bounds before distances").
    When no row in doubt is left, every row attaining a group's minimum is exact."""
    upper, _ = _group_min(r.dist[rows], comp, C)
    todo = np.flatnonzero(~r.known[rows])
    todo = todo[r.lower[rows[todo]] <= upper[comp[todo]]]
    if todo.size > _SETTLE_EARLY:
        # The rows of smallest lower bound first, chosen by a partition (no sort): their
        # exact distances bring ``U`` near the true minimum, and the normals' gaps then
        # run on the rows still in doubt only (on the shirt 38k -> 12k rows).
        first = np.argpartition(r.lower[rows[todo]], _SETTLE_FIRST)[:_SETTLE_FIRST]
        batch = todo[first]
        r.settle(rows[batch])
        np.minimum.at(upper, comp[batch], r.dist[rows[batch]])
        todo = todo[r.lower[rows[todo]] <= upper[comp[todo]]]
        todo = todo[~r.known[rows[todo]]]
    r.tighten(rows[todo])                 # the normals' gaps: a fraction of a settle's cost
    todo = todo[r.lower[rows[todo]] <= upper[comp[todo]]]
    todo = todo[np.argsort(r.lower[rows[todo]], kind="stable")]
    size = _SETTLE_FIRST
    while todo.size:
        batch, todo = todo[:size], todo[size:]
        size = min(2 * size, _SETTLE_BATCH)
        r.settle(rows[batch])
        np.minimum.at(upper, comp[batch], r.dist[rows[batch]])
        todo = todo[r.lower[rows[todo]] <= upper[comp[todo]]]


def near_contacts(objects: Sequence, near: Sequence, drop=None) -> list[NearContact]:
    """A frame's near contacts from the clearance stage's answer (`FrameResult.near`:
    per object pair (i, j, `NearResult`)), in object-pair order, each pair's contacts by
    their first polygon pair. `drop`: optional f(i, j, (N, 2) polygon pairs) -> (N,) bool
    of the polygon pairs not to report (the allow-list, ignore zones).

    Only the rows that may be a contact's closest get their exact distance
    (`_settle_closest`)."""
    out: list[NearContact] = []
    for i, j, r in near:
        oa, ob = objects[i], objects[j]
        polys = r.polys                        # one row per polygon pair, sorted
        inv = rows = np.arange(polys.shape[0])
        if drop is not None and polys.size:
            keep = ~drop(i, j, polys)
            new = np.cumsum(keep) - 1
            rows = np.flatnonzero(keep[inv])
            polys, inv = polys[keep], new[inv[rows]]
        if not polys.size:
            continue
        cid, C, _ = _components_of(oa, ob, False, polys[:, 0], polys[:, 1])
        bones = _bones(oa, ob, False, polys[:, 0], polys[:, 1], cid, C)
        comp = cid[inv]                                   # per kept triangle pair
        _settle_closest(r, rows, comp, C)
        best, first = _group_min(r.dist[rows], comp, C)
        # `polys` are sorted by (a, b): a stable sort by contact orders by (contact, a, b).
        order = np.argsort(cid, kind="stable")
        cut = np.flatnonzero(np.r_[True, cid[order][1:] != cid[order][:-1], True])
        made = []
        for s, e in zip(cut[:-1].tolist(), cut[1:].tolist()):   # one object per contact
            members = order[s:e]
            c = int(cid[members[0]])
            row = rows[first[c]]
            qa, qb = r.points(np.array([row]))
            made.append(NearContact(oa.name, ob.name, polys[members], float(best[c]),
                                    np.concatenate([qa, qb]), tuple(bones[c])))
        made.sort(key=lambda c: tuple(c.pairs[0].tolist()))
        out += made
    return out


def near_pair_rows(objects: Sequence, contacts: Sequence[NearContact], near: Sequence
                   ) -> list[list]:
    """The frame's ``"near"`` list (`scan --near-pairs`): [obj A, poly A, obj B, poly B,
    distance] for every polygon pair of `contacts` (the reported ones), its distance the
    minimum over its triangle pairs (every row of `near` settled: exact), sorted."""
    names = [o.name for o in objects]
    dist_of: dict = {}
    for i, j, r in near:
        polys, dist, _ = polygon_near_pairs(objects[i], objects[j], r)
        dist_of[(names[i], names[j])] = (polys, dist)
    rows = []
    for c in contacts:
        polys, dist = dist_of[(c.a, c.b)]
        code = polys[:, 0] * (int(polys[:, 1].max()) + 1) + polys[:, 1]
        want = c.pairs[:, 0] * (int(polys[:, 1].max()) + 1) + c.pairs[:, 1]
        at = np.searchsorted(code, want)            # `polys` are sorted by (a, b)
        rows += [[c.a, int(x), c.b, int(y), float(d)]
                 for (x, y), d in zip(c.pairs.tolist(), dist[at].tolist())]
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
    return rows


def reported(objects: Sequence, near: Sequence, zones: dict, allow: set, ignore_bones: set,
             with_pairs: bool) -> tuple[list[NearContact], list | None]:
    """A frame's near contacts after the filters that apply to them: ignore zones
    (`zones`: object index -> (P,) bool polygons inside), the allow-list (`allow`:
    canonical named polygon pairs, `core.contacts.pairs.canonical`) and ignored bone pairs
    (`ignore_bones`: frozensets). Not the rest contacts, `--crossing-only` or
    `--min-length`: they are about intersections. With `with_pairs`, also the frame's
    ``"near"`` rows (`near_pair_rows`), else None."""
    names = [o.name for o in objects]

    def drop(i: int, j: int, polys: np.ndarray) -> np.ndarray:
        bad = np.zeros(polys.shape[0], dtype=bool)
        for k, col in ((i, 0), (j, 1)):
            m = zones.get(k)
            if m is not None:
                bad |= m[polys[:, col]]
        if allow:
            bad |= np.array([canonical((names[i], x, names[j], y)) in allow
                             for x, y in polys.tolist()], dtype=bool)
        return bad

    found = near_contacts(objects, near, drop if (zones or allow) else None)
    if ignore_bones:
        found = [c for c in found if frozenset(c.bones) not in ignore_bones]
    return found, (near_pair_rows(objects, found, near) if with_pairs else None)


# --- Episodes by bone pair --------------------------------------------------------------

@dataclass
class NearEpisode(episodes.Episode):
    """A run of consecutive scanned frames in which objects `a`, `b` have a near contact
    between bones `bone_a`, `bone_b`; the closest distance `closest` at `closest_frame`."""

    closest_frame: int
    closest: float
    frames: int
    kind: str = "near"

    def to_json(self) -> dict:
        return {"objects": [self.a, self.b], "bones": [self.bone_a, self.bone_b],
                "start": self.start, "end": self.end, "closest_frame": self.closest_frame,
                "closest": self.closest, "frames": self.frames, "kind": self.kind}

    def describe(self) -> str:
        return (f"{self.a} × {self.b}, {self.bone_a or '-'} × {self.bone_b or '-'}: "
                f"{self.span()}, "
                f"closest {length_text(self.closest)} at frame {self.closest_frame}")


def _fold_near(value: float, c: dict) -> float:
    """A frame's closest distance of a bone pair."""
    return min(value, float(c["min_distance"]))


def near_episodes(frames: Sequence[tuple[int, Sequence[dict]]]) -> list[NearEpisode]:
    """Episodes by bone pair from ``[(frame, near contacts as in the report), ...]`` in
    scan order."""
    out = []
    for key, run in episodes.keyed_runs(frames, _fold_near, np.inf):
        frame, closest = episodes.best_frame(run, lambda x, y: x < y)
        out.append(NearEpisode(*key, run[0][0], run[-1][0], frame, closest, len(run)))
    return out


def episodes_of_report(frames: Sequence[dict]) -> list[NearEpisode]:
    """`near_episodes` of a report's frames (those that carry near contacts)."""
    return near_episodes(episodes.report_frames(frames, "near_contacts"))


def summary(eps: Sequence[NearEpisode], limit: int = 10) -> str:
    """Lines naming the near episodes (the closest first, `limit` of them, then how many
    more), for the console and JUnit."""
    return episodes.summary_lines(eps, lambda e: (e.closest, e.start), "near",
                                  "no near contacts", limit)
