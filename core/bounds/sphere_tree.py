"""Sphere trees over a triangle mesh (Kavan & Žára 2005, section 3.1), as flat arrays.

Build on the rest pose, top-down: every node is split in two by a plane through the mean
of its triangles' centroids, perpendicular to the longest axis of their bounding box
(Quinlan's heuristic), until each leaf holds one triangle. Every node's sphere is the exact
minimal ball of its vertices. Then nodes whose radius exceeds C times their parent's are
collapsed (their children move up), which turns the binary tree into an n-ary one.

Everything is vectorized level by level: the Python loops run over tree depth only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .balls import minimal_balls

COLLAPSE_C = 0.6


@dataclass
class SphereTree:
    """A sphere tree in breadth-first order; the children of a node are contiguous.

    Attributes:
        centers: (N, 3) float64 rest-pose centres (mesh-local space).
        radii: (N,) float64 rest-pose radii.
        first_child: (N,) int32 index of the first child, -1 for leaves.
        child_count: (N,) int32.
        parent: (N,) int32, -1 for the root (node 0).
        depth: (N,) int32, 0 at the root; nodes are sorted by depth.
        leaf_tri: (N,) int32 triangle of a leaf, -1 for inner nodes.
        level_ptr: (D + 1,) int64: nodes of depth d are level_ptr[d]:level_ptr[d + 1].
        node_vert_ptr, node_verts: CSR of the distinct vertices under each node
            ((N + 1,) int64, (M,) int64): every corner of every polygon that one of the
            node's triangles belongs to, so that the rest ball, the weight bounds and the
            refits enclose whichever triangulation of those polygons a frame draws
            (docs/triangulation.md).
    """

    centers: np.ndarray
    radii: np.ndarray
    first_child: np.ndarray
    child_count: np.ndarray
    parent: np.ndarray
    depth: np.ndarray
    leaf_tri: np.ndarray
    level_ptr: np.ndarray
    node_vert_ptr: np.ndarray
    node_verts: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.radii.shape[0])

    @property
    def is_leaf(self) -> np.ndarray:
        return self.first_child < 0

    def arrays(self) -> dict[str, np.ndarray]:
        """All arrays by field name (for saving)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _segment_ids(ptr: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(ptr.size - 1), np.diff(ptr))


