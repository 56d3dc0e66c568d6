"""`core.scan.between`: which way answers an object pair, and that every way gives the
same pairs. Here the deep way (issue 43): two objects standing in one another, where the
shrunken intersection of their boxes holds at least `between.DEEP_SHARE` of their
triangles, are answered by the two objects' exact box trees instead of boxes and a sweep
or the methods' volumes. The answer must equal brute force and the other ways, in random
strong poses and 1 km from the origin, with the seam rule, first hit and the live cap."""
from __future__ import annotations

import math

import numpy as np
import pytest
from rig_parts import split_rig

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.rig import Pose
from skin_collide.core.scan import between

#: The rule's own minimum count, which the small test meshes here do not reach.
DEEP_MIN = between.DEEP_MIN


@pytest.fixture(autouse=True)
def _share_decides(monkeypatch):
    """The test meshes are small: let the share alone decide (`between.DEEP_MIN` 0)."""
    monkeypatch.setattr(between, "DEEP_MIN", 0)


def _placed(pose: Pose, world: np.ndarray) -> Pose:
    return Pose(pose.deform, world @ pose.armature_world, world @ pose.mesh_world)


def _move(t) -> np.ndarray:
    m = np.eye(4)
    m[:3, 3] = t
    return m


def _pairs(res) -> dict:
    return {(i, j): {tuple(p) for p in q.tolist()} for i, j, q in res.pairs}


def _frames(seed: int, far: float, shift: float, n: int):
    """`n` frames of two tubes (different meshes on armatures of the same shape) in one
    random strong pose (170 degree twists, bone scales 0.5-2), B moved by `shift` along
    x from A, both `far` from the origin: B runs inside A's skin and out of it again."""
    ra = procedural.tube_rig(rings=26, segments=14, n_bones=5, length=2.0, radius=0.3,
                             name="a")
    rb = procedural.tube_rig(rings=20, segments=12, n_bones=5, length=2.0, radius=0.27,
                             name="b")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        pose = procedural.random_pose(ra, rng, math.radians(170))
        pa = _placed(pose, _move([far] * 3))
        pb = _placed(pose, _move([far + shift, far, far]))
        out.append(((ra, rb), (pa, pb), [skinning.lbs_rig(ra, pa), skinning.lbs_rig(rb, pb)]))
    return out


def _way(monkeypatch, way: str) -> None:
    """Send every object pair the given way: boxes, deep (the exact box trees) or the
    methods' traversal."""
    monkeypatch.setattr(between, "BOX_PAIRS_MAX", 10 ** 9 if way == "boxes" else 0)
    monkeypatch.setattr(between, "DEEP_SHARE", 0.0 if way == "deep" else math.inf)
    monkeypatch.setattr(between, "DEEP_MIN", 0)


@pytest.mark.parametrize("method", ["sphere-tree", "obb", "box-tree"])
@pytest.mark.parametrize("far", [0.0, 1000.0])
def test_deep_overlap_answers_by_the_box_trees_as_every_other_way(monkeypatch, method, far):
    frames = _frames(7, far, 0.05, 6)
    objs = [scan.prepare(r, method) for r in frames[0][0]]
    deep = seen = 0
    for _rigs, poses, pos in frames:
        res = scan.query_frame(objs, pos, poses)              # the default rule
        deep += res.stats[0].extra["deep_pairs"]
        tris = res.triangles                      # the frame's: bent quads re-split
        want = {tuple(p) for p in scan.brute_force_pairs(pos[0], tris[0], pos[1],
                                                         tris[1]).tolist()}
        if not want:
            continue
        seen += 1
        assert _pairs(res) == {(0, 1): want}
        assert res.modes == [method, method]          # the report names what was built
        for way in ("boxes", "traverse", "deep"):
            with monkeypatch.context() as m:
                _way(m, way)
                got = scan.query_frame(objs, pos, poses)
                assert _pairs(got) == {(0, 1): want}, way
                first = scan.query_frame(objs, pos, poses, first_hit=True)
                (i, j, p), = first.pairs
                assert p.size and {tuple(q) for q in p.tolist()} <= want, way
    # Tubes 5 cm apart stand in one another: the default rule took the trees.
    assert seen == deep == len(frames)


@pytest.mark.parametrize("x0, deep", [(0.25, False), (-1.0, True), (None, False)])
def test_how_deep_decides_the_way(monkeypatch, x0, deep):
    """B lying along x through A's side at height 1.5: only its tip inside A's skin (few
    triangles in the shrunken intersection: paired by boxes), or across A from side to
    side (about a quarter of both: the two trees). Either way the pairs are brute force's.
    With the rule's minimum count, these small tubes stay on boxes even across."""
    if x0 is None:
        monkeypatch.setattr(between, "DEEP_MIN", DEEP_MIN)
        x0, deep = -1.0, False
    ra = procedural.tube_rig(rings=60, segments=24, n_bones=5, length=2.0, radius=0.3)
    rb = procedural.tube_rig(rings=50, segments=20, n_bones=4, length=2.0, radius=0.2)
    objs = [scan.prepare(ra), scan.prepare(rb)]
    rest = Pose(np.repeat(np.eye(4)[None], ra.n_bones, 0), np.eye(4), np.eye(4))
    lie = np.eye(4)
    lie[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]                 # B's axis along x
    wb = _move([x0, 0.0131, 1.4973]) @ lie             # off every ring and seam of A
    pb = Pose(np.repeat(np.eye(4)[None], rb.n_bones, 0), wb, wb)
    pos = [skinning.lbs_rig(ra, rest), skinning.lbs_rig(rb, pb)]
    res = scan.query_frame(objs, pos, [rest, pb])
    tris = res.triangles
    want = {tuple(p) for p in scan.brute_force_pairs(pos[0], tris[0], pos[1],
                                                     tris[1]).tolist()}
    assert want and _pairs(res) == {(0, 1): want}
    extra = res.stats[0].extra
    assert extra["deep_pairs"] == int(deep) and (extra["box_pairs"] > 0) != deep


