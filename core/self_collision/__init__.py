"""Exact self-collision of one mesh per frame, faster than rebuilding a BVH.

`build` (once, at rest) makes a balanced AABB tree topology and the rest-adjacency
structure; `self_pairs` (per frame) refits float32 boxes from the evaluated positions and
the frame's triangles, traverses level by level, and decides leaf pairs with the exact
float64 triangle test. Pure numpy. Soundness: docs/self_collision.md.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .query import FrameBoxes, cross_pairs, frame_boxes, self_pairs, update_frame_boxes
from .tree import SelfTree, build

__all__ = ["SelfTree", "Kept", "build", "self_pairs", "cross_pairs", "for_object", "object_self_pairs"]


def for_object(obj) -> SelfTree:
    """The `SelfTree` of a `scan.CollisionObject`, built on first use and kept on it."""
    if obj.self_tree is None:
        obj.self_tree = obj.own_aabb_tree()     # a box-tree object: its tree is this one
    if obj.self_tree is None:
        rig = obj.rig
        # The object's weld ids (`core.welds`): the same adjacency as every other query.
        obj.self_tree = build(rig.rest_positions, rig.triangles, obj.vertex_keys)
    return obj.self_tree


class Kept(NamedTuple):
    """An object's last complete self answer, kept for carried queries (`object_self_pairs`):
    the tree it was computed with, (V, 3) float64 positions and (T, 3) intp triangles of
    that frame (copies owned here, updated in place), its (K, 2) int64 pairs, and the
    frame's boxes (`FrameBoxes`, updated in place for the next edit)."""

    tree: SelfTree
    positions: np.ndarray
    tris: np.ndarray
    pairs: np.ndarray
    boxes: FrameBoxes


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
    tris = np.asarray(tris, np.intp)
    carry = bool(obj.carry_self_pairs)
    last = obj.self_last if carry else None
    obj.self_last = None
    moved = None
    if (last is not None and last.tree is tree and last.positions.shape == positions.shape
            and last.tris.shape == tris.shape):
        d = positions != last.positions
        moved_v = d[:, 0] | d[:, 1] | d[:, 2]
        mt = np.take(moved_v, tris)
        st = tris != last.tris
        moved = mt[:, 0] | mt[:, 1] | mt[:, 2] | st[:, 0] | st[:, 1] | st[:, 2]
        if np.count_nonzero(moved) > CARRY_MAX_MOVED * moved.size:
            moved = None
    counts: dict = {}
    if moved is None:
        boxes = frame_boxes(tree, positions, tris, tree.weld_ids) if carry else None
        pairs = self_pairs(tree, positions, tris, tree.weld_ids, stats=counts, enough=enough,
                           frame=boxes)
    else:
        # Only what moved is brought up to date: the kept boxes, positions and triangles
        # (O(moved) work, docs/self_collision.md "Carried pairs").
        changed = np.flatnonzero(moved)
        boxes = last.boxes
        update_frame_boxes(boxes, tree, positions, tris, tree.weld_ids, changed)
        prev = last.pairs
        carried = prev[~(moved[prev[:, 0]] | moved[prev[:, 1]])]
        see = None
        if enough is not None:
            def see(p):
                return enough(np.concatenate([carried, p]) if carried.size else p)
        new = self_pairs(tree, positions, tris, tree.weld_ids, stats=counts, enough=see,
                         moved=moved, frame=boxes)
        pairs = np.concatenate([carried, new])
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    if carry and not counts.get("stopped"):
        if moved is None:
            obj.self_last = Kept(tree, positions.copy(), tris.copy(), pairs, boxes)
        else:
            moved_v = np.flatnonzero(moved_v)
            last.positions[moved_v] = positions[moved_v]
            last.tris[changed] = tris[changed]
            obj.self_last = last._replace(pairs=pairs)
    if stats is not None:
        stats.triangle_tests += counts["triangle_tests"]
        stats.extra.update(counts)
    return pairs
