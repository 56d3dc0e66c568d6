"""The flood fill of the variational assignment: the clustering units bucketed in a voxel
grid, walked breadth-first from the sample nearest each centre, one vectorized wave per
step (`Voxels.waves`)."""
from __future__ import annotations

import numpy as np


class Voxels:
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
