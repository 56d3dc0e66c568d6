"""Render the README picture of a sphere set posed with its character (issue 10): Cesium
Man (or another asset) at a walk frame, its set built by the method `sphere-set`
(`core.methods.sphere_set.method`), the spheres posed by the method itself (`posed_set`: every leaf
sphere refitted on demand from the bone matrices at the frame, world space) and added as
translucent UV spheres; Cycles on the CPU.

    bash dev python -m bench.pictures.render_sphere_set [--asset cesium_man.glb] [--frame 14]
        [--count 32] [--builder variational|top-down|grid] [--out docs/sphere_set_posed.png]

Prints the builder, the count, the build time, the rest set's E_r and a check that every
posed sphere's triangles' evaluated vertices are inside it.
"""
from __future__ import annotations

import argparse
import colorsys
import math
import os
import sys
import time

import numpy as np

from bench import scenes

HERE = os.path.join(scenes.ROOT, "bench")
SHARED = scenes.SHARED


def _material(name, rgb, alpha):
    import bpy

    mat = bpy.data.materials.new(name)
    mat.use_nodes = True
    bsdf = mat.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.6
    bsdf.inputs["Alpha"].default_value = alpha
    mat.diffuse_color = (*rgb, alpha)
    return mat


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--asset", default="cesium_man.glb")
    ap.add_argument("--frame", type=int, default=14)
    ap.add_argument("--count", type=int, default=32)
    ap.add_argument("--builder", default="variational", choices=["variational", "top-down", "grid"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", default="360x480")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--view", type=float, nargs=3, default=(1.0, -1.0, 0.3),
                    help="direction from the set's centre to the camera (world)")
    ap.add_argument("--out", default=os.path.join(HERE, "..", "docs", "sphere_set_posed.png"))
    a = ap.parse_args(argv)
    W, H = (int(x) for x in a.size.split("x"))

    import bmesh  # noqa: I001 - importable only after bpy
    import bpy
    from mathutils import Vector

    from skin_collide.addon import extract, files
    from skin_collide.core.methods import registry
    from skin_collide.core.methods.base import Frame

    files.load_file(os.path.join(SHARED, a.asset))
    scene = bpy.context.scene
    ob = max(extract.skinned_meshes(scene), key=lambda o: len(o.data.polygons))
    rig = extract.rig_from_object(ob)
    m = registry.get("sphere-set")
    t0 = time.perf_counter()
    data = m.prepare(rig, count=a.count, seed=a.seed, builder=a.builder)
    build_s = time.perf_counter() - t0
    s = data.sphere_set
    if not np.isfinite(s.relative_outside_volume):      # the baselines do not measure
        from skin_collide.core.methods.sphere_set import baselines

        baselines.measure_set(s, rig.rest_positions, rig.triangles, seed=a.seed)
    print(f"{a.asset} '{ob.name}': {a.builder} set of {s.count} spheres built in {build_s:.1f} s, "
          f"rest E_r {s.relative_outside_volume:.3f}")

    scene.frame_set(a.frame)
    dg = bpy.context.evaluated_depsgraph_get()
    pos, tris = extract.evaluated_frame(ob, dg, rig)
    pose = extract.pose_from_object(ob, dg)
    centers, radii = m.posed_set(rig, data, Frame(pos, tris, pose))
    # Check: each posed leaf sphere holds the evaluated vertices of its triangles.
    h = data.hierarchy
    worst = 0.0
    for i, n in enumerate(np.nonzero(data.hier.first_child < 0)[0]):  # loop over leaves
        v = pos[rig.triangles[h.leaf_tris[h.leaf_ptr[n]:h.leaf_ptr[n + 1]]].ravel()]
        worst = max(worst, float((np.linalg.norm(v - centers[i], axis=1) - radii[i]).max()))
    print(f"frame {a.frame}: {len(radii)} posed spheres; largest vertex excess over its sphere "
          f"{worst:.3e} (<= 0: every vertex inside)")

    # Translucent spheres: one UV-sphere mesh, one object per sphere.
    me = bpy.data.meshes.new("set_sphere")
    bm = bmesh.new()
    bmesh.ops.create_uvsphere(bm, u_segments=32, v_segments=16, radius=1.0)
    bm.to_mesh(me)
    bm.free()
    for p in me.polygons:
        p.use_smooth = True
    me.materials.append(None)
    for i, (c, r) in enumerate(zip(centers, radii)):  # loop over spheres (a few dozen)
        rgb = colorsys.hsv_to_rgb((0.5 + 0.35 * ((i * 0.61803) % 1.0)) % 1.0, 0.8, 0.9)
        so = bpy.data.objects.new(f"set_sphere_{i}", me)
        so.location = Vector(c.tolist())
        so.scale = (float(r),) * 3
        so.material_slots[0].link = "OBJECT"
        so.material_slots[0].material = _material(f"set_sphere_{i}", rgb, 0.16)
        scene.collection.objects.link(so)
    body = _material("body", (0.9, 0.45, 0.15), 1.0)
    if not ob.material_slots:
        ob.data.materials.append(None)
    for slot in ob.material_slots:
        slot.link = "OBJECT"
        slot.material = body

    # Camera: orthographic, three-quarter front view, framed on the posed spheres.
    lo = (centers - radii[:, None]).min(0)
    hi = (centers + radii[:, None]).max(0)
    centre, ext = (lo + hi) / 2, hi - lo
    cam_data = bpy.data.cameras.new("render_cam")
    cam_data.type = "ORTHO"
    # ortho_scale spans the longer side of the picture (the height here when H > W).
    horiz, vert = float(np.hypot(ext[0], ext[1])), float(ext[2])
    cam_data.ortho_scale = 1.05 * (max(vert, horiz * H / W) if H >= W else max(horiz, vert * W / H))
    cam = bpy.data.objects.new("render_cam", cam_data)
    scene.collection.objects.link(cam)
    direction = Vector(a.view).normalized()
    cam.location = Vector(centre.tolist()) + direction * float(ext.max() * 4 + 1)
    cam.rotation_euler = (-direction).to_track_quat("-Z", "Y").to_euler()
    cam_data.clip_end = float(ext.max() * 20 + 10)
    scene.camera = cam
    sun_data = bpy.data.lights.new("sun", "SUN")
    sun_data.energy = 3.0
    sun = bpy.data.objects.new("sun", sun_data)
    sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30))
    scene.collection.objects.link(sun)
    if scene.world is None:
        scene.world = bpy.data.worlds.new("world")
    scene.world.use_nodes = True
    bg = scene.world.node_tree.nodes.get("Background")
    bg.inputs["Color"].default_value = (0.22, 0.22, 0.24, 1.0)
    bg.inputs["Strength"].default_value = 1.0
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = a.samples
    scene.render.resolution_x, scene.render.resolution_y = W, H
    scene.render.resolution_percentage = 100
    scene.view_settings.view_transform = "Standard"
    out = os.path.abspath(a.out)
    scene.render.filepath = out
    scene.render.image_settings.file_format = "PNG"
    t0 = time.perf_counter()
    bpy.ops.render.render(write_still=True)
    print(f"wrote {out} ({W}x{H}, Cycles {a.samples} samples, {time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
