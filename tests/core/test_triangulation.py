"""Blender's per-frame split of quads (core.geometry.triangulation), the polygons on the
Rig, and bounds that hold for any split (pure numpy; the comparison with Blender's own
evaluated loop triangles is in test_triangulation_blender.py)."""
import math

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.bounds import refit, sphere_tree
from skin_collide.core.geometry import triangulation as tr
from skin_collide.core.rig import Rig
from skin_collide.core.storage import persist

KEEP = [[0, 1, 2], [0, 2, 3]]
CUT = [[0, 1, 3], [1, 2, 3]]


def flip_reference(q):
    """Blender's is_quad_flip_v3_first_third_fast, one quad at a time, every operation a
    float32 scalar operation in C's order (an independent, slow transcription)."""
    f = np.float32
    p = [[f(c) for c in v] for v in np.asarray(q, dtype=np.float32)]
    d12 = [p[1][k] - p[0][k] for k in range(3)]
    d13 = [p[2][k] - p[0][k] for k in range(3)]
    d14 = [p[3][k] - p[0][k] for k in range(3)]

    def cross(a, b):
        return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]

    a, b = cross(d12, d13), cross(d14, d13)
    return bool(((a[0] * b[0]) + (a[1] * b[1])) + (a[2] * b[2]) > f(0))


def quads(*qs):
    pos = np.concatenate([np.asarray(q, dtype=np.float64) for q in qs])
    return pos, np.arange(pos.shape[0], dtype=np.int32).reshape(-1, 4)


def folded_square(angle):
    """A unit square folded along its 0–2 diagonal by `angle` (0: flat)."""
    h = 1 / math.sqrt(2)
    # Diagonal 0–2 on the x axis; 1 and 3 on either side, 3 rotated about the diagonal.
    return [[-h, 0, 0], [0, -h, 0], [h, 0, 0], [0, h * math.cos(angle), h * math.sin(angle)]]


def test_planar_convex_quad_keeps_the_first_diagonal():
    pos, c = quads([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]])
    assert not tr.quad_flips(pos, c)[0]
    assert tr.split_quads(c, np.array([False]))[0].tolist() == KEEP


def test_concave_quad_is_cut_along_the_inner_diagonal():
    # A reflex corner at 1 or 3 puts the 0–2 diagonal outside the quad: cut 1–3.
    at3 = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0.8, 0.2, 0]]
    at1 = [[0, 0, 0], [0.2, 0.6, 0], [1, 1, 0], [0, 1, 0]]
    # A reflex corner at 0 or 2: the diagonal through it is inside, kept.
    at0 = [[0.3, 0.5, 0], [0, 0, 0], [1, 0, 0], [0, 1, 0]]
    at2 = [[1, 0, 0], [0, 1, 0], [0.3, 0.5, 0], [0, 0, 0]]
    pos, c = quads(at3, at1, at0, at2)
    assert tr.quad_flips(pos, c).tolist() == [True, True, False, False]
    assert [flip_reference(q) for q in pos.reshape(-1, 4, 3)] == [True, True, False, False]
    split = tr.split_quads(c, tr.quad_flips(pos, c))
    assert split[0].tolist() == CUT and split[2].tolist() == (c[2][KEEP]).tolist()


@pytest.mark.parametrize("degrees, flipped", [(0, False), (60, False), (89, False),
                                              (91, True), (150, True), (179, True)])
def test_folded_quad_flips_beyond_a_right_angle(degrees, flipped):
    # The two triangles of the 0–2 cut face away from each other past 90°.
    pos, c = quads(folded_square(math.radians(degrees)))
    assert tr.quad_flips(pos, c)[0] == flipped == flip_reference(pos)


def test_degenerate_quads_keep_the_first_diagonal():
    collapsed = [[0.3, 0.3, 0.3]] * 4
    on_diagonal = [[0, 0, 0], [0.5, 0.5, 0], [1, 1, 0], [0, 1, 0]]   # corner 1 on 0–2
    two_equal = [[0, 0, 0], [0, 0, 0], [1, 1, 0], [0, 1, 0]]
    pos, c = quads(collapsed, on_diagonal, two_equal)
    assert not tr.quad_flips(pos, c).any()


