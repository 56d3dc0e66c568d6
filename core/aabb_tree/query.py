"""Per-frame exact self-collision over a `SelfTree`: refit boxes, traverse, test.

* Boxes: float32, rounded OUTWARD per vertex coordinate (`outward_f32`), so a float32
  box always contains the float64 box of the same triangles; comparisons of float32
  values are exact, so two boxes whose float64 boxes overlap always pass the test
  (`docs/self_collision.md`).
* Each level stores its boxes as (n, 8) rows ``[lo, pad, -hi, pad]``; the parent row is
  the min of its two children's rows (exact). Boxes A and B overlap iff every entry of
  ``row_A + swap(row_B)`` is <= 0, ``swap`` exchanging lo and -hi: each sum is the
  rounded ``lo - hi`` of two float32 values, whose sign is exact; an empty slot is
  ``+inf`` and never overlaps.
* Traversal, level by level: the candidates of level l are the precomputed seeds of l
  (`SelfTree.seeds`) plus the four child pairs of every overlapping candidate of level
  l - 1, fetched in one gather. Touching pairs (rest-adjacent triangles below them) are
  never generated.
* Leaves: float32 bounds on the cube diagonals (`slabs`) prove most candidate pairs
  apart; the exact float64 test of `core.triangles` decides the others; hits sharing a
  key of the frame's triangles are dropped. Rest-adjacent pairs that stop being adjacent
  in this frame (a polygon re-split) are added from the rest adjacency lists.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import triangles as tri_test
from .boxes import (  # noqa: F401 (outward_f32 and boxes_overlap are re-exported)
    _ALL,
    SWAP,
    _no_positive,
    as_rows,
    boxes_overlap,
    frame_stack,
    level_boxes,
    outward_f32,
    swap_halves,
    triangle_boxes,
)
from .slabs import slabs_apart
from .tree import SelfTree, merged_seed_hints, seed_hints, seeds_of_nodes

_ROW2 = np.dtype((np.void, 64))


#: Parent pairs expanded per block by `candidate_leaf_pairs` (see `EXACT_BLOCK`).
LEVEL_BLOCK = 1 << 16


def _level_rows(X: np.ndarray, Xs: np.ndarray, level: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Level `level`'s rows (2**l, 8) and swapped rows, views of the stacked rows `X` and
    `Xs` (`boxes.stacked_boxes`), and both as sibling-pair records (one 64-byte record per
    pair of siblings) for the children gathers (views: an update of the rows shows in
    all of them)."""
    R, Rs = X[1 << level:2 << level], Xs[1 << level:2 << level]
    if level == 0:                            # the root has no sibling
        none = R[:0].reshape(0, 16).view(_ROW2).ravel()
        return R, Rs, none, none
    return R, Rs, R.reshape(-1, 16).view(_ROW2).ravel(), Rs.reshape(-1, 16).view(_ROW2).ravel()


