"""Per-frame OBBs: leaf boxes from the bone matrices, parents by CAB (Schmidl, Walker &
Lin 2004) or the paper's baselines, and the separating-axis box-box test.

Boxes are (centre (n, 3), axes (n, 3, 3) rows orthonormal, half extents (n, 3)), world
space, float64. Derivations and the soundness argument: docs/obb_cab.md.
"""
from __future__ import annotations

import numpy as np

from ...bounds import refit
from ...rig import Pose
from .build import ObbData

#: |â1 · â2| above this: the children's major axes are parallel (CAB's special case).
PARALLEL = 1.0 - 1e-5
#: Relative slack of the separating-axis test (outward: a box pair this close is kept).
SAT_EPS = 1e-9
UPDATES = ("cab", "covariance", "aabb")


def leaf_boxes_lbs(data: ObbData, pose: Pose) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every leaf's box at this pose, enclosing the LBS of its vertices and Blender's
    float32 evaluation of them (docs/obb_cab.md, "Leaf boxes"). (L, 3), (L, 3, 3), (L, 3)."""
    C = pose.skinning_matrices()[:, :3, :]
    sigma = np.linalg.svd(C[:, :, :3], compute_uv=False)[:, 0]
    ptr = data.pair_ptr
    seg = np.repeat(np.arange(data.n_leaves), np.diff(ptr))
    Cj = C[data.pair_joint]                                        # (P, 3, 4)
    Cw = np.add.reduceat(data.pair_mean[:, None, None] * Cj, ptr[:-1], axis=0)   # (L, 3, 4)
    c = data.box_center
    moved_j = np.einsum("pik,pk->pi", Cj[:, :, :3], c[seg]) + Cj[:, :, 3]
    center = np.einsum("lik,lk->li", Cw[:, :, :3], c) + Cw[:, :, 3]
    spread = np.linalg.norm(moved_j - center[seg], axis=1)
    # Σ_j (w_j − ŵ_j) L_j (v − c) = Σ_j (w_j − ŵ_j)(L_j − L_ŵ)(v − c): bounded by
    # r Σ δ_j σ_j and by r Σ δ_j ‖L_j − L_ŵ‖ (zero at rest); the smaller one is used.
    diff = np.linalg.svd(Cj[:, :, :3] - Cw[seg, :, :3], compute_uv=False)[:, 0]
    d = data.pair_delta
    lin = np.minimum(np.add.reduceat(d * sigma[data.pair_joint], ptr[:-1]),
                     np.add.reduceat(d * diff, ptr[:-1]))
    delta = np.add.reduceat(d * spread, ptr[:-1]) + data.ball_radius * lin
    M = Cw[:, :, :3] @ np.swapaxes(data.box_axes, 1, 2)           # columns: L a_k
    Q, _ = np.linalg.qr(M)                                         # orthonormal even if M is singular
    axes = np.swapaxes(Q, 1, 2)
    extent = np.einsum("lik,lk->li", np.abs(axes @ M), data.box_extent)
    slope, offset = refit.float32_margin(pose, data)
    extent += (delta + slope * data.local_extent + offset)[:, None]
    return center, axes, extent


def leaf_boxes_from_positions(data: ObbData, positions: np.ndarray
                              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every leaf's box fitted to the evaluated positions on its rest axes (exact for any
    deformation; used when the pose is unknown)."""
    axes = data.box_axes
    verts = data.leaf_verts
    seg = np.repeat(np.arange(data.n_leaves), np.diff(data.leaf_vert_ptr))
    proj = np.einsum("vij,vj->vi", axes[seg], positions[verts])
    lo = np.minimum.reduceat(proj, data.leaf_vert_ptr[:-1], axis=0)
    hi = np.maximum.reduceat(proj, data.leaf_vert_ptr[:-1], axis=0)
    center = np.einsum("lij,li->lj", axes, 0.5 * (lo + hi))
    return center, axes.copy(), 0.5 * (hi - lo)


