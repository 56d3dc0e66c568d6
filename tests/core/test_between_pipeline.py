"""The step between two checked samples through the pipeline (`core.scan.pipeline.between`,
issue 57), on the core alone: a tube that passes through another between two frames (no
contact at either) is reported as a contact of kind "passes through" with its bones and
first contact, its polygon pairs in the frame's "between" rows; the frames' own pairs come
with t = 0; the allow-list and the rest contacts drop what they drop at frames; subframe
samples chain into the frame's step. 1 km from the origin."""
from __future__ import annotations

import numpy as np
import pytest

from skin_collide.core import procedural, scan
from skin_collide.core import triangles as tri_test
from skin_collide.core.contacts.pairs import ContactIndex, canonical
from skin_collide.core.contacts.passing import PASSES
from skin_collide.core.scan import pipeline
from skin_collide.core.scan.settings import ScanSettings
from skin_collide.core.types import FrameInputs

FAR = np.array([1000.0, -700.0, 250.0])


def tubes():
    rigs = [procedural.tube_rig(rings=10, segments=8, n_bones=3, length=1.0, radius=0.1,
                                name=n) for n in ("A", "B")]
    return rigs, [scan.prepare(r) for r in rigs]


def inputs(rigs, dx: float, dz: float = 0.0) -> FrameInputs:
    """A upright at the origin; B lying along x (turned 90 degrees about y), moved by dx
    along y and dz along z: B crosses A's axis when dx passes 0."""
    a = rigs[0].rest_positions.copy()
    b = rigs[1].rest_positions.copy()
    b = np.stack([b[:, 2] - 0.5, b[:, 1] + dx, b[:, 0] + 0.5 + dz], axis=1)
    return FrameInputs([a + FAR, b + FAR], [None, None], [r.triangles for r in rigs])


def outcome(objects, frame_inputs, settings, filters, frame):
    return pipeline.collide(objects, frame_inputs, settings, filters, pipeline.FrameState(),
                            frame)


def sampled(objects, start: FrameInputs, end: FrameInputs, n: int = 48) -> dict:
    """Polygon pairs (A poly, B poly) that intersect at some of n + 1 evenly spaced times of
    the linear motion, with the first such time (the exact static triangle test)."""
    out = {}
    ta, tb = start.triangles
    ia, ib = np.meshgrid(np.arange(len(ta)), np.arange(len(tb)), indexing="ij")
    ia, ib = ia.ravel(), ib.ravel()
    for k in range(n + 1):
        s = k / n
        pa = (1 - s) * start.positions[0] + s * end.positions[0]
        pb = (1 - s) * start.positions[1] + s * end.positions[1]
        hit = tri_test.triangle_pairs_intersect(pa, ta, ia, pb, tb, ib)
        for i, j in zip(ia[hit].tolist(), ib[hit].tolist()):
            key = (int(objects[0].rig.tri_polygon[i]), int(objects[1].rig.tri_polygon[j]))
            out.setdefault(key, s)
    return out


@pytest.fixture(scope="module")
def crossing():
    rigs, objects = tubes()
    settings = ScanSettings(between=True)
    filters = pipeline.FrameFilters(("A", "B"))
    start, end = inputs(rigs, -0.4), inputs(rigs, 0.4)
    first = outcome(objects, start, settings, filters, 1)
    last = outcome(objects, end, settings, filters, 2)
    return rigs, objects, settings, filters, start, end, first, last


