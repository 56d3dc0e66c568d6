"""Sphere chains as a self-collision method: what making them exact costs.

The paper's chain test (M2: each sphere pair non-adjacent on some chain, once) leaves out
the pairs within one sphere, between adjacent spheres and with a triangle on no chain.
Two ways to decide those too, timed per state on the first character of an asset
(animation frames, then random strong poses: 170° twists, bone scale 0.5-2), in one
process on the same positions and triangles:

* chains: the paper's covered pairs (M2);
* complement (grid): the skipped pairs by the chains' own sphere test, grid and exact
  test on the sphere pairs they skip (`chains.complement_pairs`);
* the method as shipped (`ChainsMethod.self_pairs`): chains, plus the exact AABB self
  tree (`core.self_collision`) for the skipped pairs;
* the self tree alone (every other method's self query).

It asserts that the method's pairs, and chains + complement, equal the self tree's. Not a test: no assertion on
time.

Usage (from the repository root):
    bash dev python bench/bench_chains_coverage.py --asset fox.glb --frames 5 --poses 5
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_obb_chains import SHARED, states  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--asset", default="fox.glb")
    ap.add_argument("--frames", type=int, default=5)
    ap.add_argument("--poses", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()

    import bpy

    from skin_collide.addon import extract, files, scanner
    from skin_collide.core import triangles as tri_test, welds
    from skin_collide.core.methods import registry
    from skin_collide.core.methods.base import Frame
    from skin_collide.core.methods.chains import chains
    from skin_collide.core.query import traversal
    from skin_collide.core.self_collision import object_self_pairs

    files.load_file(os.path.join(SHARED, args.asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    sc = scanner.Scanner([ob], method="chains", self_collision=True)
    obj = sc.objects[0]
    assert obj.method == "chains", obj.reason
    m = registry.get("chains")
    data = obj.data
    t = {"chains (paper, M2)": 0.0, "complement (grid)": 0.0,
         "method: chains + self tree": 0.0, "self tree alone": 0.0}
    tests = {"chains (paper, M2)": 0, "complement (grid)": 0}
    n = found = skipped = 0
    for _ in states(arm, arm, args.frames, args.poses, args.seed):
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        P, tris = pos[0], sc.triangles[0]
        keys = obj.vertex_keys[tris]

        def test(ta, tb):
            far = ~welds.adjacent_pairs(keys, ta, tb)
            hit = np.zeros(ta.size, bool)
            idx = np.nonzero(far)[0]
            hit[idx] = tri_test.triangle_pairs_intersect(P, tris, ta[idx], P, tris, tb[idx])
            return hit

        s = time.perf_counter()
        cov, st1 = chains.self_pairs(data, P, tris, test)
        t["chains (paper, M2)"] += time.perf_counter() - s
        s = time.perf_counter()
        rest, st2 = chains.complement_pairs(data, P, tris, test)
        t["complement (grid)"] += time.perf_counter() - s
        tests["chains (paper, M2)"] += st1["triangle_tests"]
        tests["complement (grid)"] += st2["triangle_tests"]
        s = time.perf_counter()
        got = m.self_pairs(obj.rig, data, Frame(P, tris, poses[0]), obj.vertex_keys)
        t["method: chains + self tree"] += time.perf_counter() - s
        s = time.perf_counter()
        ref = object_self_pairs(obj, P, tris, stats=traversal.QueryStats())
        t["self tree alone"] += time.perf_counter() - s
        assert np.array_equal(got, ref), (len(got), len(ref))
        both = np.concatenate([cov, rest])
        assert np.array_equal(both[np.lexsort((both[:, 1], both[:, 0]))], ref)
        n += 1
        found += len(ref)
        skipped += len(rest)
    r = data.regions
    print(f"{args.asset} ({ob.name}): {obj.rig.n_triangles} triangles, {r.n_limbs} limbs, "
          f"{data.chain_ptr.size - 1} chains, {data.n_spheres} spheres, "
          f"{data.uncovered.size} triangles on no chain; {n} states ({args.frames} frames + "
          f"{args.poses} strong poses); {found} intersecting pairs in all, {skipped} of them "
          f"({100.0 * skipped / max(found, 1):.0f}%) outside the paper's chain test")
    for k, v in t.items():
        extra = f"{tests[k]:>12d} triangle tests" if k in tests else ""
        print(f"{k:28s}{1e3 * v / max(n, 1):9.2f} ms/state {extra}")
    print("method pairs == chains + complement pairs == self tree pairs on every state")


if __name__ == "__main__":
    main()
