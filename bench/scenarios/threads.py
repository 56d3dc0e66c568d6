"""Threads (issue 29 item 4): does splitting a frame's work over a thread pool pay?

numpy releases the GIL inside its array loops, so independent parts of a frame can run on
several cores from one process. This script times, in one process on the same frames, each
part serially and on a ``concurrent.futures.ThreadPoolExecutor(os.cpu_count())`` (made
once, as a real implementation would keep it), and checks that the threaded answer equals
the serial one (exits non-zero if not):

(a) exact: the exact triangle test of the self query's candidate pairs
    (`core.aabb_tree.leaves.exact_test` on the pairs `candidate_leaf_pairs` finds),
    split into `--parts` chunks (default: one per core). *32x* repeats the same
    candidates 32 times (a dense frame's amount of work, same per-call array sizes), and
    once more with the triangle test's blocks 4 times longer when threaded
    (`core.triangles._BLOCK`, patched for that call only).
(b) self: the whole self query of one character, split into independent parts by its
    seeds: every candidate node pair of the level-synchronous traversal descends from
    exactly one seed (a seed, or a child of a candidate of the level above), so giving
    each part every `parts`-th seed of every level partitions the candidates, the leaf
    pairs and the exact tests. Boxes and re-split pairs are computed once, before the
    split. Compared with `self_collision.self_pairs` (the production call) and with the
    same split run serially (the cost of splitting alone).
(c) objects: N copies of the character (`scenes.duplicate_character`, side by side):
    each object's self query (`self_collision.object_self_pairs`) as one task; the whole
    frame (`core.scan.query_frame` with self-collision) against the object pairs
    (`query_frame` without self) and each self query as tasks; and each candidate object
    pair as its own `query_frame` task against the one stacked traversal of all pairs.
(d) build: `core.scan.prepare` (the default method's data) and the exact self tree
    (`self_collision.build`) of N characters, one task each.

(0) control: plain in-place numpy calls of 2**21, 2**13 (the exact test's block) and
    2**10 elements, one task per worker: what the machine gives while the bench runs.

Per asset it also prints the serial phases of one self query (boxes, traversal, exact
test), which bound what a split of the exact test alone can gain.

*control* (a column): after every round, 2 tasks of in-place numpy calls on 2**20 elements
are timed serially and on the pool; the column is the median of that speed-up over the
row's rounds. The 2 cores are shared with other jobs: near 2x the second core was free
while the row ran, near 1x it was not, and the row says little about threads.

Timing: per frame, `--rounds` rounds of serial and threaded calls, the order alternating
(A B, B A, ...); the table gives the median over all rounds and frames, and the speed-up
as the median of the per-round ratios serial / threaded with their 25th-75th percentiles.

    bash dev python -m bench threads                         # MakeHuman 0, 1; Cesium Man 1
    bash dev python -m bench threads --cases makehuman_default.blend:0 --objects makehuman_default.blend:0:2
    bash dev python -m bench threads --skip-build --rounds 3
"""
from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench import registry, scenes, timing

ROWS: list[dict] = []
#: [f] with f() -> the speed-up of a short plain-numpy control, run after every round: the
#: second core is shared with other jobs, and this says whether it was free at that time.
CONTROL: list = []


ms_since = timing.ms_since


def measure(serial, threaded, same, rounds: int, out: dict) -> None:
    """`rounds` timed calls of each, order alternating; `same(a, b)` must hold for every
    pair of answers (else exit non-zero). Appends to out["s"], out["t"], out["r"]."""
    for k in range(rounds):
        order = (0, 1) if k % 2 == 0 else (1, 0)
        got = [None, None]
        ms = [0.0, 0.0]
        for which in order:
            fn = serial if which == 0 else threaded
            t0 = timing.now()
            got[which] = fn()
            ms[which] = ms_since(t0)
        if not same(got[0], got[1]):
            sys.exit(f"MISMATCH in {out['case']} ({out['scene']}): the threaded answer "
                     "differs from the serial one")
        out["s"].append(ms[0])
        out["t"].append(ms[1])
        out["r"].append(ms[0] / max(ms[1], 1e-9))
        if CONTROL:
            out["c"].append(CONTROL[0]())


def row(case: str, scene: str, note: str = "") -> dict:
    r = {"case": case, "scene": scene, "note": note, "s": [], "t": [], "r": [], "c": []}
    ROWS.append(r)
    return r


