"""One frame, after its inputs (issue 56): the whole frame in the core. Blender's part reads
a frame (`FrameInputs`: positions, the triangles Blender draws, poses) and hands it over;
here it goes query -> the pairs that count -> polygon pairs -> contacts and their filters
-> near contacts -> the frame's record, and the memo of frames answered before. The
headless scan, the panel's Scan Frame Range, the live overlay and `skin_collide.testing`
all run `collide`; what differs between them is only their `ScanSettings`, their
`FrameFilters` and the `FrameState` they carry (tests/core/test_scan_pipeline.py).

    collide(objects, inputs, settings, filters, state, frame)
      memo     state.frame_memo.get(...)            a frame answered before, bit for bit
      query    ask(objects, inputs, settings, filters)  core.scan.frame.query_frame, or
                                                    Blender's BVHTree (the add-on's `ask`)
      keep     counted(...)                          unique pairs, minus rest contacts and
                                                    ignore zones
      report   reported(...)                         polygon pairs (allow-list, first hit),
                                                    contacts and their filters
      near     clearance.reported(...)               near contacts (with a clearance)
      record   FrameRecord                           what the report keeps

Between two checked samples (`scan --between-frames`, issue 57), `between` takes the
outcomes of the samples of one step (a frame, its subframes, the next frame) the same way:
the continuous check of each sub-step (`core.scan.continuous.step_pairs`), the pairs that
count, polygon pairs with their first contact, the allow-list, and the pairs that touch
only between the samples grouped into contacts of kind "passes through"
(`core.contacts.passing`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..contacts import clearance as near_contacts
from ..contacts import filters as contact_filters
from ..contacts import groups as contact_groups
from ..contacts import pairs as contacts
from ..contacts import passing
from ..methods import registry
from ..types import FrameInputs, FrameRecord, FrameResult
from .carry import Carried
from .continuous import step_pairs
from .dispatch import OWN
from .frame import query_frame
from .memo import FrameMemo
from .pairs import polygon_pair_rows
from .settings import ScanSettings


@dataclass(frozen=True)
class FrameFilters:
    """What a scan drops, made once for its objects.

    Attributes:
        ids: per object, what identifies it in rest contacts (names headless, the panel's
            stable ids).
        ignore: the rest contacts (`core.contacts.pairs.ContactIndex` by `ids`).
        zones: object index -> (P,) bool its polygons inside an ignore zone.
    """

    ids: tuple
    ignore: contacts.ContactIndex = field(default_factory=contacts.ContactIndex)
    zones: dict = field(default_factory=dict)


@dataclass
class FrameState:
    """What a scan carries from one frame to the next, passed in and returned (never left
    on the objects): the answers of frames seen before (`FrameMemo`), the contacts of
    object pairs whose pairs did not change (`contact_groups.frame_contacts`' memo) and,
    while the artist poses, the kept frames and answers the query carries
    (`carry.Carried`, used with `ScanSettings.carry`)."""

    frame_memo: FrameMemo | None = None
    contacts_memo: dict | None = None
    carried: Carried | None = None


@dataclass
class FrameOutcome:
    """The frame through the pipeline: what the overlay, selection and bake need besides
    the report's record.

    Attributes:
        positions: per object (V, 3) float64 evaluated world positions.
        triangles: per object (T, 3) int32 the frame's triangles.
        tri_pairs: per colliding object pair (i, j, (K, 2) int64) triangle pairs after the
            rest-contact filter (self pairs as (min, max)).
        record: the report's `FrameRecord` (polygon pairs after every filter).
        poses: per object, the frame's `Pose`.
        near: with a clearance, the clearance stage's answer (per object pair (i, j,
            `core.scan.clearance.NearResult`)), before the filters.
        stopped: the live cap stopped the query (the pairs are a subset); dense: it
            stopped on a dense frame's candidate budget; near_stopped: the node pairs the
            clearance budget stopped at (0: not stopped; then the frame has no near pairs).
    """

    positions: list[np.ndarray]
    triangles: list[np.ndarray]
    tri_pairs: list[tuple[int, int, np.ndarray]]
    record: FrameRecord
    poses: list = field(default_factory=list)
    near: list = field(default_factory=list)
    stopped: bool = False
    dense: bool = False
    near_stopped: int = 0
    #: the triangle pairs that count (`counted`), before the allow-list and the contact
    #: filters: what touches at this frame, for the pairs that touch only between frames
    counted: list = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether the answer is whole (nothing stopped by a live budget)."""
        return not (self.stopped or self.dense or self.near_stopped)


#: `ask(objects, inputs, settings, filters, carried) -> FrameResult`: the frame's query.
Ask = Callable[..., FrameResult]


