"""The triangles Blender draws at a frame (pip bpy module, shared assets).

* `core.geometry.triangulation` on the mesh-local evaluated positions gives exactly the
  evaluated mesh's ``loop_triangles`` (vertex order and triangle order included) on frames
  of every action of every shared asset, and in random strong poses (170° twists, bone
  scale 0.5–2) on MakeHuman and Cesium Man; `extract.evaluated_frame` does too.
* In a strong MakeHuman pose, where Blender re-splits hundreds of quads, the polygon pairs
  of the scan (self-collision, and between two interpenetrating copies) are Blender's
  ``BVHTree.FromPolygons(world positions, evaluated loop triangles)`` overlap, with
  disagreements judged exactly in float64 on the drawn triangles (as in
  test_scan_assets.py). The rest triangles would answer differently in that pose.
"""
import math

import numpy as np
import pytest
from blender_helpers import random_blender_pose
from conftest import ASSET_FILES
from test_triangles import reference as exact_intersect

pytestmark = [pytest.mark.asset, pytest.mark.blender]
JUDGED = 25


def load(bpy, assets_dir, asset):
    from skin_collide.addon import extract, files

    files.load_file(str(assets_dir / asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    assert meshes
    return meshes, extract.modifier_report(meshes[0]).armature


def blender_triangles(ob, dg):
    """The evaluated mesh's loop triangles (T, 3) int32, read straight from Blender."""
    me = ob.evaluated_get(dg).data
    me.calc_loop_triangles()
    tris = np.empty(len(me.loop_triangles) * 3, dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    return tris.reshape(-1, 3)


def compare(bpy, meshes, rigs):
    """Per mesh: (rows that differ from Blender, rows where Blender differs from rest)."""
    from skin_collide.addon import extract
    from skin_collide.core.geometry import triangulation

    dg = bpy.context.evaluated_depsgraph_get()
    out = []
    for ob, rig in zip(meshes, rigs):
        want = blender_triangles(ob, dg)
        local = extract.evaluated_positions(ob, dg, world=False)
        got = triangulation.frame_triangles(rig, local)
        # n-gons keep their rest triangles in the core; compare polygons of ≤ 4 corners.
        small = (np.diff(rig.poly_ptr) <= 4)[rig.tri_polygon]
        bad = int(np.any(got[small] != want[small], axis=1).sum())
        _, frame = extract.evaluated_frame(ob, dg, rig)
        bad += int(np.any(frame != want, axis=1).sum())
        out.append((bad, int(np.any(want != rig.triangles, axis=1).sum())))
    return out


@pytest.mark.parametrize("asset", ASSET_FILES or ["(none)"])
def test_frame_triangles_equal_blenders_loop_triangles(bpy_module, assets_dir, asset):
    from skin_collide.addon import animation, extract

    bpy = bpy_module
    meshes, arm = load(bpy, assets_dir, asset)
    rigs = [extract.rig_from_object(ob) for ob in meshes]
    scene = bpy.context.scene
    for act in animation.actions_for(arm):
        animation.use_action(arm, act)
        frames = animation.action_frames(act)
        for f in frames[::2]:
            scene.frame_set(f)
            for ob, (bad, _) in zip(meshes, compare(bpy, meshes, rigs)):
                assert bad == 0, (ob.name, act.name, f)


@pytest.mark.parametrize("asset", [a for a in ("makehuman_default.blend", "cesium_man.glb")
                                   if a in ASSET_FILES] or ["(none)"])
def test_frame_triangles_equal_blender_in_strong_poses(bpy_module, assets_dir, asset):
    from skin_collide.addon import extract

    bpy = bpy_module
    meshes, arm = load(bpy, assets_dir, asset)
    rigs = [extract.rig_from_object(ob) for ob in meshes]
    arm.animation_data_clear()
    rng = np.random.default_rng(5)
    resplit = 0
    for _ in range(4):
        random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
        bpy.context.view_layer.update()
        for ob, (bad, moved) in zip(meshes, compare(bpy, meshes, rigs)):
            assert bad == 0, ob.name
            resplit += moved
    print(f"{asset}: {resplit} triangles re-split against the rest triangulation")
    if any(np.any(np.diff(r.poly_ptr) == 4) for r in rigs):
        assert resplit > 0, "no quad was re-split: the test would prove nothing"


# -- the scan against Blender's BVHTree on the drawn triangles ----------------------------

def weld_ids(rig):
    """Weld keys of one mesh as the product welds (core/welds.py): same rest position AND
    same normalized weight row (computed apart from the product, `weld_keys`). Welding by
    position alone would drop real pairs next to coincident vertices whose weights differ
    (lip corners, eyelids), and the test would not see the product miss them."""
    from test_strong_poses_blender import weld_keys

    return weld_keys([rig])[0]


def blender_triangle_pairs(pos_a, tri_a, pos_b, tri_b, ids_a, ids_b):
    """Blender's overlap of two triangle sets (a set against itself when pos_b is None),
    non-adjacent pairs only: (K, 2) int64."""
    from mathutils.bvhtree import BVHTree

    ta = BVHTree.FromPolygons(pos_a.tolist(), tri_a.tolist(), all_triangles=True, epsilon=0.0)
    tb = ta if pos_b is None else BVHTree.FromPolygons(pos_b.tolist(), tri_b.tolist(),
                                                       all_triangles=True, epsilon=0.0)
    raw = ta.overlap(tb)
    pairs = np.asarray(raw, dtype=np.int64).reshape(-1, 2)
    if pos_b is None:
        pairs = np.unique(np.sort(pairs, axis=1), axis=0)
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        ka, kb = ids_a[tri_a[pairs[:, 0]]], ids_a[tri_a[pairs[:, 1]]]
        pairs = pairs[~np.any(ka[:, :, None] == kb[:, None, :], axis=(1, 2))]
    return pairs


def exact(A, B, grow=0.0):
    A, B = A.copy(), B.copy()
    if grow:
        eps = grow * max(1.0, float(np.abs(A).max()), float(np.abs(B).max()))
        for T in (A, B):
            out = T - T.mean(axis=0)
            T += eps * out / np.linalg.norm(out, axis=1, keepdims=True)
    return bool(exact_intersect(A[0:1], A[1:2], A[2:3], B[0:1], B[1:2], B[2:3])[0])


def judge_polygons(ours, blender_pairs, pos, tris, rigs, same, ids):
    """Polygon pairs: ours (set of (pa, pb)) against Blender's triangle pairs on the drawn
    triangles. Returns (unexplained misses, unexplained extras, Blender's polygon pairs)."""
    pa = rigs[0].tri_polygon[blender_pairs[:, 0]]
    pb = rigs[1].tri_polygon[blender_pairs[:, 1]]
    if same:
        keep = pa != pb
        blender_pairs, pa, pb = blender_pairs[keep], pa[keep], pb[keep]
        lo, hi = np.minimum(pa, pb), np.maximum(pa, pb)
        pa, pb = lo, hi
    theirs = {}
    for (a, b), t in zip(zip(pa.tolist(), pb.tolist()), blender_pairs.tolist()):
        theirs.setdefault((a, b), []).append(t)
    only_b = sorted(set(theirs) - ours)
    only_o = sorted(ours - set(theirs))
    def drawn(side, p):
        return tris[side][rigs[side].tri_polygon == p]

    # Every Blender pair we lack must be exactly disjoint (its float32 arithmetic).
    missed = [q for q in only_b[::max(1, len(only_b) // JUDGED)]
              if any(exact(pos[0][tris[0][t]], pos[1][tris[1][u]]) for t, u in theirs[q])]
    # Every pair we add must have drawn, non-adjacent triangles that meet (or touch).
    extra = []
    for a, b in only_o[::max(1, len(only_o) // JUDGED)]:
        ok = False
        for ta in drawn(0, a):
            for tb in drawn(1, b):
                if same and set(ids[0][ta].tolist()) & set(ids[0][tb].tolist()):
                    continue
                A, B = pos[0][ta], pos[1][tb]
                if exact(A, B) or exact(A, B, grow=4e-6):
                    ok = True
        if not ok:
            extra.append((a, b))
    return missed, extra, set(theirs)


@pytest.fixture(scope="module")
def makehuman_posed():
    """MakeHuman and a copy standing in it, both in strong random poses."""
    bpy = pytest.importorskip("bpy")
    from conftest import ASSETS
    if ASSETS is None or "makehuman_default.blend" not in ASSET_FILES:
        pytest.skip("MakeHuman is not in ../shared/assets")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import scenes

    bpy.ops.wm.read_homefile(use_empty=True)
    meshes, arm = load(bpy, ASSETS, "makehuman_default.blend")
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm.animation_data_clear()
    ob2, arm2 = scenes.duplicate_character(ob, arm, "copy", offset=(0.0, 0.0, 0.0),
                                           turn=math.pi / 2)
    yield bpy, ob, arm, ob2, arm2
    bpy.ops.wm.read_homefile(use_empty=True)


@pytest.mark.parametrize("kind", ["self", "two characters"])
def test_scan_pairs_are_blenders_on_the_drawn_triangles(makehuman_posed, kind):
    from skin_collide.addon import scanner

    bpy, ob, arm, ob2, arm2 = makehuman_posed
    meshes = [ob] if kind == "self" else [ob, ob2]
    sc = scanner.Scanner(meshes, mode="on-demand", self_collision=(kind == "self"))
    rigs = [o.rig for o in sc.objects]
    ids = [weld_ids(r) for r in rigs]
    rng = np.random.default_rng(17)
    rest_differs = 0
    for _ in range(2):
        for a in (arm, arm2):
            random_blender_pose(a, rng, max_angle=math.radians(170), scale=(0.6, 1.5))
        bpy.context.view_layer.update()
        dg = bpy.context.evaluated_depsgraph_get()
        pos, poses = sc.evaluate(dg)
        drawn = [blender_triangles(m, dg) for m in meshes]
        ours = {(a, b) for _, a, _, b in sc.polygon_pairs(sc.query(pos, poses)[0])}
        if kind == "self":
            pos2, tris2, rigs2, ids2 = [pos[0]] * 2, drawn * 2, rigs * 2, ids * 2
            args = (pos[0], drawn[0], None, None, ids[0], None)
            rest = (pos[0], rigs[0].triangles, None, None, ids[0], None)
        else:
            pos2, tris2, rigs2, ids2 = pos, drawn, rigs, ids
            args = (pos[0], drawn[0], pos[1], drawn[1], ids[0], ids[1])
            rest = (pos[0], rigs[0].triangles, pos[1], rigs[1].triangles, ids[0], ids[1])
        bl = blender_triangle_pairs(*args)
        missed, extra, theirs = judge_polygons(ours, bl, pos2, tris2, rigs2, kind == "self",
                                               ids2)
        assert missed == [], missed[:5]
        assert extra == [], extra[:5]
        assert theirs, "nothing collides in this pose: the test would prove nothing"
        # The rest triangulation gives Blender other polygon pairs in this pose.
        bl_rest = blender_triangle_pairs(*rest)
        pa, pb = rigs2[0].tri_polygon[bl_rest[:, 0]], rigs2[1].tri_polygon[bl_rest[:, 1]]
        if kind == "self":
            pa, pb = np.minimum(pa, pb), np.maximum(pa, pb)
            keep = pa != pb
            pa, pb = pa[keep], pb[keep]
        rest_differs += len(set(zip(pa.tolist(), pb.tolist())) ^ theirs)
        print(f"{kind}: Blender polygon pairs {len(theirs)}, ours {len(ours)}, "
              f"rest-triangle answer differs on {rest_differs} so far")
    assert rest_differs > 0, "the re-split quads changed nothing: the test would prove nothing"


def test_live_result_and_overlay_draw_the_drawn_triangles(makehuman_posed):
    """The live query keeps the frame's triangles, and the overlay draws exactly those."""
    import skin_collide
    from skin_collide.addon import overlay, session

    bpy, ob, arm, ob2, arm2 = makehuman_posed
    skin_collide.register()
    try:
        scene = bpy.context.scene
        for o in scene.objects:
            o.select_set(o in (ob, ob2))
        bpy.context.view_layer.objects.active = ob
        assert bpy.ops.skin_collide.build() == {"FINISHED"}
        scene.skin_collide.self_collision = False
        scene.skin_collide.ignore_rest_contacts = False
        rng = np.random.default_rng(23)
        for a in (arm, arm2):
            random_blender_pose(a, rng, max_angle=math.radians(170), scale=(0.6, 1.5))
        bpy.context.view_layer.update()
        dg = bpy.context.evaluated_depsgraph_get()
        res = session.query(scene, dg, [ob, ob2])
        assert res.error == "" and res.n_pairs > 0
        resplit = 0
        for m, t, obj in zip((ob, ob2), res.triangles, session.load_objects([ob, ob2])):
            want = blender_triangles(m, dg)
            assert np.array_equal(t, want)
            resplit += int(np.any(want != obj.rig.triangles, axis=1).sum())
        assert resplit > 0
        tris, _ = overlay.live_batches(scene)
        expected = np.concatenate([overlay.triangle_overlay(p, t, h) for p, t, h in
                                   zip(res.positions, res.triangles, res.hit_triangles) if h.size])
        assert np.array_equal(tris, expected)
    finally:
        skin_collide.unregister()


# -- coincident vertices with different weights, in Blender ----------------------------

def lip_character(bpy):
    """Two 4×4-quad sheets meeting along y = 0 with a row of COINCIDENT vertices: the upper
    sheet (y ≥ 0) weighted to bone A, the lower (y ≤ 0, its own seam row) to bone B. Posed,
    B swings the lower sheet up through the upper one, so the seam vertices separate and
    the lower sheet's seam-row triangles pierce the upper sheet's seam-row triangles."""
    n, h = 4, 0.25
    verts, faces = [], []
    for side in (1.0, -1.0):
        base = len(verts)
        verts += [(i * h, side * j * h, 0.0) for j in range(n + 1) for i in range(n + 1)]
        for j in range(n):
            for i in range(n):
                a = base + j * (n + 1) + i
                quad = [a, a + 1, a + n + 2, a + n + 1]
                faces.append(quad if side > 0 else quad[::-1])
    me = bpy.data.meshes.new("lips")
    me.from_pydata(verts, [], faces)
    me.update()
    ob = bpy.data.objects.new("lips", me)
    scene = bpy.context.scene
    scene.collection.objects.link(ob)
    arm = bpy.data.objects.new("lip_rig", bpy.data.armatures.new("lip_rig"))
    scene.collection.objects.link(arm)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    a = arm.data.edit_bones.new("A")
    a.head, a.tail = (0.5, 0.5, -0.3), (0.5, 0.8, -0.3)
    b = arm.data.edit_bones.new("B")
    b.head, b.tail = (0.0, 0.0, 0.0), (0.0, 0.25, 0.0)     # rest rotation: identity
    bpy.ops.object.mode_set(mode="OBJECT")
    half = (n + 1) ** 2
    ob.vertex_groups.new(name="A").add(list(range(half)), 1.0, "REPLACE")
    ob.vertex_groups.new(name="B").add(list(range(half, 2 * half)), 1.0, "REPLACE")
    mod = ob.modifiers.new("Armature", "ARMATURE")
    mod.object = arm
    ob.parent = arm                  # moving the armature moves the whole character
    return ob, arm


def test_coincident_vertices_with_different_weights_equal_blender(bpy_module):
    """A generated mesh, posed in Blender: the pairs around the separated seam are reported,
    equal to Blender's overlap on the evaluated loop triangles (every disagreement judged
    exactly), and a reference welded by position alone would have dropped them."""
    from test_strong_poses_blender import check, drawn_triangles, reference_pairs

    from skin_collide.addon import scanner

    bpy = bpy_module
    ob, arm = lip_character(bpy)
    sc = scanner.Scanner([ob], mode="on-demand", self_collision=True)
    rig = sc.objects[0].rig
    same_place = np.unique(rig.rest_positions, axis=0, return_inverse=True)[1].reshape(-1)
    assert len(np.unique(same_place)) < rig.n_vertices    # the coincident seam row
    assert len(np.unique(weld_ids(rig))) == rig.n_vertices  # ... is not welded
    pb = arm.pose.bones["B"]
    pb.rotation_mode = "QUATERNION"
    for far in (0.0, 1000.0):
        th = math.radians(-75.0)
        pb.rotation_quaternion = (math.cos(th / 2), math.sin(th / 2), 0.0, 0.0)
        pb.location = (0.05, 0.125, -0.12)
        arm.location = (far, -far, 0.5 * far)
        bpy.context.view_layer.update()
        dg = bpy.context.evaluated_depsgraph_get()
        n_blender, _, _ = check(sc, [ob], dg, True, f"lips {far} m out")
        assert n_blender > 0, far
        pos, _ = sc.evaluate(dg)
        tris = drawn_triangles(ob, dg)
        weighted = reference_pairs(pos, [tris], [weld_ids(rig)], True)
        by_place = reference_pairs(pos, [tris], [same_place], True)
        seam = weighted - by_place
        # Pairs next to the separated seam: Blender reports them, a position-only weld
        # would not, and the product does.
        assert seam, "no pair around the seam: the test would prove nothing"
        ours, _, _ = sc.query(pos, sc.evaluate(dg)[1])
        got = {(0, 0, min(a, b), max(a, b)) for _, _, p in ours for a, b in p.tolist()}
        assert seam <= got, sorted(seam - got)[:5]
