"""The check between two samples (issue 57, `core.scan.continuous.step_pairs`) against an
independent oracle: dense sampling of the linear motion (129 dyadic times) with the exact
static triangle test and the same adjacency rule (tests/between_oracle.py), on
procedural rigs: an object crossing another between two samples, a limb swept through
another object and through its own body, a fast rigid prop, strong random poses 1 km from
the origin, quads re-split at one end. Every sampled contact is reported no later than
sampled; every reported pair comes within the kernel's documented tolerance of touching
at its time. Also the step's AABB candidates (`core.aabb_tree.motion`) against brute
force, the coplanarity filter (`core.geometry.coplanar`) against exact rational
arithmetic, and a few first-contact times against the exact reference
(tests/ccd_reference.py)."""
from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction as Fr

import between_oracle as oracle
import ccd_reference as ref
import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.aabb_tree import motion
from skin_collide.core.geometry import coplanar
from skin_collide.core.rig import Pose, Rig
from skin_collide.core.scan.carry import for_object
from skin_collide.core.scan.continuous import step_pairs
from skin_collide.core.types import FrameInputs

FAR = np.array([1000.0, -700.0, 300.0])


# ------------------------------------------------------------------ rigs and motions

def tube(name: str, rings: int = 12, segments: int = 10, n_bones: int = 4,
         length: float = 2.0, radius: float = 0.25) -> Rig:
    return procedural.tube_rig(rings=rings, segments=segments, n_bones=n_bones,
                               length=length, radius=radius, name=name)


def rigid(rig: Rig, name: str) -> Rig:
    """`rig` with no bones: a prop parented to a bone (as tests/core/test_rigid_core.py)."""
    V = rig.n_vertices
    return replace(rig, name=name,
                   rest_positions=rig.rest_positions.astype(np.float32).astype(np.float64),
                   weight_ptr=np.zeros(V + 1, np.int64), weight_bone=np.zeros(0, np.int32),
                   weight_value=np.zeros(0), bone_names=[], bone_parents=np.zeros(0, np.int32),
                   bone_rest=np.zeros((0, 4, 4)), bone_deform=np.zeros(0, bool), armature="",
                   rigid="bone 'hand' of 'rig'")


def merged(body: Rig, limb: Rig, at: np.ndarray, name: str) -> tuple[Rig, np.ndarray]:
    """One mesh of two parts: `body` and `limb` (its rest moved by `at`), each skinned to
    its own bones. Returns the rig and a (V,) bool mask of the limb's vertices."""
    nv, nt, nj = body.n_vertices, body.n_triangles, body.n_bones
    rest = np.concatenate([body.rest_positions, limb.rest_positions + at])
    tris = np.concatenate([body.triangles, limb.triangles + nv])
    poly = np.concatenate([body.tri_polygon, limb.tri_polygon + body.tri_polygon.max() + 1])
    ptr = np.concatenate([body.weight_ptr, limb.weight_ptr[1:] + body.weight_ptr[-1]])
    lrest = limb.bone_rest.copy()
    lrest[:, :3, 3] += at
    parents = np.concatenate([body.bone_parents,
                              np.where(limb.bone_parents < 0, -1, limb.bone_parents + nj)])
    rig = Rig(name, rest, tris, poly, ptr, np.concatenate([body.weight_bone, limb.weight_bone + nj]),
              np.concatenate([body.weight_value, limb.weight_value]),
              [f"body_{b}" for b in body.bone_names] + [f"limb_{b}" for b in limb.bone_names],
              parents.astype(np.int32), np.concatenate([body.bone_rest, lrest]),
              np.concatenate([body.bone_deform, limb.bone_deform]))
    assert rig.n_triangles == nt + limb.n_triangles
    return rig, np.arange(rig.n_vertices) >= nv


def rot(axis, angle: float) -> np.ndarray:
    a = np.asarray(axis, np.float64)
    a = a / np.linalg.norm(a)
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def about(p: np.ndarray, R: np.ndarray, pivot) -> np.ndarray:
    pivot = np.asarray(pivot, np.float64)
    return (p - pivot) @ R.T + pivot


