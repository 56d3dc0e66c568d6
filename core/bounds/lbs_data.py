"""The rest-pose data of the on-demand LBS refit (`refit.refit_on_demand`): per sphere-tree
node, its distinct joints with their mean weight and weight deviation (the mean-weight
bound) and, where they are affordable, the corner rows of its weight polytopes
(`weight_bounds.node_corners`, the paper's bound), as `LbsBounds`, built by `lbs_bounds`
over chunks of nodes to bound memory (docs/refit_bounds.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..rig import Rig
from . import weight_bounds
from .sphere_tree import SphereTree


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


#: Build-time memory bound: the per-node bounds are built over chunks of consecutive nodes
#: holding about this many (node, vertex) memberships (`_node_chunks`); a node larger than
#: that is a chunk of its own. Chunking changes no value: every per-node quantity depends
#: on the node's own vertices only (tests/test_refit.py compares tiny chunks with one).
BUILD_CHUNK_MEMBERSHIPS = 1 << 18
#: The mean-weight bounds gather K influences per membership: their chunks hold about this
#: many (membership, influence) entries.
MEAN_WEIGHT_CHUNK_ENTRIES = 1 << 20


def _node_chunks(node_vert_ptr: np.ndarray, memberships: int) -> np.ndarray:
    """Node boundaries (C + 1,) int64 from 0 to N: chunks of consecutive nodes holding about
    `memberships` memberships each (at least one node per chunk)."""
    N = node_vert_ptr.size - 1
    targets = np.arange(0, int(node_vert_ptr[-1]), max(1, int(memberships)))
    cuts = np.searchsorted(node_vert_ptr[:-1], targets, side="left")
    return np.unique(np.concatenate(([0], cuts, [N]))).astype(np.int64)


def _mean_weight_bounds(tree: SphereTree, joints: np.ndarray, weights: np.ndarray,
                        chunk_memberships: int | None = None):
    """Distinct joints per node with their mean weight and weight deviation δ, built over
    chunks of nodes (`_node_chunks`; default `MEAN_WEIGHT_CHUNK_ENTRIES` (membership,
    influence) entries per chunk)."""
    N = tree.n_nodes
    nv = np.diff(tree.node_vert_ptr)
    K = joints.shape[1]
    nj = int(joints.max()) + 1
    if chunk_memberships is None:
        chunk_memberships = max(1, MEAN_WEIGHT_CHUNK_ENTRIES // max(K, 1))
    parts = []
    cuts = _node_chunks(tree.node_vert_ptr, chunk_memberships)
    for a, b in zip(cuts[:-1], cuts[1:]):
        m0, m1 = tree.node_vert_ptr[a], tree.node_vert_ptr[b]
        node = np.repeat(np.arange(a, b), nv[a:b])
        verts = tree.node_verts[m0:m1]
        jn = joints[verts]                                           # (Mc, K)
        wn = weights[verts]
        valid = jn >= 0
        key = (np.repeat(node, K).reshape(-1, K)[valid] * nj + jn[valid])
        w = wn[valid]
        del node, verts, jn, wn, valid
        if key.size == 0:
            continue
        order = np.argsort(key, kind="stable")
        key, w = key[order], w[order]
        del order
        uniq, start, count = np.unique(key, return_index=True, return_counts=True)
        del key
        parts.append((uniq, np.add.reduceat(w, start), np.minimum.reduceat(w, start),
                      np.maximum.reduceat(w, start), count))
    if parts:
        uniq, wsum, wmin, wmax, count = (np.concatenate(x) for x in zip(*parts))
    else:
        uniq, wsum, wmin, wmax = (np.zeros(0, dtype=np.int64),) + (np.zeros(0),) * 3
        count = np.zeros(0, dtype=np.int64)
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
    same tree and rig (stored data, `core.storage.persist`): they are most of the cost, the rest is
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
                 joint_ptr: np.ndarray, pair_key: np.ndarray, nj: int, corner_entry_limit: int,
                 chunk_memberships: int | None = None):
    """The corner rows of the nodes whose corners are affordable: corner_ptr (N + 1,),
    entry_ptr (R + 1,), entry_slot (E,) and entry_weight (E,) (see `LbsBounds`).

    Built over chunks of nodes (`_node_chunks`), each chunk's corners compacted to entries
    before the next; `node_corners` skips the nodes it proves over the limit (most of the
    corners near the root), the exact count below decides the rest. `chunk_memberships`
    None: `BUILD_CHUNK_MEMBERSHIPS` as it is at the call."""
    if chunk_memberships is None:
        # Read here, not as the default argument: a default is bound once, at import.
        chunk_memberships = BUILD_CHUNK_MEMBERSHIPS
    N = tree.n_nodes
    ptr = tree.node_vert_ptr
    corner_count = np.zeros(N, dtype=np.int64)
    ent_parts, slot_parts, weight_parts = [], [], []
    cuts = _node_chunks(ptr, chunk_memberships)
    for a, b in zip(cuts[:-1], cuts[1:]):
        nc = weight_bounds.node_corners(joints, weights, ptr[a:b + 1] - ptr[a],
                                        tree.node_verts[ptr[a]:ptr[b]],
                                        entry_limit=corner_entry_limit)
        n = int(b - a)
        nz = nc.joints >= 0
        row_entries = nz.sum(axis=1)
        row_node = np.repeat(np.arange(n), np.diff(nc.ptr))
        node_entries = np.bincount(row_node, weights=row_entries, minlength=n)
        keep_node = node_entries <= corner_entry_limit
        rows = np.nonzero(keep_node[row_node])[0]
        corner_count[a:b] = np.bincount(row_node[rows], minlength=n)
        mask = nz[rows]
        e_joint = nc.joints[rows][mask]
        e_node = np.repeat(row_node[rows] + a, row_entries[rows])
        slot = np.searchsorted(pair_key, e_node * nj + e_joint) - joint_ptr[e_node]
        ent_parts.append(row_entries[rows])
        slot_parts.append(slot.astype(np.int32))
        weight_parts.append(nc.weights[rows][mask])
        del nc, nz, mask, e_joint, e_node, slot
    corner_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(corner_count, out=corner_ptr[1:])
    row_entries = np.concatenate(ent_parts) if ent_parts else np.zeros(0, dtype=np.int64)
    entry_ptr = np.zeros(row_entries.size + 1, dtype=np.int64)
    np.cumsum(row_entries, out=entry_ptr[1:])
    slot = np.concatenate(slot_parts) if slot_parts else np.zeros(0, dtype=np.int32)
    entry_weight = np.concatenate(weight_parts) if weight_parts else np.zeros(0)
    return corner_ptr, entry_ptr, slot, entry_weight
