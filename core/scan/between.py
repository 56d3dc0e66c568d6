"""The pairs between objects at one frame: for each candidate object pair of the broad
phase, the candidate triangle pairs of its two volumes, each through the exact test.

Four ways, cheapest first, all on whole arrays over the object pairs:

1. *Carried* (`_carried`): between two objects that carry their last answer (the live
   overlay while the artist poses), the kept answer with only what moved re-checked by
   the two objects' AABB trees (`aabb_tree.object_cross_pairs`; docs/self_collision.md,
   "Carried pairs between two meshes").
2. *Boxed* (`_boxed`): object pairs with few triangles in their boxes' shrunken
   intersection are paired by boxes (`broad_phase.box_filtered_pairs`), no tree.
3. *Deep* (`_deep`): object pairs standing in one another, where the shrunken
   intersection holds at least `DEEP_SHARE` of their triangles, through the two objects'
   exact box trees refitted from the frame's vertices (`aabb_tree.frame_levels`),
   whose boxes stay tight however deep the overlap; the methods' volumes (sphere trees
   refitted on demand) grow with it (docs/broad_phase.md, "Deep overlap").
4. *Traversed* (`_traversed`): the others, through the objects' methods' volumes: one
   stacked traversal for all of them (`query.multi`), or a method's own whole-tree pass
   (box trees), pair by pair.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..aabb_tree import TooManyPairs, cross_triangle_candidates, frame_levels
from ..hierarchy import traversal
from ..query import broad_phase, multi
from ..types import FrameInputs, FrameSeams, ObjectPairs, QueryStats, Volumes, narrow_phase
from .carry import Carried, for_object, frame_state, keep_cross_pairs, object_cross_pairs
from .dispatch import OWN, volumes
from .exact import ExactTest
from .objects import CollisionObject

#: Object pairs with at most this many triangles (both sides) in their boxes' shrunken
#: intersection are paired by boxes without a tree (core.query.broad_phase.box_filtered_pairs:
#: cells split in two, then a sweep); the others go through the tree traversal. On crowds
#: of Cesium Men the box path took half the CPU time of the traversal (bench_crowd.py).
BOX_PAIRS_MAX = 20000

#: Object pairs whose shrunken intersection holds at least this share of their two
#: objects' triangles go through the objects' exact box trees (`_deep`), neither by boxes
#: nor by the methods' volumes: refitting two whole box trees costs about 0.1 µs a
#: triangle of the two objects, pairing by boxes and sweeping 3-5 µs a triangle in the
#: intersection, the on-demand sphere traversal 1-10 µs (docs/broad_phase.md, "Deep
#: overlap"; bench/bench_pair_playback.py).
DEEP_SHARE = 0.05
#: ... and at least this many: on small meshes the trees' descent (a few numpy calls per
#: level, whatever the meshes) costs as much as boxes and a sweep over a few thousand
#: triangles (a crowd of ten Cesium Men, 4.7k triangles each, arms meeting: 4-10% slower
#: with 500 here than by boxes alone).
DEEP_MIN = 2000


@dataclass
class _Work:
    """What the four ways share while answering one frame."""

    objects: list[CollisionObject]
    inputs: FrameInputs
    seams: FrameSeams
    exact: ExactTest
    kept: dict
    st: QueryStats
    carried: Carried | None = None                  # what the live overlay carries
    found: list = field(default_factory=list)       # (K, 2) stacked triangle pairs
    deep: bool = False                              # deep pairs by the exact box trees
    carrying: list = field(default_factory=list)    # object pairs whose answer is kept

    def has_hit(self) -> bool:
        """Whether some intersecting pair is found already (first hit stops there)."""
        return any(f.size for f in self.found)

    def carries(self, i: int, j: int) -> None:
        """Bring both objects' kept frames up to this frame (once) and note the pair: its
        complete answer will be kept for the next update."""
        for k in (i, j):
            if k not in self.kept:
                self.kept[k] = frame_state(self.objects[k], self.inputs.positions[k],
                                           self.inputs.triangles[k], self.carried)
        self.carrying.append((i, j))


def pairs_between(objects: list[CollisionObject], inputs: FrameInputs, near: ObjectPairs,
                  seams: FrameSeams, exact: ExactTest, mode: str, first_hit: bool = False,
                  enough=None, kept: dict | None = None, carried: Carried | None = None
                  ) -> tuple[list[tuple[int, int, np.ndarray]], QueryStats, dict[int, str]]:
    """Every intersecting triangle pair of the broad phase's object pairs.

    Args:
        near: the broad phase's object pairs and boxes. seams, exact: the seam stage's
            answer and the exact test built on it.
        mode: the query's method mode (`dispatch.OWN` or a method any object can use).
        first_hit: stop at the first intersecting pair.
        enough: optional f(list of (i, j, (K, 2) pairs)) -> bool for capped frames.
        kept: object index -> `carry.Kept`, the kept frames of carrying objects brought
            up to this frame (filled here, shared with the self stage).
        carried: what the live overlay carries between updates (`carry.Carried`); None
            carries nothing.
    Returns:
        per object pair (i, j, (K, 2) int64 triangle pairs, sorted); the stats (with
        ``extra``: object_pairs, carried_pairs, box_pairs, deep_pairs, traversed_pairs,
        stopped, dense); and the method id of each object whose volumes were made (an
        object answered by the deep way keeps its own: the trees are exact, as are the
        self stage's and the clearance traversal's, and the report names what was built).
    """
    st = QueryStats()
    st.extra.update(object_pairs=int(near.pairs.shape[0]), box_pairs=0, traversed_pairs=0,
                    carried_pairs=0, deep_pairs=0)
    if not near.pairs.size:
        return [], st, {}
    carry = not first_hit and carried is not None
    w = _Work(objects, inputs, seams, exact, kept if kept is not None else {}, st, carried=carried)
    todo = _carried(w, near.pairs, enough) if carry else near.pairs
    w.deep = mode == OWN
    big, blo, bhi, kept_tris = _boxed(w, near, todo)
    trav = todo[big]
    for i, j in trav.tolist() if carry else []:
        if (i, j) not in w.carrying:
            w.carries(i, j)                 # traversed in full now, kept for the next
    methods: dict[int, str] = {}
    if trav.size and w.deep and not (first_hit and w.has_hit()):
        deep = _deep(w, trav, kept_tris, enough is not None, first_hit)
        trav, blo, bhi = trav[~deep], blo[~deep], bhi[~deep]
    traversed = trav.size and not (first_hit and w.has_hit())
    if traversed:
        methods = _traversed(w, trav, blo, bhi, mode, first_hit, enough)
    st.extra["traversed_pairs"] = int(trav.shape[0]) if traversed else 0
    allp = np.concatenate(w.found) if w.found else np.zeros((0, 2), np.int64)
    allp = allp[np.lexsort((allp[:, 1], allp[:, 0]))]    # each object pair's pairs sorted
    out = multi.split_pairs(allp, inputs.tri_off)
    if w.carrying and not st.extra.get("stopped"):
        # Complete answers only (a capped query that stopped, first hit: never kept).
        got = {(i, j): p for i, j, p in out}
        empty = np.zeros((0, 2), np.int64)
        for i, j in w.carrying:
            keep_cross_pairs(objects[i], w.kept[i], objects[j], w.kept[j], seams.key(i, j),
                             got.get((i, j), empty), carried)
    return (out[:1] if first_hit else out), st, methods


def _carried(w: _Work, candidates: np.ndarray, enough) -> np.ndarray:
    """Answer the candidate pairs of two carrying objects with a kept answer from it (a
    loop over object pairs, never over triangles); returns the pairs still to answer.
    A pair without a usable kept answer goes the usual way."""
    objects, tris = w.objects, w.inputs.triangles
    done = np.zeros(candidates.shape[0], dtype=bool)
    for c, (i, j) in enumerate(candidates.tolist()):
        if id(objects[j]) not in w.carried.cross(objects[i]):
            continue
        w.carries(i, j)
        limit = None if enough is None else multi.live_budget([tris[i].shape[0],
                                                                tris[j].shape[0]])
        p = object_cross_pairs(objects[i], w.kept[i], objects[j], w.kept[j],
                               w.seams.key(i, j), w.exact.between(i, j), w.carried, limit)
        if p is not None:
            done[c] = True
            w.st.extra["carried_pairs"] += 1
            w.found.append(p + w.inputs.tri_off[[i, j]])
    if (done.any() and enough is not None
            and enough(multi.split_pairs(np.concatenate(w.found), w.inputs.tri_off))):
        w.st.extra["stopped"] = True      # capped: the carried answers already make enough
        w.st.extra["dense"] = False
        done[:] = True
    return candidates[~done]


def _boxed(w: _Work, near: ObjectPairs, todo: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pair by boxes the object pairs with few triangles in their boxes' intersection and
    test them; returns which of `todo` need the traversal (`big`, (M,) int64 indices),
    the boxes the traversal starts from and the triangles kept in them (per pair)."""
    inp = w.inputs
    ga = gb = big = kept = np.zeros(0, np.int64)
    blo = bhi = None
    if todo.size:
        ga, gb, big, blo, bhi, kept = broad_phase.box_filtered_pairs(
            todo, inp.tri_off, inp.v_off, inp.PT, inp.T, near.lo, near.hi, BOX_PAIRS_MAX,
            counts=True, deep_share=DEEP_SHARE if w.deep else None, deep_min=DEEP_MIN)
    w.st.extra["box_pairs"] = int(ga.size)
    if ga.size:
        hit = w.exact(ga, gb)
        w.st.triangle_tests += int(ga.size)
        w.found.append(np.stack([ga[hit], gb[hit]], axis=1))
    return big, blo, bhi, kept


