"""The clearance stage of a frame (`core.scan.clearance`, `query_frame(..., clearance=d)`,
issue 42) against an independent brute force over every triangle pair of two objects:
exact float64 distances by Ericson's closest-point routines (point–triangle by Voronoi
regions, segment–segment by clamped parameters), written here and sharing nothing with
`core.geometry.distance`. Procedural rigs in strong random poses, 1 km from the origin:
a layered character (a copy pushed out along the normals, same weights, same armature)
and two characters passing close; a character split into two parts along a seam.

Judged, for the stage's rows (polygon pairs) and for their triangle pairs: no pair within
d (beyond the tolerance) missed, every distance within 1e-9 of the character's size of the
brute force (a polygon pair's the smallest of its triangle pairs'), none farther than d
(beyond it) reported, the closest points on their triangles and as far apart as the
distance; no intersecting pair and no pair sharing a seam vertex reported."""
from __future__ import annotations

import math

import numpy as np
import pytest
from rig_parts import split_rig, vertex_normals

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.rig import Pose, Rig
from skin_collide.core.triangles import triangle_pairs_intersect

FAR = np.array([1000.0, -640.0, 310.0])      # about 1.2 km from the origin


# -- the independent oracle ---------------------------------------------------------------

def _dot(a, b):
    return np.einsum("...i,...i->...", a, b)