def resplit(tris: np.ndarray, quads: np.ndarray) -> np.ndarray:
    """The tube's triangles with quads `quads` split along their other diagonal: quad k
    is triangles 2k (q0 q1 q2) and 2k + 1 (q0 q2 q3) (`procedural.fan_triangulate`),
    re-split as (q0 q1 q3), (q1 q2 q3)."""
    out = np.array(tris, np.int64, copy=True)
    q0, q1, q2 = tris[2 * quads].T
    q3 = tris[2 * quads + 1, 2]
    assert (tris[2 * quads + 1, 0] == q0).all() and (tris[2 * quads + 1, 1] == q2).all()
    out[2 * quads] = np.stack([q0, q1, q3], axis=1)
    out[2 * quads + 1] = np.stack([q1, q2, q3], axis=1)
    return out


# ------------------------------------------------------------------ the oracle's check

def check_step(objects, start: FrameInputs, end: FrameInputs, self_collision: bool = True,
               times: np.ndarray = oracle.TIMES):
    """step_pairs against dense sampling, every object pair (and self pairs). Returns
    the per object pair samples and verdicts (asserted here)."""
    res = step_pairs(objects, start, end, self_collision)
    got = {(i, j): (p, t) for i, j, p, t in res.pairs}
    for i, j, p, t in res.pairs:
        assert p.dtype == np.int64 and p.shape == (len(t), 2) and t.dtype == np.float64
        assert i <= j and (i < j or (p[:, 0] < p[:, 1]).all())
        assert len(np.unique(p, axis=0)) == len(p)
    sides = []
    for k, o in enumerate(objects):
        k0 = scan.frame_keys(o, start.positions[k])
        k1 = scan.frame_keys(o, end.positions[k])
        sides.append(oracle.side(start.positions[k], end.positions[k], start.triangles[k],
                                 end.triangles[k], o.vertex_keys if k0 is None else k0,
                                 o.vertex_keys if k1 is None else k1))
    n = len(objects)
    todo = [(i, j) for i in range(n) for j in range(i, n) if i < j or self_collision]
    out = {}
    for i, j in todo:
        s = oracle.sample(i, j, sides[i], sides[j], times)
        p, t = got.get((i, j), (np.zeros((0, 2), np.int64), np.zeros(0)))
        v = oracle.check_answer(s, p, t)
        assert v.ok(), f"objects {i}, {j}: {v}"
        # Reports beyond the tolerance come only from queries the kernel gave up on
        # (test_kernel_decides_a_folded_quad_near_miss), and rarely.
        assert len(v.undecided) <= max(3, 0.01 * v.reported), (i, j, v.undecided)
        out[(i, j)] = (s, v)
    assert set(got) <= set(todo)
    return res, out


def totals(out) -> dict:
    v = [x[1] for x in out.values()]
    return {"required": sum(len(x[0].required) for x in out.values()),
            "reported": sum(x.reported for x in v), "passing": sum(x.passing for x in v),
            "unsampled": sum(x.unsampled for x in v)}


def posed(rig: Rig, rng) -> np.ndarray:
    """World positions of `rig` in a strong random pose (170 degree twists, bones scaled
    0.7-1.4) of its bones, its armature and mesh left at the origin (so that characters
    placed side by side stay in each other's way)."""
    p = procedural.random_pose(rig, rng, max_angle=math.radians(170), scale_range=(0.7, 1.4))
    return skinning.lbs_rig(rig, Pose(p.deform, np.eye(4), np.eye(4)))


def inputs(positions, triangles) -> FrameInputs:
    return FrameInputs([np.asarray(p, np.float64) for p in positions], [None] * len(positions),
                       [np.asarray(t, np.int64) for t in triangles])


# ------------------------------------------------------------------ scenarios

