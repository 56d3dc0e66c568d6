"""Vectorized, conservative-exact intersection test for pairs of 3D triangles.

Pure numpy (no bpy / mathutils), so it can be unit tested outside Blender.

Method (details and rationale in ``docs/triangle_test.md``)
-----------------------------------------------------------
Two closed convex sets are disjoint iff their projections on some axis ``v``
are disjoint intervals.  For two triangles, degenerate ones included, a
finite list of candidate axes built from the normals ``nA``, ``nB`` and the
edge vectors ``eA_i``, ``eB_j`` always contains such an axis:

* stage 1, plane axes ``nA``, ``nB`` (rejects most disjoint pairs cheaply);
* stage 2, edge-edge axes ``eA_i x eB_j`` (one orientation determinant per
  axis plus values from stage 1).  Stages 1-2 decide every pair of proper,
  non-coplanar triangles;
* stage 3, only for pairs where one triangle lies in a thin slab around the
  other's plane (nearly coplanar, or a nearly degenerate triangle): all of
  the above again plus the in-plane edge normals ``n x e`` (both normals, all
  six edges) and, when both triangles are (nearly) segments or points, the
  axes of the segment-segment problem of their longest edges.

Tolerance
---------
The answer is "intersecting" unless one axis *certifies* a separation, i.e.
the computed gap between the projected intervals exceeds a margin that is
larger than any rounding error (coordinates are first translated so that
``a0`` is the origin; ``L`` is then the largest absolute coordinate of the
pair and ``s = 2 L`` bounds every edge-vector component):

* stages 1-2 evaluate degree-3 polynomials (orientation determinants); the
  margin is ``rel_tol * s**3``;
* stage 3 forms each axis ``v`` explicitly and projects all six vertices on
  it; the margin is ``rel_tol * s * |v|_1``.

With ``rel_tol = REL_TOL = 1e-12`` the margins exceed the worst-case float64
error bounds (about ``1e-13 * L**3`` and ``1e-15 * L * |v|_1``) by a factor
of 80 or more, hence:

* a pair that truly shares a point is never reported disjoint, and
* pairs that touch *within tolerance* count as intersecting.  In distances
  this tolerance is about ``1e-11 * L`` for well-shaped triangles; for
  slivers and nearly coplanar pairs a few ``1e-10 * L`` were measured.

When all these polynomials are evaluated exactly in float64 (small integers,
coarse dyadic grids) the answer is exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["REL_TOL", "triangles_intersect", "triangle_pairs_intersect", "corner_pairs_intersect",
           "triangle_boxes", "boxes_meet"]

#: Default relative tolerance (see the module docstring): a separation is only
#: accepted if it exceeds ``REL_TOL * (2 L)**3`` (stages 1-2, determinants) or
#: ``REL_TOL * 2 L * |v|_1`` (stage 3, explicit axis v), ``L`` being the largest
#: absolute coordinate of the pair after translating ``a0`` to the origin.
REL_TOL: float = 1e-12

# Relative thickness (plane distances pA/pB vs (2 L)**3, normals vs (2 L)**2)
# below which a pair counts as nearly coplanar / a triangle as nearly
# degenerate and the stage-3 axes are tried.  It only affects the cost and
# how close to touching a nearly coplanar disjoint pair may be and still be
# recognised as disjoint; correctness never depends on it.
_NEAR_FLAT: float = 1e-3

# Pairs processed per block: keeps the temporaries of one block in cache and
# bounds peak memory for very large K; each block is fully vectorized. Since
# the vertices are gathered per block (`_rel_rows_indexed`), 2**14 beat 2**13
# on self-collision candidates (`python -m bench self --parts`: MakeHuman 27k
# 1.37 -> 1.20 ms, 107k 5.8 -> 5.0-5.5 ms; `python -m bench dense-pairs` pose
# 0.002 5 1 --exact: 2.24 -> 1.81 s), with fewer numpy calls per pair.
_BLOCK: int = 1 << 14

Vec = tuple[np.ndarray, np.ndarray, np.ndarray]  # x, y, z rows, each (n,)


def _sub(p: Vec, q: Vec) -> Vec:
    return (p[0] - q[0], p[1] - q[1], p[2] - q[2])


def _cross(p: Vec, q: Vec) -> Vec:
    return (
        p[1] * q[2] - p[2] * q[1],
        p[2] * q[0] - p[0] * q[2],
        p[0] * q[1] - p[1] * q[0],
    )


def _dot(p: Vec, q: Vec) -> np.ndarray:
    return p[0] * q[0] + p[1] * q[1] + p[2] * q[2]


def _take(p: Vec, idx: np.ndarray) -> Vec:
    return (p[0][idx], p[1][idx], p[2][idx])


def _min3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.minimum(np.minimum(a, b), c)


def _max3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.maximum(np.maximum(a, b), c)


def _longest_edge(p0: Vec, p1: Vec, p2: Vec) -> tuple[Vec, Vec]:
    """End points of the longest edge: for a collinear triangle (or a point)
    this segment is the whole triangle."""
    l01 = _dot(_sub(p1, p0), _sub(p1, p0))
    l12 = _dot(_sub(p2, p1), _sub(p2, p1))
    l20 = _dot(_sub(p0, p2), _sub(p0, p2))
    use01 = (l01 >= l12) & (l01 >= l20)
    use12 = ~use01 & (l12 >= l20)
    start = tuple(np.where(use01, p0[k], np.where(use12, p1[k], p2[k])) for k in range(3))
    end = tuple(np.where(use01, p1[k], np.where(use12, p2[k], p0[k])) for k in range(3))
    return start, end  # type: ignore[return-value]


def _dot_into(p: Vec, q: Vec, out: np.ndarray) -> np.ndarray:
    """p . q written into ``out`` (a row of a buffer that is compressed later)."""
    np.multiply(p[0], q[0], out=out)
    out += p[1] * q[1]
    out += p[2] * q[2]
    return out


def _rel_rows(arrs: list[np.ndarray], start: int, stop: int) -> np.ndarray:
    """(15, n) float64 rows x/y/z of a1, a2, b0, b1, b2 minus a0 for pairs
    ``start:stop`` of the six (K, 3) vertex arrays a0, a1, a2, b0, b1, b2.

    Translating to a local origin (a0 := 0) removes the cancellation that
    large absolute coordinates would cause in every later difference; the
    x/y/z rows are made contiguous because strided columns slow every op.
    """
    a0_in = arrs[0][start:stop].T
    rel = np.empty((15, stop - start))
    for k in range(5):
        np.subtract(arrs[k + 1][start:stop].T, a0_in, out=rel[3 * k : 3 * k + 3])
    return rel


def _rel_rows_indexed(pa: np.ndarray, ca: np.ndarray, pb: np.ndarray, cb: np.ndarray
                      ) -> np.ndarray:
    """`_rel_rows` gathered from coordinate rows: pa (3, Va), pb (3, Vb)
    float64 (x, y, z rows of each mesh's vertices) and the pairs' corners
    ca, cb (3, n) int. The same differences of the same numbers, in three
    calls: the gathers land as (xyz, corner, n) with every row contiguous."""
    ga = np.take(pa, ca, axis=1)                           # (3, 3, n)
    gb = np.take(pb, cb, axis=1)
    rel = np.empty((5, 3, ca.shape[1]))
    a0 = ga[:, 0]
    np.subtract(ga[:, 1:].transpose(1, 0, 2), a0, out=rel[:2])
    np.subtract(gb.transpose(1, 0, 2), a0, out=rel[2:])
    return rel.reshape(15, -1)


def _block(
    rel: np.ndarray, rel_tol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stages 1-2 on the n pairs of ``rel`` (15, n) (`_rel_rows`).

    Returns ``(hit, idx3, rel3, scale3)``: hit (n,) bool, True = not
    separated by stages 1-2; idx3 (m,) int, block-local indices of the pairs
    that still need stage 3, with their translated vertices rel3 (15, m)
    float64 and scales scale3 (m,) float64.
    """
    n = rel.shape[1]
    # Per-pair values that survive into stage 2 live in one buffer so that
    # the survivors are extracted with a single compress call.
    # rows: pA_0..2, pB_0..2, tol3, scale
    vals = np.empty((8, n))
    scale = vals[7]
    np.maximum(rel.max(axis=0), -rel.min(axis=0), out=scale)
    scale *= 2.0  # bounds every edge-vector component of the pair
    tol3 = vals[6]
    np.multiply(scale, scale, out=tol3)
    tol3 *= scale
    tol3 *= rel_tol

    a1: Vec = (rel[0], rel[1], rel[2])
    a2: Vec = (rel[3], rel[4], rel[5])
    b0: Vec = (rel[6], rel[7], rel[8])
    b1: Vec = (rel[9], rel[10], rel[11])
    b2: Vec = (rel[12], rel[13], rel[14])

    # ---- stage 1: plane axes nA, nB ---------------------------------------
    n_a = _cross(a1, a2)
    n_b = _cross(_sub(b1, b0), _sub(b2, b0))
    # A projects to 0 on nA (exact identity), B to pB_j; likewise for nB.
    pa = [vals[0], vals[1], vals[2]]
    pb = [vals[3], vals[4], vals[5]]
    for j, b in enumerate((b0, b1, b2)):
        _dot_into(n_a, b, pb[j])
    _dot_into(n_b, b0, pa[0])
    _dot_into(n_b, a1, pa[1])
    _dot_into(n_b, a2, pa[2])
    pa[1] -= pa[0]
    pa[2] -= pa[0]
    np.negative(pa[0], out=pa[0])
    neg_tol3 = -tol3
    sep = (_min3(*pb) > tol3) | (_max3(*pb) < neg_tol3)
    sep |= (_min3(*pa) > tol3) | (_max3(*pa) < neg_tol3)

    result = np.zeros(n, dtype=bool)
    keep = ~sep
    live = np.flatnonzero(keep)
    if live.size == 0:
        return result, live, rel[:, :0], scale[:0]
    rel_l = np.compress(keep, rel, axis=1)
    vals_l = np.compress(keep, vals, axis=1)
    sep = _stage2(rel_l, vals_l)

    # ---- select pairs for stage 3 -------------------------------------------
    # If the planes are far from parallel and both triangles are proper,
    # stages 1-2 contain a separating axis with a good margin whenever one
    # exists.  When one triangle lies in a thin slab around the other's
    # plane, the Minkowski difference is a thin lens whose rim facets have
    # normals c_ij almost parallel to the plane normal, so a clear in-plane
    # gap shows up on them only as a sub-tolerance margin; stage 3 measures
    # it on in-plane axes instead.  The slab is wide (_NEAR_FLAT, not the
    # tolerance) because only the cost depends on it.
    pa, pb, scale = vals_l[0:3], vals_l[3:6], vals_l[7]
    slab = _NEAR_FLAT * scale * scale * scale
    flat = (np.abs(pa).max(axis=0) <= slab) | (np.abs(pb).max(axis=0) <= slab)
    sub = np.flatnonzero(~sep & flat)
    result[live] = ~sep
    return result, live[sub], rel_l[:, sub], scale[sub]


def _stage2(rel: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """Edge-edge axes c_ij = eA_i x eB_j.

    rel: (15, m) float64 rows x/y/z of a1, a2, b0, b1, b2 (a0 = origin).
    vals: (8, m) float64 rows pA_0..2, pB_0..2, tol3, scale from stage 1.
    Returns (m,) bool, True = certified separated.
    """
    m = rel.shape[1]
    a1, a2 = rel[0:3], rel[3:6]
    vb = rel[6:15].reshape(3, 3, m)  # [vertex j, xyz, pair]
    ea = np.empty((3, 3, m))  # eA_i = a_(i+1) - a_i, with a0 = 0
    ea[0] = a1
    np.subtract(a2, a1, out=ea[1])
    np.negative(a2, out=ea[2])
    eb = np.empty((3, 3, m))  # eB_j = b_(j+1) - b_j
    np.subtract(vb[1:], vb[:2], out=eb[:2])
    np.subtract(vb[0], vb[2], out=eb[2])
    # Projections on c_ij, relative to a_i (exact identities):
    #   a_i, a_(i+1) -> 0,     a_(i+2) -> t_j = pB_j - pB_(j+1)
    #   b_j, b_(j+1) -> D_ij,  b_(j+2) -> D_ij + s_i,  s_i = pA_(i+1) - pA_i
    # and, with a0 = 0, D_ij = -E_ij + [i == 1] t_j, E_ij = eA_i . (b_j x eB_j)
    # (Pluecker form: a_0 x eA_0 = a_2 x eA_2 = 0, a_1 x eA_1 = nA), which
    # costs one dot product per axis.  The intervals are more than tol apart
    # iff |centre_B - centre_A| > (width_A + width_B) / 2 + tol, where
    # centre_B - centre_A = -E_ij + [i == 1] t_j + (s_i - t_j) / 2.
    pa, pb, tol3 = vals[0:3], vals[3:6], vals[6]
    # The nine axes at once, as (3, 3, m) arrays [i, j, pair]: the same products and
    # sums per element as one pass per axis (checked equal on 200k random close pairs),
    # in about 15 calls instead of about 100 (the self query's exact tests get only the
    # pairs the slabs left: the calls, not the elements, were their cost).
    ht = pb - pb[_NEXT]                      # t_j / 2
    ht *= 0.5
    hs = pa[_NEXT] - pa                      # s_i / 2
    hs *= 0.5
    hwt = np.abs(ht)
    hwt += tol3
    hws = np.abs(hs)
    m_b = vb[:, _NEXT] * eb[:, _PREV]        # b_j x eB_j, per component k
    m_b -= vb[:, _PREV] * eb[:, _NEXT]
    g = hs[:, None] + _SIGN * ht[None]       # s_i - t_j, or s_i + t_j for i == 1
    e = ea[:, None, 0] * m_b[None, :, 0]     # E_ij = eA_i . (b_j x eB_j)
    e += ea[:, None, 1] * m_b[None, :, 1]
    e += ea[:, None, 2] * m_b[None, :, 2]
    g -= e
    np.abs(g, out=g)
    return (g > hws[:, None] + hwt[None]).any(axis=(0, 1))


#: Components (or vertices) k + 1 and k + 2 (mod 3), for stacked crosses and edges.
_NEXT = np.array([1, 2, 0])
_PREV = np.array([2, 0, 1])
#: Stage 2's sign of t_j per edge i of A (+ for i == 1).
_SIGN = np.array([-1.0, 1.0, -1.0])[:, None, None]


def _stage3(rel: np.ndarray, scale: np.ndarray, rel_tol: float) -> np.ndarray:
    """Separation certificates for (nearly) coplanar / degenerate pairs.

    rel: (15, m) float64, rows x/y/z of a1, a2, b0, b1, b2 relative to a0.
    scale: (m,) float64, twice the largest absolute coordinate of each pair.
    Returns (m,) bool, True = certified separated.

    Unlike stages 1-2, every axis v is formed explicitly and all six vertices
    are projected on it, so the computed v itself (rounding included) is the
    separating direction and only the dot products need an error margin:
    ``rel_tol * scale * |v|_1``.  This margin shrinks with |v|, which keeps
    the test sharp for nearly degenerate triangles, whose normals are tiny.
    """
    m = scale.size
    zero = np.zeros(m)
    pts: list[Vec] = [(rel[k], rel[k + 1], rel[k + 2]) for k in range(0, 15, 3)]
    va: list[Vec] = [(zero, zero, zero), pts[0], pts[1]]
    vb: list[Vec] = pts[2:]
    ea = [_sub(va[(i + 1) % 3], va[i]) for i in range(3)]
    eb = [_sub(vb[(j + 1) % 3], vb[j]) for j in range(3)]
    n_a = _cross(ea[0], _sub(va[2], va[0]))
    n_b = _cross(eb[0], _sub(vb[2], vb[0]))
    rscale = rel_tol * scale

    # Normals and edge-edge axes again (now with the |v|-relative margin),
    # then the in-plane edge normals w.r.t. both normals: the side faces of
    # the Minkowski difference when it is flat (coplanar pair), and the axes
    # of segment/point-vs-triangle when one normal vanishes. All 23 axes at
    # once, as (23, 3, m) arrays: the same products and sums per element as
    # a loop over the axes (so the same values), in a few calls instead of some 300.
    E = np.array([ea[0], ea[1], ea[2]])                      # (3, 3, m)
    F = np.array([eb[0], eb[1], eb[2]])
    N = np.array([n_a, n_b])                                 # (2, 3, m)
    EF = np.concatenate([E, F])                              # (6, 3, m)
    axes = np.concatenate([
        N,
        _cross_stack(E[:, None], F[None, :]).reshape(9, 3, m),
        _cross_stack(N[:, None], EF[None, :]).reshape(12, 3, m),
    ])
    sep = _separated_any(axes, np.array([va[0], va[1], va[2]]),
                         np.array([vb[0], vb[1], vb[2]]), rscale)

    # Both triangles collinear or points: segment-segment axes of their
    # longest edges (which are the whole triangles in the exact case).  The
    # wide threshold also covers near-degenerate (needle-like) pairs.
    small = _NEAR_FLAT * scale * scale

    def tiny(v: Vec) -> np.ndarray:
        return (np.abs(v[0]) <= small) & (np.abs(v[1]) <= small) & (np.abs(v[2]) <= small)

    deg = np.flatnonzero(~sep & tiny(n_a) & tiny(n_b))
    if deg.size:
        va_d = [_take(v, deg) for v in va]
        vb_d = [_take(v, deg) for v in vb]
        p, q = _longest_edge(*va_d)
        r, s = _longest_edge(*vb_d)
        d_a, d_b, w = _sub(q, p), _sub(s, r), _sub(r, p)
        c = _cross(d_a, d_b)
        seg_axes = [
            c,  # segments on skew or parallel planes
            _cross(c, d_a),  # coplanar, crossing lines
            _cross(c, d_b),
            _cross(_cross(w, d_a), d_a),  # parallel lines, or a point
            _cross(_cross(w, d_b), d_b),
            d_a,  # collinear: along the common line
            d_b,
            w,  # two points
        ]
        sep[deg] |= _separated_any(np.array(seg_axes), np.array(va_d), np.array(vb_d),
                                   rscale[deg])
    return sep


def _cross_stack(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """`_cross` of stacked (..., 3, m) arrays (broadcast), as (..., 3, m)."""
    x, y, z = _cross((p[..., 0, :], p[..., 1, :], p[..., 2, :]),
                     (q[..., 0, :], q[..., 1, :], q[..., 2, :]))
    return np.stack([x, y, z], axis=-2)


def _separated_any(axes: np.ndarray, pa: np.ndarray, pb: np.ndarray,
                   rs: np.ndarray) -> np.ndarray:
    """(m,) bool: some axis of axes (k, 3, m) separates the points pa (3, 3, m) from pb
    (3, 3, m) by more than ``rs * |v|_1`` (rs (m,)): on some axis the projected intervals
    (`_dot` per point, the same arithmetic per element) are more than that apart."""
    v = axes[:, None]                                        # (k, 1, 3, m)

    def proj(p):                                             # (k, 3, m): v . p, as `_dot`
        return v[:, :, 0] * p[:, 0] + v[:, :, 1] * p[:, 1] + v[:, :, 2] * p[:, 2]

    qa, qb = proj(pa), proj(pb)
    tol = rs * (np.abs(axes[:, 0]) + np.abs(axes[:, 1]) + np.abs(axes[:, 2]))
    lo_a, hi_a = _min3(qa[:, 0], qa[:, 1], qa[:, 2]), _max3(qa[:, 0], qa[:, 1], qa[:, 2])
    lo_b, hi_b = _min3(qb[:, 0], qb[:, 1], qb[:, 2]), _max3(qb[:, 0], qb[:, 1], qb[:, 2])
    return ((lo_b - hi_a > tol) | (lo_a - hi_b > tol)).any(axis=0)


def _as_points(x: np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name} must have shape (K, 3), got {arr.shape}")
    return arr


def triangles_intersect(
    a0: np.ndarray,
    a1: np.ndarray,
    a2: np.ndarray,
    b0: np.ndarray,
    b1: np.ndarray,
    b2: np.ndarray,
    *,
    rel_tol: float = REL_TOL,
) -> np.ndarray:
    """Test K triangle pairs (A_k, B_k) for intersection, all at once.

    Args:
        a0, a1, a2: (K, 3) float64 (anything convertible), vertices of the
            triangles A; row k of ``a_i`` is vertex i of A_k.
        b0, b1, b2: (K, 3) float64, vertices of the triangles B.
        rel_tol: relative tolerance (float), see ``REL_TOL`` and the module
            docstring: a separation is only accepted when it exceeds
            ``rel_tol * (2 L)**3`` (determinants) or ``rel_tol * 2 L * |v|_1``
            (explicit axis v), L being the largest absolute coordinate of the
            pair after moving ``a0`` to the origin.  Values below ~1e-13 void
            the "never miss" guarantee.

    Returns:
        (K,) bool: True iff the two closed triangles share at least one
        point.  Touching within tolerance counts as intersecting; shared
        vertices/edges, vertex-on-face, edge-on-edge contacts and coplanar
        overlaps all count.  Degenerate triangles (collinear or repeated
        vertices) are treated as the segment / point they are.  Non-finite
        coordinates yield True (nothing can be certified).
    """
    arrs = [
        _as_points(v, nm)
        for v, nm in zip((a0, a1, a2, b0, b1, b2), ("a0", "a1", "a2", "b0", "b1", "b2"))
    ]
    k = arrs[0].shape[0]
    if any(v.shape[0] != k for v in arrs):
        raise ValueError("all six vertex arrays must have the same length K")
    return _intersect_blocks(k, lambda start, stop: _rel_rows(arrs, start, stop), rel_tol)


def _intersect_blocks(k: int, rel_of, rel_tol: float) -> np.ndarray:
    """(k,) bool, the test of k pairs whose translated rows for pairs
    ``start:stop`` are ``rel_of(start, stop)`` ((15, n), `_rel_rows`), a
    block of `_BLOCK` pairs at a time."""
    out = np.empty(k, dtype=bool)
    # Stage-3 pairs are rare in practice; pooling them over blocks avoids
    # paying its several hundred numpy calls per block, and flushing the
    # pool at _BLOCK pairs bounds its memory.
    pool: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    pooled = 0

    def flush() -> None:
        idx = np.concatenate([p[0] for p in pool])
        rel = np.concatenate([p[1] for p in pool], axis=1)
        scale = np.concatenate([p[2] for p in pool])
        out[idx] = ~_stage3(rel, scale, rel_tol)
        pool.clear()

    with np.errstate(all="ignore"):  # inf/nan inputs just stay "True"
        for start in range(0, k, _BLOCK):
            stop = min(start + _BLOCK, k)
            out[start:stop], i3, r3, s3 = _block(rel_of(start, stop), rel_tol)
            if i3.size:
                pool.append((i3 + start, r3, s3))
                pooled += i3.size
            if pooled >= _BLOCK or (stop == k and pooled):
                flush()
                pooled = 0
    return out


def triangle_pairs_intersect(
    verts_a: np.ndarray,
    tris_a: np.ndarray,
    idx_a: np.ndarray,
    verts_b: np.ndarray,
    tris_b: np.ndarray,
    idx_b: np.ndarray,
    *,
    rel_tol: float = REL_TOL,
) -> np.ndarray:
    """Gather triangle pairs from two meshes and test them.

    Args:
        verts_a: (Va, 3) float64 vertex coordinates of mesh A.
        tris_a: (Ta, 3) int vertex indices of the triangles of mesh A.
        idx_a: (K,) int, triangle of A in each pair (index into ``tris_a``).
        verts_b: (Vb, 3) float64 vertex coordinates of mesh B.
        tris_b: (Tb, 3) int triangles of mesh B.
        idx_b: (K,) int, triangle of B in each pair.
        rel_tol: see :func:`triangles_intersect`.

    Returns:
        (K,) bool, True where triangle ``tris_a[idx_a[k]]`` and triangle
        ``tris_b[idx_b[k]]`` intersect (closed, touching counts).
    """
    same = verts_b is verts_a
    va = _as_points(verts_a, "verts_a")
    vb = va if same else _as_points(verts_b, "verts_b")
    tris_a, tris_b = np.asarray(tris_a), np.asarray(tris_b)
    idx_a, idx_b = np.asarray(idx_a, np.intp), np.asarray(idx_b, np.intp)
    if (tris_a.ndim != 2 or tris_a.shape[1] != 3 or tris_b.ndim != 2
            or tris_b.shape[1] != 3 or idx_a.ndim != 1 or idx_b.shape != idx_a.shape):
        raise ValueError("tris must be (T, 3) and idx_a, idx_b (K,) of equal length")
    # Coordinates and corners as rows (x, y, z; corner 0, 1, 2), so that each
    # block's vertices are gathered straight into contiguous rows.
    pa = np.ascontiguousarray(va.T)
    pb = pa if same else np.ascontiguousarray(vb.T)
    ra = np.ascontiguousarray(tris_a.T, dtype=np.intp)
    rb = ra if same and tris_b is tris_a else np.ascontiguousarray(tris_b.T, dtype=np.intp)

    def rel_of(start: int, stop: int) -> np.ndarray:
        return _rel_rows_indexed(pa, np.take(ra, idx_a[start:stop], axis=1),
                                 pb, np.take(rb, idx_b[start:stop], axis=1))

    return _intersect_blocks(idx_a.size, rel_of, rel_tol)


def corner_pairs_intersect(rows_a: np.ndarray, ca: np.ndarray, rows_b: np.ndarray,
                           cb: np.ndarray, *, rel_tol: float = REL_TOL) -> np.ndarray:
    """`triangle_pairs_intersect` on pairs given by their corners: rows_a (3, Va) and
    rows_b (3, Vb) float64 the x, y, z rows of each mesh's vertices, ca and cb (3, K)
    intp the corners (vertex indices) of each pair's triangle of A and of B. For a
    caller that already has them (the self query gathers corners for its own filter).
    Returns (K,) bool, True where the triangles intersect (closed, touching counts)."""
    def rel_of(start: int, stop: int) -> np.ndarray:
        return _rel_rows_indexed(rows_a, ca[:, start:stop], rows_b, cb[:, start:stop])

    return _intersect_blocks(ca.shape[1], rel_of, rel_tol)


def triangle_boxes(positions: np.ndarray, triangles: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(T, 3) lo and hi of each triangle's vertices (exact: min and max round nothing).
    positions (V, 3) float64, triangles (T, 3) int."""
    c = positions[triangles]
    lo = np.minimum(np.minimum(c[:, 0], c[:, 1]), c[:, 2])
    hi = np.maximum(np.maximum(c[:, 0], c[:, 1]), c[:, 2])
    return lo, hi


def boxes_meet(pos_a: np.ndarray, tris_a: np.ndarray, pos_b: np.ndarray,
               tris_b: np.ndarray) -> np.ndarray:
    """(K,) bool: the float64 boxes of triangles ``tris_a[k]`` (vertices of `pos_a`) and
    ``tris_b[k]`` (of `pos_b`) meet, closed, by exact comparisons. Boxes apart are
    disjoint triangles, while the pair test above calls a pair a hair apart touching
    within its tolerance: between two objects a pair counts as intersecting only if both
    hold, on every path and in the oracle (`core.scan.exact`). pos (V, 3) float64, tris
    (K, 3) int (the pairs' own triangles, row k against row k)."""
    (lo_a, hi_a), (lo_b, hi_b) = triangle_boxes(pos_a, tris_a), triangle_boxes(pos_b, tris_b)
    return ((lo_a <= hi_b) & (lo_b <= hi_a)).all(axis=1)


def _benchmark(n: int = 1_000_000, seed: int = 0, repeat: int = 5) -> None:
    """Print the throughput for ``n`` random pairs (three distributions)."""
    import time

    rng = np.random.default_rng(seed)
    cases = {
        # independent triangles in the unit cube: many separate in stage 1
        "uniform in unit cube": [rng.random((n, 3)) for _ in range(6)],
    }
    # close pairs, like broad-phase candidates
    c = rng.random((n, 3))
    cases["close pairs"] = [c + 0.3 * rng.standard_normal((n, 3)) for _ in range(6)]
    # worst case: every pair crosses, so every pair runs stages 1 and 2
    a = [rng.random((n, 3)) for _ in range(3)]
    mid = (a[0] + a[1] + a[2]) / 3.0
    nrm = np.cross(a[1] - a[0], a[2] - a[0])
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    side = rng.standard_normal((n, 3)) * 0.05
    cases["all crossing"] = a + [mid + 0.3 * nrm, mid - 0.3 * nrm + side, mid - 0.3 * nrm - side]
    for name, v in cases.items():
        triangles_intersect(*v)  # warm-up
        best = np.inf
        for _ in range(repeat):
            t0 = time.perf_counter()
            hit = triangles_intersect(*v)
            best = min(best, time.perf_counter() - t0)
        print(
            f"{name:22s} {n} pairs: best of {repeat} {best:.3f} s = "
            f"{best / n * 1e9:.0f} ns/pair, {hit.mean() * 100:.1f}% intersecting"
        )


if __name__ == "__main__":
    _benchmark()
