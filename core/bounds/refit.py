"""Refitting sphere trees to a deformed pose.

* On demand, for linear blend skinning (Kavan & Žára 2005): a node's refitted sphere
  depends only on the skinning matrices C_j and per-node data precomputed at rest: its
  rest sphere (c, r) and the corners r_i of its weight polytopes. For each corner
  ``R_i = (Σ_j r_ij C_j c,  r · Σ_j r_ij σ_j)``, and the node's sphere is the approximate
  ball of all R_i (centre = mean of the R_i centres). Blender's bone matrices are affine,
  not rigid, so σ_j, the largest singular value of C_j's linear part, scales the radius:
  |A_j (v − c)| ≤ σ_j |v − c| ≤ σ_j r keeps the convex-combination argument of the paper
  intact (proof in docs/refit_bounds.md).
* Bottom-up, from the evaluated positions (the baseline and the fallback for deformations
  the LBS bound does not cover): leaves enclose their triangle, inner nodes the spheres of
  their children, deepest level first.
* Exact: the minimal ball of each node's deformed vertices (the "best possible" column of
  the paper's Table 2; too slow per frame, used by the benchmark).

The on-demand refit's rest data (`LbsBounds`, built by `lbs_bounds`) is in `lbs_data`, its
float32 margin (`float32_margin`) in `float32_rounding`; both are importable from here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..rig import Pose
from .balls import approx_balls_of_spheres, minimal_balls
from .float32_rounding import float32_margin
from .lbs_data import CORNER_ENTRY_LIMIT, LbsBounds, lbs_bounds
from .sphere_tree import SphereTree

# Re-exported: callers build and type the rest data and take the margin from here.
__all__ = ["CORNER_ENTRY_LIMIT", "FrameTransforms", "LbsBounds", "corner_spheres", "expand_csr",
           "float32_margin", "frame_transforms", "lbs_bounds", "leaf_spheres", "mean_weight_spheres",
           "refit_bottom_up", "refit_exact", "refit_on_demand"]


@dataclass
class FrameTransforms:
    """A frame's skinning matrices in the form the refit uses.

    Attributes:
        matrices: (J + 1, 3, 4) float64 C_j (row J: the static joint, i.e. the mesh's
            world matrix), mapping mesh-local rest positions to world space.
        sigma: (J + 1,) float64 largest singular value of each C_j[:, :3].
        pose: the frame's `Pose` (the float32 margin is computed from it on first use).
    """

    matrices: np.ndarray
    sigma: np.ndarray
    pose: Pose
    _margin: tuple | None = None

    def float32_margin(self, bounds: LbsBounds) -> tuple[float, float]:
        """(slope, offset): Blender's float32 vertices lie within
        ``slope · local_extent + offset`` of the exact LBS of the node (world units)."""
        if self._margin is None or self._margin[0] is not bounds:
            self._margin = (bounds, float32_margin(self.pose, bounds, self.sigma))
        return self._margin[1]


def frame_transforms(pose: Pose, tree: SphereTree) -> FrameTransforms:
    """Skinning matrices and their spectral norms for one frame."""
    C = pose.skinning_matrices()[:, :3, :]
    sigma = np.linalg.svd(C[:, :, :3], compute_uv=False)[:, 0]
    return FrameTransforms(C, sigma, pose)


def expand_csr(ptr: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of `nodes` in a CSR: (rows, segment of each row, segment offsets)."""
    counts = ptr[nodes + 1] - ptr[nodes]
    seg_ptr = np.zeros(nodes.size + 1, dtype=np.int64)
    np.cumsum(counts, out=seg_ptr[1:])
    seg = np.repeat(np.arange(nodes.size), counts)
    rows = ptr[nodes][seg] + (np.arange(seg_ptr[-1]) - seg_ptr[seg])
    return rows, seg, seg_ptr


