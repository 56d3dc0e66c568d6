"""Run by tests/blender/test_robust.py in a subprocess (selection flags have crashed bpy 5.0.1):
Select Colliding Faces in Object, Weight Paint and Edit Mode on generated meshes and on the
shared assets given on the command line. Prints one line per case:
``OK <case> <mode> <selected> <expected> <selected == expected> <expected == fresh build>
<fresh build == Blender>``: the faces selected are exactly those of the operator's query,
that query equals a fresh build's, and the fresh build equals Blender's BVHTree overlap
(disagreements judged in float64 as tests/blender/test_scan_assets.py does). A crash shows as a
missing line and a non-zero exit code."""
import math
import os
import sys

import bpy
import numpy as np

_TESTS = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [_TESTS, os.path.join(_TESTS, "blender")]    # helpers, and test_scan_assets

from bone_boxes import armature  # noqa: E402

import skin_collide  # noqa: E402
from skin_collide.addon import demo_rig, extract, files, session  # noqa: E402
from skin_collide.cli import exit_process  # noqa: E402


def one_triangle():
    """A one-triangle mesh made by script (from_pydata), skinned to a one-bone armature,
    plus a second triangle object through it so that something collides."""
    bpy.ops.wm.read_homefile(use_empty=True)
    arm = armature("Rig", (("b", (0, 0, 0), (0, 0, 1)),))
    out = []
    for name, verts in (("Tri", [(0, 0, 0), (1, 0, 0), (0, 1, 0)]),
                        ("Tri2", [(0.2, 0.2, -0.5), (0.3, 0.2, 0.5), (0.2, 0.3, 0.5)])):
        me = bpy.data.meshes.new(name)
        me.from_pydata(verts, [], [(0, 1, 2)])
        ob = bpy.data.objects.new(name, me)
        bpy.context.scene.collection.objects.link(ob)
        ob.vertex_groups.new(name="b").add([0, 1, 2], 1.0, "REPLACE")
        mod = ob.modifiers.new("Armature", "ARMATURE")
        mod.object = arm
        out.append(ob)
    return out


def tubes():
    a, b = demo_rig.build_demo_scene(rings=16, segments=10, frames=24)
    for ob in bpy.context.scene.objects:
        ob.select_set(ob in (a, b))
    bpy.ops.skin_collide.build()
    for f in range(8, 25):              # the first frame where the tubes collide
        bpy.context.scene.frame_set(f)
        bpy.ops.skin_collide.refresh()
        if session.live_result(bpy.context.scene).n_pairs:
            break
    return [a, b]


def asset(path):
    files.load_file(path)
    scene = bpy.context.scene
    meshes = extract.skinned_meshes(scene)[:1]
    scene.skin_collide.self_collision = True
    arm = extract.modifier_report(meshes[0]).armature
    ad = arm.animation_data
    if ad is not None and ad.action is not None:
        a, b = (int(x) for x in ad.action.frame_range)
        scene.frame_set((a + b) // 2)
    if os.path.basename(path) in STRONG_POSE:    # still at mid-action: pose it into itself
        strong_pose(arm)
    return meshes


# Assets whose mid-action frame has no self-collision: a strong pose instead.
STRONG_POSE = {"fox.glb", "robot_expressive.glb"}


def strong_pose(arm, seed=3):
    from blender_helpers import random_blender_pose

    arm.animation_data_clear()
    random_blender_pose(arm, np.random.default_rng(seed), max_angle=math.radians(120),
                        scale=(0.8, 1.25))
    bpy.context.view_layer.update()


def awkward():
    """A generated character with every weight case (tests/blender_helpers.py), posed so
    that it passes through itself; self-collision on."""
    from blender_helpers import awkward_character

    bpy.ops.wm.read_homefile(use_empty=True)
    ob, arm = awkward_character(bpy)
    strong_pose(arm)
    bpy.context.scene.skin_collide.self_collision = True
    return [ob]


def faces_of(pairs, name):
    return ({pa for a, pa, b, pb in pairs if a == name}
            | {pb for a, pa, b, pb in pairs if b == name})


def check(case, meshes):
    from blender_helpers import judged_against_blender

    for ob in bpy.context.scene.objects:
        ob.select_set(ob in meshes)
    ob = meshes[0]
    bpy.context.view_layer.objects.active = ob
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    scene = bpy.context.scene
    fresh, missed, extra, _ = judged_against_blender(
        bpy, [o for o in scene.objects if o.type == "MESH" and o.select_get()],
        scene.skin_collide.self_collision)
    fresh_faces = faces_of(fresh, ob.name)
    blender_ok = not missed and not extra
    for mode in ("OBJECT", "WEIGHT_PAINT", "EDIT"):
        bpy.ops.object.mode_set(mode=mode)
        assert bpy.ops.skin_collide.select_colliding() == {"FINISHED"}
        res = session.live_result(bpy.context.scene)
        want = faces_of(res.polygon_pairs, ob.name)
        assert ob.mode == mode
        bpy.ops.object.mode_set(mode="OBJECT")
        sel = np.zeros(len(ob.data.polygons), bool)
        ob.data.polygons.foreach_get("select", sel)
        got = set(np.nonzero(sel)[0].tolist())
        print(f"OK {case} {mode} {len(got)} {len(want)} {got == want} "
              f"{want == fresh_faces} {blender_ok}", flush=True)


def hostile():
    """Select Colliding Faces in states where it must report, not crash or raise."""
    for state in ("nothing_active", "armature_active", "pose_mode", "sculpt_mode",
                  "armature_deleted", "empty_mesh"):
        a, b = tubes()
        arm = extract.modifier_report(a).armature
        view = bpy.context.view_layer
        if state == "nothing_active":
            view.objects.active = None
        elif state == "armature_active":
            view.objects.active = arm
        elif state == "pose_mode":
            view.objects.active = arm
            bpy.ops.object.mode_set(mode="POSE")
        elif state == "sculpt_mode":
            view.objects.active = a
            bpy.ops.object.mode_set(mode="SCULPT")
        elif state == "armature_deleted":
            view.objects.active = a
            bpy.data.objects.remove(arm)
        else:
            view.objects.active = a
            a.data.clear_geometry()
        try:
            out = bpy.ops.skin_collide.select_colliding()
        except RuntimeError as exc:
            out = "Python:" not in str(exc) and "Traceback" not in str(exc)
        print(f"OK hostile {state} {out} - True", flush=True)


def main():
    skin_collide.register()
    check("one_triangle", one_triangle())
    check("tubes", tubes())
    check("awkward", awkward())
    hostile()
    for path in sys.argv[1:]:
        check(os.path.basename(path), asset(path))


main()
exit_process(0)     # the pip bpy 4.5 LTS hangs in its exit handlers once a file was read