def test_an_object_crossing_another_between_two_samples():
    """B passes through A between two samples: 0.6 m to one side, then to the other; no
    contact at either end, every contact in between."""
    a, b = tube("A"), tube("B", radius=0.2)
    objs = scan.prepare_shared([a, b], self_trees=True)
    pa = a.rest_positions
    pb0 = about(b.rest_positions, rot((1, 0, 0), math.radians(80)), (0, 0, 0)) + [-0.6, 1.0, 1.0]
    pb1 = about(b.rest_positions, rot((1, 0, 0), math.radians(95)), (0, 0, 0)) + [0.6, 1.1, 1.05]
    start = inputs([pa, pb0], [a.triangles, b.triangles])
    end = inputs([pa, pb1], [a.triangles, b.triangles])
    res, out = check_step(objs, start, end)
    s, v = out[(0, 1)]
    assert not oracle.frame_pairs(s, 0) and not oracle.frame_pairs(s, -1)
    assert len(s.required) > 20 and v.passing == v.reported
    # The sampled contact begins near the middle: B's near side reaches A's at
    # t = (0.6 - 0.2 - 0.25 * 0.85...) / 1.2, the time reported is a lower bound of it.
    _, t = next((p, t) for i, j, p, t in res.pairs if (i, j) == (0, 1))
    first = min(s.required.values())
    assert 0.1 < t.min() <= first < 0.5


def test_a_limb_swept_through_another_object():
    """An arm (a thin tube) turns 150 degrees about its shoulder between two samples;
    the straight-line motion of its vertices sweeps it through the body beside it."""
    arm, body = tube("arm", rings=10, segments=8, n_bones=3, length=2.0, radius=0.12), tube("body")
    objs = scan.prepare_shared([arm, body], self_trees=True)
    horizontal = rot((0, 1, 0), math.radians(90))                 # +Z -> +X
    shoulder = np.array([0.0, 0.0, 1.0])
    p = arm.rest_positions @ horizontal.T
    pa0 = about(p, rot((0, 0, 1), math.radians(-75)), (0, 0, 0)) + shoulder
    pa1 = about(p, rot((0, 0, 1), math.radians(75)), (0, 0, 0)) + shoulder
    pb = body.rest_positions + [0.45, 0.0, 0.0]
    start = inputs([pa0, pb], [arm.triangles, body.triangles])
    end = inputs([pa1, pb], [arm.triangles, body.triangles])
    res, out = check_step(objs, start, end)
    s, v = out[(0, 1)]
    assert not oracle.frame_pairs(s, 0) and not oracle.frame_pairs(s, -1)
    assert len(s.required) > 20 and v.passing == v.reported


def test_a_limb_swept_through_its_own_body():
    """One mesh of a body and an arm: the arm turns 150 degrees about its shoulder and
    sweeps through the body: self pairs only."""
    body = tube("b", rings=12, segments=10, n_bones=4)
    arm = tube("a", rings=10, segments=8, n_bones=3, length=2.0, radius=0.12)
    rig, limb = merged(body, arm, np.zeros(3), "person")
    objs = scan.prepare_shared([rig], self_trees=True)
    shoulder = np.array([0.45, 0.0, 1.2])
    horizontal = rot((0, 1, 0), math.radians(-90))                # +Z -> -X
    arm_p = rig.rest_positions[limb] @ horizontal.T
    p0, p1 = rig.rest_positions.copy(), rig.rest_positions.copy()
    p0[limb] = about(arm_p, rot((0, 0, 1), math.radians(-75)), (0, 0, 0)) + shoulder
    p1[limb] = about(arm_p, rot((0, 0, 1), math.radians(75)), (0, 0, 0)) + shoulder
    start, end = inputs([p0], [rig.triangles]), inputs([p1], [rig.triangles])
    res, out = check_step(objs, start, end)
    s, v = out[(0, 0)]
    assert not oracle.frame_pairs(s, 0) and not oracle.frame_pairs(s, -1)
    assert len(s.required) > 20 and v.passing == v.reported
    # Every contact is between the arm and the body.
    nt = body.n_triangles
    (_, _, p, t), = res.pairs
    assert ((p[:, 0] < nt) & (p[:, 1] >= nt)).all()
    # First contacts against the exact rational reference (tests/ccd_reference.py): the
    # reported time is never later than the exact first vertex-face or edge-edge
    # contact of the pair, which is never later than the sampled one.
    order = np.argsort(t)
    for k in order[:3].tolist() + order[-2:].tolist():
        ta, tb = p[k]
        exact = oracle.exact_first_contact(p0, p1, rig.triangles[ta], p0, p1, rig.triangles[tb])
        assert exact is not None and t[k] <= exact.hi
        need = s.required.get((int(ta), int(tb)))
        assert need is None or exact.lo <= need


