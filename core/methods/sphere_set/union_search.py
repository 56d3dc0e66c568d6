"""Local search on the union's outside volume (issue 10), after the variational fit.

The variational fit (Wang et al. 2006) minimizes Σ SOV, the outside volume of each ball on
its own: volume outside the mesh where balls overlap counts twice, and each ball must hold
its cluster of interior points, which the surface cover does not need. E_r is measured on
the union, with the whole surface covered. This stage optimizes that directly on samples:

- S (nS, 3): dense surface points (area-weighted samples, vertices, edge midpoints,
  centroids). They must stay covered.
- O (nO, 3): a jittered grid of points outside the mesh near the balls, each standing for
  the same volume. The union's outside volume is about (number of O points in the union)
  times that volume.

Moves (each keeps every S point covered):
- *refit* ball i: its required points are the S points no other ball holds; a compass
  search over its centre, radius the farthest required point, minimizes the O points only
  this ball would hold (its exclusive outside volume). A ball with no required point is
  free (radius 0) and becomes the source of the next relocation.
- *relocate* (the union version of the paper's teleport): a ball with few required points
  hands them to the neighbours that need the least growth, then it and the ball with the
  largest exclusive outside volume split the latter's required points (2-means) and are
  refitted; the neighbourhood is refitted; kept only when the union's O count falls.
- *pair* balls i and j: re-divide the points only they hold by a plane across their
  axis and refit both (single-ball refits cannot move the border between two balls).
- *densify*: surface points outside the union (the deepest gaps between S points, found by
  `variational.uncovered_points`) join S (each to the ball reaching it with the least
  growth, which is refitted), so the final proven cover (`variational.cover_surface`)
  has little left to grow.

Loops run over balls and moves (N and attempts, build time only); each step is vectorized
over points. Derivation and measurements: docs/sphere_sets.md, "Union search".
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .outside_volume import PreparedMesh, classify_inside, random_surface_points

# 26 unit directions of the 3x3x3 neighbourhood: the compass search's moves.
_G = np.stack(np.meshgrid(*[np.array([-1.0, 0.0, 1.0])] * 3, indexing="ij"), -1).reshape(-1, 3)
_DIRS = _G[np.abs(_G).sum(1) > 0]
_DIRS = _DIRS / np.linalg.norm(_DIRS, axis=1, keepdims=True)
# Relative margin on radii computed from the farthest point, so the comparison d² <= r²
# that decides coverage holds after rounding (see _d2).
_MARGIN = 1e-9
# Points of R whose distances bound the candidates' radii from below (`best_ball`).
_PROBE = 32


def _d2(p: np.ndarray, c: np.ndarray, pn: np.ndarray | None = None,
        cn: np.ndarray | None = None) -> np.ndarray:
    """(n, m) squared distances between points p (n, 3) and c (m, 3), by |p|² + |c|² - 2 p·c
    (one matrix product; pn (n,) = |p|², cn (m,) = |c|² when known). The search runs on
    coordinates centred on the mesh (`search` translates), where the cancellation of this
    form stays near 1e-15 of the squared size: far below _MARGIN, and the cover pass proves
    coverage afterwards in the exact form anyway. Reductions over many points are faster
    along rows (numpy reduces a contiguous axis 3-4x faster), so the compass search puts
    its 26 candidates first: _d2(candidates, points, cn=|points|²)."""
    if pn is None:
        pn = np.einsum("ij,ij->i", p, p)
    if cn is None:
        cn = np.einsum("ij,ij->i", c, c)
    return np.maximum(pn[:, None] + cn[None] - 2.0 * (p @ c.T), 0.0)


def _slab(keys: np.ndarray, x: float | np.ndarray, r: float | np.ndarray) -> tuple:
    """Rows [lo, hi) of the sorted keys within r of x (scalars: ints; arrays: one pair of
    arrays), widened by a relative 1e-7 so every point that _d2 puts inside the ball
    (rounding near 1e-15) is in the slab."""
    w = r * (1.0 + 1e-7) + 1e-300
    lo, hi = np.searchsorted(keys, x - w, "left"), np.searchsorted(keys, x + w, "right")
    return (int(lo), int(hi)) if np.ndim(lo) == 0 else (lo, hi)


def surface_points(vertices: np.ndarray, triangles: np.ndarray, n: int,
                   rng: np.random.Generator) -> np.ndarray:
    """(n + V' + 4T, 3) float64: n area-weighted random points (uniform barycentrics by the
    square-root warp), the used vertices, and each triangle's edge midpoints and centroid."""
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return np.vstack([vertices[np.unique(triangles)], 0.5 * (a + b), 0.5 * (b + c), 0.5 * (c + a),
                      (a + b + c) / 3.0, random_surface_points(a, b, c, n, rng)])


