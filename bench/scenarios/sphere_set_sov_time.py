"""Time of the SOV batches of a variational sphere-set fit (issue 43): the first K batched
`sphere_outside_volume` calls of `variational.fit(v, t, N, seed=0)` on a shared asset's
largest skinned rest mesh (loaded as the sphere-sets scenario loads it) are recorded (the fit
is stopped there), then evaluated again R times; prints the time of each repetition, their
median, the (ball, triangle) pairs and a SHA-1 of the values (equal digests: bit-identical
SOVs, e.g. between two versions of the code on the same machine).

    bash dev python -m bench sphere-set-sov-time makehuman_default.blend 64 40 3
"""
from __future__ import annotations

import hashlib

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("asset", nargs="?", default="makehuman_default.blend")
    p.add_argument("count", type=int, nargs="?", default=64)
    p.add_argument("batches", type=int, nargs="?", default=40)
    p.add_argument("repeats", type=int, nargs="?", default=3)


class _Enough(Exception):
    """Stops the fit once K batches are recorded."""


def run(args) -> int:

    from skin_collide.core.methods.sphere_set import clustering, variational
    from skin_collide.core.methods.sphere_set import outside_volume as ov

    asset, count, batches, repeats = args.asset, args.count, args.batches, args.repeats
    name, v, t = scenes.load_rest_mesh(asset)
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
        vals, seconds = timing.timed_s(
            lambda: [ov.sphere_outside_volume(c, r, mesh, inside="sign") for c, r in calls])
        times.append(seconds)
        digest = hashlib.sha1(np.concatenate(vals).tobytes()).hexdigest()
    pairs = sum(len(ov.sphere_triangle_pairs(c, r, mesh)[0]) for c, r in calls)
    print(f"{asset} ({name}, {len(t)} triangles) N={count}: {len(calls)} SOV batches, "
          f"{sum(len(c) for c, _ in calls)} balls, {pairs} pairs; s per repetition "
          f"{[round(x, 2) for x in times]}, median {timing.median(times):.2f} s; sha1 {digest[:16]}")


    return 0


registry.register("sphere-set-sov-time", "time of the first SOV batches of a variational "
                  "sphere-set fit, with a digest of their values (positional: ASSET N [K [R]])",
                  options, run, smoke={"asset": scenes.SMOKE, "count": 4, "batches": 3,
                                       "repeats": 1}, doc=__doc__)
