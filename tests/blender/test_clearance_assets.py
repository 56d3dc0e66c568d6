"""Clearance on a real character (issue 42): Cesium Man and a turned copy of it crossing
(`test_obb_assets._crossing`), at animation frames and in random strong poses, against
the independent brute force of tests/core/test_clearance_stage.py (Ericson's closest
points over every triangle pair whose boxes are within D: a box gap lower-bounds the
distance). Needs ../shared/assets."""
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ASSET_FILES

pytestmark = [pytest.mark.asset, pytest.mark.blender]
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))


def _brute_near(pa, ta, pb, tb, d):
    """{(ta, tb): distance} of every triangle pair within d + a hair (intersecting ones
    too, excluded by the caller), by box gap then the exact brute force."""
    from test_clearance_stage import brute_pair_distances

    ca, cb = pa[ta], pb[tb]
    lo_a, hi_a, lo_b, hi_b = ca.min(1), ca.max(1), cb.min(1), cb.max(1)
    out = {}
    for s in range(0, ta.shape[0], 256):
        g = np.maximum(lo_b[None] - hi_a[s:s + 256, None], lo_a[s:s + 256, None] - hi_b[None])
        gap = np.linalg.norm(np.maximum(g, 0.0), axis=2)
        i, j = np.nonzero(gap <= d * (1 + 1e-9))
        D = brute_pair_distances(pa, ta, s + i, pb, tb, j)
        keep = D <= d * (1 + 1e-6)
        out.update(zip(zip((s + i[keep]).tolist(), j[keep].tolist()), D[keep].tolist()))
    return out


def _check_state(sc, positions, poses, d: float, size: float) -> int:
    """Scanner `sc` (two objects) queried at clearance `d` against the brute force: every
    non-intersecting triangle pair within d - 1e-9*size reported, none beyond d (up to
    the brute force's hair) or intersecting, distances within 1e-9*size. The number of
    pairs checked."""
    from skin_collide.core.triangles import triangle_pairs_intersect

    sc.reconfigure(clearance=d)
    sc.query(positions, poses)
    got = {(i, j): r for i, j, r in sc.near}
    pa, pb = positions
    ta, tb = (t.astype(np.int64) for t in sc.triangles)
    brute = _brute_near(pa, ta, pb, tb, d)
    keys = np.array(sorted(brute), dtype=np.int64).reshape(-1, 2)
    hit = triangle_pairs_intersect(pa, ta, keys[:, 0], pb, tb, keys[:, 1]) \
        if keys.size else np.zeros(0, bool)
    tol = 1e-9 * size
    poly_a, poly_b = (o.rig.tri_polygon for o in sc.objects)
    # A polygon pair with an intersecting triangle pair is an intersecting one, never a
    # near one (issue 55): none of its triangle pairs counts.
    crossing = {(int(poly_a[a]), int(poly_b[b])) for (a, b), h in zip(keys.tolist(), hit) if h}
    maybe = {tuple(k) for k, h in zip(keys.tolist(), hit)
             if not h and (int(poly_a[k[0]]), int(poly_b[k[1]])) not in crossing}
    must = {k for k in maybe if brute[k] <= d - tol}
    r = got.get((0, 1))
    # The stage's rows: polygon pairs, each at the smallest distance of its triangle pairs
    # that count (`maybe`).
    best: dict = {}
    for a, b in maybe:
        key = (int(poly_a[a]), int(poly_b[b]))
        best[key] = min(best.get(key, np.inf), brute[(a, b)])
    need = {(int(poly_a[a]), int(poly_b[b])) for a, b in must}
    rows = set() if r is None else {tuple(p) for p in r.polys.tolist()}
    assert need <= rows and rows <= set(best)
    if r is None:
        assert not must
        return 0
    want = np.array([best[tuple(p)] for p in r.polys.tolist()])
    assert (r.lower <= want + tol).all() and (want <= r.dist + tol).all()
    assert np.abs(r.dist - want)[r.known].max(initial=0) <= tol
    # Their triangle pairs, as the triangle query reports them.
    t = r.triangle_rows(d)
    pairs = {tuple(p) for p in t.pairs.tolist()}
    assert must <= pairs and pairs <= maybe
    want_t = np.array([brute[tuple(p)] for p in t.pairs.tolist()])
    # Pairs the corner bound decided carry that bound (within d) and a lower bound;
    # settled, every distance is the brute force's.
    assert (t.lower <= want_t + tol).all() and (want_t <= t.dist + tol).all()
    assert np.abs(t.dist - want_t)[t.known].max(initial=0) <= tol
    assert np.abs(t.settled().dist - want_t).max() <= tol
    assert np.abs(r.settled().dist - want).max() <= tol
    return len(pairs)


