"""Characters far from the origin, in Blender (pip bpy module, generated characters):

* two tube characters crossing 1 km and 10 km out, moved there (a) by root motion (the
  armature objects, or the root bones) or (b) modelled there (mesh and bones far from the
  armature's origin): no pair Blender's ``BVHTree.overlap`` finds on the evaluated world
  triangles is missed (disputes judged in exact arithmetic, as in test_scan_assets), and
  every evaluated vertex lies inside its node's refitted sphere;
* the same with one character split into two meshes on its armature: the seam between the
  parts is never reported, the crossing pairs still are.
"""

import numpy as np
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

FRAMES = (8, 40, 42)   # the generated characters pass through each other there


def place_far(kind: str, offset: float, arms, meshes) -> None:
    """Move both characters `offset` out along (1, 1, 0.5), the way `kind` says."""
    w = np.array([1.0, 1.0, 0.5]) * offset
    if kind == "object":                  # root motion on the armature object
        for arm in arms:
            arm.location = tuple(np.array(arm.location) + w)
    elif kind == "root_bone":             # root motion on the root bone
        for arm in arms:
            pb = arm.pose.bones["bone_0"]
            R = np.array(arm.matrix_world.to_3x3()) @ np.array(pb.bone.matrix_local.to_3x3())
            pb.location = tuple(np.linalg.solve(R, w))
    elif kind == "modelled":              # skin and bones modelled far from the origin
        for arm, ob in zip(arms, meshes):
            local = np.linalg.solve(np.array(arm.matrix_world.to_3x3()), w)
            bpy.context.view_layer.objects.active = arm
            bpy.ops.object.mode_set(mode="EDIT")
            for eb in arm.data.edit_bones:
                eb.use_connect = False        # else moving a head drags the parent's tail
            for eb in arm.data.edit_bones:
                eb.head = tuple(np.array(eb.head) + local)
                eb.tail = tuple(np.array(eb.tail) + local)
            bpy.ops.object.mode_set(mode="OBJECT")
            co = np.empty(3 * len(ob.data.vertices))
            ob.data.vertices.foreach_get("co", co)
            ob.data.vertices.foreach_set("co", (co.reshape(-1, 3) + local).ravel())
            ob.data.update()
    bpy.context.view_layer.update()


def split_mesh(ob):
    """Replace `ob` by two meshes (lower and upper half of its faces) on the same armature,
    with the same vertex groups: the parts meet along a seam ring."""
    import bmesh

    parts = []
    zs = [p.center.z for p in ob.data.polygons]
    cut = 0.5 * (min(zs) + max(zs))
    for k, keep_low in enumerate((True, False)):
        part = ob.copy()
        part.data = ob.data.copy()
        part.name = f"{ob.name}_part{k}"
        bpy.context.scene.collection.objects.link(part)
        bm = bmesh.new()
        bm.from_mesh(part.data)
        drop = [f for f in bm.faces if (f.calc_center_median().z < cut) != keep_low]
        bmesh.ops.delete(bm, geom=drop, context="FACES")
        bm.to_mesh(part.data)
        bm.free()
        parts.append(part)
    bpy.data.objects.remove(ob)
    return parts


def check(meshes, expect_parts=(), method="sphere-tree"):
    from test_scan_assets import judge

    from skin_collide.addon import scanner
    from skin_collide.core import scan as core_scan

    sc = scanner.Scanner(meshes, mode="on-demand")
    scene = bpy.context.scene
    found = 0
    for f in FRAMES:
        scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        ours, _, _ = sc.query(pos, poses)
        ref = scanner.bvhtree_pairs(sc.objects, pos, False, sc.triangles, poses)
        missed, _, n, _, _ = judge(sc.objects, pos, ours, ref, sc.triangles)
        assert missed == [], (f, missed[:5])
        for i, j in expect_parts:
            # Parts of one character: Blender's raw overlap sees the seam, we do not.
            assert not any((a, b) == (i, j) for a, b, _ in ours), f
        found += n
        for o, p, pose, tris in zip(sc.objects, pos, poses, sc.triangles):
            assert o.method == method
            # Every sphere the method gives (inner nodes: the on-demand bound, float32
            # margin included; leaves: their frame triangle's ball) holds Blender's vertices.
            v = core_scan.volumes(o, p, pose, "on-demand", tris)
            nodes = np.arange(o.data.tree.n_nodes)
            v.ensure(nodes)
            c, r = v.spheres(nodes)
            inner = o.data.tree.leaf_tri < 0
            seg = np.repeat(nodes, np.diff(o.data.tree.node_vert_ptr))
            keep = inner[seg]
            d = np.linalg.norm(p[o.data.tree.node_verts[keep]] - c[seg[keep]], axis=1)
            assert (d <= r[seg[keep]]).all(), (o.name, f, int((d > r[seg[keep]]).sum()))
    assert found > 0, "the characters never crossed: the test would prove nothing"


@pytest.mark.parametrize("offset", [1e3, 1e4])
@pytest.mark.parametrize("kind", ["object", "root_bone", "modelled"])
def test_crossing_far_from_origin(bpy_module, kind, offset):
    from skin_collide.addon import demo_rig, extract

    demo_rig.build_demo_scene(rings=24, segments=16, frames=48)
    meshes = extract.skinned_meshes(bpy.context.scene)
    arms = [extract.modifier_report(ob).armature for ob in meshes]
    place_far(kind, offset, arms, meshes)
    check(meshes)


@pytest.mark.parametrize("kind", ["object", "modelled"])
def test_preserve_volume_crossing_10_km_out(bpy_module, kind):
    """The Preserve Volume refit's float32 margin (docs/refit_dqs.md §5) at 10 km."""
    from skin_collide.addon import demo_rig, extract

    demo_rig.build_demo_scene(rings=24, segments=16, frames=48, preserve_volume=True)
    meshes = extract.skinned_meshes(bpy.context.scene)
    arms = [extract.modifier_report(ob).armature for ob in meshes]
    place_far(kind, 1e4, arms, meshes)
    check(meshes, method="sphere-tree-pv")


@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_split_character_keeps_seams_far_from_origin(bpy_module, offset):
    from skin_collide.addon import demo_rig, extract

    left, right = demo_rig.build_demo_scene(rings=24, segments=16, frames=48)
    arms = [extract.modifier_report(ob).armature for ob in (left, right)]
    place_far("root_bone", offset, arms, [left, right])
    parts = split_mesh(left)
    check(parts + [right], expect_parts=[(0, 1)])
