"""What a carrying object keeps of its AABB tree between frames (the live overlay while the
artist poses): the kept frame (`Kept`, brought up to each frame by `frame_state`), its
last self answer, and its last answers with other carrying objects (`CrossKept`). The
next frame re-checks only what moved, with the tree's traversals restricted to moved
triangles (`core.aabb_tree`); the union equals a full query (docs/self_collision.md,
"Carried pairs" and "Carried pairs between two meshes"). The frame's stages call this:
`within` for self pairs, `between` for pairs between objects.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .. import aabb_tree
from ..aabb_tree import FrameBoxes, SelfTree, cross_candidates_moved, frame_boxes, update_frame_boxes

__all__ = ["Carried", "Kept", "CrossKept", "for_object", "frame_state", "object_self_pairs",
           "object_cross_pairs", "keep_cross_pairs"]


def for_object(obj) -> SelfTree:
    """The `SelfTree` of a `scan.CollisionObject`, built on first use and kept on it (a
    copy's is its original's, `CollisionObject.tree_source`: one build for a crowd). Safe
    from several threads: copies made ready side by side wait for their original's one
    build instead of each building it."""
    if obj.self_tree is None and obj.tree_source is not None:
        obj.self_tree = for_object(obj.tree_source)
    if obj.self_tree is not None:
        return obj.self_tree
    with _build_lock(obj):
        if obj.self_tree is None:
            obj.self_tree = obj.own_aabb_tree()     # a box-tree object: its tree is this one
        if obj.self_tree is None:
            rig = obj.rig
            # The object's weld ids (`core.welds`): the same adjacency as every other
            # query. Through the package (not a name bound here), as the tests that count
            # builds patch it.
            obj.self_tree = aabb_tree.build(rig.rest_positions, rig.triangles, obj.vertex_keys)
    return obj.self_tree


_LOCKS = threading.Lock()


def _build_lock(obj) -> threading.Lock:
    """The lock under which `obj`'s self tree is built (one per object, made once): other
    objects' trees build at the same time."""
    with _LOCKS:
        lock = obj.__dict__.get("_tree_lock")
        if lock is None:
            lock = obj._tree_lock = threading.Lock()
    return lock


@dataclass(eq=False)
class Kept:
    """What a carrying object (the live overlay while the artist poses: a query given a
    `Carried` store) keeps of the last frame it was queried at (`frame_state`): the tree,
    (V, 3) float64 positions and (T, 3) intp triangles of that frame (copies owned here,
    updated in place where they moved), its last complete self pairs ((K, 2) int64, of
    the frame `self_serial`: this one once its self query is done, else the frame
    `since`; None when not known or when the self query stopped early), and the frame's
    boxes (`FrameBoxes`, made on first use, then updated in place).

    Attributes:
        serial: unique per frame kept (a between answer names the two frames it was
            computed at, `CrossKept`).
        since: the serial of the kept frame `moved` compares with, or None when this
            frame was not compared (no kept frame, another tree, more than
            `CARRY_MAX_MOVED` moved): nothing is carried then.
        moved: (T,) bool the triangles moved since that frame, or None.
        carried: the self pairs of that frame whose triangles are both unmoved, or None.
        self_serial: the serial of the frame `pairs` belong to.
    """

    tree: SelfTree
    positions: np.ndarray
    tris: np.ndarray
    pairs: np.ndarray | None
    boxes: FrameBoxes | None
    serial: int = 0
    since: int | None = None
    moved: np.ndarray | None = None
    carried: np.ndarray | None = None
    self_serial: int | None = None

    def frame_boxes(self) -> FrameBoxes:
        """The kept frame's boxes (made now from the kept positions if not yet)."""
        if self.boxes is None:
            self.boxes = frame_boxes(self.tree, self.positions, self.tris, self.tree.weld_ids)
        return self.boxes


class CrossKept(NamedTuple):
    """The last complete answer between two carrying objects (kept with the first,
    `Carried.cross`): the other object, the serials of the two kept frames
    it was computed at, the seam rule it was computed with (`scan.between.pairs_between`'
    key), and its (K, 2) int64 pairs (triangle of the first, of the other), sorted."""

    other: object
    serial_a: int
    serial_b: int
    seams: object
    pairs: np.ndarray


_SERIALS = itertools.count(1)


