"""Continuous collision detection under linear motion, vectorized, float64. Pure numpy.

Every vertex moves on the straight line from its position at t = 0 to its position at
t = 1. Two kinds of queries, each a (N, 4, 3) array per end of the motion:

* vertex–face, rows ``v, f0, f1, f2``: does the point ``v(t)`` lie in the closed triangle
  ``f0(t) f1(t) f2(t)`` for some t in [0, 1]?
* edge–edge, rows ``ea0, ea1, eb0, eb1``: do the closed segments ``ea0(t) ea1(t)`` and
  ``eb0(t) eb1(t)`` share a point for some t in [0, 1]?

Both are a root of a multilinear map F over a box of (t, u, w) (docs/ccd.md):
``F = v - f0 - u (f1 - f0) - w (f2 - f0)`` with u, w >= 0, u + w <= 1, or
``F = ea0 + u (ea1 - ea0) - eb0 - w (eb1 - eb0)`` with u, w in [0, 1]. A multilinear map
takes on a box only convex combinations of its 8 corner values, so the bounding box of
the corner values contains its image (the inclusion function of Tight Inclusion, Wang et
al. 2021). A box is rejected when, on some axis, all 8 computed corner values exceed the
proven float64 error bound of their evaluation (`_ERR_REL`) on the same side of 0; it is
accepted (contact within the tolerance) when the corner values span at most
``eps = tol * M`` on every axis, M the query's extent, or when a few Newton steps from its
centre reach a point where every component of F is within ``eps`` (a witness); otherwise
it is halved along the parameter that spreads the values most. The boxes of all queries are bisected together,
a bounded number of rounds on arrays; a query still open after the last round, or with
more live boxes than the budget, answers True (``decided`` False).

Guarantees (proofs in docs/ccd.md):

* **No false negative**: primitives that touch at some t in [0, 1] always give True.
* **Bounded false positives**: a *decided* True means that at the returned time t the two
  primitives are within distance ``eta = 2 * tol * M`` (``M``: the largest absolute
  coordinate of the query's 8 positions after translating its first vertex at t = 0 to
  the origin, `extent`); with ``first_contact``, at some time in ``[t, t + t_tol]``.
* `vertex_face_toi` / `edge_edge_toi`: t is a lower bound of the first time of contact
  (never later than the true first contact).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["TOL", "T_TOL", "CCDResult", "ccd", "extent", "vertex_face_hits", "edge_edge_hits",
           "vertex_face_toi", "edge_edge_toi"]

#: Default relative tolerance: a decided hit comes within ``2 * TOL * M`` (`extent`).
TOL: float = 1e-6

#: Default width of the time interval a first-contact box must shrink to (`*_toi`).
T_TOL: float = 1e-6

#: Bound on the float64 error of one computed corner value, per axis, relative to that
#: axis's extent ``M_axis`` (docs/ccd.md, "Floating-point error"): the analysis gives
#: 38 u + O(u^2), u = 2^-53; 128 u leaves a factor 3 of slack.
_ERR_REL: float = 128.0 * 2.0 ** -53

#: Absolute part of the error bound: each of the ~10 roundings of a corner value may lose
#: up to half the smallest subnormal when values are that small (no relative bound there).
_ERR_ABS: float = 64.0 * 2.0 ** -1074

#: The smallest parameter width a box is split down to. Box ends are then dyadic numbers
#: with at most 40 fraction bits, so midpoints and ``1 - t`` are exact in float64; at this
#: width a box's corner values span less than ~1e-10 M, below any allowed ``eps``.
_MIN_WIDTH: float = 2.0 ** -40

#: Queries bisected together (bounds the memory of the live boxes:
#: at most _CHUNK * _MAX_BOXES boxes of 7 numbers).
_CHUNK: int = 2048

#: Boxes each query may split per round (those earliest in time first), and keep alive.
_PER_ROUND: int = 32
_MAX_BOXES: int = 512

#: Newton steps of a box's witness search (`_witness`).
_NEWTON: int = 3

#: Bisection rounds before the still-open queries answer True (undecided).
_MAX_ROUNDS: int = 400

VERTEX_FACE, EDGE_EDGE = "vertex-face", "edge-edge"


class CCDResult(NamedTuple):
    """Per query: ``hit`` (N,) bool; ``t`` (N,) float64; ``decided`` (N,) bool.

    ``t`` is ``inf`` where ``hit`` is False. With ``first_contact`` it is a lower bound of
    the first time of contact (and, when ``decided``, within ``t_tol`` before a time at
    which the primitives are within the tolerance); without, a time at which they are
    within the tolerance (``decided`` hits). ``decided`` is False where the answer True
    comes from the round or box budget (or non-finite input), not from a near time found."""
    hit: np.ndarray
    t: np.ndarray
    decided: np.ndarray


def extent(x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """The scale M of each query: the largest absolute coordinate of its 8 positions after
    translating its first row at t = 0 to the origin. (N,) float64."""
    x0, x1 = _as_queries(x0, x1)
    c = x0[:, :1, :]
    return np.maximum(np.abs(x0 - c).max(axis=(1, 2)), np.abs(x1 - c).max(axis=(1, 2)))


def vertex_face_hits(x0: np.ndarray, x1: np.ndarray, tol: float = TOL) -> np.ndarray:
    """Whether point ``v`` touches triangle ``f0 f1 f2`` at some t in [0, 1].

    ``x0``, ``x1``: (N, 4, 3) float64, rows ``v, f0, f1, f2`` at t = 0 and t = 1.
    Returns (N,) bool, never False where they touch (docs/ccd.md)."""
    return ccd(VERTEX_FACE, x0, x1, tol=tol).hit


def edge_edge_hits(x0: np.ndarray, x1: np.ndarray, tol: float = TOL) -> np.ndarray:
    """Whether segments ``ea0 ea1`` and ``eb0 eb1`` touch at some t in [0, 1].

    ``x0``, ``x1``: (N, 4, 3) float64, rows ``ea0, ea1, eb0, eb1``. Returns (N,) bool."""
    return ccd(EDGE_EDGE, x0, x1, tol=tol).hit


def vertex_face_toi(x0: np.ndarray, x1: np.ndarray, tol: float = TOL,
                    t_tol: float = T_TOL) -> tuple[np.ndarray, np.ndarray]:
    """`vertex_face_hits` and a lower bound of the first time of contact: ((N,) bool,
    (N,) float64, ``inf`` where no hit)."""
    r = ccd(VERTEX_FACE, x0, x1, tol=tol, first_contact=True, t_tol=t_tol)
    return r.hit, r.t


def edge_edge_toi(x0: np.ndarray, x1: np.ndarray, tol: float = TOL,
                  t_tol: float = T_TOL) -> tuple[np.ndarray, np.ndarray]:
    """`edge_edge_hits` and a lower bound of the first time of contact."""
    r = ccd(EDGE_EDGE, x0, x1, tol=tol, first_contact=True, t_tol=t_tol)
    return r.hit, r.t


def _as_queries(x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both ends as (N, 4, 3) float64 arrays, or ValueError."""
    x0 = np.asarray(x0, dtype=np.float64)
    x1 = np.asarray(x1, dtype=np.float64)
    if x0.ndim != 3 or x0.shape[1:] != (4, 3) or x1.shape != x0.shape:
        raise ValueError(f"expected two (N, 4, 3) arrays, got {x0.shape} and {x1.shape}")
    return x0, x1