def query(objects: list, inputs: FrameInputs, settings: ScanSettings,
          filters: FrameFilters, carried: Carried | None = None) -> FrameResult:
    """The numpy core's query of the frame (`query_frame`). With a filter that may drop
    pairs (rest contacts, the allow-list, contact filters, zones), the first pair found,
    or a capped frame's, may be one the filter drops: then the whole frame is queried and
    the first pair kept after the filters (never a false "clean")."""
    filtered = (bool(filters.ignore) or bool(settings.allow) or settings.contact_filter.active
                or bool(filters.zones))
    first = settings.first_hit and not filtered
    cap = None if (settings.first_hit or filtered) else settings.max_pairs
    m = registry.get(settings.method)
    return query_frame(objects, inputs.positions, inputs.poses,
                       mode=settings.method if m.for_any_object else OWN,
                       self_collision=settings.self_collision, first_hit=first,
                       triangles=inputs.triangles,
                       enough_self=_enough_self(objects, cap) if cap is not None else None,
                       enough_between=_enough_between(objects, cap) if cap is not None else None,
                       clearance=settings.clearance,
                       clearance_limit=settings.clearance_limit,
                       carried=carried if settings.carry else None)


def _enough_between(objects: list, cap: int) -> Callable:
    """Whether triangle pairs between objects (i, j, (K, 2)) already make more than `cap`
    polygon pairs (then the frame is capped anyway and the rest is not tested)."""
    def enough(tri_pairs) -> bool:
        if sum(p.shape[0] for _, _, p in tri_pairs) <= cap:
            return False
        total = 0
        for i, j, p in tri_pairs:               # a loop over object pairs
            pp = np.stack([objects[i].rig.tri_polygon[p[:, 0]],
                           objects[j].rig.tri_polygon[p[:, 1]]], 1)
            total += contacts.normalized_pairs(pp, False).shape[0]
        return total > cap
    return enough


def _enough_self(objects: list, cap: int) -> Callable:
    """Whether self pairs (K, 2) of object i already make more than `cap` polygon pairs."""
    def enough(i: int, pairs: np.ndarray) -> bool:
        if pairs.shape[0] <= cap:
            return False
        poly = objects[i].rig.tri_polygon
        pp = contacts.normalized_pairs(np.stack([poly[pairs[:, 0]], poly[pairs[:, 1]]], 1),
                                       True)
        return int(np.count_nonzero(pp[:, 0] != pp[:, 1])) > cap
    return enough


def counted(objects: list, tri_pairs: list, filters: FrameFilters) -> list:
    """The triangle pairs that count: unique, self pairs as (min, max), without the rest
    contacts and the pairs with a polygon in an ignore zone. Whole-array work per object
    pair."""
    out = []
    for i, j, p in tri_pairs:                   # a loop over object pairs
        p = contacts.normalized_pairs(p, i == j)
        if filters.ignore:
            p = filters.ignore.drop(filters.ids[i], filters.ids[j], p)
        if p.size:
            out.append((i, j, p))
    return contact_filters.drop_zone_pairs(objects, out, filters.zones)


def polygon_pairs(objects: list, tri_pairs: list) -> list[tuple[str, int, str, int]]:
    """The named polygon pairs of triangle pairs (i, j, (K, 2)), sorted."""
    rows = polygon_pair_rows(objects, FrameResult(tri_pairs, 0.0))
    names = np.array([o.name for o in objects], dtype=object)
    return list(zip(names[rows[:, 0]].tolist(), rows[:, 1].tolist(),
                    names[rows[:, 2]].tolist(), rows[:, 3].tolist()))


def reported(objects: list, inputs: FrameInputs, kept: list, settings: ScanSettings,
             state: FrameState) -> tuple[list, list, list]:
    """The frame's reported polygon pairs, its contacts (`core.contacts.groups`) and the
    triangle pairs the overlay shows, after the allow-list and the contact filters; with
    `first_hit`, the first pair left and its contact."""
    flt = settings.contact_filter
    pairs = polygon_pairs(objects, kept)
    if settings.allow:
        pairs = contacts.drop_named(pairs, settings.allow)
    first = settings.first_hit and not flt.drops_contacts
    if first:
        pairs = pairs[:1]
    restrict = bool(settings.allow) or settings.first_hit
    found = contact_groups.frame_contacts(objects, inputs.positions, inputs.triangles, kept,
                                          reported=pairs if restrict else None,
                                          memo=state.contacts_memo)
    if flt.drops_contacts:
        found = [c for c in found if flt.keep(c)]
        kept_pairs = {(c.a, int(x), c.b, int(y)) for c in found for x, y in c.pairs.tolist()}
        pairs = [p for p in pairs if tuple(p) in kept_pairs
                 or (p[0], p[3], p[2], p[1]) in kept_pairs]
        if settings.first_hit and pairs:
            pairs = pairs[:1]
            found = contact_groups.frame_contacts(objects, inputs.positions, inputs.triangles,
                                                  kept, reported=pairs)
        kept = contact_filters.keep_contact_pairs(objects, kept, found)   # what is reported
    return pairs, found, kept


