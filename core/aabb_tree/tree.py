"""Balanced AABB tree topology for self-collision, built once at rest.

The tree is implicit and complete: level ``l`` holds ``2**l`` nodes, node ``k`` of level
``l`` has children ``2k`` and ``2k + 1`` on level ``l + 1``, and level ``H`` holds
``S = 2**H`` leaf slots, one triangle each (or empty). Triangles are placed by a median
split (longest axis of the node's rest centroids; the left child takes ``ceil(n / 2)``),
so empty slots are spread out and every level is balanced.

Besides the topology, the build precomputes, from the REST triangles and weld ids, which
node pairs "touch" (some triangle of one shares a welded vertex with some triangle of the
other). Touching pairs overlap in every pose, so the per-frame traversal never generates
them: it starts, per level, from the precomputed list of non-touching pairs whose parents
touch (or are one node), see ``docs/self_collision.md`` for why this loses no pair.
"""
from __future__ import annotations

import time

import numpy as np

from .boxes import FACES, SWAP, level_boxes, triangle_boxes
from .self_tree import SelfTree


def median_split_slots(centroids: np.ndarray) -> tuple[int, np.ndarray]:
    """Leaf slot of every triangle under a balanced median split.

    Args:
        centroids: (T, 3) float64 rest centroids.
    Returns:
        (H, tri_slot): the leaf level and (T,) intp slot in [0, 2**H).
    """
    T = centroids.shape[0]
    H = max(1, int(np.ceil(np.log2(max(T, 2)))))
    node = np.zeros(T, np.intp)
    order = np.arange(T)
    for level in range(H):
        nn = 1 << level
        nd = node[order]                       # `order` keeps each node's triangles together
        counts = np.bincount(nd, minlength=nn)
        starts = np.zeros(nn + 1, np.intp)
        np.cumsum(counts, out=starts[1:])
        full = np.flatnonzero(counts)
        c = centroids[order]
        lo = np.minimum.reduceat(c, starts[full], axis=0)
        hi = np.maximum.reduceat(c, starts[full], axis=0)
        axis = np.zeros(nn, np.intp)
        axis[full] = np.argmax(hi - lo, axis=1)
        key = c[np.arange(T), axis[nd]]
        perm = np.lexsort((key, nd))
        order = order[perm]
        nd = nd[perm]
        rank = np.arange(T) - starts[nd]
        right = rank >= (counts[nd] + 1) // 2
        node[order] = 2 * nd + right
    return H, node


