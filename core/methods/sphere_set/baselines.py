"""Two simple sphere-set builders, the baselines of the variational fit (issue 10).

Both group the triangles of the rest mesh, then bound each group by the exact minimal
ball of its triangles' vertices (`core.bounds.balls.minimal_balls`), so the union of the spheres
contains every triangle entirely (a triangle lies in a ball iff its three vertices do),
and `info["triangle_sphere"]` names, per triangle, the sphere that contains it.

* `top_down`: the leaves of a top-down split. The group whose vertices span the longest
  box diagonal is split at the median of its triangle centroids along the box's longest
  axis, until there are `count` groups.
* `grid_cover`: an octree over the box of the triangle centroids. The non-empty cell with
  the largest group is cut into its (non-empty) octants while that keeps the number of
  groups within `count`; budget left over (an octree split adds up to 7 groups at once)
  goes to median splits of the largest groups, as in `top_down`, so both baselines end
  with `count` spheres.

A mesh with fewer triangles than `count` gets one sphere per triangle. The outside volume
and the mesh volume are measured only when asked (`measure=True`), by
`core.methods.sphere_set.outside_volume` when it is available.
"""
from __future__ import annotations

import heapq
import time

import numpy as np

from ...bounds.balls import minimal_balls
from .types import SphereSet


def _check(vertices, triangles, count: int) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(vertices, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] == 0:
        raise ValueError(f"triangles must have shape (T, 3) with T >= 1, got {t.shape}")
    if t.min() < 0 or t.max() >= v.shape[0]:
        raise ValueError("triangle vertex index out of range")
    if int(count) < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    return v, t


def group_balls(vertices: np.ndarray, triangles: np.ndarray, group: np.ndarray,
                n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Minimal balls of the vertices of each group's triangles: (G, 3), (G,) float64.
    Every group must hold a triangle."""
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=n_groups) * 3
    if (counts == 0).any():
        raise ValueError("empty group")
    ptr = np.zeros(n_groups + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    pts = vertices[triangles[order].reshape(-1)]
    return minimal_balls(pts, ptr)


def _diagonal(vertices: np.ndarray, triangles: np.ndarray, tris: np.ndarray) -> float:
    p = vertices[triangles[tris].reshape(-1)]
    return float(np.linalg.norm(p.max(axis=0) - p.min(axis=0)))


def _median_split(centroids: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Halves of `tris` (≥ 2) at the median along the longest axis of their centroids."""
    c = centroids[tris]
    axis = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
    order = np.argsort(c[:, axis], kind="stable")
    k = tris.size // 2
    return tris[order[:k]], tris[order[k:]]


def _split_largest(vertices, triangles, centroids, groups: list[np.ndarray], count: int
                   ) -> list[np.ndarray]:
    """Median splits of the group with the longest vertex-box diagonal until `count`
    groups (or every group is one triangle)."""
    heap = [(-_diagonal(vertices, triangles, g), k, g) for k, g in enumerate(groups)]
    heapq.heapify(heap)
    done: list[np.ndarray] = []
    tick = len(groups)
    while heap and len(heap) + len(done) < count:
        _, _, g = heapq.heappop(heap)
        if g.size < 2:
            done.append(g)
            continue
        for h in _median_split(centroids, g):
            heapq.heappush(heap, (-_diagonal(vertices, triangles, h), tick, h))
            tick += 1
    return done + [g for _, _, g in heap]


def _finish(vertices, triangles, groups: list[np.ndarray], t0: float, method: str,
            measure: bool, n_samples: int, seed: int) -> SphereSet:
    T = triangles.shape[0]
    # Deterministic order: by the smallest triangle index of each group.
    groups = sorted(groups, key=lambda g: int(g.min()))
    tri_sphere = np.empty(T, dtype=np.int64)
    for k, g in enumerate(groups):
        tri_sphere[g] = k
    centers, radii = group_balls(vertices, triangles, tri_sphere, len(groups))
    out = SphereSet(centers, radii, info={"triangle_sphere": tri_sphere, "method": method})
    if measure:
        measure_set(out, vertices, triangles, n_samples=n_samples, seed=seed)
    out.build_seconds = time.perf_counter() - t0
    return out


def measure_set(s: SphereSet, vertices: np.ndarray, triangles: np.ndarray,
                n_samples: int = 200_000, seed: int = 0) -> SphereSet:
    """Fill `s.outside_volume` and `s.mesh_volume` with `core.methods.sphere_set.outside_volume`
    (left NaN when that module is not there). Returns `s`."""
    try:
        from . import outside_volume as ov
        from . import union_volume
    except ImportError:
        return s
    s.outside_volume = float(union_volume.union_outside_volume(s.centers, s.radii, vertices, triangles,
                                                     n_samples=n_samples, seed=seed))
    vol = getattr(ov, "mesh_volume", None)
    if vol is not None:
        s.mesh_volume = float(vol(vertices, triangles))
    return s


def top_down(vertices, triangles, count: int, seed: int = 0, measure: bool = False,
             n_samples: int = 200_000) -> SphereSet:
    """The leaves of a top-down minimal-ball split: `count` spheres (fewer only when the
    mesh has fewer triangles). Deterministic (`seed` is used only by `measure`)."""
    t0 = time.perf_counter()
    v, t = _check(vertices, triangles, count)
    centroids = v[t].mean(axis=1)
    groups = _split_largest(v, t, centroids, [np.arange(t.shape[0])], int(count))
    return _finish(v, t, groups, t0, "top-down", measure, n_samples, seed)


def grid_cover(vertices, triangles, count: int, seed: int = 0, measure: bool = False,
               n_samples: int = 200_000) -> SphereSet:
    """An octree cover of the triangle centroids' box with `count` spheres (fewer only
    when the mesh has fewer triangles): octants while they fit the budget, then median
    splits. Deterministic (`seed` is used only by `measure`)."""
    t0 = time.perf_counter()
    v, t = _check(vertices, triangles, count)
    count = int(count)
    centroids = v[t].mean(axis=1)
    lo, hi = centroids.min(axis=0), centroids.max(axis=0)
    size = float((hi - lo).max())
    lo = lo - 1e-9 * max(size, 1.0)
    side = (1.0 + 2e-9) * max(size, 1e-300)
    # Cells: (lo corner, side, triangles); the largest cell (by its group's diagonal) first.
    heap = [(-_diagonal(v, t, np.arange(t.shape[0])), 0, lo, side, np.arange(t.shape[0]))]
    final: list[np.ndarray] = []
    tick = 1
    while heap:
        n_groups = len(heap) + len(final)
        neg, k, corner, s, tris = heapq.heappop(heap)
        if tris.size < 2:
            final.append(tris)
            continue
        half = 0.5 * s
        octant = ((centroids[tris] - corner) >= half).astype(np.int64) @ np.array([1, 2, 4])
        kids = [tris[octant == o] for o in range(8)]
        kids = [(o, g) for o, g in enumerate(kids) if g.size]
        if n_groups - 1 + len(kids) > count or half <= 0.0 or (len(kids) == 1 and half < 1e-12 * side):
            final.append(tris)      # does not fit the budget (or cannot be cut further)
            continue
        for o, g in kids:
            c = corner + half * np.array([o & 1, o >> 1 & 1, o >> 2 & 1], dtype=np.float64)
            heapq.heappush(heap, (-_diagonal(v, t, g), tick, c, half, g))
            tick += 1
    groups = _split_largest(v, t, centroids, final, count)
    return _finish(v, t, groups, t0, "grid", measure, n_samples, seed)


BUILDERS = {"top-down": top_down, "grid": grid_cover}
