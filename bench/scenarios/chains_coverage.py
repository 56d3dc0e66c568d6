"""Sphere chains as a self-collision method: the paper's construction, what making the
chains exact costs, and the chains against the sphere tree and the exact self tree.

On the first character of an asset, in one process on the same states (animation frames,
then random strong poses: 170° twists, bone scale 0.5-2), ms per state:

* construction (rest): the paper's spheres (`construction="paper"`: circle / ray-disk
  march, torso two spheres per level with the adjustment) against the slices used
  before (`"slices"`); per region the accuracy F (mean | r - ||c - v|| | over the
  sphere's region vertices, the paper's §3.2) of the built inside spheres (phi_1', and
  phi_1 before the torso's adjustment) and of the minimal enclosing ball of the same
  vertices (phi_2, `core.bounds.balls.minimal_balls`);
* per-frame sphere update (`chains.frame_spheres`): before (slices, centre = mean of all
  the sphere's vertices) and after (paper spheres, centre = mean of the pivot polygons'
  centroids), best of `--reps` per state; the radius is always the largest distance to
  the sphere's vertices (sound);
* the paper's chain test on the covered pairs: M1 (sphere pairs chain by chain) and M2
  (each covered pair once), sphere tests and overlaps;
* complement (grid): the pairs the chains skip, by the chains' own sphere test, grid and
  exact test (`chains.complement_pairs`);
* the method as shipped (`ChainsMethod.self_pairs`: chains M2 + the exact AABB self tree
  on the skipped pairs), with the paper's spheres and with the slices;
* the old sphere-tree self query (`bench.queries.old_self`, on-demand refit: what
  `query_frame` ran before the self tree);
* the exact AABB self tree alone (every other method's self query).

It asserts on every state that the method's pairs (both constructions), chains +
complement, the old sphere tree's and the self tree's are the same set, and that every
per-frame sphere encloses its vertices. No assertion on time. The load
average is printed at the start and the end (the machine is shared).

    bash dev python -m bench chains-coverage --asset fox.glb --frames 5 --poses 5
"""
from __future__ import annotations

import os

import numpy as np

from bench import registry, scenes, timing
from bench.queries import old_self


def accuracy_rows(data, rig):
    """Per region: spheres, F of phi_1 / phi_1' / phi_2 (mean over the region's sphere
    vertices, model units) for the regions built by the march."""
    from skin_collide.core.bounds import balls
    from skin_collide.core.methods.chains import march

    V = rig.rest_positions
    ptr, pts = data.sphere_vert_ptr, V[data.sphere_verts]
    c2, r2 = balls.minimal_balls(pts, ptr)
    n = np.diff(ptr)
    f1 = march.accuracy(pts, ptr, *data.phi1)
    f1a = march.accuracy(pts, ptr, data.rest_center, data.rest_radius)
    f2 = march.accuracy(pts, ptr, c2, r2)
    sreg = data.regions.tri_region[np.array([np.nonzero(data.tri_sphere == s)[0][0]
                                             for s in range(data.n_spheres)])]
    rows = []
    for r in range(data.regions.n_limbs + 1):
        m = sreg == r
        w = n[m] / n[m].sum()
        rows.append((r, int(m.sum()), bool(data.region_built[r]), float(w @ f1[m]),
                     float(w @ f1a[m]), float(w @ f2[m])))
    w = n / n.sum()
    built = np.isfinite(f1a)
    rows.append(("all", data.n_spheres, bool(data.region_built.all()),
                 float(w[built] @ f1[built] / w[built].sum()),
                 float(w[built] @ f1a[built] / w[built].sum()),
                 float(w[built] @ f2[built] / w[built].sum())))
    return rows


def options(p) -> None:
    p.add_argument("--asset", default="fox.glb")
    p.add_argument("--frames", type=int, default=5)
    p.add_argument("--poses", type=int, default=5)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--reps", type=int, default=20, help="repeats of the sphere update")
    p.add_argument("--no-grid", action="store_true", help="skip the grid complement")


