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

from . import ccd, coplanar

__all__ = ["sphere_at", "sphere_holds", "swept_boxes", "candidate_pairs", "mesh_pairs",
           "pair_times"]

#: How close a scan's first-contact times come to the first contact (below it): 2**-10 of
#: a step.
STEP_T_TOL: float = 2.0 ** -10

#: Rounds of the kernel's first decision of a query and of its first-contact refinement
#: (`_first_times`): an undecided query of a pair that already has a hit costs no more.
HIT_ROUNDS: int = 48
REFINE_ROUNDS: int = 48

#: Rounds of the second decision of an undecided query asked by a pair without a hit: the
#: kernel's own budget, so that a pair is reported only on a decided hit or where the
#: kernel itself gives up (docs/ccd.md). 128 rounds saved 18 s on MakeHuman's finger
#: frame but reported pairs far beyond the tolerance (tests/blender/test_between_frames.py).
DECIDE_ROUNDS: int = ccd._MAX_ROUNDS

#: Candidate triangle pairs through the narrow phase at a time (`pair_times`).
_NARROW_BLOCK: int = 1 << 16

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
               vb1: np.ndarray, tris_b: np.ndarray, *, tol: float = ccd.TOL
               ) -> tuple[np.ndarray, np.ndarray]:
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
    t = pair_times(va0, va1, tris_a, vb0, vb1, tris_b, cand[:, 0], cand[:, 1], tol=tol)
    hit = np.isfinite(t)
    return cand[hit], t[hit]


def pair_times(va0: np.ndarray, va1: np.ndarray, tris_a: np.ndarray, vb0: np.ndarray,
               vb1: np.ndarray, tris_b: np.ndarray, ta: np.ndarray, tb: np.ndarray, *,
               tol: float = ccd.TOL, touching: np.ndarray | None = None) -> np.ndarray:
    """Per candidate triangle pair (ta[k] of A, tb[k] of B), a lower bound of its first
    vertex-face (both ways) or edge-edge contact during the step, ``inf`` where none
    (within ``tol``, docs/ccd.md). (K,) float64.

    Two sound filters go first, on arrays over the pairs' 15 primitive queries: a
    primitive whose box inequalities do not each hold at one end of the step cannot touch
    (`_near_at_an_end`; the argument of `core.aabb_tree.motion`), and four points never
    coplanar during the step cannot touch (`coplanar.never_coplanar`); the kernel
    (`ccd.ccd`) decides the rest (on MakeHuman's walk, 68 of a step's 220,000 queries),
    and gives the hits their first contacts (`_first_times`).

    `touching`: optional (K,) bool, pairs known to touch during the step (they intersect
    at its end): one whose every query is proven never coplanar (it touches at the end
    only by the static test's hair) gets t = 1. (Timing them by their cubics alone, with
    no kernel, gave 0 where parallel box edges stay coplanar.)"""
    tris_a = np.asarray(tris_a, dtype=np.int64).reshape(-1, 3)
    tris_b = np.asarray(tris_b, dtype=np.int64).reshape(-1, 3)
    ta = np.asarray(ta, np.int64)
    tb = np.asarray(tb, np.int64)
    known = np.zeros(ta.size, bool) if touching is None else np.asarray(touching, bool)
    if ta.size > _NARROW_BLOCK:
        # In blocks: a step between unrelated strong poses has millions of candidates,
        # whose 15 queries' arrays at once took gigabytes.
        return np.concatenate([
            pair_times(va0, va1, tris_a, vb0, vb1, tris_b, ta[s:s + _NARROW_BLOCK],
                       tb[s:s + _NARROW_BLOCK], tol=tol, touching=known[s:s + _NARROW_BLOCK])
            for s in range(0, ta.size, _NARROW_BLOCK)])
    t = np.full(ta.size, np.inf)
    if not ta.size:
        return t
    # Per pair, each side's corners and boxes at both ends, component-major: (.., K).
    A = _Side(va0, va1, tris_a, ta)
    B = _Side(vb0, vb1, tris_b, tb)
    # Pairs where one triangle stays on one side of the other's plane cannot touch (most
    # candidates: neighbours that move together on a curved skin).
    live = np.flatnonzero(~coplanar.one_side(A.X0, A.X1, B.X0, B.X1))
    A, B = A.subset(live, boxes=False), B.subset(live, boxes=False)
    still = np.flatnonzero(~coplanar.one_side(B.X0, B.X1, A.X0, A.X1))
    live = live[still]
    A, B = A.subset(still), B.subset(still)
    K = live.size
    # Vertex-face, both ways: corner c of one triangle against the other's box, (3, K);
    # both ways' queries in one call of the kernel.
    ks, rows = [], [[[] for _ in range(4)] for _ in (0, 1)]
    for P, F in ((A, B), (B, A)):
        c, k = np.nonzero(_all3(_at_an_end(P.xc0, P.xc1, P.xc0, P.xc1, F.lo0[None],
                                           F.hi0[None], F.lo1[None], F.hi1[None])))
        ks.append(k)
        for e in (0, 1):
            rows[e][0].append(P.corner(e, c * K + k))
            for f in range(3):
                rows[e][f + 1].append(F.corner(e, f * K + k))
    k = live[np.concatenate(ks)]
    if k.size:
        _first_times(t, k, ccd.VERTEX_FACE,
                     [[np.concatenate(r, axis=1) for r in end] for end in rows], tol)
    # Edge-edge: edge i of A against edge j of B, (3, 3, K).
    i, j, k = np.nonzero(_all3(_at_an_end(A.elo0[:, None], A.elo1[:, None], A.ehi0[:, None],
                                          A.ehi1[:, None], B.elo0[None], B.ehi0[None],
                                          B.elo1[None], B.ehi1[None])))
    if k.size:
        a = _edge_rows(A, i, k)
        b = _edge_rows(B, j, k)
        _first_times(t, live[k], ccd.EDGE_EDGE, [a[0] + b[0], a[1] + b[1]], tol)
    # A pair known to touch whose every query is proven never coplanar touches only by the
    # static test's hair at the end: its first contact is then at most 1.
    t[known & ~np.isfinite(t)] = 1.0
    return t


