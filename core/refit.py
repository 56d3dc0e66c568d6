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
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import weight_bounds
from .balls import approx_balls_of_spheres, minimal_balls
from .rig import Pose, Rig
from .sphere_tree import SphereTree

# Blender stores evaluated positions in float32 while the bound is computed in float64;
# refitted spheres grow by this fraction of the model's world size so that Blender's
# rounded vertices stay inside (measured skinning deviation: ≤ 1.4e-6 of the size).
FLOAT32_MARGIN = 1e-5


@dataclass
class LbsBounds:
    """Per-node data for the on-demand LBS refit.

    Attributes:
        corner_ptr: (N + 1,) int64 CSR of each node's corner rows.
        corner_joints: (R, K) int32 joint index per corner row, -1 padding; index J is the
            virtual static joint (vertices Blender leaves in place).
        corner_weights: (R, K) float64 corner weight vectors (rows sum to 1).
    """

    corner_ptr: np.ndarray
    corner_joints: np.ndarray
    corner_weights: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def lbs_bounds(tree: SphereTree, rig: Rig) -> LbsBounds:
    """Joint-sets, weight intervals and their corners for every node of `tree`."""
    joints, weights = rig.padded_influences()
    nc = weight_bounds.node_corners(joints, weights, tree.node_vert_ptr, tree.node_verts)
    return LbsBounds(nc.ptr, nc.joints, nc.weights)


@dataclass
class FrameTransforms:
    """A frame's skinning matrices in the form the refit uses.

    Attributes:
        matrices: (J + 1, 3, 4) float64 C_j (row J: the static joint, i.e. the mesh's
            world matrix), mapping mesh-local rest positions to world space.
        sigma: (J + 1,) float64 largest singular value of each C_j[:, :3].
        margin: float, absolute radius margin (FLOAT32_MARGIN × world size).
    """

    matrices: np.ndarray
    sigma: np.ndarray
    margin: float


def frame_transforms(pose: Pose, tree: SphereTree) -> FrameTransforms:
    """Skinning matrices, their spectral norms and the float32 margin for one frame."""
    C = pose.skinning_matrices()[:, :3, :]
    sigma = np.linalg.svd(C[:, :, :3], compute_uv=False)[:, 0]
    size = 2.0 * float(tree.radii[0]) * float(sigma.max())
    return FrameTransforms(C, sigma, FLOAT32_MARGIN * size)


def _expand(ptr: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of `nodes` in a CSR: (rows, segment of each row, segment offsets)."""
    counts = ptr[nodes + 1] - ptr[nodes]
    seg_ptr = np.zeros(nodes.size + 1, dtype=np.int64)
    np.cumsum(counts, out=seg_ptr[1:])
    seg = np.repeat(np.arange(nodes.size), counts)
    rows = ptr[nodes][seg] + (np.arange(seg_ptr[-1]) - seg_ptr[seg])
    return rows, seg, seg_ptr


def refit_on_demand(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                    nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refitted world-space spheres of `nodes` under LBS.

    Args:
        tree: the rest-pose tree; bounds: its `LbsBounds`; frame: the frame's transforms.
        nodes: (n,) int64 node indices.
    Returns:
        centers (n, 3) float64 and radii (n,) float64, each enclosing every deformed
        vertex of its node.
    """
    if nodes.size == 0:
        return np.zeros((0, 3)), np.zeros(0)
    rows, seg, seg_ptr = _expand(bounds.corner_ptr, nodes)
    J = np.maximum(bounds.corner_joints[rows], 0)
    W = bounds.corner_weights[rows]
    blended = np.einsum("rk,rkij->rij", W, frame.matrices[J])
    c = tree.centers[nodes][seg]
    rc = np.einsum("rij,rj->ri", blended[:, :, :3], c) + blended[:, :, 3]
    rr = tree.radii[nodes][seg] * np.einsum("rk,rk->r", W, frame.sigma[J])
    centers, radii = approx_balls_of_spheres(rc, rr, seg_ptr)
    return centers, radii + frame.margin


def refit_bottom_up(tree: SphereTree, triangles: np.ndarray,
                    positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refit every node from deformed positions, leaves first.

    Args:
        tree: the tree; triangles: (T, 3) int vertex indices; positions: (V, 3) float64
            deformed positions (world space).
    Returns:
        centers (N, 3) and radii (N,) float64 for all nodes.
    """
    N = tree.n_nodes
    centers = np.zeros((N, 3))
    radii = np.zeros(N)
    leaves = np.nonzero(tree.leaf_tri >= 0)[0]
    p = positions[triangles[tree.leaf_tri[leaves]]]            # (L, 3, 3)
    c = p.mean(axis=1)
    centers[leaves] = c
    radii[leaves] = np.linalg.norm(p - c[:, None], axis=2).max(axis=1)
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