def rest_adjacent_pairs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair of triangles sharing a key.

    Args:
        keys: (T, 3) int64 welded vertex keys.
    Returns:
        (a, b): (P,) intp with a < b, each pair once.
    """
    T = keys.shape[0]
    k = keys.ravel()
    t = np.repeat(np.arange(T), 3)
    o = np.lexsort((t, k))
    k, t = k[o], t[o]
    out_a, out_b = [], []
    d = 1
    while d < k.size:
        same = k[d:] == k[:-d]
        if not same.any():
            break
        out_a.append(t[:-d][same])
        out_b.append(t[d:][same])
        d += 1
    if not out_a:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    a = np.concatenate(out_a)
    b = np.concatenate(out_b)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    keep = lo != hi                             # a triangle with a repeated key
    code = np.unique(lo[keep].astype(np.int64) * T + hi[keep])
    return (code // T).astype(np.intp), (code % T).astype(np.intp)


#: Build-time memory bound: child pairs are generated from at most this many / 4 touching
#: pairs of the level above at a time, and the rest separating columns are chosen for this
#: many seeds at a time (the seeds and columns are the same, in the same order).
_SEED_CHUNK = 1 << 20


def build(rest_positions: np.ndarray, triangles: np.ndarray, weld_ids: np.ndarray) -> SelfTree:
    """Build the self-collision tree of a mesh.

    Args:
        rest_positions: (V, 3) float64 rest positions (only used to place triangles).
        triangles: (T, 3) int rest triangles (the triangle index set is fixed; later
            frames may re-split polygons, see `query.self_pairs`).
        weld_ids: (V,) int welded vertex ids (coincident rest positions share one id).
    """
    t0 = time.perf_counter()
    tris = np.asarray(triangles, np.intp)
    T = tris.shape[0]
    keys = np.asarray(weld_ids, np.int64)[tris]
    H, tri_slot = median_split_slots(np.asarray(rest_positions, np.float64)[tris].mean(axis=1))
    S = 1 << H
    slot_tri = np.full(S, -1, np.intp)
    slot_tri[tri_slot] = np.arange(T)

    ta, tb = rest_adjacent_pairs(keys)
    # CSR of rest adjacency, both directions.
    src = np.concatenate([ta, tb])
    dst = np.concatenate([tb, ta])
    o = np.argsort(src, kind="stable")
    adj_ptr = np.zeros(T + 1, np.intp)
    np.cumsum(np.bincount(src, minlength=T), out=adj_ptr[1:])
    adj_idx = dst[o]
    del src, dst, o

    sa, sb = tri_slot[ta], tri_slot[tb]
    del ta, tb
    sa, sb = np.minimum(sa, sb), np.maximum(sa, sb)
    occupied = np.zeros(S, bool)
    occupied[tri_slot] = True
    # Per level: touching pairs (codes a * n_l + b, a < b, sorted) and non-empty nodes,
    # made one level ahead of their use and dropped after it (bounded memory).
    def touching(level: int) -> np.ndarray:
        shift = H - level
        a, b = sa >> shift, sb >> shift  # noqa: F821 - deleted after the last level
        m = a != b
        return np.unique(a[m].astype(np.int64) * (1 << level) + b[m])

    def generated(pa: np.ndarray, pb: np.ndarray, n: int, touch: np.ndarray,
                  occ: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The child pairs (ca, cb) of node pairs (pa, pb) of the level above (every
        child pair of a pair, or the two children of a node when pa == pb is given as
        the sibling pairs), kept where they do not touch and both are non-empty."""
        ca, cb = pa, pb
        code = ca.astype(np.int64) * n + cb
        at = np.minimum(np.searchsorted(touch, code), max(touch.size - 1, 0))
        hit = touch[at] == code if touch.size else np.zeros(code.size, bool)
        keep = ~hit & occ[ca] & occ[cb]
        return ca[keep].astype(np.intp), cb[keep].astype(np.intp)

    seeds = [(np.zeros(0, np.intp), np.zeros(0, np.intp))]
    touch_prev = touching(0)
    step = _SEED_CHUNK // 4
    for level in range(1, H + 1):
        n_prev, n = 1 << (level - 1), 1 << level
        touch = touching(level)
        occ = occupied.reshape(n, -1).any(axis=1)
        parts_a, parts_b = [], []
        for i0 in range(0, touch_prev.size, step):
            pa = touch_prev[i0:i0 + step] // n_prev
            pb = touch_prev[i0:i0 + step] % n_prev
            ga, gb = generated((2 * pa[:, None] + np.array([0, 0, 1, 1])).ravel(),
                               (2 * pb[:, None] + np.array([0, 1, 0, 1])).ravel(),
                               n, touch, occ)
            parts_a.append(ga)
            parts_b.append(gb)
        ga, gb = generated(2 * np.arange(n_prev), 2 * np.arange(n_prev) + 1, n, touch, occ)
        parts_a.append(ga)
        parts_b.append(gb)
        seeds.append((np.concatenate(parts_a), np.concatenate(parts_b)))
        touch_prev = touch
    del touch_prev, touch, sa, sb
    # Per seed, the box face column (of [lo, pad, -hi, pad]) and its partner that
    # separated the pair most at rest, as flat indices into a level's (n, 8) rows: a
    # cheap first test.
    rest_boxes = level_boxes(SelfTree(H, S, tri_slot, slot_tri, seeds, keys, adj_ptr, adj_idx,
                                      np.asarray(weld_ids, np.int64)),
                             triangle_boxes(np.asarray(rest_positions, np.float64), tris))
    seed_cols = []
    for level, (a, b) in enumerate(seeds):
        X = rest_boxes[level]
        col = np.concatenate([FACES[np.argmax(X[a[i:i + _SEED_CHUNK]][:, FACES]
                                              + X[b[i:i + _SEED_CHUNK]][:, SWAP[FACES]], axis=1)]
                              for i in range(0, a.size, _SEED_CHUNK)]) if a.size else a
        seed_cols.append((a * 8 + col, b * 8 + SWAP[col]))
    return SelfTree(H, S, tri_slot, slot_tri, seeds, keys, adj_ptr, adj_idx,
                    np.asarray(weld_ids, np.int64), seed_cols, time.perf_counter() - t0)


