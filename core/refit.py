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

# Blender's Armature modifier computes in float32 (premat, chan_mat, the weighted sum,
# postmat) on the coordinates it is given, while the bound is exact arithmetic on the same
# float32 matrices. Refitted spheres grow by a bound on that rounding, computed per frame
# from the magnitudes Blender computes with (mesh-local coordinates per node, A⁻¹M, the bone
# matrices' entries and translations): see docs/refit_bounds.md, "Float32 margin".
U32 = 2.0 ** -24          # float32 unit roundoff
#: Gaussian elimination on an affine 4×4 (Blender's invert_m4_m4): the linear part of the
#: computed inverse is within INV_C·u·κ(L)·|L⁻¹| of the exact one (spectral norms).
INV_C = 4.0
#: Safety factor over the first-order bound (second-order terms are O(u²)).
MARGIN_SAFETY = 2.0


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
        local_extent: (N,) float64 max |p|∞ of each node's mesh-local rest vertices (the
            magnitude Blender's float32 arithmetic starts from).
        used_joints: (U,) int32 the joints any vertex uses (index J: the static joint).
        joint_rest: (J + 1, 4, 4) float64 bone rest matrices (identity for the static
            joint): Blender's chan_mat is pose_mat · rest⁻¹ in float32.
        max_influences: () int64 the most influences of a vertex.
    """

    joint_ptr: np.ndarray
    node_joint: np.ndarray
    mean_weight: np.ndarray
    delta: np.ndarray
    corner_ptr: np.ndarray
    entry_ptr: np.ndarray
    entry_slot: np.ndarray
    entry_weight: np.ndarray
    local_extent: np.ndarray
    used_joints: np.ndarray
    joint_rest: np.ndarray
    max_influences: np.ndarray

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


def lbs_bounds(tree: SphereTree, rig: Rig, corner_entry_limit: int = CORNER_ENTRY_LIMIT,
               corners: tuple | None = None) -> LbsBounds:
    """Both bounds for every node of `tree` (corners only where they are affordable).

    `corners`: (corner_ptr, entry_ptr, entry_slot, entry_weight) of an earlier call on the
    same tree and rig (stored data, `core.persist`): they are most of the cost, the rest is
    recomputed."""
    joints, weights = rig.padded_influences()
    joint_ptr, node_joint, mean, delta, pair_key, nj = _mean_weight_bounds(tree, joints, weights)
    if corners is None:
        corner_ptr, entry_ptr, slot, entry_weight = _corner_rows(
            tree, joints, weights, joint_ptr, pair_key, nj, corner_entry_limit)
    else:
        corner_ptr, entry_ptr, slot, entry_weight = corners
    N = tree.n_nodes
    vert_extent = np.abs(rig.rest_positions).max(axis=1)
    starts = tree.node_vert_ptr[:-1]
    local_extent = np.zeros(N)
    has = np.diff(tree.node_vert_ptr) > 0
    local_extent[has] = np.maximum.reduceat(vert_extent[tree.node_verts], starts[has])
    joint_rest = np.concatenate([rig.bone_rest, np.eye(4)[None]], axis=0)
    return LbsBounds(joint_ptr, node_joint, mean, delta, corner_ptr, entry_ptr,
                     np.asarray(slot, dtype=np.int32), entry_weight, local_extent,
                     np.unique(joints[joints >= 0]).astype(np.int32), joint_rest,
                     np.array((joints >= 0).sum(axis=1).max(initial=1), dtype=np.int64))


def _corner_rows(tree: SphereTree, joints: np.ndarray, weights: np.ndarray,
                 joint_ptr: np.ndarray, pair_key: np.ndarray, nj: int, corner_entry_limit: int):
    """The corner rows of the nodes whose corners are affordable: corner_ptr (N + 1,),
    entry_ptr (R + 1,), entry_slot (E,) and entry_weight (E,) (see `LbsBounds`)."""
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
    return corner_ptr, entry_ptr, slot, nc.weights[rows][mask]


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
            self._margin = (bounds, float32_margin(self.pose, bounds))
        return self._margin[1]


def frame_transforms(pose: Pose, tree: SphereTree) -> FrameTransforms:
    """Skinning matrices and their spectral norms for one frame."""
    C = pose.skinning_matrices()[:, :3, :]
    sigma = np.linalg.svd(C[:, :, :3], compute_uv=False)[:, 0]
    return FrameTransforms(C, sigma, pose)


def _norms(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Of affine matrices (..., 3+, 4): spectral norm σ and Frobenius norm F of the linear
    part, the spectral norm of its inverse, and |t| (Euclidean)."""
    s = np.linalg.svd(m[..., :3, :3], compute_uv=False)
    return (s[..., 0], np.sqrt((s * s).sum(axis=-1)), 1.0 / s[..., 2],
            np.linalg.norm(m[..., :3, 3], axis=-1))


