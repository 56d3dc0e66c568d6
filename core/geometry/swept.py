"""Swept bounds and the mesh-level continuous collision query, under linear motion.
Pure numpy.

Two facts make the broad phase of `core.geometry.ccd` cheap (proofs in docs/ccd.md,
"Swept bounds"):

* A sphere moving linearly from (c0, r0) to (c1, r1) holds, at every t in [0, 1], every
  linearly moving point it holds at both ends: ``|p(t) - c(t)| <= (1 - t) |p0 - c0| +
  t |p1 - c1| <= (1 - t) r0 + t r1`` (`sphere_holds`, `sphere_at`).
* The box of a primitive's vertices at both ends holds the primitive at every t (each
  point of it is a convex combination of its moving vertices, each a convex combination of
  its two ends): `swept_boxes`.

`mesh_pairs` returns every pair (triangle of A, triangle of B) with a vertex-face (both
ways) or edge-edge contact at some t in [0, 1], with a lower bound of its first contact
time: swept boxes, a sort-and-sweep on x over the boxes' lower ends, then the 15
primitive queries of each candidate pair through `ccd.ccd` with ``first_contact``.
"""
from __future__ import annotations

import numpy as np

from . import ccd

__all__ = ["sphere_at", "sphere_holds", "swept_boxes", "candidate_pairs", "mesh_pairs"]

#: Candidate pairs expanded at a time (bounds the memory of the broad phase).
_PAIR_BLOCK: int = 1 << 18


