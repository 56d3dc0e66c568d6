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
from ..methods import registry
from ..types import FrameInputs, FrameRecord, FrameResult
from .carry import Carried
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
    kept = counted(objects, res.pairs, filters)
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
                       near_stopped=res.near_stopped)
    if memo is not None and out.complete:
        memo.put(frame, inputs.positions, inputs.triangles, out)
    return out
