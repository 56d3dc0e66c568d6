"""Issue 29 item 1, between characters: while the artist poses, the pairs between two
carrying objects are carried from their last complete answer and only what moved is
traversed and tested (`self_collision.object_cross_pairs`). The answer must equal the
full `scan.query_frame` and brute force after every edit."""
from __future__ import annotations

import math

import numpy as np
import pytest
from test_self_collision import _rotation, resplit

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.rig import Pose
from skin_collide.core.scan import carry as sc_carry


def _world(angle_x: float, offset) -> np.ndarray:
    m = np.eye(4)
    c, s = math.cos(angle_x), math.sin(angle_x)
    m[1:3, 1:3] = [[c, -s], [s, c]]
    m[:3, 3] = offset
    return m


def _rigs():
    # Two tubes on armatures of their own, B lying across A's middle (they overlap).
    return ([procedural.tube_rig(rings=30, segments=16, n_bones=6, length=2.0, radius=0.3,
                                 name="tube_a"),
             procedural.tube_rig(rings=22, segments=12, n_bones=5, length=1.6, radius=0.25,
                                 name="tube_b")],
            [np.eye(4), _world(math.radians(90), (0.1, 0.8, 1.0))])


def _rest_frame(rigs, worlds):
    """Poses and positions of the rigs in their rest pose, placed at `worlds`."""
    poses = [Pose(procedural.chain_deform(r, np.repeat(np.eye(4)[None], r.n_bones, 0)), w, w)
             for r, w in zip(rigs, worlds)]
    return poses, [skinning.lbs_rig(r, p) for r, p in zip(rigs, poses)]


def _same(got, want) -> bool:
    return (len(got) == len(want)
            and all(gi == wi and gj == wj and np.array_equal(gp, wp)
                    for (gi, gj, gp), (wi, wj, wp) in zip(got, want)))


