"""The variational fit's final pass: `cover_surface` grows the spheres until their union
provably contains every triangle (adaptive midpoint patches, each held by one ball at a
known covering radius), then shrinks each ball to what it alone holds;
`uncovered_points` finds the surface points outside a union by the same subdivision
without growth (the gaps the union search densifies at).

Python loops run over subdivision levels, memory chunks and (in the shrink) balls, each
step vectorized over patches.
"""
from __future__ import annotations

import numpy as np


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
        far = far_corner(P, c)  # (m, N) radius ball j needs to hold the patch
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
            need = far_corner(F[s:s + step], c)
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
        P = P[~(far_corner(P, c) <= r[None]).any(1)]
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


def far_corner(P: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(m, N) the farthest corner of each triangle P (m, 3, 3) from each centre: the
    radius ball j needs to hold triangle i (a ball is convex)."""
    out = np.empty((len(P), len(centres)))
    step = max(1, (1 << 21) // max(1, len(centres)))
    for s in range(0, len(P), step):  # loop over memory chunks
        q = P[s:s + step]
        out[s:s + step] = np.maximum(np.maximum(_dist(q[:, 0], centres), _dist(q[:, 1], centres)),
                                     _dist(q[:, 2], centres))
    return out
