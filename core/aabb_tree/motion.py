"""The exact AABB triangle trees over one step of linear motion (issue 57): which triangle
pairs can touch at some time t in [0, 1] while every vertex moves on the straight line
from its position at t = 0 to its position at t = 1.

A node's lowest x over its triangles, ``lo(t)``, is the min of linear functions of t, so
it is concave and never below its chord: ``lo(t) >= (1 - t) lo(0) + t lo(1)``; its
highest, ``hi(t)``, is convex and never above its chord. If nodes A and B share a point
at some t, then ``lo_a(t) <= hi_b(t)``, so ``(1 - t) (lo_a(0) - hi_b(0)) + t (lo_a(1) -
hi_b(1)) <= 0``: the inequality holds at t = 0 or at t = 1. So two nodes are candidates
only when each of the six box inequalities holds at one end of the step or the other
(`_meet`): the boxes of each end, refitted as a frame's (`boxes.frame_stack`, outward
rounded float32 rows whose sums have exact signs), and nothing else.

This pairs the nodes at the same time, so neighbours that move together (a forearm's skin
as the arm swings) keep their frame's distance; the box each node sweeps over the step
would grow with the whole motion (on MakeHuman's walk, 9x the candidate pairs of a
frame, against 1.04x here). Derivation: docs/ccd.md, "Swept bounds".

The self traversal starts from the tree's seeds (node pairs with no rest-adjacent
triangles below them, `SelfTree.seeds`), so adjacent triangles are never generated; the
cross traversal starts from the two roots. Both descend level by level on arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cache import Recent
from .boxes import _no_positive, frame_stack, swap_halves
from .self_tree import SelfTree
from .tree import seed_hints

__all__ = ["StepBoxes", "step_boxes", "self_candidates", "cross_candidates"]

#: Node pairs tested at a time (bounds the temporaries of a dense step).
_BLOCK = 1 << 17


@dataclass
class StepBoxes:
    """A tree's boxes at both ends of a step: per end the (2S, 8) float32 rows of every
    level in heap order (`boxes.frame_stack`: node k of level l is row ``2**l + k``) and
    their swapped copies (`boxes.swap_halves`)."""

    x0: np.ndarray
    s0: np.ndarray
    x1: np.ndarray
    s1: np.ndarray


def step_boxes(tree: SelfTree, p0: np.ndarray, p1: np.ndarray, corners0: np.ndarray,
               corners1: np.ndarray | None = None) -> StepBoxes:
    """The boxes of `tree` at both ends of the step from positions `p0` to `p1` ((V, 3)
    float64). `corners0`, `corners1`: (T, k) intp, per triangle every vertex it has during
    the step (its three corners, or six when Blender splits its polygon differently at
    the two ends: the node must hold both triangles), at t = 0 and t = 1 (default the
    same)."""
    corners1 = corners0 if corners1 is None else corners1
    return StepBoxes(*_end_rows(tree, p0, corners0), *_end_rows(tree, p1, corners1))


# The rows of the last few (tree, positions, corners), by identity (the entries keep them
# alive): a scan's step ends at the sample the next step starts from, so each sample's
# rows are made once.
_ROWS = Recent(8)


def _end_rows(tree: SelfTree, p: np.ndarray, corners: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    def make():
        x = frame_stack(tree, np.asarray(p, np.float64), corners)
        return x, swap_halves(x)
    return _ROWS.get((id(tree), id(p), id(corners)), make, keep=(tree, p, corners))


def _meet(sa: StepBoxes, a: np.ndarray, sb: StepBoxes, b: np.ndarray) -> np.ndarray:
    """(m,) bool: whether nodes a[k] of `sa` and b[k] of `sb` can meet at some t in [0, 1]:
    every inequality holds at t = 0 or at t = 1 (module docstring). Empty slots are
    +inf rows and never meet."""
    s0 = np.take(sa.x0, a, axis=0)
    s0 += np.take(sb.s0, b, axis=0)
    s1 = np.take(sa.x1, a, axis=0)
    s1 += np.take(sb.s1, b, axis=0)
    np.minimum(s0, s1, out=s0)
    return _no_positive(s0)


def _descend(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The four child pairs of node pairs (a, b) (heap rows: the children of r are 2r and
    2r + 1)."""
    ca = (a[:, None] * 2 + _CA).ravel()
    cb = (b[:, None] * 2 + _CB).ravel()
    return ca, cb


