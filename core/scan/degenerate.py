"""Poses that collapse space (a bone or a prop scaled to (almost) zero): such a frame is not
checked, because every squashed triangle touches every other one (MakeHuman with spine03
at scale 0: 2.1 million triangle pairs; Blender's own BVHTree took 29-58 s for that
frame, `python -m bench degenerate`).

`collapsed_bones` decomposes only the matrices that changed since its last call: the
verdicts of the last call are passed in and returned (`Collapse`), never kept on the
objects.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cache import derived
from ..rig import Pose, Rig


@dataclass(frozen=True)
class Collapse:
    """The last call's deform matrices of the weighted bones, (n, 3, 3) float64, their
    verdicts (n,) bool, and the tolerance they were judged at."""

    matrices: np.ndarray
    bad: np.ndarray
    tol: float


def weighted_bones(rig: Rig) -> np.ndarray:
    """(J,) bool the bones that weight the mesh (made once per rig)."""
    def make() -> np.ndarray:
        used = np.zeros(rig.n_bones, dtype=bool)
        if rig.weight_bone.size:
            used[np.unique(rig.weight_bone)] = True
        return used

    return derived(rig, "weighted_bones", make)


def collapsed_bones(rig: Rig, pose: Pose, last: Collapse | None = None, tol: float = 1e-3
                    ) -> tuple[list[str], Collapse | None]:
    """The deform bones weighting the mesh whose pose matrix (nearly) collapses space (a
    singular value at most `tol`, relative to the rest pose, which is 1): they squash skin
    to a point, a line, a plane or a millimetre-sized blob. For a rigid prop: its world
    matrix, when it is scaled to zero or one axis is at most `tol` of the largest.
    Returns the names (or the prop's reason) and what the next call takes as `last`."""
    if rig.is_rigid:
        # A prop scaled to zero (a common way to hide one) or flattened: its world matrix
        # collapses space (no rest scale to compare with: relative to its largest axis).
        sv = np.linalg.svd(pose.mesh_world[:3, :3], compute_uv=False)
        if not np.isfinite(sv).all() or sv[0] == 0.0 or sv[2] <= tol * (1 + 1e-6) * sv[0]:
            return ["its world matrix (the prop is scaled to (almost) zero)"], last
        return [], last
    used = weighted_bones(rig)
    if not used.any() or pose.deform.shape[0] != rig.n_bones:
        return [], last
    m = pose.deform[used, :3, :3]
    # Only the matrices that changed since the last call are decomposed again (a pose
    # edit changes a few bones); the verdict of a matrix depends on it alone.
    if last is not None and last.matrices.shape == m.shape and last.tol == tol:
        changed = (m != last.matrices).reshape(len(m), 9).any(axis=1)
        bad = last.bad.copy()
    else:
        changed = np.ones(len(m), dtype=bool)
        bad = np.zeros(len(m), dtype=bool)
    if changed.any():
        _judge(m, np.flatnonzero(changed), bad, tol)
    names = np.array(rig.bone_names, dtype=object)[used]
    return [str(n) for n in names[bad]], Collapse(m.copy(), bad, tol)


def _judge(m: np.ndarray, idx: np.ndarray, bad: np.ndarray, tol: float) -> None:
    """The verdicts of matrices `m[idx]` (n, 3, 3) written into `bad`, in place."""
    finite = np.isfinite(m[idx]).reshape(idx.size, 9).all(axis=1)
    bad[idx[~finite]] = True             # NaN or infinite: no decomposition exists
    idx = idx[finite]
    bad[idx] = False
    # Blender hands the matrices over in float32: allow its rounding at the threshold.
    at = tol * (1 + 1e-6)
    # sigma_min = |det| / (sigma_1 sigma_2) >= 2 |det| / |m|_F^2 (sigma_1 sigma_2 is at
    # most half the sum of their squares): a matrix with |det| > 2 at |m|_F^2 has
    # sigma_min > 4 at, proved sound without a decomposition; the margin dwarfs the
    # rounding of det and |m|_F below |m|_F^2 = 1e20 (beyond it, the SVD decides).
    # Playback turns every bone, and a batched SVD of all of them cost 0.4 ms a frame on
    # MakeHuman.
    mi = m[idx]
    fro2 = np.einsum("kij,kij->k", mi, mi)
    with np.errstate(over="ignore", invalid="ignore"):
        sound = (np.abs(np.linalg.det(mi)) > 2.0 * at * fro2) & (fro2 < 1e20)
    idx = idx[~sound]
    if idx.size:
        sv = np.linalg.svd(m[idx], compute_uv=False)        # (c, 3), descending
        bad[idx] = sv[:, 2] <= at