def _deep(w: _Work, trav: np.ndarray, kept: np.ndarray, capped: bool,
          first_hit: bool = False) -> np.ndarray:
    """Answer the object pairs left to a traversal that stand deep in one another (at
    least `DEEP_SHARE` of their triangles, and `DEEP_MIN`, kept in the shrunken
    intersection, `kept` (M,))
    by the two objects' exact box trees, complete; returns (M,) bool which were answered.
    Each object's boxes are refitted once for all its pairs. A capped query (the live
    overlay) gives each pair the live budget: past it the pair is left to the traversal,
    which answers in full unless its dense-frame rule stops it (docs/workflow.md,
    "Limits"). With `first_hit` the pairs after the first one with a hit are left
    undone (the frame's answer is that hit)."""
    inp = w.inputs
    n_tris = np.array([t.shape[0] for t in inp.triangles], np.int64)
    done = kept >= broad_phase.deep_threshold(n_tris[trav[:, 0]] + n_tris[trav[:, 1]],
                                              DEEP_SHARE, DEEP_MIN)
    levels: dict[int, list] = {}

    def boxes(k: int):
        if k not in levels:
            levels[k] = frame_levels(for_object(w.objects[k]), inp.positions[k],
                                     inp.triangles[k])
        return for_object(w.objects[k]), levels[k]

    for c in np.flatnonzero(done).tolist():
        if first_hit and w.has_hit():
            done[c] = False                 # answered already: left, never traversed
            continue
        i, j = trav[c].tolist()
        limit = multi.live_budget(n_tris[[i, j]]) if capped else None
        try:
            ta, tb = cross_triangle_candidates(*boxes(i), *boxes(j), limit)
        except TooManyPairs:
            done[c] = False
            continue
        hit = w.exact.between(i, j)(ta, tb) if ta.size else np.zeros(0, bool)
        w.st.triangle_tests += int(ta.size)
        w.found.append(np.stack([ta[hit] + inp.tri_off[i], tb[hit] + inp.tri_off[j]],
                                axis=1).astype(np.int64))
    w.st.extra["deep_pairs"] = int(done.sum())
    return done


