"""The clearance stage of one frame (`core.scan.frame`, issue 42): every triangle pair of
two different objects whose exact float64 distance is at most ``d`` and that does not
intersect (the intersection stages report those), with its distance and closest points.

Per candidate object pair of the inflated broad phase
(`core.query.broad_phase.object_pairs_within`), `core.query.near.near_rows` on the
frame's world positions and triangles, with each object's exact box tree kept on the
object (`core.scan.carry.for_object`, the self tree: built once, shared with the self
stage). Self-clearance is left out: neighbouring faces of one surface are within any d.

The seam rule (docs/clearance.md, "Seams"): between two parts of one character whose
seams hold this frame (`FrameSeams.hold`), a triangle pair sharing a seam vertex (the
frame's global key `FrameSeams.G`, which splits a seam parted this frame) touches by
construction and is not reported, as the intersection stages skip it. Pairs one ring
or more from the seam are reported when within d, like any other pair.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.pair_bounds import corner_points, plane_lower
from ..query.near import TooManyPairs, near_and_intersecting, near_rows, settle
from ..types import FrameInputs, FrameSeams, ObjectPairs
from .carry import for_object
from .exact import share_seam_vertex
from .objects import CollisionObject

__all__ = ["LIVE_LIMIT", "NearResult", "TooManyPairs", "near_and_hits_between",
           "near_between"]

#: The live overlay's work budget for the clearance stage, per object pair: node pairs on
#: one level of the box traversal (`near_rows`' `limit`). A shirt 0.5% of the height
#: over MakeHuman's torso has 173k candidate pairs at D = 1% of the height (67 ms),
#: 725k at 3% (0.25 s); at 6% the traversal passes a million node pairs and stops after
#: 40 ms instead of running seconds (docs/clearance.md, "Live budget"). Scans have
#: none.
LIVE_LIMIT: int = 1_000_000


@dataclass
class NearResult:
    """The near pairs of one object pair (K rows, sorted by (triangle of A, of B)).

    Distances are settled lazily: the stage proves most pairs within d by two corners
    (`core.geometry.pair_bounds`) and computes the exact distance only where the bounds
    do not decide; what needs exact distances (a near contact's closest pair, the
    ``--near-pairs`` rows) settles those rows (`settle`, `settled`).

    pairs: (K, 2) int64 (triangle of A, triangle of B), indices into the frame's triangles.
    dist: (K,) float64 the distance, within ``DIST_REL_TOL * L`` of the exact one where
        `known`, else an upper bound of it (at most d).
    point_a, point_b: (K, 3) float64 a closest pair of points (world space) where
        `known`; nothing meaningful elsewhere (read points with `points`).
    lower: (K,) float64 a lower bound of the distance (the distance where `known`).
    known: (K,) bool whether ``dist`` is the distance.
    corner: (K,) uint8 where not `known`, the two corners ``dist`` bounds
        (`core.geometry.pair_bounds.PairBounds.corner`): made into points only when read.
    geometry: (positions of A (V, 3), triangles of A (T, 3), the same for B): what
        `settle` measures on.
    """

    pairs: np.ndarray
    dist: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    lower: np.ndarray
    known: np.ndarray
    corner: np.ndarray
    geometry: tuple

    def take(self, rows: np.ndarray) -> "NearResult":
        """The rows `rows` (an index or a mask) as a new result."""
        return NearResult(self.pairs[rows], self.dist[rows], self.point_a[rows],
                          self.point_b[rows], self.lower[rows], self.known[rows],
                          self.corner[rows], self.geometry)

    def points(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(K, 3), (K, 3) float64 the points of `rows` (K,) int: a closest pair where the
        distance is known, else the two corners ``dist`` apart."""
        rows = np.asarray(rows, np.intp)
        qa, qb = self.point_a[rows], self.point_b[rows]
        todo = np.flatnonzero(~self.known[rows])
        if todo.size:
            pa, ta, pb, tb = self.geometry
            t = rows[todo]
            qa[todo], qb[todo] = corner_points(pa, ta, self.pairs[t, 0], pb, tb,
                                               self.pairs[t, 1], self.corner[t])
        return qa, qb

    def settle(self, rows: np.ndarray) -> None:
        """Make the distances and points of `rows` (K,) int exact, in place."""
        rows = np.asarray(rows, np.intp)
        rows = rows[~self.known[rows]]
        if not rows.size:
            return
        pa, ta, pb, tb = self.geometry
        d, qa, qb = settle(pa, ta, pb, tb, self.pairs[rows])
        self.dist[rows], self.point_a[rows], self.point_b[rows] = d, qa, qb
        self.lower[rows] = d
        self.known[rows] = True

    def tighten(self, rows: np.ndarray) -> None:
        """Raise the lower bounds of `rows` (K,) int by the gaps along the triangles'
        normals (`core.geometry.pair_bounds.plane_lower`), in place."""
        rows = np.asarray(rows, np.intp)
        rows = rows[~self.known[rows]]
        if not rows.size:
            return
        pa, ta, pb, tb = self.geometry
        low = plane_lower(pa, ta, self.pairs[rows, 0], pb, tb, self.pairs[rows, 1])
        np.maximum(self.lower[rows], low, out=low)
        self.lower[rows] = low

    def settled(self) -> "NearResult":
        """Every row exact (in place); returns self."""
        self.settle(np.flatnonzero(~self.known))
        return self


