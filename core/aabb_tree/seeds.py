"""The seed pass of the self traversal: the precomputed seed node pairs of every level
(`SelfTree.seeds`, the pairs that are not below any tested parent pair) whose boxes overlap
this frame, in one pass over all levels, with the separating-column hints each seed keeps
from frame to frame; half seeds (a node against a coarser one) stand for their two seeds.
"""
from __future__ import annotations

import numpy as np

from .boxes import _ALL, SWAP, _no_positive, as_rows
from .frame import FrameBoxes
from .self_tree import SelfTree
from .tree import merged_seed_hints, seed_hints, seeds_of_nodes


def _first_apart(s: np.ndarray) -> np.ndarray:
    """(m,) intp: per row of (m, 8) float32 sums ``lo_a - hi_b`` (pads -inf), the first
    column with a positive sum, i.e. one that proves the boxes apart (0 if none; every
    caller's rows have one). The 8 comparison bytes read as one uint64 whose lowest set
    bit is at 8 * byte, and ``frexp`` of that power of two is exact (a per-row argmax
    is ten times slower)."""
    x = (s > 0).view(np.uint64)[:, 0]
    low = x & (~x + np.uint64(1))
    byte = (np.frexp(low.astype(np.float64))[1] - 1) >> 3
    return byte if np.little_endian else 7 - byte


#: Seeds tested per block by `_seed_pass`: one pass over all levels saves numpy calls on
#: small meshes; blocks keep a large mesh's temporaries in cache (one block of all of
#: MakeHuman 107k's 1M seeds was 1.6 ms slower per frame than per level). Since half
#: seeds (167k seed tests on MakeHuman 27k), 2**17 beat 2**16 by 0.1-0.15 ms on
#: MakeHuman 27k and Cesium Man 28k and by 0.2 ms at 107k, with 2**18 no better
#: (interleaved in one process, every frame).
SEED_BLOCK = 1 << 17


def _seed_pass(tree: SelfTree, fb: FrameBoxes, moved: list[np.ndarray] | None = None
               ) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    """The seeds of every level whose boxes overlap, in one pass over all levels (the
    seeds do not depend on the traversal), and the number of box tests. With `moved`
    (`moved_levels`), only the seeds with a moved node are tested.

    Returns ([per level 0..H, a list of (a, b) parts: (k,) intp node pairs of that
    level in heap numbering], tests).
    """
    H = tree.height
    X, Xs = fb.stack
    flat = X.ravel()
    rows, rows_s = as_rows(X), as_rows(Xs)
    seeds, nodes_a, nodes_b = [], [], []
    with tree.hint_lock:
        # A whole frame tests the merged seeds (half seeds among them); a carried query
        # the seeds of its moved nodes, from the plain list and its index.
        ptr, ha, hb = merged_seed_hints(tree) if moved is None else seed_hints(tree)
        at = None
        if moved is not None:
            # The seeds of the moved nodes, from the tree's node -> seeds index (a pose
            # edit moves a few nodes: no pass over all the seeds).
            at = np.concatenate([np.zeros(0, np.intp)] + [
                seeds_of_nodes(tree, lv, np.flatnonzero(moved[lv]), moved[lv]) + ptr[lv]
                for lv in range(1, H + 1) if ptr[lv + 1] > ptr[lv]])
            at.sort()
        tests = int(ha.size if at is None else at.size)
        for k in range(0, tests, SEED_BLOCK):
            if at is None:
                fa, fb_ = ha[k:k + SEED_BLOCK], hb[k:k + SEED_BLOCK]
            else:
                fa, fb_ = np.take(ha, at[k:k + SEED_BLOCK]), np.take(hb, at[k:k + SEED_BLOCK])
            # First the one coordinate that last separated the seed (most seeds are
            # neighbours that stay apart along it from frame to frame), then all six for
            # the others.
            maybe = np.flatnonzero(np.take(flat, fa) + np.take(flat, fb_) <= 0)
            maybe = maybe + k if at is None else np.take(at[k:k + SEED_BLOCK], maybe)
            # A hint is 8 * node + column: the nodes come from the hints just read (warm
            # in cache) instead of the node lists (another 4 MB on MakeHuman).
            ma = np.take(ha, maybe)
            ma >>= 3
            mb = np.take(hb, maybe)
            mb >>= 3
            s = np.take(rows, ma).view(np.float32).reshape(-1, 8)
            s += np.take(rows_s, mb).view(np.float32).reshape(-1, 8)
            over = _no_positive(s)
            apart = np.flatnonzero(~over)
            if apart.size:
                # Apart, but not along the hinted coordinate: hint one that separates
                # them now (a positive sum), for the next frame.
                col = _first_apart(np.take(s, apart, axis=0))
                w = np.take(maybe, apart)
                ha[w] = np.take(ma, apart) * 8 + col
                hb[w] = np.take(mb, apart) * 8 + np.take(SWAP, col)
            ok = np.flatnonzero(over)
            seeds.append(np.take(maybe, ok))
            nodes_a.append(np.take(ma, ok))
            nodes_b.append(np.take(mb, ok))
    if not seeds:
        seed = ma = mb = np.zeros(0, np.intp)
    else:
        seed, ma, mb = (np.concatenate(x) for x in (seeds, nodes_a, nodes_b))
    cut = np.searchsorted(seed, ptr)              # seeds are sorted by level
    out = [[(ma[cut[lv]:cut[lv + 1]], mb[cut[lv]:cut[lv + 1]])] for lv in range(H + 1)]
    if moved is None:
        # The half seeds that passed (after every seed, by level) stand for their two
        # seeds: those whose boxes overlap join their level.
        h0 = cut[H + 1]
        ca, cb, at = _half_children(fb, ma[h0:], mb[h0:], cut[H + 1:] - h0)
        tests += 2 * (ma.size - h0)
        for level in range(H + 1):
            if at[level + 1] > at[level]:
                out[level].append((ca[at[level]:at[level + 1]], cb[at[level]:at[level + 1]]))
    return out, tests


def _half_children(fb: FrameBoxes, fine: np.ndarray, coarse: np.ndarray, cut: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seeds stood for by half seeds whose boxes overlap: per half seed (finer node
    `fine` of level l, coarser `coarse` of level l - 1, both (m,) heap rows), the pairs
    of the finer node with each child of the coarser one whose boxes overlap, in heap
    numbering, and where each level's start: (ca, cb, at), at[l] the first pair of level
    l (`cut` (H + 2,) intp splits the half seeds by level the same way)."""
    X, Xs = fb.stack
    m = fine.size
    # The finer node's row twice (two 16-byte halves each, gathered as [0 1 0 1])
    # against the coarser node's two children, one 64-byte record (the children of
    # heap row r are rows 2r and 2r + 1).
    a = np.take(np.take(X.view(np.complex128), fine, axis=0), _TWICE, axis=1)
    b = np.take(fb.heap[3], coarse)
    ok = (a.view(np.float32) + b.view(np.float32).reshape(m, 16) <= 0).view(np.uint64) == _ALL
    k = np.flatnonzero(ok)
    q = k >> 1
    ca = np.take(fine, q)
    cb = np.take(coarse, q)
    cb <<= 1
    cb += k & 1
    return ca, cb, np.searchsorted(q, cut)       # q is sorted


#: A row's two 16-byte halves, twice.
_TWICE = np.array([0, 1, 0, 1])