def ccd(kind: str, x0: np.ndarray, x1: np.ndarray, *, tol: float = TOL,
        first_contact: bool = False, t_tol: float = T_TOL,
        max_rounds: int = _MAX_ROUNDS, max_boxes: int = _MAX_BOXES,
        per_round: int = _PER_ROUND) -> CCDResult:
    """The kernel behind the four functions above, with its budget and certainty.

    ``kind``: `VERTEX_FACE` or `EDGE_EDGE`; ``x0``, ``x1``: (N, 4, 3) float64;
    ``tol``: relative tolerance (1e-9 <= tol <= 0.1: below, boxes of `_MIN_WIDTH` could stay
    open); ``first_contact``: refine the earliest boxes until the time interval is at most
    ``t_tol`` wide and return a lower bound of the first contact time."""
    if kind not in (VERTEX_FACE, EDGE_EDGE):
        raise ValueError(f"unknown query kind {kind!r}")
    if not (1e-9 <= tol <= 0.1):
        raise ValueError(f"tol must be in [1e-9, 0.1], got {tol}")
    if not (_MIN_WIDTH <= t_tol <= 1.0):
        # A first-contact box is never split below _MIN_WIDTH in time.
        raise ValueError(f"t_tol must be in [2^-40, 1], got {t_tol}")
    x0, x1 = _as_queries(x0, x1)
    n = len(x0)
    hit = np.zeros(n, bool)
    t = np.full(n, np.inf)
    decided = np.ones(n, bool)
    # Translate to each query's first vertex at t = 0: nothing depends on the distance
    # from the origin, and the rounding of the differences is relative to the query's own
    # extent (it is part of the error bound).
    c = x0[:, :1, :]
    with np.errstate(invalid="ignore", over="ignore"):
        d0 = x0 - c
        d1 = x1 - c
    finite = np.isfinite(d0).all(axis=(1, 2)) & np.isfinite(d1).all(axis=(1, 2))
    # Non-finite input certifies nothing: True, at t = 0.
    hit[~finite] = True
    t[~finite] = 0.0
    decided[~finite] = False
    idx = np.flatnonzero(finite)
    h, tt, dd = _solve(kind == VERTEX_FACE, d0[idx], d1[idx], tol, first_contact, t_tol,
                       max_rounds, max_boxes, per_round)
    hit[idx], t[idx], decided[idx] = h, tt, dd
    return CCDResult(hit, t, decided)


