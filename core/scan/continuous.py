"""Between two samples (issue 57): every triangle pair that touches at some time of the
step while each vertex moves on the straight line from its evaluated position at one
sample to the next (the motion IPC-family solvers and motion-blur steps assume), with a
lower bound of its first contact. Pure numpy.

    objects   object pairs whose boxes can meet during the step (each box inequality
              holds at one end: `core.aabb_tree.motion`)
    versions  a triangle Blender splits differently at the two ends is checked as both
              triangles over the whole step
    self      per object, the seeds of its AABB tree and their descendants whose boxes can
              meet (`motion.self_candidates`: never rest-adjacent), plus the rest-adjacent
              pairs a re-split or a parted weld leaves non-adjacent
    cross     per object pair, the two trees from their roots (`motion.cross_candidates`)
    adjacent  a pair sharing a vertex (its weld id, or a seam's) at either end touches
              there by construction and is left out, as the frame leaves it out
    narrow    `core.geometry.swept.pair_times`: the box and coplanarity filters, then the
              continuous kernel (`core.geometry.ccd`)

Pairs that already intersect at the first sample (an edge through a face from the start
has no vertex-face or edge-edge contact during the step) are the frame's; the pipeline
adds them at t = 0 (`core.scan.pipeline.between`). Soundness: docs/ccd.md.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..aabb_tree import motion
from ..contacts.pairs import rows_in
from ..geometry.swept import pair_times
from ..types import FrameInputs
from .carry import for_object
from .objects import CollisionObject
from .seams import frame_keys, frame_seams


@dataclass
class StepResult:
    """One step's answer.

    Attributes:
        pairs: per object pair with contacts (i, j, (K, 2) int64 triangle pairs, (K,)
            float64 first-contact lower bounds in [0, 1]); self pairs as (min, max),
            cross pairs with i < j.
        ms: the step's milliseconds.
        stats: counts: ``candidates`` (triangle pairs through the narrow phase).
    """

    pairs: list = field(default_factory=list)
    ms: float = 0.0
    stats: dict = field(default_factory=dict)


@dataclass
class _Side:
    """One object over the step: its tree, its boxes at both ends, its triangles with
    both splits (`ext`, (T + F, 3): the first split of every triangle, then the second of
    the F triangles split differently at the end) and, per triangle, the row of its
    second split in `ext` (-1: none)."""

    tree: object
    boxes: motion.StepBoxes
    ext: np.ndarray
    second: np.ndarray
    keys0: np.ndarray
    keys1: np.ndarray


def _side(obj: CollisionObject, p0: np.ndarray, p1: np.ndarray, tri0: np.ndarray,
          tri1: np.ndarray) -> _Side:
    t0 = np.asarray(tri0, np.int64)
    t1 = np.asarray(tri1, np.int64)
    flip = np.flatnonzero((t0 != t1).any(axis=1))
    second = np.full(t0.shape[0], -1, np.int64)
    second[flip] = t0.shape[0] + np.arange(flip.size)
    ext = np.concatenate([t0, t1[flip]])
    # The sample's own triangle array when nothing re-split, so that the boxes of a sample
    # two steps share are made once (`motion.step_boxes`).
    c0, c1 = (tri0, tri1) if not flip.size else (np.concatenate([t0, t1], axis=1),) * 2
    tree = for_object(obj)
    k0 = frame_keys(obj, p0)
    k1 = frame_keys(obj, p1)
    return _Side(tree, motion.step_boxes(tree, p0, p1, c0, c1), ext, second,
                 obj.vertex_keys if k0 is None else k0, obj.vertex_keys if k1 is None else k1)


def _versions(ta: np.ndarray, tb: np.ndarray, sa: _Side, sb: _Side
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Candidate pairs (ta, tb) as pairs of triangle versions (rows of `ext`): each pair
    once per split of each side. Returns (va, vb, ta, tb), the versions and their
    triangles."""
    outs = [(ta, tb, ta, tb)]
    xa, xb = sa.second[ta], sb.second[tb]
    for use_a, use_b in ((True, False), (False, True), (True, True)):
        keep = np.ones(ta.size, bool)
        if use_a:
            keep &= xa >= 0
        if use_b:
            keep &= xb >= 0
        k = np.flatnonzero(keep)
        if k.size:
            outs.append((xa[k] if use_a else ta[k], xb[k] if use_b else tb[k], ta[k], tb[k]))
    return tuple(np.concatenate(c) for c in zip(*outs))


