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

``--against REV`` times instead two versions of the self query in one process: A (REV's
skin_collide, imported under another name) against B (this checkout), on the same frames
(every ``--stride``-th, all of them by default with ``--against``, ``--reps`` passes),
alternating which goes first, with Blender's `BVHTree.FromObject` + self-overlap run
before each query (its work evicts part of the cache, as Blender's own work does between
frames of playback). Both answers must be equal on every frame (exits otherwise). Prints
the medians and their difference; ``--frame`` times each version's whole frame query
(`core.scan.query_frame`, self-collision on) instead of the self tree.

    bash dev python -m bench self --asset makehuman_default.blend --levels 0 1
    bash dev python -m bench self --asset cesium_man.glb --levels 0 1 2
    bash dev python -m bench self --asset makehuman_default.blend --levels 0 --skip-old --parts
    bash dev python -m bench self --against 0f47e90 --asset cesium_man.glb --levels 1
    bash dev python -m bench self --against f935662 --frame --reps 3
"""
from __future__ import annotations

import contextlib
import sys

import numpy as np

from bench import ab, registry, scenes, timing
from bench.queries import as_set, old_self

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
            t0 = timing.now()
            try:
                return real(*args, **kwargs)
            finally:
                self.ms[name] += timing.ms_since(t0)

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

    from skin_collide.addon import overlay, scanner
    from skin_collide.core import aabb_tree as self_collision
    from skin_collide.core import scan as core_scan

    ob = scenes.load_one(args.asset, level)
    sc = scanner.Scanner([ob], self_collision=True)
    obj = sc.objects[0]
    # Our query on a tree of its own: the pipeline's (end to end) has just queried the
    # same frame, and a tree's seed hints follow the last frame it saw
    # (docs/self_collision.md, "Seed hints"), which would favour a second look.
    rig = obj.rig
    tree = self_collision.build(rig.rest_positions, rig.triangles, obj.vertex_keys)
    scene = bpy.context.scene
    frames = scenes.action_frames(ob)[::args.stride or 6][:args.max_frames or 8]
    rows = timing.Samples("eval", "ours", "od", "bu", "bl", "e2e", "pairs", "box", "tri", "slab",
                          "culled", "p_boxes", "p_seeds", "p_children", "p_exact")
    skipped = int(tree.adj_idx.size // 2)
    for f in frames:
        t0 = timing.now()
        scene.frame_set(f)
        dg = bpy.context.evaluated_depsgraph_get()
        rows["eval"].append(timing.ms_since(t0))
        t1 = timing.now()
        pos, poses = sc.evaluate(dg)
        res = core_scan.query_frame(sc.objects, pos, poses, self_collision=True)
        polys = core_scan.polygon_pairs(sc.objects, res)
        hit = np.unique(np.concatenate([p.ravel() for _, _, p in res.pairs])) if res.pairs \
            else np.zeros(0, np.int64)
        overlay.triangle_overlay(pos[0], obj.rig.triangles, hit)
        rows["e2e"].append(rows["eval"][-1] + timing.ms_since(t1))
        st = {}
        parts = PartTimer() if args.parts else contextlib.nullcontext()
        with parts:
            t0 = timing.now()
            # The frame's triangles (Blender re-splits bent quads), as query_frame uses them.
            ftris = core_scan.frame_triangles(obj, pos[0])
            ours = self_collision.self_pairs(tree, pos[0], ftris, tree.weld_ids, stats=st)
            rows["ours"].append(timing.ms_since(t0))
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
        rows["bl"].append(timing.blender_overlap([ob], dg)[0])
        if args.verbose:
            print(f"  L{level} f{f}: pairs {len(ours)} ours {rows['ours'][-1]:.1f} ms, "
                  f"blender {rows['bl'][-1]:.1f}, polys {len(polys)}", flush=True)
    out = {"level": level, "triangles": obj.rig.n_triangles, "frames": len(frames),
           "build_s": tree.build_seconds, "skipped": skipped}
    out.update(rows.medians())
    return out


def print_table(args, results):
    print(f"\nSelf-collision, {args.asset} (one character, medians over frames; ms per frame)")
    head = ["Subdivisions"] + [str(r["level"]) for r in results]
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
    timing.print_columns(head, lines, results, (("Speed-up vs Blender FromObject", "bl", "ours"),
                                                ("Speed-up vs old on-demand", "od", "ours"),
                                                ("Speed-up vs old bottom-up", "bu", "ours"),
                                                ("Ours vs Blender evaluation", "eval", "ours")))
    for r in results:
        frac = r["skipped"] / max(r["skipped"] + r["box"], 1)
        print(f"level {r['level']}: the never-generated rest-adjacent leaf pairs are "
              f"{100 * frac:.0f}% of (them + all box tests made)")


def against(args, a, level: int) -> None:
    """A (REV, the package `a`) against B (this checkout) on one level's frames."""
    import bpy

    from skin_collide.addon import scanner
    from skin_collide.core import aabb_tree as self_b
    from skin_collide.core import scan as scan_b

    # The AABB tree's package, since core/ has rooms, and before.
    versions = [(ab.module(a.__name__, "core.aabb_tree", "core.self_collision"),
                 ab.module(a.__name__, "core.scan")), (self_b, scan_b)]
    ob = scenes.load_one(args.asset, level)
    sc = scanner.Scanner([ob], self_collision=True)
    obj = sc.objects[0]
    rig = obj.rig
    trees = [m.build(rig.rest_positions, rig.triangles, obj.vertex_keys) for m, _ in versions]
    # --frame: each version's whole frame query (`core.scan.query_frame`, self-collision
    # on), on an object that version prepared itself.
    objs = [scan.prepare(rig) for _, scan in versions] if args.frame else None
    scene = bpy.context.scene
    frames = scenes.action_frames(ob)[::args.stride or 1][:args.max_frames]
    ms = timing.Samples("A", "B")
    for _ in range(args.reps):
        for k, f in enumerate(frames):
            scene.frame_set(f)
            dg = bpy.context.evaluated_depsgraph_get()
            pos, poses = sc.evaluate(dg)
            answers = [None, None]
            for i in timing.alternate(k):
                timing.blender_overlap([ob], dg)
                module, scan = versions[i]
                t0 = timing.now()
                if objs is not None:
                    res = scan.query_frame([objs[i]], pos, poses, self_collision=True,
                                           triangles=sc.triangles)
                    answers[i] = np.concatenate([q for _, _, q in res.pairs]) \
                        if res.pairs else np.zeros((0, 2), np.int64)
                else:
                    tris = scan.frame_triangles(obj, pos[0])
                    answers[i] = module.self_pairs(trees[i], pos[0], tris, trees[i].weld_ids)
                ms.add(**{"AB"[i]: timing.ms_since(t0)})
            if not np.array_equal(answers[0], answers[1]):
                sys.exit(f"frame {f}: the two versions' pairs differ")
    a_ms, b_ms = ms.median("A"), ms.median("B")
    print(f"{args.asset} level {level}, {len(frames)} frames x {args.reps}: "
          f"A ({args.against}) {a_ms:.3f} ms, B (this checkout) {b_ms:.3f} ms, "
          f"B - A {b_ms - a_ms:+.3f} ms ({(b_ms - a_ms) / a_ms * 100:+.1f}%); answers equal")


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--levels", type=int, nargs="+", default=[0, 1])
    p.add_argument("--stride", type=int, default=None,
                   help="use every Nth frame of the action (default 6; 1 with --against)")
    p.add_argument("--max-frames", type=int, default=None,
                   help="at most this many frames (default 8; all with --against)")
    p.add_argument("--skip-old", action="store_true", help="do not run the old sphere query")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--parts", action="store_true",
                   help="also time the parts of our query (boxes, seed pass, children, exact "
                        "tests) by wrapping them; adds a few calls' overhead to *ours*")
    p.add_argument("--reps", type=int, default=2, help="with --against: passes over the frames")
    p.add_argument("--frame", action="store_true",
                   help="with --against: time the whole frame query (core.scan.query_frame), "
                        "not the self tree")


def run(args) -> int:
    scenes.require(args.asset)
    if args.against:
        with ab.revision(args.against) as a:
            for level in args.levels:
                against(args, a, level)
        return 0
    results = []
    for level in args.levels:
        print(f"level {level} ...", flush=True)
        results.append(run_level(args, level))
    print_table(args, results)
    return 0


registry.register("self", "one character's self-collision query per frame: ours against the "
                  "old sphere tree and Blender's BVHTree rebuild, per subdivision level",
                  options, run, smoke={"asset": scenes.SMOKE, "levels": [0, 1], "stride": 3,
                                       "max_frames": 2, "parts": True, "reps": 1},
                  against=True, doc=__doc__)
