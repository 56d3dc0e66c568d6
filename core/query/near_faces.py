"""Near pairs of two meshes decided face by face: the frame's clearance stage (issue 42,
`core.scan.clearance`). Pure numpy.

What a frame reports of a clearance is per polygon (near contacts are polygon pairs, each
with the smallest distance of its triangle pairs), and a garment over a body has about a
third as many polygon pairs within d as triangle pairs (MakeHuman's shirt: 32k against
110k a frame). So the pairs are found and decided per pair of faces, and the triangle
machinery of `core.query.near_pairs` (`decide_pairs`) runs only on the triangle pairs of the face
pairs whose bounds do not decide (docs/clearance.md, "Faces first").

Units. A polygon of at most four corners is one unit, its corners in a (U, 4) table (a
triangle's last corner repeated); each triangle of a larger polygon is a unit of its own,
its corners read from the frame's triangles. Every triangle of the frame belongs to one
unit (`Faces.unit_tris`), and a unit's triangles lie in the convex hull of its corners
whichever way Blender splits it at that frame.

Steps, each sound (docs/clearance.md, "Faces first"):

1. **Candidates**: the unit trees' float32 boxes (A's inflated by d), as `core.query.near_pairs`'s
   step 1 with a leaf's box the box of its corners (`core.aabb_tree.boxes.frame_stack`):
   a unit's box holds each of its triangles' boxes, so every unit pair holding a
   triangle pair within d, or whose boxes meet, is a candidate.
2. **Bounds** per unit pair (`core.geometry.pair_bounds` on the corner tables, which hold
   for every triangle pair of the two units): a lower bound above d proves every triangle
   pair farther than d; an upper bound at most d proves some triangle pair within d (the
   two corners' triangles); a lower bound above ``TOUCH_REL_TOL * L`` proves every
   triangle pair disjoint and farther than the exact test's touching tolerance (so none is
   an intersecting pair of the intersection query).
3. **Triangle pairs** of the unit pairs in doubt (not proved disjoint, or marked by the
   caller: units on a seam) and of those the bounds leave open: all of them go to
   `core.query.near_pairs.decide_pairs`, whose near rows and intersecting pairs are the triangle
   query's own for those pairs. A unit pair proved within d and disjoint is kept whole:
   a **face row**, with the bounds of its triangle pairs' smallest distance.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..aabb_tree.boxes import frame_stack, levels_of
from ..aabb_tree.cross import cross_candidates
from ..geometry.pair_bounds import pair_bounds
from ..keys import argsort_keys
from .near_pairs import TOUCH_REL_TOL, _check_d, _Found, _none, cross_tree, decide_pairs

__all__ = ["Faces", "FacePairs", "build_faces", "face_pairs", "unit_triangle_pairs"]

#: Corners per unit (quads; a triangle repeats one).
CORNERS: int = 4


@dataclass(eq=False)
class Faces:
    """A mesh's units for the face stage (module docstring), made once from its topology
    (`build_faces`; any frame's triangles of the same polygons may be queried with it).

    Attributes:
        tree: the box tree over the units (`core.query.near_pairs.cross_tree`'s shape: a
            balanced median split of their rest centroids).
        corners: (U, 4) intp each unit's corners (vertices); the rows of larger polygons'
            triangles are filled from the frame's triangles (`frame_corners`).
        unit_poly: (U,) int64 each unit's polygon.
        tri_ptr: (U + 1,) intp, unit_tris: (T,) intp the frame's triangles of each unit,
            ``unit_tris[tri_ptr[u]:tri_ptr[u + 1]]``.
        tri_poly: (T,) int64 each triangle's polygon.
        ngon_units: (G,) intp the units that are one triangle of a larger polygon, and
            ngon_tris: (G,) intp that triangle.
        n_polygons: the mesh's polygon count (a polygon pair's code base).
    """

    tree: object
    corners: np.ndarray
    unit_poly: np.ndarray
    tri_ptr: np.ndarray
    unit_tris: np.ndarray
    tri_poly: np.ndarray
    ngon_units: np.ndarray
    ngon_tris: np.ndarray
    n_polygons: int

    @property
    def n_units(self) -> int:
        return int(self.unit_poly.size)

    def frame_corners(self, tris: np.ndarray) -> np.ndarray:
        """(U, 4) intp the units' corners at a frame whose triangles are `tris` (T, 3):
        the larger polygons' triangles as this frame splits them."""
        if not self.ngon_units.size:
            return self.corners
        c = self.corners.copy()
        t = np.asarray(tris, np.intp)[self.ngon_tris]
        c[self.ngon_units, :3] = t
        c[self.ngon_units, 3] = t[:, 2]
        return c