def arrays_equal(a, b) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b))


def frame_data(sc, frames):
    """Per frame, (positions, poses, triangles) as `Scanner.evaluate` reads them."""
    import bpy

    scene = bpy.context.scene
    out = []
    for f in frames:
        scene.frame_set(f)
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        out.append(([p.copy() for p in pos], poses, [np.asarray(t).copy() for t in sc.triangles]))
    return out


def action_frames(ob, stride: int, max_frames: int) -> list[int]:
    return scenes.action_frames(ob)[::stride][:max_frames]


class SeedPart:
    """A `SelfTree` seen with every `n`-th seed of each level (from `k`): what
    `candidate_leaf_pairs` reads (``height``, ``n_slots``, ``slot_tri``, ``seeds``,
    ``seed_cols``, and its own seed hints with their lock; its merged seeds are made
    from its own seeds). The candidates of the n parts partition those of the whole
    tree (each descends from one seed)."""

    def __init__(self, tree, k: int, n: int):
        self.height = tree.height
        self.n_slots = tree.n_slots
        self.slot_tri = tree.slot_tri
        self.seed_hint = None
        self.merged_hint = None
        self.hint_lock = threading.Lock()
        self.seeds = [(np.ascontiguousarray(a[k::n]), np.ascontiguousarray(b[k::n]))
                      for a, b in tree.seeds]
        self.seed_cols = [(np.ascontiguousarray(a[k::n]), np.ascontiguousarray(b[k::n]))
                          for a, b in tree.seed_cols]


