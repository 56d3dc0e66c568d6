"""Exact self-collision of one mesh per frame, faster than rebuilding a BVH.

`build` (once, at rest) makes a balanced AABB tree topology and the rest-adjacency
structure; `self_pairs` (per frame) refits float32 boxes from the evaluated positions and
the frame's triangles, traverses level by level, and decides leaf pairs with the exact
float64 triangle test. Pure numpy. Soundness: docs/self_collision.md.
"""
from __future__ import annotations

import numpy as np

from .query import cross_pairs, self_pairs
from .tree import SelfTree, build

__all__ = ["SelfTree", "build", "self_pairs", "cross_pairs", "for_object", "object_self_pairs"]


def for_object(obj) -> SelfTree:
    """The `SelfTree` of a `scan.CollisionObject`, built on first use and kept on it."""
    if obj.self_tree is None:
        obj.self_tree = obj.own_aabb_tree()     # a box-tree object: its tree is this one
    if obj.self_tree is None:
        rig = obj.rig
        # The object's weld ids (`core.welds`): the same adjacency as every other query.
        obj.self_tree = build(rig.rest_positions, rig.triangles, obj.vertex_keys)
    return obj.self_tree


#: An incremental query (`object_self_pairs` with carried pairs) pays off while few
#: triangles moved; above this fraction the whole mesh is queried again (a cost choice:
#: both answers are the same).
CARRY_MAX_MOVED = 0.5


def object_self_pairs(obj, positions: np.ndarray, tris: np.ndarray | None = None,
                      stats=None, enough=None) -> np.ndarray:
    """Self pairs of a `scan.CollisionObject` at one frame: (K, 2) int64, t < u, sorted.

    Args:
        positions: (V, 3) float64 evaluated positions. tris: (T, 3) the frame's triangles
            (default: the rest triangles). stats: optional `traversal.QueryStats`, given
            the exact-test count and, in ``extra``, the box tests and re-split pairs
            (and ``stopped``). enough: `self_pairs`' early stop for capped frames.

    When the object asks for it (``obj.carry_self_pairs``, set by the live overlay while
    the artist poses), the last complete answer is kept with its positions and triangles,
    and the next call re-checks only what moved: a triangle moved when one of its
    vertices' positions differs bit for bit, or its vertex indices do (a re-split quad).
    Pairs of two unmoved triangles are carried over (their exact test and adjacency see
    the same numbers); pairs with a moved triangle are traversed and tested as always
    (`self_pairs(moved=...)`). The union is the full query's answer
    (docs/self_collision.md, "Carried pairs"; tests/core/test_self_collision.py compares them).
    """
    tree = for_object(obj)
    if tris is None:
        tris = obj.rig.triangles
    positions = np.asarray(positions, np.float64)
    tris = np.asarray(tris)
    carry = bool(obj.carry_self_pairs)
    last = obj.self_last if carry else None
    obj.self_last = None
    moved = None
    if (last is not None and last[0] is tree and last[1].shape == positions.shape
            and last[2].shape == tris.shape):
        d = positions != last[1]
        moved_v = d[:, 0] | d[:, 1] | d[:, 2]
        mt = np.take(moved_v, tris)
        st = tris != last[2]
        moved = mt[:, 0] | mt[:, 1] | mt[:, 2] | st[:, 0] | st[:, 1] | st[:, 2]
        if np.count_nonzero(moved) > CARRY_MAX_MOVED * moved.size:
            moved = None
    counts: dict = {}
    if moved is None:
        pairs = self_pairs(tree, positions, tris, tree.weld_ids, stats=counts, enough=enough)
    else:
        prev = last[3]
        carried = prev[~(moved[prev[:, 0]] | moved[prev[:, 1]])]
        see = None
        if enough is not None:
            def see(p):
                return enough(np.concatenate([carried, p]) if carried.size else p)
        new = self_pairs(tree, positions, tris, tree.weld_ids, stats=counts, enough=see,
                         moved=moved)
        pairs = np.concatenate([carried, new])
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    if carry and not counts.get("stopped"):
        obj.self_last = (tree, positions.copy(), tris.copy(), pairs)
    if stats is not None:
        stats.triangle_tests += counts["triangle_tests"]
        stats.extra.update(counts)
    return pairs
