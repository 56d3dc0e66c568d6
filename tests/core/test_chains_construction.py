"""The paper's sphere construction for sphere chains (Madera et al. 2015, §3, §5.1).

* deterministic: building twice gives the same arrays;
* the march's spheres lie inside the volume at rest: every centre is inside the mesh
  (signed ray crossings, majority over random directions: an inside test independent of
  the build's solid-angle winding number) and no point of the surface (vertices, edge midpoints, centroids,
  random points of every triangle) is strictly inside a sphere;
* the sliced fallback is used only where the march fails (a region with no station);
* per frame, the pivot-centre spheres enclose every vertex of their polygons, with no
  tolerance, in strong random poses (170° twists, bone scale 0.5-2) 1 km out, and
  (asset, Blender) on Fox and Cesium Man evaluated by Blender: animation frames and
  strong random poses with the armature 1 km out (there the build is also checked
  deterministic, every region marched, every centre inside the rest mesh).
"""
import math

import numpy as np
import pytest
from chains_helpers import star_rig

from skin_collide.core import procedural, skinning
from skin_collide.core.methods.chains import chains, march


def rigs():
    from test_obb import branching_rig

    return {"star3": star_rig(3), "star5": star_rig(5), "branching": branching_rig()}


@pytest.fixture(scope="module")
def built():
    return {k: (rig, chains.build(rig)) for k, rig in rigs().items()}


def test_deterministic(built):
    for name, (rig, data) in built.items():
        again = chains.build(rig).arrays()
        first = data.arrays()
        assert first.keys() == again.keys()
        for k in first:
            np.testing.assert_array_equal(first[k], again[k], err_msg=f"{name} {k}")