def split_self_pairs(tree, parts, positions, tris, mapper):
    """`self_pairs(tree, positions, tris, tree.weld_ids)` computed as independent parts
    (`SeedPart`), each traversed and exact-tested by `mapper` (map or a pool's map)."""
    from skin_collide.core.aabb_tree import query as q

    positions = np.asarray(positions, np.float64)
    tris = np.asarray(tris, np.intp)
    boxes = q.frame_boxes(tree, positions, tris, np.asarray(tree.weld_ids, np.int64))
    keys = boxes.keys

    def work(part):
        if part is None:                       # the re-split pairs, as one more task
            ta, tb = q._resplit_pairs(tree, keys, boxes, boxes.resplit)
        else:
            sa, sb, _ = q.candidate_leaf_pairs(part, boxes)
            ta, tb = np.take(tree.slot_tri, sa), np.take(tree.slot_tri, sb)
        hit = q.exact_test(positions, tris, ta, tb)
        ha, hb = ta[hit], tb[hit]
        if ha.size:
            far = ~q._keys_adjacent(keys, ha, hb)
            ha, hb = ha[far], hb[far]
        return ha, hb

    got = list(mapper(work, list(parts) + [None]))
    ha = np.concatenate([g[0] for g in got])
    hb = np.concatenate([g[1] for g in got])
    pairs = np.stack([np.minimum(ha, hb), np.maximum(ha, hb)], axis=1).astype(np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def chunked(fn, pool, n: int, *arrays):
    """fn on `n` consecutive chunks of `arrays` on the pool, concatenated."""
    cuts = np.linspace(0, arrays[0].size, n + 1).astype(int)
    futs = [pool.submit(fn, *(a[cuts[i]:cuts[i + 1]] for a in arrays)) for i in range(n)]
    return np.concatenate([f.result() for f in futs])


def bench_control(args, pool) -> None:
    """The machine's scaling for plain numpy calls of three sizes (in place, no
    allocation): one task per worker, each the same loop of `np.sqrt` and `np.multiply`."""
    w = args.workers
    x = np.random.default_rng(0).random(1 << 21) + 1.0
    for size, reps in ((1 << 21, 20), (1 << 13, 4000), (1 << 10, 20000)):
        xs = x[:size]
        outs = [np.empty(size) for _ in range(w)]

        def loop(k, xs=xs, outs=outs, reps=reps):
            o = outs[k]
            for _ in range(reps):
                np.sqrt(xs, out=o)
                np.multiply(o, xs, out=o)
            return o.copy()

        r = row(f"(0) control: {reps} x (sqrt, multiply) on {size} float64, one task per worker",
                "numpy only")
        measure(lambda loop=loop: [loop(k) for k in range(w)],
                lambda loop=loop: list(pool.map(loop, range(w))),
                lambda a, b: all(arrays_equal(u, v) for u, v in zip(a, b)), args.rounds, r)


def round_control(pool, workers: int):
    """f() -> serial / threaded time of `workers` tasks of 4 x (sqrt, multiply) in place on
    2**20 float64 (about 10 ms serial): the scaling numpy's GIL-free loops get right now."""
    x = np.random.default_rng(1).random(1 << 20) + 1.0
    outs = [np.empty_like(x) for _ in range(workers)]

    def loop(k):
        for _ in range(4):
            np.sqrt(x, out=outs[k])
            np.multiply(outs[k], x, out=outs[k])

    def f():
        t0 = timing.now()
        for k in range(workers):
            loop(k)
        s = timing.now() - t0
        t0 = timing.now()
        list(pool.map(loop, range(workers)))
        return s / max(timing.now() - t0, 1e-9)
    return f


def bench_one(args, pool, asset: str, level: int) -> None:
    from skin_collide.addon import scanner
    from skin_collide.core import aabb_tree as self_collision
    from skin_collide.core import triangles as tri_test
    from skin_collide.core.aabb_tree import query as q
    from skin_collide.core.scan import carry as sc_carry

    scene_name = f"{asset.split('.')[0]} L{level}"
    ob = scenes.load_one(asset, level)
    sc = scanner.Scanner([ob], self_collision=True)
    obj = sc.objects[0]
    tree = sc_carry.for_object(obj)
    frames = action_frames(ob, args.stride, args.max_frames)
    data = frame_data(sc, frames)
    n = args.parts
    parts = [SeedPart(tree, k, n) for k in range(n)]
    label = f"{scene_name} ({obj.rig.n_triangles // 1000}k, {len(frames)} frames)"
    print(f"{label} ...", flush=True)
    r_ex = row("(a) exact test, candidates in chunks", label)
    r_dense = row("(a) exact test, 32x the candidates, in chunks", label)
    r_big = row("(a) exact test, 32x the candidates, in chunks, blocks of 2**15 when "
                "threaded (`core.triangles._BLOCK`)", label)
    r_self = row("(b) self query: `self_pairs` vs seed split in threads", label)
    r_split = row("(b) seed split: serial vs threads", label)
    phases = {"boxes": [], "traversal": [], "exact": [], "cand": []}
    for pos, _poses, tris_l in data:
        p, t = pos[0], np.asarray(tris_l[0], np.intp)
        # Serial phases of one query (what a split of the exact test alone can gain).
        t0 = timing.now()
        boxes = q.frame_boxes(tree, p, t, tree.weld_ids)
        phases["boxes"].append(ms_since(t0))
        t0 = timing.now()
        sa, sb, _ = q.candidate_leaf_pairs(tree, boxes)
        phases["traversal"].append(ms_since(t0))
        ta, tb = np.take(tree.slot_tri, sa), np.take(tree.slot_tri, sb)
        t0 = timing.now()
        q.exact_test(p, t, ta, tb)
        phases["exact"].append(ms_since(t0))
        phases["cand"].append(ta.size)

        measure(lambda: q.exact_test(p, t, ta, tb),
                lambda: chunked(lambda a, b: q.exact_test(p, t, a, b), pool, n, ta, tb),
                arrays_equal, args.rounds, r_ex)
        da, db = np.tile(ta, 32), np.tile(tb, 32)
        measure(lambda: q.exact_test(p, t, da, db),
                lambda: chunked(lambda a, b: q.exact_test(p, t, a, b), pool, n, da, db),
                arrays_equal, max(1, args.rounds // 2), r_dense)

        def big_blocks(a, b):
            saved = tri_test._BLOCK
            tri_test._BLOCK = 1 << 15
            try:
                return chunked(lambda u, v: q.exact_test(p, t, u, v), pool, n, a, b)
            finally:
                tri_test._BLOCK = saved

        measure(lambda: q.exact_test(p, t, da, db), lambda: big_blocks(da, db),
                arrays_equal, max(1, args.rounds // 2), r_big)
        measure(lambda: self_collision.self_pairs(tree, p, t, tree.weld_ids),
                lambda: split_self_pairs(tree, parts, p, t, pool.map),
                arrays_equal, args.rounds, r_self)
        measure(lambda: split_self_pairs(tree, parts, p, t, map),
                lambda: split_self_pairs(tree, parts, p, t, pool.map),
                arrays_equal, args.rounds, r_split)
    med = {k: float(timing.median(v)) for k, v in phases.items()}
    print(f"  serial phases (medians): boxes {med['boxes']:.2f} ms, traversal "
          f"{med['traversal']:.2f} ms, exact test {med['exact']:.2f} ms "
          f"({med['cand']:.0f} candidate pairs)", flush=True)
    r_ex["note"] = f"{med['cand']:.0f} pairs"


def same_pairs(a, b) -> bool:
    """Equal lists of (i, j, pairs), ignoring order and empty entries."""
    def norm(x):
        d = {}
        for i, j, p in x:
            if p.size:
                d[(i, j)] = p
        return d
    da, db = norm(a), norm(b)
    return da.keys() == db.keys() and all(arrays_equal(da[k], db[k]) for k in da)


def bench_objects(args, pool, asset: str, level: int, copies: int) -> None:
    from skin_collide.addon import extract, scanner
    from skin_collide.core import aabb_tree as self_collision
    from skin_collide.core import scan as core_scan
    from skin_collide.core.hierarchy import traversal
    from skin_collide.core.query import broad_phase
    from skin_collide.core.scan import carry as sc_carry

    ob = scenes.load_one(asset, level)
    arm = extract.modifier_report(ob).armature
    meshes = [ob]
    for k in range(1, copies):
        ob2, _ = scenes.duplicate_character(ob, arm, f"copy{k}", offset=(args.spacing * k, 0, 0),
                                            turn=0.0)
        meshes.append(ob2)
    sc = scanner.Scanner(meshes, self_collision=True)
    objs = sc.objects
    for o in objs:
        sc_carry.for_object(o)          # built once, before any timing
    frames = action_frames(ob, args.stride, args.max_frames)
    data = frame_data(sc, frames)
    label = f"{copies} x {asset.split('.')[0]} L{level} ({objs[0].rig.n_triangles // 1000}k each)"
    print(f"{label} ...", flush=True)
    r_self = row("(c) each object's self query as a task", label)
    r_frame = row("(c) whole frame: object pairs + each self query as tasks", label)
    r_pairs = row("(c) object pairs: one stacked traversal vs one task per pair", label)
    n_pairs = []
    for pos, poses, tris in data:
        idx = range(len(objs))

        def selfs_serial():
            return [object_self(k) for k in idx]

        def object_self(k):
            return sc_carry.object_self_pairs(objs[k], pos[k], tris[k])

        measure(selfs_serial, lambda: list(pool.map(object_self, idx)),
                lambda a, b: all(arrays_equal(x, y) for x, y in zip(a, b)), args.rounds, r_self)

        def frame_serial():
            return core_scan.query_frame(objs, pos, poses, self_collision=True,
                                         triangles=tris).pairs

        def self_task(k):
            return core_scan.within._self_pairs(objs[k], pos[k], poses[k], np.asarray(tris[k], np.int32),
                                         core_scan.OWN, traversal.QueryStats())

        def frame_threaded():
            between = pool.submit(core_scan.query_frame, objs, pos, poses,
                                  self_collision=False, triangles=tris)
            selfs = list(pool.map(self_task, idx))
            out = list(between.result().pairs)
            out += [(k, k, p) for k, p in zip(idx, selfs) if p.size]
            return out

        measure(frame_serial, frame_threaded, same_pairs, args.rounds, r_frame)

        boxes = broad_phase.position_boxes(pos)
        cand = broad_phase.sweep_pairs(*boxes).tolist()
        n_pairs.append(len(cand))

        def pair_task(ij):
            i, j = ij
            res = core_scan.query_frame([objs[i], objs[j]], [pos[i], pos[j]],
                                        [poses[i], poses[j]], triangles=[tris[i], tris[j]])
            return [(i, j, p) for _, _, p in res.pairs]

        def pairs_serial():
            return core_scan.query_frame(objs, pos, poses, triangles=tris).pairs

        def pairs_threaded():
            return [x for got in pool.map(pair_task, cand) for x in got]

        if cand:
            measure(pairs_serial, pairs_threaded, same_pairs, args.rounds, r_pairs)
    r_pairs["note"] = f"{timing.median(n_pairs):.0f} object pairs"
    if args.skip_build:
        return
    # (d) builds: the rigs of the copies are the same mesh; each build is independent.
    r_build = row("(d) build (`scan.prepare`), one task per character", label)
    r_tree = row("(d) self tree (`self_collision.build`), one task per character", label)
    rigs = [o.rig for o in objs]

    def same_prepared(a, b):
        for x, y in zip(a, b):
            ax, ay = x.data.arrays(), y.data.arrays()
            if ax.keys() != ay.keys() or not all(arrays_equal(ax[k], ay[k]) for k in ax):
                return False
            if not arrays_equal(x.vertex_keys, y.vertex_keys):
                return False
        return True

    measure(lambda: [core_scan.prepare(r) for r in rigs],
            lambda: list(pool.map(core_scan.prepare, rigs)), same_prepared,
            args.build_rounds, r_build)

    def tree_of(o):
        return self_collision.build(o.rig.rest_positions, o.rig.triangles, o.vertex_keys)

    def same_trees(a, b):
        for x, y in zip(a, b):
            if not (arrays_equal(x.slot_tri, y.slot_tri) and arrays_equal(x.adj_idx, y.adj_idx)
                    and all(arrays_equal(p, q) for s, t in zip(x.seeds, y.seeds)
                            for p, q in zip(s, t))):
                return False
        return True

    measure(lambda: [tree_of(o) for o in objs], lambda: list(pool.map(tree_of, objs)),
            same_trees, args.build_rounds, r_tree)


def print_table(args) -> None:
    print(f"\nThreads: serial vs ThreadPoolExecutor({args.workers}), {args.parts} parts; "
          "ms are medians over rounds x frames; speed-up = median of per-round "
          "serial/threaded (25th-75th percentile); control = the same ratio for plain "
          "numpy on 2**20 elements, after each round")
    print("| case | scene | serial ms | threaded ms | speed-up | p25-p75 | control | note |")
    print("|---|---|---|---|---|---|---|---|")
    for r in ROWS:
        if not r["s"]:
            continue
        q25, q75 = timing.percentiles(r["r"], (25, 75))
        ctl = f"{timing.median(r['c']):.2f}x" if r["c"] else "-"
        print(f"| {r['case']} | {r['scene']} | {timing.median(r['s']):.2f} | "
              f"{timing.median(r['t']):.2f} | {timing.median(r['r']):.2f}x | {q25:.2f}-{q75:.2f} | "
              f"{ctl} | {r['note']} |")


def options(p) -> None:
    p.add_argument("--cases", nargs="+",
                   default=["makehuman_default.blend:0", "makehuman_default.blend:1",
                            "cesium_man.glb:1"], help="ASSET:LEVEL for (a) and (b)")
    p.add_argument("--objects", nargs="+",
                   default=["makehuman_default.blend:0:2", "makehuman_default.blend:0:4",
                            "cesium_man.glb:1:2"], help="ASSET:LEVEL:COPIES for (c) and (d)")
    p.add_argument("--spacing", type=float, default=0.55,
                   help="x offset between neighbouring copies (m)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--parts", type=int, default=None, help="chunks per split (default: workers)")
    p.add_argument("--stride", type=int, default=6, help="use every Nth frame of the action")
    p.add_argument("--max-frames", type=int, default=8)
    p.add_argument("--rounds", type=int, default=6, help="serial/threaded rounds per frame")
    p.add_argument("--build-rounds", type=int, default=4)
    p.add_argument("--skip-build", action="store_true")


def run(args) -> int:
    ROWS.clear()
    CONTROL.clear()
    for c in args.cases + args.objects:
        scenes.require(c.split(":")[0])
    if args.parts is None:
        args.parts = args.workers
    print(f"os.cpu_count() = {os.cpu_count()}, workers {args.workers}, parts {args.parts}")
    with ThreadPoolExecutor(args.workers) as pool:
        bench_control(args, pool)
        CONTROL.append(round_control(pool, args.workers))
        for c in args.cases:
            asset, level = c.rsplit(":", 1)
            bench_one(args, pool, asset, int(level))
        for c in args.objects:
            asset, level, copies = c.rsplit(":", 2)
            bench_objects(args, pool, asset, int(level), int(copies))
    print_table(args)
    return 0


registry.register("threads", "threads (issue 29 item 4): does splitting a frame's work over a "
                  "thread pool pay? serial against threaded, answers compared", options, run,
                  smoke={"cases": [f"{scenes.SMOKE}:0"], "objects": [f"{scenes.SMOKE}:0:2"],
                         "max_frames": 1, "rounds": 1, "build_rounds": 1}, doc=__doc__)