def project(axes: np.ndarray, center: np.ndarray, box_axes: np.ndarray, box_ext: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """Interval of box (center, box_axes, box_ext) on each row of `axes` (n, 3, 3):
    (lo, hi) (n, 3)."""
    mid = np.einsum("nij,nj->ni", axes, center)
    half = np.einsum("nik,nk->ni", np.abs(axes @ np.swapaxes(box_axes, 1, 2)), box_ext)
    return mid - half, mid + half


def _enclose(axes, c1, a1, e1, c2, a2, e2):
    """The box on `axes` (n, 3, 3) enclosing both child boxes: centre, extents."""
    n = axes.shape[0]
    ax2 = np.concatenate([axes, axes])
    lo, hi = project(ax2, np.concatenate([c1, c2]), np.concatenate([a1, a2]),
                     np.concatenate([e1, e2]))
    lo, hi = np.minimum(lo[:n], lo[n:]), np.maximum(hi[:n], hi[n:])
    return np.einsum("nij,ni->nj", axes, 0.5 * (lo + hi)), 0.5 * (hi - lo)


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


_BITS = np.array([[k & 1, k >> 1 & 1, k >> 2 & 1] for k in range(8)], float) * 2 - 1


def corners(center: np.ndarray, axes: np.ndarray, extent: np.ndarray) -> np.ndarray:
    """(n, 8, 3) corners, corner k at bits (k & 1, k >> 1 & 1, k >> 2 & 1) of the axes."""
    return center[:, None, :] + (_BITS[None] * extent[:, None, :]) @ axes


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cross product of (n, 3) arrays (np.cross's overhead dominates at n ~ 10)."""
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=1)


def cab_axes(joint, c1, a1, e1, c2, a2, e2) -> np.ndarray:
    """CAB's parent axes (n, 3, 3) rows from the children's boxes and the joint (n, 3)."""
    r = np.arange(c1.shape[0])
    k1, k2 = e1.argmax(axis=1), e2.argmax(axis=1)
    l1, l2 = e1[r, k1], e2[r, k2]
    m1 = a1[r, k1] * l1[:, None]                       # major axes, |m| = half length
    m2 = a2[r, k2] * l2[:, None]
    # Point each major axis away from the joint.
    m1 *= np.where(((c1 - joint) * m1).sum(axis=1) < 0, -1.0, 1.0)[:, None]
    m2 *= np.where(((c2 - joint) * m2).sum(axis=1) < 0, -1.0, 1.0)[:, None]
    E = m1 - m2
    lE = np.sqrt((E * E).sum(axis=1))
    A1 = np.where((l1 >= l2)[:, None], m1, m2)
    lA = np.maximum(l1, l2)
    longer = lE > lA
    A1 = np.where(longer[:, None], E, A1) / np.where(longer, lE, np.where(lA > 0, lA, 1.0))[:, None]
    A2 = _cross(m1, m2)
    l12 = np.sqrt((A2 * A2).sum(axis=1))
    # Parallel: |sin| < sqrt(1 - PARALLEL^2) ⇔ |cos| > PARALLEL.
    par = l12 <= np.sqrt(1.0 - PARALLEL ** 2) * l1 * l2
    A2 /= np.where(par, 1.0, l12)[:, None]
    axes = np.stack([A1, A2, _cross(A1, A2)], axis=1)
    if par.any():
        axes[par] = np.where((l1 >= l2)[par, None, None], a1[par], a2[par])
    return axes


def covariance_axes(c1, a1, e1, c2, a2, e2) -> np.ndarray:
    """The covariance baseline: principal axes of the children's 16 corners."""
    pts = np.concatenate([corners(c1, a1, e1), corners(c2, a2, e2)], axis=1)
    d = pts - pts.mean(axis=1, keepdims=True)
    _, vec = np.linalg.eigh(np.einsum("nki,nkj->nij", d, d))
    return np.swapaxes(vec[:, :, ::-1], 1, 2).copy()


def update_tree(data: ObbData, leaf: tuple[np.ndarray, np.ndarray, np.ndarray],
                pose: Pose | None, how: str = "cab"
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All node boxes (N, 3), (N, 3, 3), (N, 3) from the leaf boxes, bottom-up, one
    vectorized step per tree level; `how` is "cab", "covariance" or "aabb" (AABB*)."""
    if how not in UPDATES:
        raise ValueError(f"unknown OBB update '{how}' (known: {', '.join(UPDATES)})")
    N = data.first_child.shape[0]
    center = np.zeros((N, 3))
    axes = np.zeros((N, 3, 3))
    extent = np.zeros((N, 3))
    is_leaf = data.node_leaf >= 0
    lc, la, le = leaf
    center[is_leaf] = lc[data.node_leaf[is_leaf]]
    axes[is_leaf] = la[data.node_leaf[is_leaf]]
    extent[is_leaf] = le[data.node_leaf[is_leaf]]
    if pose is not None and how == "cab":
        heads = np.concatenate([data.joint_rest[:-1, :, 3], [[0, 0, 0, 1.0]]], axis=0)
        joint_world = np.einsum("ij,bjk,bk->bi", pose.armature_world,
                                pose.deform_with_static(), heads)[:, :3]
    for nodes, f in data.levels:
        c1, a1, e1 = center[f], axes[f], extent[f]
        c2, a2, e2 = center[f + 1], axes[f + 1], extent[f + 1]
        if how == "aabb":
            ax = np.broadcast_to(np.eye(3), (nodes.size, 3, 3)).copy()
        elif how == "covariance":
            ax = covariance_axes(c1, a1, e1, c2, a2, e2)
        else:
            j = data.node_joint[nodes]
            joint = 0.5 * (c1 + c2)
            if pose is not None:
                joint = np.where((j >= 0)[:, None], joint_world[np.maximum(j, 0)], joint)
            ax = cab_axes(joint, c1, a1, e1, c2, a2, e2)
        center[nodes], extent[nodes] = _enclose(ax, c1, a1, e1, c2, a2, e2)
        axes[nodes] = ax
    return center, axes, extent


def obb_overlap(ca, aa, ea, cb, ab, eb) -> np.ndarray:
    """(n,) bool: may box a[k] and box b[k] meet? The 15-axis separating-axis test, with
    a relative slack outward so that parallel edges and rounding never separate boxes
    that touch (docs/obb_cab.md, "Box-box test")."""
    R = aa @ np.swapaxes(ab, 1, 2)                       # R[i, j] = A_i · B_j
    absR = np.abs(R) + SAT_EPS
    t = np.einsum("nij,nj->ni", aa, cb - ca)            # centre offset in a's frame
    scale = np.abs(t).sum(axis=1) + ea.sum(axis=1) + eb.sum(axis=1)
    slack = SAT_EPS * scale
    # Axes A_i.
    sep = (np.abs(t) > ea + np.einsum("nij,nj->ni", absR, eb) + slack[:, None]).any(axis=1)
    # Axes B_j.
    tb = np.einsum("nij,ni->nj", R, t)
    sep |= (np.abs(tb) > eb + np.einsum("nij,ni->nj", absR, ea) + slack[:, None]).any(axis=1)
    # Axes A_i × B_j.
    for i in range(3):
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            lhs = np.abs(t[:, i2] * R[:, i1, j] - t[:, i1] * R[:, i2, j])
            rhs = (ea[:, i1] * absR[:, i2, j] + ea[:, i2] * absR[:, i1, j]
                   + eb[:, j1] * absR[:, i, j2] + eb[:, j2] * absR[:, i, j1])
            sep |= lhs > rhs + slack
    return ~sep
