"""The exact AABB triangle tree, a bounds structure of float32 boxes: its build at rest
(`tree`, with the shared `SelfTree` shape in `self_tree`), its outward-rounded boxes
(`boxes`, `slabs`), and its self and cross traversals (`query`). The sphere bounds are in
`core/bounds/`; the `box-tree` method that uses this tree for every pair is
`core.methods.box_tree`; what an object keeps of its tree between frames (the carried
pairs of a pose edit) is the frame pipeline's, `core.scan.carry`.

Exact self-collision of one mesh per frame, faster than rebuilding a BVH:
`build` (once, at rest) makes a balanced AABB tree topology and the rest-adjacency
structure; `self_pairs` (per frame) refits float32 boxes from the evaluated positions and
the frame's triangles, traverses level by level, and decides leaf pairs with the exact
float64 triangle test. Pure numpy. Soundness: docs/self_collision.md.
"""
from __future__ import annotations

from .query import FrameBoxes, cross_candidates_moved, cross_pairs, frame_boxes, self_pairs, update_frame_boxes
from .tree import SelfTree, build

__all__ = ["SelfTree", "FrameBoxes", "build", "self_pairs", "cross_pairs", "frame_boxes",
           "update_frame_boxes", "cross_candidates_moved"]
