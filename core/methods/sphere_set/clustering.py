"""The clustering behind the variational fit (Wang et al. 2006, section 5): a point joins
the cluster whose sphere's outside volume (SOV) grows least, by per-centre radius-to-SOV
tables and a flood fill from the centres (`Solver.assign`); each cluster's sphere then
minimizes its SOV over its centre while bounding the cluster, by pattern search
(`Solver.fit`). The teleport's tools are here too: the overlap ratio and the removal cost
that pick the sphere to move, and the 2-means split of the sphere it splits.

Everything runs on numpy arrays; Python loops run over flood-fill waves, search steps and
memory chunks, never over points or spheres.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .flood_fill import Voxels
from .outside_volume import FOUR_PI, PreparedMesh, sphere_outside_volume
from .seeding import nearest


class Stopped(Exception):
    """Raised inside the iterations when should_stop() asks for Esc."""


_c, _s = np.cos(np.pi / 4), np.sin(np.pi / 4)
# A fixed rotation (45° about z then x) for the alternate compass frame.
_ROT = (np.array([[1, 0, 0], [0, _c, -_s], [0, _s, _c]])
        @ np.array([[_c, -_s, 0], [_s, _c, 0], [0, 0, 1]]))


class Solver:
    """The clustering state over one set of units: `corners` (n, k, 3) (k = 1: points;
    k = 3: the cover's patches, in the polish), their flood-fill grid, the SOV tables and
    fit of the last call (kept to skip unchanged spheres) and the count of SOV evaluations."""

    def __init__(self, mesh: PreparedMesh, corners: np.ndarray, spacing: float,
                 table_size: int, should_stop: Callable[[], bool] | None):
        self.mesh = mesh
        self.corners = corners  # (n, k, 3) the units (k = 1: points; k = 3: cover patches)
        self.pts = corners.mean(axis=1)  # (n, 3) where each unit sits in the flood fill
        self.s = spacing
        self.vox = Voxels(self.pts, spacing)
        self.table_size = table_size
        self.should_stop = should_stop
        self.sov_calls = 0
        self._table_memo = None  # (centres, rmax, table) of the last assignment
        self._fit_memo = None  # (labels, centres, radii, sov) returned by the last fit

    def check_stop(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise Stopped

    def sov(self, centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
        self.sov_calls += len(centres)
        return sphere_outside_volume(centres, radii, self.mesh, inside="sign")

    # ------------------------------------------------------------------ SOV tables
    def sov_table(self, centres: np.ndarray, reach: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """f(i, r) -> SOV of ball (centres[i], r), both arrays of one shape: the paper's
        radius-to-SOV table of each fixed centre, at `table_size` radii up to reach[i]
        (at least 2 grid steps), made monotone and interpolated linearly; beyond the table
        it grows like a ball entirely outside (an upper bound), which keeps far units away."""
        N, K = len(centres), self.table_size
        rmax = np.maximum(reach, 2.0 * self.s)
        rho = rmax[:, None] * np.linspace(0.0, 1.0, K)[None, :]  # (N, K)
        tab = np.empty((N, K))
        todo = np.ones(N, dtype=bool)
        if self._table_memo is not None and len(self._table_memo[0]) == N:
            # Spheres that did not move since the last table keep theirs.
            c0, r0, t0 = self._table_memo
            same = np.all(c0 == centres, axis=1) & (r0 == rmax)
            tab[same] = t0[same]
            todo = ~same
        if todo.any():
            vals = self.sov(np.repeat(centres[todo], K, axis=0), rho[todo].reshape(-1))
            tab[todo] = np.maximum.accumulate(vals.reshape(-1, K), axis=1)  # SOV grows with r
        self._table_memo = (centres.copy(), rmax.copy(), tab.copy())

        def f(i: np.ndarray, r: np.ndarray) -> np.ndarray:
            x = r / rmax[i] * (K - 1)
            k = np.clip(np.floor(x).astype(np.int64), 0, K - 2)
            t = np.clip(x - k, 0.0, 1.0)
            val = tab[i, k] * (1 - t) + tab[i, k + 1] * t
            over = np.maximum(r - rmax[i], 0.0)
            return val + FOUR_PI / 3.0 * ((rmax[i] + over) ** 3 - rmax[i] ** 3)

        return f

    def removal_cost(self, centres: np.ndarray, radii: np.ndarray, sov: np.ndarray,
                     labels: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """(N,) estimated change of Σ SOV if ball i were deleted: each of its units moves to
        the other ball whose SOV grows least (by the tables), each receiving ball grows to
        its farthest new unit; the growth summed minus the ball's own SOV."""
        N = len(centres)
        f = self.sov_table(centres, reach)
        cols = np.arange(N)
        base = f(cols, radii)
        out = -sov.copy()
        step = max(1, (1 << 21) // max(1, 3 * N))
        key_all, d_all = [], []
        for s in range(0, len(self.pts), step):  # loop over memory chunks
            cor = self.corners[s:s + step]
            d = np.sqrt(((cor[:, :, None, :] - centres[None, None]) ** 2).sum(-1)).max(1)  # (m, N)
            cost = f(np.broadcast_to(cols, d.shape), np.maximum(d, radii[None])) - base[None]
            own = labels[s:s + step]
            cost[np.arange(len(own)), own] = np.inf
            j = cost.argmin(1)
            key_all.append(own * N + j)
            d_all.append(d[np.arange(len(own)), j])
        key = np.concatenate(key_all)
        dist = np.concatenate(d_all)
        need = np.zeros(N * N)
        np.maximum.at(need, key, dist)
        pair = np.nonzero(need > 0)[0]
        i, j = pair // N, pair % N
        grow = f(j, np.maximum(need[pair], radii[j])) - base[j]
        out += np.bincount(i, weights=grow, minlength=N)
        return out

    # ------------------------------------------------------------------ assignment
    def assign(self, centres: np.ndarray, reach: np.ndarray) -> np.ndarray:
        """Labels (n,) int64: flood fill from the centres; each wave's points join the
        cluster whose SOV grows least (ties: nearest centre). The SOV of cluster i as a
        function of its radius (centre fixed during assignment) is tabulated at
        `table_size` radii up to `reach[i]` and interpolated linearly; beyond the table it
        grows like a ball entirely outside (an upper bound), which keeps far points away."""
        N = len(centres)
        f = self.sov_table(centres, reach)
        self.check_stop()

        seeds = nearest(centres, self.pts)  # (N,) the sample nearest each centre
        level = self.vox.waves(seeds)
        order = np.argsort(level, kind="stable")
        bounds = np.searchsorted(level[order], np.arange(level.max() + 2))
        labels = np.full(len(self.pts), -1, dtype=np.int64)
        radius = np.zeros(N)
        cols = np.arange(N)
        for w in range(len(bounds) - 1):  # loop over flood-fill waves
            idx = order[bounds[w]:bounds[w + 1]]
            if len(idx) == 0:
                continue
            # A unit enters a ball when its farthest corner does: (m, 3, N) -> (m, N).
            d = np.sqrt(((self.corners[idx, :, None, :] - centres[None, None]) ** 2).sum(-1)).max(1)
            ii = np.broadcast_to(cols, d.shape)
            grow = np.maximum(d, radius[None, :])
            cost = f(ii, grow) - f(cols, radius)[None, :]
            best = cost.min(1, keepdims=True)
            tie = cost <= best + 1e-12 * np.maximum(np.abs(best), 1e-300) + 1e-300
            lab = np.where(tie, d, np.inf).argmin(1)
            labels[idx] = lab
            np.maximum.at(radius, lab, d[np.arange(len(idx)), lab])
        return labels

    # ---------------------------------------------------------------------- fitting
    def cluster_radius(self, cand: np.ndarray, owner: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Radius (C,) each candidate centre (C, 3) of cluster owner (C,) needs to bound
        the cluster's points: max distance, by segments of points sorted by cluster."""
        order = np.argsort(labels, kind="stable")
        lab_sorted = labels[order]
        N = int(max(labels.max(), owner.max())) + 1
        start = np.searchsorted(lab_sorted, np.arange(N))
        stop = np.searchsorted(lab_sorted, np.arange(N), side="right")
        cnt = (stop - start)[owner]
        # Expand (candidate, member point) pairs; total = sum of candidate cluster sizes.
        tot = int(cnt.sum())
        out = np.zeros(len(cand))
        if tot == 0:
            return out
        cand_of = np.repeat(np.arange(len(cand)), cnt)
        first = np.repeat(np.cumsum(cnt) - cnt, cnt)
        member = order[np.repeat(start[owner], cnt) + (np.arange(tot) - first)]
        d = np.sqrt(((self.corners[member] - cand[cand_of][:, None, :]) ** 2).sum(-1)).max(1)
        np.maximum.at(out, cand_of, d)
        return out

    def fit(self, centres: np.ndarray, labels: np.ndarray, iterations: int = 40
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Minimize each cluster's SOV over its centre (radius = what bounds the cluster),
        all clusters at once, by pattern search: try 14 moves of length `step` (the 6 axes
        and 8 diagonals of a frame turned 45° every other step), take the best improving move, halve
        the step when none improves (derivative free: SOV with the bounding radius is only
        piecewise smooth).
        Returns (centres (N, 3), radii (N,), sov (N,))."""
        N = len(centres)
        owner = np.arange(N)
        c = centres.copy()
        r = self.cluster_radius(c, owner, labels)
        active = np.bincount(labels, minlength=N) > 0
        val = np.empty(N)
        fresh = np.ones(N, dtype=bool)
        step = np.maximum(0.25 * r, self.s)
        if self._fit_memo is not None and len(self._fit_memo[1]) == N:
            # A cluster whose members and start centre are those the last fit ended with
            # is already at its (pattern-search) optimum: keep it, search the others.
            l0, c0, r0, v0 = self._fit_memo
            changed = labels != l0
            moved = np.zeros(N, dtype=bool)
            moved[labels[changed]] = True
            moved[l0[changed]] = True
            warm = np.all(c0 == c, axis=1)
            fresh = moved | ~warm
            val[~fresh] = v0[~fresh]
            active &= fresh
            # A warm start only needs to follow its members' small changes.
            step[warm] = np.maximum(0.1 * r[warm], self.s)
        if fresh.any():
            val[fresh] = self.sov(c[fresh], r[fresh])
        # Axis and diagonal moves: with only the 6 axis moves the search stalls on the
        # ridges where the bounding radius switches between two farthest units.
        g = np.stack(np.meshgrid(*[np.array([-1.0, 0.0, 1.0])] * 3, indexing="ij"), -1).reshape(-1, 3)
        dirs = g[(np.abs(g).sum(1) == 1) | (np.abs(g).sum(1) == 3)]  # 6 faces + 8 corners
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        for it in range(iterations):  # loop over search steps
            self.check_stop()
            act = np.nonzero(active & (step > 0.125 * self.s))[0]
            if len(act) == 0:
                break
            # Alternate the frame so that moves are not stuck to the axes.
            frame = dirs if it % 2 == 0 else dirs @ _ROT.T
            cand = (c[act, None, :] + step[act, None, None] * frame[None]).reshape(-1, 3)
            own = np.repeat(act, len(frame))
            rc = self.cluster_radius(cand, own, labels)
            vc = self.sov(cand, rc).reshape(len(act), len(frame))
            k = vc.argmin(1)
            bv = vc[np.arange(len(act)), k]
            better = bv < val[act] - 1e-12 * np.maximum(val[act], 1e-300)
            mv = act[better]
            c[mv] = cand.reshape(len(act), len(frame), 3)[better, k[better]]
            r[mv] = rc.reshape(len(act), len(frame))[better, k[better]]
            val[mv] = bv[better]
            step[act[~better]] *= 0.5
        self._fit_memo = (labels.copy(), c.copy(), r.copy(), val.copy())
        return c, r, val

    # ---------------------------------------------------------------- teleportation
    def overlap_ratio(self, centres: np.ndarray, radii: np.ndarray, rng: np.random.Generator,
                      m: int = 256) -> np.ndarray:
        """(N,) fraction of each ball's volume shared with at least one other ball, by m
        uniform points per ball."""
        N = len(centres)
        d = rng.normal(size=(N, m, 3))
        d /= np.linalg.norm(d, axis=2, keepdims=True)
        p = centres[:, None, :] + d * (radii[:, None, None] * rng.random((N, m, 1)) ** (1 / 3))
        p = p.reshape(-1, 3)
        own = np.repeat(np.arange(N), m)
        hit = np.zeros(len(p), dtype=bool)
        step = max(1, (1 << 22) // max(1, N))
        for s in range(0, len(p), step):  # loop over memory chunks
            dd = ((p[s:s + step, None, :] - centres[None]) ** 2).sum(-1) <= radii[None] ** 2
            dd[np.arange(len(dd)), own[s:s + step]] = False
            hit[s:s + step] = dd.any(1)
        return hit.reshape(N, m).mean(1)

    def split_centres(self, labels: np.ndarray, dest: int) -> tuple[np.ndarray, np.ndarray]:
        """Two centres splitting cluster `dest`: 2-means (L2) on its unit positions, started
        from its two (approximately) farthest units (the paper starts the new spheres at
        those two units; the 2-means centroids lie inside the part and settle faster)."""
        q = self.pts[labels == dest]
        a = q[((q - q.mean(0)) ** 2).sum(1).argmax()]
        b = q[((q - a) ** 2).sum(1).argmax()]
        for _ in range(8):  # a few Lloyd steps on one cluster
            side = ((q - a) ** 2).sum(1) > ((q - b) ** 2).sum(1)
            if side.all() or not side.any():
                break
            a, b = q[~side].mean(0), q[side].mean(0)
        return a, b