def split_binary(centroids: np.ndarray, leaf_size: int):
    """Top-down binary splitting of triangles, level by level.

    Returns the triangle order (T,) and, per binary node in creation order: start, end
    (range into the order), parent, and depth.
    """
    T = centroids.shape[0]
    order = np.arange(T)
    starts, ends, parents, depths = [np.array([0])], [np.array([T])], [np.array([-1])], [np.array([0])]
    # The current level: nodes still to split.
    lv_start, lv_end, lv_id = np.array([0]), np.array([T]), np.array([0])
    next_id = 1
    d = 0
    while lv_start.size:
        size = lv_end - lv_start
        split = size > leaf_size
        lv_start, lv_end, lv_id, size = lv_start[split], lv_end[split], lv_id[split], size[split]
        if not lv_start.size:
            break
        # Gather the triangles of the nodes being split, segment by segment.
        ptr = np.concatenate([[0], np.cumsum(size)])
        seg = _segment_ids(ptr)
        pos = lv_start[seg] + (np.arange(ptr[-1]) - ptr[seg])
        tri = order[pos]
        c = centroids[tri]
        lo = np.minimum.reduceat(c, ptr[:-1], axis=0)
        hi = np.maximum.reduceat(c, ptr[:-1], axis=0)
        axis = np.argmax(hi - lo, axis=1)
        key = c[np.arange(c.shape[0]), axis[seg]]
        mean = np.add.reduceat(key, ptr[:-1]) / size
        srt = np.lexsort((key, seg))
        tri, key = tri[srt], key[srt]
        order[pos] = tri
        below = np.add.reduceat((key < mean[seg]).astype(np.int64), ptr[:-1])
        # A plane that leaves one side empty (e.g. coincident centroids) falls back to
        # the median, so every split makes progress.
        k = np.where((below == 0) | (below == size), size // 2, below)
        mid = lv_start + k
        n = lv_start.size
        child_ids = next_id + np.arange(2 * n)
        next_id += 2 * n
        c_start = np.stack([lv_start, mid], 1).ravel()
        c_end = np.stack([mid, lv_end], 1).ravel()
        starts.append(c_start)
        ends.append(c_end)
        parents.append(np.repeat(lv_id, 2))
        depths.append(np.full(2 * n, d + 1))
        lv_start, lv_end, lv_id = c_start, c_end, child_ids
        d += 1
    return (order, np.concatenate(starts), np.concatenate(ends),
            np.concatenate(parents), np.concatenate(depths))


#: Build-time memory bound of `node_vertex_sets_of`: nodes are processed in chunks of about this
#: many (node, triangle) memberships (a larger node is a chunk of its own). Chunks change no
#: value: each node's vertex set is its own, and the chunks are concatenated in node order.
NODE_VERTEX_CHUNK = 1 << 18


def node_vertex_sets_of(tri_vert_ptr: np.ndarray, tri_verts: np.ndarray, order: np.ndarray,
                   start: np.ndarray, end: np.ndarray, n_vertices: int,
                   chunk: int | None = None):
    """CSR of the distinct vertices of each node's triangle range, where triangle t stands
    for the vertices tri_verts[tri_vert_ptr[t]:tri_vert_ptr[t + 1]] (its polygon's).
    Built over chunks of consecutive nodes of about `chunk` (node, triangle) memberships
    (default `NODE_VERTEX_CHUNK`)."""
    chunk = NODE_VERTEX_CHUNK if chunk is None else chunk
    size = end - start
    ptr = np.concatenate([[0], np.cumsum(size)])
    N = start.size
    cuts = np.searchsorted(ptr[:-1], np.arange(0, int(ptr[-1]), max(1, int(chunk))))
    cuts = np.unique(np.concatenate(([0], cuts, [N]))).astype(np.int64)
    per_node = np.zeros(N, dtype=np.int64)
    parts = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        sub = ptr[a:b + 1] - ptr[a]
        seg = _segment_ids(sub)
        tri = order[start[a:b][seg] + (np.arange(sub[-1]) - sub[seg])]
        counts = tri_vert_ptr[tri + 1] - tri_vert_ptr[tri]
        node = np.repeat(seg, counts)
        cptr = np.zeros(tri.size + 1, dtype=np.int64)
        np.cumsum(counts, out=cptr[1:])
        owner = np.repeat(np.arange(tri.size), counts)
        vert = tri_verts[tri_vert_ptr[tri][owner] + (np.arange(cptr[-1]) - cptr[owner])]
        del seg, tri, counts, cptr, owner
        key = np.unique(node * n_vertices + vert.astype(np.int64))
        del node, vert
        per_node[a:b] = np.bincount(key // n_vertices, minlength=int(b - a))
        parts.append(key % n_vertices)
    vptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(per_node, out=vptr[1:])
    return vptr, np.concatenate(parts)


def polygon_vertex_sets(triangles: np.ndarray, tri_polygon: np.ndarray | None,
                        poly_ptr: np.ndarray | None,
                        poly_verts: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per triangle, the vertices any triangulation of its polygon can use: CSR
    ((T + 1,) int64, (M,) int64). Without polygons, each triangle's own three."""
    T = triangles.shape[0]
    if tri_polygon is None or poly_ptr is None or poly_verts is None:
        return np.arange(0, 3 * T + 1, 3, dtype=np.int64), triangles.reshape(-1).astype(np.int64)
    poly_ptr = np.asarray(poly_ptr, dtype=np.int64)
    tp = np.asarray(tri_polygon, dtype=np.int64)
    counts = poly_ptr[tp + 1] - poly_ptr[tp]
    ptr = np.zeros(T + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    owner = np.repeat(np.arange(T), counts)
    loops = poly_ptr[tp][owner] + (np.arange(ptr[-1]) - ptr[owner])
    return ptr, np.asarray(poly_verts, dtype=np.int64)[loops]


def _collapse(radii: np.ndarray, parent: np.ndarray, depth: np.ndarray, is_leaf: np.ndarray,
              C: float) -> tuple[np.ndarray, np.ndarray]:
    """Top-down collapse: drop inner nodes with r > C · r(parent after collapsing).

    Returns keep (N,) bool and the new parent (N,) int64 (nearest kept ancestor).
    """
    N = radii.size
    keep = np.ones(N, dtype=bool)
    kept_anc = np.arange(N)           # nearest kept node at or above each node
    new_parent = np.full(N, -1)
    for d in range(1, int(depth.max()) + 1 if N else 0):
        nodes = np.nonzero(depth == d)[0]
        p = kept_anc[parent[nodes]]
        new_parent[nodes] = p
        # A child whose vertex set equals its parent's (a polygon's corners) gets the same
        # ball up to rounding, which differs between NumPy versions: only a child larger
        # by more than rounding is dropped, so C >= 1 keeps the tree binary everywhere.
        drop = (radii[nodes] > C * radii[p] * (1.0 + 1e-12)) & ~is_leaf[nodes]
        keep[nodes[drop]] = False
        kept_anc[nodes[drop]] = p[drop]
    return keep, new_parent


def build(positions: np.ndarray, triangles: np.ndarray, collapse_c: float = COLLAPSE_C,
          leaf_size: int = 1, tri_polygon: np.ndarray | None = None,
          poly_ptr: np.ndarray | None = None,
          poly_verts: np.ndarray | None = None) -> SphereTree:
    """Build a sphere tree over `triangles` at `positions`.

    Args:
        positions: (V, 3) float64 vertex positions (the rest pose).
        triangles: (T, 3) int32 vertex indices, T ≥ 1.
        collapse_c: the collapse constant C: inner nodes with r > C · r_parent are removed.
            Any C ≥ 1 keeps the binary tree (a child's minimal ball is never larger).
        leaf_size: triangles per leaf (the paper uses 1).
        tri_polygon, poly_ptr, poly_verts: the polygons the triangles come from (see
            `core.rig.Rig`). When given, every node's vertex set holds all corners of the
            polygons of its triangles (Blender re-splits quads per frame); leaves stay one
            triangle index each.
    Returns:
        The collapsed tree.
    """
    positions = np.asarray(positions, dtype=np.float64)
    triangles = np.asarray(triangles, dtype=np.int64)
    if triangles.shape[0] == 0:
        raise ValueError("cannot build a sphere tree over a mesh without triangles")
    if leaf_size != 1:
        raise NotImplementedError("only one triangle per leaf is supported")
    centroids = positions[triangles].mean(axis=1)
    order, start, end, parent, depth = split_binary(centroids, leaf_size)
    tv_ptr, tv = polygon_vertex_sets(triangles, tri_polygon, poly_ptr, poly_verts)
    vptr, verts = node_vertex_sets_of(tv_ptr, tv, order, start, end, positions.shape[0])
    # The balls of consecutive node chunks (a node's ball depends on its points only), so
    # the gathered points and the solver's work arrays stay bounded.
    centers = np.empty((start.size, 3))
    radii = np.empty(start.size)
    cuts = np.searchsorted(vptr[:-1], np.arange(0, int(vptr[-1]), NODE_VERTEX_CHUNK))
    cuts = np.unique(np.concatenate(([0], cuts, [start.size]))).astype(np.int64)
    for a, b in zip(cuts[:-1], cuts[1:]):
        centers[a:b], radii[a:b] = minimal_balls(positions[verts[vptr[a]:vptr[b]]],
                                                 vptr[a:b + 1] - vptr[a])
    is_leaf = (end - start) <= leaf_size
    keep, new_parent = _collapse(radii, parent, depth, is_leaf, collapse_c)
    # New depth of the kept nodes, top-down (parents were created before children).
    kept = np.nonzero(keep)[0]
    new_depth = np.zeros(start.size, dtype=np.int64)
    for d in range(1, int(depth.max()) + 1):
        nodes = np.nonzero((depth == d) & keep)[0]
        new_depth[nodes] = new_depth[new_parent[nodes]] + 1
    # Breadth-first order with contiguous children: sort by (depth, parent's new index,
    # creation order). Parents precede children, so the parents' new index is known when
    # their level is placed.
    new_index = np.full(start.size, -1, dtype=np.int64)
    placed = []
    level_ptr = [0]
    count = 0
    for d in range(int(new_depth[kept].max()) + 1):
        nodes = kept[new_depth[kept] == d]
        pkey = new_index[new_parent[nodes]] if d else np.zeros(nodes.size, dtype=np.int64)
        nodes = nodes[np.lexsort((nodes, pkey))]
        new_index[nodes] = count + np.arange(nodes.size)
        count += nodes.size
        placed.append(nodes)
        level_ptr.append(count)
    old = np.concatenate(placed)
    par = np.where(new_parent[old] >= 0, new_index[np.maximum(new_parent[old], 0)], -1)
    n = old.size
    child_count = np.bincount(par[par >= 0], minlength=n).astype(np.int32)
    first_child = np.full(n, -1, dtype=np.int32)
    has = child_count > 0
    # Children are contiguous and sorted by parent, so the first child of each parent is
    # found by a search over the parent column.
    first_child[has] = np.searchsorted(par, np.nonzero(has)[0]).astype(np.int32)
    leaf_tri = np.where(is_leaf[old], order[start[old]], -1).astype(np.int32)
    node_ptr_old = vptr
    sizes = node_ptr_old[old + 1] - node_ptr_old[old]
    nptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=nptr[1:])
    seg = _segment_ids(nptr)
    nverts = verts[node_ptr_old[old][seg] + (np.arange(nptr[-1]) - nptr[seg])]
    return SphereTree(
        centers=centers[old], radii=radii[old], first_child=first_child,
        child_count=child_count, parent=par.astype(np.int32),
        depth=new_depth[old].astype(np.int32), leaf_tri=leaf_tri,
        level_ptr=np.asarray(level_ptr, dtype=np.int64), node_vert_ptr=nptr, node_verts=nverts,
    )


def node_vertices(parent: np.ndarray, leaf_tri: np.ndarray, level_ptr: np.ndarray,
                  rig) -> tuple[np.ndarray, np.ndarray]:
    """`SphereTree.node_vert_ptr, node_verts` again (what storage leaves out,
    docs/storage.md §3) from the tree's structure and the rig:
    a leaf's set is its triangle's polygon corners (`polygon_vertex_sets`), an
    inner node's the union of its children's (its triangles are its leaves'), sorted.

    Args:
        parent, leaf_tri: (N,) int of the tree (breadth-first, levels contiguous);
        level_ptr: (D + 1,) int.
    Returns:
        (N + 1,) int64 CSR pointers and (M,) int64 vertex indices, as `build`.
    """
    V = np.int64(rig.n_vertices)
    tv_ptr, tv = polygon_vertex_sets(rig.triangles, rig.tri_polygon, rig.poly_ptr,
                                        rig.poly_verts)
    level_ptr = np.asarray(level_ptr, dtype=np.int64)
    leaf_tri = np.asarray(leaf_tri, dtype=np.int64)
    parent = np.asarray(parent, dtype=np.int64)
    levels: list[tuple[np.ndarray, np.ndarray]] = [None] * (level_ptr.size - 1)
    below_ptr, below = np.zeros(1, np.int64), np.zeros(0, np.int64)   # level d + 1
    for d in range(level_ptr.size - 2, -1, -1):
        a, b = int(level_ptr[d]), int(level_ptr[d + 1])
        n = b - a
        nodes = np.arange(a, b)
        keys = []
        leaf = leaf_tri[nodes] >= 0
        if leaf.any():
            t = leaf_tri[nodes[leaf]]
            cnt = tv_ptr[t + 1] - tv_ptr[t]
            own = np.repeat(np.nonzero(leaf)[0], cnt)
            start = np.repeat(tv_ptr[t] - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
            keys.append(own * V + tv[start + np.arange(cnt.sum())])
        if below.size:
            # Every node of level d + 1 is a child of a node of this level.
            cnt_c = np.diff(below_ptr)
            owner = parent[b + np.repeat(np.arange(cnt_c.size), cnt_c)] - a
            keys.append(owner * V + below)
        key = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(key // V, minlength=n), out=ptr[1:])
        levels[d] = (ptr, key % V)
        below_ptr, below = levels[d]
    sizes = np.concatenate([np.diff(p) for p, _ in levels])
    ptr = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    return ptr, np.concatenate([v for _, v in levels])