def outside_points(centres: np.ndarray, radii: np.ndarray, mesh: PreparedMesh, n: int,
                   rng: np.random.Generator, reach: float = 1.6) -> tuple[np.ndarray, float]:
    """Jittered grid of about n cells over the box of the balls grown `reach` times, kept
    where the point is outside the mesh and within `reach` radii of some ball (balls move
    and grow only locally). Returns (points (m, 3), volume per point)."""
    lo = (centres - reach * radii[:, None]).min(0)
    hi = (centres + reach * radii[:, None]).max(0)
    ext = np.maximum(hi - lo, 1e-12)
    cell = (float(np.prod(ext)) / max(n, 1)) ** (1.0 / 3.0)
    dims = np.maximum(np.ceil(ext / cell).astype(np.int64), 1)
    ijk = np.stack(np.unravel_index(np.arange(int(np.prod(dims))), dims), 1)
    p = lo + (ijk + rng.random(ijk.shape)) * (ext / dims)
    keep = np.zeros(len(p), dtype=bool)
    step = max(1, (1 << 22) // max(1, len(centres)))
    for s in range(0, len(p), step):  # loop over memory chunks
        keep[s:s + step] = (_d2(p[s:s + step], centres) <= (reach * radii[None]) ** 2).any(1)
    p = p[keep]
    p = p[~classify_inside(p, mesh, 4.0 * cell)]
    return p, float(np.prod(ext / dims))


class UnionState:
    """Coverage of S and O by N balls, updated one ball at a time.

    Attributes: c (N, 3), r (N,), inS (nS, N) bool, inO (nO, N) bool, covS (nS,), covO (nO,)
    int32 counts of balls holding each point.

    S and O are kept sorted along the longest axis of S's box, so the points a ball can
    hold form one contiguous slab (`_slab`): a move touches only the rows of the old and
    new slabs, not every point (on a limb a ball's slab is a few per cent of the body)."""

    def __init__(self, centres: np.ndarray, radii: np.ndarray, S: np.ndarray, O: np.ndarray):
        self.c = np.array(centres, dtype=np.float64)
        self.r = np.array(radii, dtype=np.float64)
        ext = np.ptp(S, axis=0) if len(S) else np.ones(3)
        self.axis = int(np.argmax(ext))
        O = O[np.argsort(O[:, self.axis], kind="stable")]
        self.O, self.On, self.Ok = O, np.einsum("ij,ij->i", O, O), O[:, self.axis].copy()
        self._sort_surface(S)
        self.inS = _d2(self.S, self.c, self.Sn) <= self.r[None] ** 2
        self.inO = _d2(self.O, self.c, self.On) <= self.r[None] ** 2
        self.covS = self.inS.sum(1, dtype=np.int32)
        self.covO = self.inO.sum(1, dtype=np.int32)
        self._spans()

    def _sort_surface(self, S: np.ndarray) -> np.ndarray:
        order = np.argsort(S[:, self.axis], kind="stable")
        self.S = S[order]
        self.Sn, self.Sk = np.einsum("ij,ij->i", self.S, self.S), self.S[:, self.axis].copy()
        return order

    def _spans(self) -> None:
        """(N, 2) slabs of every ball in S and O (after sorting or restoring)."""
        x = self.c[:, self.axis]
        self.spanS = np.stack(_slab(self.Sk, x, self.r), 1)
        self.spanO = np.stack(_slab(self.Ok, x, self.r), 1)

    def cost(self) -> int:
        """O points in the union (the union's outside volume in units of one point)."""
        return int(np.count_nonzero(self.covO))

    def snapshot(self) -> tuple:
        return tuple(x.copy() for x in (self.c, self.r, self.inS, self.inO, self.covS, self.covO))

    def restore(self, snap: tuple) -> None:
        self.c, self.r, self.inS, self.inO, self.covS, self.covO = (x.copy() for x in snap)
        self._spans()

    def add_surface(self, P: np.ndarray) -> None:
        """New S points P (k, 3) (their coverage computed; S is sorted again, so they do not
        end up as its last rows)."""
        ins = _d2(P, self.c) <= self.r[None] ** 2
        order = self._sort_surface(np.vstack([self.S, P]))
        self.inS = np.vstack([self.inS, ins])[order]
        self.covS = np.concatenate([self.covS, ins.sum(1, dtype=np.int32)])[order]
        self._spans()

    @staticmethod
    def _move(inX: np.ndarray, cov: np.ndarray, X: np.ndarray, Xn: np.ndarray,
              old: np.ndarray, new: tuple[int, int], i: int, c: np.ndarray, r: float) -> None:
        """Column i of inX and the counts cov over the old and new slabs of ball i."""
        lo, hi = min(old[0], new[0]), max(old[1], new[1])
        col = np.zeros(hi - lo, dtype=bool)
        col[new[0] - lo:new[1] - lo] = _d2(X[new[0]:new[1]], c[None], Xn[new[0]:new[1]])[:, 0] <= r * r
        cov[lo:hi] += col.astype(np.int32) - inX[lo:hi, i]
        inX[lo:hi, i] = col

    def set(self, i: int, c: np.ndarray, r: float) -> None:
        x = float(c[self.axis])
        sS, sO = _slab(self.Sk, x, r), _slab(self.Ok, x, r)
        self._move(self.inS, self.covS, self.S, self.Sn, self.spanS[i], sS, i, c, r)
        self._move(self.inO, self.covO, self.O, self.On, self.spanO[i], sO, i, c, r)
        self.spanS[i], self.spanO[i] = sS, sO
        self.c[i] = c
        self.r[i] = r

    def required(self, i: int) -> np.ndarray:
        """(k, 3) the S points only ball i holds."""
        lo, hi = self.spanS[i]
        return self.S[lo:hi][self.inS[lo:hi, i] & (self.covS[lo:hi] == 1)]

    def exclusive_outside(self) -> np.ndarray:
        """(N,) O points held by exactly one ball, per ball."""
        return (self.inO & (self.covO == 1)[:, None]).sum(0)

    def best_ball(self, i: int, req: np.ndarray, x: np.ndarray | None = None,
                  h: float | None = None) -> tuple[np.ndarray, float]:
        """Centre and radius of ball i holding req (k, 3) with the fewest O points no other
        ball holds: compass search over the centre from x (default the current centre),
        26 moves of length h (default 0.3 radius), halved when none improves, down to
        0.002 radius; radius = the farthest point of req. Ties go to the smaller radius.

        Only points that can be the farthest from some candidate are measured: with q* the
        farthest from x at distance d, a candidate y (|y - x| = h) has |q* - y| >= d - h,
        and a point q with |q - x| < d - 2h has |q - y| < d - h. So the filter is exact."""
        if len(req) == 0:
            return self.c[i].copy(), 0.0
        x = (self.c[i] if x is None else x).astype(np.float64).copy()
        dq = _d2(req, x[None])[:, 0]
        far = float(np.sqrt(dq.max()))
        rad = far * (1 + _MARGIN)
        lo, hi = _slab(self.Ok, float(x[self.axis]), 2.0 * rad)
        sel = (self.covO[lo:hi] - self.inO[lo:hi, i]) == 0
        free, fn = self.O[lo:hi][sel], self.On[lo:hi][sel]
        dx = _d2(free, x[None], fn)[:, 0]
        near = dx <= (2.0 * rad) ** 2
        free, fn, dx = free[near], fn[near], dx[near]
        best = int(np.count_nonzero(dx <= rad * rad))
        h = 0.3 * rad if h is None else h
        stop = 2e-3 * rad

        def counts(cand: np.ndarray, rr: np.ndarray) -> np.ndarray:
            # A point inside candidate k is within rr[k] + h of x: count only those.
            F = dx <= (float(rr.max()) + h) ** 2
            return np.count_nonzero(_d2(cand, free[F], cn=fn[F]) <= rr[:, None] ** 2, axis=1)

        while h > stop:  # loop over search steps
            keep = dq >= max(far - 2.0 * h, 0.0) ** 2
            R, dR = req[keep], dq[keep]
            cand = x[None] + h * _DIRS
            if len(R) > 2 * _PROBE:
                # Radii from R's _PROBE farthest points are lower bounds, so their counts
                # are too: a candidate whose bound already loses to the current ball
                # cannot be taken, and only the others are measured on all of R (none,
                # on many steps that end by halving h). The argmin and its radius are
                # those of measuring all 26 (docs/sphere_sets.md, "Union search").
                probe = R[np.argpartition(dR, -_PROBE)[-_PROBE:]]
                rr = np.sqrt(_d2(cand, probe).max(1)) * (1 + _MARGIN)
                cost = counts(cand, rr)
                live = np.nonzero((cost < best) | ((cost == best) & (rr < rad)))[0]
                if len(live) == 0:
                    h *= 0.5
                    continue
                rr[live] = np.sqrt(_d2(cand[live], R).max(1)) * (1 + _MARGIN)
                cost[live] = counts(cand[live], rr[live])
                key = np.full(len(cand), np.inf)
                key[live] = cost[live] + 1e-6 * rr[live] / max(rad, 1e-300)
            else:
                rr = np.sqrt(_d2(cand, R).max(1)) * (1 + _MARGIN)
                cost = counts(cand, rr)
                key = cost + 1e-6 * rr / max(rad, 1e-300)
            k = int(np.argmin(key))  # ties: the smaller ball
            if cost[k] < best or (cost[k] == best and rr[k] < rad):
                x, rad, best = cand[k], float(rr[k]), int(cost[k])
                dq = _d2(req, x[None])[:, 0]
                far = float(np.sqrt(dq.max()))
                dx = _d2(free, x[None], fn)[:, 0]
            else:
                h *= 0.5
        return x, rad

    def refit(self, i: int) -> None:
        x, rad = self.best_ball(i, self.required(i))
        self.set(i, x, rad)

    def sweep(self, balls: np.ndarray | None = None) -> None:
        """Refit the balls (default all), largest first."""
        balls = np.arange(len(self.r)) if balls is None else np.asarray(balls)
        for i in balls[np.argsort(-self.r[balls], kind="stable")]:  # loop over balls
            self.refit(int(i))

    def absorb(self, P: np.ndarray, exclude: int = -1) -> np.ndarray:
        """Cover the points P (k, 3): each goes to the ball reaching it with the least
        growth (not `exclude`), and each receiving ball is refitted on its required points
        plus its new ones. Returns the receiving balls."""
        if len(P) == 0:
            return np.zeros(0, dtype=np.int64)
        need = np.sqrt(_d2(P, self.c)) - self.r[None]
        if exclude >= 0:
            need[:, exclude] = np.inf
        pick = need.argmin(1)
        got = np.unique(pick)
        for j in got:  # loop over receiving balls
            x, rad = self.best_ball(int(j), np.vstack([self.required(int(j)), P[pick == j]]))
            self.set(int(j), x, rad)
        return got

    def neighbours(self, balls: list[int], factor: float = 1.0, most: int = 8) -> np.ndarray:
        """Balls overlapping any of `balls` grown by `factor`: for each of `balls`, its
        `most` nearest such (by centre distance; on a small mesh every ball overlaps every
        other, and sweeping them all at each move made the search quadratic)."""
        b = np.asarray(balls)
        d = np.sqrt(_d2(self.c[b], self.c))
        d = np.where(d <= factor * self.r[b][:, None] + self.r[None], d, np.inf)
        k = min(most, d.shape[1])
        near = np.argsort(d, axis=1, kind="stable")[:, :k]
        return np.unique(near[np.isfinite(np.take_along_axis(d, near, 1))])

    def relocate(self, src: int, dst: int) -> None:
        """Move ball src: its required points go to the others, then src and dst split
        dst's required points (2-means from its two farthest points, the paper's teleport
        start), each ball is refitted, and the neighbourhood after."""
        req = self.required(src)
        self.set(src, self.c[src], 0.0)
        got = self.absorb(req, exclude=src)
        q = self.required(dst)
        if len(q) >= 2:
            a = q[((q - q.mean(0)) ** 2).sum(1).argmax()]
            b = q[((q - a) ** 2).sum(1).argmax()]
            side = np.zeros(len(q), dtype=bool)
            for _ in range(10):  # a few Lloyd steps on one ball's points
                side = ((q - a) ** 2).sum(1) > ((q - b) ** 2).sum(1)
                if side.all() or not side.any():
                    break
                a, b = q[~side].mean(0), q[side].mean(0)
            if side.any() and not side.all():
                c0 = self.c[dst].copy()
                self.set(dst, c0, 0.0)
                x, rad = self.best_ball(src, q[side], c0 + 0.5 * (b - c0))
                self.set(src, x, rad)
                x, rad = self.best_ball(dst, q[~side], c0 + 0.5 * (a - c0))
                self.set(dst, x, rad)
        around = self.neighbours([src, dst], 1.5)
        self.sweep(np.union1d(around, got))


    def pair(self, i: int, j: int, splits: int = 5) -> bool:
        """Re-divide between balls i and j the S points that only they hold (a refit moves
        one ball with the others fixed, so the border between two balls sharing a limb
        cannot move: neither can shrink before the other grows). Candidates: planes across
        the axis c_i -> c_j at `splits` quantiles of the points' projections; i is fitted
        on the near side, j on the far side, then i again on what it alone holds. The best
        candidate is kept when the union's O count falls (by 0.01 %, at least one point)."""
        lo = min(self.spanS[i][0], self.spanS[j][0])
        hi = max(self.spanS[i][1], self.spanS[j][1])
        a, b = self.inS[lo:hi, i], self.inS[lo:hi, j]
        Q = self.S[lo:hi][(a | b) & (self.covS[lo:hi] - a - b == 0)]
        ci, cj, ri, rj = self.c[i].copy(), self.c[j].copy(), float(self.r[i]), float(self.r[j])
        axis = cj - ci
        length = float(np.linalg.norm(axis))
        if len(Q) < 2 or length <= 1e-12 * max(ri, rj, 1e-300):
            return False
        base = self.cost()
        p = (Q - ci) @ (axis / length)
        best, keep, moved = base - max(1.0, 1e-4 * base), (ci, ri, cj, rj), False
        for cut in np.quantile(p, np.linspace(0.05, 0.95, splits)):  # loop over candidates
            A, B = Q[p <= cut], Q[p > cut]
            self.set(i, ci, 0.0)
            self.set(j, cj, 0.0)
            self.set(i, *self.best_ball(i, A, A.mean(0) if len(A) else ci))
            self.set(j, *self.best_ball(j, B, B.mean(0) if len(B) else cj))
            self.set(i, *self.best_ball(i, self.required(i)))
            cost = self.cost()
            if cost < best:
                best, moved = cost, True
                keep = (self.c[i].copy(), float(self.r[i]), self.c[j].copy(), float(self.r[j]))
        self.set(i, keep[0], keep[1])
        self.set(j, keep[2], keep[3])
        return moved

    def pair_sweep(self, check: Callable[[], None] | None = None,
                   progress: Callable[[float], None] | None = None,
                   changed: np.ndarray | None = None) -> int:
        """One `pair` move for every two balls holding a common S point; `check` is called
        before each move and `progress` with the fraction done. With `changed` (N,) bool
        (the balls a previous sweep moved), only the pairs with a ball near a changed one
        (`near_changed`) are tried: the others were tried on the same neighbourhood and
        rejected. Returns the number of moves kept."""
        M = self.inS[self.covS >= 2]  # only points two balls hold tell which balls meet
        N = len(self.r)
        share = np.zeros((N, N), dtype=np.float32)
        step = max(1, (1 << 22) // max(1, N))
        for s in range(0, len(M), step):  # loop over memory chunks
            m = M[s:s + step].astype(np.float32)
            share += m.T @ m
        I, J = np.nonzero(np.triu(share > 0, 1))
        if changed is not None:
            look = self.near_changed(changed)
            keep = look[I] | look[J]
            I, J = I[keep], J[keep]
        kept = 0
        for k, (i, j) in enumerate(zip(I, J)):  # loop over ball pairs
            if check is not None:
                check()
            if progress is not None:
                progress(k / len(I))
            kept += self.pair(int(i), int(j))
        return kept

    def near_changed(self, changed: np.ndarray, factor: float = 2.0) -> np.ndarray:
        """(N,) bool: the balls `changed` (N,) bool and those reaching one of them grown
        `factor` times (a pair move reads the points and outside counts around its two
        balls, which only the balls reaching there change)."""
        c = np.nonzero(changed)[0]
        if len(c) == 0:
            return np.zeros(len(self.r), dtype=bool)
        d = np.sqrt(_d2(self.c[c], self.c))
        return changed | (d <= factor * self.r[c][:, None] + self.r[None]).any(0)

def search(centres: np.ndarray, radii: np.ndarray, S: np.ndarray, O: np.ndarray, *,
           attempts: int = 40, max_failed: int = 12,
           densify: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
           densify_rounds: int = 2, pair_sweeps: int = 3, check: Callable[[], None] | None = None,
           progress: Callable[[float], None] | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Minimize the union's O count over N balls that keep every S point covered.

    Args:
        centres (N, 3), radii (N,): a set covering S (the variational fit's).
        S (nS, 3) surface points to keep covered; O (nO, 3) outside points.
        attempts: relocation attempts (at most 3N); the search ends earlier after
            `max_failed` in a row. A relocation is kept when it lowers the O count by more
            than 0.1 % (and at least one point).
        pair_sweeps: after the relocations, up to this many pair sweeps (`pair_sweep`),
            ending at the first that keeps no move.
        densify: f(centres, radii) -> (k, 3) surface points outside the union (empty when
            none); at the end, up to `densify_rounds` times, they are absorbed.
        check: called between moves (raises to stop; the state stays consistent).
        progress: called with a fraction in [0, 1].
    Returns:
        centres (N, 3), radii (N,) (radius 0: a ball left with nothing to hold) and info
        {"start", "end", "accepted", "attempts", "pairs", "densified"} (O counts and move
        counts).
    """
    # Work centred on S's box (see _d2); the callback and the result use the caller's frame.
    shift = 0.5 * (S.min(0) + S.max(0))
    st = UnionState(np.asarray(centres) - shift, radii, S - shift, O - shift)
    if densify is not None:
        user = densify
        densify = lambda c, r: user(c + shift, r) - shift  # noqa: E731
    if not (st.covS > 0).all():
        raise ValueError("the starting balls do not cover S")
    report = progress if progress is not None else (lambda x: None)
    tick = check if check is not None else (lambda: None)
    info = {"start": st.cost(), "accepted": 0, "attempts": 0, "pairs": 0, "densified": 0}
    st.sweep()
    tick()
    best = st.cost()
    failed = 0
    N = len(st.r)
    attempts = min(attempts, 3 * N)
    for a in range(attempts):  # loop over relocation attempts
        if failed >= max_failed or N < 2:
            break
        report(0.5 * a / max(attempts, 1))  # progress: relocations, pairs, gaps = 1/2, 2/5, 1/10
        tick()
        nreq = (st.inS & (st.covS == 1)[:, None]).sum(0)
        # Source: the ball holding fewest points of its own for its size (a free ball
        # first); destination: the largest exclusive outside volume. Failures walk both
        # rankings: (0, 0), (0, 1), (0, 2), (1, 0), ...
        src_order = np.argsort(nreq / np.maximum(st.r ** 2, 1e-300), kind="stable")
        dst_order = np.argsort(-st.exclusive_outside(), kind="stable")
        src = int(src_order[(failed // 3) % N])
        dst = int([d for d in dst_order if d != src][failed % 3 % (N - 1)])
        snap = st.snapshot()
        st.relocate(src, dst)
        info["attempts"] += 1
        cost = st.cost()
        # A move must gain 0.1 % of the count: smaller gains are within the O grid's
        # resolution and would keep the search sweeping on meshes with few triangles.
        if cost < best - max(1.0, 1e-3 * best):
            best, failed = cost, 0
            info["accepted"] += 1
        else:
            st.restore(snap)
            failed += 1
    changed = None  # the first sweep tries every pair; later ones, those near a moved ball
    for k in range(pair_sweeps if N > 1 else 0):  # loop over sweeps
        before = (st.c.copy(), st.r.copy())
        kept = st.pair_sweep(check=tick, progress=lambda f, k=k: report(0.5 + 0.4 * (k + f) / pair_sweeps),
                             changed=changed)
        info["pairs"] += kept
        if kept == 0:
            break
        changed = (st.c != before[0]).any(1) | (st.r != before[1])
    report(0.9)
    _densify(st, densify, densify_rounds, info, tick)
    info["end"] = st.cost()
    report(1.0)
    return st.c + shift, st.r, info


def _densify(st: UnionState, densify, rounds: int, info: dict, tick: Callable[[], None]) -> None:
    """Up to `rounds` times: surface points outside the union join S and are absorbed."""
    if densify is None:
        return
    for _ in range(rounds):  # loop over rounds
        tick()
        P = densify(st.c, st.r)
        if len(P) == 0:
            break
        st.add_surface(P)
        info["densified"] += int(len(P))
        got = st.absorb(P)
        st.sweep(st.neighbours(list(got)))