def _share(ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
    """(K,) bool: rows of (K, 3) keys share a key."""
    return (ka[:, :, None] == kb[:, None, :]).any(axis=(1, 2))


def _self_pairs(obj: CollisionObject, side: _Side, p0: np.ndarray, p1: np.ndarray,
                known: np.ndarray | None, at_end: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, int]:
    ta, tb = motion.self_candidates(side.tree, side.boxes)
    # Rest-adjacent pairs that are not adjacent throughout the step: from the adjacency
    # lists of the triangles whose vertices' keys differ from the rest ones at an end
    # (a polygon split otherwise, a weld parted).
    tree = side.tree
    rest = tree.rest_keys
    T = rest.shape[0]
    changed = np.zeros(T, bool)
    for keys in (side.keys0, side.keys1):
        k = keys[side.ext]
        d = (k[:T] != rest).any(axis=1)
        extra = np.flatnonzero(side.second >= 0)
        d[extra] |= (k[side.second[extra]] != rest[extra]).any(axis=1)
        changed |= d
    c = np.flatnonzero(changed)
    if c.size:
        deg = tree.adj_ptr[c + 1] - tree.adj_ptr[c]
        ra = np.repeat(c, deg)
        start = np.repeat(tree.adj_ptr[c] - np.cumsum(deg) + deg, deg)
        rb = tree.adj_idx[start + np.arange(ra.size)]
        once = (ra < rb) | ~changed[rb]
        ta = np.concatenate([ta, np.minimum(ra, rb)[once]])
        tb = np.concatenate([tb, np.maximum(ra, rb)[once]])
    va, vb, ta, tb = _versions(ta, tb, side, side)
    # Seeds never hold rest-adjacent pairs, and a triangle whose keys are its rest keys at
    # both ends shares a key at an end only with a rest-adjacent one: only pairs with a
    # changed triangle (or a second split) can be adjacent here.
    ask = np.flatnonzero(changed[ta] | changed[tb] | (va != ta) | (vb != tb))
    if ask.size:
        a, b = side.ext[va[ask]], side.ext[vb[ask]]
        near = _share(side.keys0[a], side.keys0[b]) | _share(side.keys1[a], side.keys1[b])
        far = np.ones(va.size, bool)
        far[ask[near]] = False
        va, vb, ta, tb = va[far], vb[far], ta[far], tb[far]
    va, vb, ta, tb = _unknown(va, vb, ta, tb, known, same=True)
    t = pair_times(p0, p1, side.ext, p0, p1, side.ext, va, vb,
                   touching=_among(ta, tb, at_end, same=True))
    return np.stack([ta, tb], axis=1), t, int(va.size)


def _among(ta: np.ndarray, tb: np.ndarray, pairs: np.ndarray | None, same: bool
           ) -> np.ndarray:
    """(K,) bool: the triangle pairs (ta, tb) that are rows of `pairs` ((M, 2), self pairs
    as (min, max))."""
    if pairs is None or not len(pairs):
        return np.zeros(ta.size, bool)
    p = np.stack([np.minimum(ta, tb), np.maximum(ta, tb)], 1) if same else np.stack([ta, tb], 1)
    return rows_in(p, np.asarray(pairs, np.int64).reshape(-1, 2))


def _unknown(va, vb, ta, tb, known: np.ndarray | None, same: bool) -> tuple:
    """The candidates without the triangle pairs `known` to intersect at the step's start
    ((K, 2), self pairs as (min, max)): their first contact is 0, the frame's."""
    keep = ~_among(ta, tb, known, same)
    return va[keep], vb[keep], ta[keep], tb[keep]


def _cross_pairs(i: int, j: int, si: _Side, sj: _Side, start: FrameInputs, end: FrameInputs,
                 seams: tuple, known: np.ndarray | None, at_end: np.ndarray | None
                 ) -> tuple[np.ndarray, np.ndarray, int]:
    ta, tb = motion.cross_candidates(si.tree, si.boxes, sj.tree, sj.boxes)
    va, vb, ta, tb = _versions(ta, tb, si, sj)
    for fs, inputs in zip(seams, (start, end)):
        # Parts of one character: a pair sharing a seam vertex at either end is adjacent.
        if fs is not None and fs.hold[i, j] and fs.G is not None:
            off = inputs.v_off
            gi, gj = fs.G[off[i]:off[i + 1]], fs.G[off[j]:off[j + 1]]
            far = ~_share(gi[si.ext[va]], gj[sj.ext[vb]])
            va, vb, ta, tb = va[far], vb[far], ta[far], tb[far]
    va, vb, ta, tb = _unknown(va, vb, ta, tb, known, same=False)
    t = pair_times(start.positions[i], end.positions[i], si.ext, start.positions[j],
                   end.positions[j], sj.ext, va, vb,
                   touching=_among(ta, tb, at_end, same=False))
    return np.stack([ta, tb], axis=1), t, int(va.size)


def _object_pairs(start: FrameInputs, end: FrameInputs) -> np.ndarray:
    """(M, 2) int64 object pairs i < j whose boxes can meet during the step."""
    lo0 = np.array([p.min(axis=0) for p in start.positions])
    hi0 = np.array([p.max(axis=0) for p in start.positions])
    lo1 = np.array([p.min(axis=0) for p in end.positions])
    hi1 = np.array([p.max(axis=0) for p in end.positions])
    i, j = np.triu_indices(len(start.positions), 1)
    ok = (((lo0[i] <= hi0[j]) | (lo1[i] <= hi1[j]))
          & ((lo0[j] <= hi0[i]) | (lo1[j] <= hi1[i]))).all(axis=1)
    return np.stack([i[ok], j[ok]], axis=1).astype(np.int64)


def _first_times(pairs: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The pairs with contact, each once with its earliest time, sorted."""
    hit = np.isfinite(t)
    pairs, t = pairs[hit], t[hit]
    if not t.size:
        return pairs.reshape(0, 2), t
    order = np.lexsort((t, pairs[:, 1], pairs[:, 0]))
    pairs, t = pairs[order], t[order]
    first = np.r_[True, (pairs[1:] != pairs[:-1]).any(axis=1)]
    return pairs[first], np.clip(t[first], 0.0, 1.0)


def step_pairs(objects: list[CollisionObject], start: FrameInputs, end: FrameInputs,
               self_collision: bool = False, known: list | None = None,
               known_end: list | None = None) -> StepResult:
    """Every triangle pair of `objects` that touches (vertex-face or edge-edge, within the
    kernel's tolerance, docs/ccd.md) at some time of the linear motion from `start` to
    `end` (the two samples' `FrameInputs`: world positions and the triangles Blender draws
    at each), with a lower bound of its first contact (module docstring). Self pairs with
    `self_collision`. `known`: [(i, j, (K, 2))] triangle pairs that intersect at `start`
    (the frame's): left out, their first contact is 0 (the caller's). `known_end`: those
    that intersect at `end`: they touch during the step (`pair_times`' `touching`: at
    t <= 1 even where the static test's hair is their only contact)."""
    known_at = {(i, j): p for i, j, p in (known or [])}
    end_at = {(i, j): p for i, j, p in (known_end or [])}
    t_start = time.perf_counter()
    sides = [_side(o, start.positions[k], end.positions[k], start.triangles[k],
                   end.triangles[k]) for k, o in enumerate(objects)]   # a loop over objects
    out: list = []
    n = 0
    if self_collision:
        for i, (o, s) in enumerate(zip(objects, sides)):
            p, t, m = _self_pairs(o, s, start.positions[i], end.positions[i],
                                  known_at.get((i, i)), end_at.get((i, i)))
            n += m
            p, t = _first_times(np.sort(p, axis=1), t)
            if t.size:
                out.append((i, i, p, t))
    cand = _object_pairs(start, end)
    if cand.size:
        seams = (frame_seams(objects, start, cand), frame_seams(objects, end, cand))
        for i, j in cand.tolist():              # a loop over object pairs
            p, t, m = _cross_pairs(i, j, sides[i], sides[j], start, end, seams,
                                   known_at.get((i, j)), end_at.get((i, j)))
            n += m
            p, t = _first_times(p, t)
            if t.size:
                out.append((i, j, p, t))
    out.sort(key=lambda x: (x[0], x[1]))
    return StepResult(out, (time.perf_counter() - t_start) * 1000.0, {"candidates": n})