class Carried:
    """What the queries of a live overlay carry from one update to the next (issue 56:
    passed in and updated, never kept on the objects): per object its kept frame (`Kept`)
    and its last complete answers with other objects (`CrossKept`, by the other's id).
    Objects are keyed by identity; an entry holds its object, so that an id cannot be
    reused while it is kept. A query given no store carries nothing (Refresh, scans)."""

    def __init__(self) -> None:
        self._frames: dict = {}             # id(obj) -> (obj, Kept)
        self._cross: dict = {}              # id(obj) -> (obj, {id(other): CrossKept})

    def frame(self, obj) -> Kept | None:
        """`obj`'s kept frame, or None."""
        e = self._frames.get(id(obj))
        return e[1] if e is not None and e[0] is obj else None

    def keep_frame(self, obj, kept: Kept) -> None:
        self._frames[id(obj)] = (obj, kept)

    def cross(self, obj) -> dict:
        """`obj`'s last answers with other objects, by the other's id (empty: none)."""
        e = self._cross.get(id(obj))
        return e[1] if e is not None and e[0] is obj else {}

    def keep_cross(self, obj, answers: dict) -> None:
        self._cross[id(obj)] = (obj, answers)

    def retain(self, objects) -> "Carried":
        """Only what `objects` keep (rebuilt or removed objects' entries dropped); self."""
        ids = {id(o) for o in objects}
        self._frames = {k: e for k, e in self._frames.items() if k in ids}
        self._cross = {k: e for k, e in self._cross.items() if k in ids}
        return self


#: An incremental query (`object_self_pairs` with carried pairs) pays off while few
#: triangles moved; above this fraction the whole mesh is queried again (a cost choice:
#: both answers are the same).
CARRY_MAX_MOVED = 0.5


def frame_state(obj, positions: np.ndarray, tris: np.ndarray, store: Carried) -> Kept:
    """Bring the kept frame of a carrying `scan.CollisionObject` up to this frame, once per
    query, and return it (kept in `store` too): a triangle moved when one of its
    vertices' positions differs bit for bit from the kept ones, or its vertex indices do
    (a re-split quad). The kept positions, triangles and boxes are updated where
    triangles moved (O(moved) work, `update_frame_boxes`); with more than
    `CARRY_MAX_MOVED` moved (or no kept frame) a fresh frame is kept and nothing carried
    (``since`` is None). Shared by the self query and the queries between objects."""
    tree = for_object(obj)
    positions = np.asarray(positions, np.float64)
    tris = np.asarray(tris, np.intp)
    last = store.frame(obj)
    moved = None
    if (last is not None and last.tree is tree and last.positions.shape == positions.shape
            and last.tris.shape == tris.shape):
        d = positions != last.positions
        moved_v = d[:, 0] | d[:, 1] | d[:, 2]
        mt = np.take(moved_v, tris)
        mt |= tris != last.tris
        moved = mt[:, 0] | mt[:, 1] | mt[:, 2]
        if np.count_nonzero(moved) > CARRY_MAX_MOVED * moved.size:
            moved = None
    serial = next(_SERIALS)
    if moved is None:
        kept = Kept(tree, positions.copy(), tris.copy(), None, None, serial)
    else:
        changed = np.flatnonzero(moved)
        if last.boxes is not None:
            update_frame_boxes(last.boxes, tree, positions, tris, tree.weld_ids, changed)
        moved_v = np.flatnonzero(moved_v)
        last.positions[moved_v] = positions[moved_v]
        last.tris[changed] = tris[changed]
        # The last self answer carries only if it is the kept frame's.
        prev = last.pairs if last.self_serial == last.serial else None
        carried = None if prev is None else prev[~(moved[prev[:, 0]] | moved[prev[:, 1]])]
        kept = Kept(tree, last.positions, last.tris, prev, last.boxes, serial, last.serial,
                    moved, carried, None if prev is None else last.serial)
    store.keep_frame(obj, kept)
    return kept


