"""One step down a pair of box trees, shared by the self and cross traversals: the child
pairs of parent node pairs whose boxes overlap (`_children`), and the filter that keeps
only node pairs holding a moved triangle (`moved_levels`, `_with_moved`), for carried
queries (docs/self_collision.md).

Boxes A and B overlap iff every entry of ``row_A + swap(row_B)`` is <= 0, ``swap``
exchanging lo and -hi: each sum is the rounded ``lo - hi`` of two float32 values, whose
sign is exact; an empty slot is ``+inf`` and never overlaps.
"""
from __future__ import annotations

import numpy as np

from .boxes import _ALL
from .self_tree import SelfTree

#: Two sibling box rows (2 x 8 float32) as one 64-byte record.
_ROW2 = np.dtype((np.void, 64))


def _children(rows, qa: np.ndarray, qb: np.ndarray, block: int | None = None
              ) -> tuple[np.ndarray, np.ndarray, int]:
    """The child pairs (on the level of `rows`) of parent pairs (qa, qb) whose boxes
    overlap, and the number of box tests. `block`: test that many parents at a time
    (the same pairs in the same order; the temporaries of a block stay in cache), or
    all at once (None)."""
    # Both children of each parent in one gather (a sibling pair of rows is one
    # contiguous 64-byte record). The four child pairs are two contiguous (m, 16) sums,
    # [a0 b0 | a1 b1] and [a0 b1 | a1 b0], the second with B's record halves exchanged
    # (a gather of its four 16-byte parts): a broadcast (m, 2, 1, 8) + (m, 1, 2, 8), or a
    # write into every third column, runs numpy's inner loop a few values at a time and
    # cost several times as much.
    m = qa.size
    ok = np.empty((2, m, 2), bool)                # [diagonal, crossed][pair][child of A]
    step = m if block is None else block
    for s in range(0, m, max(step, 1)):
        e = min(s + step, m)
        c = e - s
        a = np.take(rows[2], qa[s:e]).view(np.float32).reshape(c, 16)
        b = np.take(rows[3], qb[s:e])
        flipped = np.take(b.view(np.complex128).reshape(c, 4), _HALVES, axis=1)
        np.equal((a + b.view(np.float32).reshape(c, 16) <= 0).view(np.uint64), _ALL,
                 out=ok[0, s:e])
        np.equal((a + flipped.view(np.float32) <= 0).view(np.uint64), _ALL, out=ok[1, s:e])
    k = np.flatnonzero(ok)
    crossed = k >= 2 * m
    r = k - crossed * (2 * m)
    q = r >> 1
    bit = r & 1                                   # the child of A; B's is bit ^ crossed
    ca = np.take(qa, q)
    ca <<= 1
    ca += bit
    cb = np.take(qb, q)
    cb <<= 1
    cb += bit ^ crossed
    return ca, cb, 4 * m


#: A 64-byte record of two box rows as four 16-byte parts, its two rows exchanged.
_HALVES = np.array([2, 3, 0, 1])


def moved_levels(tree: SelfTree, moved: np.ndarray) -> list[np.ndarray]:
    """Per level 0..H, (2**l,) bool: the node holds a triangle of the (T,) bool `moved`."""
    m = np.zeros(tree.n_slots, bool)
    m[np.take(tree.tri_slot, np.flatnonzero(moved))] = True
    out = [m]
    for _ in range(tree.height):
        out.append(out[-1][0::2] | out[-1][1::2])
    out.reverse()
    return out


def _with_moved(moved: np.ndarray | None, pa: np.ndarray, pb: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """The node pairs (heap numbering) of which at least one node holds a moved triangle
    (all of them without `moved`, the (2 S,) bool heap mask of `moved_levels`). Every
    leaf pair with a moved triangle has only such ancestors, so the filter loses none of
    them (docs/self_collision.md)."""
    if moved is None or not pa.size:
        return pa, pb
    keep = np.flatnonzero(np.take(moved, pa) | np.take(moved, pb))
    return np.take(pa, keep), np.take(pb, keep)


def _moved_heap(moved: list[np.ndarray] | None) -> np.ndarray | None:
    """`moved_levels`' per-level masks as one (2 S,) bool mask in heap order."""
    return None if moved is None else np.concatenate([np.zeros(1, bool)] + moved)