def _corner_values(vf: bool, d0: np.ndarray, d1: np.ndarray, lo: np.ndarray,
                   hi: np.ndarray) -> np.ndarray:
    """F at the 8 corners of each box: (K, 2, 2, 2, 3) indexed [t, u, w, axis].

    ``d0``, ``d1``: (K, 4, 3) translated positions of each box's query; ``lo``, ``hi``:
    (K, 3) box ends in (t, u, w). The order of the operations is the one the error bound
    of docs/ccd.md counts: positions ``(1 - t) d0 + t d1`` (exact at t = 0 and t = 1),
    differences, then ``(a -/+ u e1) - w e2``."""
    tt = np.stack([lo[:, 0], hi[:, 0]], axis=1)[:, :, None, None]          # (K, 2, 1, 1)
    p = (1.0 - tt) * d0[:, None] + tt * d1[:, None]                         # (K, 2, 4, 3)
    if vf:
        a = p[:, :, 0] - p[:, :, 1]
        e1 = p[:, :, 2] - p[:, :, 1]
        e2 = p[:, :, 3] - p[:, :, 1]
    else:
        a = p[:, :, 0] - p[:, :, 2]
        e1 = p[:, :, 1] - p[:, :, 0]
        e2 = p[:, :, 3] - p[:, :, 2]
    uu = np.stack([lo[:, 1], hi[:, 1]], axis=1)[:, None, :, None]          # (K, 1, 2, 1)
    ww = np.stack([lo[:, 2], hi[:, 2]], axis=1)[:, None, None, :, None]    # (K, 1, 1, 2, 1)
    ue1 = uu * e1[:, :, None, :]                                            # (K, 2, 2, 3)
    s1 = a[:, :, None, :] - ue1 if vf else a[:, :, None, :] + ue1
    return s1[:, :, :, None, :] - ww * e2[:, :, None, None, :]              # (K, 2, 2, 2, 3)


