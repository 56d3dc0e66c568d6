"""Build time and E_r of one variational sphere-set fit (issue 43): the largest skinned rest
mesh of a shared asset (loaded as the sphere-sets scenario loads it), `variational.fit(v, t, N,
seed=0)` timed, E_r by `union_outside_volume_estimate` (100 000 samples, seed 0) / mesh
volume, and the pair moves the union search kept. With a third argument the set's centres
and radii are saved there (np.savez: c, r), to compare two versions' sets bit for bit.

    bash dev python -m bench sphere-set-build-time makehuman_default.blend 64 [set.npz]
"""
from __future__ import annotations

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("asset", nargs="?", default="makehuman_default.blend")
    p.add_argument("count", type=int, nargs="?", default=64)
    p.add_argument("save", nargs="?", default=None, help="save the set (np.savez: c, r)")


def run(args) -> int:
    from skin_collide.core.methods.sphere_set import variational
    from skin_collide.core.methods.sphere_set.outside_volume import mesh_volume
    from skin_collide.core.methods.sphere_set.union_volume import union_outside_volume_estimate

    asset, count = args.asset, args.count
    name, v, t = scenes.load_rest_mesh(asset)
    s, seconds = timing.timed_s(variational.fit, v, t, count, seed=0)
    out, _ = union_outside_volume_estimate(s.centers, s.radii, v, t)
    print(f"{asset} ({name}, {len(t)} triangles) N={count}: build {seconds:.1f} s, "
          f"E_r {out / mesh_volume(v, t):.4f}, pair moves kept {s.info['union_search'].get('pairs')}")
    if args.save:
        np.savez(args.save, c=s.centers, r=s.radii)
    return 0


registry.register("sphere-set-build-time", "build time and E_r of one variational sphere-set "
                  "fit (positional: ASSET N [SET.npz])", options, run,
                  smoke={"asset": scenes.SMOKE, "count": 4}, doc=__doc__)
