"""The clearance stage of one frame (`core.scan.frame`, issue 42): every pair of polygons
of two different objects with a triangle pair whose exact float64 distance is at most
``d`` and that does not intersect (the intersection stages report those), with the
smallest such distance and its closest points; a polygon pair with an intersecting
triangle pair is an intersecting one, never a near one (`apart_from`).

Per candidate object pair of the inflated broad phase
(`core.query.broad_phase.object_pairs_within`), `core.query.near_faces.face_pairs` on the
frame's world positions and triangles, with each object's units and their box tree kept
on the object (`faces_for`: built once). Most polygon pairs are decided as a whole by
their corners' bounds (face rows); the triangle pairs of the others are decided one by
one (triangle rows, `NearTriangles`). A `NearResult` holds both, one row per polygon
pair. Self-clearance is left out: neighbouring faces of one surface are within any d.

The seam rule (docs/clearance.md, "Seams"): between two parts of one character whose
seams hold this frame (`FrameSeams.hold`), a triangle pair sharing a seam vertex (the
frame's global key `FrameSeams.G`, which splits a seam parted this frame) touches by
construction and is not reported, as the intersection stages skip it. The units holding
a seam vertex of the other side are decided per triangle pair (`face_pairs`' `doubt`),
and those pairs dropped. Pairs one ring or more from the seam are reported when within
d, like any other pair.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.pair_bounds import corner_points, plane_lower
from ..query.near_faces import FacePairs, Faces, build_faces, face_pairs, unit_triangle_pairs
from ..query.near_pairs import TooManyPairs, decide_pairs, settle
from ..types import FrameInputs, FrameSeams, ObjectPairs
from .exact import share_seam_vertex
from .objects import CollisionObject

__all__ = ["LIVE_LIMIT", "NearResult", "NearTriangles", "TooManyPairs", "apart_from", "faces_for",
           "near_and_hits_between", "near_between"]

#: The live overlay's work budget for the clearance stage, per object pair: node pairs on
#: one level of the box traversal of the two objects' units (`face_pairs`' `limit`). A
#: shirt 0.5% of the height over MakeHuman's torso has 49k candidate face pairs at D = 1%
#: of the height (a live frame of 73 ms), 194k at 3% (155 ms), 659k at 6% (411 ms): the
#: budget stops the traversal there, as it did with the triangles' traversal and a budget
#: of a million, instead of updating at two frames a second or running seconds
#: (docs/clearance.md, "Live budget"). Scans have none.
LIVE_LIMIT: int = 400_000


def faces_for(obj: CollisionObject) -> Faces:
    """The units of a `CollisionObject` for the face stage (`core.query.near_faces`),
    built on first use and kept on it (a copy's are its original's)."""
    if obj.face_units is None and obj.tree_source is not None:
        obj.face_units = faces_for(obj.tree_source)
    if obj.face_units is None:
        r = obj.rig
        obj.face_units = build_faces(r.rest_positions, r.triangles, r.tri_polygon,
                                     r.poly_ptr, r.poly_verts)
    return obj.face_units


def _open_rows(known: np.ndarray, rows) -> np.ndarray:
    """(m,) intp the rows of `rows` (an int sequence) whose distance is not yet known
    (`known` (K,) bool): what `settle` and `tighten` work on."""
    rows = np.asarray(rows, np.intp)
    return rows[~known[rows]]


@dataclass
class NearTriangles:
    """Near triangle pairs of one object pair (K rows, sorted by (triangle of A, of B)):
    the triangle rows of a `NearResult`, and its triangles' answer (`triangle_rows`).

    Distances are settled lazily: the stage proves most pairs within d by two corners
    (`core.geometry.pair_bounds`) and computes the exact distance only where the bounds
    do not decide; what needs exact distances settles those rows (`settle`, `settled`).

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

    def take(self, rows: np.ndarray) -> "NearTriangles":
        """The rows `rows` (an index or a mask) as a new result."""
        return NearTriangles(self.pairs[rows], self.dist[rows], self.point_a[rows],
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
        rows = _open_rows(self.known, rows)
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
        rows = _open_rows(self.known, rows)
        if not rows.size:
            return
        pa, ta, pb, tb = self.geometry
        low = plane_lower(pa, ta, self.pairs[rows, 0], pb, tb, self.pairs[rows, 1])
        np.maximum(self.lower[rows], low, out=low)
        self.lower[rows] = low

    def settled(self) -> "NearTriangles":
        """Every row exact (in place); returns self."""
        self.settle(np.flatnonzero(~self.known))
        return self


def _group_order(code: np.ndarray, value: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by their integer `code`, and in each group the row of least `value`
    (the first such in the given order): (K,) intp the rows by code (a stable order),
    (N + 1,) intp where each of the N distinct codes' run starts in it, and (N,) intp
    each group's row of least value. The face rows come sorted and the triangle rows
    after them, so numpy's stable sort (which merges sorted runs) takes a fifth of a
    radix order's time here."""
    order = np.argsort(code, kind="stable")
    c = code[order]
    start = np.flatnonzero(np.r_[True, c[1:] != c[:-1]]) if c.size else np.zeros(0, np.intp)
    start = np.r_[start, c.size].astype(np.intp)
    if c.size == start.size - 1:                 # one row per code (most frames)
        return order, start, order
    v = value[order]
    least = np.minimum.reduceat(v, start[:-1])
    hit = np.flatnonzero(v == np.repeat(least, np.diff(start)))
    group = np.searchsorted(start, hit, side="right") - 1
    first = hit[np.r_[True, group[1:] != group[:-1]]]
    return order, start, order[first]


@dataclass
class NearResult:
    """The near polygon pairs of one object pair (N rows, sorted by (polygon of A, of B)):
    each a pair of polygons with a triangle pair within d that does not intersect (and
    does not share a seam vertex), at the smallest distance of those triangle pairs; once
    through `apart_from`, no pair of its polygons intersects.

    A row is made of parts: face rows (`face_pairs`' unit pairs proved within d, every
    triangle pair of them counting) and triangle rows (`tri`, the near triangle pairs
    of the unit pairs the bounds left to them). Its distance is settled lazily, as the
    triangle rows' are: where not `known`, `dist` is the smallest upper bound of its
    parts (at most d) and `lower` the smallest lower bound; `settle` makes chosen rows
    exact (a near contact's closest pair, the ``--near-pairs`` rows).

    polys: (N, 2) int64 (polygon of A, polygon of B).
    dist, lower: (N,) float64; known: (N,) bool whether ``dist`` is the smallest distance
        (within ``DIST_REL_TOL * L``).
    point_a, point_b: (N, 3) float64 a closest pair of points where `known` (read points
        with `points`).
    units: (M, 2) int64 the face rows' unit pairs, u_lower (M,) float64 their lower
        bounds, u_corner (M,) uint8 the corners of their upper bounds (the row's `dist`
        where `best` names one), u_row (M,) intp their row.
    tri: `NearTriangles`, t_row: (K,) intp the row of each triangle row.
    best: (N,) intp the part whose upper bound is `dist` (a face row m < M, else the
        triangle row ``best - M``).
    faces: (`Faces` of A, of B); corners: the frame's corner tables (`FacePairs.corners`).
    """

    polys: np.ndarray
    dist: np.ndarray
    lower: np.ndarray
    known: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray
    units: np.ndarray
    u_lower: np.ndarray
    u_corner: np.ndarray
    u_row: np.ndarray
    tri: NearTriangles
    t_row: np.ndarray
    best: np.ndarray
    faces: tuple
    corners: tuple

    @classmethod
    def made(cls, fp: FacePairs, tri: NearTriangles, faces: tuple) -> "NearResult":
        """The rows of a stage's face rows `fp` and kept triangle rows `tri` (after the
        seam rule), faces (`Faces` of A, of B)."""
        fa, fb = faces
        M, K = fp.units.shape[0], tri.pairs.shape[0]
        base = max(fb.n_polygons, 1)
        pa = np.concatenate([np.take(fa.unit_poly, fp.units[:, 0]),
                             np.take(fa.tri_poly, tri.pairs[:, 0])])
        pb = np.concatenate([np.take(fb.unit_poly, fp.units[:, 1]),
                             np.take(fb.tri_poly, tri.pairs[:, 1])])
        up = np.concatenate([fp.upper, tri.dist])
        order, start, first = _group_order(pa * base + pb, up)     # first: least upper
        row = np.empty(M + K, np.intp)
        row[order] = np.repeat(np.arange(start.size - 1), np.diff(start))
        low = np.concatenate([fp.lower, tri.lower])[order]
        known = np.concatenate([np.zeros(M, dtype=bool), tri.known])[order]
        N = start.size - 1
        if N:
            lower = np.minimum.reduceat(low, start[:-1])
            known = np.logical_and.reduceat(known, start[:-1])
        else:
            lower, known = np.zeros(0), np.zeros(0, dtype=bool)
        pt = np.zeros((2, N, 3))
        k = np.flatnonzero(known)
        if k.size:                       # made of known triangle rows only
            t = first[k] - M
            pt[0, k], pt[1, k] = tri.point_a[t], tri.point_b[t]
        return cls(np.stack([pa[first], pb[first]], axis=1), up[first], lower, known,
                   pt[0], pt[1], fp.units, fp.lower.copy(), fp.corner,
                   row[:M], tri, row[M:], first, faces, fp.corners)

    @property
    def geometry(self) -> tuple:
        """(positions of A, triangles of A, positions of B, triangles of B)."""
        return self.tri.geometry

    def _parts(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The face rows and triangle rows of rows `rows` ((n,) int, distinct)."""
        want = np.zeros(self.polys.shape[0], dtype=bool)
        want[rows] = True
        return np.flatnonzero(want[self.u_row]), np.flatnonzero(want[self.t_row])

    def points(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(n, 3), (n, 3) float64 the points of `rows` (n,) int: a closest pair where the
        distance is known, else the two corners ``dist`` bounds (of the part `best`
        names: a face row's corners, or a triangle row's points)."""
        rows = np.asarray(rows, np.intp)
        qa, qb = self.point_a[rows], self.point_b[rows]
        todo = np.flatnonzero(~self.known[rows])
        part = self.best[rows[todo]]
        M = self.units.shape[0]
        face = part < M
        if face.any():
            x = part[face]
            pa, _, pb, _ = self.geometry
            ca, cb = self.corners
            qa[todo[face]], qb[todo[face]] = corner_points(
                pa, ca, self.units[x, 0], pb, cb, self.units[x, 1], self.u_corner[x])
        if (~face).any():
            qa[todo[~face]], qb[todo[~face]] = self.tri.points(part[~face] - M)
        return qa, qb

    def settle(self, rows: np.ndarray) -> None:
        """Make the distances and points of `rows` (n,) int exact, in place: the smallest
        exact distance over the triangle pairs of their parts (a face row's every
        triangle pair, a triangle row itself)."""
        rows = np.unique(_open_rows(self.known, rows))
        if not rows.size:
            return
        u, t = self._parts(rows)
        pa, ta, pb, tb = self.geometry
        fa, fb = self.faces
        xa, xb, src = unit_triangle_pairs(fa, self.units[u, 0], fb, self.units[u, 1])
        # The face rows' triangle pairs and the triangle rows not yet exact in one call of
        # the exact kernel (its fixed cost is a few hundred numpy calls).
        tri = self.tri
        tn = t[~tri.known[t]]
        d, qa, qb = settle(pa, ta, pb, tb, np.concatenate([np.stack([xa, xb], axis=1),
                                                           tri.pairs[tn]]))
        k = xa.size
        tri.dist[tn], tri.point_a[tn], tri.point_b[tn] = d[k:], qa[k:], qb[k:]
        tri.lower[tn] = d[k:]
        tri.known[tn] = True
        d, qa, qb = d[:k], qa[:k], qb[:k]
        owner = np.concatenate([self.u_row[u][src], self.t_row[t]])
        dist = np.concatenate([d, self.tri.dist[t]])
        qa = np.concatenate([qa, self.tri.point_a[t]])
        qb = np.concatenate([qb, self.tri.point_b[t]])
        _, _, best = _group_order(owner, dist)
        r = owner[best]
        self.dist[r], self.point_a[r], self.point_b[r] = dist[best], qa[best], qb[best]
        self.lower[r] = dist[best]
        self.known[r] = True                  # their parts are not read again

    def tighten(self, rows: np.ndarray) -> None:
        """Raise the lower bounds of `rows` (n,) int by the gaps along their parts'
        normals (`core.geometry.pair_bounds.plane_lower`), in place."""
        rows = _open_rows(self.known, rows)
        if not rows.size:
            return
        u, t = self._parts(rows)
        pa, _, pb, _ = self.geometry
        ca, cb = self.corners
        if u.size:
            low = plane_lower(pa, ca, self.units[u, 0], pb, cb, self.units[u, 1])
            self.u_lower[u] = np.maximum(self.u_lower[u], low)
        self.tri.tighten(t)
        owner = np.concatenate([self.u_row[u], self.t_row[t]])
        low = np.concatenate([self.u_lower[u], self.tri.lower[t]])
        best = np.full(self.polys.shape[0], np.inf)
        np.minimum.at(best, owner, low)
        self.lower[rows] = np.maximum(self.lower[rows], best[rows])

    def settled(self) -> "NearResult":
        """Every row exact (in place); returns self."""
        self.settle(np.flatnonzero(~self.known))
        return self

    def take(self, keep: np.ndarray) -> "NearResult":
        """The rows where `keep` ((N,) bool) holds, with all their parts, as a new result
        (the parts of a kept row are kept whole, so every bound and point stays valid)."""
        M = self.units.shape[0]
        u, t = keep[self.u_row], keep[self.t_row]
        row = np.cumsum(keep) - 1                     # a kept row's new index
        new_u, new_t = np.cumsum(u) - 1, np.cumsum(t) - 1
        old = self.best[keep]
        face = old < M
        best = np.empty_like(old)
        best[face] = new_u[old[face]]
        best[~face] = int(u.sum()) + new_t[old[~face] - M]
        return NearResult(self.polys[keep], self.dist[keep], self.lower[keep],
                          self.known[keep], self.point_a[keep], self.point_b[keep],
                          self.units[u], self.u_lower[u], self.u_corner[u], row[self.u_row[u]],
                          self.tri.take(np.flatnonzero(t)), row[self.t_row[t]], best,
                          self.faces, self.corners)

    def triangles(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The triangles of A and of B in the parts of `rows` (n,) int (a face row's
        units whole): (sorted unique (a,), (b,)) intp, what the overlay draws."""
        u, t = self._parts(np.asarray(rows, np.intp))
        fa, fb = self.faces
        xa, xb, _ = unit_triangle_pairs(fa, self.units[u, 0], fb, self.units[u, 1])
        return (np.unique(np.concatenate([xa, self.tri.pairs[t, 0]])),
                np.unique(np.concatenate([xb, self.tri.pairs[t, 1]])))

    def triangle_rows(self, d: float) -> NearTriangles:
        """Every near triangle pair of the rows as `NearTriangles`: a face row's triangle
        pairs decided one by one (within `d`, the stage's distance: bounds, then exact
        distances), with the triangle rows; sorted. What the triangle query would have
        reported (tests compare it with brute force)."""
        pa, ta, pb, tb = self.geometry
        fa, fb = self.faces
        xa, xb, _ = unit_triangle_pairs(fa, self.units[:, 0], fb, self.units[:, 1])
        f = decide_pairs(pa, ta, xa, pb, tb, xb, d, with_hits=False, exact=False)
        own = NearTriangles(f.near.pairs, f.near.dist, f.point_a, f.point_b, f.lower, f.known,
                            f.corner, self.geometry)
        both = [own, self.tri]
        pairs = np.concatenate([x.pairs for x in both])
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        return NearTriangles(pairs[order], *(np.concatenate([getattr(x, k) for x in both])[order]
                                             for k in ("dist", "point_a", "point_b", "lower",
                                                       "known", "corner")), self.geometry)


def apart_from(near: list, pairs: list) -> list:
    """The near rows `near` (per object pair (i, j, `NearResult`)) without the polygon
    pairs that intersect: a polygon pair with an intersecting triangle pair is reported
    as intersecting, never as near too (docs/clearance.md, "Intersecting or near").
    `pairs`: the frame's intersecting triangle pairs, per object pair (i, j, (K, 2) intp
    triangles of i and of j), whichever query found them. A near row is made of triangle
    pairs that do not intersect, but another triangle pair of its two polygons may: the
    face stage, which bounds distances without the intersection test where it can, does
    not know it (an intersecting pair's vertex and edge distances can all exceed d)."""
    hit: dict = {}
    for i, j, p in pairs:
        if i != j and p.size:
            key, q = ((i, j), p) if i < j else ((j, i), p[:, ::-1])
            hit.setdefault(key, []).append(q)
    out = []
    for i, j, r in near:
        h = hit.get((i, j) if i < j else (j, i))
        if h is not None:
            h = np.concatenate(h)
            if i > j:
                h = h[:, ::-1]
            fa, fb = r.faces
            base = max(fb.n_polygons, 1)
            bad = np.take(fa.tri_poly, h[:, 0]) * base + np.take(fb.tri_poly, h[:, 1])
            keep = ~np.isin(r.polys[:, 0] * base + r.polys[:, 1], bad)
            if not keep.all():
                r = r.take(keep)
        if r.polys.size:
            out.append((i, j, r))
    return out


def near_between(objects: list[CollisionObject], inputs: FrameInputs, near: ObjectPairs,
                 seams: FrameSeams, d: float, limit: int | None = None
                 ) -> list[tuple[int, int, NearResult]]:
    """The clearance stage: per object pair (i < j) of `near` (the broad phase inflated
    by d, `object_pairs_within`), the polygon pairs within d that do not intersect and
    do not share a seam vertex (module docstring). Object pairs with none are left out.

    Args:
        objects: the prepared objects. inputs: the frame's positions and triangles.
        near: the inflated broad phase's object pairs. seams: the seam stage's answer,
            computed for (at least) these pairs.
        d: the clearance, float >= 0, in scene units.
        limit: the live overlay's work budget, per object pair (`face_pairs`' `limit`):
            raises `core.query.near_pairs.TooManyPairs` when one object pair's box traversal
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
    every object pair of `near` (`face_pairs` with hits: boxes that meet and the exact
    test, pairs sharing a seam vertex left out as `exact.ExactTest` leaves them out):
    per object pair (i, j, (H, 2) int64 sorted), object pairs with none left out, in
    object-pair order. `near` (the broad phase inflated by d) holds every object pair
    whose boxes meet, so these are all of the frame's pairs between objects
    (`core.scan.frame`'s clearance fold). No budget: a part of the intersections is never
    an answer."""
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
        faces = (faces_for(objects[i]), faces_for(objects[j]))
        seamed = seams.G is not None and seams.hold[i, j]
        va, vb = inputs.v_off[i] + ta, inputs.v_off[j] + tb
        doubt = _seam_units(faces, seams.G, inputs.v_off[i], inputs.v_off[j], ta, tb) \
            if seamed else None
        fp = face_pairs(pa, ta, faces[0], pb, tb, faces[1], d, hits, doubt=doubt, limit=limit)
        f = fp.tri
        h = f.near.intersecting
        geometry = (pa, ta, pb, tb)
        tri = NearTriangles(f.near.pairs, f.near.dist, f.point_a, f.point_b, f.lower,
                            f.known, f.corner, geometry)
        if h.any():                 # most frames have none: no copy of the near rows then
            tri = tri.take(np.flatnonzero(~h))
        if tri.pairs.size and seamed:
            tri = _off_seams(tri, seams.G, va, vb)
        r = NearResult.made(fp, tri, faces)
        if r.polys.size:
            out.append((i, j, r))
        if hits:
            p = f.near.pairs[h]
            if p.size and seamed:
                p = p[~share_seam_vertex(seams.G, va[p[:, 0]], vb[p[:, 1]])]
            if p.size:
                hit_out.append((i, j, p))
    return out, hit_out


def _seam_units(faces: tuple, G: np.ndarray, off_a: int, off_b: int, ta: np.ndarray,
                tb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per side, (U,) bool the units with a corner whose seam key (`G`, the frame's
    stacked vertices from `off_a`, `off_b`) is a key of the other side's: only their
    pairs can hold a triangle pair sharing a seam vertex."""
    fa, fb = faces
    ka = G[off_a + fa.frame_corners(ta)]                      # (U, 4) keys per corner
    kb = G[off_b + fb.frame_corners(tb)]
    return np.isin(ka, kb).any(axis=1), np.isin(kb, ka).any(axis=1)


def _off_seams(r: NearTriangles, G: np.ndarray, va: np.ndarray, vb: np.ndarray
               ) -> NearTriangles:
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
