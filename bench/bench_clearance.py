"""Clearance (issue 42): the near pairs within D of two objects per frame, ours against
the best answer Blender's own API gives, and against our pipeline without clearance.

Scenes (MakeHuman, ~27k triangles; D = 1% of the character's height):

* ``shirt``: a garment, a copy of the body's torso polygons (those whose dominant bone
  is a spine, breast, clavicle, shoulder or upper-arm bone) pushed out along the rest
  vertex normals by 0.5% of the height, skinned to the same armature with the same
  weights (nearly every shirt triangle lies within D of the body);
* ``pair``: two MakeHumans side by side, the copy moved along X so that hands, arms and
  shoulders pass within D as the action plays (few pairs interpenetrate).

Per frame of the action, all in one process on the same evaluated depsgraph (medians):

a. ours with clearance: ``Scanner(..., clearance=D).current`` (evaluate, intersection
   query, near pairs, contacts and near contacts: what a scan runs per frame, less the
   frame change);
b. ours without clearance: the same on a ``Scanner`` without it (intersection only);
c. Blender: the evaluated world-space loop triangles of both objects,
   ``BVHTree.FromPolygons`` of each, ``overlap`` (the intersecting pairs, distance 0),
   and ``find_nearest_range(centroid, D + R)`` in B's tree for each triangle of A (R: its
   circumradius about the centroid; A the object with fewer triangles), then the exact
   distance of those candidates, vectorized (`core.geometry.distance.pair_distances`,
   the project's numpy kernel, so the exact part costs what ours does per pair).

It prints a/b, c/a, and whether the polygon pairs within D (intersecting or near) agree
between (a) and (c) on every frame (exits non-zero if not).

Usage (from the repository root):
    bash dev python bench/bench_clearance.py
    bash dev python bench/bench_clearance.py --scenes shirt --max-frames 4 --profile
    bash dev python bench/bench_clearance.py --near-pairs     # (a) listing every pair
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scenes  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "assets")

#: Vertex groups of the shirt's polygons (their dominant bone), by name prefix.
SHIRT_BONES = ("spine", "breast", "clavicle", "shoulder", "upperarm")


def load_body(asset: str):
    import bpy

    from skin_collide.addon import extract, files

    files.load_file(os.path.join(SHARED, asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    return ob, extract.modifier_report(ob).armature


def height(ob) -> float:
    return float(ob.dimensions.z)


def make_shirt(ob, push: float):
    """A copy of `ob` keeping the polygons whose dominant bone is one of `SHIRT_BONES`,
    pushed out along the rest vertex normals by `push` (same armature, same weights)."""
    import bmesh
    import bpy

    names = {g.index: g.name for g in ob.vertex_groups}
    me = ob.data
    nv = len(me.vertices)
    torso = np.zeros(nv)
    other = np.zeros(nv)
    for v in me.vertices:
        for g in v.groups:
            if names[g.group].startswith(SHIRT_BONES):
                torso[v.index] += g.weight
            else:
                other[v.index] += g.weight
    shirt = ob.copy()
    shirt.data = me.copy()
    shirt.name = "shirt"
    bpy.context.scene.collection.objects.link(shirt)
    bm = bmesh.new()
    bm.from_mesh(shirt.data)
    bm.verts.ensure_lookup_table()
    drop = [f for f in bm.faces
            if sum(torso[v.index] for v in f.verts) <= sum(other[v.index] for v in f.verts)]
    bmesh.ops.delete(bm, geom=drop, context="FACES_ONLY")
    bmesh.ops.delete(bm, geom=[v for v in bm.verts if not v.link_faces], context="VERTS")
    bm.normal_update()
    for v in bm.verts:
        v.co += v.normal * push
    bm.to_mesh(shirt.data)
    bm.free()
    bpy.context.view_layer.update()
    return shirt


def world_triangles(ob, dg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The evaluated world positions (V, 3) float64, loop triangles (T, 3) int64 and
    their polygons (T,) int64 of `ob` at the depsgraph's frame."""
    me = ob.evaluated_get(dg).data
    co = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", co)
    M = np.array(ob.evaluated_get(dg).matrix_world, np.float64)
    pos = co.reshape(-1, 3).astype(np.float64) @ M[:3, :3].T + M[:3, 3]
    me.calc_loop_triangles()
    n = len(me.loop_triangles)
    tris = np.empty(n * 3, np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    poly = np.empty(n, np.int32)
    me.loop_triangles.foreach_get("polygon_index", poly)
    return pos, tris.reshape(-1, 3).astype(np.int64), poly.astype(np.int64)


def blender_near(obs, dg, d: float):
    """(c): polygon pairs (object 0's, object 1's) within d by Blender's BVH trees, and the
    candidate count. Object 0's triangles query object 1's tree or the other way round,
    whichever has fewer triangles."""
    from mathutils.bvhtree import BVHTree

    from skin_collide.core.geometry.distance import pair_distances

    (pa, ta, qa), (pb, tb, qb) = (world_triangles(o, dg) for o in obs)
    tree_a = BVHTree.FromPolygons(pa.tolist(), ta.tolist(), all_triangles=True)
    tree_b = BVHTree.FromPolygons(pb.tolist(), tb.tolist(), all_triangles=True)
    hit = np.array(tree_a.overlap(tree_b), np.int64).reshape(-1, 2)
    swap = tb.shape[0] < ta.shape[0]
    (p1, t1), tree2 = ((pb, tb), tree_a) if swap else ((pa, ta), tree_b)
    c = p1[t1]
    cen = c.mean(axis=1)
    rad = np.sqrt(((c - cen[:, None]) ** 2).sum(axis=2)).max(axis=1) + d
    i1, i2 = [], []
    for k, (x, r) in enumerate(zip(cen.tolist(), rad.tolist())):
        found = tree2.find_nearest_range(x, r)
        if found:
            i2 += [f[2] for f in found]
            i1 += [k] * len(found)
    i1, i2 = np.array(i1, np.int64), np.array(i2, np.int64)
    ia, ib = (i2, i1) if swap else (i1, i2)
    dist = pair_distances(pa, ta, ia, pb, tb, ib).dist
    near = dist <= d
    tri = np.concatenate([hit, np.stack([ia[near], ib[near]], 1)])
    return {(a, b) for a, b in np.stack([qa[tri[:, 0]], qb[tri[:, 1]]], 1).tolist()}, ia.size


def ours_polygons(sc, out) -> set:
    """Polygon pairs (object 0's, object 1's) of the intersecting and the near triangle
    pairs of a frame."""
    got = set()
    for i, j, p in out.tri_pairs:
        if {i, j} == {0, 1}:
            a, b = (p[:, 0], p[:, 1]) if i == 0 else (p[:, 1], p[:, 0])
            got |= set(zip(sc.objects[0].rig.tri_polygon[a].tolist(),
                           sc.objects[1].rig.tri_polygon[b].tolist()))
    for i, _, r in out.near:                  # rows are polygon pairs
        a, b = (r.polys[:, 0], r.polys[:, 1]) if i == 0 else (r.polys[:, 1], r.polys[:, 0])
        got |= set(zip(a.tolist(), b.tolist()))
    return got


def run_scene(args, name: str) -> dict:
    import bpy

    from skin_collide.addon import animation, scanner

    body, arm = load_body(args.asset)
    h = height(body)
    d = 0.01 * h
    if name == "shirt":
        other = make_shirt(body, 0.005 * h)
    else:
        other, _ = scenes.duplicate_character(body, arm, "body_copy",
                                              offset=(args.offset, 0.0, 0.0), turn=0.0)
    obs = [other, body] if name == "shirt" else [body, other]
    sc_a = scanner.Scanner(obs, clearance=d, near_pairs=args.near_pairs)
    sc_b = scanner.Scanner(obs)
    scene = bpy.context.scene
    act = arm.animation_data.action if arm.animation_data else None
    frames = animation.action_frames(act) if act else list(range(scene.frame_start,
                                                                 scene.frame_end + 1))
    frames = frames[::args.stride][:args.max_frames]
    rows = {k: [] for k in ("a", "b", "c", "near", "hits", "cand", "polys")}
    agree = True
    prof = cProfile.Profile() if args.profile else None
    for k, f in enumerate([frames[0]] + frames):       # the first frame warms up
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        out = sc_a.current(scene, dg)
        if prof:
            prof.disable()
        t1 = time.perf_counter()
        sc_b.current(scene, dg)
        t2 = time.perf_counter()
        theirs, cand = blender_near(obs, dg, d)
        t3 = time.perf_counter()
        ours = ours_polygons(sc_a, out)
        if ours != theirs:
            agree = False
            print(f"  {name} frame {f}: DISAGREE ours {len(ours)} Blender {len(theirs)}; "
                  f"only ours {sorted(ours - theirs)[:5]}, only Blender "
                  f"{sorted(theirs - ours)[:5]}", flush=True)
        if not k:
            continue
        for key, v in (("a", t1 - t0), ("b", t2 - t1), ("c", t3 - t2)):
            rows[key].append(v * 1000)
        rows["near"].append(sum(r.polys.shape[0] for _, _, r in out.near))
        rows["hits"].append(sum(p.shape[0] for _, _, p in out.tri_pairs))
        rows["cand"].append(cand)
        rows["polys"].append(len(ours))
        if args.verbose:
            print(f"  {name} frame {f}: a {rows['a'][-1]:.1f} b {rows['b'][-1]:.1f} "
                  f"c {rows['c'][-1]:.1f} ms, near {rows['near'][-1]} hits "
                  f"{rows['hits'][-1]} polygon pairs {len(ours)}", flush=True)
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    med = {k: float(np.median(v)) for k, v in rows.items()}
    med.update(scene=name, d=d, frames=len(frames), agree=agree,
               tris=[o.rig.n_triangles for o in sc_a.objects])
    return med


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--asset", default="makehuman_default.blend")
    ap.add_argument("--scenes", nargs="+", default=["shirt", "pair"], choices=["shirt", "pair"])
    ap.add_argument("--offset", type=float, default=0.85,
                    help="the pair scene: the copy moved this far along X (m)")
    ap.add_argument("--stride", type=int, default=6, help="every Nth frame of the action")
    ap.add_argument("--max-frames", type=int, default=8)
    ap.add_argument("--profile", action="store_true", help="cProfile of (a)")
    ap.add_argument("--near-pairs", action="store_true",
                    help="(a) as `scan --near-pairs`: every listed pair's distance exact")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if not os.path.isdir(SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({SHARED})")
    rows = [run_scene(args, s) for s in args.scenes]
    print("\nms per frame, medians; a: ours with clearance, b: ours without, "
          "c: Blender BVHTree + numpy exact distances")
    print("| scene | triangles | D (m) | frames | near polygon pairs | intersecting triangle pairs | "
          "Blender candidates | a ms | b ms | c ms | a/b | c/a | polygon pairs agree |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['scene']} | {' + '.join(map(str, r['tris']))} | {r['d']:.4f} | "
              f"{r['frames']} | {r['near']:.0f} | {r['hits']:.0f} | {r['cand']:.0f} | "
              f"{r['a']:.1f} | {r['b']:.1f} | {r['c']:.1f} | {r['a'] / r['b']:.2f} | "
              f"{r['c'] / r['a']:.1f} | {'yes' if r['agree'] else 'NO'} "
              f"({r['polys']:.0f} per frame) |")
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