_CA = np.array([0, 0, 1, 1])
_CB = np.array([0, 1, 0, 1])


def _test(sa: StepBoxes, a: np.ndarray, sb: StepBoxes, b: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:
    """The node pairs (a, b) that can meet (`_meet`), in blocks."""
    keep = np.zeros(a.size, bool)
    for s in range(0, a.size, _BLOCK):
        keep[s:s + _BLOCK] = _meet(sa, a[s:s + _BLOCK], sb, b[s:s + _BLOCK])
    return a[keep], b[keep]


def _traverse(sa: StepBoxes, sb: StepBoxes, height: int, passed: list
              ) -> tuple[np.ndarray, np.ndarray]:
    """Leaf slot pairs whose nodes can meet: per level 0..H, the pairs `passed` there
    (already tested: (a, b) heap rows) and the children of every pair that passed the
    level above, tested here."""
    a = b = np.zeros(0, np.intp)
    for level in range(height + 1):
        if a.size:
            ca, cb = _descend(a, b)
            a, b = _test(sa, ca, sb, cb)
        pa, pb = passed[level]
        if pa.size:
            a, b = np.concatenate([a, pa]), np.concatenate([b, pb])
    S = 1 << height
    return a - S, b - S


def self_candidates(tree: SelfTree, boxes: StepBoxes) -> tuple[np.ndarray, np.ndarray]:
    """Triangle pairs (ta, tb) of one mesh, never rest-adjacent, that can touch during the
    step (`step_boxes`): the tree's seeds that can meet and their descendants (a node is
    never paired with itself: seeds are pairs of non-touching nodes). (K,) intp each.

    Each seed is first tested on the one coordinate that last separated it in a frame
    (the static query's hint, `tree.seed_hints`, read and not moved): at both ends of the
    step, most neighbours stay apart along it."""
    with tree.hint_lock:
        ptr, ha, hb = seed_hints(tree)
        ha, hb = ha.copy(), hb.copy()
    f0, f1 = boxes.x0.ravel(), boxes.x1.ravel()
    maybe = np.flatnonzero(np.minimum(np.take(f0, ha) + np.take(f0, hb),
                                      np.take(f1, ha) + np.take(f1, hb)) <= 0)
    na, nb = np.take(ha, maybe) >> 3, np.take(hb, maybe) >> 3
    keep = np.zeros(maybe.size, bool)
    for s in range(0, maybe.size, _BLOCK):
        keep[s:s + _BLOCK] = _meet(boxes, na[s:s + _BLOCK], boxes, nb[s:s + _BLOCK])
    at, na, nb = maybe[keep], na[keep], nb[keep]
    cut = np.searchsorted(at, ptr)                       # seeds are sorted by level
    passed = [(na[cut[lv]:cut[lv + 1]], nb[cut[lv]:cut[lv + 1]])
              for lv in range(tree.height + 1)]
    sa, sb = _traverse(boxes, boxes, tree.height, passed)
    ta, tb = tree.slot_tri[sa], tree.slot_tri[sb]
    ok = (ta >= 0) & (tb >= 0)
    return ta[ok], tb[ok]


def cross_candidates(tree_a: SelfTree, boxes_a: StepBoxes, tree_b: SelfTree,
                     boxes_b: StepBoxes) -> tuple[np.ndarray, np.ndarray]:
    """Triangle pairs (ta of A, tb of B) that can touch during the step, from the two
    roots down. Trees of different heights: the shallower one's leaves are kept against
    the deeper one's lower levels (a leaf is its own child). (K,) intp each."""
    Ha, Hb = tree_a.height, tree_b.height
    a = b = np.ones(1, np.intp)
    la = lb = 0
    while True:
        a, b = _test(boxes_a, a, boxes_b, b)
        if (la == Ha and lb == Hb) or not a.size:
            break
        if la < Ha:
            a = np.repeat(a * 2, 2) + np.tile(_CB[:2], a.size)
            b = np.repeat(b, 2)
            la += 1
        if lb < Hb:
            b = np.repeat(b * 2, 2) + np.tile(_CB[:2], b.size)
            a = np.repeat(a, 2)
            lb += 1
    if la < Ha or lb < Hb:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    ta = tree_a.slot_tri[a - (1 << Ha)]
    tb = tree_b.slot_tri[b - (1 << Hb)]
    ok = (ta >= 0) & (tb >= 0)
    return ta[ok], tb[ok]