def run(args) -> int:
    scenes.require(args.asset)
    load0 = os.getloadavg()

    import bpy

    from skin_collide.addon import scanner
    from skin_collide.core import triangles as tri_test
    from skin_collide.core import welds
    from skin_collide.core.hierarchy import traversal
    from skin_collide.core.methods import registry
    from skin_collide.core.methods.base import Frame
    from skin_collide.core.methods.chains import chains, self_tree
    from skin_collide.core.scan.carry import object_self_pairs

    ob, arm = scenes.load_body(args.asset)
    sc = scanner.Scanner([ob], method="chains", self_collision=True)
    obj = sc.objects[0]
    assert obj.method == "chains", obj.reason
    sph = scanner.Scanner([ob], method="sphere-tree", self_collision=True).objects[0]
    m = registry.get("chains")
    rig = obj.rig
    data, t_paper = timing.timed_s(chains.build, rig)
    old, t_slices = timing.timed_s(chains.build, rig, construction="slices")
    for d in (data, old):
        self_tree(rig, d, obj.vertex_keys)          # built once, before the timing
    upd = {"before: slices, centre = mean": [], "paper spheres, centre = mean": [],
           "after: paper spheres, pivot centres": []}
    upd_data = {"before: slices, centre = mean": (old, "mean"),
                "paper spheres, centre = mean": (data, "mean"),
                "after: paper spheres, pivot centres": (data, "pivots")}
    rad = {k: 0.0 for k in upd}
    # The paper's radius (mean distance from the pivot centre to the pivot polygons'
    # centroids): how many of the spheres' vertices it leaves out, per state.
    paper_out = [0, 0, 0.0]     # vertices outside, vertices, largest excess / model size
    keys_t = ["chains M1 (paper)", "chains M2 (paper)", "chains M2 (slices)",
              "complement (grid)", "method: paper spheres", "method: slices",
              "old sphere tree (on-demand)", "self tree alone"]
    t = {k: [] for k in keys_t}
    cnt = {k: [0, 0, 0] for k in keys_t}     # sphere tests, overlaps, triangle tests
    n = found = skipped = 0
    for _ in scenes.states(arm, arm, args.frames, args.poses, args.seed):
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        P, tris = pos[0], sc.triangles[0]
        keys = obj.vertex_keys[tris]
        for k, (d, how) in upd_data.items():
            (c, r), best = timing.best_of(args.reps, chains.frame_spheres, d, P, how)
            upd[k].append(best / 1000)
            rad[k] += float(r.sum())
            seg = np.repeat(np.arange(d.n_spheres), np.diff(d.sphere_vert_ptr))
            dist = np.linalg.norm(P[d.sphere_verts] - c[seg], axis=1)
            assert (dist <= r[seg]).all(), k

        c, _r = chains.frame_spheres(data, P, "pivots")
        po, gptr = data.pivot_polygons
        gid = np.repeat(np.arange(po.size), np.diff(gptr))
        pc = np.zeros((po.size, 3))
        np.add.at(pc, gid, P[data.pivot_verts])
        pc /= np.diff(gptr)[:, None]
        dpc = np.linalg.norm(pc - c[po], axis=1)
        r_paper = np.bincount(po, dpc, data.n_spheres) / np.bincount(po, None, data.n_spheres)
        seg = np.repeat(np.arange(data.n_spheres), np.diff(data.sphere_vert_ptr))
        dv = np.linalg.norm(P[data.sphere_verts] - c[seg], axis=1)
        paper_out[0] += int((dv > r_paper[seg]).sum())
        paper_out[1] += dv.size
        diag = float(np.linalg.norm(P.max(axis=0) - P.min(axis=0)))
        paper_out[2] = max(paper_out[2], float((dv - r_paper[seg]).max()) / diag)

        def test(ta, tb):
            far = ~welds.adjacent_pairs(keys, ta, tb)
            hit = np.zeros(ta.size, bool)
            idx = np.nonzero(far)[0]
            hit[idx] = tri_test.triangle_pairs_intersect(P, tris, ta[idx], P, tris, tb[idx])
            return hit

        def timed(name, fn):
            out, seconds = timing.timed_s(fn)
            t[name].append(seconds)
            return out

        cov1, st = timed("chains M1 (paper)", lambda: chains.self_pairs(data, P, tris, test, "M1"))
        cnt["chains M1 (paper)"] = [a + st[b] for a, b in zip(
            cnt["chains M1 (paper)"], ("sphere_tests", "overlapping", "triangle_tests"))]
        cov, st = timed("chains M2 (paper)", lambda: chains.self_pairs(data, P, tris, test))
        cnt["chains M2 (paper)"] = [a + st[b] for a, b in zip(
            cnt["chains M2 (paper)"], ("sphere_tests", "overlapping", "triangle_tests"))]
        assert np.array_equal(cov, cov1)
        _, st = timed("chains M2 (slices)", lambda: chains.self_pairs(old, P, tris, test))
        cnt["chains M2 (slices)"] = [a + st[b] for a, b in zip(
            cnt["chains M2 (slices)"], ("sphere_tests", "overlapping", "triangle_tests"))]
        if not args.no_grid:
            rest, st = timed("complement (grid)",
                             lambda: chains.complement_pairs(data, P, tris, test))
            cnt["complement (grid)"][2] += st["triangle_tests"]
        frame = Frame(P, tris, poses[0])
        got = timed("method: paper spheres",
                    lambda: m.self_pairs(rig, data, frame, obj.vertex_keys))
        got_old = timed("method: slices", lambda: m.self_pairs(rig, old, frame, obj.vertex_keys))
        od, _ms = timed("old sphere tree (on-demand)",
                        lambda: old_self(sph, P, poses[0], "on-demand"))
        ref = timed("self tree alone",
                    lambda: object_self_pairs(obj, P, tris, stats=traversal.QueryStats()))
        assert np.array_equal(got, ref), (len(got), len(ref))
        assert np.array_equal(got_old, ref), (len(got_old), len(ref))
        assert set(map(tuple, np.sort(od, axis=1).tolist())) == set(map(tuple, ref.tolist()))
        if not args.no_grid:
            both = np.concatenate([cov, rest])
            assert np.array_equal(both[np.lexsort((both[:, 1], both[:, 0]))], ref)
        n += 1
        found += len(ref)
        skipped += len(ref) - len(cov)
    load1 = os.getloadavg()
    r = data.regions
    print(f"{args.asset} ({ob.name}): {rig.n_triangles} triangles, {r.n_limbs} limbs, "
          f"{data.chain_ptr.size - 1} chains; {n} states ({args.frames} frames + "
          f"{args.poses} strong poses); {found} intersecting pairs in all, {skipped} of them "
          f"({100.0 * skipped / max(found, 1):.0f}%) outside the paper's chain test "
          f"(paper spheres); load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end")
    print(f"construction: paper {data.n_spheres} spheres in {t_paper:.2f} s (regions by the "
          f"march: {int(data.region_built.sum())} of {data.region_built.size}), slices "
          f"{old.n_spheres} spheres in {t_slices:.2f} s")
    print("accuracy F (mean |r - |c - v|| over each sphere's region vertices, rest pose, "
          "model units), region 0 = torso:")
    print(f"{'region':>8s}{'spheres':>9s}{'march':>7s}{'F phi1':>11s}{'F phi1_adj':>12s}"
          f"{'F minball':>11s}{'adj/minball':>13s}")
    for reg_, k, b, f1, f1a, f2 in accuracy_rows(data, rig):
        print(f"{reg_!s:>8s}{k:9d}{'yes' if b else 'no':>7s}{f1:11.4g}{f1a:12.4g}{f2:11.4g}"
              f"{f1a / f2:13.2f}")
    print(f"per-frame sphere update (best of {args.reps} per state, median over states; "
          "sum of radii summed over states):")
    for k, v in upd.items():
        print(f"  {k:40s}{1e6 * timing.median(v):9.1f} us {rad[k]:12.4g}")
    print(f"the paper's radius (mean distance to the pivot polygons): {paper_out[0]} of "
          f"{paper_out[1]} sphere vertices outside it ({100.0 * paper_out[0] / paper_out[1]:.0f}%), "
          f"the farthest {100 * paper_out[2]:.1f}% of the model's diagonal beyond it")
    print(f"self-collision, ms per state (median; mean), sphere tests / overlaps / triangle "
          f"tests summed over the {n} states:")
    for k in keys_t:
        if not t[k]:
            continue
        a, b, c = cnt[k]
        extra = f"{a:10d}{b:10d}{c:12d}" if a or c else ""
        print(f"  {k:32s}{1e3 * timing.median(t[k]):9.2f}{1e3 * timing.mean(t[k]):9.2f} {extra}")
    ref_t = timing.median(t["self tree alone"])
    print("  ratios of medians to the self tree alone: " + ", ".join(
        f"{k} {timing.median(t[k]) / ref_t:.1f}x" for k in keys_t if t[k] and k != "self tree alone"))
    print("method pairs (both constructions) == chains + complement == old sphere tree == "
          "self tree on every state; every frame sphere encloses its vertices")
    return 0


registry.register("chains-coverage", "sphere chains as a self-collision method: construction, "
                  "the exact chains' cost, against the sphere tree and the self tree", options,
                  run, smoke={"asset": scenes.SMOKE_STAR, "frames": 0, "poses": 2, "reps": 1},
                  doc=__doc__)
