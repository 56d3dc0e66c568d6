"""Contacts (`core.contacts.groups`, issue 28) on generated rigs, judged by
`tests/contacts_judge.py` (plain union-find, another segment formula, bones summed vertex
by vertex). Pure numpy; no bpy."""
from __future__ import annotations

import math

import numpy as np
import pytest
from contacts_judge import MeshData, check_frame, same_vertex_ids

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.contacts import groups as cg
from skin_collide.core.rig import Pose


def mesh_data(obj, positions, tris) -> MeshData:
    rig = obj.rig
    polys = [rig.poly_verts[rig.poly_ptr[p]:rig.poly_ptr[p + 1]].tolist()
             for p in range(rig.n_polygons)]
    weights = []
    for v in range(rig.n_vertices):
        s, e = rig.weight_ptr[v], rig.weight_ptr[v + 1]
        tot = rig.weight_value[s:e].sum()
        weights.append({rig.bone_names[b]: w / tot
                        for b, w in zip(rig.weight_bone[s:e].tolist(),
                                        rig.weight_value[s:e].tolist())})
    return MeshData(rig.name, polys, same_vertex_ids(rig.rest_positions, weights), weights,
                    positions, tris, rig.tri_polygon, rigid=rig.n_bones == 0)


def frame_doc(objects, positions, poses, self_collision=True):
    tris = [scan.frame_triangles(o, p) for o, p in zip(objects, positions)]
    res = scan.query_frame(objects, positions, poses, self_collision=self_collision,
                           triangles=tris)
    names = [o.name for o in objects]
    pairs = [(names[i], a, names[j], b) for i, a, j, b in scan.polygon_pairs(objects, res)]
    found = cg.frame_contacts(objects, positions, tris, res.pairs)
    doc = {"pairs": [list(p) for p in pairs], "contacts": cg.to_json(found, 10 ** 9)}
    meshes = {o.name: mesh_data(o, p, t) for o, p, t in zip(objects, positions, tris)}
    return doc, meshes, found


def two_tubes(seed: int, offset=(0.0, 0.0, 0.0), max_angle=60.0):
    """Two tubes (2 long, along their z) crossing at right angles, bent at random: their
    skins cross, and each bent tube may cross itself."""
    rng = np.random.default_rng(seed)
    objs, pos, poses = [], [], []
    for k, name in enumerate(("Left", "Right")):
        rig = procedural.tube_rig(rings=14, segments=10, n_bones=4, name=name)
        obj = scan.prepare(rig)
        pose = procedural.random_pose(rig, rng, max_angle=math.radians(max_angle),
                                      scale_range=(0.9, 1.1))
        world = np.eye(4)
        if k:
            world[:3, :3] = [[0, 0, 1], [0, 1, 0], [-1, 0, 0]]      # z -> x
            world[:3, 3] = [-1.0, 0.1, 1.0]
        world[:3, 3] += offset
        pose = Pose(pose.deform, world, world.copy())
        p = skinning.lbs_rig(rig, pose)
        objs.append(obj)
        pos.append(p.astype(np.float32).astype(np.float64))
        poses.append(pose)
    return objs, pos, poses


@pytest.mark.parametrize("seed, angle", [(0, 30), (3, 60), (2, 150), (18, 150), (4, 170),
                                         (11, 170), (16, 170)])
def test_contacts_follow_the_rules_on_crossing_tubes(seed, angle):
    """Crossings between the tubes and folds of each tube on itself (self-contacts)."""
    objs, pos, poses = two_tubes(seed, max_angle=angle)
    doc, meshes, found = frame_doc(objs, pos, poses)
    size = cg.frame_size(pos)
    n = check_frame(meshes, doc, size)
    assert n > 0 and doc["pairs"]
    assert any(c.kind == "crossing" for c in found)
    for c in found:      # the centre is on the curve: an end point's neighbourhood
        if c.segments.size:
            d = np.minimum(np.linalg.norm(c.segments[:, :3] - c.center, axis=1),
                           np.linalg.norm(c.segments[:, 3:] - c.center, axis=1))
            mids = 0.5 * (c.segments[:, :3] + c.segments[:, 3:])
            assert np.isclose(np.linalg.norm(mids - c.center, axis=1), 0).any() or \
                (d < 1e-9).any()


def test_contacts_ten_km_from_the_origin():
    objs, pos, poses = two_tubes(4, offset=(10_000.0, -10_000.0, 5_000.0), max_angle=170)
    doc, meshes, found = frame_doc(objs, pos, poses)
    assert check_frame(meshes, doc, cg.frame_size(pos)) > 0


