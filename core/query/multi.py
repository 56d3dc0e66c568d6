"""One traversal for many object pairs: the hierarchies of a crowd stacked into one.

The hierarchies of all objects are concatenated into one node numbering (`Stacked`,
built once per set of objects and cached): node ``g`` belongs to object
``node_obj[g]`` and is that object's node ``g - node_off[obj]``; leaves hold triangle ids
offset the same way. A frontier chunk is then a pair of global node arrays, whatever the
object pairs, and expanding children or leaves is one array operation for all of them,
as in `traversal.collide`. Volumes are asked per object (`np.unique` on the object column:
a loop over the objects present in a chunk, never over object pairs), and two nodes of
different objects are compared by their enclosing spheres, exactly as
`Volumes.overlap`'s default does, so the node pairs kept are those the per-pair traversal
keeps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..cache import Recent
from ..hierarchy.traversal import FIRST_HIT_CHUNK, QueryStats, children, leaf_triangle_pairs
from ..types import Hierarchy, Volumes

#: A capped (live) traversal stops as dense once it has made this many triangle tests
#: per triangle of the objects it traverses (`live_budget`) and at least
#: `DENSE_HIT_SHARE` of them hit. Blender's reference builds a tree over every one of
#: those triangles each frame. Two MakeHumans standing on the same spot
#: (`python -m bench dense-pairs copies 2 0 0`) reach it after 20,000 (`DENSE_TESTS_MIN`) of
#: their 547,000 tests (64% hit); two interpenetrating, 35 cm apart and turned 29
#: degrees, make 15,000 tests (5% hit) and never do. Past the budget the traversal's
#: descent from the roots dominates (0.1 s there), so a smaller one gains little.
DENSE_TESTS_PER_TRIANGLE = 0.25
#: ... and never fewer than this many (small meshes: sphere-tree leaves hold several
#: triangles, so a few touching leaves make many tests; 20,000 take about 10 ms).
DENSE_TESTS_MIN = 20000
DENSE_HIT_SHARE = 0.25


#: Node pairs per step of a capped traversal (with a `budget`): smaller steps reach the
#: leaves of a dense frame with fewer node pairs above them tested (two coincident
#: MakeHumans: 150,000 volume tests to the budget instead of 300,000, 0.10 s instead of
#: 0.15 s).
CAPPED_CHUNK = 16384


def live_budget(n_triangles) -> int:
    """The triangle-test budget of a capped traversal over objects with `n_triangles`."""
    return max(DENSE_TESTS_MIN,
               int(DENSE_TESTS_PER_TRIANGLE * sum(int(n) for n in n_triangles)))


#: The box culling of `collide_many` stops for the rest of a traversal after a step in
#: which at least CULL_PROBE node pairs met by the spheres lost less than CULL_MIN_SHARE
#: of them to the boxes (two characters side by side: 0.03% culled, 10% of the query
#: spent testing). Culling only drops node pairs that cannot touch, so stopping it
#: changes which node pairs are visited, never the triangle pairs found.
CULL_PROBE = 512
CULL_MIN_SHARE = 0.01


#: Node pairs per vectorized step: bigger than `traversal.CHUNK`, since every step calls
#: each object's refit once and a crowd has many objects.
MULTI_CHUNK = 65536


@dataclass
class Stacked:
    """Several hierarchies as one.

    Attributes:
        hierarchy: the global `Hierarchy` (node ids and triangle ids offset per object).
        node_off: (n + 1,) int64 first global node of each object.
        tri_off: (n + 1,) int64 first global triangle of each object.
        node_obj: (N,) int32 object of each global node.
    """

    hierarchy: Hierarchy
    node_off: np.ndarray
    tri_off: np.ndarray
    node_obj: np.ndarray


def stack(hierarchies: list[Hierarchy], n_triangles: list[int]) -> Stacked:
    """Concatenate hierarchies; object k's triangles are numbered from ``tri_off[k]``."""
    nodes = np.array([h.n_nodes for h in hierarchies], dtype=np.int64)
    node_off = np.zeros(len(hierarchies) + 1, dtype=np.int64)
    np.cumsum(nodes, out=node_off[1:])
    tri_off = np.zeros(len(hierarchies) + 1, dtype=np.int64)
    np.cumsum(np.asarray(n_triangles, dtype=np.int64), out=tri_off[1:])
    fc = np.concatenate([np.where(h.first_child >= 0, h.first_child.astype(np.int64) + o, -1)
                         for h, o in zip(hierarchies, node_off[:-1])])
    cc = np.concatenate([h.child_count for h in hierarchies]).astype(np.int64)
    leaf_off = np.cumsum([0] + [h.leaf_tris.size for h in hierarchies])
    ptr = np.concatenate([h.leaf_ptr[:-1] + lo for h, lo in zip(hierarchies, leaf_off[:-1])]
                         + [np.array([leaf_off[-1]], dtype=np.int64)]).astype(np.int64)
    tris = np.concatenate([h.leaf_tris.astype(np.int64) + t
                           for h, t in zip(hierarchies, tri_off[:-1])])
    node_obj = np.repeat(np.arange(len(hierarchies), dtype=np.int32), nodes)
    return Stacked(Hierarchy(fc, cc, ptr, tris), node_off, tri_off, node_obj)