def build_faces(rest_positions: np.ndarray, triangles: np.ndarray, tri_polygon: np.ndarray,
                poly_ptr: np.ndarray, poly_verts: np.ndarray) -> Faces:
    """The units of a mesh (module docstring) and their tree.

    Args:
        rest_positions: (V, 3) float64 (the tree's split; any positions would be sound).
        triangles: (T, 3) int the rest triangles; tri_polygon: (T,) int each one's polygon.
        poly_ptr: (P + 1,) int CSR of each polygon's corners in poly_verts (L,) int.
    """
    tris = np.asarray(triangles, np.intp).reshape(-1, 3)
    tri_poly = np.asarray(tri_polygon, np.int64)
    ptr = np.asarray(poly_ptr, np.intp)
    verts = np.asarray(poly_verts, np.intp)
    n = np.diff(ptr)
    # Units: the polygons of at most four corners that have triangles, then each triangle
    # of a larger polygon (a polygon without triangles is drawn as nothing: no unit).
    has = np.zeros(n.size, dtype=bool)
    has[tri_poly] = True
    fits = has & (n <= CORNERS)
    # A polygon whose triangles use a vertex that is not one of its corners (topology
    # handed in otherwise than Blender's) has its triangles as units of their own: a
    # unit's corners must hold its triangles.
    first = ptr[:-1][tri_poly][:, None] + np.arange(CORNERS)
    own = verts[np.minimum(first, np.maximum(ptr[1:][tri_poly][:, None] - 1, 0))]
    inside = (tris[:, :, None] == own[:, None, :]).any(axis=2).all(axis=1)
    fits[tri_poly[~inside]] = False
    small = np.flatnonzero(fits)
    big_tri = np.flatnonzero(~fits[tri_poly])
    U = small.size + big_tri.size
    unit_of_poly = np.full(n.size, -1, np.intp)
    unit_of_poly[small] = np.arange(small.size)
    tri_unit = unit_of_poly[tri_poly]
    tri_unit[big_tri] = small.size + np.arange(big_tri.size)
    corners = np.empty((U, CORNERS), np.intp)
    for c in range(CORNERS):
        corners[:small.size, c] = verts[ptr[small] + np.minimum(c, n[small] - 1)]
    corners[small.size:, :3] = tris[big_tri]
    corners[small.size:, 3] = tris[big_tri, 2]
    unit_poly = np.concatenate([small, tri_poly[big_tri]]).astype(np.int64)
    order = np.argsort(tri_unit, kind="stable")
    tri_ptr = np.searchsorted(tri_unit[order], np.arange(U + 1)).astype(np.intp)
    pos = np.asarray(rest_positions, np.float64)
    tree = cross_tree(pos, corners)
    return Faces(tree, corners, unit_poly, tri_ptr, order.astype(np.intp), tri_poly,
                 np.arange(small.size, U, dtype=np.intp), big_tri.astype(np.intp), int(n.size))


class FacePairs(NamedTuple):
    """`face_pairs`' answer for one object pair.

    units: (N, 2) int64 the face rows: unit pairs (unit of A, unit of B) proved within d
        and disjoint (every triangle pair of them may be reported), sorted.
    upper, lower: (N,) float64 bounds of the smallest distance of their triangle pairs
        (upper at most d). corner: (N,) uint8 the two corners of `upper`
        (`core.geometry.pair_bounds.PairBounds.corner` on the corner tables, ``4 i + j``).
    corners: (corners of A (Ua, 4), of B (Ub, 4)) the frame's corner tables.
    tri: the triangle rows (`core.query.near_pairs.decide_pairs`' answer, sorted by triangle
        pair) of the unit pairs the bounds did not decide: their near and (with hits)
        intersecting triangle pairs.
    """

    units: np.ndarray
    upper: np.ndarray
    lower: np.ndarray
    corner: np.ndarray
    corners: tuple
    tri: _Found