def _inside_by_rays(q, V, T, rng, n_dirs=9):
    """Majority over random ray directions of a non-zero signed crossing count (each hit
    counted +-1 by the side of the triangle the ray leaves through: the winding number of
    a closed surface, also inside overlapping closed parts, where the parity is even);
    Möller-Trumbore written here independently of the build."""
    A, B, C = V[T[:, 0]], V[T[:, 1]], V[T[:, 2]]
    votes = np.zeros(q.shape[0], int)
    for d in rng.normal(size=(n_dirs, 3)):
        d /= np.linalg.norm(d)
        e1, e2 = B - A, C - A
        h = np.cross(d, e2)
        a = (e1 * h).sum(1)
        f = 1.0 / np.where(np.abs(a) < 1e-15, np.nan, a)
        for i, p in enumerate(q):
            s = p - A
            u = f * (s * h).sum(1)
            qq = np.cross(s, e1)
            v = f * (qq @ d)
            t = f * (e2 * qq).sum(1)
            hit = (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
            votes[i] += int(np.nansum(np.where(hit, np.sign(a), 0.0))) != 0
    return votes > n_dirs // 2


def test_march_spheres_lie_inside_the_volume(built):
    rng = np.random.default_rng(3)
    for name, (rig, data) in built.items():
        assert data.region_built.all(), name          # the march succeeds on these rigs
        V, T = rig.rest_positions, rig.triangles
        ok = np.isfinite(data.rest_radius)
        assert ok.all()
        c, r = data.rest_center, data.rest_radius
        assert (r > 0).all()
        assert _inside_by_rays(c, V, T, rng).all(), name
        A, B, C = V[T[:, 0]], V[T[:, 1]], V[T[:, 2]]
        w = rng.dirichlet(np.ones(3), size=(8, T.shape[0]))
        pts = np.concatenate([V, (A + B) / 2, (B + C) / 2, (C + A) / 2, (A + B + C) / 3]
                             + [w[k, :, :1] * A + w[k, :, 1:2] * B + w[k, :, 2:] * C
                                for k in range(8)])
        d = np.linalg.norm(pts[:, None] - c[None], axis=2)
        assert (d >= r * (1 - 1e-9)).all(), name
        # Each sphere touches the surface: its radius is the distance to the mesh.
        np.testing.assert_allclose(march.distance_to_triangles(c, A, B, C), r)


def test_fallback_only_where_the_march_fails():
    """A region the disk cannot march (a limb made of one flat sheet: no ray of a disk
    hits it from all around) keeps the slices; `construction="slices"` slices all."""
    rig = star_rig(3)
    data = chains.build(rig, construction="slices")
    assert not data.region_built.any() and np.isnan(data.rest_radius).all()
    flat = star_rig(3)
    # Squash limb 1's vertices onto a plane through its axis: the disk's rays then miss.
    reg = chains.regions(flat)
    tb = chains.dominant_bones(flat)
    verts = np.unique(flat.triangles[reg.bone_region[tb] == 1])
    P = flat.rest_positions.copy()
    d = np.array([math.cos(0), math.sin(0), -0.3])
    n = np.cross(d, [0, 0, 1.0])
    n /= np.linalg.norm(n)
    P[verts] -= np.outer(P[verts] @ n, n)
    flat.rest_positions = P
    got = chains.build(flat)
    assert got.region_built.tolist() == [1, 0, 1, 1]
    # The per-frame bound holds whatever the construction.
    c, r = chains.frame_spheres(got, P)
    seg = np.repeat(np.arange(got.n_spheres), np.diff(got.sphere_vert_ptr))
    assert (np.linalg.norm(P[got.sphere_verts] - c[seg], axis=1) <= r[seg]).all()


def _check_enclosure(data, P, tris=None):
    for how in ("pivots", "mean"):
        c, r = chains.frame_spheres(data, P, how)
        seg = np.repeat(np.arange(data.n_spheres), np.diff(data.sphere_vert_ptr))
        d = P[data.sphere_verts] - c[seg]
        assert (np.sqrt((d * d).sum(1)) <= r[seg]).all(), how
        assert (np.linalg.norm(d, axis=1) <= r[seg]).all(), how
        if tris is not None:          # the frame's (re-split) triangles, corner by corner
            s = data.tri_sphere
            for k in range(3):
                dd = np.linalg.norm(P[tris[:, k]] - c[s], axis=1)
                assert (dd <= r[s]).all(), how


def test_pivot_spheres_enclose_in_strong_poses_1km_out(built):
    rng = np.random.default_rng(11)
    for _name, (rig, data) in built.items():
        assert np.diff(data.pivot_ptr).min() > 0
        for _ in range(6):
            pose = procedural.random_pose(rig, rng, max_angle=math.radians(170),
                                          scale_range=(0.5, 2.0))
            P = skinning.lbs_rig(rig, pose)
            for off in (0.0, 1000.0):
                _check_enclosure(data, P + np.array([off, -0.7 * off, 0.3 * off]),
                                 rig.triangles)


@pytest.mark.asset
@pytest.mark.blender
@pytest.mark.parametrize("asset", ["fox.glb", "cesium_man.glb"])
def test_pivot_spheres_enclose_blender_evaluated(bpy_module, assets_dir, asset):
    from blender_helpers import random_blender_pose

    from skin_collide.addon import animation, extract, files, scanner

    if not (assets_dir / asset).is_file():
        pytest.skip(f"{asset} missing")
    bpy = bpy_module
    files.load_file(str(assets_dir / asset))
    ob = max(extract.skinned_meshes(bpy.context.scene), key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    sc = scanner.Scanner([ob], method="chains", self_collision=True)
    obj = sc.objects[0]
    assert obj.method == "chains", obj.reason
    data = obj.data
    assert data.region_built.all() and np.isfinite(data.rest_radius).all()
    again = chains.build(obj.rig).arrays()
    for k, v in data.arrays().items():
        np.testing.assert_array_equal(v, again[k], err_msg=k)
    rig = obj.rig
    assert _inside_by_rays(data.rest_center, rig.rest_positions, rig.triangles,
                           np.random.default_rng(2)).all()
    arm.location = tuple(np.array(arm.location) + [1000.0, -700.0, 300.0])
    n = 0
    acts = animation.actions_for(arm)
    if acts:
        animation.use_action(arm, acts[0])
        fr = animation.action_frames(acts[0])
        for f in fr[:: max(1, len(fr) // 4)][:4]:
            bpy.context.scene.frame_set(f)
            pos, _ = sc.evaluate(bpy.context.evaluated_depsgraph_get())
            _check_enclosure(data, pos[0], sc.triangles[0])
            n += 1
    arm.animation_data_clear()
    rng = np.random.default_rng(5)
    for _ in range(4):
        random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
        bpy.context.view_layer.update()
        pos, _ = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        assert np.abs(pos[0]).max() > 500.0
        _check_enclosure(data, pos[0], sc.triangles[0])
        n += 1
    assert n >= 4
