"""Simultaneous traversal of two hierarchies (or one with itself), generic over `Volumes`.

The frontier is a stack of chunks of node pairs (``a_nodes``, ``b_nodes``). A chunk asks
`Volumes.overlap` (which computes only the volumes not computed yet this frame), keeps
the overlapping pairs and expands them into children, which are pushed back. Popping the
newest chunk first makes the search go deep early, so a first-hit query stops after a
small part of the trees, while every step still works on whole arrays.

Leaf pairs expand into the pairs of the triangles they hold, which go to the caller's
exact test (the caller also drops adjacent triangles there). Self-collision runs one
hierarchy against itself, expands a node paired with itself into the unordered pairs of
its children (each child with itself included), and a leaf paired with itself into the
unordered pairs of its own triangles.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..types import Hierarchy, QueryStats, Volumes, narrow_phase

# Node pairs per vectorized step. All-pairs queries want big steps (fewer numpy calls);
# first-hit queries want small ones, so that the search reaches leaves early.
CHUNK = 8192
FIRST_HIT_CHUNK = 2048


def _expand(ptr: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of several CSR segments: (segment of each row, row index)."""
    owner = np.repeat(np.arange(starts.size), counts)
    off = np.zeros(starts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return owner, starts[owner] + (np.arange(off[-1]) - off[owner])


def children(h: Hierarchy, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Children of `nodes` (n,) int64: (index of the parent in `nodes`, child node)."""
    owner, kids = _expand(h.first_child, h.first_child[nodes].astype(np.int64),
                          h.child_count[nodes].astype(np.int64))
    return owner, kids


def _unordered_pairs(starts: np.ndarray, counts: np.ndarray, with_self: bool
                     ) -> tuple[np.ndarray, np.ndarray]:
    """For segments [start, start + count): every unordered pair of their members (each
    member with itself too when `with_self`), grouped by count to stay vectorized."""
    out_a, out_b = [], []
    for k in np.unique(counts):
        sel = starts[counts == k][:, None]
        i, j = np.triu_indices(int(k), 0 if with_self else 1)
        out_a.append((sel + i).ravel())
        out_b.append((sel + j).ravel())
    if not out_a:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_a), np.concatenate(out_b)


def leaf_triangle_pairs(ha: Hierarchy, la: np.ndarray, hb: Hierarchy, lb: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Every (triangle of leaf la[k], triangle of leaf lb[k]) pair: (K,), (K,) int64."""
    ca = ha.leaf_ptr[la + 1] - ha.leaf_ptr[la]
    cb = hb.leaf_ptr[lb + 1] - hb.leaf_ptr[lb]
    if np.all(ca == 1) and np.all(cb == 1):
        return ha.leaf_tris[ha.leaf_ptr[la]], hb.leaf_tris[hb.leaf_ptr[lb]]
    n = ca * cb
    owner = np.repeat(np.arange(la.size), n)
    off = np.zeros(la.size + 1, dtype=np.int64)
    np.cumsum(n, out=off[1:])
    r = np.arange(off[-1]) - off[owner]
    ia = ha.leaf_ptr[la][owner] + r // cb[owner]
    ib = hb.leaf_ptr[lb][owner] + r % cb[owner]
    return ha.leaf_tris[ia], hb.leaf_tris[ib]


def collide(a: Volumes, b: Volumes | None,
            triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray],
            first_hit: bool = False, chunk: int | None = None,
            roots: tuple[np.ndarray, np.ndarray] | None = None
            ) -> tuple[np.ndarray, QueryStats]:
    """All intersecting triangle pairs between two hierarchies, or of one with itself.

    Args:
        a, b: the frame's volumes of the two objects; `b` None means self-collision.
        triangle_test: f(tri_a (K,), tri_b (K,)) -> (K,) bool: the exact test on the
            frame's positions. It must return False for pairs the caller does not report
            (adjacent triangles, seams).
        first_hit: stop after the first chunk that contains an intersecting pair (the
            returned pairs are then a non-empty subset, or empty when none exist).
        chunk: maximum node pairs per vectorized step (default CHUNK, or FIRST_HIT_CHUNK).
        roots: the node pairs to start from (default: the two roots).
    Returns:
        (K, 2) int64 triangle pairs (for self-collision each unordered pair once, smaller
        index first) and statistics.
    """
    whole = narrow_phase(a, b).whole if b is not None else None
    if whole is not None and roots is None:
        return _whole_tree_pass(a, b, whole, triangle_test, first_hit)
    if chunk is None:
        chunk = FIRST_HIT_CHUNK if first_hit else CHUNK
    self_mode = b is None
    B = a if self_mode else b
    ha, hb = a.hierarchy, B.hierarchy
    stats = QueryStats()
    found: list[np.ndarray] = []
    if roots is None:
        roots = (np.zeros(1, np.int64), np.zeros(1, np.int64))
    stack = [roots]
    while stack:
        na, nb = stack.pop()
        if na.size > chunk:
            stack.append((na[chunk:], nb[chunk:]))
            na, nb = na[:chunk], nb[:chunk]
        stats.chunks += 1
        same = (na == nb) if self_mode else np.zeros(na.size, dtype=bool)
        # A node always overlaps itself: no volume or test needed for those pairs.
        test = ~same
        if test.any():
            na, nb, same = _overlapping(a, B, na, nb, same, test, first_hit and not self_mode,
                                        stats)
        leaf_a = ha.first_child[na] < 0
        leaf_b = hb.first_child[nb] < 0
        both = leaf_a & leaf_b
        tri_a_parts, tri_b_parts = _leaf_triangles(a, B, na, nb, same, both)
        if tri_a_parts:
            tri_a = np.concatenate(tri_a_parts)
            tri_b = np.concatenate(tri_b_parts)
            if tri_a.size:
                hit = triangle_test(tri_a, tri_b)
                stats.triangle_tests += int(tri_a.size)
                if hit.any():
                    found.append(np.stack([tri_a[hit], tri_b[hit]], axis=1))
                    if first_hit:
                        break
        new_a, new_b = _child_pairs(a, B, na, nb, same, leaf_a, leaf_b, both)
        if new_a:
            stack.append((np.concatenate(new_a), np.concatenate(new_b)))
    stats.refitted = a.refitted + (0 if self_mode else B.refitted)
    pairs = np.concatenate(found) if found else np.zeros((0, 2), np.int64)
    if self_mode and pairs.size:
        pairs = np.sort(pairs, axis=1)
    return pairs, stats


def _whole_tree_pass(a: Volumes, b: Volumes, whole: Callable,
                     triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray],
                     first_hit: bool) -> tuple[np.ndarray, QueryStats]:
    """`collide` of two objects whose kinds have a whole-tree pass of their own (box
    trees, `Volumes.collide_fast`, from the narrow-phase table): same contract."""
    ta, tb, tests = whole(a, b, triangle_test)
    pairs = np.stack([ta, tb], axis=1).astype(np.int64)
    if first_hit:
        pairs = pairs[:1]
    stats = QueryStats(triangle_tests=tests, refitted=a.refitted + b.refitted)
    return pairs, stats


