"""Per-frame exact self-collision over a `SelfTree` (`self_pairs`): refit boxes, traverse,
test. The parts are modules of this package:

* Boxes (`boxes`, `frame`): float32, rounded OUTWARD per vertex coordinate
  (`outward_f32`), so a float32 box always contains the float64 box of the same
  triangles; comparisons of float32 values are exact, so two boxes whose float64 boxes
  overlap always pass the test (`docs/self_collision.md`).
* Each level stores its boxes as (n, 8) rows ``[lo, pad, -hi, pad]``; the parent row is
  the min of its two children's rows (exact). Boxes A and B overlap iff every entry of
  ``row_A + swap(row_B)`` is <= 0, ``swap`` exchanging lo and -hi: each sum is the
  rounded ``lo - hi`` of two float32 values, whose sign is exact; an empty slot is
  ``+inf`` and never overlaps.
* Traversal (`self_traversal`, `seeds`, `descend`), level by level: the candidates of
  level l are the precomputed seeds of l (`SelfTree.seeds`) plus the four child pairs of
  every overlapping candidate of level l - 1, fetched in one gather. Touching pairs
  (rest-adjacent triangles below them) are never generated.
* Leaves (`leaves`): float32 bounds on the cube diagonals (`slabs`) prove most candidate
  pairs apart; the exact float64 test of `core.triangles` decides the others; hits sharing
  a key of the frame's triangles are dropped. Rest-adjacent pairs that stop being adjacent
  in this frame (a polygon re-split) are added from the rest adjacency lists.

The pairs between two meshes are `cross`'s. The names of the parts that callers and
tests reach through this module are re-exported here.
"""
from __future__ import annotations

import numpy as np

# Re-exported for the callers that reach them through this module (the box-tree method,
# tests): the boxes and the cross candidates.
from .boxes import SWAP, boxes_overlap, level_boxes, outward_f32, triangle_boxes  # noqa: F401
from .cross import cross_candidates  # noqa: F401
from .descend import moved_levels
from .frame import FrameBoxes, frame_boxes
from .leaves import _keys_adjacent, _resplit_pairs, exact_test
from .self_traversal import _capped_leaf_blocks, candidate_leaf_pairs
from .self_tree import SelfTree

#: A capped (live) query sends at most this many candidate triangle pairs through the
#: exact test per frame (`self_pairs`' `budget`). An ordinary MakeHuman frame has about
#: 14,000 (`python -m bench self`); a pose with limbs scaled up to 5x has 10 million, which
#: Blender's BVHTree tests in C in 0.6-1.9 s and all of which we test in 2.4-6 s; 500,000
#: of them take us 0.2-0.5 s (`python -m bench dense-pairs pose 0.002 5 1`).
CANDIDATE_BUDGET = 500_000


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
    levels = None
    ra, rb = _resplit_pairs(tree, frame.keys, frame, frame.resplit)
    if moved is not None:
        moved = np.asarray(moved, bool)
        levels = moved_levels(tree, moved)
        if ra.size:
            keep = np.flatnonzero(moved[ra] | moved[rb])
            ra, rb = ra[keep], rb[keep]
    stopped = dense = False
    if enough is None and budget is None:
        ha, hb, ta, tb, tests, counts = _every_pair(tree, frame, levels, positions, tris, ra, rb)
        n_tested = int(ta.size)
        touched = None
    else:
        if budget is None:
            budget = CANDIDATE_BUDGET
        ha, hb, touched, n_tested, tests, counts, stopped, dense = _capped_pairs(
            tree, frame, levels, positions, tris, ra, rb, enough, budget)
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


def _every_pair(tree: SelfTree, frame: FrameBoxes, levels: list[np.ndarray] | None,
                positions: np.ndarray, tris: np.ndarray, ra: np.ndarray, rb: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, dict]:
    """`self_pairs` of an uncapped frame: every candidate (the traversal's, then the
    re-split pairs (ra, rb)) through the exact test at once.

    Returns (ha, hb, ta, tb, box tests, counts): the (K,) intp triangles of the pairs
    found, the (N,) intp triangles of the candidates tested, and ``{"slab_apart": n}``.
    """
    sa, sb, tests = candidate_leaf_pairs(tree, frame, levels)
    ta, tb = np.take(tree.slot_tri, sa), np.take(tree.slot_tri, sb)
    if ra.size:
        ta, tb = np.concatenate([ta, ra]), np.concatenate([tb, rb])
    counts = {"slab_apart": 0}
    hit = exact_test(positions, tris, ta, tb, counts)
    ha, hb = ta[hit], tb[hit]
    if ha.size:
        # Pairs not rest-adjacent may share a key after a re-split: drop them.
        far = ~_keys_adjacent(frame.keys, ha, hb)
        ha, hb = ha[far], hb[far]
    return ha, hb, ta, tb, tests, counts


def _capped_pairs(tree: SelfTree, frame: FrameBoxes, levels: list[np.ndarray] | None,
                  positions: np.ndarray, tris: np.ndarray, ra: np.ndarray, rb: np.ndarray,
                  enough, budget: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, dict, bool, bool]:
    """`self_pairs` of a capped frame: the re-split pairs (ra, rb), then the traversal's
    blocks (`_capped_leaf_blocks`), through the exact test a block at a time, asking
    `enough` after each block with hits and stopping after `budget` candidates.

    Returns (ha, hb, touched, candidates tested, box tests, counts, stopped, dense): the
    (K,) intp triangles of the pairs found, the (T,) bool triangles that reached an exact
    test, and ``{"box_tests": n, "slab_apart": n, ...}``.
    """
    keys = frame.keys
    stopped = dense = False
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
    ha = np.concatenate(parts_a) if parts_a else ra[:0]
    hb = np.concatenate(parts_b) if parts_b else rb[:0]
    return ha, hb, touched, n_tested, counts["box_tests"], counts, stopped, dense