def _solve(vf: bool, d0: np.ndarray, d1: np.ndarray, tol: float, first: bool,
           t_tol: float, max_rounds: int, max_boxes: int,
           per_round: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bisect the (t, u, w) boxes of n queries (translated, finite) together.

    Queries enter the pool of live boxes as others leave it (at most `_CHUNK` queries at a
    time), so every round's numpy calls work on full arrays; a query leaves when it is
    answered, after ``max_rounds`` rounds of its own, or with more than ``max_boxes``
    live boxes. Returns (n,) hit, t, decided."""
    n = len(d0)
    m_axis = np.maximum(np.abs(d0).max(axis=1), np.abs(d1).max(axis=1))   # (n, 3)
    err = _ERR_REL * m_axis + _ERR_ABS                                      # (n, 3)
    eps = tol * m_axis.max(axis=1)                                          # (n,)
    hit = np.zeros(n, bool)
    decided = np.ones(n, bool)
    best = np.full(n, np.inf)          # earliest time found within eta (a "near time")
    floor = np.full(n, np.inf)         # earliest start of a box settled just before it
    gave_up_t = np.full(n, np.inf)
    start = np.zeros(n, np.int64)      # the round a query entered the pool
    # Live boxes: owner query, lower and upper ends in (t, u, w).
    q = np.empty(0, np.int64)
    lo = np.empty((0, 3))
    hi = np.empty((0, 3))
    nxt = 0
    rnd = 0
    while nxt < n or len(q):
        # Admit new queries (one box each: the whole domain) up to _CHUNK in the pool.
        active = len(np.unique(q)) if len(q) else 0
        if nxt < n and active < _CHUNK:
            new = np.arange(nxt, min(n, nxt + _CHUNK - active))
            nxt = new[-1] + 1
            start[new] = rnd
            q = np.concatenate([q, new])
            lo = np.concatenate([lo, np.zeros((len(new), 3))])
            hi = np.concatenate([hi, np.ones((len(new), 3))])
        rnd += 1
        # Each query splits at most per_round boxes a round, its earliest in time: a
        # sliding contact then reaches an accepted box at depth, as a depth-first search.
        uq, inv, counts = np.unique(q, return_inverse=True, return_counts=True)
        if counts.max() > per_round:
            order = np.lexsort((lo[:, 0], inv))
            first_of = np.concatenate([[0], np.cumsum(counts)[:-1]])
            rank = np.empty(len(q), np.int64)
            rank[order] = np.arange(len(q)) - first_of[inv[order]]
            work = rank < per_round
            wq, wlo, whi = q[work], lo[work], hi[work]
            kq, klo, khi = q[~work], lo[~work], hi[~work]
        else:
            wq, wlo, whi = q, lo, hi
            kq = np.empty(0, np.int64)
            klo = khi = np.empty((0, 3))
        f = _corner_values(vf, d0[wq], d1[wq], wlo, whi)
        flat = f.reshape(len(wq), 8, 3)
        fmin = flat.min(axis=1)
        fmax = flat.max(axis=1)
        e = err[wq]
        # Rejected: on some axis every corner value is certainly of one sign; or (vertex-
        # face) the box lies beyond u + w = 1 (sums of dyadic ends: exact).
        out = ((fmin > e) | (fmax < -e)).any(axis=1)
        if vf:
            out |= wlo[:, 1] + wlo[:, 2] > 1.0
        small = ((fmax - fmin) <= eps[wq, None]).all(axis=1)
        # A witness: Newton steps from the box's centre, evaluated; it ends a query
        # whose contact is a transversal root long before the boxes get small.
        open_ = np.flatnonzero(~out & ~small)
        wt = np.full(len(wq), np.inf)
        if len(open_):
            wt[open_] = _witness(vf, d0[wq[open_]], d1[wq[open_]], wlo[open_], whi[open_],
                                 eps[wq[open_]], in_box=first)
        near = small | np.isfinite(wt)
        if first:
            # First contact: a small box's start corner and a witness are times at which
            # the primitives are within eta ("near times"); the query's best is the
            # earliest. A box starting at or after it cannot hold an earlier contact; a
            # box starting less than t_tol before it is settled at its start (within
            # t_tol before a near time, and no contact in it can be earlier).
            tnear = np.where(small, wlo[:, 0], wt)
            tnear[out] = np.inf
            hit[wq[np.isfinite(tnear)]] = True
            np.minimum.at(best, wq, tnear)
            keep = ~out & (wlo[:, 0] < best[wq])
            settle = keep & (wlo[:, 0] >= best[wq] - t_tol)
            np.minimum.at(floor, wq[settle], wlo[settle, 0])
            keep &= ~settle
            kkeep = klo[:, 0] < best[kq]
            ksettle = kkeep & (klo[:, 0] >= best[kq] - t_tol)
            np.minimum.at(floor, kq[ksettle], klo[ksettle, 0])
            kkeep &= ~ksettle
        else:
            accept = ~out & near
            if accept.any():
                aq = wq[accept]
                hit[aq] = True
                np.minimum.at(best, aq, np.where(small, wlo[:, 0], wt)[accept])
            # Boxes of answered queries no longer matter.
            keep = ~out & ~accept & ~hit[wq]
            kkeep = ~hit[kq]
        sq, slo, shi, sf = wq[keep], wlo[keep], whi[keep], f[keep]
        kq, klo, khi = kq[kkeep], klo[kkeep], khi[kkeep]
        # Split along the parameter whose two faces' values differ most (the spread a
        # split can reduce), among those not yet at _MIN_WIDTH.
        spread = np.stack([np.abs(sf[:, 1] - sf[:, 0]).max(axis=(1, 2, 3)),
                           np.abs(sf[:, :, 1] - sf[:, :, 0]).max(axis=(1, 2, 3)),
                           np.abs(sf[:, :, :, 1] - sf[:, :, :, 0]).max(axis=(1, 2, 3))],
                          axis=1)
        can = (shi - slo) > _MIN_WIDTH
        spread = np.where(can, spread, -1.0)
        dim = spread.argmax(axis=1)
        stuck = ~can.any(axis=1)
        # Halves, on the 2^-40 grid (ends stay multiples of 2^-40, see _MIN_WIDTH); a
        # first-contact box holding a near time is cut in time just before it instead, so
        # that its later part is settled in the next round.
        mid = np.floor(0.5 * (slo[np.arange(len(sq)), dim] + shi[np.arange(len(sq)), dim])
                       * _GRID) / _GRID
        if first:
            sw = np.minimum(wt[keep], np.where(small[keep], slo[:, 0], np.inf))
            cut = np.floor((sw - 0.5 * t_tol) * _GRID) / _GRID
            use = np.isfinite(sw) & (cut > slo[:, 0]) & (cut < shi[:, 0])
            dim[use] = 0
            mid[use] = cut[use]
            stuck &= ~use
        rows = np.flatnonzero(~stuck)
        cols = dim[rows]
        mid = mid[rows]
        hi_a = shi[rows]
        lo_b = slo[rows]
        hi_a[np.arange(len(rows)), cols] = mid
        lo_b[np.arange(len(rows)), cols] = mid
        q = np.concatenate([kq, sq[rows], sq[rows], sq[stuck]])
        lo = np.concatenate([klo, slo[rows], lo_b, slo[stuck]])
        hi = np.concatenate([khi, hi_a, shi[rows], shi[stuck]])
        # Queries with a box that cannot be split, more live boxes than the budget, or
        # max_rounds rounds of their own answer True: conservative, bounded work and memory.
        if len(q) == 0:
            continue
        uq, inv, counts = np.unique(q, return_inverse=True, return_counts=True)
        give_u = (counts > max_boxes) | (rnd - start[uq] >= max_rounds)
        give_u |= np.isin(uq, sq[stuck])
        if give_u.any():
            mine = give_u[inv]
            gq = q[mine]
            hit[gq] = True
            decided[gq] = False
            np.minimum.at(gave_up_t, gq, lo[mine, 0])
            q, lo, hi = q[~mine], lo[~mine], hi[~mine]
    t = np.minimum(np.minimum(best, floor), gave_up_t)
    return hit, np.where(hit, t, np.inf), decided


#: The grid witness points are rounded to (exact ``1 - t`` and ``u + w``).
_GRID: float = 2.0 ** 40


def _witness(vf: bool, d0: np.ndarray, d1: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             eps: np.ndarray, in_box: bool) -> np.ndarray:
    """For K open boxes, the time of a domain point where every computed component of F
    is within ``eps`` (so |F| <= sqrt(3) (eps + err), docs/ccd.md), or inf.

    The point: `_NEWTON` Newton steps on F from the box's centre (F is affine in each
    parameter, so its Jacobian is read off the positions and velocities), each clamped to
    the domain (``in_box``: to the box, whose time interval then holds the witness's
    time), rounded down to multiples of 2^-40 (box ends are multiples), then evaluated
    as the corners are, so that the corners' error bound holds."""
    sgn = -1.0 if vf else 1.0
    vel = d1 - d0                                                           # (K, 4, 3)
    p = 0.5 * (lo + hi)
    lo_c, hi_c = (lo, hi) if in_box else (0.0, 1.0)
    with np.errstate(all="ignore"):
        for _ in range(_NEWTON):
            t, u, w = p[:, 0:1], p[:, 1:2], p[:, 2:3]
            x = (1.0 - t)[:, :, None] * d0 + t[:, :, None] * d1             # (K, 4, 3)
            a, e1, e2, da, de1, de2 = _terms(vf, x, vel)
            f = a + sgn * u * e1 - w * e2
            c0 = da + sgn * u * de1 - w * de2                               # dF/dt
            c1, c2 = sgn * e1, -e2                                          # dF/du, dF/dw
            # Cramer's rule: a singular Jacobian gives a non-finite step (kept in place).
            det = np.einsum("ki,ki->k", c0, np.cross(c1, c2))
            step = np.stack([np.einsum("ki,ki->k", f, np.cross(c1, c2)),
                             np.einsum("ki,ki->k", c0, np.cross(f, c2)),
                             np.einsum("ki,ki->k", c0, np.cross(c1, f))], axis=1) / det[:, None]
            step = np.where(np.isfinite(step), step, 0.0)
            p = np.clip(p - step, lo_c, hi_c)
    p = np.floor(p * _GRID) / _GRID
    if vf:
        p[:, 2] = np.minimum(p[:, 2], 1.0 - p[:, 1])      # exact on the grid: u + w <= 1
    val = _corner_values(vf, d0, d1, p, p)[:, 0, 0, 0]                       # (K, 3)
    ok = (np.abs(val) <= eps[:, None]).all(axis=1)
    return np.where(ok, p[:, 0], np.inf)


def _terms(vf: bool, x: np.ndarray, vel: np.ndarray) -> list[np.ndarray]:
    """F's terms a, e1, e2 (F = a -/+ u e1 - w e2) from the 4 positions ``x`` (K, 4, 3),
    and their time derivatives from the velocities ``vel``."""
    out = []
    for y in (x, vel):
        if vf:
            out += [y[:, 0] - y[:, 1], y[:, 2] - y[:, 1], y[:, 3] - y[:, 1]]
        else:
            out += [y[:, 0] - y[:, 2], y[:, 1] - y[:, 0], y[:, 3] - y[:, 2]]
    return out
