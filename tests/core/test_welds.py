"""Welds hold per frame (core only): split vertices with the same rest position and weights
are one vertex only while they are drawn at the same position. A deformation the rig does
not describe (Corrective Smooth after the Armature, a shape key) can pull them apart; the
triangles on either side then cross like any others and must be reported.

* `frame_weld_ids` is None while every weld holds, and splits a parted weld by position;
* `parted_pairs` lists exactly the pairs adjacent by the build's ids and not by the frame's;
* `query_frame`'s self pairs equal an all-pairs brute force judged with the frame's ids, on
  a tube whose seam is split and then pulled apart (near the origin and 1 km away): the
  static ids would have dropped every crossing at the seam.
"""
import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning, welds
from skin_collide.core.rig import Rig

#: Why these rigs are refitted from the evaluated positions: their welds can part (under
#: skinning alone they cannot, and are not re-judged: `scan.weld_tolerance`).
DEFORMED = "a Corrective Smooth after the Armature modifier"


def book() -> Rig:
    """Two triangles sharing a corner by a weld: vertices 0 and 3 coincide at rest with the
    same (no) weights, as a glTF seam splits a vertex."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0],
                    [0, 0, 0], [0.2, 0.2, 1.0], [0.4, 0.1, 1.0]], dtype=float)
    V = pos.shape[0]
    return Rig("book", pos, np.array([[0, 1, 2], [3, 4, 5]]), np.arange(2),
               np.zeros(V + 1, np.int64), np.zeros(0, np.int32), np.zeros(0), [],
               np.zeros(0, np.int32), np.zeros((0, 4, 4)), np.zeros(0, bool),
               unsupported=[DEFORMED])


def test_frame_ids_follow_the_positions():
    rig = book()
    keys = welds.vertex_weld_ids(rig)
    assert keys[0] == keys[3]
    members, firsts = welds.shared_vertices(keys)
    assert sorted(members.tolist()) == [0, 3] and set(firsts.tolist()) == {0}
    assert welds.frame_weld_ids(keys, rig.rest_positions, members, firsts) is None
    assert scan.weld_tolerance(rig) == 0.0
    assert scan.weld_tolerance(procedural.tube_rig(rings=4, segments=4)) is None
    moved = rig.rest_positions.copy()
    moved[3] += (0.3, 0.3, -0.5)
    fk = welds.frame_weld_ids(keys, moved, members, firsts)
    assert fk is not None and fk[0] != fk[3]
    assert len(set(fk.tolist())) == 6
    np.testing.assert_array_equal(welds.parted_pairs(rig.triangles, keys, fk), [[0, 1]])


def test_a_crossing_at_a_parted_weld_is_reported():
    rig = book()
    obj = scan.prepare(rig)
    pos = rig.rest_positions.copy()
    pos[3:] += (0.3, 0.3, -0.5)              # B pierces A, its corner off A's
    res = scan.query_frame([obj], [pos], [None], self_collision=True)
    assert {tuple(p) for _, _, q in res.pairs for p in q.tolist()} == {(0, 1)}
    # Welded again (the corner back on A's): adjacent, not reported.
    pos[3] = pos[0]
    res = scan.query_frame([obj], [pos], [None], self_collision=True)
    assert res.n_pairs == 0


#: The first copy of `seamed_tube`'s split vertices (the tube's own come first).
SEAM_FROM = procedural.tube_rig(rings=10, segments=8, n_bones=3).n_vertices


def seamed_tube() -> Rig:
    """A tube whose vertices on one line along its length are split in two (the triangles
    on one side use the copies), with the same weights: a seam welded at build."""
    rig = procedural.tube_rig(rings=10, segments=8, n_bones=3)
    V = rig.n_vertices
    x = rig.rest_positions
    seam = np.flatnonzero(np.isclose(np.arctan2(x[:, 1], x[:, 0]), 0.0, atol=1e-9)
                          & (np.hypot(x[:, 0], x[:, 1]) > 1e-9))
    assert seam.size >= 5
    copy = {int(v): V + k for k, v in enumerate(seam)}
    tris = rig.triangles.copy()
    centre = x[tris].mean(axis=1)
    side = centre[:, 1] < 0                      # triangles below the seam use the copies
    for t in np.flatnonzero(side):
        tris[t] = [copy.get(int(v), int(v)) for v in tris[t]]
    pos = np.vstack([x, x[seam]])
    counts = np.diff(rig.weight_ptr)
    rows = [np.arange(rig.weight_ptr[v], rig.weight_ptr[v + 1]) for v in range(V)]
    rows += [rows[v] for v in seam]
    idx = np.concatenate(rows)
    ptr = np.zeros(pos.shape[0] + 1, np.int64)
    np.cumsum(np.r_[counts, counts[seam]], out=ptr[1:])
    return Rig("seamed", pos, tris, np.arange(tris.shape[0]), ptr, rig.weight_bone[idx],
               rig.weight_value[idx], rig.bone_names, rig.bone_parents, rig.bone_rest,
               rig.bone_deform, armature="arm", unsupported=[DEFORMED])


@pytest.mark.parametrize("far", [0.0, 1000.0])
def test_self_pairs_equal_brute_force_with_the_frames_welds(far):
    rig = seamed_tube()
    obj = scan.prepare(rig)
    keys = obj.vertex_keys
    assert np.unique(keys).size < rig.n_vertices          # the seam is welded at build
    rng = np.random.default_rng(7)
    seen_parted = 0
    for _ in range(6):
        pose = procedural.random_pose(rig, rng)
        pos = skinning.lbs_rig(rig, pose)
        # What skinning never does: the seam's copies pulled off their originals, as a
        # Corrective Smooth or a shape key may; the mesh then folds through itself.
        copies = np.arange(SEAM_FROM, rig.n_vertices)
        pos[copies] += rng.normal(scale=0.25, size=(copies.size, 3))
        pos += far
        fk = scan.frame_keys(obj, pos)
        assert fk is not None
        tris = rig.triangles
        truth = scan.brute_force_pairs(pos, tris, keys=fk[tris])
        res = scan.query_frame([obj], [pos], [None], self_collision=True)
        ours = np.unique(np.sort(np.concatenate([p for _, _, p in res.pairs])
                                 if res.pairs else np.zeros((0, 2), np.int64), axis=1), axis=0)
        assert {tuple(p) for p in ours.tolist()} == {tuple(p) for p in truth.tolist()}
        static = scan.brute_force_pairs(pos, tris, keys=keys[tris])
        seen_parted += len({tuple(p) for p in truth.tolist()} - {tuple(p) for p in static.tolist()})
    assert seen_parted > 0              # the poses did cross at the parted seam
