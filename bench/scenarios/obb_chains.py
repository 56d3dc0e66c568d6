"""OBB trees over the skeleton (Schmidl, Walker & Lin 2004, Tables 1-5) on the shared
assets: CAB against the covariance refit (the paper's "OBB") and AABB*, two copies of a
character crossing, the same frames for every update in one process.

Per update, summed over the frames (the paper's columns):

* #coll: leaf pairs (bone parts) whose boxes overlap, i.e. exact queries;
* #false: those without an intersecting triangle pair (false alarms);
* t[upd]: computing every box of both trees (leaf bound + parents bottom-up);
* t[test]: the box-box traversal; t[query]: the leaf pairs' AABB filter + the exact
  triangle test; t[total]; box tests (SAT calls); triangle tests after the filter, and
  the cartesian product the filter started from.

Blender's BVHTree (rebuild + overlap on the same frames) is timed as the bar, and the
sphere tree (on-demand LBS refit) as the project's default. Every method's pairs are
checked equal to the sphere tree's on every frame.

    bash dev python -m bench obb-chains --asset makehuman_default.blend --frames 20
    bash dev python -m bench obb-chains --asset cesium_man.glb --frames 20 --poses 10

Sphere chains (Madera et al. 2015), self-collision of the first character on the same
states: M1 (sphere pairs tested chain by chain) and M2 (each covered pair once) against
the project's exact self-collision (`Scanner(self_collision=True)`, the AABB self tree),
whose pairs restricted to the chains' covered sphere pairs must equal the chains' pairs.

"""
from __future__ import annotations

import math

import numpy as np

from bench import registry, scenes, timing


class Row:
    def __init__(self):
        self.coll = self.false = self.box_tests = self.tri_tests = self.cartesian = 0
        self.upd = self.test = self.query = self.filter = self.parents = 0.0


def obb_frame(m, objs, pos, tris, poses, how: str, row: Row, want: set) -> None:
    from skin_collide.core import triangles
    from skin_collide.core.hierarchy import traversal
    from skin_collide.core.methods.base import Frame

    t0 = timing.now()
    va = m.volumes(objs[0].rig, objs[0].data, Frame(pos[0], tris[0], poses[0]), how)
    vb = m.volumes(objs[1].rig, objs[1].data, Frame(pos[1], tris[1], poses[1]), how)
    t1 = timing.now()
    spent = [0.0]
    inner = va.candidates

    def timed_candidates(la, other, lb):
        s = timing.now()
        out = inner(la, other, lb)
        spent[0] += timing.now() - s
        row.filter += timing.now() - s
        return out

    va.candidates = timed_candidates

    def test(ta, tb):
        s = timing.now()
        hit = triangles.triangle_pairs_intersect(pos[0], tris[0], ta, pos[1], tris[1], tb)
        spent[0] += timing.now() - s
        return hit

    # The parents alone (the paper's comparison: leaf boxes are the same for all three).
    from skin_collide.core.methods.obb import update
    for o, v in ((objs[0], va), (objs[1], vb)):
        leaf = update.leaf_boxes_lbs(o.data, v.frame.pose)
        s = timing.now()
        update.update_tree(o.data, leaf, v.frame.pose, how)
        row.parents += timing.now() - s
    pairs, st = traversal.collide(va, vb, test)
    t2 = timing.now()
    got = {tuple(p) for p in pairs.tolist()}
    assert got == want, (how, len(got ^ want))
    lp = np.stack(va.leaf_pair_list, axis=1)
    # Leaf pairs with a hit: the leaf node of each triangle.
    hit_leaf = set()
    if pairs.size:
        na = np.repeat(np.arange(va.hierarchy.n_nodes), np.diff(va.hierarchy.leaf_ptr))
        node_of_a = np.empty(tris[0].shape[0], np.int64)
        node_of_a[va.hierarchy.leaf_tris] = na
        nb = np.repeat(np.arange(vb.hierarchy.n_nodes), np.diff(vb.hierarchy.leaf_ptr))
        node_of_b = np.empty(tris[1].shape[0], np.int64)
        node_of_b[vb.hierarchy.leaf_tris] = nb
        hit_leaf = set(zip(node_of_a[pairs[:, 0]].tolist(), node_of_b[pairs[:, 1]].tolist()))
    row.coll += lp.shape[0]
    row.false += lp.shape[0] - len(hit_leaf)
    row.box_tests += va.box_tests
    row.tri_tests += st.triangle_tests
    row.cartesian += va.cartesian
    row.upd += t1 - t0
    row.query += spent[0]
    row.test += (t2 - t1) - spent[0]


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--frames", type=int, default=20)
    p.add_argument("--poses", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch", type=int, default=20000,
                   help="random child pairs of the parent rule timed in one call")


