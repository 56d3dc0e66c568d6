"""A small bounding-volume method defined outside the package, as a studio would add one:
the triangles cut into runs of `leaf_size` (in index order), one leaf per run under a
single root, each volume the ball around the box of its triangles at the frame (from the
evaluated positions, so exact for any deformation). Used by tests/blender/test_new_method.py
to show that a method is one class plus `registry.register`."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from skin_collide.core.methods.base import Method
from skin_collide.core.rig import Rig
from skin_collide.core.types import Frame, Hierarchy, LazySphereVolumes


@dataclass
class RunData:
    """leaf_size: () int64; run_ptr: (L + 1,) int64 the runs' first triangles."""

    leaf_size: np.ndarray
    run_ptr: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {"leaf_size": self.leaf_size, "run_ptr": self.run_ptr}

    @property
    def hierarchy(self) -> Hierarchy:
        L = self.run_ptr.size - 1
        first = np.full(L + 1, -1, np.int32)
        count = np.zeros(L + 1, np.int32)
        first[0], count[0] = 1, L
        leaf_ptr = np.concatenate([[0], self.run_ptr]).astype(np.int64)
        return Hierarchy(first, count, leaf_ptr,
                         np.arange(int(self.run_ptr[-1]), dtype=np.int64))


class TriangleRuns(Method):
    id = "test-triangle-runs"
    label = "Triangle runs (a test's own method)"
    description = "Runs of triangles in index order, balls around their boxes at each frame"
    fallback = None
    options = {"leaf_size": 8}

    def supports(self, rig: Rig) -> str | None:
        return None if rig.n_triangles else "no triangles"

    def prepare(self, rig: Rig, leaf_size: int = 8) -> RunData:
        T = rig.n_triangles
        ptr = np.minimum(np.arange(0, T + leaf_size, leaf_size), T)
        return RunData(np.array(leaf_size, np.int64), np.unique(ptr).astype(np.int64))

    def load(self, arrays: dict[str, np.ndarray]) -> RunData:
        return RunData(np.asarray(arrays["leaf_size"]), np.asarray(arrays["run_ptr"]))

    def built_options(self, prepared: RunData) -> dict[str, object]:
        return {"leaf_size": int(prepared.leaf_size)}

    def summary(self, prepared: RunData) -> str:
        return f"{prepared.run_ptr.size - 1} runs"

    def volumes(self, rig: Rig, prepared: RunData, frame: Frame) -> LazySphereVolumes:
        P = np.asarray(frame.positions, np.float64)[frame.triangles]      # (T, 3, 3)
        lo, hi = P.min(axis=1), P.max(axis=1)
        starts = prepared.run_ptr[:-1]
        lo = np.concatenate([lo.min(axis=0, keepdims=True), np.minimum.reduceat(lo, starts)])
        hi = np.concatenate([hi.max(axis=0, keepdims=True), np.maximum.reduceat(hi, starts)])
        centers = 0.5 * (lo + hi)
        # Half the diagonal, grown by more than its rounding: the ball holds the box.
        scale = np.abs(P).max(initial=1.0)
        radii = 0.5 * np.linalg.norm(hi - lo, axis=1) * (1 + 1e-12) + 1e-12 * scale
        return LazySphereVolumes(prepared.hierarchy, eager=(centers, radii), method_id=self.id)
