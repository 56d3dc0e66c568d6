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


def object_self_pairs(obj, positions: np.ndarray, tris: np.ndarray | None = None,
                      stats=None, enough=None) -> np.ndarray:
    """Self pairs of a `scan.CollisionObject` at one frame: (K, 2) int64, t < u, sorted.

    Args:
        positions: (V, 3) float64 evaluated positions. tris: (T, 3) the frame's triangles
            (default: the rest triangles). stats: optional `traversal.QueryStats`, given
            the exact-test count and, in ``extra``, the box tests and re-split pairs
            (and ``stopped``). enough: `self_pairs`' early stop for capped frames.
    """
    tree = for_object(obj)
    if tris is None:
        tris = obj.rig.triangles
    counts: dict = {}
    pairs = self_pairs(tree, positions, tris, tree.weld_ids, stats=counts, enough=enough)
    if stats is not None:
        stats.triangle_tests += counts["triangle_tests"]
        stats.extra.update(counts)
    return pairs
