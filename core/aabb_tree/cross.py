"""Triangle pairs between two meshes by their two box trees: the overlapping leaf slot
pairs, descended level by level from the two roots (the deeper tree keeps descending
alone, several levels at a time), whole (`cross_candidates`) or only those with a moved
triangle (`cross_candidates_moved`, for carried pairs), and the intersecting triangle pairs
(`cross_pairs`, exact float64 test). With a `limit`, the traversal is a bounded amount
of work: it stops (`TooManyPairs`) once a level holds more node pairs than that.
"""
from __future__ import annotations

import numpy as np

from .. import triangles as tri_test
from .boxes import _no_positive, as_rows, boxes_overlap, frame_stack, levels_of, swap_halves
from .descend import _ROW2, _children, moved_levels
from .frame import FrameBoxes
from .self_tree import SelfTree


class TooManyPairs(Exception):
    """A traversal given a `limit` stopped: one of its levels held `count` node pairs,
    more than the limit (the leaf pairs are then not known)."""

    def __init__(self, count: int):
        super().__init__(f"more than {count} node pairs on one level")
        self.count = count


def cross_candidates(tree_a: SelfTree, boxes_a: list[np.ndarray], tree_b: SelfTree,
                     boxes_b: list[np.ndarray], limit: int | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Leaf slot pairs (slot of A, slot of B) of two trees whose float32 boxes overlap,
    level by level from the two roots (the deeper tree keeps descending alone, `_JUMP`
    levels at a time). With `limit`, raises `TooManyPairs` as soon as a level it stops at
    (the leaf level included) holds more than `limit` node pairs: the work done is then
    a few times `limit` per level (at most 2**`_JUMP` tests per pair on a jump), however
    many pairs the two meshes have."""
    return _cross_descend(tree_a, boxes_a.__getitem__, tree_b,
                          lambda lb: swap_halves(np.ascontiguousarray(boxes_b[lb])),
                          limit=limit)


def _cross_descend(tree_a: SelfTree, rows_a, tree_b: SelfTree, swapped_b,
                   moved_a: list[np.ndarray] | None = None,
                   moved_b: list[np.ndarray] | None = None,
                   limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`cross_candidates` on levels given by functions: ``rows_a(l)`` the (2**l, 8) rows of
    A at level l, ``swapped_b(l)`` the swapped rows of B. With `moved_a` and `moved_b`
    (`moved_levels`), only the node pairs with a node holding a moved triangle are kept
    on every level (every leaf pair with a moved triangle has only such ancestors, so
    none of them is lost: docs/self_collision.md, "Carried pairs between two meshes").
    `limit`: as in `cross_candidates`."""
    pa = np.zeros(1, np.intp)
    pb = np.zeros(1, np.intp)
    la = lb = 0

    def only_moved(pa, pb):
        if moved_a is None or not pa.size:
            return pa, pb
        keep = np.flatnonzero(np.take(moved_a[la], pa) | np.take(moved_b[lb], pb))
        return np.take(pa, keep), np.take(pb, keep)

    X, Y = rows_a(0), swapped_b(0)
    ok = boxes_overlap(X[pa], Y[pb])
    pa, pb = only_moved(pa[ok], pb[ok])
    while pa.size and (la < tree_a.height or lb < tree_b.height):
        da, db = la < tree_a.height, lb < tree_b.height
        if da and db:
            la, lb = la + 1, lb + 1
            X, Y = rows_a(la), swapped_b(lb)
            pa, pb, _ = _children((X, Y, X.reshape(-1, 16).view(_ROW2).ravel(),
                                   Y.reshape(-1, 16).view(_ROW2).ravel()), pa, pb,
                                  block=_MASK_BLOCK)
        else:
            # One tree descends alone, `_JUMP` levels at a time (`_descend_alone`).
            if da:
                jump = min(_JUMP, tree_a.height - la)
                la += jump
                pa, pb = _descend_alone(rows_a(la), pa, as_rows(swapped_b(lb)), pb, jump)
            else:
                jump = min(_JUMP, tree_b.height - lb)
                lb += jump
                pb, pa = _descend_alone(swapped_b(lb), pb, as_rows(rows_a(la)), pa, jump)
        pa, pb = only_moved(pa, pb)
        if limit is not None and pa.size > limit:
            raise TooManyPairs(int(pa.size))
    return pa, pb


#: Levels one tree descends at once while the other is at its leaves (a block of 2**3
#: rows, 256 bytes, per node pair).
_JUMP: int = 3

#: Node pairs tested at a time, on a jump (`_descend_alone`) and on a step of both trees
#: (`_children`'s `block`): a block's sums (8192 pairs, 2 MiB on a jump) stay in cache
#: and their memory is reused, where one pass over the 48k pairs under a shirt wrote
#: fresh arrays of 12 MiB each (a step of both trees over 77k pairs where two hands
#: meet: 9.3 -> 7.5 ms for the whole traversal). The self traversal's `_children`
#: measured 2-4% slower in such blocks: it keeps one pass.
_MASK_BLOCK: int = 8192


def _descend_alone(X: np.ndarray, deep: np.ndarray, rows: np.ndarray, other: np.ndarray,
                   jump: int) -> tuple[np.ndarray, np.ndarray]:
    """One tree's nodes `deep` (m,) paired with the other tree's nodes `other` (m,) that
    stays where it is: the pairs (descendant `jump` levels down, other node) whose boxes
    overlap, in the order of as many single steps. X (n, 8) float32: the deep tree's
    rows on the level reached (C-contiguous: a node's descendants are the one block of
    rows ``[node << jump, (node + 1) << jump)``); rows: the other tree's level as (n,)
    row records (`as_rows`). Either side may be the swapped one (the test adds them).

    A descendant whose box overlaps the other node's has ancestors that overlap it too
    (parents are the min/max of their children, exactly), so no pair of the single steps
    is lost and none added; the moved filter needs no intermediate level either (a moved
    triangle's ancestors are moved)."""
    n = 1 << jump
    blocks = X.reshape(-1, 8 << jump).view(np.dtype((np.void, 32 << jump))).ravel()
    m = deep.size
    ok = np.empty((m, n), bool)
    # `_MASK_BLOCK` pairs at a time into one mask (the same order as one pass), and the
    # other node's row repeated once per descendant (32-byte copies) so that the sum is
    # one contiguous (8 m, 8) add: a broadcast (m, 8, 8) + (m, 1, 8) runs numpy's inner
    # loop 8 floats at a time. Under a shirt (48k pairs, 389k tests) 2x faster.
    for s in range(0, m, _MASK_BLOCK):
        e = min(s + _MASK_BLOCK, m)
        g = np.take(blocks, deep[s:e]).view(np.float32).reshape(-1, 8)
        g += np.repeat(np.take(rows, other[s:e]), n).view(np.float32).reshape(-1, 8)
        ok[s:e] = _no_positive(g).reshape(-1, n)
    k = np.flatnonzero(ok)
    q = k >> jump
    return (np.take(deep, q) << jump) + (k & (n - 1)), np.take(other, q)


def cross_candidates_moved(tree_a: SelfTree, frame_a: FrameBoxes, moved_a: np.ndarray,
                           tree_b: SelfTree, frame_b: FrameBoxes, moved_b: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Leaf slot pairs (slot of A, slot of B) whose boxes overlap and of which at least
    one slot holds a moved triangle: (T_A,) and (T_B,) bool `moved_a`, `moved_b`, over the
    two frames' boxes (`FrameBoxes`, e.g. kept ones brought up to date by
    `update_frame_boxes`). The pairs of `cross_candidates` with a moved triangle, and only
    those."""
    return _cross_descend(tree_a, lambda la: frame_a.rows[la][0], tree_b,
                          lambda lb: frame_b.rows[lb][1],
                          moved_levels(tree_a, moved_a), moved_levels(tree_b, moved_b))


def frame_levels(tree: SelfTree, positions: np.ndarray, tris: np.ndarray) -> list[np.ndarray]:
    """The tree's float32 boxes at this frame, per level (`levels_of`), refitted from the
    (V, 3) float64 positions and (T, 3) frame triangles (`frame_stack`). Raises
    ValueError when the tree was built on another number of triangles (a topology change
    the caller did not catch): its slots would name the wrong triangles."""
    if tree.n_triangles != len(tris):
        raise ValueError(f"the tree was built for {tree.n_triangles} triangles, "
                         f"the frame has {len(tris)}")
    X = frame_stack(tree, np.asarray(positions, np.float64), np.asarray(tris, np.intp))
    return levels_of(tree, X)


def cross_triangle_candidates(tree_a: SelfTree, levels_a: list[np.ndarray], tree_b: SelfTree,
                              levels_b: list[np.ndarray], limit: int | None = None
                              ) -> tuple[np.ndarray, np.ndarray]:
    """The triangle pairs between two meshes whose float32 boxes overlap at a frame
    (`cross_candidates` on the trees' `frame_levels`, the leaf slots mapped to triangles).

    Returns: (K,) intp triangles of A and (K,) intp triangles of B: every pair whose
        float64 boxes meet is among them. `limit`: as in `cross_candidates` (raises
        `TooManyPairs`).
    """
    sa, sb = cross_candidates(tree_a, levels_a, tree_b, levels_b, limit)
    return np.take(tree_a.slot_tri, sa), np.take(tree_b.slot_tri, sb)


def cross_pairs(tree_a: SelfTree, pos_a: np.ndarray, tris_a: np.ndarray, tree_b: SelfTree,
                pos_b: np.ndarray, tris_b: np.ndarray) -> np.ndarray:
    """Every intersecting triangle pair between two meshes (exact float64 test, and the
    float64 boxes meet: the rule between objects, `core.scan.exact`), by the same float32
    box trees; no adjacency rule is applied (the caller's).

    Args: per mesh, its `SelfTree`, (V, 3) float64 positions and (T, 3) frame triangles.
    Returns: (K, 2) int64 (triangle of A, triangle of B), lexicographically sorted.
    """
    tris_a = np.asarray(tris_a, np.intp)
    tris_b = np.asarray(tris_b, np.intp)
    pos_a = np.asarray(pos_a, np.float64)
    pos_b = np.asarray(pos_b, np.float64)
    ta, tb = cross_triangle_candidates(tree_a, frame_levels(tree_a, pos_a, tris_a),
                                       tree_b, frame_levels(tree_b, pos_b, tris_b))
    hit = tri_test.triangle_pairs_intersect(pos_a, tris_a, ta, pos_b, tris_b, tb)
    h = np.flatnonzero(hit)
    hit[h[~tri_test.boxes_meet(pos_a, tris_a[ta[h]], pos_b, tris_b[tb[h]])]] = False
    pairs = np.stack([ta[hit], tb[hit]], axis=1).astype(np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