def test_a_fast_rigid_prop():
    """A rigid prop (no bones) flies 3 m and turns 170 degrees in one step through a
    character, and through a second prop that stays put."""
    body = tube("body")
    prop = rigid(tube("p", rings=3, segments=6, n_bones=1, length=0.5, radius=0.15), "prop")
    still = rigid(tube("s", rings=2, segments=5, n_bones=1, length=0.3, radius=0.1), "still")
    objs = scan.prepare_shared([body, prop, still], self_trees=True)
    R = rot((1, 2, 0.5), math.radians(170))
    pp0 = prop.rest_positions + [-1.6, 0.05, 0.9]
    pp1 = about(prop.rest_positions, R, (0, 0, 0.25)) + [1.4, -0.1, 1.1]
    # The still prop sits on the flying one's path, where its middle is at t = 0.8.
    mid = (0.2 * pp0 + 0.8 * pp1).mean(axis=0)
    ps = still.rest_positions - still.rest_positions.mean(axis=0) + mid
    start = inputs([body.rest_positions, pp0, ps], [body.triangles, prop.triangles, still.triangles])
    end = inputs([body.rest_positions, pp1, ps], [body.triangles, prop.triangles, still.triangles])
    res, out = check_step(objs, start, end)
    for key in ((0, 1), (1, 2)):
        s, v = out[key]
        assert len(s.required) > 5 and v.passing > 5, key
    assert not out[(0, 2)][0].required                     # body and the still prop apart


@pytest.mark.parametrize("seed", [3])
def test_strong_random_poses_far_from_the_origin(seed):
    """Two characters in independent strong random poses (170 degree twists, scaled bones)
    at both ends of the step, 1 km from the origin: self and cross pairs."""
    rng = np.random.default_rng(seed)
    rigs = [tube("A", rings=10, segments=8), tube("B", rings=10, segments=8)]
    objs = scan.prepare_shared(rigs, self_trees=True)
    ends = []
    for _ in range(2):
        pos = [posed(r, rng) for r in rigs]
        pos[1] = pos[1] + [0.4, 0.0, 0.0]
        ends.append(inputs([p + FAR for p in pos], [r.triangles for r in rigs]))
    res, out = check_step(objs, *ends, times=oracle.TIMES[::2])
    tot = totals(out)
    assert tot["required"] > 20 and tot["passing"] > 0, tot
    assert any(x[0].required for k, x in out.items() if k[0] == k[1])     # self contacts


