"""Object-level broad phase: which objects of a crowd may touch at this frame.

One axis-aligned box per object per frame, then sort-and-sweep on one axis, all on whole
arrays (no Python loop over object pairs). Only the object pairs whose boxes meet go to the
node-level traversal; objects far apart cost their box and nothing else.

Why the box of the evaluated positions (and not the root sphere of the on-demand refit):
the positions are already read for the exact triangle test, the box costs one min/max
over them (about 10 µs for a 3,000-vertex character) and it is the tightest bound there
is: every triangle Blender draws at the frame is the convex hull of three of these
vertices, so it lies in the box, whatever method or deformation made them. Two triangles
that share a point therefore have boxes that share a point, and closed boxes are compared
with ``<=`` in float64 on the very numbers the triangle test reads: no rounding is added,
and no pair can be lost here (docs/broad_phase.md).
"""
from __future__ import annotations

import numpy as np

from ..types import ObjectPairs


def position_boxes(positions: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per object, the box of its (V, 3) float64 positions: lo (n, 3), hi (n, 3).

    An object without vertices gets an empty box (lo = +inf, hi = -inf), which meets
    nothing."""
    n = len(positions)
    lo = np.full((n, 3), np.inf)
    hi = np.full((n, 3), -np.inf)
    for k, p in enumerate(positions):       # one min/max per object, not per pair
        if p.shape[0]:
            # Per column: numpy reduces a (V, 3) array along axis 0 ten times slower.
            lo[k] = [p[:, a].min() for a in range(3)]
            hi[k] = [p[:, a].max() for a in range(3)]
    return lo, hi


def sweep_pairs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Object pairs whose closed boxes meet, by sort-and-sweep along the widest axis.

    Args:
        lo, hi: (n, 3) float64 box corners (lo <= hi, or an empty box with lo > hi).
    Returns:
        (P, 2) int64 pairs (i, j), i < j, sorted lexicographically.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    n = lo.shape[0]
    valid = np.all(lo <= hi, axis=1)
    idx = np.nonzero(valid)[0]
    if idx.size < 2:
        return np.zeros((0, 2), np.int64)
    lo, hi = lo[idx], hi[idx]
    # Sweep the axis along which the boxes are spread most: fewest candidates.
    axis = int(np.argmax(hi.max(axis=0) - lo.min(axis=0)))
    order = np.argsort(lo[:, axis], kind="stable")
    start = lo[order, axis]
    end = hi[order, axis]
    # Box order[k] meets, on this axis, every later box whose start is <= its end.
    stop = np.searchsorted(start, end, side="right")
    count = np.maximum(stop - np.arange(idx.size) - 1, 0)
    first = np.repeat(np.arange(idx.size), count)
    off = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(count, out=off[1:])
    second = first + 1 + (np.arange(off[-1]) - off[first])
    a, b = order[first], order[second]
    meet = np.all((lo[a] <= hi[b]) & (lo[b] <= hi[a]), axis=1)
    a, b = idx[a[meet]], idx[b[meet]]
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1).astype(np.int64)
    if n and pairs.size:
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return pairs


def meeting_pairs(positions: list[np.ndarray]) -> np.ndarray:
    """(P, 2) int64 the object pairs (i < j) whose position boxes meet at this frame."""
    lo, hi = position_boxes(positions)
    return sweep_pairs(lo, hi)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of several ranges [start, start + count): (range of each row, value)."""
    owner = np.repeat(np.arange(starts.size), counts)
    off = np.zeros(starts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return owner, starts[owner] + (np.arange(off[-1]) - off[owner])


def _vertex_codes(xT: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """(R,) uint8 outcodes of the columns of `xT` (3, R) against closed boxes: bit a set
    when ``x[a] < lo[a]``, bit 3 + a when ``x[a] > hi[a]`` (`lo`, `hi`: (3, R) or (3, 1))."""
    b = (xT < lo).view(np.uint8)
    a = (xT > hi).view(np.uint8)
    return b[0] | (b[1] << 1) | (b[2] << 2) | (a[0] << 3) | (a[1] << 4) | (a[2] << 5)


def _kept(code: np.ndarray, crow: np.ndarray) -> np.ndarray:
    """(K,) bool: the triangle whose corners are the vertex rows ``crow`` (3, K) has a box
    that meets its closed box. Its box misses the box iff on some axis all three corners
    lie below (or all above) it, i.e. iff the AND of the corners' outcodes is not 0: the
    same float64 comparisons as ``tri_lo <= hi and tri_hi >= lo``, nothing rounded."""
    return (code[crow[0]] & code[crow[1]] & code[crow[2]]) == 0


def _sweep_plan(pa, ga, pb, gb, tlo, thi, axis: int):
    """Sorted orders and search ranges of `sweep_two_sets` on one axis, and the number of
    candidates it would expand (to pick the axis with the fewest)."""
    vals = np.concatenate([tlo[ga, axis], thi[ga, axis], tlo[gb, axis], thi[gb, axis]])
    _, rank = np.unique(vals, return_inverse=True)
    rank = rank.astype(np.int64).ravel()
    R = int(rank.max()) + 2
    na, nb = ga.size, gb.size
    a_lo = pa * R + rank[:na]
    a_hi = pa * R + rank[na:2 * na]
    b_lo = pb * R + rank[2 * na:2 * na + nb]
    b_hi = pb * R + rank[2 * na + nb:]
    oa = np.argsort(a_lo, kind="stable")
    ob = np.argsort(b_lo, kind="stable")
    ka, kb = a_lo[oa], b_lo[ob]
    # (1) A starts inside [lo_b, hi_b]; (2) B starts inside (lo_a, hi_a].
    s1 = np.searchsorted(ka, b_lo, side="left")
    e1 = np.searchsorted(ka, b_hi, side="right")
    s2 = np.searchsorted(kb, a_lo, side="right")
    e2 = np.searchsorted(kb, a_hi, side="right")
    count = int(np.maximum(e1 - s1, 0).sum() + np.maximum(e2 - s2, 0).sum())
    return count, oa, ob, s1, e1, s2, e2


def sweep_two_sets(pa: np.ndarray, ga: np.ndarray, pb: np.ndarray, gb: np.ndarray,
                   tlo: np.ndarray, thi: np.ndarray, axis: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Within each group p, every (triangle of set A, triangle of set B) whose boxes meet:
    a bipartite sort-and-sweep on `axis` for all groups at once, then the other axes.

    Two closed intervals meet iff the start of one lies in the other: ``lo_a`` in
    ``[lo_b, hi_b]``, or ``lo_b`` in ``(lo_a, hi_a]`` (exactly one of the two when they
    meet). Coordinates are replaced by their ranks among all of them (order and equality
    kept exactly), so that (group, rank) packs into one sortable int64 key.

    Args:
        pa, ga: (Ka,) int64 group and global triangle of set A (any order).
        pb, gb: (Kb,) int64 group and global triangle of set B.
        tlo, thi: (T, 3) float64 triangle boxes.
        axis: the sweep axis (None: the one with the fewest candidates).
    Returns:
        (K,), (K,) int64 global triangles of A and B whose boxes meet, same group.
    """
    empty = np.zeros(0, np.int64)
    if not ga.size or not gb.size:
        return empty, empty
    best = None
    for ax in ((axis,) if axis is not None else (0, 1, 2)):
        plan = _sweep_plan(pa, ga, pb, gb, tlo, thi, ax)
        if best is None or plan[0] < best[0]:
            best = plan
    _, oa, ob, s1, e1, s2, e2 = best
    own1, r1 = _ranges(s1, np.maximum(e1 - s1, 0))
    own2, r2 = _ranges(s2, np.maximum(e2 - s2, 0))
    ia = np.concatenate([oa[r1], own2])
    ib = np.concatenate([own1, ob[r2]])
    ta, tb = ga[ia], gb[ib]
    meet = np.all((tlo[ta] <= thi[tb]) & (tlo[tb] <= thi[ta]), axis=1)
    return ta[meet], tb[meet]


def subdivide(pa: np.ndarray, ga: np.ndarray, pb: np.ndarray, gb: np.ndarray,
              tlo: np.ndarray, thi: np.ndarray, glo: np.ndarray, ghi: np.ndarray,
              leaf: int = 4096, rounds: int = 12
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split the cells of groups with many triangle combinations in two, on whole arrays.

    A group (an object pair's cell, box ``[glo, ghi]``) with more than `leaf` combinations
    is cut at the middle of its longest side; a triangle goes to each half its box meets
    (``lo <= mid`` left, ``hi >= mid`` right, so one on the cut goes to both). A point
    where two triangles touch lies in one half (or on the cut) and both triangles are
    there: nothing is lost, whatever the rounding of `mid`. Groups left with no triangle
    on one side are dropped. The same triangle pair may end up in two cells (callers
    deduplicate).

    Returns the new (pa, ga, pb, gb), group ids renumbered.
    """
    for _ in range(rounds):
        G = glo.shape[0]
        ka = np.bincount(pa, minlength=G)
        kb = np.bincount(pb, minlength=G)
        split = ka * kb > leaf
        live = (ka > 0) & (kb > 0)
        if not (split & live).any():
            break
        sp = np.nonzero(split & live)[0]
        ext = ghi[sp] - glo[sp]
        ax = np.argmax(ext, axis=1)
        mid = glo[sp, ax] + 0.5 * ext[np.arange(sp.size), ax]
        # Per old group: its index among the split ones, or -1.
        which = np.full(G, -1, dtype=np.int64)
        which[sp] = np.arange(sp.size)
        new_lo = np.concatenate([glo, glo[sp], glo[sp]])
        new_hi = np.concatenate([ghi, ghi[sp], ghi[sp]])
        left = G + np.arange(sp.size)
        right = G + sp.size + np.arange(sp.size)
        new_hi[left, ax] = mid
        new_lo[right, ax] = mid

        def route(p, g):
            k = which[p]
            stay = k < 0
            kk = k[~stay]
            a = ax[kk]
            gs = g[~stay]
            to_l = tlo[gs, a] <= mid[kk]
            to_r = thi[gs, a] >= mid[kk]
            p_new = np.concatenate([p[stay], left[kk[to_l]], right[kk[to_r]]])
            g_new = np.concatenate([g[stay], gs[to_l], gs[to_r]])
            return p_new, g_new

        pa, ga = route(pa, ga)
        pb, gb = route(pb, gb)
        glo, ghi = new_lo, new_hi
        # Drop rows of groups with nothing on the other side (split groups are empty now).
        G2 = glo.shape[0]
        ka = np.bincount(pa, minlength=G2)
        kb = np.bincount(pb, minlength=G2)
        both = (ka > 0) & (kb > 0)
        ma, mb = both[pa], both[pb]
        pa, ga, pb, gb = pa[ma], ga[ma], pb[mb], gb[mb]
    return pa, ga, pb, gb


def _kept_rows(pairs, tri_off, v_off, PT, T, ilo, ihi, rounds):
    """`box_filtered_pairs`' kept triangles for any pairs: rows per side (side s < P is
    the first object of pair s, side P + s its second), grouped by side, copied from the
    objects' contiguous slices. Returns the side (K,) and global triangle (K,) of each
    kept row, its corners (3, K) as columns of the returned (3, R) coordinates, and the
    shrunken boxes (P, 3)."""
    P = pairs.shape[0]
    obj = np.concatenate([pairs[:, 0], pairs[:, 1]]).tolist()
    vcount = v_off[1:] - v_off[:-1]
    tcount = tri_off[1:] - tri_off[:-1]
    vc = vcount[obj]
    vstart = np.zeros(2 * P + 1, dtype=np.int64)
    np.cumsum(vc, out=vstart[1:])
    xT = np.concatenate([PT[:, v_off[o]:v_off[o + 1]] for o in obj], axis=1)
    TT = np.ascontiguousarray(T.T)
    # The vertex rows of each triangle's corners, (3, K), and its global id.
    crow = np.concatenate([TT[:, tri_off[o]:tri_off[o + 1]] + (vstart[s] - v_off[o])
                           for s, o in enumerate(obj)], axis=1)
    tg = np.concatenate([np.arange(tri_off[o], tri_off[o + 1]) for o in obj])
    town = np.repeat(np.arange(2 * P), tcount[obj])
    side_pair = np.arange(2 * P) % P

    def codes():
        return _vertex_codes(xT, np.repeat(ilo.T[:, side_pair], vc, axis=1),
                             np.repeat(ihi.T[:, side_pair], vc, axis=1))

    keep = _kept(codes(), crow)
    town, tg, crow = town[keep], tg[keep], crow[:, keep]
    has_v = vc > 0
    for _ in range(rounds):
        # Box of each side's kept triangles: of the vertex rows they use.
        used = np.zeros(xT.shape[1], dtype=bool)
        used[crow.ravel()] = True
        slo = np.full((3, 2 * P), np.inf)
        shi = np.full((3, 2 * P), -np.inf)
        if has_v.any():
            st = vstart[:-1][has_v]
            slo[:, has_v] = np.minimum.reduceat(np.where(used, xT, np.inf), st, axis=1)
            shi[:, has_v] = np.maximum.reduceat(np.where(used, xT, -np.inf), st, axis=1)
        ilo = np.maximum(ilo, np.maximum(slo[:, :P], slo[:, P:]).T)
        ihi = np.minimum(ihi, np.minimum(shi[:, :P], shi[:, P:]).T)
        keep = _kept(codes(), crow)
        if keep.all():
            break
        town, tg, crow = town[keep], tg[keep], crow[:, keep]
    return town, tg, crow, xT, ilo, ihi


def _kept_one_pair(i, j, tri_off, v_off, PT, T, ilo, ihi, rounds, deep_min=None):
    """`_kept_rows` for one pair of two objects, on the global arrays themselves (each
    object is one side: no rows to make): corners are global vertex ids, columns of
    `PT`. With `deep_min`, a pair keeping at least that many triangles in its first box
    goes to its trees, which start neither from the kept triangles nor from a shrunken
    box: then no list is made and the last item returned is the (2,) int64 count kept
    per side (else None, the counts being those of the lists)."""
    sides = (i, j)
    x = [PT[:, v_off[k]:v_off[k + 1]] for k in sides]
    code = np.empty(PT.shape[1], dtype=np.uint8)

    def codes():
        for k, xk in zip(sides, x):
            code[v_off[k]:v_off[k + 1]] = _vertex_codes(xk, ilo.T, ihi.T)
        return code

    codes()
    inside = []
    for k in sides:
        Tk = T[tri_off[k]:tri_off[k + 1]]
        inside.append((code[Tk[:, 0]] & code[Tk[:, 1]] & code[Tk[:, 2]]) == 0)
    kept = np.array([np.count_nonzero(m) for m in inside], np.int64)
    if deep_min is not None and kept.sum() >= deep_min:
        # Deep: the pair goes to its trees, which read neither the kept triangles nor a
        # shrunken box; only the counts are returned (two characters in one another keep
        # tens of thousands of triangles, whose lists were most of the box filter's time).
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros((3, 0), np.int64), PT, ilo, ihi, kept
    tg, C = [], []
    for k, m in zip(sides, inside):
        g = np.flatnonzero(m)
        tg.append(g + tri_off[k])
        C.append(T[tri_off[k]:tri_off[k + 1]][g].T)
    for _ in range(rounds):
        slo = np.full((3, 2), np.inf)
        shi = np.full((3, 2), -np.inf)
        for s, (k, xk, c) in enumerate(zip(sides, x, C)):
            if c.size:
                used = np.zeros(xk.shape[1], dtype=bool)
                used[c.ravel() - v_off[k]] = True
                slo[:, s] = np.where(used, xk, np.inf).min(axis=1)
                shi[:, s] = np.where(used, xk, -np.inf).max(axis=1)
        ilo = np.maximum(ilo, slo.max(axis=1))
        ihi = np.minimum(ihi, shi.min(axis=1))
        codes()
        keep = [_kept(code, c) for c in C]
        if all(kp.all() for kp in keep):
            break
        tg = [g[kp] for g, kp in zip(tg, keep)]
        C = [c[:, kp] for c, kp in zip(C, keep)]
    town = np.repeat(np.array([0, 1], dtype=np.int64), [tg[0].size, tg[1].size])
    return town, np.concatenate(tg), np.concatenate(C, axis=1), PT, ilo, ihi, None


def deep_threshold(n_triangles: np.ndarray | int, share: float, minimum: int
                   ) -> np.ndarray | float:
    """How many triangles (both sides) an object pair must keep in its boxes' shrunken
    intersection to count as deep in one another: `share` of its two objects'
    `n_triangles` (their sum, int or (P,) int64), and at least `minimum`. The one rule for
    `box_filtered_pairs` (which pairs it leaves to the trees) and `core.scan.between`
    (which of those take the exact box trees)."""
    return np.maximum(share * np.asarray(n_triangles, np.float64), float(minimum))


def box_filtered_pairs(pairs: np.ndarray, tri_off: np.ndarray, v_off: np.ndarray,
                       PT: np.ndarray, T: np.ndarray, olo: np.ndarray, ohi: np.ndarray,
                       max_per_pair: int, rounds: int = 3, axis: int | None = None,
                       counts: bool = False, deep_share: float | None = None,
                       deep_min: int = 0) -> tuple[np.ndarray, ...]:
    """The triangle level of the broad phase, on whole arrays over all object pairs.

    Two triangles of objects i and j can only touch inside ``I = box_i ∩ box_j`` (their
    position boxes, `position_boxes`), and only if their own boxes meet I. Per object
    pair: the triangles of each side whose box meets I; then I shrinks to the intersection
    of the boxes of the two sides' kept triangles (a contact point lies in a kept triangle
    of each side), at most `rounds` times (a round that drops nothing is a fixed point:
    the next would shrink nothing). A pair with no triangle left on one side cannot touch;
    a pair with at most `max_per_pair` kept triangles (both sides) gets, through
    `subdivide` and `sweep_two_sets`, the triangle pairs whose boxes meet, for the exact
    test; the others are left to the tree traversal, with their shrunken I
    (docs/broad_phase.md). With `deep_share`, a pair whose kept triangles are at least
    that share of its two objects' triangles, and at least `deep_min`, is left to the
    traversal however few they are (two characters deep in one another: their refitted
    trees cost less than boxes and a sweep over so much of them).

    Whether a triangle's box meets I is decided from its corners' outcodes against I
    (`_kept`), computed once per vertex and round: the same comparisons as on the
    triangle's box, without making the boxes; boxes are made only for the triangles of
    the pairs paired by boxes.

    Args:
        pairs: (P, 2) int64 object pairs.
        tri_off: (n + 1,) int64 first global triangle of each object.
        v_off: (n + 1,) int64 first global vertex of each object.
        PT: (3, V) float64 global positions, one row per axis.
        T: (T, 3) int64 global triangles (global vertex ids).
        olo, ohi: (n, 3) float64 object boxes.
    Returns:
        ga (K,), gb (K,) int64 global triangle pairs to test exactly;
        (Q,) int64 indices into `pairs` of the pairs left to the traversal, and their
        boxes lo (Q, 3), hi (Q, 3); with `counts`, also (Q,) int64 how many triangles
        (both sides) those pairs kept in their shrunken boxes: how deep the two objects
        are in one another (`core.scan.between` picks their traversal by it).
    """
    P = pairs.shape[0]
    ilo = np.maximum(olo[pairs[:, 0]], olo[pairs[:, 1]])
    ihi = np.minimum(ohi[pairs[:, 0]], ohi[pairs[:, 1]])
    empty = np.zeros(0, np.int64)
    if P == 0:
        return (empty, empty, empty, ilo, ihi) + ((empty,) if counts else ())
    if P == 1 and pairs[0, 0] != pairs[0, 1]:
        i, j = int(pairs[0, 0]), int(pairs[0, 1])
        deep_at = (None if deep_share is None else
                   float(deep_threshold(tri_off[i + 1] - tri_off[i] + tri_off[j + 1] - tri_off[j],
                                        deep_share, deep_min)))
        town, tg, crow, X, ilo, ihi, k = _kept_one_pair(i, j, tri_off, v_off, PT, T, ilo,
                                                        ihi, rounds, deep_at)
        if k is None:
            k = np.bincount(town, minlength=2)
    else:
        town, tg, crow, X, ilo, ihi = _kept_rows(pairs, tri_off, v_off, PT, T, ilo, ihi,
                                                 rounds)
        k = np.bincount(town, minlength=2 * P)
    ka, kb = k[:P], k[P:]
    combos = ka * kb
    small = (combos > 0) & (ka + kb <= max_per_pair)
    if deep_share is not None:
        sizes = np.diff(tri_off)
        small &= ka + kb < deep_threshold(sizes[pairs[:, 0]] + sizes[pairs[:, 1]],
                                          deep_share, deep_min)
    big = np.nonzero((combos > 0) & ~small)[0]
    ta = tb = empty
    sel = small[town % P]
    if sel.any():
        town, tg, crow = town[sel], tg[sel], crow[:, sel]
        # Boxes of these triangles only (exact: min and max round nothing), at their
        # global ids in full-size arrays (the other rows are never read).
        c0, c1, c2 = X[:, crow[0]], X[:, crow[1]], X[:, crow[2]]
        tlo = np.empty((T.shape[0], 3))
        thi = np.empty((T.shape[0], 3))
        tlo[tg] = np.minimum(np.minimum(c0, c1), c2).T
        thi[tg] = np.maximum(np.maximum(c0, c1), c2).T
        a = town < P
        qa, qga, qb, qgb = subdivide(town[a], tg[a], town[~a] - P, tg[~a], tlo, thi,
                                     ilo, ihi)
        ta, tb = sweep_two_sets(qa, qga, qb, qgb, tlo, thi, axis)
        if ta.size:
            # A pair lying on a cut was found in both halves: once each.
            key = np.unique(ta * int(T.shape[0]) + tb)
            ta, tb = key // T.shape[0], key % T.shape[0]
    out = (ta, tb, big, ilo[big], ihi[big])
    return out + ((ka[big] + kb[big],) if counts else ())


def object_pairs(positions: list[np.ndarray]) -> ObjectPairs:
    """The broad phase of one frame (`core.scan.frame`): the object pairs whose position
    boxes meet (`position_boxes`, `sweep_pairs`), with the boxes. `positions`: per object,
    (V_k, 3) float64. A frame of one object has no pairs and makes no boxes."""
    if len(positions) < 2:
        return ObjectPairs(np.zeros((0, 2), np.int64))
    lo, hi = position_boxes(positions)
    return ObjectPairs(sweep_pairs(lo, hi), lo, hi)


def object_pairs_within(positions: list[np.ndarray], d: float) -> ObjectPairs:
    """The broad phase of the clearance stage (`core.scan.clearance`): the object pairs whose
    position boxes, each inflated by ``d`` on every side, meet. `positions`: per object,
    (V_k, 3) float64; d: float >= 0. The answer's boxes are the inflated ones.

    Sound with no margin (docs/clearance.md, "The clearance stage"): two objects within
    ``d`` have, on each axis, ``lo_B <= hi_A + d`` in real numbers, so
    ``lo_B <= fl(hi_A + d)`` (rounding to nearest is monotone and ``lo_B`` is a float64)
    and ``fl(lo_B - d) <= lo_B``, whence ``fl(lo_B - d) <= fl(hi_A + d)``: the inflated
    boxes meet. Inflating both sides by ``d`` is looser than needed (2d), never unsound."""
    d = float(d)
    if not (d >= 0.0 and np.isfinite(d)):
        raise ValueError(f"the clearance must be finite and >= 0, got {d}")
    if len(positions) < 2:
        return ObjectPairs(np.zeros((0, 2), np.int64))
    lo, hi = position_boxes(positions)
    lo, hi = lo - d, hi + d          # an empty box (inf, -inf) stays empty
    return ObjectPairs(sweep_pairs(lo, hi), lo, hi)
