"""The result of building a sphere set, in the mesh's rest-pose local coordinates."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class SphereSet:
    """N spheres whose union contains every triangle of the rest mesh.

    Attributes:
        centers: (N, 3) float64 sphere centres (mesh data coordinates, rest pose).
        radii: (N,) float64 radii.
        outside_volume: volume of the union of the spheres outside the mesh (same units³).
        mesh_volume: volume enclosed by the mesh (by the generalized winding number).
        build_seconds: wall time of the build.
        info: free-form measurements of the builder (iterations, teleports, ...).
    """

    centers: np.ndarray
    radii: np.ndarray
    outside_volume: float = float("nan")
    mesh_volume: float = float("nan")
    build_seconds: float = 0.0
    info: dict = field(default_factory=dict)

    @property
    def count(self) -> int:
        return int(self.radii.shape[0])

    @property
    def relative_outside_volume(self) -> float:
        """E_r = outside volume / mesh volume (the paper's quality measure).

        A mesh without volume (flat, a single triangle; mesh_volume 0) gives inf when
        the union has outside volume and nan when it has none (0/0); never raises."""
        out, vol = float(self.outside_volume), float(self.mesh_volume)
        if vol == 0.0:
            return float("nan") if out == 0.0 or out != out else float("inf")
        return out / vol
