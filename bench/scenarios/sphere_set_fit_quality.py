"""The variational sphere-set fit alone (issue 10): E_r, its standard error and build time
for a few counts, and an independent union-coverage check, on a shared asset's largest
skinned rest mesh (mesh data coordinates, loaded as the sphere-sets scenario loads it).

E_r = union_volume.union_outside_volume_estimate (its defaults: 100 000 stratified
samples, seed 0) / mesh_volume. Coverage: the largest (|p - c| - r) minimized over the balls,
over 400 000 random surface points (random barycentrics, their own generator) and every
vertex; <= 0 means every one is inside the union.

    bash dev python -m bench sphere-set-fit-quality cesium_man.glb 8 16 32 64 128
"""
from __future__ import annotations

import numpy as np

from bench import registry, scenes, timing


def options(p) -> None:
    p.add_argument("asset", nargs="?", default="cesium_man.glb")
    p.add_argument("counts", type=int, nargs="*", default=[8, 16, 32, 64, 128])
    p.add_argument("--points", type=int, default=400_000, help="random surface points checked")


def run(args) -> int:

    from skin_collide.core.methods.sphere_set import variational
    from skin_collide.core.methods.sphere_set.outside_volume import mesh_volume
    from skin_collide.core.methods.sphere_set.union_volume import union_outside_volume_estimate

    asset, counts = args.asset, args.counts
    name, v, t = scenes.load_rest_mesh(asset)
    vol = mesh_volume(v, t)
    rng = np.random.default_rng(123)
    k = rng.integers(len(t), size=args.points)
    u, w = np.sqrt(rng.random(len(k))), rng.random(len(k))
    p = np.vstack([(1 - u)[:, None] * v[t[k, 0]] + (u * (1 - w))[:, None] * v[t[k, 1]]
                   + (u * w)[:, None] * v[t[k, 2]], v[np.unique(t)]])
    print(f"{asset} ({name}): {len(t)} triangles, mesh volume {vol:.6g}")
    print("N | E_r | stderr | build (s) | sum SOV / V | cover patches | worst gap")
    for n in counts:
        s, seconds = timing.timed_s(variational.fit, v, t, n, seed=0)
        out, err = union_outside_volume_estimate(s.centers, s.radii, v, t)
        gap = -np.inf
        for i in range(0, len(p), 20_000):  # memory chunks
            d = np.linalg.norm(p[i:i + 20_000, None] - s.centers[None], axis=2) - s.radii[None]
            gap = max(gap, float(d.min(1).max()))
        print(f"{n} | {out / vol:.3f} | {err / vol:.3f} | {seconds:.1f} | "
              f"{s.info['sum_sov'] / vol:.3f} | {s.info['cover']['patches']} | {gap:.1e}",
              flush=True)


    return 0


registry.register("sphere-set-fit-quality", "the variational sphere-set fit alone: E_r, its "
                  "error, build time and a union-coverage check (positional: ASSET N...)",
                  options, run, smoke={"asset": scenes.SMOKE, "counts": [4], "points": 2000},
                  doc=__doc__)
