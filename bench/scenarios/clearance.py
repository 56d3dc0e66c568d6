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

``--against REV``: the whole frame a scan runs with a clearance
(`Scanner(..., clearance=D).current`), A (REV's skin_collide, imported under another
name) against B (this checkout), on the same scenes, alternating which goes first
(`--repeat` answers of each per frame), on the same evaluated depsgraph. The answers must
agree on every frame (exits otherwise): the intersecting polygon pairs, and the near
contacts' polygon pairs, bones and closest distances (their points as far apart as the
distance). Prints per scene the medians of each version's frame and the geometric mean of
the per-frame ratios A / B.

    bash dev python -m bench clearance
    bash dev python -m bench clearance --scenes shirt --max-frames 4 --profile
    bash dev python -m bench clearance --near-pairs     # (a) listing every pair
    bash dev python -m bench clearance --against 509c490 --scenes shirt --repeat 7
"""
from __future__ import annotations

import sys

import numpy as np

from bench import ab, registry, scenes, timing


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--scenes", nargs="+", default=["shirt", "pair"], choices=["shirt", "pair"])
    p.add_argument("--offset", type=float, default=0.85,
                   help="the pair scene: the copy moved this far along X (m)")
    p.add_argument("--stride", type=int, default=6, help="every Nth frame of the action")
    p.add_argument("--max-frames", type=int, default=8)
    p.add_argument("--profile", action="store_true", help="cProfile of (a)")
    p.add_argument("--near-pairs", action="store_true",
                   help="(a) as `scan --near-pairs`: every listed pair's distance exact")
    p.add_argument("--repeat", type=int, default=5,
                   help="with --against: answers of each version per frame")
    p.add_argument("--shirt-bones", nargs="+", default=list(scenes.SHIRT_BONES),
                   help="the shirt's dominant bones (vertex group name prefixes)")
    p.add_argument("--verbose", action="store_true")


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


def build_scene(args, name: str):
    """The scene `name` ("shirt" or "pair"): (the objects, D, the frames)."""
    body, arm = scenes.load_body(args.asset)
    h = float(body.dimensions.z)
    d = 0.01 * h
    if name == "shirt":
        other = scenes.make_shirt(body, 0.005 * h, args.shirt_bones)
    else:
        other, _ = scenes.duplicate_character(body, arm, "body_copy",
                                              offset=(args.offset, 0.0, 0.0), turn=0.0)
    obs = [other, body] if name == "shirt" else [body, other]
    frames = scenes.action_frames(body)[::args.stride][:args.max_frames]
    return obs, d, frames


def run_scene(args, name: str) -> dict:
    import bpy

    from skin_collide.addon import scanner

    obs, d, frames = build_scene(args, name)
    sc_a = scanner.Scanner(obs, clearance=d, near_pairs=args.near_pairs)
    sc_b = scanner.Scanner(obs)
    scene = bpy.context.scene
    rows = timing.Samples("a", "b", "c", "near", "hits", "cand", "polys")
    agree = True
    with timing.profiled(args.profile, 25) as prof:
        for k, f in enumerate([frames[0]] + frames):       # the first frame warms up
            scene.frame_set(f)
            dg = bpy.context.evaluated_depsgraph_get()
            t0 = timing.now()
            if prof:
                prof.enable()
            out = sc_a.current(scene, dg)
            if prof:
                prof.disable()
            t1 = timing.now()
            sc_b.current(scene, dg)
            t2 = timing.now()
            theirs, cand = blender_near(obs, dg, d)
            t3 = timing.now()
            ours = ours_polygons(sc_a, out)
            if ours != theirs:
                agree = False
                print(f"  {name} frame {f}: DISAGREE ours {len(ours)} Blender {len(theirs)}; "
                      f"only ours {sorted(ours - theirs)[:5]}, only Blender "
                      f"{sorted(theirs - ours)[:5]}", flush=True)
            if not k:
                continue
            rows.add(a=(t1 - t0) * 1000, b=(t2 - t1) * 1000, c=(t3 - t2) * 1000,
                     near=sum(r.polys.shape[0] for _, _, r in out.near),
                     hits=sum(p.shape[0] for _, _, p in out.tri_pairs), cand=cand,
                     polys=len(ours))
            if args.verbose:
                print(f"  {name} frame {f}: a {rows.last('a'):.1f} b {rows.last('b'):.1f} "
                      f"c {rows.last('c'):.1f} ms, near {rows.last('near')} hits "
                      f"{rows.last('hits')} polygon pairs {len(ours)}", flush=True)
    med = rows.medians()
    med.update(scene=name, d=d, frames=len(frames), agree=agree,
               tris=[o.rig.n_triangles for o in sc_a.objects])
    return med


def answer(out) -> tuple:
    """What both versions must agree on: intersecting polygon pairs, and per near contact
    (objects, polygon pairs, bones, closest distance)."""
    rec = out.record
    hits = tuple(sorted(map(tuple, rec.pairs)))
    near = tuple(sorted((c.a, c.b, tuple(map(tuple, c.pairs.tolist())), tuple(c.bones),
                         c.min_distance) for c in rec.near_contacts))
    for c in rec.near_contacts:
        gap = float(np.linalg.norm(np.asarray(c.points[0]) - np.asarray(c.points[1])))
        if abs(gap - c.min_distance) > 1e-9:
            sys.exit(f"a near contact's points are {gap} apart, its distance {c.min_distance}")
    return hits, near


def against_scene(args, name: str, scanner_a) -> dict:
    import bpy

    from skin_collide.addon import scanner

    obs, d, frames = build_scene(args, name)
    sc = {"A": scanner_a.Scanner(obs, clearance=d), "B": scanner.Scanner(obs, clearance=d)}
    scene = bpy.context.scene
    times = timing.Samples("A", "B", "ratio")
    for k, f in enumerate([frames[0]] + frames):         # the first frame warms up
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        per = timing.Samples("A", "B")
        answers = {}
        for rep in range(args.repeat):
            for v in timing.alternate(rep + 1, ("A", "B")):
                out, ms = timing.timed(sc[v].current, scene, dg)
                per.add(**{v: ms})
                answers[v] = answer(out)
        if answers["A"] != answers["B"]:
            sys.exit(f"{name} frame {f}: the two versions' answers differ")
        if not k:
            continue
        a, b = per.median("A"), per.median("B")
        times.add(A=a, B=b, ratio=a / b)
        if args.verbose:
            print(f"  {name} frame {f}: A {a:.1f} ms, B {b:.1f} ms ({a / b:.3f}), "
                  f"{len(answers['B'][1])} near contacts", flush=True)
    return {"scene": name, "A": times.median("A"), "B": times.median("B"),
            "ratio": timing.geomean(times["ratio"]), "frames": len(times["ratio"])}


def against(args) -> int:
    scenes.register_addon()
    with ab.revision(args.against) as a:
        scanner_a = ab.module(a.__name__, "addon.scanner")
        rows = [against_scene(args, s, scanner_a) for s in args.scenes]
    print(f"\nThe whole clearance frame, A = {args.against} against B = this checkout "
          f"({args.repeat} answers of each per frame, alternating), medians in ms")
    timing.print_head("scene", "frames", "A ms", "B ms", "A / B (geometric mean per frame)")
    for r in rows:
        timing.print_row(r["scene"], r["frames"], f"{r['A']:.1f}", f"{r['B']:.1f}",
                         f"{r['ratio']:.3f}")
    return 0


def run(args) -> int:
    scenes.require(args.asset)
    if args.against:
        return against(args)
    rows = [run_scene(args, s) for s in args.scenes]
    print("\nms per frame, medians; a: ours with clearance, b: ours without, "
          "c: Blender BVHTree + numpy exact distances")
    timing.print_head("scene", "triangles", "D (m)", "frames", "near polygon pairs",
                      "intersecting triangle pairs", "Blender candidates", "a ms", "b ms",
                      "c ms", "a/b", "c/a", "polygon pairs agree")
    for r in rows:
        timing.print_row(r["scene"], " + ".join(map(str, r["tris"])), f"{r['d']:.4f}",
                         r["frames"], f"{r['near']:.0f}", f"{r['hits']:.0f}", f"{r['cand']:.0f}",
                         f"{r['a']:.1f}", f"{r['b']:.1f}", f"{r['c']:.1f}",
                         f"{r['a'] / r['b']:.2f}", f"{r['c'] / r['a']:.1f}",
                         f"{'yes' if r['agree'] else 'NO'} ({r['polys']:.0f} per frame)")
    return 0 if all(r["agree"] for r in rows) else 1


registry.register("clearance", "near pairs within D (a shirt over a body, two characters "
                  "passing close), against Blender's BVHTree + exact distances and against "
                  "no clearance", options, run,
                  smoke={"asset": scenes.SMOKE, "stride": 3, "max_frames": 2, "repeat": 2,
                         "offset": 0.55, "shirt_bones": ["bone_2", "bone_3"]},
                  against=True, doc=__doc__)
