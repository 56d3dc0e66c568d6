"""Time the corner computation of core.bounds.weight_bounds on a realistic synthetic skin.

    bash dev python -m bench weight-bounds

V = 50k vertices, 4 influences from a smooth random field over 30 joints, nodes from a
triangle-like tree (2V nodes) and a vertex tree (the synthetic skin and trees of
tests/core/test_weight_bounds.py). Best of 3 runs.
"""
from __future__ import annotations

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("--vertices", type=int, default=50_000)
    p.add_argument("--influences", type=int, default=4)
    p.add_argument("--joints", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)


def benchmark(V=50_000, K=4, n_joints=30, repeats=3, seed=0):
    from skin_collide.core.bounds.weight_bounds import node_corners

    helpers = scenes.tests_module("core/test_weight_bounds.py")
    rng = np.random.default_rng(seed)
    joints, weights = helpers.smooth_skin(rng, V, n_joints=n_joints, K=K)
    sizes = np.bincount((joints >= 0).sum(1), minlength=K + 1)[1:]
    print(f"V={V} K={K} joints={n_joints} joint-set sizes 1..{K}: {sizes.tolist()} "
          f"distinct joint-sets: {len(np.unique(joints, axis=0))}")
    for name, make in (("triangle tree", helpers.triangle_tree), ("vertex tree", helpers.vertex_tree)):
        ptr, verts = make(V)
        times = []
        for _ in range(repeats):
            res, t = timing.timed_s(node_corners, joints, weights, ptr, verts)
            times.append(t)
        cpn = res.corners_per_node
        spn = res.sets_per_node
        print(f"{name}: N={ptr.size - 1} M={verts.size} (={verts.size / V:.1f}·V) "
              f"groups={spn.sum()} R={res.ptr[-1]} corners/node mean={cpn.mean():.2f} "
              f"max={cpn.max()} sets/node mean={spn.mean():.2f} max={spn.max()} "
              f"time best={min(times):.3f}s (runs: {', '.join(f'{t:.3f}' for t in times)})")


def run(args) -> int:
    benchmark(args.vertices, args.influences, args.joints, args.repeats, args.seed)
    return 0


registry.register("weight-bounds", "the corner computation of the weight bounds on a "
                  "synthetic skin (no Blender, no asset)", options, run,
                  smoke={"vertices": 2000, "repeats": 1}, doc=__doc__)