def unit_triangle_pairs(fa: Faces, ua: np.ndarray, fb: Faces, ub: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every triangle pair of the unit pairs (ua[k] of A, ub[k] of B): (M,), (M,) intp
    triangles of A and of B, and (M,) intp the row k each came from (ascending). Distinct
    unit pairs give distinct triangle pairs (a triangle is in one unit)."""
    ua = np.asarray(ua, np.intp)
    ub = np.asarray(ub, np.intp)
    sa, na = fa.tri_ptr[ua], np.diff(fa.tri_ptr)[ua]
    sb, nb = fb.tri_ptr[ub], np.diff(fb.tri_ptr)[ub]
    count = na * nb
    row = np.repeat(np.arange(ua.size), count)
    w = np.arange(row.size) - np.repeat(np.cumsum(count) - count, count)
    nbr = nb[row]
    ta = fa.unit_tris[sa[row] + w // nbr]
    tb = fb.unit_tris[sb[row] + w % nbr]
    return ta, tb, row


def face_pairs(pos_a: np.ndarray, tri_a: np.ndarray, fa: Faces, pos_b: np.ndarray,
               tri_b: np.ndarray, fb: Faces, d: float, with_hits: bool,
               doubt: tuple[np.ndarray, np.ndarray] | None = None,
               limit: int | None = None) -> FacePairs:
    """The near pairs of meshes A and B within d, face rows first (module docstring).

    Args:
        pos_a: (Va, 3) float64 positions of A (finite); tri_a: (Ta, 3) int the frame's
            triangles of A; fa: A's `Faces`. pos_b, tri_b, fb: the same for B.
        d: float >= 0, the clearance.
        with_hits: also every intersecting triangle pair (in `tri`, flagged; the
            intersection query's answer between the two meshes, as
            `core.query.near_pairs.near_and_intersecting` gives it).
        doubt: optional ((Ua,) bool, (Ub,) bool) units whose pairs (a marked unit of A
            with a marked unit of B) always go to the triangle rows (a seam: the caller
            drops the triangle pairs that share a seam vertex).
        limit: the live overlay's budget, `core.query.near_pairs.near_pairs`' (raises
            `TooManyPairs` before any pair is decided).
    Returns:
        `FacePairs`: every triangle pair within d that does not intersect is in a face
        row or is a near row of `tri`, none farther than the triangle query's tolerance
        (``d + 2 DIST_REL_TOL L``) is; with `with_hits`, every intersecting pair is in
        `tri` and no pair of a face row intersects.
    """
    d = _check_d(d)
    pos_a = np.asarray(pos_a, np.float64)
    pos_b = np.asarray(pos_b, np.float64)
    tri_a = np.asarray(tri_a, np.intp)
    tri_b = np.asarray(tri_b, np.intp)
    ca, cb = fa.frame_corners(tri_a), fb.frame_corners(tri_b)
    empty = FacePairs(np.zeros((0, 2), np.int64), np.zeros(0), np.zeros(0),
                      np.zeros(0, np.uint8), (ca, cb), _none())
    if not fa.n_units or not fb.n_units:
        return empty
    ta, tb = fa.tree, fb.tree
    sa, sb = cross_candidates(ta, levels_of(ta, frame_stack(ta, pos_a, ca, d)),
                              tb, levels_of(tb, frame_stack(tb, pos_b, cb)), limit=limit)
    if not sa.size:
        return empty
    ua, ub = np.take(ta.slot_tri, sa), np.take(tb.slot_tri, sb)
    # Sorted by unit pair: every later selection keeps the order, and the gathers of A's
    # corners run along memory (`core.query.near_pairs`'s reason, a quarter of the rows here).
    order = argsort_keys(ua * fb.n_units + ub, fa.n_units * fb.n_units)
    ua, ub = ua[order], ub[order]
    b = pair_bounds(pos_a, ca, ua, pos_b, cb, ub)
    near = b.upper <= d
    far = b.lower > d
    unsure = b.lower <= TOUCH_REL_TOL * b.scale        # might hold an intersecting pair
    if doubt is not None:
        unsure |= np.take(doubt[0], ua) & np.take(doubt[1], ub)
    # To the triangle rows: the open pairs, and those in doubt (with hits, whatever their
    # distance: the intersection query's answer is asked of them; without, only where
    # one of their triangle pairs may be near).
    go = ~(near | far) | (unsure if with_hits else unsure & ~far)
    keep = np.flatnonzero(near & ~go)
    todo = np.flatnonzero(go)
    if todo.size:
        xa, xb, _ = unit_triangle_pairs(fa, ua[todo], fb, ub[todo])
        tri = decide_pairs(pos_a, tri_a, xa, pos_b, tri_b, xb, d, with_hits, exact=False)
    else:
        tri = _none()
    units = np.stack([ua[keep], ub[keep]], axis=1).astype(np.int64, copy=False)
    return FacePairs(units, b.upper[keep], b.lower[keep], b.corner[keep], (ca, cb), tri)
