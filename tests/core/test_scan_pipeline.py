"""The frame pipeline after its inputs (`core.scan.pipeline`, issue 56), on the core alone:
the headless scan, the panel's Scan Frame Range and the live overlay differ only in their
`ScanSettings` and the `FrameState` they carry, so on the same frames they give the same
answer (pairs, contacts, near contacts), frames seen before come from the memo with that
answer, and the filters apply the same way. Procedural characters in strong random poses
(170° twists, scaled bones), 1 km from the origin."""
from __future__ import annotations

import math

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.contacts.filters import ContactFilter
from skin_collide.core.contacts.pairs import ContactIndex, canonical
from skin_collide.core.scan import pipeline
from skin_collide.core.scan.memo import FrameMemo
from skin_collide.core.scan.settings import ScanSettings
from skin_collide.core.types import FrameInputs

FAR = np.array([1000.0, -700.0, 250.0])


@pytest.fixture(scope="module")
def shot():
    """Two tube characters close together, four frames of strong random poses."""
    rigs = [procedural.tube_rig(rings=14, segments=10, n_bones=4, name=n) for n in ("A", "B")]
    objects = [scan.prepare(r) for r in rigs]
    rng = np.random.default_rng(11)
    frames = []
    for _ in range(4):
        poses = [procedural.random_pose(r, rng, max_angle=math.radians(170),
                                        scale_range=(0.7, 1.4)) for r in rigs]
        pos = [skinning.lbs_rig(r, p) for r, p in zip(rigs, poses)]
        pos[1] = pos[1] + np.array([0.25, 0.0, 0.0])
        frames.append(FrameInputs([p + FAR for p in pos], [None, None],
                                  [r.triangles for r in rigs]))
    return objects, frames


def summary(out: pipeline.FrameOutcome) -> tuple:
    rec = out.record
    return (rec.pairs, [c.summary_json() for c in rec.contacts],
            [c.summary_json() for c in rec.near_contacts], rec.near_pairs)


def run(objects, frames, settings, state, filters=None) -> list:
    filters = filters or pipeline.FrameFilters(tuple(o.name for o in objects))
    return [pipeline.collide(objects, inputs, settings, filters, state, f)
            for f, inputs in enumerate(frames)]


def test_headless_panel_and_live_give_the_same_answer(shot):
    objects, frames = shot
    base = ScanSettings(self_collision=True, clearance=0.05, near_pairs=True)
    headless = run(objects, frames, base, pipeline.FrameState(FrameMemo(None, frames=1)))
    panel = run(objects, frames, base, pipeline.FrameState())
    live_settings = base.with_(max_pairs=10 ** 6, clearance_limit=10 ** 9)
    state = pipeline.FrameState(FrameMemo("live"), {})
    live = run(objects, frames, live_settings, state)
    again = run(objects, frames, live_settings, state)        # every frame from the memo
    assert any(o.record.pairs for o in headless)               # the shot collides
    assert any(o.record.near_contacts for o in headless)       # and passes close
    for outs in (panel, live, again):
        assert [summary(o) for o in outs] == [summary(o) for o in headless]
    assert all(o.complete for o in headless + panel + live)
    # The memo answered the second loop: its records took no query.
    assert [o.record.modes for o in again] == [o.record.modes for o in live]


def test_the_pipeline_is_query_frame_then_polygons(shot):
    """Without filters, the reported pairs are the query's polygon pairs, and the kept
    triangle pairs are the query's, normalized."""
    objects, frames = shot
    settings = ScanSettings(self_collision=True)
    for inputs, out in zip(frames, run(objects, frames, settings, pipeline.FrameState())):
        res = scan.query_frame(objects, inputs.positions, inputs.poses, self_collision=True,
                               triangles=inputs.triangles)
        names = [o.name for o in objects]
        want = sorted((names[i], a, names[j], b) for i, a, j, b in scan.polygon_pairs(objects, res))
        assert sorted(tuple(p) for p in out.record.pairs) == want


def test_filters_apply_after_the_query(shot):
    """The allow-list drops its pairs, rest contacts drop their triangle pairs, and a
    first hit keeps one pair after both (never a false clean)."""
    objects, frames = shot
    plain = run(objects, frames, ScanSettings(self_collision=True), pipeline.FrameState())
    k = next(i for i, o in enumerate(plain) if len(o.record.pairs) > 2)
    pairs = plain[k].record.pairs
    allow = frozenset(canonical(p) for p in pairs[:2])
    allowed = run(objects, frames[k:k + 1], ScanSettings(self_collision=True, allow=allow),
                  pipeline.FrameState())[0]
    assert set(map(tuple, allowed.record.pairs)) == set(map(tuple, pairs)) - set(
        map(tuple, pairs[:2])) - {(b, pb, a, pa) for a, pa, b, pb in pairs[:2]}
    # Rest contacts: every triangle pair of the frame ignored, nothing left.
    i, j, p = plain[k].tri_pairs[0]
    ids = tuple(o.name for o in objects)
    index = ContactIndex((ids[a], x, ids[b], y) for a, b, q in plain[k].tri_pairs
                         for x, y in q.tolist())
    filters = pipeline.FrameFilters(ids, ignore=index)
    none = run(objects, frames[k:k + 1], ScanSettings(self_collision=True), pipeline.FrameState(),
               filters)[0]
    assert none.record.pairs == [] and none.tri_pairs == []
    first = run(objects, frames[k:k + 1], ScanSettings(self_collision=True, first_hit=True,
                                                       allow=allow), pipeline.FrameState())[0]
    assert len(first.record.pairs) == 1 and tuple(first.record.pairs[0]) in set(
        map(tuple, allowed.record.pairs))
    # A contact filter that drops everything leaves no pair and no contact.
    gone = run(objects, frames[k:k + 1],
               ScanSettings(self_collision=True, contact_filter=ContactFilter(min_length=1e9)),
               pipeline.FrameState())[0]
    assert gone.record.pairs == [] and gone.record.contacts == []


def test_settings_are_checked_and_frozen():
    with pytest.raises(ValueError):
        ScanSettings(method="no-such-method")
    with pytest.raises(ValueError):
        ScanSettings(clearance=-1.0)
    with pytest.raises(ValueError):
        ScanSettings.of(mode="no-such-mode")
    s = ScanSettings.of(mode="bottom-up", self_collision=True)
    assert s.method == "bottom-up" and s.in_core
    with pytest.raises(AttributeError):
        s.first_hit = True
    assert s.with_(first_hit=True).first_hit and not s.first_hit