#: A triangle's three edges as corner pairs.
_EDGE = np.array([[0, 1], [1, 2], [2, 0]])


class _Side:
    """One side of the candidate pairs: its corners at both ends, ``X0``, ``X1`` (3 axes,
    3 corners, K); ``ids`` (K, 3) its vertex ids; once `subset`, also the corners as
    corner-major views ``xc0``, ``xc1`` (3 corners, 3 axes, K), its triangle's box ``lo0,
    hi0, lo1, hi1`` (3, K) and its edges' boxes ``elo0, ehi0, elo1, ehi1`` (3 edges, 3,
    K)."""

    def __init__(self, v0: np.ndarray, v1: np.ndarray, tris: np.ndarray, which: np.ndarray):
        self.ids = tris[which]
        flat = self.ids.T.ravel()                      # corner-major: corner c of pair k
        self.X0 = np.ascontiguousarray(np.take(v0, flat, axis=0).T).reshape(3, 3, -1)
        self.X1 = np.ascontiguousarray(np.take(v1, flat, axis=0).T).reshape(3, 3, -1)

    def subset(self, keep: np.ndarray, boxes: bool = True) -> "_Side":
        """The side of the pairs `keep` only (with its boxes)."""
        out = object.__new__(_Side)
        out.ids = self.ids[keep]
        out.X0 = np.ascontiguousarray(self.X0[:, :, keep])
        out.X1 = np.ascontiguousarray(self.X1[:, :, keep])
        if boxes:
            out._boxes()
        return out

    def _boxes(self) -> None:
        self.xc0 = self.X0.transpose(1, 0, 2)
        self.xc1 = self.X1.transpose(1, 0, 2)
        for end, x in (("0", self.xc0), ("1", self.xc1)):
            e_lo = np.minimum(x, x[[1, 2, 0]])           # edges 01, 12, 20
            e_hi = np.maximum(x, x[[1, 2, 0]])
            setattr(self, "elo" + end, e_lo)
            setattr(self, "ehi" + end, e_hi)
            setattr(self, "lo" + end, np.minimum(e_lo[0], x[2]))
            setattr(self, "hi" + end, np.maximum(e_hi[0], x[2]))

    def corner(self, end: int, at: np.ndarray) -> np.ndarray:
        """(3, m) the corners ``at`` (corner * K + pair) at t = `end`."""
        X = self.X0 if end == 0 else self.X1
        return np.take(X.reshape(3, -1), at, axis=1)


def _at_an_end(lo_a0, lo_a1, hi_a0, hi_a1, lo_b0, hi_b0, lo_b1, hi_b1) -> np.ndarray:
    """Per axis, whether two moving primitives' box inequalities each hold at t = 0 or at
    t = 1 (a box's low end over time is a min of linear functions, never below its
    chord; its high end never above: `core.aabb_tree.motion`): the first primitive's box
    at both ends ``lo_a0, lo_a1, hi_a0, hi_a1`` (a point's is itself), the second's;
    broadcast (..., 3 axes, K). Plain comparisons of the given numbers: exact."""
    return ((lo_a0 <= hi_b0) | (lo_a1 <= hi_b1)) & ((lo_b0 <= hi_a0) | (lo_b1 <= hi_a1))


def _all3(ok: np.ndarray) -> np.ndarray:
    """(..., 3, K) bool -> (..., K): all three axes (without a reduce over a short axis)."""
    return ok[..., 0, :] & ok[..., 1, :] & ok[..., 2, :]


