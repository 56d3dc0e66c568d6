"""One traversal for many object pairs: the hierarchies of a crowd stacked into one.

The hierarchies of all objects are concatenated into one node numbering (`Stacked`,
built once per set of objects and cached): node ``g`` belongs to object
``node_obj[g]`` and is that object's node ``g - node_off[obj]``; leaves hold triangle ids
offset the same way. A frontier chunk is then a pair of global node arrays, whatever the
object pairs, and expanding children or leaves is one array operation for all of them,
as in `traversal.collide`. Volumes are asked per object (`np.unique` on the object column:
a loop over the objects present in a chunk, never over object pairs), and two nodes of
different objects are compared by their enclosing spheres, exactly as
`Volumes.overlap`'s default does, so the node pairs kept are those the per-pair traversal
keeps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..methods.base import Hierarchy, Volumes
from .traversal import CHUNK, QueryStats, children, leaf_triangle_pairs


@dataclass
class Stacked:
    """Several hierarchies as one.

    Attributes:
        hierarchy: the global `Hierarchy` (node ids and triangle ids offset per object).
        node_off: (n + 1,) int64 first global node of each object.
        tri_off: (n + 1,) int64 first global triangle of each object.
        node_obj: (N,) int32 object of each global node.
    """

    hierarchy: Hierarchy
    node_off: np.ndarray
    tri_off: np.ndarray
    node_obj: np.ndarray


def stack(hierarchies: list[Hierarchy], n_triangles: list[int]) -> Stacked:
    """Concatenate hierarchies; object k's triangles are numbered from ``tri_off[k]``."""
    nodes = np.array([h.n_nodes for h in hierarchies], dtype=np.int64)
    node_off = np.zeros(len(hierarchies) + 1, dtype=np.int64)
    np.cumsum(nodes, out=node_off[1:])
    tri_off = np.zeros(len(hierarchies) + 1, dtype=np.int64)
    np.cumsum(np.asarray(n_triangles, dtype=np.int64), out=tri_off[1:])
    fc = np.concatenate([np.where(h.first_child >= 0, h.first_child.astype(np.int64) + o, -1)
                         for h, o in zip(hierarchies, node_off[:-1])])
    cc = np.concatenate([h.child_count for h in hierarchies]).astype(np.int64)
    leaf_off = np.cumsum([0] + [h.leaf_tris.size for h in hierarchies])
    ptr = np.concatenate([h.leaf_ptr[:-1] + lo for h, lo in zip(hierarchies, leaf_off[:-1])]
                         + [np.array([leaf_off[-1]], dtype=np.int64)]).astype(np.int64)
    tris = np.concatenate([h.leaf_tris.astype(np.int64) + t
                           for h, t in zip(hierarchies, tri_off[:-1])])
    node_obj = np.repeat(np.arange(len(hierarchies), dtype=np.int32), nodes)
    return Stacked(Hierarchy(fc, cc, ptr, tris), node_off, tri_off, node_obj)


# Stacks of the last few object sets (strong references to the hierarchies, so that ids
# cannot be reused while cached): a scan queries the same set frame after frame.
_CACHE: list[tuple[tuple, list, Stacked]] = []
_CACHE_SIZE = 8


def stacked(hierarchies: list[Hierarchy], n_triangles: list[int]) -> Stacked:
    """`stack`, cached per list of hierarchies and triangle counts."""
    key = tuple(id(h) for h in hierarchies) + tuple(int(t) for t in n_triangles)
    for k, _, s in _CACHE:
        if k == key:
            return s
    s = stack(hierarchies, n_triangles)
    _CACHE.insert(0, (key, list(hierarchies), s))
    del _CACHE[_CACHE_SIZE:]
    return s