def collide(objects: list, inputs: FrameInputs, settings: ScanSettings, filters: FrameFilters,
            state: FrameState, frame: int, eval_ms: float = 0.0, ask: Ask = query
            ) -> FrameOutcome:
    """The frame `frame` through the whole pipeline (the module docstring): its outcome.
    `ask` answers the query (the core's, or Blender's for the reference method)."""
    memo = state.frame_memo
    if memo is not None:
        t0 = time.perf_counter()
        seen = memo.get(frame, inputs.positions, inputs.triangles)
        if seen is not None:
            # The inputs of a frame answered before, bit for bit: its answer
            # (core.scan.memo). Only complete answers are kept.
            rec = replace(seen.record, frame=frame, eval_ms=eval_ms,
                          ms=(time.perf_counter() - t0) * 1000.0)
            return replace(seen, positions=inputs.positions, poses=inputs.poses,
                           triangles=inputs.triangles, record=rec)
    whole = settings
    if settings.contact_filter.active or filters.zones:
        whole = settings.with_(first_hit=False, max_pairs=None)
    res = ask(objects, inputs, whole, filters, state.carried)
    t0 = time.perf_counter()
    kept = counted_pairs = counted(objects, res.pairs, filters)
    pairs, found, kept = reported(objects, inputs, kept, settings, state)
    rec = FrameRecord(frame, pairs, 0.0, eval_ms, res.modes, contacts=found)
    if settings.clearance is not None:
        rec.near_contacts, rec.near_pairs = near_contacts.reported(
            objects, res.near, filters.zones, settings.allow,
            settings.contact_filter.ignore_bones, settings.near_pairs)
    rec.ms = res.ms + (time.perf_counter() - t0) * 1000.0
    out = FrameOutcome(inputs.positions, inputs.triangles, kept, rec, inputs.poses, res.near,
                       stopped=any(st.extra.get("stopped") for st in res.stats),
                       dense=any(st.extra.get("dense") for st in res.stats),
                       near_stopped=res.near_stopped, counted=counted_pairs)
    if memo is not None and out.complete:
        memo.put(frame, inputs.positions, inputs.triangles, out)
    return out


@dataclass
class Between:
    """One step between checked samples through the pipeline (`between`).

    Attributes:
        rows: [obj A, poly A, obj B, poly B, t]: every polygon pair reported at the first
            sample (t = 0), reported at the next, or passing through, with a lower bound
            of its first contact in [0, 1] of the step; sorted.
        passes: the contacts of kind "passes through" (`core.contacts.passing`).
        ms: the step's milliseconds (its continuous checks, filters and contacts).
        candidates: triangle pairs through the narrow phase.
    """

    rows: list
    passes: list
    ms: float
    candidates: int = 0


def _rows_with_times(objects: list, tri_pairs: list) -> tuple[np.ndarray, np.ndarray]:
    """Polygon pair rows (N, 4) int64 (obj a, poly a, obj b, poly b), unique and sorted,
    and their earliest time (N,), from [(i, j, (K, 2), (K,) t)]; a polygon never pairs
    with itself."""
    rows, times = [], []
    for i, j, p, t in tri_pairs:                # a loop over object pairs
        pa = objects[i].rig.tri_polygon[p[:, 0]].astype(np.int64)
        pb = objects[j].rig.tri_polygon[p[:, 1]].astype(np.int64)
        if i == j:
            pa, pb = np.minimum(pa, pb), np.maximum(pa, pb)
            keep = pa != pb
            pa, pb, t = pa[keep], pb[keep], t[keep]
        rows.append(np.column_stack([np.full(pa.size, i), pa, np.full(pa.size, j), pb]))
        times.append(t)
    if not rows:
        return np.zeros((0, 4), np.int64), np.zeros(0)
    r, t = np.concatenate(rows).astype(np.int64), np.concatenate(times)
    order = np.lexsort((t, r[:, 3], r[:, 2], r[:, 1], r[:, 0]))
    r, t = r[order], t[order]
    first = np.r_[True, (r[1:] != r[:-1]).any(axis=1)] if len(r) else np.zeros(0, bool)
    return r[first], t[first]


def _named(objects: list, rows: np.ndarray) -> list[tuple]:
    names = np.array([o.name for o in objects], dtype=object)
    return list(zip(names[rows[:, 0]].tolist(), rows[:, 1].tolist(),
                    names[rows[:, 2]].tolist(), rows[:, 3].tolist()))


def _row_keys(rows: np.ndarray, base: int) -> np.ndarray:
    """One int64 key per polygon pair row: the object pair, then the two polygons (`base`
    above every polygon index; object indices below 2**10)."""
    return ((rows[:, 0] * 1024 + rows[:, 2]) * base + rows[:, 1]) * base + rows[:, 3]