def _edge_rows(side: _Side, e: np.ndarray, k: np.ndarray) -> tuple[list, list]:
    """The two ends of edges e[m] of pairs k[m], each (3, m), at t = 0 and at t = 1, each
    edge from its smaller vertex id to the larger (an edge of two triangles is then one
    query from both)."""
    c0, c1 = _EDGE[e, 0], _EDGE[e, 1]
    flip = side.ids[k, c0] > side.ids[k, c1]
    c0, c1 = np.where(flip, c1, c0), np.where(flip, c0, c1)
    K = side.ids.shape[0]
    return tuple([side.corner(end, c0 * K + k), side.corner(end, c1 * K + k)] for end in (0, 1))


def _first_times(t: np.ndarray, k: np.ndarray, kind: str, rows: list, tol: float) -> None:
    """Lower `t` at pairs `k` to a lower bound of the first contact of their queries that
    touch (`rows`: per end the 4 rows, each (3, m)).

    The cubic of each query's coplanarity (`coplanar.bernstein`) ends the queries that are
    never coplanar; its first possible root (`coplanar.first_coplanar`, to 1/1024 of the
    step) is a lower bound of the query's first contact, since a contact needs
    coplanarity. The kernel (`ccd.ccd`) decides the others, first within `HIT_ROUNDS`
    rounds; a query it leaves undecided there is decided with its whole budget only when
    some pair asking it has no hit yet (a pair needs one hit). The hits, and the undecided queries of pairs with
    a hit, get the kernel's first contact, its rounds capped (`REFINE_ROUNDS`: a capped
    query's time is the start of its earliest live box, still a lower bound), and never
    earlier than their cubic's bound."""
    B, E = coplanar.bernstein(rows[0], rows[1], kind == ccd.VERTEX_FACE)
    rest = np.flatnonzero(~(((B > E).all(axis=0)) | ((B < -E).all(axis=0))))
    if not rest.size:
        return
    tau = coplanar.first_coplanar(B[:, rest], E[:, rest])
    q0, q1 = (np.stack([r[:, rest] for r in end], axis=1).transpose(2, 1, 0)
              for end in rows)                                              # (r, 4, 3)
    # One query per distinct geometry: an edge or a vertex is in several triangles, so
    # several pairs ask the same query (bit for bit the same numbers).
    flat = np.ascontiguousarray(np.concatenate([q0.reshape(-1, 12), q1.reshape(-1, 12)],
                                               axis=1))
    _, first, inv = np.unique(flat.view(np.dtype((np.void, 192))).ravel(),
                              return_index=True, return_inverse=True)
    inv = inv.ravel()
    r = ccd.ccd(kind, q0[first], q1[first], tol=tol, max_rounds=HIT_ROUNDS)
    hit, open_ = r.hit & r.decided, ~r.decided
    pair = k[rest]
    has = np.zeros(t.size, bool)
    has[np.isfinite(t)] = True
    has[pair[hit[inv]]] = True
    # Undecided queries asked by some pair without a hit: decided in full.
    lacking = np.bincount(inv, weights=~has[pair], minlength=first.size) > 0
    full = np.flatnonzero(open_ & lacking)
    if full.size:
        again = ccd.ccd(kind, q0[first[full]], q1[first[full]], tol=tol,
                        max_rounds=DECIDE_ROUNDS)
        hit[full] = again.hit
        open_[full] = False
    # The hits, and the undecided queries of pairs with a hit, get their first contact.
    hits = np.flatnonzero(hit | open_)
    if not hits.size:
        return
    u = first[hits]
    fc = ccd.ccd(kind, q0[u], q1[u], tol=tol, first_contact=True, t_tol=STEP_T_TOL,
                 max_rounds=REFINE_ROUNDS)
    when = np.full(first.size, np.inf)
    when[hits] = fc.t
    at = np.maximum(when[inv], tau)
    # First the decided hits; then an undecided query counts only where it would make its
    # pair earlier and the kernel's whole budget does not prove it apart (parallel edges
    # of two boxes stay coplanar and undecided in 48 rounds: their bound, 0, would hide
    # the real first contact).
    sure = hit[inv] & np.isfinite(at)
    np.minimum.at(t, pair[sure], at[sure])
    maybe = open_[inv] & (at < t[pair])
    if maybe.any():
        ask = np.unique(inv[maybe])
        again = ccd.ccd(kind, q0[first[ask]], q1[first[ask]], tol=tol,
                        max_rounds=DECIDE_ROUNDS)
        apart = np.zeros(first.size, bool)
        apart[ask[~again.hit]] = True
        ok = maybe & ~apart[inv]
        np.minimum.at(t, pair[ok], at[ok])