def run(args) -> int:
    scenes.require(args.asset)
    import bpy

    from skin_collide.addon import scanner
    from skin_collide.core.methods import registry

    ob, arm, ob2, arm2 = scenes.crossing(args.asset)
    from skin_collide.core import triangles as tri_test
    from skin_collide.core import welds
    from skin_collide.core.methods.chains import chains

    selfsc = scanner.Scanner([ob], self_collision=True)
    t0 = timing.now()
    cdata = chains.build(selfsc.objects[0].rig)
    chain_build = timing.now() - t0
    ch = {"M1": [0.0, 0, 0, 0], "M2": [0.0, 0, 0, 0]}   # time, sphere tests, overlaps, tri tests
    t_self = 0.0
    covered_pairs = 0
    obb = scanner.Scanner([ob, ob2], method="obb")
    sph = scanner.Scanner([ob, ob2], method="sphere-tree")
    m = registry.get("obb")
    objs = obb.objects
    rows = {h: Row() for h in ("aabb", "covariance", "cab")}
    t_blender = t_sphere = 0.0
    n = n_pairs = 0
    for _state in scenes.states(arm, arm2, args.frames, args.poses, args.seed):
        pos, poses = obb.evaluate(bpy.context.evaluated_depsgraph_get())
        tris = obb.triangles
        s = timing.now()
        ref, _, _ = sph.query(pos, poses, tris)
        t_sphere += timing.now() - s
        want = {tuple(p) for i, j, q in ref if i != j for p in q.tolist()}
        s = timing.now()
        scanner.bvhtree_pairs(obb.objects, pos, False, tris, poses)
        t_blender += timing.now() - s
        for how, row in rows.items():
            obb_frame(m, objs, pos, tris, poses, how, row, want)
        # Chains: self-collision of the first character.
        spos, sposes = selfsc.evaluate(bpy.context.evaluated_depsgraph_get())
        st_ = selfsc.triangles[0]
        s = timing.now()
        sref, _, _ = selfsc.query(spos, sposes)
        t_self += timing.now() - s
        P = spos[0]
        keys = selfsc.objects[0].vertex_keys[st_]

        def self_test(ta, tb):
            far = ~welds.adjacent_pairs(keys, ta, tb)
            hit = np.zeros(ta.size, bool)
            hit[far] = tri_test.triangle_pairs_intersect(P, st_, ta[far], P, st_, tb[far])
            return hit

        ref_pairs = np.array([p for i, j, q in sref if i == j for p in q.tolist()],
                             np.int64).reshape(-1, 2)
        ts = cdata.tri_sphere
        ref_pairs = ref_pairs[cdata.covered[ts[ref_pairs[:, 0]], ts[ref_pairs[:, 1]]]]
        covered_pairs += len(ref_pairs)
        for mode, acc in ch.items():
            s = timing.now()
            got, cst = chains.self_pairs(cdata, P, st_, self_test, mode)
            acc[0] += timing.now() - s
            acc[1] += cst["sphere_tests"]
            acc[2] += cst["overlapping"]
            acc[3] += cst["triangle_tests"]
            assert {tuple(p) for p in got.tolist()} == {tuple(p) for p in np.sort(ref_pairs, 1).tolist()}, mode
        n += 1
        n_pairs += len(want)
    T = [t.shape[0] for t in obb.triangles]
    leaves = [o.data.n_leaves for o in objs]
    print(f"{args.asset}: {T[0]} + {T[1]} triangles, {leaves[0]} + {leaves[1]} leaf boxes "
          f"(bone parts), {n} states ({args.frames} frames + {args.poses} strong poses), "
          f"{n_pairs} intersecting triangle pairs in all; times in ms summed over the states")
    print(f"{'':12s}{'#coll':>8s}{'#false':>8s}{'t[query]':>10s}{'t[upd]':>9s}{'t[test]':>9s}"
          f"{'t[total]':>10s}{'box tests':>11s}{'tri tests':>11s}{'cartesian':>12s}{'vs Blender':>11s}")
    names = {"aabb": "AABB*", "covariance": "OBB (cov.)", "cab": "CAB"}
    for how, r in rows.items():
        tot = r.upd + r.test + r.query
        print(f"{names[how]:12s}{r.coll:8d}{r.false:8d}{1e3 * r.query:10.1f}{1e3 * r.upd:9.1f}"
              f"{1e3 * r.test:9.1f}{1e3 * tot:10.1f}{r.box_tests:11d}{r.tri_tests:11d}"
              f"{r.cartesian:12d}{t_blender / tot:10.2f}x")
    print(f"{'sphere tree':12s}{'':44s}{1e3 * t_sphere:10.1f}{'':34s}{t_blender / t_sphere:10.2f}x")
    print(f"{'Blender BVH':12s}{'':44s}{1e3 * t_blender:10.1f}")
    cab, cov = rows["cab"], rows["covariance"]
    print("t[query] of which the leaf-pair filter: " + ", ".join(
        f"{names[h]} {1e3 * r.filter:.1f} ms" for h, r in rows.items()))
    print(f"update time (leaves + parents): covariance / CAB = {cov.upd / cab.upd:.2f}; "
          f"AABB* / CAB = {rows['aabb'].upd / cab.upd:.2f}")
    print("parents only (ms): " + ", ".join(f"{names[h]} {1e3 * r.parents:.1f}"
                                            for h, r in rows.items())
          + f"; covariance / CAB = {cov.parents / cab.parents:.2f}")
    batch_parents(args.batch)
    r = cdata.regions
    print(f"sphere chains (self-collision of {ob.name}): {r.n_limbs} limbs, "
          f"{cdata.chain_ptr.size - 1} chains, {cdata.n_spheres} spheres, "
          f"{cdata.uncovered.size} triangles on no chain; build {1e3 * chain_build:.1f} ms; "
          f"{covered_pairs} covered intersecting pairs in all")
    print(f"{'':22s}{'ms':>9s}{'sphere tests':>14s}{'overlaps':>10s}{'tri tests':>11s}")
    for mode, (t, a, b, c) in ch.items():
        name = "M1 (chains)" if mode == "M1" else "M2 (no chains)"
        print(f"{name:22s}{1e3 * t:9.1f}{a:14d}{b:10d}{c:11d}")
    print(f"{'self tree (all pairs)':22s}{1e3 * t_self:9.1f}")
    return 0


