"""The variational fit's starting point: its clustering units (interior grid points,
area-weighted surface samples, optionally the vertices and the paper's edge midpoints and
triangle centroids) and the first centres (k-means++ seeding, then a few L2 Lloyd steps),
with the nearest-centre labelling both use."""
from __future__ import annotations

import numpy as np

from .outside_volume import PreparedMesh, classify_inside, random_surface_points


def sample_units(mesh: PreparedMesh, volume: float, n_interior: int, n_surface: int,
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


def kmeans_init(points: np.ndarray, count: int, rng: np.random.Generator,
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
        lab = nearest(points, centres)
        cnt = np.bincount(lab, minlength=count)
        sums = np.stack([np.bincount(lab, weights=points[:, k], minlength=count) for k in range(3)], 1)
        ok = cnt > 0
        centres[ok] = sums[ok] / cnt[ok, None]
    return centres


def nearest(points: np.ndarray, centres: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """(n,) int64 index of the nearest centre of each point."""
    out = np.empty(len(points), dtype=np.int64)
    step = max(1, chunk // max(1, len(centres)))
    for s in range(0, len(points), step):  # loop over memory chunks
        d = ((points[s:s + step, None, :] - centres[None]) ** 2).sum(-1)
        out[s:s + step] = d.argmin(1)
    return out