def between(objects: list, samples: list, settings: ScanSettings, filters: FrameFilters,
            step: tuple) -> Between:
    """The step from ``samples[0]`` (a checked frame's `FrameOutcome`) to ``samples[-1]``
    (the next checked sample's), through any subframe samples between them (the motion is
    linear between consecutive samples, and a sub-step k of n maps its times to
    ``(k + t) / n``). `step`: the two frames, for the contacts."""
    t_start = time.perf_counter()
    n = len(samples) - 1
    found: list = []
    candidates = 0
    for k in range(n):                          # a loop over sub-steps
        a, b = samples[k], samples[k + 1]
        # The pairs that intersect at the sub-step's start are the frame's (t = 0), or
        # touched first in an earlier sub-step: the continuous check leaves them out.
        res = step_pairs(objects, FrameInputs(a.positions, a.poses, a.triangles),
                         FrameInputs(b.positions, b.poses, b.triangles),
                         settings.self_collision, known=a.counted, known_end=b.counted)
        candidates += res.stats.get("candidates", 0)
        for i, j, p, t in res.pairs:
            # The rest contacts and ignore zones, as `counted`.
            kept = counted(objects, [(i, j, p)], filters)
            if kept:
                keep = contacts.rows_in(p, kept[0][2])
                found.append((i, j, p[keep], (k + t[keep]) / n))
    rows, t = _rows_with_times(objects, found)
    first, last = samples[0], samples[-1]
    at_ends = [_rows_with_times(objects, [(i, j, p, np.zeros(len(p))) for i, j, p in o.counted])[0]
               for o in (first, last)]
    base = max(o.rig.n_polygons for o in objects) + 1
    touching = np.isin(_row_keys(rows, base), np.concatenate(
        [_row_keys(r, base) for r in at_ends]))
    named = _named(objects, rows)
    allowed = np.array([contacts.canonical(p) not in settings.allow for p in named], bool) \
        if settings.allow else np.ones(len(named), bool)
    # Pairs that touch only between the samples: contacts of kind "passes through".
    only = np.flatnonzero(~touching & allowed)
    passes = passing.passing_contacts(
        objects, first.positions, last.positions, first.triangles,
        _passing_triangles(objects, found, rows[only]), step)
    flt = settings.contact_filter
    if flt.ignore_bones:
        passes = [c for c in passes if frozenset(c.bones) not in flt.ignore_bones]
    kept_pass = {(c.a, int(x), c.b, int(y)) for c in passes for x, y in c.pairs.tolist()}
    out = {tuple(p): 0.0 for p in first.record.pairs}
    reported_last = {tuple(p) for p in last.record.pairs}
    for p, tt, touch in zip(named, t.tolist(), touching.tolist()):
        if p in reported_last or ((p in kept_pass or (p[2], p[3], p[0], p[1]) in kept_pass)
                                  and not touch):
            out[p] = min(out.get(p, tt), tt)
    listed = sorted([*p, float(tt)] for p, tt in out.items())
    return Between(listed, passes, (time.perf_counter() - t_start) * 1000.0, candidates)


def _passing_triangles(objects: list, found: list, rows: np.ndarray) -> list:
    """The triangle pairs of `found` [(i, j, (K, 2), (K,) t)] whose polygon pairs are
    `rows` (the pass-through rows), as [(i, j, (K', 2), (K',) t)] per object pair."""
    out = []
    if not len(rows):
        return out
    base = max(o.rig.n_polygons for o in objects) + 1
    want = _row_keys(rows, base)
    for i, j, p, t in found:                    # a loop over object pairs
        pa = objects[i].rig.tri_polygon[p[:, 0]].astype(np.int64)
        pb = objects[j].rig.tri_polygon[p[:, 1]].astype(np.int64)
        q = p
        if i == j:
            pa, pb = np.minimum(pa, pb), np.maximum(pa, pb)
            q = np.sort(p, axis=1)
        key = _row_keys(np.column_stack([np.full(pa.size, i), pa, np.full(pa.size, j), pb]),
                        base)
        keep = np.isin(key, want)
        if keep.any():
            out.append((i, j, q[keep], t[keep]))
    merged: dict = {}
    for i, j, p, t in out:
        merged.setdefault((i, j), []).append((p, t))
    return [(i, j, *_earliest(np.concatenate([p for p, _ in v]), np.concatenate([t for _, t in v])))
            for (i, j), v in sorted(merged.items())]


def _earliest(p: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each triangle pair once, with its earliest time."""
    order = np.lexsort((t, p[:, 1], p[:, 0]))
    p, t = p[order], t[order]
    first = np.r_[True, (p[1:] != p[:-1]).any(axis=1)]
    return p[first], t[first]