def _gather(vols: list[Volumes | None], st: Stacked, nodes: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centres (n, 3), radii (n,) and sizes (n,) of global `nodes`, asked per object."""
    obj = st.node_obj[nodes]
    c = np.empty((nodes.size, 3))
    r = np.empty(nodes.size)
    s = np.empty(nodes.size)
    order = np.argsort(obj, kind="stable")
    objs, starts = np.unique(obj[order], return_index=True)
    ends = np.append(starts[1:], nodes.size)
    for o, a, b in zip(objs.tolist(), starts.tolist(), ends.tolist()):
        sel = order[a:b]
        local = nodes[sel] - st.node_off[o]
        v = vols[o]
        v.ensure(local)
        c[sel], r[sel] = v.spheres(local)
        s[sel] = v.size(local)
    return c, r, s


def collide_many(vols: list[Volumes | None], pairs: np.ndarray, st: Stacked,
                 triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 chunk: int = CHUNK) -> tuple[np.ndarray, QueryStats]:
    """All intersecting triangle pairs of the object pairs `pairs`, in one traversal.

    Args:
        vols: per object its frame's `Volumes` (None for objects in no pair).
        pairs: (P, 2) int64 object pairs (i, j), i != j.
        st: the stacked hierarchies of all objects (`stacked`), in the order of `vols`.
        triangle_test: f(ga (K,), gb (K,)) -> (K,) bool on GLOBAL triangle ids (object
            k's triangle t is ``st.tri_off[k] + t``); False for pairs not to report.
        chunk: maximum node pairs per vectorized step.
    Returns:
        (K, 2) int64 global triangle pairs, the first column from the first object of its
        pair; and statistics (all object pairs together).
    """
    h = st.hierarchy
    stats = QueryStats()
    found: list[np.ndarray] = []
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not pairs.size:
        return np.zeros((0, 2), np.int64), stats
    stack_ = [(st.node_off[pairs[:, 0]], st.node_off[pairs[:, 1]])]
    while stack_:
        na, nb = stack_.pop()
        if na.size > chunk:
            stack_.append((na[chunk:], nb[chunk:]))
            na, nb = na[:chunk], nb[:chunk]
        stats.chunks += 1
        ca, ra, sa = _gather(vols, st, na)
        cb, rb, sb = _gather(vols, st, nb)
        d = ca - cb
        ok = np.einsum("ij,ij->i", d, d) <= (ra + rb) ** 2     # as Volumes.overlap
        stats.volume_tests += int(na.size)
        na, nb, sa, sb = na[ok], nb[ok], sa[ok], sb[ok]
        leaf_a = h.first_child[na] < 0
        leaf_b = h.first_child[nb] < 0
        both = leaf_a & leaf_b
        if both.any():
            ta, tb = leaf_triangle_pairs(h, na[both], h, nb[both])
            if ta.size:
                hit = triangle_test(ta, tb)
                stats.triangle_tests += int(ta.size)
                if hit.any():
                    found.append(np.stack([ta[hit], tb[hit]], axis=1))
        rest = ~both
        if rest.any():
            ra_, rb_ = na[rest], nb[rest]
            split_a = ~leaf_a[rest] & (leaf_b[rest] | (sa[rest] >= sb[rest]))
            new_a, new_b = [], []
            if split_a.any():
                owner, kids = children(h, ra_[split_a])
                new_a.append(kids)
                new_b.append(rb_[split_a][owner])
            if (~split_a).any():
                owner, kids = children(h, rb_[~split_a])
                new_a.append(ra_[~split_a][owner])
                new_b.append(kids)
            stack_.append((np.concatenate(new_a), np.concatenate(new_b)))
    stats.refitted = int(sum(v.refitted for v in vols if v is not None))
    out = np.concatenate(found) if found else np.zeros((0, 2), np.int64)
    return out, stats


def split_pairs(global_pairs: np.ndarray, st: Stacked
                ) -> list[tuple[int, int, np.ndarray]]:
    """Global triangle pairs as [(object a, object b, (K, 2) local pairs)], by object pair
    in increasing (a, b) order (whole-array grouping)."""
    if not global_pairs.size:
        return []
    n = st.tri_off.size - 1
    oa = np.searchsorted(st.tri_off, global_pairs[:, 0], side="right") - 1
    ob = np.searchsorted(st.tri_off, global_pairs[:, 1], side="right") - 1
    key = oa * n + ob
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key[order], return_index=True)
    ends = np.append(starts[1:], order.size)
    local = np.stack([global_pairs[:, 0] - st.tri_off[oa],
                      global_pairs[:, 1] - st.tri_off[ob]], axis=1)
    return [(int(k // n), int(k % n), local[order[a:b]])
            for k, a, b in zip(keys.tolist(), starts.tolist(), ends.tolist())]