def point_triangle(p, a, b, c):
    """(K, 3) closest points of triangles (a, b, c) to points p (Ericson 5.1.5), all (K, 3)."""
    ab, ac, ap = b - a, c - a, p - a
    d1, d2 = _dot(ab, ap), _dot(ac, ap)
    bp = p - b
    d3, d4 = _dot(ab, bp), _dot(ac, bp)
    cp = p - c
    d5, d6 = _dot(ab, cp), _dot(ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2
    with np.errstate(divide="ignore", invalid="ignore"):
        den = va + vb + vc
        v = vb / den
        w = vc / den
        out = a + ab * v[:, None] + ac * w[:, None]           # inside the face
        # Edge regions (later assignments win over earlier, so go from face to vertex).
        m = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
        t = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        out = np.where(m[:, None], b + (c - b) * t[:, None], out)
        m = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
        t = d2 / (d2 - d6)
        out = np.where(m[:, None], a + ac * t[:, None], out)
        m = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
        t = d1 / (d1 - d3)
        out = np.where(m[:, None], a + ab * t[:, None], out)
    out = np.where(((d6 >= 0) & (d5 <= d6))[:, None], c, out)
    out = np.where(((d3 >= 0) & (d4 <= d3))[:, None], b, out)
    out = np.where(((d1 <= 0) & (d2 <= 0))[:, None], a, out)
    bad = ~np.isfinite(out).all(axis=1)                       # degenerate: its edges decide
    if bad.any():
        out[bad] = a[bad]
    return out


def segment_segment(p1, q1, p2, q2):
    """(K,) squared distances between segments p1q1 and p2q2 (Ericson 5.1.9)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = _dot(d1, d1), _dot(d2, d2), _dot(d2, r)
    c, b = _dot(d1, r), _dot(d1, d2)
    den = a * e - b * b
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(den > 0, np.clip((b * f - c * e) / den, 0, 1), 0.0)
        t = np.where(e > 0, (b * s + f) / e, 0.0)
        s = np.where(t < 0, np.where(a > 0, np.clip(-c / a, 0, 1), 0.0), s)
        s = np.where(t > 1, np.where(a > 0, np.clip((b - c) / a, 0, 1), 0.0), s)
        t = np.clip(t, 0, 1)
    diff = p1 + d1 * s[:, None] - (p2 + d2 * t[:, None])
    return _dot(diff, diff)


def brute_distances(pa, ta, pb, tb):
    """(Ta, Tb) float64 distance of every triangle pair, meaningful for disjoint pairs:
    the minimum of the 6 vertex–triangle and 9 edge–edge distances, each pair translated
    to its first vertex first (so 1 km away costs no precision)."""
    ia, ib = np.meshgrid(np.arange(ta.shape[0]), np.arange(tb.shape[0]), indexing="ij")
    return brute_pair_distances(pa, ta, ia.ravel(), pb, tb, ib.ravel()).reshape(
        ta.shape[0], tb.shape[0])


def brute_pair_distances(pa, ta, ia, pb, tb, ib):
    """(K,) float64 `brute_distances` of the pairs (ta[ia[k]], tb[ib[k]])."""
    A = pa[ta[ia]]
    B = pb[tb[ib]]
    o = A[:, 0:1].copy()
    A, B = A - o, B - o
    best = np.full(ia.size, np.inf)
    for k in range(3):
        q = point_triangle(A[:, k], B[:, 0], B[:, 1], B[:, 2])
        best = np.minimum(best, _dot(A[:, k] - q, A[:, k] - q))
        q = point_triangle(B[:, k], A[:, 0], A[:, 1], A[:, 2])
        best = np.minimum(best, _dot(B[:, k] - q, B[:, k] - q))
    for i in range(3):
        for j in range(3):
            best = np.minimum(best, segment_segment(A[:, i], A[:, (i + 1) % 3],
                                                    B[:, j], B[:, (j + 1) % 3]))
    return np.sqrt(best)


def on_triangle(p, a, b, c):
    """(K,) distance of points p to their triangles (the oracle's point–triangle)."""
    q = point_triangle(p, a, b, c)
    return np.linalg.norm(p - q, axis=1)


# -- the scenes ---------------------------------------------------------------------------

def with_positions(rig: Rig, pos, name: str, armature: str) -> Rig:
    return Rig(name, pos, rig.triangles, rig.tri_polygon, rig.weight_ptr, rig.weight_bone,
               rig.weight_value, rig.bone_names, rig.bone_parents, rig.bone_rest,
               rig.bone_deform, armature=armature)


def layered(seed: int, rings: int = 14, segments: int = 12):
    """A body and a garment: the body pushed out along its rest normals by 0.5% of its
    height (2), skinned to the same armature, in one strong random pose."""
    body = procedural.tube_rig(rings=rings, segments=segments, n_bones=5, name="body")
    shirt = with_positions(body, body.rest_positions + 0.01 * vertex_normals(body.rest_positions,
                                                                       body.triangles),
                           "shirt", "rig")
    body = with_positions(body, body.rest_positions, "body", "rig")
    pose = procedural.random_pose(body, np.random.default_rng(seed), max_angle=math.radians(150),
                                  scale_range=(0.7, 1.4))
    pose = Pose(pose.deform, pose.armature_world, pose.mesh_world)
    rigs = [body, shirt]
    return rigs, [skinning.lbs_rig(r, pose) + FAR for r in rigs], [pose, pose]


def passing(seed: int):
    """Two characters on armatures of their own, each strongly posed, the second moved so
    that its nearest vertex lies about 1% of the height from the first."""
    rng = np.random.default_rng(seed)
    shapes = [procedural.tube_rig(rings=13, segments=11, n_bones=5),
              procedural.tube_rig(rings=12, segments=10, n_bones=4, length=1.7, radius=0.2)]
    rigs = [with_positions(r, r.rest_positions, n, arm)
            for r, n, arm in zip(shapes, ("a", "b"), ("A", "B"))]
    poses = [procedural.random_pose(r, rng, max_angle=math.radians(170), scale_range=(0.7, 1.4))
             for r in rigs]
    pa, pb = (skinning.lbs_rig(r, p) for r, p in zip(rigs, poses))
    # B slid along a direction until its closest vertex is ~0.02 from A's vertices.
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    pb = pb - pb.mean(axis=0) + pa.mean(axis=0) + 3.0 * u
    for _ in range(60):
        gap = np.min(np.linalg.norm(pb[:, None] - pa[None], axis=2))
        if gap < 0.03:
            break
        pb = pb - u * 0.5 * gap
    return rigs, [pa + FAR, pb + FAR], poses


def check(objects, positions, d, size, excluded=None):
    """Run the stage and judge it against the brute force: its rows (polygon pairs at
    the smallest distance of their triangle pairs) and their triangle pairs
    (`NearResult.triangle_rows`); returns the near triangle pairs count."""
    res = scan.query_frame(objects, positions, [None] * len(objects), clearance=d)
    tris = res.triangles
    got = {(i, j): r for i, j, r in res.near}
    tol = 1e-9 * size
    total = hits = 0
    for i in range(len(objects)):
        for j in range(i + 1, len(objects)):
            pa, pb, ta, tb = positions[i], positions[j], tris[i], tris[j]
            D = brute_distances(pa, ta, pb, tb)
            ia, ib = np.nonzero(D <= d + tol)
            hit = triangle_pairs_intersect(pa, ta, ia, pb, tb, ib)
            keep = ~hit
            if excluded is not None:
                seam = excluded(i, j, ia, ib)
                keep &= ~seam
                hit &= ~seam
            # A polygon pair with an intersecting triangle pair is an intersecting one,
            # never a near one: none of its triangle pairs counts.
            qa_of, qb_of = objects[i].rig.tri_polygon, objects[j].rig.tri_polygon
            crossing = set(zip(qa_of[ia[hit]].tolist(), qb_of[ib[hit]].tolist()))
            if crossing:
                keep &= np.array([(x, y) not in crossing for x, y in
                                  zip(qa_of[ia].tolist(), qb_of[ib].tolist())], dtype=bool)
            hits += len(crossing)
            maybe = {(a, b) for a, b in zip(ia[keep].tolist(), ib[keep].tolist())}
            must = {(a, b) for a, b in maybe if D[a, b] <= d - tol}
            r = got.get((i, j))
            check_polygons(objects[i].rig, objects[j].rig, r, D, maybe, must, d, tol,
                           (pa, ta, pb, tb))
            t = None if r is None else r.triangle_rows(d)
            pairs = set() if t is None else {tuple(p) for p in t.pairs.tolist()}
            assert must <= pairs, f"missed {len(must - pairs)} pairs within d"
            assert pairs <= maybe, f"{len(pairs - maybe)} pairs reported beyond d or intersecting"
            if t is None:
                continue
            total += len(pairs)
            # Rows the bounds decided carry an upper bound within d and a lower one.
            want = D[t.pairs[:, 0], t.pairs[:, 1]]
            assert (t.lower <= want + tol).all() and (want <= t.dist + tol).all()
            assert (t.dist <= d + tol).all()
            np.testing.assert_allclose(t.dist[t.known], want[t.known], rtol=0, atol=tol)
            # Every row's points: a closest pair where known, else the corners `dist`
            # bounds (made only when read).
            qa, qb = t.points(np.arange(t.pairs.shape[0]))
            np.testing.assert_allclose(np.linalg.norm(qa - qb, axis=1), t.dist, rtol=0, atol=tol)
            A, B = pa[ta[t.pairs[:, 0]]], pb[tb[t.pairs[:, 1]]]
            assert (qa[~t.known, None] == A[~t.known]).all(axis=2).any(axis=1).all()
            assert (qb[~t.known, None] == B[~t.known]).all(axis=2).any(axis=1).all()
            t = t.settled()
            assert t.known.all()
            np.testing.assert_allclose(t.dist, D[t.pairs[:, 0], t.pairs[:, 1]], rtol=0, atol=tol)
            np.testing.assert_allclose(np.linalg.norm(t.point_a - t.point_b, axis=1), t.dist,
                                       rtol=0, atol=tol)
            A, B = pa[ta[t.pairs[:, 0]]], pb[tb[t.pairs[:, 1]]]
            assert on_triangle(t.point_a, *A.transpose(1, 0, 2)).max() <= tol
            assert on_triangle(t.point_b, *B.transpose(1, 0, 2)).max() <= tol
    return total, res


def check_polygons(rig_a, rig_b, r, D, maybe, must, d, tol, geometry):
    """The stage's rows against the brute force: every polygon pair with a triangle pair
    of `must` is a row, every row has one of `maybe`; each row's bounds hold for the
    smallest distance of its triangle pairs in `maybe` (the pairs that count), its
    points are that far apart, and once settled it is that distance, its points on the
    two polygons' triangles."""
    pa, ta, pb, tb = geometry
    qa_of, qb_of = rig_a.tri_polygon, rig_b.tri_polygon
    best: dict = {}
    for a, b in maybe:
        key = (int(qa_of[a]), int(qb_of[b]))
        best[key] = min(best.get(key, np.inf), D[a, b])
    need = {(int(qa_of[a]), int(qb_of[b])) for a, b in must}
    rows = set() if r is None else {tuple(p) for p in r.polys.tolist()}
    assert need <= rows, f"missed {len(need - rows)} polygon pairs within d"
    assert rows <= set(best), f"{len(rows - set(best))} polygon pairs reported beyond d"
    if r is None:
        return
    assert (np.diff(r.polys[:, 0] * (r.polys[:, 1].max() + 1) + r.polys[:, 1]) > 0).all()
    want = np.array([best[tuple(p)] for p in r.polys.tolist()])
    assert (r.lower <= want + tol).all() and (want <= r.dist + tol).all()
    assert (r.dist <= d + tol).all()
    np.testing.assert_allclose(r.dist[r.known], want[r.known], rtol=0, atol=tol)
    qa, qb = r.points(np.arange(r.polys.shape[0]))
    np.testing.assert_allclose(np.linalg.norm(qa - qb, axis=1), r.dist, rtol=0, atol=tol)
    r.settled()
    assert r.known.all()
    np.testing.assert_allclose(r.dist, want, rtol=0, atol=tol)
    np.testing.assert_allclose(np.linalg.norm(r.point_a - r.point_b, axis=1), r.dist,
                               rtol=0, atol=tol)
    for pts, pos, tri, own, col in ((r.point_a, pa, ta, qa_of, 0), (r.point_b, pb, tb, qb_of, 1)):
        off = np.full(pts.shape[0], np.inf)
        for t in range(tri.shape[0]):
            mine = r.polys[:, col] == own[t]
            if mine.any():
                T = pos[tri[t]]
                off[mine] = np.minimum(off[mine], on_triangle(
                    pts[mine], *(np.repeat(T[None, k], mine.sum(), axis=0) for k in range(3))))
        assert off.max() <= tol, "a closest point off its polygon"


@pytest.mark.parametrize("seed", range(4))
def test_layered_character_in_strong_poses_far_away(seed):
    rigs, positions, _ = layered(seed)
    objects = [scan.prepare(r) for r in rigs]
    for d in (0.02, 0.004):           # 1% and 0.2% of the height (the layer is 0.5% away)
        n, _ = check(objects, positions, d, 2.0)
        assert n > 0


@pytest.mark.parametrize("seed", range(4))
def test_two_characters_passing_close(seed):
    rigs, positions, _ = passing(seed)
    objects = [scan.prepare(r) for r in rigs]
    n, _ = check(objects, positions, 0.02, 2.0)
    assert n > 0


@pytest.mark.parametrize("seed", range(4))
def test_a_polygon_pair_is_intersecting_or_near_never_both(seed):
    """Issue 55: a polygon pair with an intersecting triangle pair is an intersecting one;
    none of its other triangle pairs makes it a near one too. On every path: the scan's
    one traversal (fold), the live overlay's two stages under a budget, and the stage
    alone beside another query's intersections (`clearance_frame`, Blender's BVHTree).
    The layered character in strong poses crosses its layer, so the rule has work."""
    rigs, positions, _ = layered(seed)
    objects = [scan.prepare(r) for r in rigs]
    d = 0.02
    qa_of, qb_of = rigs[0].tri_polygon, rigs[1].tri_polygon

    def crossing(pairs):
        return {(int(qa_of[a]), int(qb_of[b])) for i, j, p in pairs if (i, j) == (0, 1)
                for a, b in p.tolist()}

    def near_polys(near):
        return {tuple(x) for i, j, r in near for x in r.polys.tolist()}

    whole = scan.query_frame(objects, positions, [None, None], clearance=d)
    live = scan.query_frame(objects, positions, [None, None], clearance=d,
                            clearance_limit=10 ** 9)
    alone = scan.clearance_frame(objects, positions, [None, None], d,
                                 intersecting=whole.pairs)
    hits = crossing(whole.pairs)
    assert hits and crossing(live.pairs) == hits
    # Without the rule some near rows would be crossing polygon pairs: the raw stage's.
    raw = scan.clearance_frame(objects, positions, [None, None], d)
    assert near_polys(raw) & hits
    for res in (whole.near, live.near, alone):
        got = near_polys(res)
        assert not got & hits
        assert got == near_polys(raw) - hits        # nothing else dropped
    # A kept row keeps its parts: its settled distance is the raw row's.
    for (_, _, a), (_, _, b) in zip(raw, whole.near):
        code_a = a.polys[:, 0] * (a.polys[:, 1].max() + 1) + a.polys[:, 1]
        code_b = b.polys[:, 0] * (a.polys[:, 1].max() + 1) + b.polys[:, 1]
        at = np.searchsorted(code_a, code_b)
        np.testing.assert_array_equal(a.settled().dist[at], b.settled().dist)


def test_no_clearance_no_stage_and_bad_clearance_refused():
    rigs, positions, _ = layered(0)
    objects = [scan.prepare(r) for r in rigs]
    assert scan.query_frame(objects, positions, [None, None]).near == []
    for bad in (-1e-3, float("nan"), float("inf")):
        with pytest.raises(ValueError):
            scan.query_frame(objects, positions, [None, None], clearance=bad)


def test_far_apart_objects_have_no_near_pairs():
    rigs, positions, _ = layered(1)
    objects = [scan.prepare(r) for r in rigs]
    positions = [positions[0], positions[1] + np.array([50.0, 0, 0])]
    assert scan.query_frame(objects, positions, [None, None], clearance=0.02).near == []


@pytest.mark.parametrize("seed", range(3))
def test_parts_along_a_seam_skip_pairs_sharing_a_seam_vertex(seed):
    """A character in two parts: pairs sharing a seam vertex touch by construction and are
    not reported; every other pair within d is (the seam rule of docs/clearance.md)."""
    rig = procedural.tube_rig(rings=14, segments=12, n_bones=5)
    parts = split_rig(rig, "part", "rig")
    pose = procedural.random_pose(parts[0], np.random.default_rng(seed),
                                  max_angle=math.radians(120), scale_range=(0.8, 1.25))
    objects = [scan.prepare(r) for r in parts]
    positions = [skinning.lbs_rig(r, pose) + FAR for r in parts]
    # The upper part's vertices a hair (1e-9) off, as modifiers leave a seam: its pairs
    # are then near, not touching, and only the seam rule leaves them out.
    positions[1] = positions[1] + np.random.default_rng(seed).normal(scale=1e-9,
                                                                     size=positions[1].shape)
    ids = scan.seam_ids(objects)
    assert ids[0] is not None and set(ids[0].tolist()) & set(ids[1].tolist())

    res = scan.query_frame(objects, positions, [pose, pose], clearance=0.2)
    tris = res.triangles          # the frame's (quads re-split as drawn)

    def shares_seam(i, j, ia, ib):
        ka = ids[i][tris[i][ia]]
        kb = ids[j][tris[j][ib]]
        return np.any(ka[:, :, None] == kb[:, None, :], axis=(1, 2))

    for i, j, r in res.near:
        t = r.triangle_rows(0.2)
        assert not shares_seam(i, j, t.pairs[:, 0], t.pairs[:, 1]).any()
    n, _ = check(objects, positions, 0.2, 2.0, excluded=shares_seam)
    assert n > 0


def test_near_contacts_partition_the_polygon_pairs_at_their_minimum():
    """`core.contacts.clearance`: the near contacts of a frame partition its near polygon
    pairs, each contact's minimum is its pairs' and its points attain it, and `near` rows
    give each polygon pair's minimum over its triangle pairs."""
    from skin_collide.core.contacts import clearance as near_contacts

    rigs, positions, _ = passing(1)
    objects = [scan.prepare(r) for r in rigs]
    res = scan.query_frame(objects, positions, [None, None], clearance=0.1)
    found = near_contacts.near_contacts(objects, res.near)
    rows = near_contacts.near_pair_rows(objects, found, res.near)
    want: dict = {}
    for i, j, r in res.near:
        t = r.triangle_rows(0.1).settled()
        for (ta, tb), d in zip(t.pairs.tolist(), t.dist.tolist()):
            key = (objects[i].name, int(objects[i].rig.tri_polygon[ta]), objects[j].name,
                   int(objects[j].rig.tri_polygon[tb]))
            want[key] = min(want.get(key, np.inf), d)
    assert {tuple(r[:4]): r[4] for r in rows} == want and len(rows) == len(want)
    got = [(c.a, int(x), c.b, int(y)) for c in found for x, y in c.pairs.tolist()]
    assert sorted(got) == sorted(want)                   # a partition
    for c in found:
        assert c.kind == "near" and c.min_distance == min(want[(c.a, x, c.b, y)]
                                                          for x, y in c.pairs.tolist())
        assert abs(np.linalg.norm(c.points[0] - c.points[1]) - c.min_distance) <= 1e-9
        assert all(b is not None for b in c.bones)
    eps = near_contacts.near_episodes([(7, [c.summary_json() for c in found])])
    assert eps and all(e.closest_frame == 7 for e in eps)
    assert "closest" in eps[0].describe() and "frame 7" in eps[0].describe()


def test_contacts_csv_has_near_rows_with_min_distance():
    """The contacts' CSV (`core.contacts.contact.contacts_csv`): a clearance report's near
    contacts are rows of kind "near" with their bones, pair count and min_distance (blank
    length), after the frame's intersection contacts, whose min_distance is blank."""
    import csv
    import io

    from skin_collide.core.contacts import clearance as near_contacts
    from skin_collide.core.contacts import contact

    rigs, positions, _ = passing(1)
    objects = [scan.prepare(r) for r in rigs]
    res = scan.query_frame(objects, positions, [None, None], clearance=0.1)
    found = near_contacts.near_contacts(objects, res.near)
    assert found
    crossing = {"objects": ["A", "B"], "pairs": [[0, 1], [2, 3]], "length": 0.25,
                "kind": "crossing", "bones": ["hip", None], "center": [1.0, 2.0, 3.0]}
    report = {"frames": [{"frame": 3, "contacts": [crossing],
                          "near_contacts": [c.to_json(pairs=False) for c in found]},
                         {"frame": 4, "not_checked": "interrupted"}]}
    rows = list(csv.DictReader(io.StringIO(contact.contacts_csv(report))))
    # min_distance, then the first contact t of a pass-through (issue 57) at the end.
    assert list(rows[0]) == list(contact.CSV_COLUMNS) and contact.CSV_COLUMNS[-2:] == (
        "min_distance", "t")
    assert len(rows) == 1 + len(found)
    assert rows[0] == {"frame": "3", "object_a": "A", "object_b": "B", "bone_a": "hip",
                       "bone_b": "", "kind": "crossing", "length": "0.25", "pairs": "2",
                       "center_x": "1.0", "center_y": "2.0", "center_z": "3.0",
                       "min_distance": "", "t": ""}
    for row, c in zip(rows[1:], found):
        assert row["kind"] == "near" and row["frame"] == "3" and row["length"] == ""
        assert row["t"] == ""
        assert (row["object_a"], row["object_b"]) == (c.a, c.b)
        assert (row["bone_a"], row["bone_b"]) == tuple("" if b is None else b for b in c.bones)
        assert float(row["min_distance"]) == c.min_distance and int(row["pairs"]) == len(c.pairs)
        mid = [float(row[k]) for k in ("center_x", "center_y", "center_z")]
        assert np.allclose(mid, c.points.mean(axis=0), rtol=0, atol=1e-12)


@pytest.mark.parametrize("first", [256, 1])
@pytest.mark.parametrize("seed", range(3))
def test_near_contacts_settle_only_what_can_be_closest(seed, first, monkeypatch):
    """A near contact's closest distance and points are the same whether every pair of
    the frame was settled first or only those its bounds leave in doubt (with the first
    batch of smallest lower bounds settled before the normals' gaps when the rows in
    doubt are many: `_SETTLE_FIRST` 1 settles one row first); on a layered character whose
    triangles are about the clearance's size (as a garment's are), most rows stay
    unsettled."""
    from skin_collide.core.contacts import clearance as near_contacts

    monkeypatch.setattr(near_contacts, "_SETTLE_FIRST", first)
    monkeypatch.setattr(near_contacts, "_SETTLE_EARLY", 4 * first)
    rigs, positions, _ = layered(seed, rings=48, segments=40)
    objects = [scan.prepare(r) for r in rigs]
    lazy = scan.query_frame(objects, positions, [None, None], clearance=0.05).near
    full = scan.query_frame(objects, positions, [None, None], clearance=0.05).near
    for _, _, r in full:
        r.settled()
    got = near_contacts.near_contacts(objects, lazy)
    want = near_contacts.near_contacts(objects, full)
    assert got and len(got) == len(want)
    for g, w in zip(got, want):
        assert (g.pairs == w.pairs).all() and g.bones == w.bones
        assert g.min_distance == w.min_distance
        assert abs(np.linalg.norm(g.points[0] - g.points[1]) - g.min_distance) <= 1e-12
    settled = sum(int(r.known.sum()) for _, _, r in lazy)
    total = sum(r.known.size for _, _, r in lazy)
    assert settled < total / 2



@pytest.mark.parametrize("seed", range(2))
def test_a_clearance_budget_stops_the_stage_and_leaves_intersections_alone(seed):
    """The live overlay's budget (`clearance_limit`): a frame whose traversal stays
    within it is answered exactly as without one; past it the stage stops, says how far
    it got, and gives no near pairs, while the intersecting pairs are unchanged."""
    rigs, positions, _ = layered(seed)
    objects = [scan.prepare(r) for r in rigs]
    d = 0.05
    full = scan.query_frame(objects, positions, [None, None], clearance=d)
    n = sum(r.polys.shape[0] for _, _, r in full.near)
    assert n > 0 and full.near_stopped == 0
    roomy = scan.query_frame(objects, positions, [None, None], clearance=d,
                             clearance_limit=10 ** 9)
    assert roomy.near_stopped == 0 and len(roomy.near) == len(full.near)
    for (i, j, a), (k, m, b) in zip(full.near, roomy.near):
        assert (i, j) == (k, m)
        np.testing.assert_array_equal(a.polys, b.polys)
        np.testing.assert_array_equal(a.dist, b.dist)
    # Each near polygon pair has a unit pair on the traversal's last level: a limit under
    # their number must stop it.
    tight = scan.query_frame(objects, positions, [None, None], clearance=d,
                             clearance_limit=n - 1)
    assert tight.near == [] and tight.near_stopped > n - 1
    assert len(tight.pairs) == len(full.pairs)
    for (i, j, a), (k, m, b) in zip(full.pairs, tight.pairs):
        assert (i, j) == (k, m)
        np.testing.assert_array_equal(a, b)
    # Without a clearance, no stage and nothing stopped, whatever the budget.
    assert scan.query_frame(objects, positions, [None, None],
                            clearance_limit=1).near_stopped == 0


def _seamed(seed: int):
    """A character in two parts along a seam, strongly posed, 1 km away (the seam rule's
    scene above)."""
    rig = procedural.tube_rig(rings=14, segments=12, n_bones=5)
    parts = split_rig(rig, "part", "rig")
    pose = procedural.random_pose(parts[0], np.random.default_rng(seed),
                                  max_angle=math.radians(170), scale_range=(0.7, 1.4))
    return parts, [skinning.lbs_rig(r, pose) + FAR for r in parts], [pose, pose]


def _as_sets(pairs) -> dict:
    return {(i, j): {tuple(p) for p in q.tolist()} for i, j, q in pairs}


@pytest.mark.parametrize("make", [layered, passing, _seamed])
@pytest.mark.parametrize("seed", range(3))
def test_a_scan_with_clearance_finds_the_intersections_in_the_same_traversal(make, seed):
    """A whole query with a clearance answers the pairs between objects from the
    clearance stage's traversal (`clearance.near_and_hits_between`, one traversal for both):
    the same intersecting pairs as the query without clearance and as a brute force over
    every pair whose boxes meet (pairs sharing a seam vertex left out), the same near
    pairs as the live query (which keeps the two stages apart)."""
    rigs, positions, poses = make(seed)
    objects = [scan.prepare(r) for r in rigs]
    d = 0.02
    plain = scan.query_frame(objects, positions, poses)
    folded = scan.query_frame(objects, positions, poses, clearance=d)
    assert folded.stats[0].extra["clearance_pairs"] == 1      # the fold ran
    assert _as_sets(folded.pairs) == _as_sets(plain.pairs)
    # The brute force: every pair whose float64 boxes meet, the exact test, the seam rule.
    tris = folded.triangles
    pa, pb, ta, tb = positions[0], positions[1], tris[0], tris[1]
    ia, ib = (x.ravel() for x in np.meshgrid(np.arange(ta.shape[0]), np.arange(tb.shape[0]),
                                              indexing="ij"))
    A, B = pa[ta[ia]], pb[tb[ib]]
    meet = ((A.min(1) <= B.max(1)) & (B.min(1) <= A.max(1))).all(1)
    ia, ib = ia[meet], ib[meet]
    hit = triangle_pairs_intersect(pa, ta, ia, pb, tb, ib)
    ids = scan.seam_ids(objects)
    if ids[0] is not None:
        hit &= ~np.any(ids[0][ta[ia]][:, :, None] == ids[1][tb[ib]][:, None, :], axis=(1, 2))
    want = {(0, 1): {(a, b) for a, b in zip(ia[hit].tolist(), ib[hit].tolist())}}
    got = _as_sets(folded.pairs)
    assert got.get((0, 1), set()) == want[(0, 1)]
    # The near pairs are those of the two stages apart (a budget keeps them apart).
    apart = scan.query_frame(objects, positions, poses, clearance=d,
                             clearance_limit=10 ** 9)
    assert "clearance_pairs" not in apart.stats[0].extra
    assert len(apart.near) == len(folded.near)
    for (i, j, a), (k, m, b) in zip(apart.near, folded.near):
        assert (i, j) == (k, m)
        np.testing.assert_array_equal(a.polys, b.polys)
        np.testing.assert_array_equal(a.dist, b.dist)
        np.testing.assert_array_equal(a.lower, b.lower)


def _still(name: str, verts, tris) -> Rig:
    """A mesh with no bones (a prop): positions `verts`, triangles `tris` (one polygon
    each)."""
    verts, tris = np.asarray(verts, float), np.asarray(tris)
    return Rig(name=name, rest_positions=verts, triangles=tris,
               tri_polygon=np.arange(tris.shape[0]), weight_ptr=np.zeros(len(verts) + 1, np.int64),
               weight_bone=np.zeros(0, np.int32), weight_value=np.zeros(0), bone_names=[],
               bone_parents=np.zeros(0, np.int32), bone_rest=np.zeros((0, 4, 4)),
               bone_deform=np.zeros(0, bool), rigid="test")


@pytest.mark.parametrize("method", ["sphere-tree", "box-tree", "obb"])
@pytest.mark.parametrize("path", ["boxes", "deep", "traverse"])
def test_a_hair_apart_is_near_on_every_path_never_intersecting(method, path, monkeypatch):
    """Two quads one ulp apart in z (their float64 boxes are apart, so they are
    disjoint) touch within the triangle test's tolerance. Every path must agree that they
    do not intersect and are near: the box path and the methods' traversals of the
    intersection stage (`exact.ExactTest` asks for boxes that meet), the exact box trees
    of two objects deep in one another (`between.DEEP_SHARE`), the clearance
    traversal folded into a scan, and the live query's two stages apart. Each object has
    a slanted triangle as well, so that both quads stay in the box path's shrunken
    intersection."""
    from skin_collide.core.scan import between

    if path != "boxes":
        monkeypatch.setattr(between, "BOX_PAIRS_MAX", 0)     # every pair traversed
    monkeypatch.setattr(between, "DEEP_SHARE", 0.0 if path == "deep" else float("inf"))
    monkeypatch.setattr(between, "DEEP_MIN", 0)
    z = 0.1
    up = np.nextafter(z, 1.0)
    tris = [[0, 1, 2], [0, 2, 3], [4, 5, 6]]
    a = [[0, 0, z], [1, 0, z], [1, 1, z], [0, 1, z], [0, .9, 0], [.9, 0, 0], [0, 0, .5]]
    b = [[.5, .5, up], [1.5, .5, up], [1.5, 1.5, up], [.5, 1.5, up], [1, 1.9, 0], [1.9, 1, 0],
         [1.9, 1.9, .5]]
    objects = [scan.prepare(_still("A", a, tris), method), scan.prepare(_still("B", b, tris), method)]
    positions = [o.rig.rest_positions for o in objects]
    quads = {(p, q) for p in (0, 1) for q in (0, 1)}
    for kw in ({}, {"clearance": 0.01}, {"clearance": 0.01, "clearance_limit": 10 ** 6}):
        res = scan.query_frame(objects, positions, [None, None], **kw)
        assert res.pairs == [], kw
        if kw:
            (i, j, r), = res.near           # one polygon a triangle here
            assert {tuple(p) for p in r.polys.tolist()} == quads
            assert (r.settled().dist < 1e-15).all()


class _Rows:
    """A stand-in for `NearResult` with chosen bounds: `true` (K,) the distances, `dist`
    upper bounds above them, `lower` bounds below them; `settle` makes rows exact,
    `tighten` raises their lower bounds (still below the truth)."""

    def __init__(self, true, lower, upper):
        self.true, self.lower, self.dist = true, lower.copy(), upper.copy()
        self.known = np.zeros(true.size, dtype=bool)
        self.settled_rows = 0

    def settle(self, rows):
        rows = rows[~self.known[rows]]
        self.dist[rows] = self.lower[rows] = self.true[rows]
        self.known[rows] = True
        self.settled_rows += rows.size

    def tighten(self, rows):
        self.lower[rows] = np.maximum(self.lower[rows], 0.5 * self.true[rows])


@pytest.mark.parametrize("first", [256, 4])
@pytest.mark.parametrize("seed", range(4))
def test_settle_closest_finds_every_groups_minimum(seed, first, monkeypatch):
    """`_settle_closest` leaves every group's minimum attained by an exact row, whatever
    the bounds' order (the smallest lower bound is often not the closest row here), with
    the first batch settled before the normals' gaps or not, and settles fewer rows
    than there are."""
    from skin_collide.core.contacts import clearance as near_contacts

    monkeypatch.setattr(near_contacts, "_SETTLE_FIRST", first)
    if first < 256:     # the first batch before the normals' gaps (else: the gaps first)
        monkeypatch.setattr(near_contacts, "_SETTLE_EARLY", 4 * first)
    rng = np.random.default_rng(seed)
    K, C = 6000, 5
    true = rng.uniform(0.1, 1.0, K)
    # Half the rows with tight lower bounds, half with weak ones in no useful order.
    lower = true * np.where(rng.random(K) < 0.5, rng.uniform(0.85, 1.0, K),
                            rng.uniform(0.0, 1.0, K) ** 3)
    upper = true * rng.uniform(1.0, 1.3, K)
    comp = rng.integers(0, C, K)
    r = _Rows(true, lower, upper)
    rows = np.arange(K)
    near_contacts._settle_closest(r, rows, comp, C)
    for c in range(C):
        mine = comp == c
        best = r.dist[mine].min()
        assert best == true[mine].min()
        assert r.known[mine][r.dist[mine] == best].all()
    assert 0 < r.settled_rows < K