def test_float32_decision_matches_a_scalar_transcription_near_the_threshold():
    # Folds within a hair of 90° at awkward scales and offsets: the sign of the float32
    # dot product is decided by rounding, and must follow Blender's float32 sequence.
    rng = np.random.default_rng(3)
    qs = []
    for _ in range(3000):
        a = math.pi / 2 + rng.normal() * 1e-6
        q = np.array(folded_square(a)) * rng.uniform(0.01, 100) + rng.uniform(-50, 50, 3)
        qs.append(q)
    pos, c = quads(*qs)
    got = tr.quad_flips(pos, c)
    want = np.array([flip_reference(q) for q in np.asarray(qs)])
    assert np.array_equal(got, want)
    # The cases really sit on the threshold: float64 disagrees with float32 on some.
    p = pos[c]
    d12, d13, d14 = p[:, 1] - p[:, 0], p[:, 2] - p[:, 0], p[:, 3] - p[:, 0]
    f64 = np.einsum("ij,ij->i", np.cross(d12, d13), np.cross(d14, d13)) > 0
    assert (f64 != got).any() and got.any() and (~got).any()


def mixed_mesh():
    """A triangle, a bent quad, a pentagon, a flat quad: polygons of 3, 4, 5, 4 corners."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0],                       # triangle
                    [2, 0, 0], [3, 0, 0], [3, 1, 0], [2, 1, 0],             # quad 1
                    [4, 0, 0], [5, 0, 0], [5.5, 1, 0], [4.5, 2, 0], [4, 1, 0],  # pentagon
                    [6, 0, 0], [7, 0, 0], [7, 1, 0], [6, 1, 0]], float)    # quad 2
    poly_ptr = np.array([0, 3, 7, 12, 16])
    poly_verts = np.arange(16, dtype=np.int32)
    rest = np.array([[0, 1, 2], [3, 4, 5], [3, 5, 6], [7, 8, 9], [7, 9, 10], [7, 10, 11],
                     [12, 13, 14], [12, 14, 15]], np.int32)
    return pos, poly_ptr, poly_verts, rest, np.array([0, 1, 1, 2, 2, 2, 3, 3], np.int32)


def test_frame_triangles_resplit_only_quads_in_place():
    pos, poly_ptr, poly_verts, rest, tri_poly = mixed_mesh()
    rig = Rig("mixed", pos, rest, tri_poly, np.zeros(pos.shape[0] + 1, np.int64),
              np.zeros(0, np.int32), np.zeros(0), [], np.zeros(0, np.int32),
              np.zeros((0, 4, 4)), np.zeros(0, bool), poly_ptr=poly_ptr, poly_verts=poly_verts)
    table = tr.quads_of(rig)
    assert table.first_tri.tolist() == [1, 6] and table.has_ngons
    assert np.array_equal(tr.frame_triangles(rig, pos), rest)
    bent = pos.copy()
    bent[6] = [2.8, 0.3, 0.0]          # corner 3 of quad 1 goes reflex: 0–2 is outside
    got = tr.frame_triangles(rig, bent)
    assert got[1:3].tolist() == [[3, 4, 6], [4, 5, 6]]
    keep = np.ones(8, bool)
    keep[1:3] = False
    assert np.array_equal(got[keep], rest[keep])          # triangle, pentagon, flat quad
    assert got.dtype == np.int32


def test_fan_polygons_recover_the_tube_loops():
    rig = procedural.tube_rig(rings=4, segments=6)
    verts, faces = procedural.tube_geometry(4, 6, 2.0, 0.25)
    assert rig.n_polygons == len(faces)
    assert np.array_equal(rig.poly_verts, np.concatenate([np.array(f) for f in faces]))
    assert np.array_equal(np.diff(rig.poly_ptr), [len(f) for f in faces])


def test_rig_validates_polygons():
    rig = procedural.tube_rig(rings=3, segments=5)
    fields = dict(name="t", rest_positions=rig.rest_positions, triangles=rig.triangles,
                  tri_polygon=rig.tri_polygon, weight_ptr=rig.weight_ptr,
                  weight_bone=rig.weight_bone, weight_value=rig.weight_value,
                  bone_names=rig.bone_names, bone_parents=rig.bone_parents,
                  bone_rest=rig.bone_rest, bone_deform=rig.bone_deform)
    Rig(**fields, poly_ptr=rig.poly_ptr, poly_verts=rig.poly_verts)
    bad_vert = rig.poly_verts.copy()
    bad_vert[0] = rig.n_vertices
    with pytest.raises(ValueError, match="polygon vertex"):
        Rig(**fields, poly_ptr=rig.poly_ptr, poly_verts=bad_vert)
    with pytest.raises(ValueError, match="n - 2 triangles"):
        Rig(**fields, poly_ptr=rig.poly_ptr[:-1], poly_verts=rig.poly_verts[:rig.poly_ptr[-2]])
    shuffled = dict(fields, tri_polygon=rig.tri_polygon[::-1].copy())
    with pytest.raises(ValueError, match="contiguous"):
        Rig(**shuffled, poly_ptr=rig.poly_ptr, poly_verts=rig.poly_verts)


def test_polygons_persist_and_enter_the_signature():
    rig = procedural.tube_rig(rings=4, segments=6)
    obj = scan.prepare(rig)
    back = persist.from_bytes(persist.to_bytes(obj))
    assert np.array_equal(back.rig.poly_ptr, rig.poly_ptr)
    assert np.array_equal(back.rig.poly_verts, rig.poly_verts)
    assert np.array_equal(back.vertex_keys, obj.vertex_keys)
    assert persist.rig_signature(back.rig) == persist.rig_signature(rig)
    rolled = rig.poly_verts.copy()
    a, b = rig.poly_ptr[0], rig.poly_ptr[1]
    rolled[a:b] = np.roll(rolled[a:b], 1)          # same vertices, other loop start
    other = Rig(rig.name, rig.rest_positions, rig.triangles, rig.tri_polygon, rig.weight_ptr,
                rig.weight_bone, rig.weight_value, rig.bone_names, rig.bone_parents,
                rig.bone_rest, rig.bone_deform, poly_ptr=rig.poly_ptr, poly_verts=rolled)
    assert persist.rig_signature(other) != persist.rig_signature(rig)


@pytest.fixture(scope="module")
def twisted():
    """A tube in strong poses (170° twists, scales 0.5–2): quads fold past 90°."""
    rig = procedural.tube_rig(rings=16, segments=10, n_bones=6)
    obj = scan.prepare(rig)
    rng = np.random.default_rng(11)
    poses = [procedural.random_pose(rig, rng, max_angle=math.radians(170),
                                    scale_range=(0.5, 2.0)) for _ in range(6)]
    return rig, obj, poses


def test_node_vertex_sets_hold_whole_polygons(twisted):
    rig, obj, _ = twisted
    tree = obj.data.tree
    for n in range(tree.n_nodes):
        if tree.leaf_tri[n] < 0:
            continue
        verts = set(tree.node_verts[tree.node_vert_ptr[n]:tree.node_vert_ptr[n + 1]].tolist())
        p = rig.tri_polygon[tree.leaf_tri[n]]
        assert verts == set(rig.poly_verts[rig.poly_ptr[p]:rig.poly_ptr[p + 1]].tolist())
    # A parent's set contains its children's.
    for n in np.nonzero(tree.first_child >= 0)[0][:200]:
        mine = set(tree.node_verts[tree.node_vert_ptr[n]:tree.node_vert_ptr[n + 1]].tolist())
        for k in range(tree.first_child[n], tree.first_child[n] + tree.child_count[n]):
            assert set(tree.node_verts[tree.node_vert_ptr[k]:tree.node_vert_ptr[k + 1]].tolist()) <= mine
    # Without polygons the sets are the triangles' own vertices (the old build).
    plain = sphere_tree.build(rig.rest_positions, rig.triangles)
    assert plain.node_verts.size < tree.node_verts.size


def test_refitted_spheres_enclose_every_polygon_vertex(twisted):
    rig, obj, poses = twisted
    tree = obj.data.tree
    seg = np.repeat(np.arange(tree.n_nodes), np.diff(tree.node_vert_ptr))
    flipped = 0
    for pose in poses:
        pos = skinning.lbs_rig(rig, pose)
        tris = scan.frame_triangles(obj, pos)
        flipped += int(np.any(tris != rig.triangles, axis=1).sum())
        fr = refit.frame_transforms(pose, tree)
        c, r = refit.refit_on_demand(tree, obj.data.bounds, fr, np.arange(tree.n_nodes))
        d = np.linalg.norm(pos[tree.node_verts] - c[seg], axis=1)
        assert (d <= r[seg]).all()
        # Leaves from the frame's triangle, inner nodes bottom-up from them: each encloses
        # its node's drawn triangles.
        bc, br = refit.refit_bottom_up(tree, tris, pos)
        leaves = np.nonzero(tree.leaf_tri >= 0)[0]
        lt = tris[tree.leaf_tri[leaves]]
        d = np.linalg.norm(pos[lt] - bc[leaves][:, None], axis=2)
        assert (d <= br[leaves][:, None] * (1 + 1e-12)).all()
        anc = tree.parent[leaves]
        while (anc >= 0).any():
            ok = anc >= 0
            d = np.linalg.norm(pos[lt[ok]] - bc[anc[ok]][:, None], axis=2)
            assert (d <= br[anc[ok]][:, None] * (1 + 1e-9) + 1e-12).all()
            anc = np.where(ok, tree.parent[np.maximum(anc, 0)], -1)
    assert flipped > 0, "the poses never re-split a quad: the test would prove nothing"


def test_queries_use_the_frame_triangles(twisted):
    rig, obj, poses = twisted
    changed = 0
    for pose in poses:
        pos = skinning.lbs_rig(rig, pose)
        tris = scan.frame_triangles(obj, pos)
        res = scan.query_frame([obj], [pos], [pose], self_collision=True)
        assert np.array_equal(res.triangles[0], tris)
        got = {tuple(p) for _, _, q in res.pairs for p in q.tolist()}
        want = {tuple(p) for p in scan.brute_force_pairs(pos, tris, keys=obj.vertex_keys[tris]).tolist()}
        assert got == want
        old = {tuple(p) for p in scan.brute_force_pairs(
            pos, rig.triangles, keys=obj.vertex_keys[rig.triangles]).tolist()}
        changed += got != old
    assert changed > 0, "no pose where the rest split answers differently"


def test_frame_triangles_kept_between_calls_equal_a_fresh_decision():
    """`frame_triangles` keeps the last call's float32 rows and flips and decides again
    only the quads with a corner that changed: after edits moving a few vertices (folding
    quads past a right angle and back), all of them, or none, and calls alternating
    between two position sets, the triangles equal a fresh decision of every quad."""
    rig = procedural.tube_rig(rings=16, segments=12, n_bones=4, name="Kept")
    table = tr.quad_table(rig.poly_ptr, rig.poly_verts)
    rng = np.random.default_rng(11)
    pos = rig.rest_positions.copy()
    other = pos + rng.normal(scale=0.05, size=pos.shape)
    flipped_any = False
    for step in range(30):
        if step % 7 == 3:
            cur = other                                   # another set: most moved
        else:
            some = rng.choice(pos.shape[0], 1 + step % 4, replace=False)
            pos = pos.copy()
            pos[some] += rng.normal(scale=0.3, size=(some.size, 3))
            cur = pos if step % 5 else pos.copy()         # nothing or a few moved
        got = tr.frame_triangles_from(rig.triangles, table, cur)
        fresh = tr.frame_triangles_from(rig.triangles, tr.quad_table(rig.poly_ptr,
                                                                    rig.poly_verts), cur)
        assert np.array_equal(got, fresh), step
        flipped_any |= bool(tr.quad_flips(cur, table.corners).any())
    assert flipped_any