def near_between(objects: list[CollisionObject], inputs: FrameInputs, near: ObjectPairs,
                 seams: FrameSeams, d: float, limit: int | None = None
                 ) -> list[tuple[int, int, NearResult]]:
    """The clearance stage: per object pair (i < j) of `near` (the broad phase inflated
    by d, `object_pairs_within`), the triangle pairs within d that do not intersect and
    do not share a seam vertex (module docstring). Object pairs with none are left out.

    Args:
        objects: the prepared objects. inputs: the frame's positions and triangles.
        near: the inflated broad phase's object pairs. seams: the seam stage's answer,
            computed for (at least) these pairs.
        d: the clearance, float >= 0, in scene units.
        limit: the live overlay's work budget, per object pair (`near_rows`' `limit`):
            raises `core.query.near.TooManyPairs` when one object pair's box traversal
            passes it. None: no budget (scans: every pair, however many).
    Returns:
        list of (i, j, `NearResult`).
    """
    return _stage(objects, inputs, near, seams, d, limit, hits=False)[0]


def near_and_hits_between(objects: list[CollisionObject], inputs: FrameInputs,
                          near: ObjectPairs, seams: FrameSeams, d: float
                          ) -> tuple[list[tuple[int, int, NearResult]],
                                     list[tuple[int, int, np.ndarray]]]:
    """`near_between` and, from the same traversal, the intersecting triangle pairs of
    every object pair of `near` (`core.query.near.near_and_intersecting`: boxes that
    meet and the exact test, pairs sharing a seam vertex left out as `exact.ExactTest`
    leaves them out): per object pair (i, j, (H, 2) int64 sorted), object pairs with
    none left out, in object-pair order. `near` (the broad phase inflated by d) holds
    every object pair whose boxes meet, so these are all of the frame's pairs between
    objects (`core.scan.frame`'s clearance fold). No budget: a part of the
    intersections is never an answer."""
    return _stage(objects, inputs, near, seams, d, None, hits=True)


def _stage(objects, inputs: FrameInputs, near: ObjectPairs, seams: FrameSeams, d: float,
           limit: int | None, hits: bool) -> tuple[list, list]:
    """`near_between` (and with `hits`, the intersecting pairs too)."""
    out, hit_out = [], []
    for i, j in near.pairs.tolist():        # a loop over object pairs, never triangles
        if i == j:
            continue
        pa, pb = inputs.positions[i], inputs.positions[j]
        ta, tb = inputs.triangles[i], inputs.triangles[j]
        trees = (for_object(objects[i]), for_object(objects[j]))
        if hits:
            found, h = near_and_intersecting(pa, ta, pb, tb, d, trees)
        else:
            found = near_rows(pa, ta, pb, tb, d, trees, limit=limit)
            h = None
        r = NearResult(*found, geometry=(pa, ta, pb, tb))
        seamed = seams.G is not None and seams.hold[i, j]
        if r.pairs.size and seamed:
            r = _off_seams(r, seams.G, inputs.v_off[i] + ta, inputs.v_off[j] + tb)
        if r.pairs.size:
            out.append((i, j, r))
        if h is not None and h.size and seamed:
            h = h[~share_seam_vertex(seams.G, inputs.v_off[i] + ta[h[:, 0]],
                                     inputs.v_off[j] + tb[h[:, 1]])]
        if h is not None and h.size:
            hit_out.append((i, j, h))
    return out, hit_out


def _off_seams(r: NearResult, G: np.ndarray, va: np.ndarray, vb: np.ndarray) -> NearResult:
    """`r` without its pairs that share a seam vertex (`share_seam_vertex`). va, vb: (T, 3)
    the two objects' triangles as rows of the frame's stacked vertices (`G`'s). Only pairs
    whose two triangles both have a vertex key found on the other side are tested: a
    garment made apart from the body (no shared vertex) costs two `isin` on its vertices."""
    ka, kb = G[va], G[vb]                                     # (T, 3) keys per corner
    on_a = np.isin(ka, kb).any(axis=1)
    on_b = np.isin(kb, ka).any(axis=1)
    test = np.flatnonzero(on_a[r.pairs[:, 0]] & on_b[r.pairs[:, 1]])
    if not test.size:
        return r
    keep = np.ones(r.pairs.shape[0], dtype=bool)
    keep[test] = ~share_seam_vertex(G, va[r.pairs[test, 0]], vb[r.pairs[test, 1]])
    return r if keep.all() else r.take(keep)
