"""Helpers for tests that drive the bpy module."""
import math

import numpy as np


def awkward_character(bpy, preserve_volume=False, rings=16, segments=12):
    """A generated character with every weight case Blender's modifier handles specially:
    a group that names no bone, a group of a non-deform bone, unnormalized weights,
    unweighted vertices, a vertex whose total weight is below 1e-4, and vertices with six
    influences. Parented to a transformed armature, with its own offset."""
    from skin_collide.addon import demo_rig

    ob, arm = demo_rig.build_character("Awkward", rings=rings, segments=segments,
                                       n_bones=6, preserve_volume=preserve_volume)
    bpy.context.view_layer.objects.active = arm
    bpy.ops.object.mode_set(mode="EDIT")
    eb = arm.data.edit_bones.new("ctrl")
    eb.head, eb.tail = (0.5, 0, 0), (0.5, 0, 0.3)
    bpy.ops.object.mode_set(mode="OBJECT")
    arm.data.bones["ctrl"].use_deform = False
    V = len(ob.data.vertices)
    ob.vertex_groups.new(name="ctrl").add(list(range(0, V, 3)), 0.9, "REPLACE")
    ob.vertex_groups.new(name="not_a_bone").add(list(range(1, V, 4)), 0.7, "REPLACE")
    bone_groups = [ob.vertex_groups[f"bone_{i}"] for i in range(6)]
    for v in range(0, 6):
        for g in bone_groups:
            g.remove([v])
    for g in bone_groups:
        g.remove([10])
    bone_groups[1].add([10], 5e-5, "REPLACE")
    for v in range(20, 40):
        for i, g in enumerate(bone_groups):
            g.add([v], 0.1 + 0.05 * i, "REPLACE")
    for v in range(40, V, 5):
        bone_groups[2].add([v], 0.8, "ADD")
    arm.location = (0.3, -0.2, 0.1)
    arm.rotation_euler = (0.2, -0.4, 0.7)
    arm.scale = (1.3, 1.3, 1.3)
    ob.location = (0.05, 0.1, -0.02)
    ob.rotation_euler = (0.1, 0.0, 0.3)
    return ob, arm


def random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0),
                        uniform=False, translate=0.05):
    """Set random quaternion rotations (up to `max_angle` about random axes), per-axis
    scales and small translations on every pose bone."""
    for pb in arm.pose.bones:
        pb.rotation_mode = "QUATERNION"
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        ang = rng.uniform(-max_angle, max_angle)
        pb.rotation_quaternion = (math.cos(ang / 2), *(math.sin(ang / 2) * axis))
        s = rng.uniform(*scale, size=3)
        pb.scale = (s[0],) * 3 if uniform else tuple(s)
        pb.location = tuple(rng.uniform(-translate, translate, size=3))


def deviation(bpy, ob, rig):
    """Max |core.skinning − Blender| relative to the evaluated mesh size."""
    from skin_collide.addon import extract
    from skin_collide.core import skinning

    dg = bpy.context.evaluated_depsgraph_get()
    ref = extract.evaluated_positions(ob, dg)
    ours = skinning.skin_rig(rig, extract.pose_from_object(ob, dg))
    return float(np.abs(ours - ref).max() / np.ptp(ref, axis=0).max())


def selected_demo(bpy, build: bool = False, rings: int = 16, segments: int = 10,
                  frames: int = 24):
    """The two generated tube characters, selected (the first one active), built with the
    add-on's Build when `build`. Returns (a, b)."""
    from skin_collide.addon import demo_rig

    a, b = demo_rig.build_demo_scene(rings=rings, segments=segments, frames=frames)
    for ob in (a, b):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = a
    if build:
        assert bpy.ops.skin_collide.build() == {"FINISHED"}
    return a, b


def judged_against_blender(bpy, meshes, self_collision: bool = False, max_judged: int = 400):
    """A fresh build of `meshes` in their current state, queried at the current frame,
    against Blender's own BVHTree overlap. Pairs the two disagree on are judged in exact
    arithmetic on the float64 world coordinates, as tests/blender/test_scan_assets.py does: a pair
    only Blender reports must be exactly disjoint (a float32 artifact); a pair only we
    report must intersect, or touch within float32 precision (Blender's test skips
    touching and coplanar contacts). Returns (our polygon pairs, unexplained misses,
    unexplained extras, number of Blender's triangle pairs)."""
    from test_scan_assets import judge

    from skin_collide.addon import scanner

    sc = scanner.Scanner(meshes, mode="on-demand", self_collision=self_collision)
    pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
    ours = sc.query(pos, poses)[0]
    ref = scanner.bvhtree_pairs(sc.objects, pos, self_collision, sc.triangles, poses)
    import test_scan_assets

    old = test_scan_assets.JUDGED
    test_scan_assets.JUDGED = max_judged      # judge every disagreement up to this many
    try:
        missed, extra, n, _, _ = judge(sc.objects, pos, ours, ref, sc.triangles)
    finally:
        test_scan_assets.JUDGED = old
    return set(sc.polygon_pairs(ours)), missed, extra, n
