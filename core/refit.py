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

    Two sound bounds are stored; a refit computes both where available and keeps the
    smaller sphere:

    * corners (the paper's): each node's corner weight vectors, sparse;
    * the mean-weight bound: with ŵ the node's mean weight vector and
      ``c' = Σ_j ŵ_j C_j c``, every deformed vertex lies within
      ``r · max_j σ_j + Σ_j δ_j |C_j c − c'|`` of c', where
      ``δ_j = max(h_j − ŵ_j, ŵ_j − l_j)`` and [l_j, h_j] is the range of joint j's weight
      over the node's vertices (0 where a vertex lacks j). It costs one term per distinct
      joint, so nodes whose corners would be expensive (near the root) keep only this one;
      with the same centre, the hull of the transformed spheres ``max_j |C_j c − c'| + σ_j r``
      (the paper's Eq. 2, blind to weights) is also a bound, and the smaller radius is used.

    Attributes:
        joint_ptr: (N + 1,) int64 CSR of each node's distinct joints; node_joint (D,) int32
            (index J is the virtual static joint).
        mean_weight, delta: (D,) float64 ŵ_j and δ_j per (node, joint).
        corner_ptr: (N + 1,) int64 CSR of corner rows (empty for nodes without corners).
        entry_ptr: (R + 1,) int64 CSR of the nonzero entries of each corner row.
        entry_slot: (E,) int32 the entry's joint as a position in its node's joint list.
        entry_weight: (E,) float64 corner weight of that joint (a row sums to 1).
    """

    joint_ptr: np.ndarray
    node_joint: np.ndarray
    mean_weight: np.ndarray
    delta: np.ndarray
    corner_ptr: np.ndarray
    entry_ptr: np.ndarray
    entry_slot: np.ndarray
    entry_weight: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def has_corners(self) -> np.ndarray:
        return np.diff(self.corner_ptr) > 0


# Nodes whose corners hold more entries than this keep only the mean-weight bound: near the
# root of a rig with many influences per vertex (MakeHuman: 9) a node has thousands of
# corners, and those nodes are refitted every frame.
CORNER_ENTRY_LIMIT = 64


def _mean_weight_bounds(tree: SphereTree, joints: np.ndarray, weights: np.ndarray):
    """Distinct joints per node with their mean weight and weight deviation δ."""
    N = tree.n_nodes
    nv = np.diff(tree.node_vert_ptr)
    node = np.repeat(np.arange(N), nv)
    verts = tree.node_verts
    K = joints.shape[1]
    nj = int(joints.max()) + 1
    jn = joints[verts]                                           # (M, K)
    wn = weights[verts]
    valid = jn >= 0
    key = (np.repeat(node, K).reshape(-1, K)[valid] * nj + jn[valid])
    w = wn[valid]
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    uniq, start, count = np.unique(key, return_index=True, return_counts=True)
    wsum = np.add.reduceat(w, start)
    wmin = np.minimum.reduceat(w, start)
    wmax = np.maximum.reduceat(w, start)
    u_node = uniq // nj
    # A vertex without the joint has weight 0 for it.
    lo = np.where(count < nv[u_node], 0.0, wmin)
    mean = wsum / nv[u_node]
    delta = np.maximum(wmax - mean, mean - lo)
    joint_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(u_node, minlength=N), out=joint_ptr[1:])
    return joint_ptr, (uniq % nj).astype(np.int32), mean, delta, uniq, nj


def lbs_bounds(tree: SphereTree, rig: Rig, corner_entry_limit: int = CORNER_ENTRY_LIMIT) -> LbsBounds:
    """Both bounds for every node of `tree` (corners only where they are affordable)."""
    joints, weights = rig.padded_influences()
    joint_ptr, node_joint, mean, delta, pair_key, nj = _mean_weight_bounds(tree, joints, weights)
    nc = weight_bounds.node_corners(joints, weights, tree.node_vert_ptr, tree.node_verts)
    N = tree.n_nodes
    nz = nc.joints >= 0
    row_entries = nz.sum(axis=1)
    row_node = np.repeat(np.arange(N), np.diff(nc.ptr))
    node_entries = np.bincount(row_node, weights=row_entries, minlength=N)
    keep_node = node_entries <= corner_entry_limit
    rows = np.nonzero(keep_node[row_node])[0]
    corner_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_node[rows], minlength=N), out=corner_ptr[1:])
    entry_ptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(row_entries[rows], out=entry_ptr[1:])
    mask = nz[rows]
    e_joint = nc.joints[rows][mask]
    e_node = np.repeat(row_node[rows], row_entries[rows])
    slot = np.searchsorted(pair_key, e_node * nj + e_joint) - joint_ptr[e_node]
    return LbsBounds(joint_ptr, node_joint, mean, delta, corner_ptr, entry_ptr,
                     slot.astype(np.int32), nc.weights[rows][mask])


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


def _joint_moves(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                 nodes: np.ndarray):
    """The node centres moved by each of their joints: per (node, joint) pair, C_j c (P, 3)
    and σ_j (P,), with the pairs' node segment (P,) and CSR offsets (n + 1,)."""
    pj, pj_seg, pj_ptr = _expand(bounds.joint_ptr, nodes)
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
    rows, row_seg, row_ptr = _expand(bounds.corner_ptr, nodes)
    ents, ent_seg, ent_ptr = _expand(bounds.entry_ptr, rows)
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
        take, take_seg, take_ptr = _expand(pj_ptr, sub)
        sub_moves = (pj[take], take_seg, take_ptr, moved[take], sig[take])
        cc, cr = corner_spheres(tree, bounds, frame, nodes[sub], sub_moves)
        better = cr < radii[sub]
        centers[sub[better]] = cc[better]
        radii[sub[better]] = cr[better]
    return centers, radii + frame.margin


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
    w = np.cross(u, v)
    ww = np.einsum("ij,ij->i", w, w)
    uu, vv = np.einsum("ij,ij->i", u, u), np.einsum("ij,ij->i", v, v)
    edges = np.stack([uu, np.einsum("ij,ij->i", c - b, c - b), vv], 1)   # ab, bc, ca
    longest = np.argmax(edges, axis=1)
    ends = np.array([[0, 1], [1, 2], [2, 0]])[longest]
    n = np.arange(p.shape[0])
    mid = 0.5 * (p[n, ends[:, 0]] + p[n, ends[:, 1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        circ = a + (uu[:, None] * np.cross(v, w) + vv[:, None] * np.cross(w, u)) / (2 * ww[:, None])
    # Obtuse (longest edge² ≥ sum of the others) or degenerate: the longest edge's ball.
    obtuse = 2 * edges.max(axis=1) >= edges.sum(axis=1)
    centers = np.where((obtuse | ~np.isfinite(circ).all(axis=1))[:, None], mid, circ)
    radii = np.linalg.norm(p - centers[:, None], axis=2).max(axis=1)
    return centers, radii


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