def test_the_judge_fails_a_wrong_grouping():
    objs, pos, poses = two_tubes(0)
    doc, meshes, _ = frame_doc(objs, pos, poses)
    cs = doc["contacts"]
    big = max(cs, key=lambda c: len(c["pairs"]))
    assert len(big["pairs"]) > 1
    broken = dict(doc, contacts=[c for c in cs if c is not big]
                  + [dict(big, pairs=big["pairs"][:1]), dict(big, pairs=big["pairs"][1:])])
    with pytest.raises(AssertionError):
        check_frame(meshes, broken, cg.frame_size(pos))
    wrong_len = dict(doc, contacts=[dict(c, length=c["length"] * 1.01 + 1e-3) for c in cs])
    with pytest.raises(AssertionError):
        check_frame(meshes, wrong_len, cg.frame_size(pos))


def test_components_of_a_long_chain():
    n = 5000
    u, v = np.arange(n - 1), np.arange(1, n)
    rng = np.random.default_rng(0)
    perm = rng.permutation(n)
    lab = cg.components(n + 3, perm[u], perm[v])
    assert (lab[:n] == 0).all() or len(set(lab[perm].tolist())) == 4
    assert len(set(lab.tolist())) == 4
    assert cg.components(3, np.zeros(0, int), np.zeros(0, int)).tolist() == [0, 1, 2]


def test_a_touching_contact_and_the_rigid_prop_has_no_bone():
    """Two unit quads of two rigid props lying on each other (coplanar): one touching
    contact, length 0, no bones; a third prop crossing them makes a crossing."""
    from skin_collide.core.rig import Rig

    def prop(name, verts):
        return Rig(name=name, rest_positions=np.asarray(verts, float),
                   triangles=np.array([[0, 1, 2], [0, 2, 3]]), tri_polygon=np.array([0, 0]),
                   weight_ptr=np.zeros(5, np.int64), weight_bone=np.zeros(0, np.int32),
                   weight_value=np.zeros(0), bone_names=[], bone_parents=np.zeros(0, np.int32),
                   bone_rest=np.zeros((0, 4, 4)), bone_deform=np.zeros(0, bool),
                   poly_ptr=np.array([0, 4]), poly_verts=np.array([0, 1, 2, 3]),
                   rigid="test")
    quad = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]
    wall = [[0.5, -1, -1], [0.5, 2, -1], [0.5, 2, 1], [0.5, -1, 1]]
    objs = [scan.prepare(prop("A", quad)), scan.prepare(prop("B", quad)),
            scan.prepare(prop("C", wall))]
    pos = [o.rig.rest_positions for o in objs]
    tris = [o.rig.triangles for o in objs]
    tp = [(0, 1, np.array([[0, 0], [0, 1], [1, 0], [1, 1]])),
          (0, 2, np.array([[0, 0], [0, 1], [1, 0], [1, 1]]))]
    found = cg.frame_contacts(objs, pos, tris, tp)
    assert [(c.a, c.b, c.kind, c.bones) for c in found] == \
        [("A", "B", "touching", (None, None)), ("A", "C", "crossing", (None, None))]
    assert found[0].length == 0.0 and found[0].pairs.tolist() == [[0, 0]]
    # The wall crosses the quad along x = 0.5, y 0..1: in both triangles of the wall's
    # quad (split at its diagonal) and of A's (split at y = x: the curve crosses it).
    assert found[1].length == pytest.approx(1.0, rel=1e-12)
    assert np.allclose(found[1].center[[0, 2]], [0.5, 0.0])
    # Reported pairs restrict: with the A x C pair filtered away, only A x B is left.
    only = cg.frame_contacts(objs, pos, tris, tp, reported=[("A", 0, "B", 0)])
    assert [(c.a, c.b) for c in only] == [("A", "B")]


