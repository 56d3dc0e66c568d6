"""The triangles Blender draws at a frame: quads re-split from the evaluated positions.

Blender tessellates every polygon of the *evaluated* mesh again on each evaluation
(``mesh_tessellate.cc``, the corner-triangle cache of the evaluated mesh), so the loop
triangles of a deformed mesh are not those of its rest mesh:

* a triangle is itself, corners (0, 1, 2);
* a quad (corners 0..3 in loop order) is cut along the 0–2 diagonal into (0, 1, 2) and
  (0, 2, 3), unless ``is_quad_flip_v3_first_third_fast`` says that diagonal lies outside
  the quad; then along 1–3, into (0, 1, 3) and (1, 2, 3). The test is, in float32 on the
  mesh-local evaluated positions p0..p3:
  ``dot((p1 − p0) × (p2 − p0), (p3 − p0) × (p2 − p0)) > 0``, i.e. the triangles (0, 1, 2)
  and (0, 2, 3) would face away from each other: in a flat quad, p1 and p3 on the same
  side of the 0–2 line (a reflex corner at 1 or 3); in a bent one, a fold past 90°.
  In Blender 5.0 quads always take this test (face normals are used only by polyfill);
* an n-gon (> 4 corners) is filled by ``BLI_polyfill`` on a 2D projection, which this
  module does not reproduce: its rest triangles are kept, and callers that need the exact
  n-gon triangles read them from Blender (``addon.extract.evaluated_frame``).

The triangle indices of a polygon are contiguous and a quad always has two, so the index
of every triangle is the same at every frame; only the vertices of a quad's two triangles
change. The decision depends on the coordinate frame only through rounding: under an
affine map ``x → A x + t`` both crosses become ``det(A) A⁻ᵀ(·)``, and for a similarity
(rotation, uniform scale, translation) the sign of the dot product is unchanged in exact
arithmetic. A non-uniform object scale can change the sign, so decide on mesh-local
positions, as Blender does, whenever they are at hand.

Everything here is vectorized over quads; the result is written into a copy of the rest
triangles. The rule, the coordinate-frame argument and why the bounds hold for any split:
docs/triangulation.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..cache import derived


@dataclass
class QuadTable:
    """Where the quads of a mesh sit in its triangle array.

    Attributes:
        first_tri: (Q,) int64 index of each quad's first triangle (the second is next).
        corners: (Q, 4) int32 the quad's vertices in loop order.
        has_ngons: whether the mesh has polygons with more than four corners.
    """

    first_tri: np.ndarray
    corners: np.ndarray
    has_ngons: bool
    # Made on first use by `frame_triangles_from` (per frame only flipped quads change):
    # the triangles with every quad cut along 0–2 (Blender's default), each quad's two
    # flipped triangles (Q, 2, 3), the corner columns as index arrays (4, Q) and the
    # rest triangles they were made from.
    _base: np.ndarray | None = field(default=None, repr=False)
    _flipped: np.ndarray | None = field(default=None, repr=False)
    _cols: np.ndarray | None = field(default=None, repr=False)
    _rest: np.ndarray | None = field(default=None, repr=False)
    # The last frame's float32 position rows and flips (`_frame_flips`), updated in place.
    _last: tuple | None = field(default=None, repr=False)


def triangle_ptr(poly_ptr: np.ndarray) -> np.ndarray:
    """(P + 1,) int64 offsets of each polygon's triangles (a polygon of n corners has
    n − 2, stored contiguously in polygon order)."""
    sizes = np.diff(np.asarray(poly_ptr, dtype=np.int64))
    ptr = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes - 2, out=ptr[1:])
    return ptr


def quad_table(poly_ptr: np.ndarray, poly_verts: np.ndarray) -> QuadTable:
    """The quads of a polygon mesh given as CSR loops ((P + 1,) offsets, (L,) vertices)."""
    poly_ptr = np.asarray(poly_ptr, dtype=np.int64)
    sizes = np.diff(poly_ptr)
    quads = np.nonzero(sizes == 4)[0]
    start = poly_ptr[quads]
    corners = np.asarray(poly_verts, dtype=np.int32)[start[:, None] + np.arange(4)]
    return QuadTable(triangle_ptr(poly_ptr)[quads], corners.reshape(-1, 4),
                     bool(np.any(sizes > 4)))


def quad_flips(positions: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """(Q,) bool: Blender cuts the quad along 1–3 instead of 0–2.

    Evaluated the way Blender's ``is_quad_flip_v3_first_third_fast`` does it in C: float32
    differences, crosses ``a × b = (a1 b2 − a2 b1, a2 b0 − a0 b2, a0 b1 − a1 b0)`` and the
    dot product summed left to right, every operation rounded to float32 (no fused
    multiply-add), so the answer agrees with Blender's on its float32 positions.

    Args:
        positions: (V, 3) evaluated positions (mesh-local for an exact match; cast to
            float32 like Blender's).
        corners: (Q, 4) int vertex indices of the quads in loop order.
    """
    c = np.asarray(corners)
    return _flips(positions, np.ascontiguousarray(c.T).astype(np.intp, copy=False))


def _flips(positions: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`quad_flips` with the corners given as (4, Q) index columns."""
    return _flips32(_rows32(positions), cols)


def _rows32(positions: np.ndarray) -> np.ndarray:
    """(3, V) float32 positions, one row per axis (the cast rounds like Blender's float32
    positions)."""
    p = np.empty((3, positions.shape[0]), dtype=np.float32)
    p[...] = np.asarray(positions).T
    return p


def _flips32(p: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """`_flips` on (3, V) float32 rows."""
    # The four corners of every quad in one gather, (axis, corner, quad), then per axis
    # d12 = p1 − p0, d13 = p2 − p0, d14 = p3 − p0 in one subtraction (the same float32
    # differences as twelve gathers and nine subtractions, in two calls).
    g = np.take(p, cols, axis=1)
    d = g[:, 1:] - g[:, :1]
    d12, d13, d14 = d[:, 0], d[:, 1], d[:, 2]

    def cross(a, b):
        return (a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0])

    ax, ay, az = cross(d12, d13)
    bx, by, bz = cross(d14, d13)
    dot = ax * bx
    dot += ay * by
    dot += az * bz
    return dot > np.float32(0.0)


def split_quads(corners: np.ndarray, flip: np.ndarray) -> np.ndarray:
    """(Q, 2, 3) int32 the two triangles of each quad in Blender's order:
    (0, 1, 2), (0, 2, 3), or when flipped (0, 1, 3), (1, 2, 3)."""
    c = np.asarray(corners, dtype=np.int32)
    out = np.empty((c.shape[0], 2, 3), dtype=np.int32)
    out[:, 0, 0] = c[:, 0]
    out[:, 0, 1] = c[:, 1]
    out[:, 0, 2] = np.where(flip, c[:, 3], c[:, 2])
    out[:, 1, 0] = np.where(flip, c[:, 1], c[:, 0])
    out[:, 1, 1] = c[:, 2]
    out[:, 1, 2] = c[:, 3]
    return out


def frame_triangles_from(rest_triangles: np.ndarray, quads: QuadTable,
                         positions: np.ndarray) -> np.ndarray:
    """(T, 3) int32: `rest_triangles` with every quad re-decided at `positions`."""
    if not quads.first_tri.size:
        return np.array(rest_triangles, dtype=np.int32, copy=True).reshape(-1, 3)
    if quads._base is None or quads._rest is not rest_triangles:
        _prepare(quads, rest_triangles)
    # Most quads keep the 0–2 cut: copy those triangles, then write the flipped quads.
    tris = quads._base.copy()
    q = np.flatnonzero(_frame_flips(quads, _rows32(positions)))
    if q.size:
        # A quad's two triangles are adjacent rows: write both at once.
        rows = quads.first_tri[q]
        tris[rows] = quads._flipped[q, 0]
        tris[rows + 1] = quads._flipped[q, 1]
    return tris


def _frame_flips(quads: QuadTable, p: np.ndarray) -> np.ndarray:
    """(Q,) bool the flipped quads at float32 rows `p` (3, V). The last call's rows and
    answer are kept: a quad none of whose corners changed (bit for bit, in float32, what
    the rule reads) keeps its answer, and only the others are decided again: posing
    moves a few quads."""
    cols = quads._cols
    last = quads._last
    if last is None or last[0].shape != p.shape:
        flips = _flips32(p, cols)
        quads._last = (p, flips)
        return flips
    kept, flips = last
    d = p != kept
    moved = d[0] | d[1] | d[2]
    mq = moved[cols[0]] | moved[cols[1]] | moved[cols[2]] | moved[cols[3]]
    if np.count_nonzero(mq) * 2 > mq.size:
        flips = _flips32(p, cols)
        quads._last = (p, flips)
        return flips
    mq = np.flatnonzero(mq)
    if mq.size:
        flips[mq] = _flips32(p, cols[:, mq])
        mv = np.flatnonzero(moved)
        kept[:, mv] = p[:, mv]
    return flips


def _prepare(quads: QuadTable, rest_triangles: np.ndarray) -> None:
    """Fill the per-mesh arrays of `quads` used by `frame_triangles_from`."""
    base = np.array(rest_triangles, dtype=np.int32, copy=True).reshape(-1, 3)
    n = quads.first_tri.size
    keep = split_quads(quads.corners, np.zeros(n, dtype=bool))
    base.reshape(-1)[(3 * quads.first_tri)[:, None] + np.arange(6)] = keep.reshape(-1, 6)
    quads._flipped = split_quads(quads.corners, np.ones(n, dtype=bool))
    quads._cols = np.ascontiguousarray(np.asarray(quads.corners).T).astype(np.intp)
    quads._base = base
    quads._rest = rest_triangles
    quads._last = None


def frame_triangles(topology, positions: np.ndarray) -> np.ndarray:
    """The triangles Blender draws at `positions`.

    Args:
        topology: anything with ``triangles`` (T, 3), ``poly_ptr`` (P + 1,) and
            ``poly_verts`` (L,) arrays, e.g. a `core.rig.Rig` (its quad table is cached).
        positions: (V, 3) the frame's evaluated positions, mesh-local for a bit-exact
            agreement with Blender (see the module docstring).
    Returns:
        (T, 3) int32; n-gons keep their rest triangles.
    """
    return frame_triangles_from(topology.triangles, quads_of(topology), positions)


def quads_of(topology) -> QuadTable:
    """The `QuadTable` of `topology`, computed once and kept on the object."""
    return derived(topology, "quad_table",
                   lambda: quad_table(topology.poly_ptr, topology.poly_verts))


def fan_polygons(triangles: np.ndarray, tri_polygon: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Polygon loops of a fan-triangulated mesh: the first triangle's three corners, then
    the last corner of each further triangle of the polygon. Returns poly_ptr (P + 1,)
    int64 and poly_verts (L,) int32. For meshes whose triangles were made as fans
    (``core.procedural``); Blender meshes give their loops directly."""
    triangles = np.asarray(triangles, dtype=np.int32).reshape(-1, 3)
    tri_polygon = np.asarray(tri_polygon, dtype=np.int64)
    if tri_polygon.size == 0:
        return np.zeros(1, np.int64), np.zeros(0, np.int32)
    P = int(tri_polygon.max()) + 1
    counts = np.bincount(tri_polygon, minlength=P)
    first = np.ones(tri_polygon.size, dtype=bool)
    first[1:] = tri_polygon[1:] != tri_polygon[:-1]
    # Row-major over the triangles (which are in polygon order): all three corners of a
    # polygon's first triangle, then the third corner of each further one.
    take = np.zeros(triangles.shape, dtype=bool)
    take[first] = True
    take[:, 2] = True
    ptr = np.zeros(P + 1, dtype=np.int64)
    np.cumsum(counts + 2 * (counts > 0), out=ptr[1:])
    return ptr, triangles[take].astype(np.int32)
