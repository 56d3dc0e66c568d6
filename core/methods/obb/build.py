"""Rest-pose construction of the OBB tree over the skeleton (Schmidl, Walker & Lin 2004).

One leaf per bone that owns triangles (the virtual static joint J of
`Rig.padded_influences` included): a triangle belongs to the dominant bone of its polygon
(the largest summed normalized weight over the polygon's vertices, so both halves of a
re-split quad stay in one leaf). Each leaf gets a covariance-fitted box at rest and the
data of the mean-weight bound (docs/obb_cab.md). Inner nodes follow the skeleton: a bone's
node merges its own leaf with its children's subtrees pairwise; the roots merge last.
Everything here runs once per rig; the result is arrays only.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ...cache import derived
from ...rig import Rig
from ..base import Hierarchy


@dataclass
class ObbData:
    """Prepared data of the OBB methods (arrays only; N nodes, L leaves, P (leaf, joint)
    pairs).

    Attributes:
        first_child, child_count: (N,) int32 the binary tree, breadth-first (node 0 root).
        leaf_ptr: (N + 1,) int64, leaf_tris: (M,) int64: the triangles of each leaf node.
        node_leaf: (N,) int32 leaf index of a leaf node, -1 for inner nodes.
        node_joint: (N,) int32 the bone at which an inner node's children meet (-1: the
            top, where the roots of the skeleton and the static joint meet).
        node_depth: (N,) int32 height above the deepest leaf below (leaves 0).
        leaf_bone: (L,) int32 the leaf's bone (J: the static joint).
        box_center: (L, 3) rest box centre (= the centre of the rest ball), mesh-local.
        box_axes: (L, 3, 3) rows = the rest box's orthonormal axes, major first.
        box_extent: (L, 3) half extents along those axes.
        ball_radius: (L,) max distance of the leaf's vertices to box_center.
        local_extent: (L,) max |coordinate| of the leaf's rest vertices (float32 margin).
        pair_ptr: (L + 1,) int64 CSR into the pair arrays.
        pair_joint: (P,) int32, pair_mean: (P,) mean weight ŵ_j, pair_delta: (P,) δ_j.
        joint_rest: (J + 1, 4, 4) bone rest matrices plus the identity (float32 margin).
        used_joints: (U,) int32 joints with weight; max_influences: () int64.
    """

    first_child: np.ndarray
    child_count: np.ndarray
    leaf_ptr: np.ndarray
    leaf_tris: np.ndarray
    leaf_vert_ptr: np.ndarray
    leaf_verts: np.ndarray
    node_leaf: np.ndarray
    node_joint: np.ndarray
    node_depth: np.ndarray
    leaf_bone: np.ndarray
    box_center: np.ndarray
    box_axes: np.ndarray
    box_extent: np.ndarray
    ball_radius: np.ndarray
    local_extent: np.ndarray
    pair_ptr: np.ndarray
    pair_joint: np.ndarray
    pair_mean: np.ndarray
    pair_delta: np.ndarray
    joint_rest: np.ndarray
    used_joints: np.ndarray
    max_influences: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "ObbData":
        return cls(**{f.name: np.asarray(d[f.name]) for f in fields(cls)})

    @property
    def hierarchy(self) -> Hierarchy:
        return derived(self, "hierarchy", lambda: Hierarchy(
            self.first_child, self.child_count, self.leaf_ptr, self.leaf_tris))

    @property
    def levels(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per height 1, 2, ...: (inner nodes (n,) int64, their first child (n,) int64)."""
        def make() -> list:
            out = []
            for d in range(1, int(self.node_depth.max(initial=0)) + 1):   # loop over heights
                nodes = np.nonzero(self.node_depth == d)[0]
                out.append((nodes, self.first_child[nodes].astype(np.int64)))
            return out

        return derived(self, "levels", make)

    @property
    def tri_node(self) -> np.ndarray:
        """(T,) int64 the leaf node holding each triangle."""
        def make() -> np.ndarray:
            t = np.empty(self.leaf_tris.shape[0], np.int64)
            t[self.leaf_tris] = np.repeat(np.arange(self.first_child.shape[0]),
                                          np.diff(self.leaf_ptr))
            return t

        return derived(self, "tri_node", make)

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_bone.shape[0])


