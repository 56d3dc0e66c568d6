"""Self-collision of one character per frame: ours against the old sphere tree and Blender.

Per subdivision level of the asset, all in one process on the same frames (medians):

* ours: `core.aabb_tree` (balanced AABB tree, level-synchronous traversal without
  rest-adjacent pairs, exact float64 leaf test), as `core.scan.query_frame` runs it;
* the old sphere-tree self query (`traversal.collide` with on-demand and with bottom-up
  refit), which `query_frame` used before;
* Blender: ``BVHTree.FromObject(ob, depsgraph)`` + ``tree.overlap(tree)`` (the bar);
* Blender's own evaluation of the frame (``frame_set`` + depsgraph);
* end to end (level 0 only is asked for, printed for all): evaluation + reading positions
  and pose + our query + polygon pairs + the overlay's triangle vertices.

It also prints the share of the surface that culling removes: the triangles that reach no
exact test in a frame (boxes and adjacency alone dismiss all their neighbours), and how
much of the leaf level the traversal never generates: the rest-adjacent
triangle pairs (always overlapping, always dropped by the old query) against the box tests
made. Every frame checks that ours equals the old query's pairs (exits non-zero if not).

With ``--parts`` it also prints where our query's time goes, in this process (boxes, the
seed pass, the children of the traversal, the exact tests).

Usage (from the repository root):
    bash dev python bench/bench_self.py --asset makehuman_default.blend --levels 0 1
    bash dev python bench/bench_self.py --asset cesium_man.glb --levels 0 1 2
    bash dev python bench/bench_self.py --asset makehuman_default.blend --levels 0 --skip-old --parts
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import scenes  # noqa: E402

SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "assets")


def load_one(asset: str, level: int):
    import bpy

    from skin_collide.addon import extract, files

    files.load_file(os.path.join(SHARED, asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    scenes.subdivide_rest_mesh(ob, level)
    return ob


def old_self(obj, pos, pose, mode):
    from skin_collide.core import scan as core_scan
    from skin_collide.core import triangles, welds
    from skin_collide.core.query import traversal

    t0 = time.perf_counter()
    tris = core_scan.frame_triangles(obj, pos)
    spheres = core_scan.volumes(obj, pos, pose, mode, tris)
    keys = obj.vertex_keys[tris]

    def test(a, b):
        hit = np.zeros(a.size, dtype=bool)
        far = np.nonzero(~welds.adjacent_pairs(keys, a, b))[0]
        hit[far] = triangles.triangle_pairs_intersect(pos, tris, a[far], pos, tris, b[far])
        return hit

    pairs, _ = traversal.collide(spheres, None, test)
    return pairs, (time.perf_counter() - t0) * 1000.0


def as_set(p):
    return set(map(tuple, np.sort(p, axis=1).tolist()))


#: The parts of our query that `--parts` times: per part, the module of
#: `core/aabb_tree/` that looks it up (`query` for the self query's parts, the traversal's
#: for the seed pass).
PARTS = (("query", "frame_boxes"), ("self_traversal", "_seed_pass"),
         ("query", "candidate_leaf_pairs"), ("query", "exact_test"))


class PartTimer:
    """While entered, times the calls of `PARTS` (wrapped in the module where the query
    looks them up), in ms summed per part; restores them on exit."""

    def __init__(self):
        import importlib

        self.modules = {m: importlib.import_module(f"skin_collide.core.aabb_tree.{m}")
                        for m, _ in PARTS}
        self.ms = dict.fromkeys((name for _, name in PARTS), 0.0)
        self.real = {}

    def _timed(self, name, real):
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                self.ms[name] += (time.perf_counter() - t0) * 1000

        return timed

    def __enter__(self):
        for m, name in PARTS:
            module = self.modules[m]
            self.real[m, name] = getattr(module, name)
            setattr(module, name, self._timed(name, self.real[m, name]))
        return self

    def __exit__(self, *exc):
        for (m, name), real in self.real.items():
            setattr(self.modules[m], name, real)


def run_level(args, level: int) -> dict:
    import bpy
    from mathutils.bvhtree import BVHTree

    from skin_collide.addon import animation, extract, overlay, scanner
    from skin_collide.core import aabb_tree as self_collision
    from skin_collide.core import scan as core_scan

    ob = load_one(args.asset, level)
    sc = scanner.Scanner([ob], self_collision=True)
    obj = sc.objects[0]
    # Our query on a tree of its own: the pipeline's (end to end) has just queried the
    # same frame, and a tree's seed hints follow the last frame it saw
    # (docs/self_collision.md, "Seed hints"), which would favour a second look.
    rig = obj.rig
    tree = self_collision.build(rig.rest_positions, rig.triangles, obj.vertex_keys)
    scene = bpy.context.scene
    arm = extract.modifier_report(ob).armature
    act = arm.animation_data.action if arm.animation_data else None
    frames = animation.action_frames(act) if act else list(range(scene.frame_start, scene.frame_end + 1))
    frames = frames[::args.stride][:args.max_frames]
    rows = {k: [] for k in ("eval", "ours", "od", "bu", "bl", "e2e", "pairs", "box", "tri", "slab", "culled",
                            "p_boxes", "p_seeds", "p_children", "p_exact")}
    skipped = int(tree.adj_idx.size // 2)
    for f in frames:
        t0 = time.perf_counter()
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        rows["eval"].append((time.perf_counter() - t0) * 1000)
        t1 = time.perf_counter()
        pos, poses = sc.evaluate(dg)
        res = core_scan.query_frame(sc.objects, pos, poses, self_collision=True)
        polys = core_scan.polygon_pairs(sc.objects, res)
        hit = np.unique(np.concatenate([p.ravel() for _, _, p in res.pairs])) if res.pairs \
            else np.zeros(0, np.int64)
        overlay.triangle_overlay(pos[0], obj.rig.triangles, hit)
        rows["e2e"].append(rows["eval"][-1] + (time.perf_counter() - t1) * 1000)
        st = {}
        parts = PartTimer() if args.parts else contextlib.nullcontext()
        with parts:
            t0 = time.perf_counter()
            # The frame's triangles (Blender re-splits bent quads), as query_frame uses them.
            ftris = core_scan.frame_triangles(obj, pos[0])
            ours = self_collision.self_pairs(tree, pos[0], ftris, tree.weld_ids, stats=st)
            rows["ours"].append((time.perf_counter() - t0) * 1000)
        if args.parts:
            ms = parts.ms
            rows["p_boxes"].append(ms["frame_boxes"])
            rows["p_seeds"].append(ms["_seed_pass"])
            rows["p_children"].append(ms["candidate_leaf_pairs"] - ms["_seed_pass"])
            rows["p_exact"].append(ms["exact_test"])
        rows["box"].append(st["box_tests"])
        rows["tri"].append(st["triangle_tests"])
        rows["slab"].append(st["slab_apart"])
        rows["culled"].append(100.0 * (1.0 - st["tested_triangles"] / obj.rig.n_triangles))
        rows["pairs"].append(len(ours))
        if not args.skip_old:
            od, ms = old_self(obj, pos[0], poses[0], "on-demand")
            rows["od"].append(ms)
            bu, ms = old_self(obj, pos[0], poses[0], "bottom-up")
            rows["bu"].append(ms)
            if as_set(od) != as_set(ours) or as_set(bu) != as_set(ours):
                sys.exit(f"MISMATCH at level {level} frame {f}: ours {len(ours)} "
                         f"old {len(od)}/{len(bu)}")
        t0 = time.perf_counter()
        bt = BVHTree.FromObject(ob, dg)
        bt.overlap(bt)
        rows["bl"].append((time.perf_counter() - t0) * 1000)
        if args.verbose:
            print(f"  L{level} f{f}: pairs {len(ours)} ours {rows['ours'][-1]:.1f} ms, "
                  f"blender {rows['bl'][-1]:.1f}, polys {len(polys)}", flush=True)
    out = {"level": level, "triangles": obj.rig.n_triangles, "frames": len(frames),
           "build_s": tree.build_seconds, "skipped": skipped}
    for k, v in rows.items():
        out[k] = float(np.median(v)) if v else float("nan")
    return out


def print_table(args, results):
    print(f"\nSelf-collision, {args.asset} (one character, medians over frames; ms per frame)")
    head = ["Subdivisions"] + [str(r["level"]) for r in results]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    lines = [("Triangles", "triangles", "{:.0f}"), ("Frames", "frames", "{:.0f}"),
             ("Self pairs", "pairs", "{:.0f}"),
             ("Ours ms", "ours", "{:.2f}"),
             ("Old sphere tree, on-demand ms", "od", "{:.2f}"),
             ("Old sphere tree, bottom-up ms", "bu", "{:.2f}"),
             ("Blender FromObject+self-overlap ms", "bl", "{:.2f}"),
             ("Blender evaluation ms", "eval", "{:.2f}"),
             ("End to end (eval + query + drawing data) ms", "e2e", "{:.2f}"),
             ("Ours: box tests", "box", "{:.0f}"), ("Ours: leaf candidates (slabs, then exact test)", "tri", "{:.0f}"),
             ("Ours: leaf candidates the slabs prove apart", "slab", "{:.0f}"),
             ("Rest-adjacent pairs never generated", "skipped", "{:.0f}"),
             ("Surface culled (% of triangles in no leaf candidate)", "culled", "{:.1f}"),
             ("Ours build s", "build_s", "{:.2f}")]
    if args.parts:
        lines += [("Ours, part: boxes ms", "p_boxes", "{:.2f}"),
                  ("Ours, part: seed pass ms", "p_seeds", "{:.2f}"),
                  ("Ours, part: children (traversal) ms", "p_children", "{:.2f}"),
                  ("Ours, part: exact tests ms", "p_exact", "{:.2f}")]
    for label, key, fmt in lines:
        print("| " + " | ".join([label] + [fmt.format(r[key]) for r in results]) + " |")
    for label, num, den in (("Speed-up vs Blender FromObject", "bl", "ours"),
                            ("Speed-up vs old on-demand", "od", "ours"),
                            ("Speed-up vs old bottom-up", "bu", "ours"),
                            ("Ours vs Blender evaluation", "eval", "ours")):
        print("| " + " | ".join([label] + [f"{r[num] / max(r[den], 1e-9):.1f}x" for r in results]) + " |")
    for r in results:
        frac = r["skipped"] / max(r["skipped"] + r["box"], 1)
        print(f"level {r['level']}: the never-generated rest-adjacent leaf pairs are "
              f"{100 * frac:.0f}% of (them + all box tests made)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--levels", type=int, nargs="+", default=[0, 1])
    p.add_argument("--stride", type=int, default=6, help="use every Nth frame of the action")
    p.add_argument("--max-frames", type=int, default=8)
    p.add_argument("--skip-old", action="store_true", help="do not run the old sphere query")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--parts", action="store_true",
                   help="also time the parts of our query (boxes, seed pass, children, exact "
                        "tests) by wrapping them; adds a few calls' overhead to *ours*")
    args = p.parse_args()
    if not os.path.isdir(SHARED):
        sys.exit(f"bench needs ../shared/assets next to the repository ({SHARED})")
    results = []
    for level in args.levels:
        print(f"level {level} ...", flush=True)
        results.append(run_level(args, level))
    print_table(args, results)


if __name__ == "__main__":
    main()