def test_deep_way_keeps_the_seam_rule(monkeypatch):
    """Two characters each cut into two parts along a seam (one armature per character),
    B standing in A, at rest and in random strong poses: the deep way answers every
    object pair as the other ways do; at rest the parts of one character touch along
    their seam and are not paired there (adjacency, not contact); the pairs across the
    characters equal brute force."""
    base = procedural.tube_rig(rings=16, segments=14, n_bones=4, length=2.0, radius=0.3)
    objs = [scan.prepare(r) for r in split_rig(base, "A", "armA") + split_rig(base, "B", "armB")]
    rng = np.random.default_rng(11)
    rest = Pose(np.repeat(np.eye(4)[None], base.n_bones, 0), np.eye(4), np.eye(4))
    for k in range(5):
        pa = rest if k == 0 else procedural.random_pose(base, rng, math.radians(170))
        pb = _placed(pa if k == 0 else procedural.random_pose(base, rng, math.radians(170)),
                     _move([0.04, 0.0, 0.0]))
        poses = [pa, pa, pb, pb]
        pos = [skinning.lbs_rig(o.rig, p) for o, p in zip(objs, poses)]
        answers, extra = {}, {}
        for way in ("deep", "boxes", "traverse"):
            with monkeypatch.context() as m:
                _way(m, way)
                res = scan.query_frame(objs, pos, poses)
                answers[way], extra[way] = _pairs(res), res.stats[0].extra
        # Every object pair the traversal took went the deep way instead.
        assert extra["deep"]["deep_pairs"] == extra["traverse"]["traversed_pairs"] > 0
        got = answers["deep"]
        assert got == answers["boxes"] == answers["traverse"], k
        if k == 0:
            assert (0, 1) not in got and (2, 3) not in got          # seams are adjacency
            assert scan.brute_force_pairs(pos[0], res.triangles[0], pos[1],
                                          res.triangles[1]).size   # though they touch
        for i in (0, 1):
            for j in (2, 3):
                want = {tuple(p) for p in scan.brute_force_pairs(
                    pos[i], res.triangles[i], pos[j], res.triangles[j]).tolist()}
                assert got.get((i, j), set()) == want, (k, i, j)


def test_the_live_cap_leaves_a_too_dense_pair_to_the_traversal(monkeypatch):
    """A capped query (the live overlay) gives the deep way the live budget: within it the
    answer is complete; past it the pair goes to the traversal, whose dense-frame rule
    stops it with a subset."""
    rigs, poses, pos = _frames(5, 0.0, 0.05, 1)[0]
    objs = [scan.prepare(r) for r in rigs]
    full = scan.query_frame(objs, pos, poses)
    never = {"enough_between": lambda p: False}
    res = scan.query_frame(objs, pos, poses, **never)
    assert res.stats[0].extra["deep_pairs"] == 1 and _pairs(res) == _pairs(full)
    monkeypatch.setattr(between.multi, "live_budget", lambda n: 1)
    res = scan.query_frame(objs, pos, poses, **never)
    extra = res.stats[0].extra
    assert extra["deep_pairs"] == 0 and extra["traversed_pairs"] == 1 and extra["stopped"]
    got = _pairs(res).get((0, 1), set())
    assert got < _pairs(full)[(0, 1)]


def test_first_hit_stops_the_deep_way_at_its_first_hit(monkeypatch):
    """Three tubes in one another, every pair deep: with `first_hit` the deep way stops at
    the first pair that has a hit (the answer is that hit, from brute force's set), and
    the pairs after it are neither answered nor traversed."""
    frames = _frames(11, 0.0, 0.05, 1)
    (ra, rb), (pa, pb), (xa, xb) = frames[0]
    pc = _placed(pb, _move([0.04, 0.0, 0.0]))
    xc = skinning.lbs_rig(rb, pc)
    objs = [scan.prepare(ra), scan.prepare(rb), scan.prepare(rb)]
    pos, poses = [xa, xb, xc], [pa, pb, pc]
    full = scan.query_frame(objs, pos, poses)
    assert full.stats[0].extra["deep_pairs"] == 3 and len(full.pairs) == 3
    first = scan.query_frame(objs, pos, poses, first_hit=True)
    assert first.stats[0].extra["deep_pairs"] == 1
    assert first.stats[0].extra["traversed_pairs"] == 0
    (i, j, p), = first.pairs
    tris = first.triangles
    want = {tuple(q) for q in scan.brute_force_pairs(pos[i], tris[i], pos[j],
                                                     tris[j]).tolist()}
    assert p.size and {tuple(q) for q in p.tolist()} <= want