@pytest.mark.parametrize("which", ["end", "start", "both"])
def test_quads_re_split_at_one_end(which):
    """Blender splits some quads along the other diagonal at one end (or different
    quads at each): both splits count over the whole step; the answer's indices are the
    start's triangle rows."""
    rng = np.random.default_rng({"end": 1, "start": 2, "both": 3}[which])
    a, b = tube("A"), tube("B", radius=0.2)
    objs = scan.prepare_shared([a, b], self_trees=True)
    pa = a.rest_positions
    pb0 = about(b.rest_positions, rot((1, 0, 0), math.radians(80)), (0, 0, 0)) + [-0.6, 1.0, 1.0]
    pb1 = about(b.rest_positions, rot((1, 0.3, 0), math.radians(100)), (0, 0, 0)) + [0.6, 1.1, 1.05]
    # Bend A a little so that its quads are not planar (the splits differ geometrically).
    pa = pa + 0.02 * np.sin(7 * pa[:, [2, 0, 1]])
    nq = 12 * 10
    tris = []
    for r in (a, b):
        q0 = rng.choice(nq, nq // 2, replace=False)
        q1 = rng.choice(nq, nq // 2, replace=False)
        t0 = resplit(r.triangles, q0) if which in ("start", "both") else r.triangles
        t1 = resplit(r.triangles, q1) if which in ("end", "both") else r.triangles
        tris.append((t0, t1))
    start = inputs([pa, pb0], [t[0] for t in tris])
    end = inputs([pa, pb1], [t[1] for t in tris])
    res, out = check_step(objs, start, end, times=oracle.TIMES[::2])
    s, v = out[(0, 1)]
    assert len(s.required) > 20 and v.passing > 0
    # The second splits matter: some required pair touches only through one.
    seconds = {s.key(x, y) for x, y, h in zip(s.va.tolist(), s.vb.tolist(), s.hits.any(axis=1))
               if h and (x >= s.a.T or y >= s.b.T)}
    firsts = {s.key(x, y) for x, y, h in zip(s.va.tolist(), s.vb.tolist(), s.hits.any(axis=1))
              if h and x < s.a.T and y < s.b.T}
    assert seconds - firsts


def test_self_quads_re_split_and_strong_poses():
    """Self pairs of one character whose quads are re-split at the end, in strong random
    poses: adjacency by weld id at either end, per pair of versions."""
    rng = np.random.default_rng(5)
    r = tube("A", rings=10, segments=8, n_bones=5)
    objs = scan.prepare_shared([r], self_trees=True)
    p0, p1 = (posed(r, rng) + FAR for _ in range(2))
    t1 = resplit(r.triangles, rng.choice(10 * 8, 40, replace=False))
    res, out = check_step(objs, inputs([p0], [r.triangles]), inputs([p1], [t1]),
                          times=oracle.TIMES[::2])
    assert len(out[(0, 0)][0].required) > 10


# ------------------------------------------------------------------ the step's AABB trees

def _rule(lo0a, hi0a, lo1a, hi1a, lo0b, hi0b, lo1b, hi1b, pad=0.0) -> np.ndarray:
    """Each box inequality holds at t = 0 or at t = 1 (boxes inflated by `pad`)."""
    return (((lo0a <= hi0b + pad) | (lo1a <= hi1b + pad))
            & ((lo0b <= hi0a + pad) | (lo1b <= hi1a + pad))).all(axis=-1)


def _boxes(p, tris):
    c = p[tris]
    return c.min(axis=1), c.max(axis=1)


def _all_pairs_rule(pa0, pa1, ta, pb0, pb1, tb, pad=0.0) -> np.ndarray:
    """(Ta, Tb) bool: the rule for every triangle pair."""
    lo0a, hi0a = _boxes(pa0, ta)
    lo1a, hi1a = _boxes(pa1, ta)
    lo0b, hi0b = _boxes(pb0, tb)
    lo1b, hi1b = _boxes(pb1, tb)
    A = lambda x: x[:, None]
    B = lambda x: x[None]
    return _rule(A(lo0a), A(hi0a), A(lo1a), A(hi1a), B(lo0b), B(hi0b), B(lo1b), B(hi1b), pad)


def _pose_pair(seed):
    rng = np.random.default_rng(seed)
    rigs = [tube("A", rings=12, segments=8), tube("B", rings=12, segments=8)]
    objs = scan.prepare_shared(rigs, self_trees=True)
    P = []
    for _ in range(2):
        pos = [posed(r, rng) + FAR for r in rigs]
        pos[1] = pos[1] + [0.4, 0.0, 0.0]
        P.append(pos)
    return rigs, objs, P


@pytest.mark.parametrize("seed", [4, 9])
def test_motion_candidates_against_brute_force(seed):
    """`motion.self_candidates` / `cross_candidates` hold every triangle pair whose box
    inequalities each hold at t = 0 or t = 1 (never rest-adjacent ones, for self), every
    pair the dense sampling sees touching, and nothing the rule (on boxes padded by the
    trees' float32 rounding) rules out."""
    rigs, objs, P = _pose_pair(seed)
    trees, boxes = [], []
    for k, o in enumerate(objs):
        tree = for_object(o)
        trees.append(tree)
        boxes.append(motion.step_boxes(tree, P[0][k], P[1][k], o.rig.triangles))
    pad = 2.0 ** -20 * (np.abs(FAR).max() + 10.0)          # float32 rows, outward rounded
    for k, o in enumerate(objs):
        ta, tb = motion.self_candidates(trees[k], boxes[k])
        T = o.rig.n_triangles
        got = np.zeros((T, T), bool)
        got[np.minimum(ta, tb), np.maximum(ta, tb)] = True
        assert not (ta == tb).any()
        keys = o.vertex_keys[o.rig.triangles]
        adj = (keys[:, None, :, None] == keys[None, :, None, :]).any(axis=(2, 3))
        upper = np.triu(np.ones((T, T), bool), 1)
        want = _all_pairs_rule(P[0][k], P[1][k], o.rig.triangles, P[0][k], P[1][k],
                               o.rig.triangles) & upper & ~adj
        loose = _all_pairs_rule(P[0][k], P[1][k], o.rig.triangles, P[0][k], P[1][k],
                                o.rig.triangles, pad) & upper & ~adj
        assert want.sum() > 100
        assert not (want & ~got).any(), np.argwhere(want & ~got)[:5]
        assert not (got & ~loose).any(), np.argwhere(got & ~loose)[:5]
        assert len(ta) == got.sum()                                   # each pair once
        sd = oracle.side(P[0][k], P[1][k], o.rig.triangles, o.rig.triangles, o.vertex_keys)
        s = oracle.sample(k, k, sd, sd, oracle.TIMES[::4])
        touch = np.array(sorted(s.touching), np.int64).reshape(-1, 2)
        assert len(touch) and got[touch[:, 0], touch[:, 1]].all()
    ta, tb = motion.cross_candidates(trees[0], boxes[0], trees[1], boxes[1])
    Ta, Tb = objs[0].rig.n_triangles, objs[1].rig.n_triangles
    got = np.zeros((Ta, Tb), bool)
    got[ta, tb] = True
    want = _all_pairs_rule(P[0][0], P[1][0], objs[0].rig.triangles, P[0][1], P[1][1],
                           objs[1].rig.triangles)
    loose = _all_pairs_rule(P[0][0], P[1][0], objs[0].rig.triangles, P[0][1], P[1][1],
                            objs[1].rig.triangles, pad)
    assert want.sum() > 100
    assert not (want & ~got).any() and not (got & ~loose).any()
    assert len(ta) == got.sum()
    sa = oracle.side(P[0][0], P[1][0], objs[0].rig.triangles, objs[0].rig.triangles,
                     objs[0].vertex_keys)
    sb = oracle.side(P[0][1], P[1][1], objs[1].rig.triangles, objs[1].rig.triangles,
                     objs[1].vertex_keys)
    s = oracle.sample(0, 1, sa, sb, oracle.TIMES[::4])
    touch = np.array(sorted(s.touching), np.int64).reshape(-1, 2)
    assert len(touch) and got[touch[:, 0], touch[:, 1]].all()


def test_motion_boxes_hold_both_splits():
    """With six corners per triangle (both splits), the candidates hold every pair the
    rule admits for either split's boxes."""
    rigs, objs, P = _pose_pair(6)
    o = objs[0]
    rng = np.random.default_rng(0)
    t1 = resplit(o.rig.triangles, rng.choice(12 * 8, 48, replace=False))
    tree = for_object(o)
    corners = np.concatenate([o.rig.triangles, t1], axis=1)
    ta, tb = motion.self_candidates(tree, motion.step_boxes(tree, P[0][0], P[1][0], corners))
    T = o.rig.n_triangles
    got = np.zeros((T, T), bool)
    got[np.minimum(ta, tb), np.maximum(ta, tb)] = True
    keys = o.vertex_keys[o.rig.triangles]
    adj = (keys[:, None, :, None] == keys[None, :, None, :]).any(axis=(2, 3))
    upper = np.triu(np.ones((T, T), bool), 1)
    six = _all_pairs_rule(P[0][0], P[1][0], corners, P[0][0], P[1][0], corners)
    assert not (six & upper & ~adj & ~got).any()


# ------------------------------------------------------------------ the coplanarity filter

def _triple_poly(x0, x1, vertex_face: bool):
    """The exact triple product of the query's three edges as a cubic in t (Fractions)."""
    P = [ref.lerp(tuple(map(Fr, x0[i])), tuple(map(Fr, x1[i]))) for i in range(4)]
    if vertex_face:
        a, b, c = ref.vsub(P[0], P[1]), ref.vsub(P[2], P[1]), ref.vsub(P[3], P[1])
    else:
        a, b, c = ref.vsub(P[1], P[0]), ref.vsub(P[2], P[0]), ref.vsub(P[3], P[0])
    return ref.vdot(a, ref.vcross(b, c))


def _coplanar_somewhere(p) -> bool:
    return not p or bool(ref.roots01(p))


@pytest.mark.parametrize("vertex_face", [True, False])
@pytest.mark.parametrize("offset", [0.0, 1.0])
def test_never_coplanar_is_never_wrong(vertex_face, offset):
    """Small dyadic queries (coordinates multiples of 1/4 in [-1, 1], many coplanar at
    some t; also 1 km from the origin, where the translated coordinates stay exact):
    where `never_coplanar` says True, the exact triple product has no root in [0, 1]
    (Sturm sequences over Fractions)."""
    rng = np.random.default_rng(17 + int(vertex_face))
    n = 2000
    x0 = rng.integers(-4, 5, size=(n, 4, 3)) / 4.0
    x1 = x0 + rng.integers(-4, 5, size=(n, 4, 3)) / 4.0
    # Force coplanar configurations: a quarter of the queries coplanar at t = 0, t = 1
    # or t = 1/2 (the fourth point on the plane of the other three there).
    k = n // 4
    w = rng.integers(0, 3, size=(k, 2)) / 2.0
    x0[:k, 3] = x0[:k, 1] + w[:, :1] * (x0[:k, 2] - x0[:k, 1]) + w[:, 1:] * (x0[:k, 0] - x0[:k, 1])
    x1[k:2 * k, 3] = x1[k:2 * k, 1] + w[:, :1] * (x1[k:2 * k, 2] - x1[k:2 * k, 1])
    m = (x0[2 * k:3 * k] + x1[2 * k:3 * k]) / 2
    target = m[:, 1] + w[:, :1] * (m[:, 2] - m[:, 1]) + w[:, 1:] * (m[:, 0] - m[:, 1])
    x1[2 * k:3 * k, 3] = 2 * target - x0[2 * k:3 * k, 3]      # midpoint of row 3 on the plane
    x0, x1 = x0 + offset * FAR, x1 + offset * FAR
    said = coplanar.never_coplanar(x0, x1, vertex_face)
    wrong = []
    sometimes = 0
    for q in range(n):
        p = _triple_poly(x0[q] - x0[q, 0], x1[q] - x0[q, 0], vertex_face)
        cop = _coplanar_somewhere(p)
        sometimes += cop
        if said[q] and cop:
            wrong.append(q)
    assert not wrong, (wrong[:5], x0[wrong[0]].tolist(), x1[wrong[0]].tolist())
    assert sometimes > n // 4                   # the forced cases, and more
    assert said.sum() > n // 10                 # the filter does filter


def test_never_coplanar_near_a_tangency():
    """The triple product -(t - 1/2)^2 - L: a double root at t = 1/2 (L = 0), two roots
    close to it (L = -2^-30), none (L = 1/4). Vertex-face rows v, f0, f1, f2 with f0 = 0,
    f1 = (1, 0, 0), f2 = (0, 1, t - 1/2), v = (0, t - 1/2, -L)."""
    out = []
    for L in (0.0, -2.0 ** -30, 0.25):
        x0 = np.array([[[0, -0.5, -L], [0, 0, 0], [1, 0, 0], [0, 1, -0.5]]]) + FAR
        x1 = np.array([[[0, 0.5, -L], [0, 0, 0], [1, 0, 0], [0, 1, 0.5]]]) + FAR
        p = _triple_poly(x0[0] - FAR, x1[0] - FAR, True)
        out.append((bool(coplanar.never_coplanar(x0, x1, True)[0]), _coplanar_somewhere(p)))
    assert out == [(False, True), (False, True), (True, False)]


# A vertex-face query of a strongly twisted tube (test_strong_random_poses_far_from_the_origin,
# seed 3: vertex 43 against triangle (42, 51, 50), the other half of its quad, which folds
# at t ~ 0.4), 1 km from the origin. Its minimum distance over the step is 2.44e-4 (at
# t ~ 0.40, dense float sampling), 280 times eta = 2 TOL M = 8.7e-7, yet the kernel
# answers hit, undecided (work budget), t = 0.3984375, even at tol = 1e-4: step_pairs then
# reports triangle pairs (68, 85), (71, 85), (85, 86) that never come within the tolerance.
FOLD_X0 = [[999.8788369117193, -699.4308872399916, 300.7051585309036],
           [999.9810717551655, -699.4516368766267, 300.6469414211367],
           [999.9356075937486, -699.2188154441811, 300.58922198623753],
           [1000.035869505795, -699.2855339319148, 300.54219094489514]]
FOLD_X1 = [[999.7428875098037, -699.215528783582, 300.87467605889555],
           [999.6181394115499, -699.3743476902406, 301.027840336751],
           [999.5814625266496, -698.9975006040547, 300.86859890799525],
           [999.4624127272482, -699.1255075514878, 301.0134359142031]]


def test_the_folded_quad_query_stays_far():
    """The reproducer's own geometry: it never comes within 100 eta (so a hit there is no
    contact within the documented tolerance)."""
    from skin_collide.core.geometry import ccd
    from skin_collide.core.geometry.distance import pair_distances

    x0, x1 = np.array([FOLD_X0]), np.array([FOLD_X1])
    eta = 2 * ccd.TOL * ccd.extent(x0, x1)[0]
    n = 200_001
    t = np.linspace(0.0, 1.0, n)[:, None, None]
    x = ((1 - t) * x0 + t * x1).reshape(-1, 3)                     # (4n, 3)
    k = 4 * np.arange(n)
    d = pair_distances(x, np.stack([k, k, k], 1), np.arange(n), x,
                       np.stack([k + 1, k + 2, k + 3], 1), np.arange(n)).dist
    best = d.min()
    # Between grid points the distance changes by at most the two primitives' motion
    # over 1/(n - 1) of the step.
    slack = 2 * np.linalg.norm(x1 - x0, axis=2).max() / (n - 1)
    assert best - slack > 100 * eta


@pytest.mark.xfail(strict=True, reason="ccd gives up (undecided hit) on a folded-quad "
                   "near miss 280x beyond its tolerance; step_pairs reports it")
def test_kernel_decides_a_folded_quad_near_miss():
    from skin_collide.core.geometry import ccd

    r = ccd.ccd(ccd.VERTEX_FACE, np.array([FOLD_X0]), np.array([FOLD_X1]), first_contact=True)
    assert not r.hit[0] or r.decided[0], r
