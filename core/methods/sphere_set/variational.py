"""Variational sphere sets (Wang et al. 2006, section 5): Lloyd-style clustering of interior
and surface sample points, where a point joins the cluster whose sphere's outside volume
grows least, and each cluster's sphere minimizes its outside volume (SOV) over its centre
while bounding the cluster. Teleportation moves the most redundant sphere to split the worst
one. A final pass (`cover_surface`) grows spheres until the union provably contains every
triangle (adaptive patches with a known covering radius, each held at that depth).

Everything runs on numpy arrays; Python loops run over iterations, flood-fill waves, search
steps and memory chunks, never over points, triangles or spheres.
Simplifications against the paper are listed in docs/sphere_sets.md.
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from . import union_search
from .outside_volume import (
    FOUR_PI,
    PreparedMesh,
    classify_inside,
    mesh_volume,
    prepare_mesh,
    random_surface_points,
    sphere_outside_volume,
    union_outside_volume_estimate,
)
from .types import SphereSet


class _Stopped(Exception):
    """Raised inside the iterations when should_stop() asks for Esc."""


# ---------------------------------------------------------------------------- samples
def _samples(mesh: PreparedMesh, volume: float, n_interior: int, n_surface: int,
             rng: np.random.Generator, with_vertices: bool = True,
             with_midpoints: bool = False) -> tuple[np.ndarray, float]:
    """Clustering units (n, 1, 3) float64 (single points, kept in the corner-set layout of
    the solver): interior grid points (inside by winding number), area-weighted surface
    points (the paper's samples) and, with `with_vertices`, the mesh's vertices (the
    extremities of the surface). Union coverage of the whole surface is left to the cover
    pass (`cover_surface`). Returns (points, grid spacing)."""
    v = mesh.vertices[np.unique(mesh.triangles)]
    lo, hi = v.min(0), v.max(0)
    # Spacing for about n_interior points inside the volume.
    # At most 256 steps along the longest side: a flat or open mesh has (almost) no volume.
    s = max((max(volume, 1e-300) / max(n_interior, 1)) ** (1.0 / 3.0), float(np.max(hi - lo)) / 256.0,
            1e-12)
    dims = np.maximum(np.floor((hi - lo) / s).astype(np.int64), 1)
    axes = [lo[k] + (np.arange(dims[k]) + 0.5) * (hi[k] - lo[k]) / dims[k] for k in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    inner = grid[classify_inside(grid, mesh, 4.0 * s)] if n_interior > 0 else np.zeros((0, 3))
    surf = random_surface_points(mesh.a, mesh.b, mesh.c, n_surface, rng)
    parts = [inner, surf] + ([v] if with_vertices or len(inner) + len(surf) == 0 else [])
    if with_midpoints:  # the paper's edge midpoints and triangle centroids
        tv = mesh.vertices[mesh.triangles]
        e = np.sort(np.concatenate([mesh.triangles[:, [0, 1]], mesh.triangles[:, [1, 2]],
                                    mesh.triangles[:, [2, 0]]]), axis=1)
        e = np.unique(e, axis=0)
        parts += [0.5 * (mesh.vertices[e[:, 0]] + mesh.vertices[e[:, 1]]), tv.mean(axis=1)]
    single = np.vstack(parts)
    return single[:, None, :].copy(), s


def _kmeans_init(points: np.ndarray, count: int, rng: np.random.Generator,
                 iterations: int = 8) -> np.ndarray:
    """(count, 3) initial centres: k-means++ seeding then a few plain Lloyd (L2) steps
    (the paper seeds at random interior points; L2 clustering first is the heuristic its
    conclusion suggests for larger sets, and it saves variational iterations)."""
    n = len(points)
    centres = np.empty((count, 3))
    centres[0] = points[rng.integers(n)]
    d2 = ((points - centres[0]) ** 2).sum(1)
    for k in range(1, count):  # loop over spheres in seeding only (count is small)
        tot = d2.sum()
        idx = rng.choice(n, p=d2 / tot) if tot > 0 else rng.integers(n)
        centres[k] = points[idx]
        d2 = np.minimum(d2, ((points - centres[k]) ** 2).sum(1))
    for _ in range(iterations):
        lab = _nearest(points, centres)
        cnt = np.bincount(lab, minlength=count)
        sums = np.stack([np.bincount(lab, weights=points[:, k], minlength=count) for k in range(3)], 1)
        ok = cnt > 0
        centres[ok] = sums[ok] / cnt[ok, None]
    return centres


def _nearest(points: np.ndarray, centres: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """(n,) int64 index of the nearest centre of each point."""
    out = np.empty(len(points), dtype=np.int64)
    step = max(1, chunk // max(1, len(centres)))
    for s in range(0, len(points), step):  # loop over memory chunks
        d = ((points[s:s + step, None, :] - centres[None]) ** 2).sum(-1)
        out[s:s + step] = d.argmin(1)
    return out


# ------------------------------------------------------------------------ flood fill
class _Voxels:
    """The sample points bucketed in a voxel grid of the sampling spacing; the flood fill
    walks it breadth-first (26-neighbourhood), one vectorized wave per step."""

    def __init__(self, points: np.ndarray, spacing: float):
        self.lo = points.min(0) - 0.5 * spacing
        self.s = spacing
        ijk = np.floor((points - self.lo) / spacing).astype(np.int64)
        self.dims = ijk.max(0) + 2
        self.cell = np.ravel_multi_index(ijk.T, self.dims)
        self.occupied = np.zeros(int(np.prod(self.dims)), dtype=bool)
        self.occupied[self.cell] = True

    def _dilate(self, m: np.ndarray) -> np.ndarray:
        g = m.reshape(self.dims)
        for ax in range(3):  # separable 3x3x3 dilation: one pass per axis
            h = g.copy()
            sl_a = [slice(None)] * 3
            sl_b = [slice(None)] * 3
            sl_a[ax], sl_b[ax] = slice(1, None), slice(None, -1)
            h[tuple(sl_a)] |= g[tuple(sl_b)]
            h[tuple(sl_b)] |= g[tuple(sl_a)]
            g = h
        return g.reshape(-1)

    def waves(self, seed_points: np.ndarray) -> np.ndarray:
        """(n,) int64 BFS level of every sample's voxel from the seed samples' voxels.
        Voxels unreachable from any seed (a separate part) start one level after the
        fill stalls, from all of them at once."""
        level = np.full(len(self.occupied), -1, dtype=np.int64)
        front = np.zeros(len(self.occupied), dtype=bool)
        front[self.cell[seed_points]] = True
        level[front] = 0
        reached = front.copy()
        k = 0
        while True:  # loop over waves (grid diameter), not over voxels
            k += 1
            new = self._dilate(front) & self.occupied & ~reached
            if not new.any():
                rest = self.occupied & ~reached
                if not rest.any():
                    break
                new = rest
            level[new] = k
            reached |= new
            front = new
        return level[self.cell]


# ------------------------------------------------------------------------- the solver
class _Solver:
    def __init__(self, mesh: PreparedMesh, corners: np.ndarray, spacing: float,
                 table_size: int, should_stop: Callable[[], bool] | None):
        self.mesh = mesh
        self.corners = corners  # (n, k, 3) the units (k = 1: points; k = 3: cover patches)
        self.pts = corners.mean(axis=1)  # (n, 3) where each unit sits in the flood fill
        self.s = spacing
        self.vox = _Voxels(self.pts, spacing)
        self.table_size = table_size
        self.should_stop = should_stop
        self.sov_calls = 0
        self._table_memo = None  # (centres, rmax, table) of the last assignment
        self._fit_memo = None  # (labels, centres, radii, sov) returned by the last fit

    def check_stop(self) -> None:
        if self.should_stop is not None and self.should_stop():
            raise _Stopped

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

        seeds = _nearest(centres, self.pts)  # (N,) the sample nearest each centre
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


_c, _s = np.cos(np.pi / 4), np.sin(np.pi / 4)
# A fixed rotation (45° about z then x) for the alternate compass frame.
_ROT = (np.array([[1, 0, 0], [0, _c, -_s], [0, _s, _c]])
        @ np.array([[_c, -_s, 0], [_s, _c, 0], [0, 0, 1]]))


# ------------------------------------------------------------------------- cover pass
def _patch_balls(P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Centroid g (m, 3) and covering radius rho (m,) of triangles P (m, 3, 3): the
    triangle lies in the ball (g, rho), rho = the farthest corner from g (a ball is convex
    and holds the three corners, so it holds their hull)."""
    g = P.mean(axis=1)
    return g, np.sqrt(((P - g[:, None, :]) ** 2).sum(-1)).max(1)


def _dist(points: np.ndarray, centres: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """(m, N) float64 distances, in memory chunks."""
    out = np.empty((len(points), len(centres)))
    step = max(1, chunk // max(1, len(centres)))
    for s in range(0, len(points), step):  # loop over memory chunks
        d = points[s:s + step, None, :] - centres[None]
        out[s:s + step] = np.sqrt((d * d).sum(-1))
    return out


def _grow(r: np.ndarray, need: np.ndarray) -> None:
    """Each row (a sample that no ball holds deeply enough) picks the ball whose volume grows
    least to reach `need` (row, ball); every ball grows to its most demanding pick (in place)."""
    if len(need) == 0:
        return
    cost = np.maximum(need, r[None]) ** 3 - r[None] ** 3
    pick = cost.argmin(1)
    np.maximum.at(r, pick, need[np.arange(len(need)), pick])


def cover_surface(centres: np.ndarray, radii: np.ndarray, vertices: np.ndarray,
                  triangles: np.ndarray, eps: float, priority: np.ndarray | None = None,
                  shrink: bool = True, max_levels: int = 24) -> tuple[np.ndarray, np.ndarray, dict]:
    """Grow radii until the union of the balls provably contains every triangle, then shrink.

    Patches: every triangle starts as one patch. A patch is *held* by ball j when its three
    corners are in ball j; then the whole patch is (a ball is convex). Level by level,
    patches no ball holds are split into their 4 midpoint sub-triangles (which tile them
    exactly), after growing a ball to reach the centroid of any patch whose centroid is
    outside every ball (those points must be covered anyway). A patch whose covering radius
    rho (its farthest corner from its centroid g: every point of it is within rho of g) is
    at most eps is a *leaf sample* and is not split: if no ball holds it, one grows to hold
    its three corners, which needs at most |g - c_j| + rho (the sample g at depth rho).
    At the end every triangle is a union of held patches, hence inside the union of the
    balls (docs/sphere_sets.md, "Proven union coverage"). Growth picks, per patch, the ball
    whose volume grows least; each ball grows to its most demanding pick (vectorized).

    Shrink: ball by ball, in decreasing `priority` (default radius), the radius drops to the
    farthest corner of the final patches that ball i alone holds; every patch keeps a
    holder, so the proof still applies, and radii only fall.

    Args:
        centres (N, 3), radii (N,), vertices (V, 3), triangles (T, 3); eps > 0 the largest
        covering radius of a leaf sample; priority (N,) the shrink order (largest first).
    Returns:
        radii (N,) (with a 1e-9 relative margin against rounding), triangle_sphere (T,) int64
        (the ball reaching deepest past each triangle's centroid: max r_j - |g - c_j|; a
        grouping, not a containment) and stats {"patches", "leaf_samples", "levels", "eps"}.
    """
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 3)
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    N = len(c)
    r = np.asarray(radii, dtype=np.float64).copy()
    eps = float(eps)
    P = v[t]  # (T, 3, 3)
    final = []
    leaves = levels = 0
    while len(P):  # loop over subdivision levels
        levels += 1
        g, rho = _patch_balls(P)
        far = _far_corner(P, c)  # (m, N) radius ball j needs to hold the patch
        leaf = (rho <= eps) | (levels >= max_levels)
        held = (far <= r[None]).any(1)
        # Centroids outside every ball: reach them first (depth 0).
        out = ~held & ~leaf
        if out.any():
            dg = _dist(g[out], c)
            o2 = ~(dg <= r[None]).any(1)
            _grow(r, dg[o2])
        # Leaf samples no ball holds: grow one to hold the three corners.
        lw = leaf & ~held
        _grow(r, far[lw])
        done = held | leaf
        final.append(P[done])
        leaves += int(np.count_nonzero(leaf))
        P = P[~done]
        P = _split4(P)
    F = np.concatenate(final)
    if shrink and N > 1:
        # Sparse (patch, ball) holder pairs, sorted by ball.
        pk, pj, pn = [], [], []
        step = max(1, (1 << 21) // max(1, N))
        for s in range(0, len(F), step):  # loop over memory chunks
            need = _far_corner(F[s:s + step], c)
            k, j = np.nonzero(need <= r[None])
            pk.append(k + s)
            pj.append(j)
            pn.append(need[k, j])
        pk, pj, pn = np.concatenate(pk), np.concatenate(pj), np.concatenate(pn)
        o = np.argsort(pj, kind="stable")
        pk, pj, pn = pk[o], pj[o], pn[o]
        start = np.searchsorted(pj, np.arange(N + 1))
        count = np.bincount(pk, minlength=len(F))
        order = np.argsort(-(r if priority is None else np.asarray(priority, dtype=np.float64)),
                           kind="stable")
        alive = np.ones(len(pk), dtype=bool)
        for i in order:  # loop over balls (N), each step vectorized over its pairs
            sl = slice(start[i], start[i + 1])
            a = alive[sl]
            k, n = pk[sl], pn[sl]
            only = a & (count[k] == 1)
            new_r = float(n[only].max()) if only.any() else 0.0
            if new_r < r[i]:
                r[i] = new_r
                drop = a & (n > new_r)
                count[k[drop]] -= 1
                alive[sl] = a & ~drop
    r = r * (1.0 + 1e-9) + 1e-12
    gt = v[t].mean(axis=1)
    tri_sphere = (r[None] - _dist(gt, c)).argmax(1).astype(np.int64)
    stats = {"patches": int(len(F)), "leaf_samples": leaves, "levels": levels, "eps": eps,
             "_patches": F}
    return r, tri_sphere, stats


def _split4(P: np.ndarray) -> np.ndarray:
    """(4m, 3, 3) the 4 edge-midpoint sub-triangles of each triangle P (m, 3, 3), which tile
    it exactly."""
    m01, m12, m20 = 0.5 * (P[:, 0] + P[:, 1]), 0.5 * (P[:, 1] + P[:, 2]), 0.5 * (P[:, 2] + P[:, 0])
    return np.concatenate([np.stack(q, axis=1) for q in ((P[:, 0], m01, m20), (m01, P[:, 1], m12),
                                                        (m20, m12, P[:, 2]), (m01, m12, m20))])


def uncovered_points(centres: np.ndarray, radii: np.ndarray, vertices: np.ndarray,
                     triangles: np.ndarray, eps: float, most: int, max_levels: int = 24
                     ) -> np.ndarray:
    """(k <= most, 3) surface points outside the union of the balls, deepest first: the
    gaps the proven cover would have to grow into, found by its subdivision without growth.

    Patches that no single ball holds are split (as in `cover_surface`); a patch stops when
    its corners and centroid are all outside the union or it is a leaf (covering radius
    <= eps), and gives its corners and centroid that are outside. Points less than eps/2
    outside (the slivers along the union's border, which the cover closes at that depth)
    are dropped; the rest are ranked by their distance outside, deepest first."""
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 3)
    r = np.asarray(radii, dtype=np.float64)
    P = np.asarray(vertices, dtype=np.float64)[np.asarray(triangles, dtype=np.int64).reshape(-1, 3)]
    found = []
    for _ in range(max_levels):  # loop over subdivision levels
        if not len(P):
            break
        P = P[~(_far_corner(P, c) <= r[None]).any(1)]
        g, rho = _patch_balls(P)
        pts = np.concatenate([P, g[:, None]], axis=1)  # (m, 4, 3)
        depth = (_dist(pts.reshape(-1, 3), c) - r[None]).min(1).reshape(-1, 4)
        stop = (depth > 0).all(1) | (rho <= eps)
        found.append((pts[stop].reshape(-1, 3), depth[stop].reshape(-1)))
        P = _split4(P[~stop])
    if not found:
        return np.zeros((0, 3))
    pts = np.concatenate([f[0] for f in found])
    depth = np.concatenate([f[1] for f in found])
    keep = depth > 0.5 * eps
    pts, depth = pts[keep], depth[keep]
    return pts[np.argsort(-depth, kind="stable")[:most]]


def _far_corner(P: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(m, N) the farthest corner of each triangle P (m, 3, 3) from each centre: the
    radius ball j needs to hold triangle i (a ball is convex)."""
    out = np.empty((len(P), len(centres)))
    step = max(1, (1 << 21) // max(1, len(centres)))
    for s in range(0, len(P), step):  # loop over memory chunks
        q = P[s:s + step]
        out[s:s + step] = np.maximum(np.maximum(_dist(q[:, 0], centres), _dist(q[:, 1], centres)),
                                     _dist(q[:, 2], centres))
    return out


# -------------------------------------------------------------------------------- fit
def fit(vertices: np.ndarray, triangles: np.ndarray, count: int, seed: int = 0,
        progress: Callable[[float], None] | None = None,
        should_stop: Callable[[], bool] | None = None, *,
        n_interior: int = 4000, n_surface: int = 1000, max_iterations: int = 40,
        max_teleports: int = 60, max_failed_teleports: int = 6, teleport_rounds: int = 2,
        teleport_source: str = "overlap", table_size: int = 24, with_vertices: bool = True,
        cover_eps: float = 1e-4, polish_rounds: int = 3, with_midpoints: bool = False,
        search_steps: int = 40, tolerance: float = 5e-3,
        e_r_samples: int = 100_000, union_attempts: int = 300, union_surface: int | None = None,
        union_outside: int | None = None, union_failed: int = 40,
        union_densify: int = 4, union_gaps: int = 5000, union_pairs: int = 3) -> SphereSet:
    """Fit `count` spheres whose union bounds the mesh, minimizing outside volume.

    Args:
        vertices: (V, 3) float64 rest positions (mesh data coordinates).
        triangles: (T, 3) int triangle corners.
        count: number of spheres N >= 1.
        seed: everything random (surface samples, seeding, overlap estimates, the E_r
            estimator) derives from it: the same seed gives the same set.
        progress: called with a fraction in [0, 1] now and then.
        should_stop: polled between steps; when it returns True the best set so far is
            covered and returned with info["stopped"] = True.
        n_interior, n_surface: interior grid points and area-weighted surface samples
            (the clustering units, with the vertices; see with_vertices).
        max_iterations: assignment/fit rounds, teleport evaluations included.
        max_teleports, max_failed_teleports: teleport budget; the fit ends once this many
            teleports in a row fail to lower the error.
        teleport_rounds: assignment/fit rounds run before judging a teleport.
        teleport_source: "overlap" (default): the paper's largest overlap ratio; "removal":
            the ball whose deletion raises Σ SOV least by the tables (measured worse).
        with_vertices: the mesh vertices are clustering units too.
        with_midpoints: the edge midpoints and triangle centroids too (the paper's).
        cover_eps: covering radius of the cover pass's leaf samples, relative to the
            diagonal of the mesh's box (`cover_surface`): every leaf sample is held at
            depth at least its covering radius (<= eps), so every surface point is inside.
        polish_rounds: rounds refitting each ball on the cover's patches assigned to it
            (kept while Σ SOV falls).
        table_size: radii in each cluster's SOV-versus-radius table.
        search_steps: compass-search steps per fit.
        tolerance: relative error decrease below which a round counts as stalled.
        e_r_samples: stratified samples of the final union outside volume.
        union_attempts: relocation attempts of the union search (`union_search.search`,
            run after the first cover); -1 turns the search off (then the polish runs).
        union_surface: random surface points the search keeps covered (with every vertex,
            edge midpoint and centroid); default 10 000 per ball, clipped to 20 000 ..
            300 000. Dense, because every gap between them that the
            search leaves open, the final cover must grow into (on Cesium Man at N = 32,
            closing the gaps raised the search's outside count by 9 % with 20 000 points
            and by 1.6 % with 300 000).
        union_outside: outside points standing for the union's outside volume (default
            about 4000 per ball, clipped to 20 000 .. 300 000 and 600 per triangle).
        union_failed: relocations failing in a row that end them.
        union_pairs: pair sweeps after the relocations.
        union_densify, union_gaps: rounds that add the deepest `union_gaps` surface points
            outside the union (`uncovered_points`) to the search.

    Returns:
        SphereSet with centres (N, 3), radii (N,), outside_volume (union outside the mesh),
        mesh_volume, build_seconds and info: "triangle_sphere" (T,) int64 (the ball reaching
        deepest past each triangle's centroid: a grouping for the collision method, NOT a
        ball containing the triangle; the union contains every triangle), "iterations",
        "teleports", "sum_sov" (the paper's error, overlaps
        counted twice), "outside_volume_stderr", "samples", "stopped", "cover" (the cover
        pass's patch counts and eps, absolute), "polish_rounds".
    """
    t_start = time.perf_counter()
    if count < 1:
        raise ValueError("count must be at least 1")
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if len(t) == 0:
        raise ValueError("the mesh has no triangles")
    rng = np.random.default_rng(seed)
    report = progress if progress is not None else (lambda x: None)
    report(0.0)
    mesh = prepare_mesh(v, t)
    vol = mesh_volume(v, t)
    corners, spacing = _samples(mesh, vol, n_interior, n_surface, rng, with_vertices,
                                with_midpoints)
    count = int(count)
    solver = _Solver(mesh, corners, spacing, table_size, should_stop)
    pts = solver.pts
    stopped = False
    iterations = teleports = 0
    history: list[float] = []

    centres = _kmeans_init(pts, count, rng)
    labels = _nearest(pts, centres)
    reach = solver.cluster_radius(centres, np.arange(count), labels)
    best = None  # (error, centres, radii, sov, labels)

    def round_(c: np.ndarray, rch: np.ndarray):
        lab = solver.assign(c, rch)
        c2, r2, s2 = solver.fit(c, lab, search_steps)
        return lab, c2, r2, s2

    try:
        labels, centres, radii, sov = round_(centres, 1.5 * reach + 2 * spacing)
        iterations = 1
        best = (float(sov.sum()), centres, radii, sov, labels)
        history.append(best[0])
        failed = 0
        while iterations < max_iterations:
            report(min(0.9, iterations / max_iterations))
            err, c0, r0, s0, l0 = best
            lab, c1, r1, s1 = round_(c0, 1.5 * r0 + 2 * spacing)
            iterations += 1
            e1 = float(s1.sum())
            history.append(e1)
            if e1 < err * (1 - tolerance):
                best = (e1, c1, r1, s1, lab)
                failed = 0
                continue
            if e1 < err:
                best = (e1, c1, r1, s1, lab)
            # Stalled: teleport the most redundant sphere to split the worst one.
            if teleports >= max_teleports or failed >= max_failed_teleports:
                break
            err, c0, r0, s0, l0 = best
            if teleport_source == "overlap":  # the paper's: the most redundant ball
                src_order = np.argsort(-solver.overlap_ratio(c0, r0, rng), kind="stable")
            else:  # the ball whose deletion costs least, by the SOV tables
                rc = solver.removal_cost(c0, r0, s0, l0, 1.5 * r0 + 2 * spacing)
                src_order = np.argsort(rc, kind="stable")
            dst_order = np.argsort(-s0, kind="stable")
            # Retries walk the (source, destination) ranks: (0, 0), (0, 1), (1, 0), (1, 1),
            # (2, 0), ... (a failure often comes from a destination that splits badly).
            src = int(src_order[min(failed // 2, count - 1)])
            dsts = [int(d) for d in dst_order if d != src]
            dst = dsts[min(failed % 2, len(dsts) - 1)] if dsts else src
            if src == dst or np.count_nonzero(l0 == dst) < 2:
                failed += 1
                continue
            pa, pb = solver.split_centres(l0, dst)
            ct = c0.copy()
            rt = 1.5 * r0 + 2 * spacing
            ct[dst], ct[src] = pa, pb
            rt[dst] = rt[src] = 0.75 * r0[dst] + 2 * spacing
            # The split spheres need a couple of rounds to settle before being judged.
            lab, c2, r2, s2 = round_(ct, rt)
            for _ in range(teleport_rounds - 1):
                lab, c2, r2, s2 = round_(c2, 1.5 * r2 + 2 * spacing)
            iterations += teleport_rounds
            e2 = float(s2.sum())
            history.append(e2)
            if e2 < err:
                best = (e2, c2, r2, s2, lab)
                teleports += 1
                failed = 0
            else:
                failed += 1
    except _Stopped:
        stopped = True
        if best is None:  # stopped before the first round: the L2 clusters as they are
            radii = solver.cluster_radius(centres, np.arange(count), labels)
            best = (float("nan"), centres, radii, np.full(count, np.nan), labels)

    err, centres, radii, sov, labels = best
    report(0.92)
    eps = cover_eps * float(np.linalg.norm(v.max(0) - v.min(0)))
    radii, tri_sphere, cover_stats = cover_surface(centres, radii, v, t, max(eps, 1e-12),
                                                   priority=sov)
    union_info: dict = {}
    if not stopped and union_attempts >= 0 and count > 1:
        # Union search (union_search.py): the variational error counts overlaps twice and
        # binds each ball to interior points; E_r is the union's, with the surface covered.
        report(0.93)
        n_surf = union_surface if union_surface is not None else int(
            np.clip(10_000 * count, 20_000, 300_000))
        S = union_search.surface_points(v, t, n_surf, rng)
        # About 4000 outside points per ball (the proxy's resolution per ball; each compass
        # step costs the points near one ball), at most 600 per triangle (a small mesh does
        # not need the resolution, and the search's time grows with the points per ball).
        n_out = union_outside if union_outside is not None else int(
            np.clip(min(4000 * count, 600 * len(t)), 20_000, 300_000))
        O, _ = union_search.outside_points(centres, radii, mesh, n_out, rng)

        def densify(c: np.ndarray, r: np.ndarray) -> np.ndarray:
            return uncovered_points(c, r, v, t, max(eps, 1e-12), union_gaps)

        try:
            c2, r2, union_info = union_search.search(
                centres, radii, S, O, attempts=union_attempts,
                max_failed=min(union_failed, 3 * count), densify=densify,
                densify_rounds=union_densify, pair_sweeps=union_pairs, check=solver.check_stop,
                progress=lambda f: report(0.93 + 0.04 * f))
            centres = c2
            radii, tri_sphere, cover_stats = cover_surface(c2, r2, v, t, max(eps, 1e-12),
                                                           priority=r2)
        except _Stopped:
            stopped = True
    polished = 0
    if not stopped and polish_rounds > 0 and not union_info:
        # Polish for the cover itself: each ball now only has to hold the cover's patches
        # assigned to it (corner sets; no interior samples), so refit its centre by the same
        # pattern search on those, cover again (which shrinks), and keep the result while
        # Σ SOV falls.
        old = float(solver.sov(centres, radii).sum())
        try:
            for _ in range(polish_rounds):  # loop over rounds
                F = cover_stats["_patches"]
                lab = np.empty(len(F), dtype=np.int64)
                step = max(1, (1 << 20) // count)
                for s0 in range(0, len(F), step):  # loop over memory chunks
                    lab[s0:s0 + step] = (_far_corner(F[s0:s0 + step], centres) - radii[None]).argmin(1)
                tsolver = _Solver(mesh, F, spacing, table_size, should_stop)
                c2, r2, s2 = tsolver.fit(centres, lab, search_steps)
                solver.sov_calls += tsolver.sov_calls
                r2, ts2, st2 = cover_surface(c2, r2, v, t, max(eps, 1e-12), priority=s2)
                new = float(solver.sov(c2, r2).sum())
                if new >= old:
                    break
                centres, radii, tri_sphere, cover_stats, old = c2, r2, ts2, st2, new
                polished += 1
        except _Stopped:
            stopped = True
    cover_stats = {k: val for k, val in cover_stats.items() if not k.startswith("_")}
    report(0.95)
    out, stderr = union_outside_volume_estimate(centres, radii, v, t, n_samples=e_r_samples,
                                                seed=seed, mesh=mesh)
    report(1.0)
    info = {
        "triangle_sphere": tri_sphere,
        "iterations": iterations,
        "teleports": teleports,
        "sum_sov": err,
        "sum_sov_history": history,
        "outside_volume_stderr": stderr,
        "samples": int(len(pts)),
        "sample_spacing": spacing,
        "sov_evaluations": solver.sov_calls,
        "stopped": stopped,
        "cover": cover_stats,
        "polish_rounds": polished,
        "union_search": union_info,
    }
    return SphereSet(centers=centres, radii=radii, outside_volume=out, mesh_volume=vol,
                     build_seconds=time.perf_counter() - t_start, info=info)