def object_self_pairs(obj, positions: np.ndarray, tris: np.ndarray | None = None,
                      stats=None, enough=None, state: Kept | None = None,
                      carried: Carried | None = None) -> np.ndarray:
    """Self pairs of a `scan.CollisionObject` at one frame: (K, 2) int64, t < u, sorted.

    Args:
        positions: (V, 3) float64 evaluated positions. tris: (T, 3) the frame's triangles
            (default: the rest triangles). stats: optional `traversal.QueryStats`, given
            the exact-test count and, in ``extra``, the box tests and re-split pairs
            (and ``stopped``). enough: `self_pairs`' early stop for capped frames.
        state: the object's kept frame already brought up to this frame by `frame_state`
            in this query (`scan.query_frame`, shared with the pairs between objects);
            made here when None.
        carried: what the live overlay carries between updates (`Carried`); None: a full
            query that keeps nothing.

    Given a store (the live overlay while the artist poses), the last complete answer is
    kept with its frame (`frame_state`),
    and the next call re-checks only what moved. Pairs of two unmoved triangles are
    carried over (their exact test and adjacency see the same numbers); pairs with a
    moved triangle are traversed and tested as always (`self_pairs(moved=...)`). The union
    is the full query's answer (docs/self_collision.md, "Carried pairs";
    tests/core/test_self_collision.py compares them).
    """
    tree = for_object(obj)
    if tris is None:
        tris = obj.rig.triangles
    positions = np.asarray(positions, np.float64)
    tris = np.asarray(tris, np.intp)
    counts: dict = {}
    if carried is None:
        pairs = aabb_tree.self_pairs(tree, positions, tris, tree.weld_ids, stats=counts, enough=enough)
    else:
        kept = frame_state(obj, positions, tris, carried) if state is None else state
        boxes = kept.frame_boxes()
        prev = kept.carried                   # the pairs carried from the kept frame
        if prev is None:
            pairs = aabb_tree.self_pairs(tree, positions, tris, tree.weld_ids, stats=counts,
                               enough=enough, frame=boxes)
        else:
            # Only what moved is traversed and tested (docs/self_collision.md "Carried
            # pairs"); the kept boxes are this frame's (`frame_state`).
            see = None
            if enough is not None:
                def see(p):
                    return enough(np.concatenate([prev, p]) if prev.size else p)
            new = aabb_tree.self_pairs(tree, positions, tris, tree.weld_ids, stats=counts, enough=see,
                             moved=kept.moved, frame=boxes)
            pairs = np.concatenate([prev, new])
            pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
        kept.pairs = None if counts.get("stopped") else pairs
        kept.self_serial = kept.serial
    if stats is not None:
        stats.triangle_tests += counts["triangle_tests"]
        stats.extra.update(counts)
    return pairs


def _same_seams(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a[0] is b[0] and a[1] is b[1]


def object_cross_pairs(obj_a, kept_a: Kept, obj_b, kept_b: Kept, seams, test,
                       carried: Carried, limit: int | None = None) -> np.ndarray | None:
    """The pairs between two carrying objects at this frame from their last complete
    answer (`CrossKept`), or None when there is none for the frames kept before this
    update, or when the moved part would test more than `limit` candidate pairs (a
    capped query then takes the usual path, with its dense-frame rule).

    Args:
        kept_a, kept_b: the objects' kept frames, brought up to this frame by
            `frame_state` in this query.
        seams: the seam rule of the pair this frame: None when no seams hold between
            them, else their two seam id arrays (`scan.seam_ids`), compared by identity
            with the answer's.
        test: f(ta, tb) -> (K,) bool the caller's pair test (seam rule, then the exact
            float64 test) on triangle indices of A and of B.
    Returns:
        (K, 2) int64 (triangle of A, triangle of B), sorted: the kept pairs whose two
        triangles are unmoved, plus the pairs with a moved triangle found by a traversal
        of the two kept trees restricted to node pairs with a moved node
        (`query.cross_candidates_moved`) and `test` (docs/self_collision.md, "Carried
        pairs between two meshes"). The same set as a full query.
    """
    rec = carried.cross(obj_a).get(id(obj_b))
    if (rec is None or rec.other is not obj_b or kept_a.since is None
            or kept_b.since is None or rec.serial_a != kept_a.since
            or rec.serial_b != kept_b.since or not _same_seams(rec.seams, seams)):
        return None
    ma, mb = kept_a.moved, kept_b.moved
    if not (ma.any() or mb.any()):
        return rec.pairs
    sa, sb = cross_candidates_moved(kept_a.tree, kept_a.frame_boxes(), ma,
                                    kept_b.tree, kept_b.frame_boxes(), mb)
    if limit is not None and sa.size > limit:
        return None
    ta = np.take(kept_a.tree.slot_tri, sa)
    tb = np.take(kept_b.tree.slot_tri, sb)
    hit = test(ta, tb) if ta.size else np.zeros(0, bool)
    prev = rec.pairs
    carried = prev[~(ma[prev[:, 0]] | mb[prev[:, 1]])]
    pairs = np.concatenate([carried, np.stack([ta[hit], tb[hit]], axis=1).astype(np.int64)])
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def keep_cross_pairs(obj_a, kept_a: Kept, obj_b, kept_b: Kept, seams,
                     pairs: np.ndarray, carried: Carried) -> None:
    """Keep `pairs`, the complete answer between two carrying objects at the frames
    `kept_a` and `kept_b` (never a stopped or first-hit answer), for the next update;
    answers kept at older frames of `obj_a` are dropped (they can no longer be used)."""
    kept = {k: r for k, r in carried.cross(obj_a).items() if r.serial_a == kept_a.serial}
    kept[id(obj_b)] = CrossKept(obj_b, kept_a.serial, kept_b.serial, seams,
                                np.asarray(pairs, np.int64))
    carried.keep_cross(obj_a, kept)
