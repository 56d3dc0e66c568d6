"""Build time and E_r of one variational sphere-set fit (issue 43): the largest skinned rest
mesh of a shared asset (loaded as bench_sphere_sets.py loads it), `variational.fit(v, t, N,
seed=0)` timed, E_r by `union_outside_volume_estimate` (100 000 samples, seed 0) / mesh
volume, and the pair moves the union search kept. With a third argument the set's centres
and radii are saved there (np.savez: c, r), to compare two versions' sets bit for bit.

Usage (from the repository root):
    bash dev python bench/sphere_set_build_time.py makehuman_default.blend 64 [set.npz]
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main(argv: list[str]) -> None:
    from bench_sphere_sets import load_asset

    from skin_collide.core.methods.sphere_set import variational
    from skin_collide.core.methods.sphere_set.outside_volume import mesh_volume, union_outside_volume_estimate

    asset, count = argv[0], int(argv[1])
    name, v, t = load_asset(asset)
    t0 = time.perf_counter()
    s = variational.fit(v, t, count, seed=0)
    seconds = time.perf_counter() - t0
    out, _ = union_outside_volume_estimate(s.centers, s.radii, v, t)
    print(f"{asset} ({name}, {len(t)} triangles) N={count}: build {seconds:.1f} s, "
          f"E_r {out / mesh_volume(v, t):.4f}, pair moves kept {s.info['union_search'].get('pairs')}")
    if len(argv) > 2:
        np.savez(argv[2], c=s.centers, r=s.radii)


if __name__ == "__main__":
    main(sys.argv[1:])