def seed_arrays(tree: SelfTree) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          np.ndarray]:
    """Every level's seeds in one list: ``(na, nb, ptr, ha, hb)``.

    na, nb: (N,) intp the seeds' nodes in heap numbering (node k of level l is
    ``2**l + k``, the rows of `boxes.stacked_boxes`), level by level, made here (they are
    ``ha >> 3`` and ``hb >> 3``; the tree keeps only the hints); ptr, ha, hb:
    `seed_hints`. Call with ``tree.hint_lock`` held.
    """
    ptr, ha, hb = seed_hints(tree)
    na, nb = _seed_nodes(tree)
    return na, nb, ptr, ha, hb


def _seed_nodes(tree: SelfTree) -> tuple[np.ndarray, np.ndarray]:
    """(na, nb) (N,) intp every level's seeds in heap numbering, level by level."""
    off = _level_offsets(tree)
    na = np.concatenate([a for a, _ in tree.seeds]).astype(np.intp) + off
    nb = np.concatenate([b for _, b in tree.seeds]).astype(np.intp) + off
    return na, nb


def _level_offsets(tree: SelfTree) -> np.ndarray:
    """(N,) intp per seed, level by level, its level's first heap row ``2**l``."""
    sizes = [a.size for a, _ in tree.seeds]
    return np.repeat(np.array([1 << lv for lv in range(len(sizes))], np.intp), sizes)