@dataclass
class FrameBoxes:
    """One frame's boxes over a `SelfTree`, and the frame's keys.

    A carried query (pose edits, `object_self_pairs`) keeps them and updates only the
    rows of moved triangles and their ancestors (`update_frame_boxes`); the result is
    bit for bit the boxes of a fresh `frame_boxes` (min/max and the outward rounding are
    the same operations on the same numbers).

    Attributes:
        keys: (T, 3) int64 welded keys of the frame's triangles.
        resplit: (T,) bool, the triangles whose keys differ from the rest keys (a polygon
            split the other way): only they can make re-split pairs (`_resplit_pairs`).
        stack: the (2**(H+1), 8) float32 rows of every level (`boxes.stacked_boxes`)
            and their swapped copy, of which `rows` and `heap` are views.
    """

    keys: np.ndarray
    resplit: np.ndarray
    stack: tuple[np.ndarray, np.ndarray]

    @property
    def rows(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per level 0..H, `_level_rows`' four arrays: (2**l, 8) float32 rows, their
        swapped copy, and their sibling-pair record views (views of `stack`, made on
        first use: the whole-frame self query reads `heap` only)."""
        rows = self.__dict__.get("_rows")
        if rows is None:
            X, Xs = self.stack
            height = X.shape[0].bit_length() - 2          # 2**(H+1) rows
            rows = [_level_rows(X, Xs, level) for level in range(height + 1)]
            self.__dict__["_rows"] = rows
        return rows

    @property
    def heap(self) -> tuple[None, None, np.ndarray, np.ndarray]:
        """The stacked rows and swapped rows as sibling-pair records, in the form of a
        level of `rows` for `_children`: record r holds heap rows 2r and 2r + 1, the
        children of heap node r, so the self traversal names nodes by heap row (node k
        of level l is ``2**l + k``) on every level (views of `stack`)."""
        X, Xs = self.stack
        return (None, None, X.reshape(-1, 16).view(_ROW2).ravel(),
                Xs.reshape(-1, 16).view(_ROW2).ravel())


def frame_boxes(tree: SelfTree, positions: np.ndarray, tris: np.ndarray,
                weld_ids: np.ndarray) -> FrameBoxes:
    """The boxes of every level of `tree` for one frame: positions (V, 3) float64, tris
    (T, 3) intp the frame's triangles, weld_ids (V,) int64."""
    X = frame_stack(tree, positions, tris)
    # The swapped rows are the rows with their halves exchanged (the min of each level
    # commutes with that): one gather of 16-byte parts instead of a second refit.
    Xs = swap_halves(X)
    keys = np.take(weld_ids, tris)
    d = keys != tree.rest_keys
    return FrameBoxes(keys, d[:, 0] | d[:, 1] | d[:, 2], (X, Xs))


def update_frame_boxes(fb: FrameBoxes, tree: SelfTree, positions: np.ndarray, tris: np.ndarray,
                       weld_ids: np.ndarray, changed: np.ndarray) -> None:
    """Update `fb` in place for a frame in which only the triangles `changed` ((m,) intp,
    distinct) have other vertex positions or indices than the frame `fb` was made for:
    their boxes and keys, then, level by level up, the rows of their ancestors (O(m H))."""
    if not changed.size:
        return
    v = np.take(tris, changed, axis=0)
    # `triangle_boxes` of the moved triangles' own corners (O(m), not a pass over every
    # vertex): the same rows of the same coordinates.
    corners = np.take(positions, v.ravel(), axis=0)
    box = triangle_boxes(corners, np.arange(corners.shape[0]).reshape(-1, 3))
    keys = np.take(weld_ids, v)
    fb.keys[changed] = keys
    d = keys != np.take(tree.rest_keys, changed, axis=0)
    fb.resplit[changed] = d[:, 0] | d[:, 1] | d[:, 2]
    H = tree.height
    slots = np.take(tree.tri_slot, changed)
    order = np.argsort(slots)
    nodes = np.take(slots, order)
    R = np.take(box, order, axis=0)
    X, Xs = fb.rows[H][0], fb.rows[H][1]
    X[nodes] = R
    Xs[nodes] = swap_halves(R)
    for level in range(H - 1, -1, -1):
        nodes = nodes >> 1                    # sorted: equal parents are neighbours
        first = np.empty(nodes.size, bool)
        first[0] = True
        np.not_equal(nodes[1:], nodes[:-1], out=first[1:])
        nodes = nodes[first]
        # Both children of each node in one gather (siblings are one 64-byte record).
        pair = np.take(fb.rows[level + 1][0].reshape(-1, 2, 8), nodes, axis=0)
        R = np.minimum(pair[:, 0], pair[:, 1])
        fb.rows[level][0][nodes] = R
        fb.rows[level][1][nodes] = swap_halves(R)


def _children(rows, qa: np.ndarray, qb: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The child pairs (on the level of `rows`) of parent pairs (qa, qb) whose boxes
    overlap, and the number of box tests."""
    # Both children of each parent in one gather (a sibling pair of rows is one
    # contiguous 64-byte record). The four child pairs are two contiguous (m, 16) sums,
    # [a0 b0 | a1 b1] and [a0 b1 | a1 b0], the second with B's record halves exchanged
    # (a gather of its four 16-byte parts): a broadcast (m, 2, 1, 8) + (m, 1, 2, 8), or a
    # write into every third column, runs numpy's inner loop a few values at a time and
    # cost several times as much.
    m = qa.size
    a = np.take(rows[2], qa).view(np.float32).reshape(m, 16)
    b = np.take(rows[3], qb)
    flipped = np.take(b.view(np.complex128).reshape(m, 4), _HALVES, axis=1)
    ok = np.empty((2, m, 2), bool)                # [diagonal, crossed][pair][child of A]
    np.equal((a + b.view(np.float32).reshape(m, 16) <= 0).view(np.uint64), _ALL, out=ok[0])
    np.equal((a + flipped.view(np.float32) <= 0).view(np.uint64), _ALL, out=ok[1])
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


#: A capped (live) query sends at most this many candidate triangle pairs through the
#: exact test per frame (`self_pairs`' `budget`). An ordinary MakeHuman frame has about
#: 14,000 (bench/bench_self.py); a pose with limbs scaled up to 5x has 10 million, which
#: Blender's BVHTree tests in C in 0.6-1.9 s and all of which we test in 2.4-6 s; 500,000
#: of them take us 0.2-0.5 s (bench/bench_dense_pairs.py pose 0.002 5 1).
CANDIDATE_BUDGET = 500_000


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


#: Candidate leaf pairs per block that a capped frame hands to the exact test (then asks
#: `enough`). Gathering all of a dense frame's candidates at once was memory-bound: on
#: MakeHuman in a pose with limbs scaled up to 5x (10M candidates), blocks of 2**18
#: halved the exact test's time (bench/bench_dense_pairs.py pose 0.002 5 1); the exact
#: test now gathers per block of its own (`core.triangles._BLOCK`).
EXACT_BLOCK = 1 << 18


def exact_test(positions: np.ndarray, tris: np.ndarray, ta: np.ndarray, tb: np.ndarray,
               counts: dict | None = None) -> np.ndarray:
    """(K,) bool: whether triangle pairs (ta[k], tb[k]) of one mesh (positions (V, 3)
    float64, tris (T, 3) intp) intersect: the float64 test of `core.triangles` decides,
    on the pairs that the diagonal slabs (`slabs.slabs_apart`, a float32 proof of
    separation) do not prove apart. They prove 86-89% of a frame's leaf pairs apart, for
    about a third of the float64 test's time on those pairs (a MakeHuman 27k frame's
    14.6k candidates: 0.34 ms, against 1.1 ms). `counts`, when given, adds the pairs the
    slabs dismissed to ``counts["slab_apart"]``."""
    hit = np.zeros(ta.size, bool)
    if not ta.size:
        return hit
    coords = np.ascontiguousarray(np.asarray(positions, np.float64).T)
    corners = np.ascontiguousarray(np.asarray(tris, np.intp).T)
    ca, cb = np.take(corners, ta, axis=1), np.take(corners, tb, axis=1)
    rest = np.flatnonzero(~slabs_apart(coords, ca, cb))
    if counts is not None:
        counts["slab_apart"] = counts.get("slab_apart", 0) + int(ta.size - rest.size)
    if rest.size:
        hit[rest] = tri_test.corner_pairs_intersect(coords, np.take(ca, rest, axis=1),
                                                    coords, np.take(cb, rest, axis=1))
    return hit


def _keys_adjacent(keys: np.ndarray, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
    a, b = keys[ta], keys[tb]
    return (a[:, :, None] == b[:, None, :]).any(axis=(1, 2))


def _resplit_pairs(tree: SelfTree, keys: np.ndarray, fb: FrameBoxes,
                   resplit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rest-adjacent triangle pairs that are not adjacent with this frame's keys and whose
    boxes overlap: only triangles whose keys changed (`resplit`, (T,) bool) can produce
    them, from their rest-adjacency lists."""
    changed = np.flatnonzero(resplit)
    if changed.size == 0:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    deg = tree.adj_ptr[changed + 1] - tree.adj_ptr[changed]
    ta = np.repeat(changed, deg)
    start = np.repeat(tree.adj_ptr[changed] - np.cumsum(deg) + deg, deg)
    tb = tree.adj_idx[start + np.arange(ta.size)]
    # Each pair once without a sort: the adjacency lists are symmetric and hold each pair
    # once per side (`rest_adjacent_pairs`), so a pair is taken from its smaller triangle
    # when both changed, and from the one that changed otherwise.
    once = np.flatnonzero((ta < tb) | ~np.take(resplit, tb))
    ta, tb = np.take(ta, once), np.take(tb, once)
    ta, tb = np.minimum(ta, tb), np.maximum(ta, tb)
    keep = ~_keys_adjacent(keys, ta, tb)
    ta, tb = ta[keep], tb[keep]
    X, Xs = fb.stack
    S = tree.n_slots
    ok = boxes_overlap(np.take(X, np.take(tree.tri_slot, ta) + S, axis=0),
                       np.take(Xs, np.take(tree.tri_slot, tb) + S, axis=0))
    return ta[ok], tb[ok]


def self_pairs(tree: SelfTree, positions: np.ndarray, tris: np.ndarray,
               weld_ids: np.ndarray, stats: dict | None = None,
               enough=None, budget: int | None = None,
               moved: np.ndarray | None = None, frame: FrameBoxes | None = None) -> np.ndarray:
    """Every intersecting, non-adjacent pair of triangles of one mesh in one frame.

    Args:
        tree: the mesh's `SelfTree` (same triangle index set).
        positions: (V, 3) float64 evaluated positions (the exact test's truth).
        tris: (T, 3) int the frame's triangles (a polygon may be split differently from
            the rest; triangle t still belongs to the same polygon).
        weld_ids: (V,) int welded vertex ids; triangles sharing ``weld_ids[tris]`` keys
            are adjacent and never reported.
        stats: optional dict, filled with counts: box tests, exact triangle tests (the
            candidate pairs examined), re-split pairs, and ``tested_triangles``, the
            number of triangles that reach at least one exact test (the rest of the
            surface is culled by boxes and adjacency alone), ``stopped`` (see `enough`)
            and ``dense`` (see `budget`).
        enough: optional f(pairs) -> bool, asked after each block of candidates with the
            (K, 2) pairs found so far: True stops the exact tests there (a capped frame:
            the pairs returned are then a subset, ``stopped`` is set in `stats`). None
            (and no `budget`): every pair.
        budget: for a capped frame (default `CANDIDATE_BUDGET` when `enough` is given):
            at most this many candidate pairs go through the exact test. A frame with
            more (a dense frame) is traversed a prefix at a time and stops there:
            ``stopped`` and ``dense`` are set and the pairs are a subset.
        moved: optional (T,) bool: only the pairs with at least one triangle of `moved`
            are traversed, tested and returned (the pairs of two unmoved triangles are
            the caller's, carried over from a frame with the same geometry for them:
            `object_self_pairs`).
        frame: optional `FrameBoxes` of this frame (`frame_boxes`, or a kept one brought
            up to date by `update_frame_boxes`); made here when None.
    Returns:
        (K, 2) int64 pairs (t < u), lexicographically sorted.
    """
    positions = np.asarray(positions, np.float64)
    tris = np.asarray(tris, np.intp)
    if frame is None:
        frame = frame_boxes(tree, positions, tris, np.asarray(weld_ids, np.int64))
    keys = frame.keys
    levels = None
    ra, rb = _resplit_pairs(tree, keys, frame, frame.resplit)
    if moved is not None:
        moved = np.asarray(moved, bool)
        levels = moved_levels(tree, moved)
        if ra.size:
            keep = np.flatnonzero(moved[ra] | moved[rb])
            ra, rb = ra[keep], rb[keep]
    stopped = dense = False
    if enough is None and budget is None:
        sa, sb, tests = candidate_leaf_pairs(tree, frame, levels)
        ta, tb = np.take(tree.slot_tri, sa), np.take(tree.slot_tri, sb)
        if ra.size:
            ta, tb = np.concatenate([ta, ra]), np.concatenate([tb, rb])
        counts = {"slab_apart": 0}
        hit = exact_test(positions, tris, ta, tb, counts)
        ha, hb = ta[hit], tb[hit]
        if ha.size:
            # Pairs not rest-adjacent may share a key after a re-split: drop them.
            far = ~_keys_adjacent(keys, ha, hb)
            ha, hb = ha[far], hb[far]
        n_tested = int(ta.size)
        touched = None
    else:
        if budget is None:
            budget = CANDIDATE_BUDGET
        counts = {"box_tests": 0, "slab_apart": 0}
        blocks = _capped_leaf_blocks(tree, frame, budget, counts, levels)
        parts_a, parts_b, n_found, n_tested = [], [], 0, 0
        touched = np.zeros(tris.shape[0], dtype=bool)
        first = (ra, rb) if ra.size else None
        while True:
            if first is not None:
                ba, bb = first
                first = None
            else:
                block = next(blocks, None)
                if block is None:
                    break
                ba, bb = tree.slot_tri[block[0]], tree.slot_tri[block[1]]
            if not ba.size:
                continue
            if n_tested >= budget:
                stopped = dense = True            # candidates left, none may be tested
                break
            if ba.size > budget - n_tested:
                ba, bb = ba[:budget - n_tested], bb[:budget - n_tested]
            n_tested += ba.size
            touched[ba] = True
            touched[bb] = True
            hit = exact_test(positions, tris, ba, bb, counts)
            xa, xb = ba[hit], bb[hit]
            if xa.size:
                far = ~_keys_adjacent(keys, xa, xb)
                parts_a.append(xa[far])
                parts_b.append(xb[far])
                n_found += int(np.count_nonzero(far))
            if n_found and enough is not None:
                so_far = np.stack([np.concatenate(parts_a), np.concatenate(parts_b)], axis=1)
                if enough(so_far):
                    stopped = True
                    break
        blocks.close()
        tests = counts["box_tests"]
        ha = np.concatenate(parts_a) if parts_a else ra[:0]
        hb = np.concatenate(parts_b) if parts_b else rb[:0]
    if stats is not None:
        stats["stopped"] = stopped
        stats["dense"] = dense
        if touched is None:
            touched = np.zeros(tris.shape[0], dtype=bool)
            touched[ta] = True
            touched[tb] = True
        stats.update(box_tests=tests, triangle_tests=n_tested, resplit=int(ra.size),
                     slab_apart=counts["slab_apart"],
                     tested_triangles=int(np.count_nonzero(touched)))
    pairs = np.stack([np.minimum(ha, hb), np.maximum(ha, hb)], axis=1).astype(np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def cross_candidates(tree_a: SelfTree, boxes_a: list[np.ndarray], tree_b: SelfTree,
                     boxes_b: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Leaf slot pairs (slot of A, slot of B) of two trees whose float32 boxes overlap,
    level by level from the two roots (the deeper tree keeps descending alone)."""
    return _cross_descend(tree_a, boxes_a.__getitem__, tree_b,
                          lambda lb: np.ascontiguousarray(boxes_b[lb][:, SWAP]))


def _cross_descend(tree_a: SelfTree, rows_a, tree_b: SelfTree, swapped_b,
                   moved_a: list[np.ndarray] | None = None,
                   moved_b: list[np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`cross_candidates` on levels given by functions: ``rows_a(l)`` the (2**l, 8) rows of
    A at level l, ``swapped_b(l)`` the swapped rows of B. With `moved_a` and `moved_b`
    (`moved_levels`), only the node pairs with a node holding a moved triangle are kept
    on every level (every leaf pair with a moved triangle has only such ancestors, so
    none of them is lost: docs/self_collision.md, "Carried pairs between two meshes")."""
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
        la, lb = la + da, lb + db
        X = rows_a(la)
        Y = swapped_b(lb)
        if da and db:
            pa, pb, _ = _children((X, Y, X.reshape(-1, 16).view(_ROW2).ravel(),
                                   Y.reshape(-1, 16).view(_ROW2).ravel()), pa, pb)
        elif da:
            ga = np.take(X.reshape(-1, 16).view(_ROW2).ravel(), pa).view(np.float32).reshape(-1, 2, 8)
            gb = np.take(as_rows(Y), pb).view(np.float32).reshape(-1, 1, 8)
            k = np.flatnonzero(boxes_overlap(ga, gb))
            q = k >> 1
            pa = 2 * np.take(pa, q) + (k & 1)
            pb = np.take(pb, q)
        else:
            ga = np.take(as_rows(X), pa).view(np.float32).reshape(-1, 1, 8)
            gb = np.take(Y.reshape(-1, 16).view(_ROW2).ravel(), pb).view(np.float32).reshape(-1, 2, 8)
            k = np.flatnonzero(boxes_overlap(ga, gb))
            q = k >> 1
            pa = np.take(pa, q)
            pb = 2 * np.take(pb, q) + (k & 1)
        pa, pb = only_moved(pa, pb)
    return pa, pb


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


def cross_pairs(tree_a: SelfTree, pos_a: np.ndarray, tris_a: np.ndarray, tree_b: SelfTree,
                pos_b: np.ndarray, tris_b: np.ndarray) -> np.ndarray:
    """Every intersecting triangle pair between two meshes (exact float64 test), by the
    same float32 box trees; no adjacency rule is applied (the caller's).

    Args: per mesh, its `SelfTree`, (V, 3) float64 positions and (T, 3) frame triangles.
    Returns: (K, 2) int64 (triangle of A, triangle of B), lexicographically sorted.
    """
    tris_a = np.asarray(tris_a, np.intp)
    tris_b = np.asarray(tris_b, np.intp)
    pos_a = np.asarray(pos_a, np.float64)
    pos_b = np.asarray(pos_b, np.float64)
    ba = level_boxes(tree_a, triangle_boxes(pos_a, tris_a))
    bb = level_boxes(tree_b, triangle_boxes(pos_b, tris_b))
    sa, sb = cross_candidates(tree_a, ba, tree_b, bb)
    ta, tb = np.take(tree_a.slot_tri, sa), np.take(tree_b.slot_tri, sb)
    hit = tri_test.triangle_pairs_intersect(pos_a, tris_a, ta, pos_b, tris_b, tb)
    pairs = np.stack([ta[hit], tb[hit]], axis=1).astype(np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
