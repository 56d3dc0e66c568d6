"""`obb` on the shared characters (pip bpy): two copies crossing, a few animation frames
and random strong poses (170° twists, bone scale 0.5-2): the pairs between the two
characters equal the sphere tree's, and brute force's on the small mesh; every leaf box
holds Blender's evaluated vertices of its leaf."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from blender_helpers import random_blender_pose
from conftest import ASSET_FILES

pytestmark = [pytest.mark.asset, pytest.mark.blender]
ASSETS = [a for a in ("fox.glb", "cesium_man.glb", "makehuman_default.blend") if a in ASSET_FILES]
FRAMES = 3
POSES = 2


def _crossing(bpy, assets_dir, asset):
    from skin_collide.addon import extract, files

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import scenes

    files.load_file(str(assets_dir / asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    arm = extract.modifier_report(meshes[0]).armature
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    c = extract.evaluated_positions(ob, bpy.context.evaluated_depsgraph_get()).mean(axis=0)
    d = c - np.array(arm.matrix_world.translation)
    turned = np.array([-d[1], d[0], 0.0])
    offset = tuple(float(x) for x in (d - turned) * np.array([1.0, 1.0, 0.0]))
    ob2, arm2 = scenes.duplicate_character(ob, arm, "copy", offset=offset, turn=math.pi / 2)
    return ob, arm, ob2, arm2


def _states(bpy, arm, arm2, rng):
    """A few animation frames, then random strong poses of both armatures."""
    from skin_collide.addon import animation

    acts = animation.actions_for(arm)
    if acts:
        animation.use_action(arm, acts[0])
        frames = animation.action_frames(acts[0])
        for f in frames[:: max(1, len(frames) // FRAMES)][:FRAMES]:
            bpy.context.scene.frame_set(f)
            yield f"frame {f}"
    for a in (arm, arm2):
        a.animation_data_clear()
    for k in range(POSES):
        random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
        random_blender_pose(arm2, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
        bpy.context.view_layer.update()
        yield f"pose {k}"


@pytest.mark.parametrize("asset", ASSETS or ["(none)"])
def test_obb_equals_sphere_tree_on_crossing_characters(bpy_module, assets_dir, asset):
    from skin_collide.addon import scanner
    from skin_collide.core import scan
    from skin_collide.core.methods.obb import update

    bpy = bpy_module
    ob, arm, ob2, arm2 = _crossing(bpy, assets_dir, asset)
    obb = scanner.Scanner([ob, ob2], method="obb")
    ref = scanner.Scanner([ob, ob2], method="sphere-tree")
    assert [o.method for o in obb.objects] == ["obb", "obb"], [o.reason for o in obb.objects]
    rng = np.random.default_rng(1)
    found = 0
    for state in _states(bpy, arm, arm2, rng):
        pos, poses = obb.evaluate(bpy.context.evaluated_depsgraph_get())
        got, _, _ = obb.query(pos, poses)
        want, _, _ = ref.query(pos, poses, obb.triangles)
        g = {tuple(p) for i, j, q in got if i != j for p in q.tolist()}
        w = {tuple(p) for i, j, q in want if i != j for p in q.tolist()}
        assert g == w, (asset, state, len(g - w), len(w - g))
        if asset == "fox.glb":
            t = obb.triangles
            bf = scan.brute_force_pairs(pos[0], t[0], pos[1], t[1])
            assert g == {tuple(p) for p in bf.tolist()}, state
        # Every leaf box holds Blender's evaluated vertices of its leaf.
        for o, p, pose in zip(obb.objects, pos, poses):
            d = o.data
            c, a, e = update.leaf_boxes_lbs(d, pose)
            seg = np.repeat(np.arange(d.n_leaves), np.diff(d.leaf_vert_ptr))
            local = np.einsum("vij,vj->vi", a[seg], p[d.leaf_verts] - c[seg])
            assert (np.abs(local) <= e[seg]).all(), (asset, state, o.name)
        found += len(g)
    assert found > 0, "the copies never touched: the test would prove nothing"