def seed_hints(tree: SelfTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every level's seed hints in one list, for one pass over all of them per frame
    (`query._seed_pass`): ``(ptr, ha, hb)``, made on first use and kept
    (`SelfTree.seed_hint`).

    ptr: (H + 2,) intp, level l's seeds are ``[ptr[l], ptr[l + 1])``. ha, hb: (N,) intp
    the hints as flat indices into the stacked rows, ``8 * node + column`` and
    ``8 * other + SWAP[column]``, from `seed_cols` at first, then moved in place by the
    queries. Call with ``tree.hint_lock`` held.
    """
    if tree.seed_hint is None:
        tree.seed_hint = _first_hints(tree)
    return tree.seed_hint


def _first_hints(tree: SelfTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`seed_hints` before any query: the rest columns (`seed_cols`), or x."""
    sizes = [a.size for a, _ in tree.seeds]
    ptr = np.zeros(len(sizes) + 1, np.intp)
    np.cumsum(sizes, out=ptr[1:])
    na, nb = _seed_nodes(tree)
    ha = hb = None
    if tree.seed_cols is not None:
        off = 8 * _level_offsets(tree)
        ha = np.concatenate([fa for fa, _ in tree.seed_cols]).astype(np.intp) + off
        hb = np.concatenate([fb for _, fb in tree.seed_cols]).astype(np.intp) + off
        # A hint must name a face of each node and the face it is tested against
        # (stored data of another row layout would pair unrelated coordinates).
        if not (np.array_equal(ha >> 3, na) and np.array_equal(hb >> 3, nb)
                and np.isin(ha & 7, FACES).all()
                and np.array_equal(hb & 7, SWAP[ha & 7])):
            ha = hb = None
    if ha is None:                        # no rest columns: start from x
        ha, hb = na * 8, nb * 8 + SWAP[0]
    return ptr, ha, hb


def merged_seed_hints(tree: SelfTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The seeds a whole-frame query tests, with their hints: ``(ptr, ha, hb)``, made on
    first use and kept (`SelfTree.merged_hint`). Call with ``tree.hint_lock`` held.

    The seeds above `FIRST_LEVEL` are first replaced by their descendant pairs on it
    (`_descend`). The seeds of level l under one pair of touching parents (P, Q) are
    some of the four child pairs. When a child a of P is a seed with both children of Q, the two seeds
    are one *half seed* (a, Q): a of level l, Q of level l - 1, which do not touch (no
    triangle of a shares a key with one of Q's two children). Where a child of Q is a
    seed with both children of P, likewise; per parent pair either the rows or the
    columns are merged (the more of them), so that every leaf pair below stays under
    exactly one seed (docs/self_collision.md, "Half seeds and the first level";
    `test_half_seeds_stand_for_exactly_the_seeds_they_replace`). A half seed whose boxes
    overlap stands for its two seeds: the query tests those two (`query._seed_pass`).

    ptr: (2 H + 3,) intp: the seeds of level l are ``[ptr[l], ptr[l + 1])`` and the
    half seeds whose finer node is of level l ``[ptr[H + 1 + l], ptr[H + 2 + l])``.
    ha, hb: (N,) intp hints as in `seed_hints` (8 * heap row + face column; a half
    seed's finer node first).
    """
    if tree.merged_hint is None:
        ptr, ha, hb = _first_hints(tree)
        H = tree.height
        top = min(FIRST_LEVEL, H)
        same, half = [], []
        down = [], [], [], []                     # the seeds above `top`, moved down to it
        for level in range(H + 1):
            a, b = tree.seeds[level]
            fa, fb = ha[ptr[level]:ptr[level + 1]], hb[ptr[level]:ptr[level + 1]]
            if level < top:
                for acc, x in zip(down, _descend(tree, a, b, fa, fb, level, top)):
                    acc.append(x)
                a = b = fa = fb = a[:0]
            elif level == top:
                a, b, fa, fb = (np.concatenate(acc + [x]) for acc, x in zip(down, (a, b, fa, fb)))
            keep, pairs = _merge_level(a, b, fa, fb, level)
            same.append((fa[keep], fb[keep]))
            half.append(pairs)
        groups = same + half
        sizes = [x.size for x, _ in groups]
        out = np.zeros(len(sizes) + 1, np.intp)
        np.cumsum(sizes, out=out[1:])
        tree.merged_hint = (out, np.concatenate([x for x, _ in groups]).astype(np.intp),
                            np.concatenate([y for _, y in groups]).astype(np.intp))
    return tree.merged_hint


#: The merged seeds start at this level (or the leaves): a seed of a level above stands
#: for its descendant pairs on it, so the traversal has no level above it to descend
#: (each descended level cost about 16 us of numpy calls per frame, for a few pairs).
#: On MakeHuman 27k the 265 seeds above level 7 and its own 320 become 3,919 seed tests
#: there (most of them half seeds; 170,579 in all instead of 167,032); 6, 7 and 8 were
#: each 0.05-0.15 ms per frame faster than none on MakeHuman 27k and Cesium Man 28k
#: (interleaved in one process, every frame).
FIRST_LEVEL = 7


def _descend(tree: SelfTree, a: np.ndarray, b: np.ndarray, fa: np.ndarray, fb: np.ndarray,
             level: int, to: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs of level `to` below seeds (a, b) of `level` (level-local indices, hints
    fa, fb), both nodes non-empty, with the seed's hint columns: (a, b, fa, fb). Below
    two nodes that do not touch no two nodes touch, so each is a seed of its own and they
    cover the same leaf pairs as the seed."""
    k = 1 << (to - level)
    da = (a[:, None] * k + np.arange(k)).repeat(k, axis=1).ravel()
    db = np.tile(b[:, None] * k + np.arange(k), (1, k)).ravel()
    occ = (tree.slot_tri >= 0).reshape(1 << to, -1).any(axis=1)
    keep = np.flatnonzero(occ[da] & occ[db])
    da, db = da[keep], db[keep]
    seed = keep // (k * k)
    off = 8 << to
    return da, db, da * 8 + off + (fa[seed] & 7), db * 8 + off + (fb[seed] & 7)


def _merge_level(a: np.ndarray, b: np.ndarray, fa: np.ndarray, fb: np.ndarray, level: int
                 ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Level `level`'s seeds (a, b) (level-local node indices) with hints (fa, fb): which
    stay (keep, (n,) bool) and the half seeds that replace the others, as hint pairs
    (finer node's hint, coarser node's hint), each (k,) intp. Per parent pair either
    its full rows or its full columns are merged, never both (a leaf pair must stay
    under one seed)."""
    keep = np.ones(a.size, bool)
    none = (np.zeros(0, np.intp), np.zeros(0, np.intp))
    P, Q = a >> 1, b >> 1
    cand = np.flatnonzero(P != Q)                 # siblings' seeds have no parent pair
    if not cand.size:
        return keep, none
    half = np.int64(1) << (level - 1)
    _, inv = np.unique(P[cand] * half + Q[cand], return_inverse=True)
    bit = np.left_shift(1, 2 * (a[cand] & 1) + (b[cand] & 1))
    mask = np.bincount(inv.ravel(), weights=bit).astype(np.int64)[inv.ravel()]
    # Bit 2 i + j of a parent pair's mask: child i of P with child j of Q is a seed.
    r = [(mask & 3) == 3, (mask & 12) == 12]      # child 0 / 1 of P with both of Q
    c = [(mask & 5) == 5, (mask & 10) == 10]      # child 0 / 1 of Q with both of P
    n_rows = r[0].astype(np.int8) + r[1]
    n_cols = c[0].astype(np.int8) + c[1]
    rows = (n_rows >= n_cols) & (n_rows > 0)
    cols = n_cols > n_rows
    ia, ib = a[cand] & 1, b[cand] & 1
    in_row = rows & np.where(ia == 0, r[0], r[1])
    in_col = cols & np.where(ib == 0, c[0], c[1])
    keep[cand[in_row | in_col]] = False
    # One half seed per merged row (node a with Q), from its seed with Q's first child,
    # and per merged column (node b with P): the face column of the seed's rest hint,
    # against the opposite face of the coarser node.
    ra = cand[in_row & (ib == 0)]
    ca = cand[in_col & (ia == 0)]
    top = 8 * half                                # level - 1's heap rows start at half
    fine = np.concatenate([fa[ra], fb[ca]])
    coarse = np.concatenate([(Q[ra] * 8 + top + (fb[ra] & 7)),
                             (P[ca] * 8 + top + (fa[ca] & 7))])
    return keep, (fine, coarse)


def seeds_of_nodes(tree: SelfTree, level: int, nodes: np.ndarray,
                   member: np.ndarray | None = None) -> np.ndarray:
    """Indices into ``tree.seeds[level]`` of the seeds with a node in `nodes`.

    A pose edit moves a few nodes; their seeds are read from a per-level index (CSR per
    side of the pair: node -> the seeds it is the first, or the second, member of), built
    on first use and kept on the tree, instead of scanning every seed of the level.

    Args:
        level: 0..H. nodes: (m,) intp distinct node indices of that level.
        member: optional (2**level,) bool, True exactly on `nodes` (made when None).
    Returns:
        (k,) intp distinct seed indices (each seed once, in no particular order).
    """
    if tree.seed_index is None:
        tree.seed_index = [None] * (tree.height + 1)
    if tree.seed_index[level] is None:
        n = 1 << level
        sides = []
        for side in tree.seeds[level]:
            order = np.argsort(side, kind="stable").astype(np.intp)
            ptr = np.zeros(n + 1, np.intp)
            np.cumsum(np.bincount(side, minlength=n), out=ptr[1:])
            sides.append((ptr, order))
        tree.seed_index[level] = sides
    (pa, ia), (pb, ib) = tree.seed_index[level]
    nodes = np.asarray(nodes, np.intp)
    first = _ranges(pa, ia, nodes)
    second = _ranges(pb, ib, nodes)
    if second.size:
        # A seed with both members among the nodes is taken once, from its first member.
        if member is None:
            member = np.zeros(1 << level, bool)
            member[nodes] = True
        second = second[~member[tree.seeds[level][0][second]]]
    return np.concatenate([first, second])


def _ranges(ptr: np.ndarray, idx: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``idx[ptr[k]:ptr[k + 1]]`` for every k of `nodes`, concatenated, without a loop."""
    start, count = ptr[nodes], ptr[nodes + 1] - ptr[nodes]
    total = int(count.sum())
    if total == 0:
        return np.zeros(0, np.intp)
    return idx[np.repeat(start - np.cumsum(count) + count, count) + np.arange(total)]