def _joint_moves(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                 nodes: np.ndarray):
    """The node centres moved by each of their joints: per (node, joint) pair, C_j c (P, 3)
    and σ_j (P,), with the pairs' node segment (P,) and CSR offsets (n + 1,)."""
    pj, pj_seg, pj_ptr = expand_csr(bounds.joint_ptr, nodes)
    j = bounds.node_joint[pj]
    M = frame.matrices[j]
    moved = np.einsum("eij,ej->ei", M[:, :, :3], tree.centers[nodes][pj_seg]) + M[:, :, 3]
    return pj, pj_seg, pj_ptr, moved, frame.sigma[j]


def mean_weight_spheres(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                        nodes: np.ndarray, moves=None) -> tuple[np.ndarray, np.ndarray]:
    """The mean-weight bound (with the hull bound on the same centre) of `nodes`:
    centres (n, 3), radii (n,) float64, without the float32 margin."""
    pj, pj_seg, pj_ptr, moved, sig = moves or _joint_moves(tree, bounds, frame, nodes)
    r0 = tree.radii[nodes]
    centers = np.add.reduceat(bounds.mean_weight[pj][:, None] * moved, pj_ptr[:-1], axis=0)
    spread = np.linalg.norm(moved - centers[pj_seg], axis=1)
    radii = (r0 * np.maximum.reduceat(sig, pj_ptr[:-1])
             + np.add.reduceat(bounds.delta[pj] * spread, pj_ptr[:-1]))
    # Any convex combination of the joints' transformed spheres lies in their hull
    # (the paper's Eq. 2), which is tighter than the sum above when a node has many joints.
    radii = np.minimum(radii, np.maximum.reduceat(spread + sig * r0[pj_seg], pj_ptr[:-1]))
    return centers, radii


def corner_spheres(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                   nodes: np.ndarray, moves=None) -> tuple[np.ndarray, np.ndarray]:
    """The paper's corner bound of `nodes` (all must have corners): each corner row is a
    convex combination of its joints' transformed spheres, and the approximate ball of
    those encloses the node. Centres (n, 3), radii (n,) float64, without the margin."""
    pj, pj_seg, pj_ptr, moved, sig = moves or _joint_moves(tree, bounds, frame, nodes)
    rows, row_seg, row_ptr = expand_csr(bounds.corner_ptr, nodes)
    ents, ent_seg, ent_ptr = expand_csr(bounds.entry_ptr, rows)
    w = bounds.entry_weight[ents]
    k = pj_ptr[:-1][row_seg[ent_seg]] + bounds.entry_slot[ents]
    rc = np.add.reduceat(w[:, None] * moved[k], ent_ptr[:-1], axis=0)
    rr = tree.radii[nodes][row_seg] * np.add.reduceat(w * sig[k], ent_ptr[:-1])
    return approx_balls_of_spheres(rc, rr, row_ptr)


