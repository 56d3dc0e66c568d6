"""Time the corner computation of core.bounds.weight_bounds on a realistic synthetic skin.

    bash dev python bench/bench_weight_bounds.py

V = 50k vertices, 4 influences from a smooth random field over 30 joints, nodes from a
triangle-like tree (2V nodes) and a vertex tree. Not a test.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from test_weight_bounds import smooth_skin, triangle_tree, vertex_tree  # noqa: E402

from skin_collide.core.bounds.weight_bounds import node_corners  # noqa: E402


def benchmark(V=50_000, K=4, n_joints=30, repeats=3, seed=0):
    rng = np.random.default_rng(seed)
    joints, weights = smooth_skin(rng, V, n_joints=n_joints, K=K)
    sizes = np.bincount((joints >= 0).sum(1), minlength=K + 1)[1:]
    print(f"V={V} K={K} joints={n_joints} joint-set sizes 1..{K}: {sizes.tolist()} "
          f"distinct joint-sets: {len(np.unique(joints, axis=0))}")
    for name, make in (("triangle tree", triangle_tree), ("vertex tree", vertex_tree)):
        ptr, verts = make(V)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            res = node_corners(joints, weights, ptr, verts)
            times.append(time.perf_counter() - t0)
        cpn = res.corners_per_node
        spn = res.sets_per_node
        print(f"{name}: N={ptr.size - 1} M={verts.size} (={verts.size / V:.1f}·V) "
              f"groups={spn.sum()} R={res.ptr[-1]} corners/node mean={cpn.mean():.2f} "
              f"max={cpn.max()} sets/node mean={spn.mean():.2f} max={spn.max()} "
              f"time best={min(times):.3f}s (runs: {', '.join(f'{t:.3f}' for t in times)})")



if __name__ == "__main__":
    benchmark()
