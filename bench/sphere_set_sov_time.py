"""Time of the SOV batches of a variational sphere-set fit (issue 43): the first K batched
`sphere_outside_volume` calls of `variational.fit(v, t, N, seed=0)` on a shared asset's
largest skinned rest mesh (loaded as bench_sphere_sets.py loads it) are recorded (the fit
is stopped there), then evaluated again R times; prints the time of each repetition, their
median, the (ball, triangle) pairs and a SHA-1 of the values (equal digests: bit-identical
SOVs, e.g. between two versions of the code on the same machine).

Usage (from the repository root):
    bash dev python bench/sphere_set_sov_time.py makehuman_default.blend 64 40 3
Not a test: nothing here asserts on time.
"""
from __future__ import annotations

import hashlib
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


class _Enough(Exception):
    """Stops the fit once K batches are recorded."""


def main(argv: list[str]) -> None:
    from bench_sphere_sets import load_asset

    from skin_collide.core.methods.sphere_set import clustering, variational
    from skin_collide.core.methods.sphere_set import outside_volume as ov

    asset, count = argv[0], int(argv[1])
    batches = int(argv[2]) if len(argv) > 2 else 40
    repeats = int(argv[3]) if len(argv) > 3 else 3
    name, v, t = load_asset(asset)
    calls: list[tuple[np.ndarray, np.ndarray]] = []
    original = clustering.sphere_outside_volume

    def record(centres, radii, mesh, inside=None):
        calls.append((np.array(centres), np.array(radii)))
        if len(calls) >= batches:
            raise _Enough
        return original(centres, radii, mesh, inside=inside)

    clustering.sphere_outside_volume = record
    try:
        variational.fit(v, t, count, seed=0)
    except _Enough:
        pass
    finally:
        clustering.sphere_outside_volume = original
    mesh = ov.prepare_mesh(v, t)
    times, digest = [], ""
    for _ in range(repeats):  # loop over repetitions
        t0 = time.perf_counter()
        vals = [ov.sphere_outside_volume(c, r, mesh, inside="sign") for c, r in calls]
        times.append(time.perf_counter() - t0)
        digest = hashlib.sha1(np.concatenate(vals).tobytes()).hexdigest()
    pairs = sum(len(ov.sphere_triangle_pairs(c, r, mesh)[0]) for c, r in calls)
    print(f"{asset} ({name}, {len(t)} triangles) N={count}: {len(calls)} SOV batches, "
          f"{sum(len(c) for c, _ in calls)} balls, {pairs} pairs; s per repetition "
          f"{[round(x, 2) for x in times]}, median {float(np.median(times)):.2f} s; sha1 {digest[:16]}")


if __name__ == "__main__":
    main(sys.argv[1:])