def test_episodes_by_bone_pair_csv_and_filters():
    from skin_collide.core.contacts import filters as contact_filters

    objs, pos, poses = two_tubes(4, max_angle=170)
    doc, meshes, found = frame_doc(objs, pos, poses)
    frames = [(1, doc["contacts"]), (2, doc["contacts"]), (3, []), (4, doc["contacts"])]
    eps = cg.contact_episodes(frames)
    keys = {(e.a, e.b, e.bone_a, e.bone_b) for e in eps}
    assert len(eps) == 2 * len(keys)          # frames 1-2, then 4 (3 is clean)
    e = eps[0]
    assert (e.start, e.end, e.frames, e.kind) == (1, 2, 2, "crossing")
    assert e.worst_length == pytest.approx(max(
        sum(c["length"] for c in doc["contacts"] if cg._episode_key(c) == (e.a, e.b, e.bone_a, e.bone_b)),
        0.0))
    text = cg.summary(eps, limit=2)
    assert " × " in text and "of crossing" in text and "and " in text.splitlines()[-1]
    assert cg.length_text(0.031) == "3.1 cm" and cg.length_text(1.5) == "1.50 m"
    # CSV: one row per contact.
    rows = cg.contacts_csv({"frames": [{"frame": 7, "contacts": doc["contacts"]}]}).splitlines()
    assert rows[0].split(",") == list(cg.CSV_COLUMNS) and len(rows) == 1 + len(doc["contacts"])
    assert rows[1].split(",")[0] == "7"
    # Filters: crossing only, minimum length, bone pairs; bad minimum length.
    touch = cg.Contact("A", "B", np.zeros((1, 2), int), 0.0, "touching", ("x", "y"), np.zeros(3))
    cross = cg.Contact("A", "B", np.zeros((1, 2), int), 0.5, "crossing", ("x", "y"), np.zeros(3))
    assert not contact_filters.ContactFilter(crossing_only=True).keep(touch)
    assert contact_filters.ContactFilter(crossing_only=True).keep(cross)
    assert not contact_filters.ContactFilter(min_length=0.6).keep(cross)
    assert contact_filters.ContactFilter(min_length=0.4).keep(cross)
    assert not contact_filters.ContactFilter(ignore_bones={("y", "x")}).keep(cross)
    assert contact_filters.ContactFilter(ignore_bones={("x", "z")}).keep(cross)
    with pytest.raises(ValueError):
        contact_filters.ContactFilter(min_length=float("nan"))
    # Zones: pairs with a polygon in the zone are dropped, the others kept.
    i, j, tp = next((i, j, p) for i, j, p in
                    scan.query_frame(objs, pos, poses, self_collision=True).pairs)
    mask = np.zeros(objs[i].rig.n_polygons, bool)
    hit = objs[i].rig.tri_polygon[tp[0, 0]]
    mask[hit] = True
    left = contact_filters.drop_zone_pairs(objs, [(i, j, tp)], {i: mask})
    kept = left[0][2] if left else np.zeros((0, 2), int)
    assert not (objs[i].rig.tri_polygon[kept[:, 0]] == hit).any()
    assert kept.shape[0] == int((objs[i].rig.tri_polygon[tp[:, 0]] != hit).sum()) - \
        (int(((objs[j].rig.tri_polygon[tp[:, 1]] == hit)
              & (objs[i].rig.tri_polygon[tp[:, 0]] != hit)).sum()) if i == j else 0)


def test_parse_bone_pairs():
    from skin_collide.core.contacts.filters import parse_bone_pairs

    assert parse_bone_pairs("hand.L, hand.R; foot.L,foot.R\nmixamorig:Hips, mixamorig:Spine") \
        == {("hand.L", "hand.R"), ("foot.L", "foot.R"), ("mixamorig:Hips", "mixamorig:Spine")}
    assert parse_bone_pairs("") == set() and parse_bone_pairs(" ; ") == set()
    for bad in ("hand.L", "a, b, c", "a,"):
        with pytest.raises(ValueError):
            parse_bone_pairs(bad)


def _same_contacts(a, b) -> bool:
    return len(a) == len(b) and all(
        (x.a, x.b, x.kind, x.bones, x.length) == (y.a, y.b, y.kind, y.bones, y.length)
        and np.array_equal(x.pairs, y.pairs) and np.array_equal(x.center, y.center)
        and np.array_equal(x.segments, y.segments) for x, y in zip(a, b))


