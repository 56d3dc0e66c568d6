"""The self traversal of one frame's boxes (`FrameBoxes`), level by level: the candidates
of level l are the overlapping seeds of l (`seeds`) plus the four child pairs of every
overlapping candidate of level l - 1 (`descend`), fetched in one gather. Touching pairs
(rest-adjacent triangles below them) are never generated. Whole (`candidate_leaf_pairs`)
or, for a capped frame, lazily in blocks (`_capped_leaf_blocks`).
"""
from __future__ import annotations

import numpy as np

from .descend import _children, _moved_heap, _with_moved
from .frame import FrameBoxes
from .seeds import _seed_pass
from .self_tree import SelfTree

#: Parent pairs expanded per block by `candidate_leaf_pairs` (see `EXACT_BLOCK`).
LEVEL_BLOCK = 1 << 16

#: Candidate leaf pairs per block that a capped frame hands to the exact test (then asks
#: `enough`). Gathering all of a dense frame's candidates at once was memory-bound: on
#: MakeHuman in a pose with limbs scaled up to 5x (10M candidates), blocks of 2**18
#: halved the exact test's time (`python -m bench dense-pairs pose 0.002 5 1`); the exact
#: test now gathers per block of its own (`core.triangles._BLOCK`).
EXACT_BLOCK = 1 << 18


def candidate_leaf_pairs(tree: SelfTree, fb: FrameBoxes,
                         moved: list[np.ndarray] | None = None
                         ) -> tuple[np.ndarray, np.ndarray, int]:
    """Leaf slot pairs (a < b, not rest-touching) whose boxes overlap (the frame's boxes
    `fb`), and the number of box tests made. With `moved` (`moved_levels`), only the pairs
    with a moved triangle."""
    pa = np.zeros(0, np.intp)
    pb = np.zeros(0, np.intp)
    seeds, tests = _seed_pass(tree, fb, moved)
    moved = _moved_heap(moved)
    # Nodes by heap row on every level (`FrameBoxes.heap`): a level's seeds and the
    # children of the level above need no renumbering.
    rows = fb.heap
    for level in range(1, tree.height + 1):
        parts_a, parts_b = [], []
        for s0 in range(0, pa.size, LEVEL_BLOCK):
            # In blocks, so that a dense frame's temporaries stay in cache.
            ca, cb, t = _children(rows, pa[s0:s0 + LEVEL_BLOCK], pb[s0:s0 + LEVEL_BLOCK])
            tests += t
            parts_a.append(ca)
            parts_b.append(cb)
        for sa, sb in seeds[level]:
            if sa.size:
                parts_a.append(sa)
                parts_b.append(sb)
        if not parts_a:
            pa, pb = pa[:0], pb[:0]
            continue
        pa = np.concatenate(parts_a) if len(parts_a) > 1 else parts_a[0]
        pb = np.concatenate(parts_b) if len(parts_b) > 1 else parts_b[0]
        pa, pb = _with_moved(moved, pa, pb)
    S = tree.n_slots
    return pa - S, pb - S, tests



def _capped_leaf_blocks(tree: SelfTree, fb: FrameBoxes, budget: int,
                        counts: dict, moved: list[np.ndarray] | None = None):
    """Blocks (a, b) of candidate leaf slot pairs, as `candidate_leaf_pairs` finds them
    (the union of the blocks is its answer when they are all taken), generated lazily for
    a capped frame: level by level over the whole frame while that stays small; once a
    level's pairs could make more than `budget` leaf pairs (4 children each), the rest is
    descended a prefix at a time (a chunk of that level's pairs down to the leaves, then
    the next chunk, then the seeds of the deeper levels), so that a consumer that stops
    after `budget` leaf pairs only pays for the part it took. Box tests are added to
    ``counts["box_tests"]``; ``counts["prefix"]`` is set when the prefix mode starts."""
    H = tree.height
    S = tree.n_slots
    rows = fb.heap                                # nodes by heap row, as in candidate_leaf_pairs

    def expand(pa, pb):
        """The overlapping child pairs of overlapping pairs (pa, pb) (no seeds)."""
        parts_a, parts_b = [], []
        for s0 in range(0, pa.size, LEVEL_BLOCK):
            ca, cb, t = _children(rows, pa[s0:s0 + LEVEL_BLOCK], pb[s0:s0 + LEVEL_BLOCK])
            counts["box_tests"] += t
            parts_a.append(ca)
            parts_b.append(cb)
        if len(parts_a) == 1:
            return _with_moved(moved_heap, parts_a[0], parts_b[0])
        if not parts_a:
            return pa[:0], pb[:0]
        return _with_moved(moved_heap, np.concatenate(parts_a), np.concatenate(parts_b))

    def level_seeds(level):
        parts = seeds[level]
        return (np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts]))

    pa = np.zeros(0, np.intp)
    pb = np.zeros(0, np.intp)
    seeds, t = _seed_pass(tree, fb, moved)
    moved_heap = _moved_heap(moved)
    counts["box_tests"] += t
    for level in range(1, H + 1):
        ca, cb = expand(pa, pb)
        sa, sb = level_seeds(level)
        pa = np.concatenate([ca, sa]) if sa.size else ca
        pb = np.concatenate([cb, sb]) if sb.size else cb
        if level < H and 4 * pa.size > budget:
            break
    else:
        for k in range(0, pa.size, EXACT_BLOCK):
            yield pa[k:k + EXACT_BLOCK] - S, pb[k:k + EXACT_BLOCK] - S
        return
    # Dense: a prefix at a time. The chunk of parent pairs adapts to the leaf pairs that
    # each one gave so far, aiming at `EXACT_BLOCK` leaf pairs per chunk.
    counts["prefix"] = True
    items = [(level, pa, pb)]
    m = level
    while items:
        lv, qa, qb = items.pop()
        chunk, k = 256, 0
        while k < qa.size:
            xa, xb = qa[k:k + chunk], qb[k:k + chunk]
            n0 = xa.size
            k += n0
            for _ in range(lv + 1, H + 1):
                xa, xb = expand(xa, xb)
            per_pair = max(xa.size / n0, 1e-3)
            chunk = int(min(max(EXACT_BLOCK / per_pair, 16), 4 * chunk))
            for s0 in range(0, xa.size, EXACT_BLOCK):
                yield xa[s0:s0 + EXACT_BLOCK] - S, xb[s0:s0 + EXACT_BLOCK] - S
        if not items and m < H:
            # The seeds of the next deeper level are the next item.
            m += 1
            items.append((m, *level_seeds(m)))