def test_clearance_on_crossing_cesium_men_equals_brute_force(bpy_module, assets_dir):
    from test_obb_assets import _crossing, _states

    from skin_collide.addon import scanner

    if "cesium_man.glb" not in ASSET_FILES:
        pytest.skip("cesium_man.glb missing")
    bpy = bpy_module
    ob, arm, ob2, arm2 = _crossing(bpy, assets_dir, "cesium_man.glb")
    sc = scanner.Scanner([ob, ob2], clearance=0.0)
    checked = 0
    for _ in _states(bpy, arm, arm2, np.random.default_rng(42)):
        positions, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        size = max(float(np.ptp(p, axis=0).max()) for p in positions)
        checked += _check_state(sc, positions, poses, 0.01 * size, size)
    assert checked > 0


GARMENT_ASSET = "makehuman_default.blend"


def _garment(bpy, body, height: float, offset: float):
    """A skinned garment on `body`: a copy of its torso's faces (centres between 55% and
    75% of the height, within 12% of it of the body's middle sideways), each vertex pushed
    out along its rest normal by `offset`; the copy keeps the body's vertex groups and
    armature modifier, so it follows the same armature."""
    import bmesh

    garment = body.copy()
    garment.data = body.data.copy()
    garment.name = garment.data.name = "Garment"
    for coll in body.users_collection:
        coll.objects.link(garment)
    bm = bmesh.new()
    bm.from_mesh(garment.data)
    zs = np.array([v.co.z for v in bm.verts])
    xs = np.array([v.co.x for v in bm.verts])
    z0, x_mid = zs.min(), 0.5 * (xs.min() + xs.max())
    drop = [f for f in bm.faces
            if not (0.55 * height <= f.calc_center_median().z - z0 <= 0.75 * height
                    and abs(f.calc_center_median().x - x_mid) <= 0.12 * height)]
    bmesh.ops.delete(bm, geom=drop, context="FACES")
    bm.normal_update()
    for v in bm.verts:
        v.co += v.normal * offset
    bm.to_mesh(garment.data)
    bm.free()
    garment.data.update()
    return garment


def test_clearance_of_a_garment_on_makehuman_equals_brute_force(bpy_module, assets_dir):
    """A held-out character (not the Cesium Man above): a torso garment 0.5% of the height
    off the body, D = 1% of the height, two animation frames and one strong random pose
    (170° twists, scaled bones) 1 km from the origin."""
    from blender_helpers import random_blender_pose

    from skin_collide.addon import animation, extract, files, scanner

    if GARMENT_ASSET not in ASSET_FILES:
        pytest.skip(f"{GARMENT_ASSET} missing")
    bpy = bpy_module
    files.load_file(str(assets_dir / GARMENT_ASSET))
    body = max(extract.skinned_meshes(bpy.context.scene), key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(body).armature
    rest = np.array([v.co[:] for v in body.data.vertices])
    height = float(np.ptp(rest[:, 2]))
    garment = _garment(bpy, body, height, 0.005 * height)
    assert 0 < len(garment.data.polygons) < len(body.data.polygons) // 2
    sc = scanner.Scanner([body, garment], clearance=0.0)
    rng = np.random.default_rng(7)

    def states():
        acts = animation.actions_for(arm)
        assert acts, f"{GARMENT_ASSET} has no action"
        animation.use_action(arm, acts[0])
        frames = animation.action_frames(acts[0])
        for f in (frames[len(frames) // 3], frames[2 * len(frames) // 3]):
            bpy.context.scene.frame_set(f)
            yield f"frame {f}", False
        arm.animation_data_clear()
        arm.location = (arm.location.x + 1000.0, arm.location.y, arm.location.z)
        random_blender_pose(arm, rng, max_angle=np.radians(170), scale=(0.5, 2.0))
        bpy.context.view_layer.update()
        yield "random pose 1 km away", True

    checked, seen = {}, []
    for state, far in states():
        positions, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        assert not any(np.array_equal(positions[0], p) for p in seen), state   # it moved
        seen.append(positions[0])
        if far:
            assert np.linalg.norm(positions[0].mean(axis=0)) > 900.0
        size = max(float(np.ptp(p, axis=0).max()) for p in positions)
        checked[state] = _check_state(sc, positions, poses, 0.01 * height, size)
    print(f"garment: {len(garment.data.polygons)} polygons; near pairs checked: {checked}")
    assert len(checked) == 3 and all(n > 0 for n in checked.values()), checked