def refit_on_demand(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                    nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refitted world-space spheres of `nodes` under LBS (the smaller of the two bounds).

    Args:
        tree: the rest-pose tree; bounds: its `LbsBounds`; frame: the frame's transforms.
        nodes: (n,) int64 node indices.
    Returns:
        centers (n, 3) float64 and radii (n,) float64, each enclosing every deformed
        vertex of its node.
    """
    if nodes.size == 0:
        return np.zeros((0, 3)), np.zeros(0)
    moves = _joint_moves(tree, bounds, frame, nodes)
    centers, radii = mean_weight_spheres(tree, bounds, frame, nodes, moves)
    sub = np.nonzero(bounds.corner_ptr[nodes + 1] > bounds.corner_ptr[nodes])[0]
    if sub.size:
        pj, pj_seg, pj_ptr, moved, sig = moves
        # Re-slice the (node, joint) pairs of the nodes that carry corners.
        take, take_seg, take_ptr = expand_csr(pj_ptr, sub)
        sub_moves = (pj[take], take_seg, take_ptr, moved[take], sig[take])
        cc, cr = corner_spheres(tree, bounds, frame, nodes[sub], sub_moves)
        better = cr < radii[sub]
        centers[sub[better]] = cc[better]
        radii[sub[better]] = cr[better]
    slope, offset = frame.float32_margin(bounds)
    return centers, radii + (slope * bounds.local_extent[nodes] + offset)


def leaf_spheres(tree: SphereTree, triangles: np.ndarray, positions: np.ndarray,
                 nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimal balls of the deformed triangles of leaf `nodes`: exact and cheaper than any
    bound. (n, 3), (n,) float64. `triangles` (T, 3) are the FRAME's triangles (Blender
    re-splits quads per frame, `core.geometry.triangulation`).

    A triangle's minimal ball is its circumscribed ball when it is acute, else the ball on
    its longest edge (also for degenerate triangles).
    """
    p = positions[triangles[tree.leaf_tri[nodes]]]                 # (n, 3, 3)
    a, b, c = p[:, 0], p[:, 1], p[:, 2]
    u, v = b - a, c - a
    w = _cross3(u, v)
    ww = np.einsum("ij,ij->i", w, w)
    uu, vv = np.einsum("ij,ij->i", u, u), np.einsum("ij,ij->i", v, v)
    bc = c - b
    ee = np.einsum("ij,ij->i", bc, bc)
    # The longest edge (the first of ab, bc, ca on ties) and its midpoint.
    on_ab = (uu >= ee) & (uu >= vv)
    on_bc = ~on_ab & (ee >= vv)
    top = np.where(on_ab, uu, np.where(on_bc, ee, vv))
    mid = 0.5 * np.where(on_ab[:, None], a + b, np.where(on_bc[:, None], b + c, c + a))
    with np.errstate(divide="ignore", invalid="ignore"):
        circ = a + (uu[:, None] * _cross3(v, w) + vv[:, None] * _cross3(w, u)) / (2 * ww[:, None])
    # Obtuse (longest edge² ≥ sum of the others) or degenerate: the longest edge's ball.
    obtuse = 2 * top >= (uu + ee) + vv
    centers = np.where((obtuse | ~np.isfinite(circ).all(axis=1))[:, None], mid, circ)
    # Radius: the largest centre-vertex distance (sqrt is monotonic: the max of the
    # squares, summed in the order of `np.linalg.norm`).
    d = p - centers[:, None]
    d *= d
    r2 = d[:, :, 0] + d[:, :, 1] + d[:, :, 2]
    return centers, np.sqrt(np.maximum(np.maximum(r2[:, 0], r2[:, 1]), r2[:, 2]))


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a × b of (n, 3) arrays (the arithmetic of `np.cross`, fewer calls)."""
    out = np.empty_like(a)
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    np.subtract(a1 * b2, a2 * b1, out=out[:, 0])
    np.subtract(a2 * b0, a0 * b2, out=out[:, 1])
    np.subtract(a0 * b1, a1 * b0, out=out[:, 2])
    return out


def refit_bottom_up(tree: SphereTree, triangles: np.ndarray,
                    positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refit every node from deformed positions, leaves first.

    Args:
        tree: the tree; triangles: (T, 3) int vertex indices of the frame's triangles;
            positions: (V, 3) float64 deformed positions (world space).
    Returns:
        centers (N, 3) and radii (N,) float64 for all nodes.
    """
    N = tree.n_nodes
    centers = np.zeros((N, 3))
    radii = np.zeros(N)
    leaves = np.nonzero(tree.leaf_tri >= 0)[0]
    centers[leaves], radii[leaves] = leaf_spheres(tree, triangles, positions, leaves)
    for d in range(tree.level_ptr.size - 2, -1, -1):
        nodes = np.arange(tree.level_ptr[d], tree.level_ptr[d + 1])
        inner = nodes[tree.first_child[nodes] >= 0]
        if not inner.size:
            continue
        seg_ptr = np.zeros(inner.size + 1, dtype=np.int64)
        np.cumsum(tree.child_count[inner], out=seg_ptr[1:])
        seg = np.repeat(np.arange(inner.size), tree.child_count[inner])
        kids = tree.first_child[inner][seg] + (np.arange(seg_ptr[-1]) - seg_ptr[seg])
        centers[inner], radii[inner] = approx_balls_of_spheres(centers[kids], radii[kids], seg_ptr)
    return centers, radii


def refit_exact(tree: SphereTree, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimal balls of every node's deformed vertices: (N, 3), (N,) float64."""
    return minimal_balls(positions[tree.node_verts], tree.node_vert_ptr)