@pytest.mark.parametrize("method", ["sphere-tree", "box-tree"])
@pytest.mark.parametrize("path", ["boxes", "deep", "traverse"])
@pytest.mark.parametrize("capped", [False, True])
def test_carried_pairs_between_objects_equal_full_query(monkeypatch, method, path, capped):
    """Random strong pose edits (170 degree twists, scaled bones) of A, of B and of both
    at once, undo, weight edits (single vertices moved alone), re-split quads, updates
    where nothing moved, self-collision on and off: after every edit the carrying query
    returns exactly the full query's pairs (same arrays, same order), and the pairs
    between the two equal brute force. `path`: the object pair is paired by boxes, or
    goes through the two exact box trees (the deep way, `scan.between.DEEP_SHARE`), or
    through the method's traversal; `capped`: the live overlay's capped query
    (`enough_between`, `enough_self`). Only the trees' answers are carried: small pairs
    (`scan.between.BOX_PAIRS_MAX`) are paired by their boxes every time, as cheap as it gets."""
    traverse = path != "boxes"
    if traverse:
        monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", 0)
    monkeypatch.setattr(scan.between, "DEEP_SHARE", 0.0 if path == "deep" else float("inf"))
    monkeypatch.setattr(scan.between, "DEEP_MIN", 0)
    deep_seen = 0
    rigs, worlds = _rigs()
    full = [scan.prepare(r, method) for r in rigs]
    carry = [scan.prepare(r, method) for r in rigs]
    carried = sc_carry.Carried()                 # what the live overlay carries
    calls = []
    real = sc_carry.object_cross_pairs

    def spy(*args, **kw):
        out = real(*args, **kw)
        if out is not None:
            calls.append((int(args[1].moved.sum()), int(args[3].moved.sum())))
        return out

    monkeypatch.setattr(scan.between, "object_cross_pairs", spy)
    rng = np.random.default_rng(2029)
    local = [np.repeat(np.eye(4)[None], r.n_bones, 0) for r in rigs]
    offsets = [np.zeros_like(r.rest_positions) for r in rigs]      # weight edits
    tris = [r.triangles.copy() for r in rigs]
    history = [[m.copy()] for m in local]
    between_seen = 0
    for step in range(48):
        who = [(0,), (1,), (0, 1), ()][step % 4 if step % 7 else 2]
        kind = int(rng.integers(5))
        for i in who:
            rig = rigs[i]
            if kind == 1 and len(history[i]) > 2:                  # undo
                local[i] = history[i][int(rng.integers(len(history[i]) - 1))].copy()
            elif kind == 2:                                         # weights edited
                some = rng.choice(rig.n_vertices, 4, replace=False)
                offsets[i][some] += rng.normal(scale=0.03, size=(4, 3))
            elif kind == 3:                                         # quads re-split
                tris[i] = resplit(rig, rng, 0.05)
            else:                                # one bone, strongly, mostly the end
                j = int(rng.choice(rig.n_bones, p=np.r_[np.ones(rig.n_bones - 2),
                                                        4, 4] / (rig.n_bones + 6)))
                m = _rotation(rng, math.radians(170))
                if kind == 4:
                    m[:3, :3] *= rng.uniform(0.6, 1.6, size=3)       # a scaled bone
                local[i][j] = local[i][j] @ m
            history[i].append(local[i].copy())
        poses = [Pose(procedural.chain_deform(r, m), w, w)
                 for r, m, w in zip(rigs, local, worlds)]
        pos = [skinning.lbs_rig(r, p) + d for r, p, d in zip(rigs, poses, offsets)]
        self_on = step % 5 != 4
        want = scan.query_frame(full, pos, poses, self_collision=self_on, triangles=tris)
        kw = {}
        if capped:
            kw = dict(enough_between=lambda p: False, enough_self=lambda i, p: False)
        got = scan.query_frame(carry, pos, poses, self_collision=self_on, triangles=tris,
                               carried=carried, **kw)
        assert _same(got.pairs, want.pairs), step
        deep_seen += want.stats[0].extra.get("deep_pairs", 0)
        between = [p for i, j, p in want.pairs if (i, j) == (0, 1)]
        between = between[0] if between else np.zeros((0, 2), np.int64)
        if not capped:          # (the capped variants see the same edits, same seed)
            bf = scan.brute_force_pairs(pos[0], tris[0], pos[1], tris[1])
            assert np.array_equal(between, bf), step
        between_seen += between.shape[0] > 0
    assert between_seen >= 20
    assert (deep_seen > 0) == (path == "deep")
    if not traverse:
        assert calls == []
        return
    n = [r.n_triangles for r in rigs]
    # The carried path ran, with few triangles moved, for A alone, B alone, both, none.
    assert len(calls) >= 16
    small = [(a, b) for a, b in calls if a < n[0] // 2 and b < n[1] // 2]
    assert any(a and not b for a, b in small) and any(b and not a for a, b in small)
    assert any(a and b for a, b in small) and any(not a and not b for a, b in small)


def test_carried_pairs_between_objects_not_kept_from_a_stopped_query(monkeypatch):
    """A capped query between objects that stopped is a subset: it is never kept, and
    the next query answers in full."""
    monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", 0)        # the traversal, which can stop
    monkeypatch.setattr(scan.between, "DEEP_SHARE", float("inf"))
    rigs, worlds = _rigs()
    carry = [scan.prepare(r) for r in rigs]
    full = [scan.prepare(r) for r in rigs]
    carried = sc_carry.Carried()
    poses, pos = _rest_frame(rigs, worlds)
    part = scan.query_frame(carry, pos, poses, enough_between=lambda p: True, carried=carried)
    assert part.stats[0].extra["stopped"]
    assert carried.cross(carry[0]) == {}
    want = scan.query_frame(full, pos, poses)
    assert want.n_pairs > 0
    got = scan.query_frame(carry, pos, poses, carried=carried)
    assert got.stats[0].extra["carried_pairs"] == 0 and _same(got.pairs, want.pairs)
    got = scan.query_frame(carry, pos, poses, carried=carried)   # now from the kept answer
    assert got.stats[0].extra["carried_pairs"] == 1 and _same(got.pairs, want.pairs)


def test_query_without_carry_keeps_nothing(monkeypatch):
    """A query that does not carry (Refresh, Scan Frame Range) neither reads nor keeps
    anything: what is carried lives in the store the live overlay passes in, never on
    the objects (issue 56)."""
    monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", 0)
    monkeypatch.setattr(scan.between, "DEEP_SHARE", float("inf"))
    rigs, worlds = _rigs()
    objs = [scan.prepare(r) for r in rigs]
    carried = sc_carry.Carried()
    poses, pos = _rest_frame(rigs, worlds)
    scan.query_frame(objs, pos, poses, carried=carried)
    assert carried.cross(objs[0]) and carried.frame(objs[0]) is not None
    before = {k: v for k, v in vars(objs[0]).items() if k != "self_tree"}
    got = scan.query_frame(objs, pos, poses)
    assert got.stats[0].extra["carried_pairs"] == 0
    assert {k: v for k, v in vars(objs[0]).items() if k != "self_tree"}.keys() == before.keys()
    # A store forgets what its objects no longer are.
    assert carried.retain(objs[1:]).frame(objs[0]) is None and carried.cross(objs[0]) == {}