def batch_parents(n: int = 20000, repeat: int = 5) -> None:
    """The parent rule alone on n random child pairs in one call: the per-node cost
    without numpy's per-level call overhead (the paper's flop comparison)."""
    from skin_collide.core import procedural
    from skin_collide.core.methods.obb import update

    rng = np.random.default_rng(0)
    c1, c2 = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    a1 = procedural.random_rotation(rng, math.pi, n)
    a2 = procedural.random_rotation(rng, math.pi, n)
    e1, e2 = rng.uniform(0.1, 1, (n, 3)), rng.uniform(0.1, 1, (n, 3))
    joint = 0.5 * (c1 + c2)
    out = {}
    for how in update.UPDATES:
        best = np.inf
        for _ in range(repeat):
            s = timing.now()
            if how == "cab":
                ax = update.cab_axes(joint, c1, a1, e1, c2, a2, e2)
            elif how == "covariance":
                ax = update.covariance_axes(c1, a1, e1, c2, a2, e2)
            else:
                ax = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
            update._enclose(ax, c1, a1, e1, c2, a2, e2)
            best = min(best, timing.now() - s)
        out[how] = best
    print(f"parent rule on {n} nodes in one call (best of {repeat}): " + ", ".join(
        f"{h} {1e9 * t / n:.0f} ns/node" for h, t in out.items())
        + f"; covariance / CAB = {out['covariance'] / out['cab']:.2f}")


registry.register("obb-chains", "OBB trees over the skeleton (Schmidl, Walker & Lin 2004): CAB "
                  "against the covariance refit and AABB*, and sphere chains (Madera et al. "
                  "2015), two crossing copies", options, run,
                  smoke={"asset": scenes.SMOKE, "frames": 2, "poses": 1, "batch": 200},
                  doc=__doc__)
