"""The face stage of clearance (`core.query.near_faces`): units made from a mesh's polygons
(quads and triangles whole, a larger polygon's triangles each its own), and the near
pairs decided face by face against the triangle query (`core.query.near_pairs`, itself judged
against an independent brute force in test_near_pairs.py and test_clearance_stage.py):
the same polygon pairs within d, the same intersecting triangle pairs, on procedural
tubes (quads and two 12-gon caps) in strong random poses 1 km from the origin, with the
large polygons split differently from the rest. Pure numpy."""
from __future__ import annotations

import math

import numpy as np
import pytest

from skin_collide.core import procedural, skinning
from skin_collide.core.query.near_faces import build_faces, face_pairs, unit_triangle_pairs
from skin_collide.core.query.near_pairs import cross_tree, near_and_intersecting

FAR = np.array([1000.0, -640.0, 310.0])


def faces_of(rig):
    return build_faces(rig.rest_positions, rig.triangles, rig.tri_polygon, rig.poly_ptr,
                       rig.poly_verts)


def test_every_triangle_is_in_one_unit_and_inside_its_corners():
    rig = procedural.tube_rig(rings=9, segments=10, n_bones=3)
    f = faces_of(rig)
    n = np.diff(rig.poly_ptr)
    assert (n > 4).sum() == 2                                  # the caps
    owner = np.full(rig.n_triangles, -1)
    for u in range(f.n_units):
        tris = f.unit_tris[f.tri_ptr[u]:f.tri_ptr[u + 1]]
        assert tris.size and (owner[tris] == -1).all()
        owner[tris] = u
        assert set(rig.triangles[tris].ravel().tolist()) <= set(f.corners[u].tolist())
        assert (rig.tri_polygon[tris] == f.unit_poly[u]).all()
    assert (owner >= 0).all()
    # A large polygon's triangles are units of their own, their corners the frame's.
    big = rig.tri_polygon[f.ngon_tris]
    assert (n[big] > 4).all() and f.ngon_units.size == int(((n - 2) * (n > 4)).sum())
    other = rig.triangles.copy()
    other[f.ngon_tris] = other[f.ngon_tris][:, [1, 2, 0]]
    c = f.frame_corners(other)
    assert (c[f.ngon_units, :3] == other[f.ngon_tris]).all()
    ta, tb, row = unit_triangle_pairs(f, np.array([0, f.ngon_units[0]]), f,
                                      np.array([1, 2]))
    assert sorted(zip(ta.tolist(), tb.tolist())) == sorted(
        (a, b) for k, (x, y) in enumerate([(0, 1), (f.ngon_units[0], 2)])
        for a in f.unit_tris[f.tri_ptr[x]:f.tri_ptr[x + 1]].tolist()
        for b in f.unit_tris[f.tri_ptr[y]:f.tri_ptr[y + 1]].tolist()) and (np.diff(row) >= 0).all()


def _scene(seed: int):
    rng = np.random.default_rng(seed)
    a = procedural.tube_rig(rings=12, segments=11, n_bones=4)
    b = procedural.tube_rig(rings=11, segments=10, n_bones=4, length=1.7, radius=0.2)
    pa = skinning.lbs_rig(a, procedural.random_pose(a, rng, max_angle=math.radians(170),
                                                    scale_range=(0.7, 1.4)))
    pb = skinning.lbs_rig(b, procedural.random_pose(b, rng, max_angle=math.radians(170),
                                                    scale_range=(0.7, 1.4)))
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    pb = pb - pb.mean(axis=0) + pa.mean(axis=0) + 0.05 * u          # overlapping a little
    tb = b.triangles.copy()
    big = np.flatnonzero(np.diff(b.poly_ptr)[b.tri_polygon] > 4)
    tb[big] = tb[big][:, [1, 2, 0]]                 # the caps' triangles turned: the same faces
    return (a, pa + FAR, a.triangles), (b, pb + FAR, tb)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("d", [0.0, 0.01, 0.05, 0.2])
def test_face_pairs_equal_the_triangle_query_per_polygon(seed, d):
    (ra, pa, ta), (rb, pb, tb) = _scene(seed)
    fa, fb = faces_of(ra), faces_of(rb)
    trees = (cross_tree(ra.rest_positions, ra.triangles), cross_tree(rb.rest_positions, rb.triangles))
    (pairs, dist, *_), hits = near_and_intersecting(pa, ta, pb, tb, d, trees)
    for with_hits in (True, False):
        fp = face_pairs(pa, ta, fa, pb, tb, fb, d, with_hits)
        near = fp.tri.near
        got_hits = near.pairs[near.intersecting]
        rows = near.pairs[~near.intersecting]
        mine = set(zip(fa.unit_poly[fp.units[:, 0]].tolist(), fb.unit_poly[fp.units[:, 1]].tolist()))
        mine |= set(zip(ra.tri_polygon[rows[:, 0]].tolist(), rb.tri_polygon[rows[:, 1]].tolist()))
        want = set(zip(ra.tri_polygon[pairs[:, 0]].tolist(), rb.tri_polygon[pairs[:, 1]].tolist()))
        assert mine == want
        if with_hits:
            assert {tuple(p) for p in got_hits.tolist()} == {tuple(p) for p in hits.tolist()}
            assert hits.size                       # the scene does cross
        else:
            assert not got_hits.size
        # A face row's bounds hold for the smallest distance of its triangle pairs.
        xa, xb, row = unit_triangle_pairs(fa, fp.units[:, 0], fb, fp.units[:, 1])
        if xa.size:
            from skin_collide.core.geometry.distance import pair_distances

            r = pair_distances(pa, ta, xa, pb, tb, xb)
            least = np.full(fp.units.shape[0], np.inf)
            np.minimum.at(least, row, r.dist)
            tol = 1e-9
            assert (fp.lower <= least + tol).all() and (least <= fp.upper + tol).all()
            assert (fp.upper <= d).all()


def test_a_polygon_whose_triangles_leave_its_corners_is_split_into_triangle_units():
    """Topology handed in otherwise than Blender's (a quad's triangles using a vertex
    that is not among its corners): its triangles become units of their own, so that
    every unit's corners still hold its triangles."""
    pos = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [2, 0, 0], [2, 1, 0.]])
    tris = np.array([[0, 1, 2], [0, 2, 3], [1, 4, 5], [1, 5, 2]])
    tri_poly = np.array([0, 0, 1, 1])
    ptr = np.array([0, 4, 8])
    verts = np.array([0, 1, 2, 3, 1, 4, 5, 3])          # polygon 1 names 3, not 2
    f = build_faces(pos, tris, tri_poly, ptr, verts)
    assert f.n_units == 3 and sorted(f.unit_poly.tolist()) == [0, 1, 1]
    for u in range(f.n_units):
        for t in f.unit_tris[f.tri_ptr[u]:f.tri_ptr[u + 1]].tolist():
            assert set(tris[t].tolist()) <= set(f.frame_corners(tris)[u].tolist())