def test_memo_gives_the_contacts_computed_afresh():
    """The live overlay's memo (`frame_contacts(memo=...)`): over a run of edits where one
    tube moves and the other does not (a whole object pair unchanged, reused), some
    vertices move alone (a few pairs' segments recomputed) and an object pair's pairs
    change, the contacts equal those computed without the memo, bit for bit."""
    memo: dict = {}
    objs, pos, poses = two_tubes(4, max_angle=170)
    tris = [scan.frame_triangles(o, p) for o, p in zip(objs, pos)]
    rng = np.random.default_rng(7)
    reused = [0]
    real = cg.pair_segments
    segmented = {"afresh": 0, "memo": 0}

    def spy(pa, ta, pb, tb, pairs):
        reused[0] += len(pairs)                        # triangle pairs segmented
        return real(pa, ta, pb, tb, pairs)

    cg.pair_segments = spy
    try:
        for step in range(8):
            if step % 3 == 1:                          # one tube's vertices move alone
                some = rng.choice(pos[1].shape[0], 6, replace=False)
                pos[1] = pos[1].copy()
                pos[1][some] += rng.normal(scale=0.01, size=(6, 3))
            elif step % 3 == 2:                        # the other tube is re-posed
                pose = procedural.random_pose(objs[0].rig, rng, max_angle=math.radians(170),
                                              scale_range=(0.8, 1.2))
                pos[0] = skinning.lbs_rig(objs[0].rig, Pose(pose.deform, poses[0].armature_world,
                                                            poses[0].mesh_world))
            tris = [scan.frame_triangles(o, p) for o, p in zip(objs, pos)]
            res = scan.query_frame(objs, pos, poses, self_collision=True, triangles=tris)
            assert res.pairs, step
            before = reused[0]
            want = cg.frame_contacts(objs, pos, tris, res.pairs)
            segmented["afresh"] += reused[0] - before
            before = reused[0]
            got = cg.frame_contacts(objs, pos, tris, res.pairs, memo=memo)
            segmented["memo"] += reused[0] - before
            assert _same_contacts(got, want), step
    finally:
        cg.pair_segments = real
    assert segmented["memo"] < 0.7 * segmented["afresh"]          # the memo was used


def test_polygon_bones_are_the_argmax_of_each_polygons_bone_sums():
    """The cached dominant bone per polygon equals the argmax of `_bone_sums` with each
    polygon as its own group: random weights, exact ties (the lowest bone wins) and
    polygons without any positive weight (bone 0)."""
    import dataclasses

    rig = procedural.tube_rig(rings=10, segments=8, n_bones=5, name="Dominant")
    rng = np.random.default_rng(2)
    w = rng.choice([0.0, 0.25, 0.5, 1.0], size=rig.weight_value.size)
    w[: rig.weight_value.size // 6] = 0.0                    # some vertices weigh nothing
    rig = dataclasses.replace(rig, weight_value=w)
    polys = np.arange(rig.n_polygons)
    want = np.argmax(cg._bone_sums(rig, polys, polys, polys.size), axis=1)
    assert np.array_equal(cg.polygon_bones(rig), want)
    assert (want == 0).any() and len(set(want.tolist())) > 2


@pytest.mark.parametrize("seed", [2, 4, 18])
def test_grouping_again_only_what_changed_equals_grouping_afresh(seed):
    """With the memo, a change of an object pair's pairs groups again only the contacts it
    can touch (`_group(last=...)`): over runs of random changes (pairs dropped, others
    brought back, joining contacts and splitting them), the contacts equal those grouped
    afresh, bit for bit, and fewer pairs were grouped. The grouping is a function of the
    pairs alone, so they are drawn at random among a few triangles (many contacts, many
    shared vertices), self pairs and pairs between the two tubes."""
    objs, pos, poses = two_tubes(seed, max_angle=170)
    tris = [scan.frame_triangles(o, p) for o, p in zip(objs, pos)]
    rng = np.random.default_rng(seed)
    full = []
    for i, j in ((0, 0), (0, 1), (1, 1)):
        a = rng.choice(tris[i].shape[0], 40, replace=False)
        b = rng.choice(tris[j].shape[0], 40, replace=False)
        p = np.stack([rng.choice(a, 20), rng.choice(b, 20)], axis=1)
        p = np.unique(np.sort(p, axis=1) if i == j else p, axis=0)
        full.append((i, j, p))
    grouped = {"afresh": 0, "memo": 0}
    real = cg._components_of

    def spy(oa, ob, same, ua, ub):
        grouped[mode] += ua.size
        return real(oa, ob, same, ua, ub)

    memo: dict = {}
    keep = [np.ones(len(p), dtype=bool) for _, _, p in full]
    counts = set()
    cg._components_of = spy
    try:
        for step in range(40):
            for k in keep:                         # a few pairs go, a few come back
                k[rng.choice(k.size, 2, replace=False)] ^= True
            pairs = [(i, j, p[k]) for (i, j, p), k in zip(full, keep)]
            mode = "afresh"
            want = cg.frame_contacts(objs, pos, tris, pairs)
            mode = "memo"
            got = cg.frame_contacts(objs, pos, tris, pairs, memo=memo)
            assert _same_contacts(got, want), step
            counts.add(len(want))
    finally:
        cg._components_of = real
    assert len(counts) > 3 and max(counts) > 8          # many contacts, joined and split
    assert grouped["memo"] < 0.9 * grouped["afresh"]
