"""How much of the exact self tree's per-frame work a bone-rigidity certificate could skip.

A pair of nodes whose every vertex follows one bone rigidly keeps its rest geometry (up to
the bone's affine map), so if its rest boxes are apart it stays apart: such seeds need no
box test in any pose. This prints, for the largest skinned mesh of an asset, the share of
the self tree's seeds (the neighbour node pairs box-tested every frame,
`docs/self_collision.md`) whose two nodes hold only vertices with one dominant bone of
weight share above a threshold, and of those, the share whose rest boxes are apart.

    bash dev python -m bench rigid-seeds --asset makehuman_default.blend --level 0

An upper bound on what such a certificate could remove.
"""
from __future__ import annotations

import numpy as np

from bench import registry, scenes


def _corner_pairs(obj) -> int:
    """The triangle pairs (t, u) that share no vertex key while their polygons share one:
    with polygons as the tree's leaves, these would still need a test per frame at
    triangle granularity (docs/self_collision.md, "Culling that was not built")."""
    rig = obj.rig
    keys = np.asarray(obj.vertex_keys)
    P = rig.poly_ptr.size - 1
    owner = np.repeat(np.arange(P), np.diff(rig.poly_ptr))
    pk = np.unique(np.stack([keys[rig.poly_verts], owner], 1), axis=0)   # (key, polygon)
    same_key, a, b = pk[:, 0], [], []
    for d in range(1, int(np.bincount(np.unique(same_key, return_inverse=True)[1]).max())):
        hit = np.flatnonzero(same_key[d:] == same_key[:-d])
        a.append(pk[hit, 1])
        b.append(pk[hit + d, 1])
    pp = np.unique(np.stack([np.concatenate(a), np.concatenate(b)], 1), axis=0)
    tp = rig.tri_polygon.astype(np.int64)
    order = np.argsort(tp, kind="stable")
    start = np.searchsorted(tp[order], np.arange(P + 1))
    count = np.diff(start)
    tk = keys[rig.triangles]
    n = 0
    for i in range(int(count.max())):            # the i-th triangle of polygon a, j-th of b
        for j in range(int(count.max())):
            m = (count[pp[:, 0]] > i) & (count[pp[:, 1]] > j)
            t = order[start[pp[m, 0]] + i]
            u = order[start[pp[m, 1]] + j]
            shared = (tk[t][:, :, None] == tk[u][:, None, :]).any(axis=(1, 2))
            n += int((~shared).sum())
    return n


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0)


def run(args) -> int:
    from skin_collide.addon import scanner
    from skin_collide.core.aabb_tree import boxes as B
    from skin_collide.core.scan import carry as sc_carry

    ob = scenes.load_one(args.asset, args.level)
    obj = scanner.Scanner([ob], self_collision=True).objects[0]
    tree = sc_carry.for_object(obj)
    rig = obj.rig
    ptr, bone, w = rig.weight_ptr, rig.weight_bone, rig.weight_value
    V = rig.n_vertices
    owner = np.repeat(np.arange(V), np.diff(ptr))
    # Dominant bone and its share of each vertex's weights (vectorized over influences).
    order = np.lexsort((-w, owner))
    first = order[np.r_[0, np.flatnonzero(np.diff(owner[order])) + 1]] if w.size else order
    dom = np.full(V, -1)
    share = np.zeros(V)
    total = np.bincount(owner, weights=w, minlength=V)
    dom[owner[first]] = bone[first]
    share[owner[first]] = w[first] / np.maximum(total[owner[first]], 1e-300)
    rest = B.level_boxes(tree, B.triangle_boxes(rig.rest_positions, rig.triangles))
    n_seeds = sum(a.size for a, _ in tree.seeds)
    print(f"{args.asset} level {args.level}: {rig.n_triangles} triangles, {n_seeds} seeds")
    # Where the seeds are: most sit at the leaves and just above (docs/self_collision.md).
    by_level = [a.size for a, _ in tree.seeds][::-1]
    print("seeds per tree level, from the leaves up: "
          + ", ".join(f"{n} ({100 * n / max(n_seeds, 1):.0f}%)" for n in by_level[:4])
          + f", {sum(by_level[4:])} above")
    print(f"non-adjacent triangle pairs of polygons sharing a vertex: {_corner_pairs(obj)}")
    print("| dominant weight share above | seeds with one bone | and rest boxes apart |")
    print("|---|---|---|")
    for thr in (1 - 1e-6, 0.99, 0.9):
        lab = np.where(share > thr, dom, -1)[rig.triangles]
        tlab = np.where((lab == lab[:, :1]).all(1), lab[:, 0], -1)
        node = np.full(tree.n_slots, -2)
        node[tree.tri_slot] = tlab
        levels = [node]
        for _ in range(tree.height):           # a node's label: its children's, if one
            a, b = levels[-1][0::2], levels[-1][1::2]
            levels.append(np.where(a == -2, b, np.where((b == -2) | (a == b), a, -1)))
        levels.reverse()
        one = apart = 0
        for lv, (sa, sb) in enumerate(tree.seeds):
            la, lb = levels[lv][sa], levels[lv][sb]
            same = (la == lb) & (la >= 0)
            gap = (rest[lv][sa] + rest[lv][sb][:, B.SWAP])[:, :6].max(axis=1)
            one += int(same.sum())
            apart += int((same & (gap > 0)).sum())
        print(f"| {thr:.6g} | {100 * one / n_seeds:.1f}% | {100 * apart / n_seeds:.1f}% |")


    return 0


registry.register("rigid-seeds", "how much of the self tree's per-frame seeds a bone-rigidity "
                  "certificate could skip (an upper bound; no timing)", options, run,
                  smoke={"asset": scenes.SMOKE}, doc=__doc__)