def test_a_tube_that_passes_through_between_frames_is_reported(crossing):
    rigs, objects, settings, filters, start, end, first, last = crossing
    assert first.record.pairs == [] and last.record.pairs == []    # clean at both frames
    res = pipeline.between(objects, [first, last], settings, filters, (1, 2))
    truth = sampled(objects, start, end)
    assert truth                                                 # it does pass through
    rows = {(r[1], r[3]): r[4] for r in res.rows}
    assert {r[0] for r in res.rows} == {"A"} and {r[2] for r in res.rows} == {"B"}
    for key, s in truth.items():                                 # every sampled contact
        assert key in rows, key
        assert rows[key] <= s + 1e-12                            # never later than sampled
    assert all(0.0 < r[4] < 1.0 for r in res.rows)
    # Every row passes through: grouped into contacts with bones and a first contact.
    assert res.passes and all(c.kind == PASSES for c in res.passes)
    in_contacts = {(int(x), int(y)) for c in res.passes for x, y in c.pairs.tolist()}
    assert in_contacts == set(rows)
    for c in res.passes:
        assert c.step == (1, 2) and c.length == 0.0
        assert all(b is not None for b in c.bones)
        assert c.t == pytest.approx(min(rows[(int(x), int(y))] for x, y in c.pairs.tolist()))
        # Its centre is where the tubes meet at t (on B's axis, near A's axis).
        assert np.linalg.norm((c.center - FAR)[:2]) < 0.2


def test_pairs_at_the_frames_come_with_t_zero_and_do_not_pass_through():
    rigs, objects = tubes()
    settings = ScanSettings(between=True)
    filters = pipeline.FrameFilters(("A", "B"))
    start, end = inputs(rigs, 0.0), inputs(rigs, 0.6)          # in contact at the start
    first = outcome(objects, start, settings, filters, 1)
    last = outcome(objects, end, settings, filters, 2)
    assert first.record.pairs and not last.record.pairs
    res = pipeline.between(objects, [first, last], settings, filters, (1, 2))
    rows = {tuple(r[:4]): r[4] for r in res.rows}
    for p in first.record.pairs:
        assert rows[tuple(p)] == 0.0
    # Sliding out, B touches other polygons of A on its way: those pass through; the
    # pairs of the start never do.
    at_start = {(p[1], p[3]) for p in first.record.pairs}
    passing = {(int(x), int(y)) for c in res.passes for x, y in c.pairs.tolist()}
    assert not passing & at_start
    assert all(rows[("A", a, "B", b)] > 0.0 for a, b in passing)


def test_the_allow_list_and_rest_contacts_drop_pass_throughs(crossing):
    rigs, objects, settings, filters, start, end, first, last = crossing
    res = pipeline.between(objects, [first, last], settings, filters, (1, 2))
    allow = frozenset(canonical(r[:4]) for r in res.rows)
    allowed = pipeline.between(objects, [first, last], settings.with_(allow=allow), filters,
                               (1, 2))
    assert allowed.rows == [] and allowed.passes == []
    # The rest contacts (triangle pairs by object id) drop the same pairs.
    step = scan.continuous.step_pairs(objects, start, end)
    ignore = ContactIndex(("A", a, "B", b) for i, j, p, _ in step.pairs for a, b in p.tolist())
    ignored = pipeline.between(objects, [first, last], settings,
                               pipeline.FrameFilters(("A", "B"), ignore=ignore), (1, 2))
    assert ignored.rows == [] and ignored.passes == []


def test_subframe_samples_chain_into_the_frames_step(crossing):
    rigs, objects, settings, filters, start, end, first, last = crossing
    whole = pipeline.between(objects, [first, last], settings, filters, (1, 2))
    mid = FrameInputs([0.5 * (a + b) for a, b in zip(start.positions, end.positions)],
                      [None, None], start.triangles)
    middle = outcome(objects, mid, settings, filters, 1)
    chained = pipeline.between(objects, [first, middle, last], settings, filters, (1, 2))
    # The same linear motion cut in two: the same pairs, each time still a lower bound of
    # the first sampled contact, on the frame's [0, 1].
    assert [r[:4] for r in chained.rows] == [r[:4] for r in whole.rows]
    truth = sampled(objects, start, end)
    for r in chained.rows:
        assert 0.0 <= r[4] <= truth.get((r[1], r[3]), 1.0) + 1e-12


def test_settings_refuse_what_cannot_be_checked():
    with pytest.raises(ValueError, match="first hit"):
        ScanSettings(between=True, first_hit=True)
    with pytest.raises(ValueError, match="between frames"):
        ScanSettings(subframes=4)
    with pytest.raises(ValueError, match="subframes"):
        ScanSettings(between=True, subframes=0)
