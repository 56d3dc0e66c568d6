"""Near contacts (issue 42, `scan --clearance D`): a frame's near pairs (the clearance
stage's non-intersecting triangle pairs of two different objects within D,
`core.scan.near`) grouped like intersection contacts, and their episodes. Pure numpy.

Per object pair (A, B), the near triangle pairs map to polygon pairs (a pair of polygons
is near at the minimum distance over its triangle pairs) and group into the connected
components of the graph where each pair joins its two polygons and two polygons of one
side that share a vertex (weld ids) are joined: `core.contacts.groups`' rule and its
helpers (`_components_of`, `_bones`), not a copy. Each **near contact** carries:

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


def polygon_near_pairs(obj_a, obj_b, tri_pairs: np.ndarray, dist: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The polygon pairs of near triangle pairs ((K, 2) int64, distances (K,) float64)
    between `obj_a` and `obj_b`: (N, 2) int64 polygon pairs sorted, (N,) float64 each
    one's minimum distance over its triangle pairs, and (N,) int64 the row of `tri_pairs`
    attaining it."""
    pa = obj_a.rig.tri_polygon[tri_pairs[:, 0]].astype(np.int64)
    pb = obj_b.rig.tri_polygon[tri_pairs[:, 1]].astype(np.int64)
    order = np.lexsort((dist, pb, pa))                # per polygon pair, closest first
    pa, pb = pa[order], pb[order]
    first = np.r_[True, (pa[1:] != pa[:-1]) | (pb[1:] != pb[:-1])] if pa.size else \
        np.zeros(0, bool)
    rows = order[first]
    return np.stack([pa[first], pb[first]], 1), dist[rows], rows


def near_contacts(objects: Sequence, near: Sequence, drop=None) -> list[NearContact]:
    """A frame's near contacts from the clearance stage's answer (`FrameResult.near`:
    per object pair (i, j, `NearResult`)), in object-pair order, each pair's contacts by
    their first polygon pair. `drop`: optional f(i, j, (N, 2) polygon pairs) -> (N,) bool
    of the polygon pairs not to report (the allow-list, ignore zones)."""
    out: list[NearContact] = []
    for i, j, r in near:
        oa, ob = objects[i], objects[j]
        polys, dist, rows = polygon_near_pairs(oa, ob, r.pairs, r.dist)
        if drop is not None and polys.size:
            keep = ~drop(i, j, polys)
            polys, dist, rows = polys[keep], dist[keep], rows[keep]
        if not polys.size:
            continue
        cid, C, _ = _components_of(oa, ob, False, polys[:, 0], polys[:, 1])
        bones = _bones(oa, ob, False, polys[:, 0], polys[:, 1], cid, C)
        order = np.lexsort((polys[:, 1], polys[:, 0], cid))
        cut = np.flatnonzero(np.r_[True, cid[order][1:] != cid[order][:-1], True])
        made = []
        for s, e in zip(cut[:-1].tolist(), cut[1:].tolist()):   # one object per contact
            members = order[s:e]
            k = members[np.argmin(dist[members])]
            row = rows[k]
            made.append(NearContact(oa.name, ob.name, polys[members], float(dist[k]),
                                    np.stack([r.point_a[row], r.point_b[row]]),
                                    tuple(bones[int(cid[members[0]])])))
        made.sort(key=lambda c: tuple(c.pairs[0].tolist()))
        out += made
    return out


def near_pair_rows(objects: Sequence, contacts: Sequence[NearContact], near: Sequence
                   ) -> list[list]:
    """The frame's ``"near"`` list (`scan --near-pairs`): [obj A, poly A, obj B, poly B,
    distance] for every polygon pair of `contacts` (the reported ones), its distance the
    minimum over its triangle pairs, sorted."""
    names = [o.name for o in objects]
    dist_of: dict = {}
    for i, j, r in near:
        polys, dist, _ = polygon_near_pairs(objects[i], objects[j], r.pairs, r.dist)
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
