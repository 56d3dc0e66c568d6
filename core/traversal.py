"""Simultaneous traversal of sphere trees over arrays of node pairs, with lazy refitting.

The frontier is a stack of chunks of node pairs (``a_nodes``, ``b_nodes``). A chunk is
refitted (only the nodes not refitted yet this frame), sphere-tested in one vectorized
step, and its overlapping pairs are expanded into children, which are pushed back. Popping
the newest chunk first makes the search go deep early, so a first-hit query stops after
touching a small part of the trees, while every step still works on whole arrays.

Leaf pairs go to the exact triangle test on the evaluated positions. Self-collision runs
one tree against itself, expands a node paired with itself into the pairs of its children
(each unordered pair once), and drops adjacent triangles (sharing a weld id: a vertex, or
a split vertex with the same rest position and weights, `core.welds`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .sphere_tree import SphereTree

# Node pairs per vectorized step. All-pairs queries want big steps (fewer numpy calls);
# first-hit queries want small ones, so that the search reaches leaves early.
CHUNK = 8192
FIRST_HIT_CHUNK = 2048


class LazySpheres:
    """World-space spheres of one tree for one frame, computed the first time they are
    needed. `refit(nodes) -> (centers, radii)` does the work; pass `eager` to provide all
    spheres up front (bottom-up refitting)."""

    def __init__(self, tree: SphereTree,
                 refit: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
                 eager: tuple[np.ndarray, np.ndarray] | None = None):
        self.tree = tree
        self.refit = refit
        if eager is not None:
            self.centers, self.radii = eager
            self.done = np.ones(tree.n_nodes, dtype=bool)
        else:
            self.centers = np.zeros((tree.n_nodes, 3))
            self.radii = np.zeros(tree.n_nodes)
            self.done = np.zeros(tree.n_nodes, dtype=bool)
        self.refitted = 0

    def ensure(self, nodes: np.ndarray) -> None:
        todo = nodes[~self.done[nodes]]
        if todo.size == 0:
            return
        todo = np.unique(todo)
        c, r = self.refit(todo)
        self.centers[todo] = c
        self.radii[todo] = r
        self.done[todo] = True
        self.refitted += int(todo.size)


@dataclass
class QueryStats:
    sphere_tests: int = 0
    triangle_tests: int = 0
    refitted: int = 0
    chunks: int = 0
    extra: dict = field(default_factory=dict)


def _children(tree: SphereTree, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Children of `nodes` (n,) int64: (index of the parent in `nodes`, child node)."""
    counts = tree.child_count[nodes]
    owner = np.repeat(np.arange(nodes.size), counts)
    ptr = np.zeros(nodes.size + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    kids = tree.first_child[nodes][owner] + (np.arange(ptr[-1]) - ptr[owner])
    return owner, kids.astype(np.int64)


def _self_children_pairs(tree: SphereTree, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For nodes paired with themselves: every unordered pair of their children, including
    each child with itself (whose own children are paired at the next step)."""
    out_a, out_b = [], []
    counts = tree.child_count[nodes]
    for k in np.unique(counts):
        sel = nodes[counts == k]
        i, j = np.triu_indices(int(k))
        first = tree.first_child[sel].astype(np.int64)[:, None]
        out_a.append((first + i).ravel())
        out_b.append((first + j).ravel())
    if not out_a:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_a), np.concatenate(out_b)


def adjacent_pairs(tri_keys: np.ndarray, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """(K,) bool: triangles ta[k], tb[k] share a vertex key.

    Args:
        tri_keys: (T, 3) int64 per-triangle vertex keys (weld ids, `core.welds`, so that
            split vertices with the same rest position and weights count as shared).
        ta, tb: (K,) int triangle indices.
    """
    a = tri_keys[ta]
    b = tri_keys[tb]
    return np.any(a[:, :, None] == b[:, None, :], axis=(1, 2))


def collide(a: LazySpheres, b: LazySpheres | None,
            triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray],
            first_hit: bool = False, self_keys: np.ndarray | None = None,
            chunk: int | None = None) -> tuple[np.ndarray, QueryStats]:
    """All intersecting triangle pairs between two trees, or of one tree with itself.

    Args:
        a, b: lazily refitted spheres of the two trees; `b` None means self-collision.
        triangle_test: f(tri_a (K,), tri_b (K,)) -> (K,) bool, the exact test on the
            evaluated positions.
        first_hit: stop after the first chunk that contains an intersecting pair (the
            returned pairs are then a non-empty subset, or empty when none exist).
        self_keys: (T, 3) int64 weld ids of the triangles' vertices for dropping adjacent triangles in
            self-collision (required when `b` is None).
        chunk: maximum node pairs processed in one vectorized step (default CHUNK, or
            FIRST_HIT_CHUNK for first-hit queries).
    Returns:
        (K, 2) int64 triangle pairs (for self-collision each unordered pair once, smaller
        index first) and statistics.
    """
    if chunk is None:
        chunk = FIRST_HIT_CHUNK if first_hit else CHUNK
    self_mode = b is None
    if self_mode and self_keys is None:
        raise ValueError("self-collision needs self_keys to drop adjacent triangles")
    B = a if self_mode else b
    ta_tree, tb_tree = a.tree, B.tree
    stats = QueryStats()
    found: list[np.ndarray] = []
    stack = [(np.zeros(1, np.int64), np.zeros(1, np.int64))]
    while stack:
        na, nb = stack.pop()
        if na.size > chunk:
            stack.append((na[chunk:], nb[chunk:]))
            na, nb = na[:chunk], nb[:chunk]
        stats.chunks += 1
        same = (na == nb) if self_mode else np.zeros(na.size, dtype=bool)
        # A node always overlaps itself: no refit or test needed for those pairs.
        test = ~same
        if test.any():
            ta_, tb_ = na[test], nb[test]
            a.ensure(ta_)
            B.ensure(tb_)
            d = np.linalg.norm(a.centers[ta_] - B.centers[tb_], axis=1)
            ok = d <= a.radii[ta_] + B.radii[tb_]
            stats.sphere_tests += int(ta_.size)
            keep = same.copy()
            keep[np.nonzero(test)[0][ok]] = True
            if first_hit and not self_mode:
                # Deepest overlaps first: their children are the likeliest to hold a hit,
                # and the head of an oversized chunk is what gets expanded next.
                depth = np.zeros(na.size)
                depth[test] = a.radii[ta_] + B.radii[tb_] - d
                order = np.argsort(-depth[keep], kind="stable")
                na, nb, same = na[keep][order], nb[keep][order], same[keep][order]
            else:
                na, nb, same = na[keep], nb[keep], same[keep]
        leaf_a = ta_tree.first_child[na] < 0
        leaf_b = tb_tree.first_child[nb] < 0
        both = leaf_a & leaf_b & ~same
        if both.any():
            tri_a = ta_tree.leaf_tri[na[both]].astype(np.int64)
            tri_b = tb_tree.leaf_tri[nb[both]].astype(np.int64)
            if self_mode:
                far = ~adjacent_pairs(self_keys, tri_a, tri_b)
                tri_a, tri_b = tri_a[far], tri_b[far]
            if tri_a.size:
                hit = triangle_test(tri_a, tri_b)
                stats.triangle_tests += int(tri_a.size)
                if hit.any():
                    found.append(np.stack([tri_a[hit], tri_b[hit]], axis=1))
                    if first_hit:
                        break
        new_a, new_b = [], []
        # A node paired with itself (self-collision, inner nodes only).
        self_inner = same & ~leaf_a
        if self_inner.any():
            pa, pb = _self_children_pairs(ta_tree, na[self_inner])
            new_a.append(pa)
            new_b.append(pb)
        # Otherwise descend into the larger sphere, or into whichever is not a leaf.
        rest = ~same & ~both
        if rest.any():
            ra, rb = na[rest], nb[rest]
            la, lb = leaf_a[rest], leaf_b[rest]
            split_a = ~la & (lb | (a.radii[ra] >= B.radii[rb]))
            if split_a.any():
                owner, kids = _children(ta_tree, ra[split_a])
                new_a.append(kids)
                new_b.append(rb[split_a][owner])
            if (~split_a).any():
                owner, kids = _children(tb_tree, rb[~split_a])
                new_a.append(ra[~split_a][owner])
                new_b.append(kids)
        if new_a:
            stack.append((np.concatenate(new_a), np.concatenate(new_b)))
    stats.refitted = a.refitted + (0 if self_mode else B.refitted)
    pairs = np.concatenate(found) if found else np.zeros((0, 2), np.int64)
    if self_mode and pairs.size:
        pairs = np.sort(pairs, axis=1)
    return pairs, stats