def _traversed(w: _Work, trav: np.ndarray, blo, bhi, mode: str, first_hit: bool,
               enough) -> dict[int, str]:
    """The traversed object pairs: the volumes of their objects are made (only theirs);
    pairs of a kind with a whole-tree pass of its own (box trees) keep it, pair by pair;
    every other pair goes through one stacked traversal. Returns the volumes' method ids."""
    objects, inp, st = w.objects, w.inputs, w.st
    vols: list[Volumes | None] = [None] * inp.n
    for k in np.unique(trav).tolist():
        vols[k] = volumes(objects[k], inp.positions[k], inp.poses[k], mode, inp.triangles[k])
    own = np.array([narrow_phase(vols[i], vols[j]).whole is not None   # the dispatch table
                    for i, j in trav.tolist()], dtype=bool)
    for i, j in trav[own].tolist():
        p, st2 = traversal.collide(vols[i], vols[j], w.exact.between(i, j),
                                   first_hit=first_hit)
        w.found.append(np.stack([p[:, 0] + inp.tri_off[i], p[:, 1] + inp.tri_off[j]], axis=1))
        st.triangle_tests += st2.triangle_tests
        st.refitted += st2.refitted
    rest = ~own
    if rest.any() and not (first_hit and w.has_hit()):
        # The volumes' own hierarchies; objects without volumes are never reached.
        stk = multi.stacked([v.hierarchy if v is not None else multi.EMPTY for v in vols],
                            [t.shape[0] for t in inp.triangles])
        stop = budget = None
        if enough is not None:
            def stop(so_far, before=list(w.found)):  # noqa: B006 - a snapshot, never mutated
                return enough(multi.split_pairs(np.concatenate(before + [so_far]),
                                                inp.tri_off))
            budget = multi.live_budget([inp.triangles[k].shape[0]
                                        for k in np.unique(trav[rest])])
        more, st2 = multi.collide_many(vols, trav[rest], stk, w.exact,
                                       boxes=(blo[rest], bhi[rest]), first_hit=first_hit,
                                       enough=stop, budget=budget)
        w.found.append(more)
        if st2.extra.get("stopped"):
            st.extra["stopped"] = True
            st.extra["dense"] = bool(st2.extra.get("dense"))
        st.volume_tests, st.chunks = st2.volume_tests, st2.chunks
        st.refitted += st2.refitted
        st.triangle_tests += st2.triangle_tests
    return {k: v.method_id for k, v in enumerate(vols) if v is not None}
