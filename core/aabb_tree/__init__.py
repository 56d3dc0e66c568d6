"""The exact AABB triangle tree, a bounds structure of float32 boxes: its build at rest
(`tree`, with the shared `SelfTree` shape in `self_tree`), its outward-rounded boxes
(`boxes`, `slabs`), one frame's boxes (`frame`), its self query (`query`: the traversal
`self_traversal` with `seeds` and `descend`, the leaf test `leaves`) and its cross query
(`cross`). The sphere bounds are in `core/bounds/`; the `box-tree` method that uses this
tree for every pair is `core.methods.box_tree`; what an object keeps of its tree between
frames (the carried pairs of a pose edit) is the frame pipeline's, `core.scan.carry`.

Exact self-collision of one mesh per frame, faster than rebuilding a BVH:
`build` (once, at rest) makes a balanced AABB tree topology and the rest-adjacency
structure; `self_pairs` (per frame) refits float32 boxes from the evaluated positions and
the frame's triangles, traverses level by level, and decides leaf pairs with the exact
float64 triangle test. Pure numpy. Soundness: docs/self_collision.md.
"""
from __future__ import annotations

from .cross import TooManyPairs, cross_candidates_moved, cross_pairs, cross_triangle_candidates, frame_levels
from .frame import FrameBoxes, frame_boxes, update_frame_boxes
from .query import self_pairs
from .tree import SelfTree, build

__all__ = ["SelfTree", "FrameBoxes", "build", "self_pairs", "cross_pairs", "frame_boxes",
           "update_frame_boxes", "cross_candidates_moved", "cross_triangle_candidates",
           "frame_levels", "TooManyPairs"]