def sphere_at(c0: np.ndarray, r0: np.ndarray, c1: np.ndarray, r1: np.ndarray,
              t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """The moving sphere at time t: centre (..., 3) ``(1 - t) c0 + t c1`` and radius (...)
    ``(1 - t) r0 + t r1``."""
    t = np.asarray(t, dtype=np.float64)
    return (1.0 - t)[..., None] * c0 + t[..., None] * c1, (1.0 - t) * r0 + t * r1


def sphere_holds(c0: np.ndarray, r0: np.ndarray, c1: np.ndarray, r1: np.ndarray,
                 p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """Whether the sphere moving from (c0, r0) to (c1, r1) holds the point moving from p0
    to p1 at every t in [0, 1]: it suffices to hold it at both ends (module docstring).
    Centres and points (..., 3), radii (...); returns (...) bool."""
    return ((np.linalg.norm(p0 - c0, axis=-1) <= r0) & (np.linalg.norm(p1 - c1, axis=-1) <= r1))


def swept_boxes(v0: np.ndarray, v1: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per triangle, the box of its 3 vertices at t = 0 and t = 1: it holds the triangle at
    every t. ``v0``, ``v1``: (V, 3) float64; ``tris``: (T, 3) int. Returns lo, hi (T, 3)."""
    corners = np.concatenate([v0[tris], v1[tris]], axis=1)                  # (T, 6, 3)
    return corners.min(axis=1), corners.max(axis=1)


def candidate_pairs(lo_a: np.ndarray, hi_a: np.ndarray, lo_b: np.ndarray,
                    hi_b: np.ndarray) -> np.ndarray:
    """Every (i, j) whose closed boxes overlap, (K, 2) int64, sorted. Sort and sweep on x:
    B sorted by its lower x; for box i of A, the B boxes with ``lo_b.x`` in
    ``[lo_a.x - w, hi_a.x]`` (``w`` the widest B box on x) hold all its x-overlaps; those
    ranges are expanded on arrays, in blocks, and filtered on all three axes."""
    if len(lo_a) == 0 or len(lo_b) == 0:
        return np.empty((0, 2), np.int64)
    order = np.argsort(lo_b[:, 0], kind="stable")
    sx = lo_b[order, 0]
    width = float((hi_b[:, 0] - lo_b[:, 0]).max())
    first = np.searchsorted(sx, lo_a[:, 0] - width, side="left")
    end = np.searchsorted(sx, hi_a[:, 0], side="right")
    count = np.maximum(end - first, 0)
    out = []
    # Blocks of A boxes whose ranges add up to about _PAIR_BLOCK candidates.
    cum = np.cumsum(count)
    starts = np.searchsorted(cum, np.arange(0, int(cum[-1]), _PAIR_BLOCK), side="right")
    bounds = np.unique(np.concatenate([[0], starts, [len(lo_a)]]))
    for s, e in zip(bounds[:-1], bounds[1:]):
        c = count[s:e]
        i = np.repeat(np.arange(s, e), c)
        offs = np.arange(len(i)) - np.repeat(np.cumsum(c) - c, c)
        j = order[np.repeat(first[s:e], c) + offs]
        ok = ((lo_a[i] <= hi_b[j]) & (lo_b[j] <= hi_a[i])).all(axis=1)
        out.append(np.stack([i[ok], j[ok]], axis=1))
    pairs = np.concatenate(out) if out else np.empty((0, 2), np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def mesh_pairs(va0: np.ndarray, va1: np.ndarray, tris_a: np.ndarray, vb0: np.ndarray,
               vb1: np.ndarray, tris_b: np.ndarray, *, tol: float = ccd.TOL,
               t_tol: float = ccd.T_TOL) -> tuple[np.ndarray, np.ndarray]:
    """Every (triangle of A, triangle of B) pair with a vertex-face or edge-edge contact at
    some t in [0, 1] (within ``tol``, docs/ccd.md), and a lower bound of its first contact.

    ``va0``, ``va1``: (Va, 3) float64 vertices of A at t = 0 and 1, ``tris_a`` (Ta, 3) int;
    the same for B. Returns pairs (K, 2) int64 sorted, and t (K,) float64. A pair that
    already interpenetrates at t = 0 (an edge through a face, no vertex-face or edge-edge
    contact during the motion) is a static intersection, for the triangle test at frames,
    and is not reported."""
    va0, va1, vb0, vb1 = (np.asarray(v, dtype=np.float64) for v in (va0, va1, vb0, vb1))
    tris_a = np.asarray(tris_a, dtype=np.int64).reshape(-1, 3)
    tris_b = np.asarray(tris_b, dtype=np.int64).reshape(-1, 3)
    cand = candidate_pairs(*swept_boxes(va0, va1, tris_a), *swept_boxes(vb0, vb1, tris_b))
    if len(cand) == 0:
        return cand, np.empty(0)
    ia, ib = cand[:, 0], cand[:, 1]
    # A vertex against a face, or an edge against an edge, is one query however many
    # candidate pairs share it (a vertex is in ~6 triangles, an edge in 2): each distinct
    # query runs once and its time is gathered back to the pairs.
    t = np.full(len(cand), np.inf)
    for verts, faces, vs, fs, vx0, vx1, fx0, fx1 in (
            (tris_a, tris_b, ia, ib, va0, va1, vb0, vb1),
            (tris_b, tris_a, ib, ia, vb0, vb1, va0, va1)):
        key = verts[vs].astype(np.int64) * len(faces) + fs[:, None]          # (K, 3)
        uniq, inv = np.unique(key.ravel(), return_inverse=True)
        v, f = uniq // len(faces), uniq % len(faces)
        q0 = np.concatenate([vx0[v][:, None], fx0[faces[f]]], axis=1)        # (U, 4, 3)
        q1 = np.concatenate([vx1[v][:, None], fx1[faces[f]]], axis=1)
        r = ccd.ccd(ccd.VERTEX_FACE, q0, q1, tol=tol, first_contact=True, t_tol=t_tol)
        t = np.minimum(t, r.t[inv].reshape(-1, 3).min(axis=1))
    ea, na = _edges(tris_a)
    eb, nb = _edges(tris_b)
    key = ea[ia][:, :, None] * len(nb) + eb[ib][:, None, :]                 # (K, 3, 3)
    uniq, inv = np.unique(key.ravel(), return_inverse=True)
    a, b = na[uniq // len(nb)], nb[uniq % len(nb)]
    q0 = np.concatenate([va0[a], vb0[b]], axis=1)                           # (U, 4, 3)
    q1 = np.concatenate([va1[a], vb1[b]], axis=1)
    r = ccd.ccd(ccd.EDGE_EDGE, q0, q1, tol=tol, first_contact=True, t_tol=t_tol)
    t = np.minimum(t, r.t[inv].reshape(-1, 9).min(axis=1))
    hit = np.isfinite(t)
    return cand[hit], t[hit]


def _edges(tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per triangle the ids of its 3 edges (T, 3), and the edges' vertex pairs (E, 2)."""
    e = np.stack([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]], axis=1)  # (T, 3, 2)
    e = np.sort(e, axis=2).reshape(-1, 2)
    uniq, inv = np.unique(e, axis=0, return_inverse=True)
    return inv.reshape(-1, 3), uniq
