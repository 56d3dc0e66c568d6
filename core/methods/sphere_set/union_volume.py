"""The volume of a union of balls that lies outside a mesh (the sphere sets' E_r, Wang et
al. 2006): a stratified estimate with its standard error, and the value the baselines
report. Inside/outside comes from `outside_volume.classify_inside` (winding numbers)."""
from __future__ import annotations

import numpy as np

from .outside_volume import PreparedMesh, classify_inside, prepare_mesh


def union_outside_volume_estimate(centers: np.ndarray, radii: np.ndarray, vertices: np.ndarray,
                                  triangles: np.ndarray, n_samples: int = 100_000, seed: int = 0,
                                  mesh: PreparedMesh | None = None) -> tuple[float, float]:
    """Volume of the union of balls lying outside the mesh, with its standard error.

    Estimator: a jittered (stratified) grid of about `n_samples` points over the union's
    bounding box, one uniform point per cell. Each point inside the union and outside the
    mesh (fast winding number <= 0.5) counts one cell volume. Stratification makes the
    estimate unbiased with variance no larger than plain Monte Carlo's, so the returned
    standard error sqrt(p (1 - p) / n) * V_box (p = fraction counted) is a conservative bound;
    in practice only the cells cut by the surfaces contribute variance. Inside/outside comes
    from `classify_inside` (exact winding number near the surface, one per empty cube of 4
    cells elsewhere).

    Returns:
        (volume, stderr) floats.
    """
    centers = np.asarray(centers, dtype=np.float64).reshape(-1, 3)
    radii = np.asarray(radii, dtype=np.float64).reshape(-1)
    if len(centers) == 0:
        return 0.0, 0.0
    if mesh is None:
        mesh = prepare_mesh(vertices, triangles)
    lo = (centers - radii[:, None]).min(0)
    hi = (centers + radii[:, None]).max(0)
    ext = np.maximum(hi - lo, 1e-12)
    box = float(np.prod(ext))
    cell = (box / n_samples) ** (1.0 / 3.0)
    dims = np.maximum(np.ceil(ext / cell).astype(np.int64), 1)
    n = int(np.prod(dims))
    cell_vol = box / n
    rng = np.random.default_rng(seed)
    counted = 0
    chunk = 1 << 18
    for s in range(0, n, chunk):  # loop over memory chunks
        idx = np.arange(s, min(n, s + chunk))
        ijk = np.stack(np.unravel_index(idx, dims), axis=1)
        p = lo + (ijk + rng.random((len(idx), 3))) * (ext / dims)
        in_union = _in_union(p, centers, radii)
        q = p[in_union]
        if len(q):
            counted += int(np.count_nonzero(~classify_inside(q, mesh, 4.0 * cell)))
    frac = counted / n
    return counted * cell_vol, float(np.sqrt(frac * (1.0 - frac) / n) * box)


def _in_union(p: np.ndarray, centers: np.ndarray, radii: np.ndarray, chunk: int = 1 << 22) -> np.ndarray:
    """(P,) bool: point inside at least one ball."""
    out = np.zeros(len(p), dtype=bool)
    step = max(1, chunk // max(1, len(centers)))
    r2 = radii * radii
    for s in range(0, len(p), step):  # loop over memory chunks
        d = p[s:s + step, None, :] - centers[None]
        out[s:s + step] = ((d * d).sum(-1) <= r2[None]).any(1)
    return out


def union_outside_volume(centers: np.ndarray, radii: np.ndarray, vertices: np.ndarray,
                         triangles: np.ndarray, n_samples: int = 100_000, seed: int = 0) -> float:
    """Volume (float) of the union of the balls ((N, 3) centres, (N,) radii) outside the mesh
    ((V, 3), (T, 3)); see `union_outside_volume_estimate` for the estimator and its error.
    E_r = union_outside_volume / mesh_volume is the quality measure of issue 10."""
    return union_outside_volume_estimate(centers, radii, vertices, triangles, n_samples, seed)[0]