def dominant_bones(rig: Rig) -> np.ndarray:
    """(T,) int32 the dominant bone of each triangle's polygon (J: the static joint)."""
    joints, weights = rig.padded_influences()
    T, K = rig.n_triangles, joints.shape[1]
    J1 = rig.n_bones + 1
    _, poly = np.unique(rig.tri_polygon, return_inverse=True)
    jj = joints[rig.triangles].reshape(T, 3 * K)
    ww = weights[rig.triangles].reshape(T, 3 * K)
    ok = jj >= 0
    key = np.repeat(poly.astype(np.int64), 3 * K).reshape(T, 3 * K)[ok] * J1 + jj[ok]
    uk, inv = np.unique(key, return_inverse=True)
    s = np.bincount(inv, weights=ww[ok])
    p, j = uk // J1, uk % J1
    order = np.lexsort((j, -s, p))            # per polygon: largest sum, then lowest bone
    first = np.ones(order.size, bool)
    first[1:] = p[order][1:] != p[order][:-1]
    poly_bone = np.empty(int(poly.max()) + 1 if T else 0, np.int64)
    poly_bone[p[order][first]] = j[order][first]
    return poly_bone[poly].astype(np.int32)


def covariance_box(points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The covariance-fitted box of (n, 3) points: centre (3,), axes (3, 3) rows (major
    first), half extents (3,). Encloses the points exactly."""
    mean = points.mean(axis=0)
    d = points - mean
    _, vec = np.linalg.eigh(d.T @ d)
    axes = vec[:, ::-1].T.copy()
    proj = d @ axes.T
    lo, hi = proj.min(axis=0), proj.max(axis=0)
    return mean + 0.5 * (lo + hi) @ axes, axes, 0.5 * (hi - lo)


def _leaf_weights(rig: Rig, leaf_verts: list[np.ndarray]):
    """Per leaf, its joints with the mean weight ŵ_j and the max deviation δ_j."""
    joints, weights = rig.padded_influences()
    ptr, pj, pm, pd = [0], [], [], []
    for verts in leaf_verts:
        jj, ww = joints[verts], weights[verts]
        ok = jj >= 0
        uj, inv = np.unique(jj[ok], return_inverse=True)
        n = verts.size
        total = np.bincount(inv, weights=ww[ok], minlength=uj.size)
        wmax = np.full(uj.size, -np.inf)
        np.maximum.at(wmax, inv, ww[ok])
        wmin = np.full(uj.size, np.inf)
        np.minimum.at(wmin, inv, ww[ok])
        present = np.bincount(inv, minlength=uj.size)
        wmin = np.where(present < n, 0.0, wmin)    # a vertex without the joint has w = 0
        mean = total / n
        pj.append(uj)
        pm.append(mean)
        pd.append(np.maximum(wmax - mean, mean - wmin))
        ptr.append(ptr[-1] + uj.size)
    return (np.array(ptr, np.int64), np.concatenate(pj).astype(np.int32),
            np.concatenate(pm), np.concatenate(pd))


def build(rig: Rig) -> ObbData:
    """The OBB tree of `rig` at rest (a loop over bones: once per rig, not per frame)."""
    J = rig.n_bones
    tri_bone = dominant_bones(rig)
    bones = np.unique(tri_bone)
    leaf_of_bone = np.full(J + 1, -1, np.int64)
    leaf_of_bone[bones] = np.arange(bones.size)
    order = np.argsort(tri_bone, kind="stable")
    tri_ptr = np.searchsorted(tri_bone[order], np.arange(J + 2))
    leaf_tris_list, leaf_verts = [], []
    centers, axes, extents, radii, local = [], [], [], [], []
    for b in bones:
        tris = order[tri_ptr[b]:tri_ptr[b + 1]].astype(np.int64)
        verts = np.unique(rig.triangles[tris])
        pts = rig.rest_positions[verts]
        c, a, e = covariance_box(pts)
        leaf_tris_list.append(tris)
        leaf_verts.append(verts)
        centers.append(c)
        axes.append(a)
        extents.append(e)
        radii.append(np.linalg.norm(pts - c, axis=1).max())
        local.append(np.abs(pts).max())
    pair_ptr, pair_joint, pair_mean, pair_delta = _leaf_weights(rig, leaf_verts)

    # The tree over the skeleton, as nested tuples: ("leaf", l) or ("node", joint, a, b).
    kids: list[list[int]] = [[] for _ in range(J)]
    roots = []
    for j in range(J):
        p = int(rig.bone_parents[j])
        (roots if p < 0 else kids[p]).append(j)

    def merge(items: list, joint: int):
        while len(items) > 1:                  # pairwise, balanced
            nxt = [("node", joint, items[k], items[k + 1]) for k in range(0, len(items) - 1, 2)]
            if len(items) % 2:
                nxt.append(items[-1])
            items = nxt
        return items[0] if items else None

    sub: list = [None] * J
    post: list[int] = []
    stack = [(r, False) for r in roots]
    while stack:                                # post-order without recursion
        j, done = stack.pop()
        if done:
            post.append(j)
            continue
        stack.append((j, True))
        stack.extend((c, False) for c in kids[j])
    for j in post:
        items = [("leaf", int(leaf_of_bone[j]))] if leaf_of_bone[j] >= 0 else []
        items += [sub[c] for c in kids[j] if sub[c] is not None]
        sub[j] = merge(items, j)
    top = [sub[r] for r in roots if sub[r] is not None]
    if leaf_of_bone[J] >= 0:
        top.append(("leaf", int(leaf_of_bone[J])))
    root = merge(top, -1)

    # Breadth-first numbering.
    first, count, nleaf, njoint, queue = [], [], [], [], [root]
    k = 0
    while k < len(queue):
        item = queue[k]
        k += 1
        if item[0] == "leaf":
            first.append(-1), count.append(0), nleaf.append(item[1]), njoint.append(-1)
        else:
            first.append(len(queue)), count.append(2), nleaf.append(-1), njoint.append(item[1])
            queue.extend([item[2], item[3]])
    first = np.array(first, np.int32)
    count = np.array(count, np.int32)
    nleaf = np.array(nleaf, np.int32)
    N = first.size
    depth = np.zeros(N, np.int32)
    for n in range(N - 1, -1, -1):              # children come after parents
        if first[n] >= 0:
            depth[n] = 1 + max(depth[first[n]], depth[first[n] + 1])
    leaf_ptr = np.zeros(N + 1, np.int64)
    sizes = np.array([leaf_tris_list[l].size if l >= 0 else 0 for l in nleaf], np.int64)
    np.cumsum(sizes, out=leaf_ptr[1:])
    leaf_tris = np.concatenate([leaf_tris_list[l] for l in nleaf if l >= 0])
    joints, _ = rig.padded_influences()
    vptr = np.zeros(len(leaf_verts) + 1, np.int64)
    np.cumsum([v.size for v in leaf_verts], out=vptr[1:])
    return ObbData(first, count, leaf_ptr, leaf_tris, vptr,
                   np.concatenate(leaf_verts).astype(np.int64), nleaf, np.array(njoint, np.int32),
                   depth, bones.astype(np.int32), np.array(centers), np.array(axes),
                   np.array(extents), np.array(radii), np.array(local), pair_ptr,
                   pair_joint, pair_mean, pair_delta,
                   np.concatenate([rig.bone_rest, np.eye(4)[None]], axis=0),
                   np.unique(joints[joints >= 0]).astype(np.int32),
                   np.array((joints >= 0).sum(axis=1).max(initial=1), dtype=np.int64))