def float32_margin(pose: Pose, bounds: LbsBounds) -> tuple[float, float]:
    """Bound on |Blender's float32 evaluated vertex − exact LBS| in world space, as
    (slope, offset) over a node's mesh-local extent m: error ≤ slope·m + offset.

    Follows the Armature modifier's arithmetic step by step (docs/refit_bounds.md,
    "Float32 margin"): postmat = M⁻¹A and premat = inverse(postmat) in float32, chan_mat_j
    = pose_j · rest_j⁻¹ in float32, q = premat·p, co = q + Σ w_j (chan_mat_j q − q) / Σ w_j,
    p' = postmat·co stored in float32; our reader applies M in float64. Magnitudes are
    carried as affine functions a·m + b of the local extent, so the per-frame cost is a
    few operations per joint and the per-node margin is one multiply-add.
    """
    u = U32
    r3 = np.sqrt(3.0)
    A, M = pose.armature_world, pose.mesh_world
    sA, FA, _, tA = _norms(A)
    sM, _, iM, tM = _norms(M)
    Q = np.linalg.inv(M) @ A                         # postmat, exact
    P = np.linalg.inv(Q)                             # premat, exact
    sQ, FQ, iQ, tQ = _norms(Q)
    sP, FP, _, tP = _norms(P)
    # (1) postmat: X = inverse(M) in float32 (linear part within INV_C u κ |M⁻¹|; its
    # translation −X t_M carries that error times |t_M| plus its own rounding), then X · A.
    eX = INV_C * u * (sM * iM) * iM
    eXt = eX * tM + 3 * u * r3 * iM * tM
    eQL = eX * sA + 3 * u * r3 * iM * FA
    eQt = eX * tA + eXt + 4 * u * (r3 * iM * tA + iM * tM)
    # (2) premat = inverse(postmat): the perturbation −P δQ P, plus the inversion's rounding.
    eInv = INV_C * u * (sQ * iQ) * sP
    ePL = sP * sP * eQL + eInv
    ePt = sP * (eQL * tP + eQt) + eInv * tQ + 3 * u * r3 * sP * tQ
    # (3) chan_mat_j = pose_j · rest_j⁻¹ in float32 (rest matrices are rigid: κ = 1).
    j = bounds.used_joints
    D = pose.deform_with_static()[j]
    R = bounds.joint_rest[j]
    S = D @ R                                        # pose_mat, what Blender multiplies
    sS, FS, _, tS = _norms(S)
    sD, _, _, tD = _norms(D)
    _, _, _, tR = _norms(R)
    eRL = INV_C * u
    eRt = eRL * tR + 3 * u * r3 * tR
    eDL = sS * eRL + 3 * u * FS * r3
    eDt = sS * eRt + 4 * u * (FS * tR + tS)
    # (4) the vertex; magnitudes as (slope, offset) in the local extent m (|p| ≤ √3 m).
    q = np.array([sP * r3, tP])                                   # |q|
    e_q = np.array([(ePL + 4 * u * FP) * r3, ePt + 4 * u * tP])
    q = q + e_q
    dL = float(sD.max())
    mj = np.array([dL * q[0], float((sD * q[1] + tD).max())])     # max_j |D_j q|
    e_tmp = (np.array([float(eDL.max()) * q[0], float((eDL * q[1] + eDt).max())])
             + 5 * u * mj + u * q)
    K = float(bounds.max_influences)
    g_sum = (2 * K + 3) * u / (1 - (2 * K + 3) * u)
    e_b = dL * e_q + e_tmp + g_sum * (mj + q) + u * mj
    e_out = (sQ * e_b + eQL * mj + np.array([0.0, eQt])
             + 4 * u * (FQ * mj + np.array([0.0, tQ])))
    # World: our reader applies M in float64.
    slope, offset = MARGIN_SAFETY * sM * e_out
    return float(slope), float(offset)


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
