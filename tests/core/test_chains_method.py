"""Sphere chains (Madera et al. 2015) as the registered method `chains` (issue 11).

* core: registered, refuses rigs with fewer than two limbs or a deformation the vertex
  groups do not describe (with the reason), round-trips through storage; its two-level
  volumes hold every triangle once and bound the frame's triangles; self pairs equal
  brute force (the chains' covered pairs plus the exact self tree on the rest), pairs
  between objects equal brute force, through the traversal too;
* the report's per-object `uncovered` and `fallback` entries, passed through `merge`
  (`--jobs`);
* Blender: `scan --method chains --self` equals Blender's `BVHTree.overlap` on a
  generated three-limb character and (asset) Fox and Cesium Man in strong random poses;
  one CLI run (`--jobs 2`) of a scene with a three-limb and a one-limb character; the
  panel's Build makes chains and OBB trees and *Show Spheres* draws their volumes.
"""
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from chains_helpers import star_rig

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.methods import registry
from skin_collide.core.methods.base import Frame
from skin_collide.core.report import merge
from skin_collide.core.storage import persist


@pytest.fixture(scope="module")
def star():
    return star_rig(3)


def strong_poses(rig, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield procedural.random_pose(rig, rng, max_angle=math.radians(170),
                                     scale_range=(0.5, 2.0))


def test_registered_with_reasons_and_round_trip(star):
    assert "chains" in registry.ids()
    obj = scan.prepare(star, "chains")
    assert obj.method == "chains" and obj.reason == ""
    tube = procedural.tube_rig(rings=10, segments=8, n_bones=4)
    one = scan.prepare(tube, "chains")
    assert one.method == "sphere-tree" and "1 limb" in one.reason and "chains:" in one.reason
    odd = star_rig(3)
    odd.unsupported = ["2 shape keys"]
    m, why = registry.resolve("chains", odd)
    assert m.id != "chains" and "shape keys" in why[0] and "vertex groups" in why[0]
    back = persist.from_bytes(persist.to_bytes(obj))
    assert back.method == "chains"
    a, b = obj.data.arrays(), back.data.arrays()
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    pose = next(strong_poses(star, 1, 4))
    P = skinning.lbs_rig(star, pose)
    r1 = scan.query_frame([obj], [P], [pose], self_collision=True)
    r2 = scan.query_frame([back], [P], [pose], self_collision=True)
    assert r1.n_pairs > 0 and [p.tolist() for _, _, p in r1.pairs] == \
        [p.tolist() for _, _, p in r2.pairs]


def test_two_levels_hold_every_triangle_and_bound_the_frame(star):
    obj = scan.prepare(star, "chains")
    m = registry.get("chains")
    for pose in strong_poses(star, 3, 5):
        P = skinning.lbs_rig(star, pose)
        tris = scan.frame_triangles(obj, P)
        v = m.volumes(star, obj.data, Frame(P, tris, pose))
        h = v.hierarchy
        assert h.first_child[0] == 1 and h.child_count[0] == h.n_nodes - 1
        assert (h.first_child[1:] == -1).all()
        assert np.array_equal(np.sort(h.leaf_tris), np.arange(star.n_triangles))
        nodes = np.arange(h.n_nodes)
        v.ensure(nodes)
        c, r = v.spheres(nodes)
        for leaf in range(1, h.n_nodes):
            t = h.leaf_tris[h.leaf_ptr[leaf]:h.leaf_ptr[leaf + 1]]
            pts = P[tris[t].ravel()]           # the frame's (re-split) triangles
            assert (np.linalg.norm(pts - c[leaf], axis=1) <= r[leaf] * (1 + 1e-12)).all()
        assert (np.linalg.norm(P - c[0], axis=1) <= r[0]).all()
        d = m.drawable(star, obj.data, Frame(P, tris, pose), 3)
        assert d.radii.shape == (obj.data.n_spheres,)
        assert m.drawable(star, obj.data, Frame(P, tris, pose), 0).radii.shape == (1,)


@pytest.mark.parametrize("which", ["star", "branching"])
def test_self_pairs_equal_brute_force(star, which):
    """`query_frame(self_collision=True)` with chains: every intersecting non-adjacent pair
    (brute force), of which the covered ones are exactly the chains' own answer."""
    if which == "star":
        rig = star
    else:
        from test_obb import branching_rig

        rig = branching_rig()
    obj = scan.prepare(rig, "chains")
    assert obj.method == "chains"
    covered = seen = 0
    for pose in strong_poses(rig, 5, 6):
        P = skinning.lbs_rig(rig, pose)
        tris = scan.frame_triangles(obj, P)
        res = scan.query_frame([obj], [P], [pose], self_collision=True, triangles=[tris])
        assert res.modes == ["chains"]
        got = res.pairs[0][2] if res.pairs else np.zeros((0, 2), np.int64)
        keys = obj.vertex_keys[tris]
        want = scan.brute_force_pairs(P, tris, keys=keys)
        assert np.array_equal(got, want)
        s = obj.data.tri_sphere
        cov = want[obj.data.covered[s[want[:, 0]], s[want[:, 1]]]]
        st = res.stats[-1].extra
        assert st["chain_pairs"] == len(cov) and st["uncovered_pairs"] == len(want) - len(cov)
        covered += len(cov)
        seen += len(want)
    assert seen > 20 and 0 < covered < seen


@pytest.mark.parametrize("traverse", [False, True])
def test_pairs_between_objects_equal_brute_force(star, monkeypatch, traverse):
    if traverse:
        monkeypatch.setattr(scan.between, "BOX_PAIRS_MAX", 0)
        monkeypatch.setattr(scan.between, "DEEP_SHARE", float("inf"))
    a = scan.prepare(star, "chains")
    b = scan.prepare(star_rig(3), "chains")
    c = scan.prepare(star_rig(3), "sphere-tree")
    found = 0
    for k, (pa, pb) in enumerate(zip(strong_poses(star, 3, 8), strong_poses(star, 3, 9))):
        Pa = skinning.lbs_rig(star, pa)
        Pb = skinning.lbs_rig(star, pb)
        Pb = Pb - Pb.mean(axis=0) + Pa.mean(axis=0) + [0.2, 0.1 * k, 0.0]
        ta, tb = scan.frame_triangles(a, Pa), scan.frame_triangles(b, Pb)
        want = scan.brute_force_pairs(Pa, ta, Pb, tb)
        for other in (b, c):
            res = scan.query_frame([a, other], [Pa, Pb], [pa, None], triangles=[ta, tb])
            got = np.concatenate([p for _, _, p in res.pairs]) if res.pairs else \
                np.zeros((0, 2), np.int64)
            assert {tuple(p) for p in got.tolist()} == {tuple(p) for p in want.tolist()}
            if traverse:
                assert res.stats[0].extra["traversed_pairs"] == 1 and res.modes[0] == "chains"
        found += len(want)
    assert found > 20


def test_merge_keeps_the_uncovered_entry():
    unc = {"A": {"triangles": 0, "note": "x"}}
    src = {"file": "f.blend", "method": "chains", "self": True, "first_hit": False,
           "filters": {"ignore_rest_contacts": False, "allow": None}}
    docs = [{"objects": ["A"], "refit": {"A": "chains"}, "uncovered": unc, "complete": True,
             "interrupted": False, "frames_requested": 1,
             "frames": [{"frame": f, "pairs": [], "ms": 1.0}], "episodes": [], "source": src}
            for f in (1, 2)]
    out = merge.merge_reports(docs)
    assert out["uncovered"] == unc and list(out)[:3] == ["objects", "refit", "uncovered"]
    assert "fallback" not in out


def test_merge_keeps_the_fallback_reasons():
    """Why an object's asked method was passed over survives `merge` (`scan --jobs`): each
    distinct reason once, in chunk order; objects without one get no entry."""
    src = {"file": "f.blend", "method": "chains", "self": True, "first_hit": False,
           "filters": {"ignore_rest_contacts": False, "allow": None}}
    why = ["chains: 1 limb found", "chains: 1 limb found", "chains: other"]
    docs = [{"objects": ["A", "B"], "refit": {"A": "chains", "B": "sphere-tree"},
             "fallback": {"B": w}, "complete": True, "interrupted": False,
             "frames_requested": 1, "frames": [{"frame": f, "pairs": [], "ms": 1.0}],
             "episodes": [], "source": src} for f, w in zip((1, 2, 3), why)]
    out = merge.merge_reports(docs)
    assert out["fallback"] == {"B": "chains: 1 limb found; chains: other"}
    assert list(out)[:3] == ["objects", "refit", "fallback"]


# --- Blender -------------------------------------------------------------------------


def _judge():
    from test_scan_assets import judge

    return judge


@pytest.mark.blender
def test_scan_chains_self_equals_blender_on_a_generated_character(bpy_module):
    from blender_helpers import random_blender_pose
    from chains_helpers import star_character

    from skin_collide.addon import scanner

    bpy = bpy_module
    ob, arm = star_character(bpy, location=(300.0, -200.0, 50.0))
    sc = scanner.Scanner([ob], method="chains", self_collision=True)
    assert sc.objects[0].method == "chains", sc.objects[0].reason
    rng = np.random.default_rng(11)
    found = 0
    for _ in range(5):
        random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
        bpy.context.view_layer.update()
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        ours, _, modes = sc.query(pos, poses)
        assert modes == ["chains"]
        ref = scanner.bvhtree_pairs(sc.objects, pos, True, sc.triangles, poses)
        missed, extra, n, _, _ = _judge()(sc.objects, pos, ours, ref, sc.triangles)
        assert missed == [] and extra == []
        found += n
    assert found > 20
    doc = sc.report([]).to_json()
    u = doc["uncovered"][ob.name]
    assert u["triangles"] == 0 and u["triangle_indices"] == [] and "adjacent" in u["note"]
    assert 0 < u["sphere_pairs_not_tested_by_chains"] < u["sphere_pairs"]


@pytest.mark.blender
def test_cli_scan_chains_self_with_a_one_limb_character(bpy_module, tmp_path):
    """One subprocess: `scan --method chains --self --jobs 2` on a scene with a three-limb
    character (chains) and a tube (one limb: sphere-tree, and why). The JSON
    equals the in-process scan's pairs; `uncovered` lists the chains object only, and
    `fallback` (and the console) says why the tube is not on chains."""
    from conftest import inside_blender_binary

    if inside_blender_binary():
        pytest.skip("subprocess CLI tests need the pip bpy module")
    from chains_helpers import star_character

    from skin_collide.addon import demo_rig, scanner

    bpy = bpy_module
    ob, arm = star_character(bpy, "Star")
    tube, tube_arm = demo_rig.build_character("Tube", location=(0.4, 0.3, -0.8), rings=10,
                                              segments=8, frames=6)
    rng = np.random.default_rng(2)
    for f in range(1, 7):                  # keyed strong poses on frames 1-6
        for pb in arm.pose.bones:
            pb.rotation_mode = "XYZ"
            pb.rotation_euler = tuple(rng.uniform(-2.2, 2.2, 3))
            pb.keyframe_insert("rotation_euler", frame=f)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 6
    path = tmp_path / "star.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    out = tmp_path / "chains.json"
    res = subprocess.run([sys.executable, "-m", "skin_collide", "scan", str(path), "--self",
                          "--method", "chains", "--jobs", "2", "--json", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    doc = json.loads(out.read_text())
    assert doc["refit"] == {"Star": "chains", "Tube": "sphere-tree"}
    assert list(doc["uncovered"]) == ["Star"]
    # Why Tube is not on chains reaches the report and the console through the workers.
    assert list(doc["fallback"]) == ["Tube"] and "1 limb found" in doc["fallback"]["Tube"]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("object Tube:")]
    assert len(line) == 1 and "instead of chains" in line[0] and "1 limb found" in line[0]
    sc = scanner.Scanner([ob, tube], method="chains", self_collision=True)
    assert "1 limb found" in sc.refit_label(sc.objects[1])   # what `scan` prints per object
    want = {}
    for f in range(1, 7):
        rec = sc.step(bpy.context.scene, f)
        want[f] = sorted(list(p) for p in rec.pairs)
    assert {fr["frame"]: sorted(fr["pairs"]) for fr in doc["frames"]} == want
    assert sum(len(v) for v in want.values()) > 0
    assert doc["uncovered"] == sc.report([]).to_json()["uncovered"]


@pytest.mark.asset
@pytest.mark.blender
@pytest.mark.parametrize("asset", ["fox.glb", "cesium_man.glb"])
def test_scan_chains_self_equals_blender_on_assets(bpy_module, assets_dir, asset):
    """Strong random poses (170° twists, bone scale 0.5-2) and two frames of the shipped
    animation, 50 m out: every self pair equals Blender's (disagreements judged exactly)."""
    from blender_helpers import random_blender_pose

    from skin_collide.addon import animation, extract, files, scanner

    if not (assets_dir / asset).is_file():
        pytest.skip(f"{asset} missing")
    bpy = bpy_module
    files.load_file(str(assets_dir / asset))
    ob = max(extract.skinned_meshes(bpy.context.scene), key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    arm.location = tuple(np.array(arm.location) + [50.0, -30.0, 20.0])
    sc = scanner.Scanner([ob], method="chains", self_collision=True)
    assert sc.objects[0].method == "chains", sc.objects[0].reason

    def states():
        acts = animation.actions_for(arm)
        if acts:
            animation.use_action(arm, acts[0])
            fr = animation.action_frames(acts[0])
            for f in fr[:: max(1, len(fr) // 2)][:2]:
                bpy.context.scene.frame_set(f)
                yield
        arm.animation_data_clear()
        rng = np.random.default_rng(23)
        for _ in range(3):
            random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
            bpy.context.view_layer.update()
            yield

    found = chain_found = 0
    for _ in states():
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        ours, _, modes = sc.query(pos, poses)
        assert modes == ["chains"]
        ref = scanner.bvhtree_pairs(sc.objects, pos, True, sc.triangles, poses)
        missed, extra, n, _, _ = _judge()(sc.objects, pos, ours, ref, sc.triangles)
        assert missed == [] and extra == [], (missed[:3], extra[:3])
        found += n
        d = sc.objects[0].data
        for _, _, p in ours:
            chain_found += int(d.covered[d.tri_sphere[p[:, 0]], d.tri_sphere[p[:, 1]]].sum())
    assert found > 0 and chain_found > 0


@pytest.mark.blender
def test_panel_builds_chains_and_obb_and_shows_their_volumes(registered_addon):
    """Two three-limb characters crossing: the panel's Method enum lists `chains`; Build
    with `obb`, then `chains`, stores that method; the live result uses it; *Show
    Spheres* draws the boxes (12 edges each) and the chain spheres, around the mesh.
    (Not `bpy_module`: its read_homefile after the add-on's register() loses the
    operators' classes.)"""
    bpy = pytest.importorskip("bpy")
    try:
        _panel_build_and_show(bpy)
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)


def _panel_build_and_show(bpy):
    from chains_helpers import star_character

    from skin_collide.addon import overlay, session, storage

    scene = bpy.context.scene
    from skin_collide.addon.properties import method_choices

    assert {"chains", "obb"} <= set(method_choices())
    for o in list(bpy.data.objects):        # the start-up scene's cube, camera, light
        bpy.data.objects.remove(o)
    a, _ = star_character(bpy, "StarA")
    b, arm_b = star_character(bpy, "StarB", location=(0.5, 0.3, 0.0))
    arm_b.rotation_euler = (0.0, 0.0, 0.7)
    for ob in (a, b):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = a
    bpy.context.view_layer.update()
    for method in ("obb", "chains"):
        scene.skin_collide.method = method
        assert bpy.ops.skin_collide.build() == {"FINISHED"}
        objs = {ob.name: storage.load(ob) for ob in (a, b)}
        assert {o.method for o in objs.values()} == {method}
        assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
        res = session.live_result(scene)
        assert res.n_pairs > 0
        _, lines = overlay.result_arrays(res, objs, True, 3)
        if method == "obb":
            from skin_collide.core.methods.obb import _depth_from_root

            n_boxes = 0
            for o in objs.values():
                dep = _depth_from_root(o.data)
                lvl = min(3, int(dep.max()))
                n_boxes += int(((dep == lvl) | ((dep < lvl) & (o.data.first_child < 0))).sum())
            assert lines.shape[0] == 24 * n_boxes
        else:
            n = sum(o.data.n_spheres for o in objs.values())
            one = overlay.drawable_wires(registry.get("chains").drawable(
                objs["StarA"].rig, objs["StarA"].data,
                Frame(res.positions[0], res.triangles[0], None), 3))
            assert lines.shape[0] == n * one.shape[0] // objs["StarA"].data.n_spheres
        # Every evaluated vertex lies within the drawn volumes' extent.
        pos = np.concatenate(res.positions)
        assert (pos >= lines.min(axis=0) - 1e-4).all() and (pos <= lines.max(axis=0) + 1e-4).all()
    # The live overlay with self-collision: the chains answer, as the headless scan does.
    from skin_collide.addon import scanner

    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert res.modes == ["chains", "chains"]
    sc = scanner.Scanner([a, b], method="chains", self_collision=True)
    pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
    want, _, _ = sc.query(pos, poses)
    assert set(res.polygon_pairs) == set(sc.polygon_pairs(sc.keep(want)))
    assert any(x[0] == x[2] for x in res.polygon_pairs)     # self pairs among them
