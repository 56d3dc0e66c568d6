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
    """Per-node data for the on-demand LBS refit: each node's corner weight vectors,
    stored sparsely.

    Attributes:
        corner_ptr: (N + 1,) int64 CSR: node i owns corner rows corner_ptr[i]:[i + 1].
        entry_ptr: (R + 1,) int64 CSR: corner row r has entries entry_ptr[r]:[r + 1].
        entry_joint: (E,) int32 joint of each nonzero entry; index J is the virtual static
            joint (vertices Blender leaves in place).
        entry_weight: (E,) float64 corner weight of that joint (a row sums to 1).
        simplified: (N,) bool, nodes whose corners were replaced by the unit vectors of
            their joints (see `lbs_bounds`).
        joint_ptr: (N + 1,) int64 CSR of each node's distinct joints; node_joint (D,) int32.
        entry_slot: (E,) int32 position of the entry's joint in its node's joint list, so a
            refit transforms the node centre once per (node, joint), not once per entry.
    """

    corner_ptr: np.ndarray
    entry_ptr: np.ndarray
    entry_joint: np.ndarray
    entry_weight: np.ndarray
    simplified: np.ndarray
    joint_ptr: np.ndarray
    node_joint: np.ndarray
    entry_slot: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


# A node keeps its exact corners unless they hold more than SIMPLIFY_MIN_ENTRIES entries and
# SIMPLIFY_RATIO times more entries than the node has distinct joints. Nodes near the root of
# a rig with many influences per vertex (MakeHuman: 9) otherwise carry tens of thousands of
# corners, and they are refitted every frame; deep nodes stay exact, where tightness pays.
SIMPLIFY_RATIO = 4
SIMPLIFY_MIN_ENTRIES = 2048


def lbs_bounds(tree: SphereTree, rig: Rig, simplify_ratio: float = SIMPLIFY_RATIO) -> LbsBounds:
    """Joint-sets, weight intervals and their corners for every node of `tree`.

    Where the exact corners would cost more than `simplify_ratio` times the node's number
    of distinct joints (and more than SIMPLIFY_MIN_ENTRIES), the node uses the unit weight vectors of those joints instead:
    their hull contains every weight polytope over those joints, so the bound stays safe
    (it becomes the paper's looser convex hull of all transformed spheres, Eq. 2).
    """
    joints, weights = rig.padded_influences()
    nc = weight_bounds.node_corners(joints, weights, tree.node_vert_ptr, tree.node_verts)
    N = tree.n_nodes
    nz = nc.joints >= 0
    row_entries = nz.sum(axis=1)
    row_node = np.repeat(np.arange(N), np.diff(nc.ptr))
    node_entries = np.bincount(row_node, weights=row_entries, minlength=N)
    # Distinct joints per node, from the corner rows.
    nj = int(max(joints.max(), 0)) + 1
    key = np.unique(row_node[np.nonzero(nz)[0]] * nj + nc.joints[nz])
    key_node, key_joint = key // nj, (key % nj).astype(np.int32)
    distinct = np.bincount(key_node, minlength=N)
    simple = (node_entries > simplify_ratio * distinct) & (node_entries > SIMPLIFY_MIN_ENTRIES)
    keep_rows = ~simple[row_node]
    # Exact rows of kept nodes, unit rows of simplified nodes, merged in node order.
    e_rows = np.nonzero(keep_rows)[0]
    ex_node = row_node[e_rows]
    un = simple[key_node]
    u_node, u_joint = key_node[un], key_joint[un]
    all_node = np.concatenate([ex_node, u_node])
    order = np.argsort(all_node, kind="stable")
    counts = np.concatenate([row_entries[e_rows], np.ones(u_node.size, dtype=np.int64)])[order]
    ex_mask = nz[e_rows]
    ex_joint = nc.joints[e_rows][ex_mask]
    ex_weight = nc.weights[e_rows][ex_mask]
    ex_ptr = np.concatenate([[0], np.cumsum(row_entries[e_rows])])
    # Entries of each row in the merged order.
    src_start = np.concatenate([ex_ptr[:-1], ex_ptr[-1] + np.arange(u_node.size)])[order]
    joint_pool = np.concatenate([ex_joint, u_joint])
    weight_pool = np.concatenate([ex_weight, np.ones(u_node.size)])
    entry_ptr = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=entry_ptr[1:])
    seg = np.repeat(np.arange(counts.size), counts)
    take = src_start[seg] + (np.arange(entry_ptr[-1]) - entry_ptr[seg])
    corner_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_node, minlength=N), out=corner_ptr[1:])
    entry_joint = joint_pool[take].astype(np.int32)
    # (node, joint) pairs: `key` is sorted by node then joint, so each node's joints are a
    # contiguous ascending run and an entry's slot is a search within its node's run.
    joint_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(distinct, out=joint_ptr[1:])
    entry_node = np.repeat(np.repeat(np.arange(N), np.diff(corner_ptr)), np.diff(entry_ptr))
    pos = np.searchsorted(key, entry_node * nj + entry_joint)
    entry_slot = (pos - joint_ptr[entry_node]).astype(np.int32)
    return LbsBounds(corner_ptr, entry_ptr, entry_joint, weight_pool[take], simple,
                     joint_ptr, key_joint, entry_slot)


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
    # The node centre moved by each of the node's joints: C_j c and σ_j.
    pj, pj_seg, pj_ptr = _expand(bounds.joint_ptr, nodes)
    j = bounds.node_joint[pj]
    M = frame.matrices[j]
    moved = np.einsum("eij,ej->ei", M[:, :, :3], tree.centers[nodes][pj_seg]) + M[:, :, 3]
    sig = frame.sigma[j]
    rows, row_seg, row_ptr = _expand(bounds.corner_ptr, nodes)
    ents, ent_seg, ent_ptr = _expand(bounds.entry_ptr, rows)
    w = bounds.entry_weight[ents]
    k = pj_ptr[row_seg[ent_seg]] + bounds.entry_slot[ents]
    # Each corner row is a convex combination of its joints' transformed spheres.
    rc = np.add.reduceat(w[:, None] * moved[k], ent_ptr[:-1], axis=0)
    rr = tree.radii[nodes][row_seg] * np.add.reduceat(w * sig[k], ent_ptr[:-1])
    centers, radii = approx_balls_of_spheres(rc, rr, row_ptr)
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