#: The hierarchy of an object without volumes this frame (never reached by a traversal):
#: one empty leaf, one shared instance so that stacks stay cached.
EMPTY = Hierarchy(np.full(1, -1, np.int32), np.zeros(1, np.int32), np.zeros(2, np.int64),
                  np.zeros(0, np.int64))


# Stacks of the last few object sets (the entries keep the hierarchies alive, so that ids
# cannot be reused while cached): a scan queries the same set frame after frame.
_STACKS = Recent(8)


def stacked(hierarchies: list[Hierarchy], n_triangles: list[int]) -> Stacked:
    """`stack`, cached per list of hierarchies and triangle counts."""
    key = tuple(id(h) for h in hierarchies) + tuple(int(t) for t in n_triangles)
    return _STACKS.get(key, lambda: stack(hierarchies, n_triangles), keep=tuple(hierarchies))


def _gather(vols: list[Volumes | None], st: Stacked, nodes: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centres (n, 3), radii (n,) and sizes (n,) of global `nodes`, asked per object."""
    obj = st.node_obj[nodes]
    if nodes.size and obj[0] == obj[-1] and (obj == obj[0]).all():
        return _gather_one(vols, st, int(obj[0]), nodes)
    c = np.empty((nodes.size, 3))
    r = np.empty(nodes.size)
    s = np.empty(nodes.size)
    order = np.argsort(obj, kind="stable")
    objs, starts = np.unique(obj[order], return_index=True)
    ends = np.append(starts[1:], nodes.size)
    for o, a, b in zip(objs.tolist(), starts.tolist(), ends.tolist()):
        sel = order[a:b]
        local = nodes[sel] - st.node_off[o]
        v = vols[o]
        v.ensure(local)
        c[sel], r[sel] = v.spheres(local)
        s[sel] = v.size(local)
    return c, r, s


def _gather_one(vols: list[Volumes | None], st: Stacked, o: int, nodes: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_gather` of nodes that all belong to object `o` (no grouping)."""
    local = nodes - st.node_off[o]
    v = vols[o]
    v.ensure(local)
    c, r = v.spheres(local)
    return c, r, v.size(local)


def _sphere_meets_box(c: np.ndarray, r: np.ndarray, lo: np.ndarray, hi: np.ndarray
                      ) -> np.ndarray:
    """(n,) bool: may sphere (c[k], r[k]) meet the closed box [lo[k], hi[k]] (or one box
    [lo, hi] of shape (3,) for all)? Rounding of the distance is covered by a relative
    slack of 1e-9 of the coordinates' size (1 µm at 1 km; taken over all the spheres, so
    at least each one's own), so the answer is never a wrong False."""
    if not c.size:
        return np.zeros(0, dtype=bool)
    d = c - np.minimum(np.maximum(c, lo), hi)      # np.clip, without its overhead
    slack = 1e-9 * (np.abs(c).max() + np.abs(r).max())
    return (r >= 0) & (np.einsum("ij,ij->i", d, d) <= (r + slack) ** 2)


def collide_many(vols: list[Volumes | None], pairs: np.ndarray, st: Stacked,
                 triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 chunk: int | None = None, boxes: tuple[np.ndarray, np.ndarray] | None = None,
                 first_hit: bool = False, enough=None, budget: int | None = None
                 ) -> tuple[np.ndarray, QueryStats]:
    """All intersecting triangle pairs of the object pairs `pairs`, in one traversal.

    Args:
        vols: per object its frame's `Volumes` (None for objects in no pair).
        pairs: (P, 2) int64 object pairs (i, j), i != j.
        st: the stacked hierarchies of all objects (`stacked`), in the order of `vols`.
        triangle_test: f(ga (K,), gb (K,)) -> (K,) bool on GLOBAL triangle ids (object
            k's triangle t is ``st.tri_off[k] + t``); False for pairs not to report.
        chunk: maximum node pairs per vectorized step (default MULTI_CHUNK, or
            FIRST_HIT_CHUNK, or CAPPED_CHUNK with a `budget`).
        first_hit: stop after the first chunk with an intersecting pair (deepest
            overlaps first, as `traversal.collide`); the pairs are then a non-empty subset,
            or empty when none exist.
        boxes: per object pair (row of `pairs`) a closed box (lo (P, 3), hi (P, 3)) that
            holds every point where the two objects may touch (`broad_phase`: the
            intersection of their boxes, shrunk); a node pair is also dropped when either
            sphere misses its pair's box (docs/broad_phase.md), until a step culls
            almost nothing (`CULL_PROBE`, `CULL_MIN_SHARE`).
        enough: optional f(pairs) -> bool for capped frames, asked with the (K, 2) global
            pairs found so far each time their number has doubled: True stops the
            traversal (the pairs are then a subset; ``stats.extra["stopped"]``).
        budget: optional, for capped frames (`live_budget`): once this many triangle
            pairs went through `triangle_test` and at least `DENSE_HIT_SHARE` of that many
            intersect (a dense frame), the traversal stops (the pairs are then a subset;
            ``stats.extra["stopped"]`` and ``["dense"]``).
    Returns:
        (K, 2) int64 global triangle pairs, the first column from the first object of its
        pair; and statistics (all object pairs together).
    """
    if chunk is None:
        chunk = FIRST_HIT_CHUNK if first_hit else CAPPED_CHUNK if budget else MULTI_CHUNK
    h = st.hierarchy
    stats = QueryStats()
    hits = _Hits([])
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not pairs.size:
        return np.zeros((0, 2), np.int64), stats
    single = pairs.shape[0] == 1
    cull = None if boxes is None else _culling(pairs, st, boxes, single)
    stack_ = [(st.node_off[pairs[:, 0]], st.node_off[pairs[:, 1]])]
    oa, ob = int(pairs[0, 0]), int(pairs[0, 1])
    while stack_:
        na, nb = stack_.pop()
        if na.size > chunk:
            stack_.append((na[chunk:], nb[chunk:]))
            na, nb = na[:chunk], nb[:chunk]
        stats.chunks += 1
        if single:
            # One object pair: each column holds one object.
            ca, ra, sa = _gather_one(vols, st, oa, na)
            cb, rb, sb = _gather_one(vols, st, ob, nb)
        else:
            # One `ensure` per object present in the chunk, for both columns together.
            c, r, s = _gather(vols, st, np.concatenate([na, nb]))
            m = na.size
            ca, ra, sa, cb, rb, sb = c[:m], r[:m], s[:m], c[m:], r[m:], s[m:]
        d = ca - cb
        sr = ra + rb
        # As Volumes.overlap (a negative radius marks an empty node).
        ok = (sr >= 0) & (np.einsum("ij,ij->i", d, d) <= sr * sr)
        if cull is not None and cull.on:
            ok = _cull(cull, st, ok, na, nb, ca, ra, cb, rb)
        stats.volume_tests += int(na.size)
        na, nb, sa, sb = na[ok], nb[ok], sa[ok], sb[ok]
        if first_hit:
            # Deepest overlaps first: their children are the likeliest to hold a hit.
            depth = (ra[ok] + rb[ok]) - np.linalg.norm(d[ok], axis=1)
            order = np.argsort(-depth, kind="stable")
            na, nb, sa, sb = na[order], nb[order], sa[order], sb[order]
        leaf_a = h.first_child[na] < 0
        leaf_b = h.first_child[nb] < 0
        both = leaf_a & leaf_b
        if both.any() and _test_leaves(h, na[both], nb[both], triangle_test, stats, hits,
                                       first_hit, enough, budget):
            break
        rest = ~both
        if rest.any():
            stack_.append(_descend(h, na[rest], nb[rest], leaf_a[rest], leaf_b[rest],
                                   sa[rest], sb[rest]))
    stats.refitted = int(sum(v.refitted for v in vols if v is not None))
    out = np.concatenate(hits.found) if hits.found else np.zeros((0, 2), np.int64)
    return out, stats


@dataclass
class _Culling:
    """The box culling of one `collide_many` traversal: per object pair (row of `pairs`)
    its box (lo (P, 3), hi (P, 3)), the rows sorted by object-pair key (``i * n + j``,
    n objects) to find a node pair's row, and whether culling is still on."""

    boxes: tuple[np.ndarray, np.ndarray]
    pair_order: np.ndarray
    pair_keys_sorted: np.ndarray
    n_obj: int
    single: bool
    on: bool = True


def _culling(pairs: np.ndarray, st: Stacked, boxes: tuple[np.ndarray, np.ndarray],
             single: bool) -> _Culling:
    """The `_Culling` of a traversal of the (P, 2) int64 object pairs `pairs`."""
    n_obj = st.node_off.size - 1
    pair_keys = pairs[:, 0] * n_obj + pairs[:, 1]
    pair_order = np.argsort(pair_keys, kind="stable")
    return _Culling(boxes, pair_order, pair_keys[pair_order], n_obj, single)


def _cull(cull: _Culling, st: Stacked, ok: np.ndarray, na: np.ndarray, nb: np.ndarray,
          ca: np.ndarray, ra: np.ndarray, cb: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """(n,) bool: `ok` (the node pairs (na, nb) whose spheres (ca (n, 3), ra (n,)) and
    (cb, rb) meet) without those where either sphere misses its object pair's box. Turns
    `cull` off for the rest of the traversal when it dropped almost nothing."""
    boxes = cull.boxes
    if cull.single:
        lo, hi = boxes[0][0], boxes[1][0]
    else:
        row = cull.pair_order[np.searchsorted(cull.pair_keys_sorted,
                                              st.node_obj[na].astype(np.int64) * cull.n_obj
                                              + st.node_obj[nb])]
        lo, hi = boxes[0][row], boxes[1][row]
    kept = ok & _sphere_meets_box(ca, ra, lo, hi) & _sphere_meets_box(cb, rb, lo, hi)
    n_ok = int(np.count_nonzero(ok))
    if n_ok >= CULL_PROBE and n_ok - int(np.count_nonzero(kept)) < n_ok * CULL_MIN_SHARE:
        cull.on = False        # the boxes hold the node pairs reached: stop testing them
    return kept


@dataclass
class _Hits:
    """The triangle pairs a `collide_many` traversal found so far ((k, 2) int64 parts),
    their number, and the number at which `enough` is asked next."""

    found: list[np.ndarray]
    n_found: int = 0
    ask_at: int = 1


def _test_leaves(h: Hierarchy, na: np.ndarray, nb: np.ndarray,
                 triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 stats: QueryStats, hits: _Hits, first_hit: bool, enough, budget: int | None
                 ) -> bool:
    """Test the triangle pairs of the overlapping leaf pairs (na, nb) ((n,) global nodes of
    `h`), adding the hits to `hits` and the counts to `stats`; True when the traversal
    stops there (a first hit, `enough`, or a dense frame past the `budget`)."""
    ta, tb = leaf_triangle_pairs(h, na, h, nb)
    # A dense frame (past the budget, and a high share of the tests hit): test a
    # prefix, up to the budget, and stop.
    over = (budget is not None and stats.triangle_tests + ta.size > budget
            and hits.n_found >= DENSE_HIT_SHARE * budget)
    if over:
        keep = max(budget - stats.triangle_tests, 0)
        ta, tb = ta[:keep], tb[:keep]
        stats.extra.update(stopped=True, dense=True)
    if ta.size:
        hit = triangle_test(ta, tb)
        stats.triangle_tests += int(ta.size)
        if hit.any():
            hits.found.append(np.stack([ta[hit], tb[hit]], axis=1))
            if first_hit:
                return True
            hits.n_found += hits.found[-1].shape[0]
            if enough is not None and hits.n_found >= hits.ask_at:
                hits.ask_at = hits.n_found + hits.n_found // 4 + 1
                if enough(np.concatenate(hits.found)):
                    stats.extra["stopped"] = True
                    stats.extra.pop("dense", None)
                    return True
    return over


def _descend(h: Hierarchy, na: np.ndarray, nb: np.ndarray, la: np.ndarray, lb: np.ndarray,
             sa: np.ndarray, sb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The child pairs of overlapping node pairs (na, nb) ((n,) global nodes of `h`, not
    both leaves; la, lb (n,) bool which are leaves, sa, sb (n,) their sizes): descend into
    the larger volume, or into whichever is not a leaf (as `traversal.collide`)."""
    new_a, new_b = [], []
    split_a = ~la & (lb | (sa >= sb))
    split_b = ~split_a
    if split_a.any():
        owner, kids = children(h, na[split_a])
        new_a.append(kids)
        new_b.append(nb[split_a][owner])
    if split_b.any():
        owner, kids = children(h, nb[split_b])
        new_a.append(na[split_b][owner])
        new_b.append(kids)
    return np.concatenate(new_a), np.concatenate(new_b)


def split_pairs(global_pairs: np.ndarray, tri_off: np.ndarray
                ) -> list[tuple[int, int, np.ndarray]]:
    """Global triangle pairs (object k's triangles numbered from ``tri_off[k]``) as
    [(object a, object b, (K, 2) local pairs)], by object pair in increasing (a, b) order
    (whole-array grouping)."""
    if not global_pairs.size:
        return []
    n = tri_off.size - 1
    oa = np.searchsorted(tri_off, global_pairs[:, 0], side="right") - 1
    ob = np.searchsorted(tri_off, global_pairs[:, 1], side="right") - 1
    key = oa * n + ob
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key[order], return_index=True)
    ends = np.append(starts[1:], order.size)
    local = np.stack([global_pairs[:, 0] - tri_off[oa],
                      global_pairs[:, 1] - tri_off[ob]], axis=1)
    return [(int(k // n), int(k % n), local[order[a:b]])
            for k, a, b in zip(keys.tolist(), starts.tolist(), ends.tolist())]