def _overlapping(a: Volumes, B: Volumes, na: np.ndarray, nb: np.ndarray, same: np.ndarray,
                 test: np.ndarray, deepest_first: bool, stats: QueryStats
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The node pairs (na, nb) ((n,) int64 nodes of `a` and `B`) that overlap: those of
    `same` (a node with itself) and those of `test` ((n,) bool, ``~same``) whose volumes
    overlap (`Volumes.overlap`, counted in `stats`); with `deepest_first`, sorted by
    decreasing overlap depth of their spheres. Returns (na, nb, same) of the kept pairs."""
    ta_, tb_ = na[test], nb[test]
    ok = a.overlap(ta_, B, tb_)
    stats.volume_tests += int(ta_.size)
    keep = same.copy()
    keep[np.nonzero(test)[0][ok]] = True
    if deepest_first:
        # Deepest overlaps first: their children are the likeliest to hold a hit,
        # and the head of an oversized chunk is what gets expanded next.
        ka, kb = na[keep], nb[keep]
        ca, ra = a.spheres(ka)
        cb, rb = B.spheres(kb)
        depth = ra + rb - np.linalg.norm(ca - cb, axis=1)
        order = np.argsort(-depth, kind="stable")
        return ka[order], kb[order], same[keep][order]
    return na[keep], nb[keep], same[keep]


def _leaf_triangles(a: Volumes, B: Volumes, na: np.ndarray, nb: np.ndarray,
                    same: np.ndarray, both: np.ndarray
                    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The candidate triangle pairs of the overlapping node pairs (na, nb) that are both
    leaves (`both`, (n,) bool): two leaves' triangle pairs, and a leaf's own unordered
    triangle pairs when paired with itself (`same`). Returns lists of (K,) int64 parts."""
    ha, hb = a.hierarchy, B.hierarchy
    tri_a_parts, tri_b_parts = [], []
    if (both & ~same).any():
        # Kinds whose leaves hold many triangles filter the cartesian product.
        leaves = narrow_phase(a, B).leaves
        t = leaves(a, na[both & ~same], B, nb[both & ~same]) if leaves is not None else None
        if t is None:
            t = leaf_triangle_pairs(ha, na[both & ~same], hb, nb[both & ~same])
        tri_a_parts.append(t[0])
        tri_b_parts.append(t[1])
    if (both & same).any():
        # A leaf with several triangles against itself: its own triangle pairs.
        leaves = na[both & same]
        s, c = ha.leaf_ptr[leaves], ha.leaf_ptr[leaves + 1] - ha.leaf_ptr[leaves]
        ia, ib = _unordered_pairs(s[c > 1], c[c > 1], with_self=False)
        tri_a_parts.append(ha.leaf_tris[ia])
        tri_b_parts.append(ha.leaf_tris[ib])
    return tri_a_parts, tri_b_parts


def _child_pairs(a: Volumes, B: Volumes, na: np.ndarray, nb: np.ndarray, same: np.ndarray,
                 leaf_a: np.ndarray, leaf_b: np.ndarray, both: np.ndarray
                 ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The child pairs of the overlapping node pairs (na, nb) not both leaves: a node with
    itself gives the unordered pairs of its children (each with itself too); otherwise
    descend into the larger volume, or into whichever is not a leaf. Returns lists of
    (K,) int64 parts (empty when there are none)."""
    ha, hb = a.hierarchy, B.hierarchy
    new_a, new_b = [], []
    self_inner = same & ~leaf_a
    if self_inner.any():
        nodes = na[self_inner]
        pa, pb = _unordered_pairs(ha.first_child[nodes].astype(np.int64),
                                  ha.child_count[nodes].astype(np.int64), with_self=True)
        new_a.append(pa)
        new_b.append(pb)
    # Otherwise descend into the larger volume, or into whichever is not a leaf.
    rest = ~same & ~both
    if rest.any():
        ra, rb = na[rest], nb[rest]
        la, lb = leaf_a[rest], leaf_b[rest]
        split_a = ~la & (lb | (a.size(ra) >= B.size(rb)))
        if split_a.any():
            owner, kids = children(ha, ra[split_a])
            new_a.append(kids)
            new_b.append(rb[split_a][owner])
        if (~split_a).any():
            owner, kids = children(hb, rb[~split_a])
            new_a.append(ra[~split_a][owner])
            new_b.append(kids)
    return new_a, new_b
