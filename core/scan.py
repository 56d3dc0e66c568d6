"""Collision queries over several skinned objects, one frame at a time.

`prepare` builds, once per rig, what a query needs (sphere tree, LBS bounds when the rig
allows the on-demand refit, welded vertex keys for self-collision). `query_frame` refits
and collides every object pair (and each object with itself when asked) for one frame,
given the frame's evaluated positions and poses, and returns triangle pairs plus timings.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import refit, refit_dqs, sphere_tree, traversal, triangles
from .refit_policy import ON_DEMAND_LBS, ON_DEMAND_PV, choose_refit
from .rig import Pose, Rig

MODES = ("on-demand", "bottom-up")


@dataclass
class CollisionObject:
    """Everything a query needs about one rig, built once.

    Attributes:
        name: object name. rig: the `Rig`. tree: its `SphereTree` over the rest pose.
        bounds: `LbsBounds` for the on-demand refit (`refit_dqs.DqsBounds` with Preserve
            Volume), or None when the rig needs the bottom-up fallback.
        refit_method, refit_reason: as `choose_refit` says.
        keys: (T, 3) int64 welded vertex keys (self-collision adjacency).
        build_seconds: time to build tree and bounds.
    """

    name: str
    rig: Rig
    tree: sphere_tree.SphereTree
    bounds: refit.LbsBounds | None
    refit_method: str
    refit_reason: str
    keys: np.ndarray
    build_seconds: float = 0.0


def prepare(rig: Rig, collapse_c: float = sphere_tree.COLLAPSE_C) -> CollisionObject:
    """Build the sphere tree (and the LBS or Preserve Volume bounds when valid) for `rig`."""
    t0 = time.perf_counter()
    tree = sphere_tree.build(rig.rest_positions, rig.triangles, collapse_c=collapse_c)
    method, reason = choose_refit(rig)
    bounds = (refit.lbs_bounds(tree, rig) if method == ON_DEMAND_LBS
              else refit_dqs.dqs_bounds(tree, rig) if method == ON_DEMAND_PV else None)
    keys = traversal.welded_triangle_keys(rig.rest_positions, rig.triangles)
    return CollisionObject(rig.name, rig, tree, bounds, method, reason, keys,
                           time.perf_counter() - t0)


@dataclass
class FrameResult:
    """Pairs and statistics of one frame.

    Attributes:
        pairs: list of (object index a, object index b, (K, 2) int64 triangle pairs).
        ms: query time in milliseconds (refit, traversal and triangle tests).
        stats: per object pair, `traversal.QueryStats`.
        modes: the refit actually used per object ("on-demand" or "bottom-up").
    """

    pairs: list[tuple[int, int, np.ndarray]]
    ms: float
    stats: list[traversal.QueryStats] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)

    @property
    def n_pairs(self) -> int:
        return int(sum(p.shape[0] for _, _, p in self.pairs))


def _spheres(obj: CollisionObject, positions: np.ndarray, pose: Pose | None,
             mode: str) -> tuple[traversal.LazySpheres, str]:
    if mode == "on-demand" and obj.bounds is not None and pose is not None:
        tree, bounds, tris = obj.tree, obj.bounds, obj.rig.triangles
        if isinstance(bounds, refit_dqs.DqsBounds):     # Preserve Volume
            frame = refit_dqs.dqs_frame(pose, tree, obj.rig.bone_rest)
            inner_refit = refit_dqs.refit_on_demand_dqs
        else:
            frame = refit.frame_transforms(pose, tree)
            inner_refit = refit.refit_on_demand

        def refit_nodes(nodes):
            # Leaves take their triangle's evaluated vertices (exact); inner nodes the bound.
            leaf = tree.leaf_tri[nodes] >= 0
            if leaf.all():
                return refit.leaf_spheres(tree, tris, positions, nodes)
            c = np.empty((nodes.size, 3))
            r = np.empty(nodes.size)
            c[leaf], r[leaf] = refit.leaf_spheres(tree, tris, positions, nodes[leaf])
            c[~leaf], r[~leaf] = inner_refit(tree, bounds, frame, nodes[~leaf])
            return c, r

        return traversal.LazySpheres(tree, refit=refit_nodes), "on-demand"
    eager = refit.refit_bottom_up(obj.tree, obj.rig.triangles, positions)
    return traversal.LazySpheres(obj.tree, eager=eager), "bottom-up"


def query_frame(objects: list[CollisionObject], positions: list[np.ndarray],
                poses: list[Pose | None], mode: str = "on-demand",
                self_collision: bool = False, first_hit: bool = False) -> FrameResult:
    """Collide every pair of objects (and each with itself if `self_collision`).

    Adjacent triangles are never reported: within an object those sharing a vertex or a
    vertex position (split seams), between objects those with a vertex at the same world
    position (a character split into several mesh parts).

    Args:
        objects: prepared objects.
        positions: per object, (V, 3) float64 world-space evaluated positions: the single
            source of geometric truth for the exact triangle tests.
        poses: per object, the frame's `Pose` (needed by the on-demand refit).
        mode: "on-demand" (falls back to bottom-up per object where the rig requires it)
            or "bottom-up".
        first_hit: stop at the first intersecting triangle pair found.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    t0 = time.perf_counter()
    spheres, modes = [], []
    for obj, pos, pose in zip(objects, positions, poses):
        s, m = _spheres(obj, pos, pose, mode)
        spheres.append(s)
        modes.append(m)
    result = FrameResult([], 0.0, modes=modes)
    jobs = [(i, j) for i in range(len(objects)) for j in range(i + 1, len(objects))]
    if self_collision:
        jobs += [(i, i) for i in range(len(objects))]
    for i, j in jobs:
        tri_i, tri_j = objects[i].rig.triangles, objects[j].rig.triangles
        pos_i, pos_j = positions[i], positions[j]

        def test(ta, tb, pos_i=pos_i, pos_j=pos_j, tri_i=tri_i, tri_j=tri_j):
            return triangles.triangle_pairs_intersect(pos_i, tri_i, ta, pos_j, tri_j, tb)

        if i == j:
            # A tree against itself: fresh lazy spheres would redo the refits, so reuse.
            pairs, st = traversal.collide(spheres[i], None, test, first_hit=first_hit,
                                          self_keys=objects[i].keys)
        else:
            # Mesh parts of one character meet along seams; contact there is adjacency.
            def test_apart(ta, tb, test=test, pos_i=pos_i, pos_j=pos_j, tri_i=tri_i, tri_j=tri_j):
                hit = test(ta, tb)
                k = np.nonzero(hit)[0]
                hit[k] = ~traversal.shares_position(pos_i, tri_i, ta[k], pos_j, tri_j, tb[k])
                return hit

            pairs, st = traversal.collide(spheres[i], spheres[j], test_apart, first_hit=first_hit)
        result.stats.append(st)
        if pairs.size:
            result.pairs.append((i, j, pairs))
            if first_hit:
                break
    result.ms = (time.perf_counter() - t0) * 1000.0
    return result


def polygon_pairs(objects: list[CollisionObject],
                  result: FrameResult) -> list[tuple[int, int, int, int]]:
    """Unique unordered polygon pairs (obj a, poly a, obj b, poly b), sorted.

    Triangle pairs map to the mesh's own polygon indices; several triangle pairs of the
    same two polygons (quads) count once, and a polygon never pairs with itself.
    """
    out = set()
    for i, j, pairs in result.pairs:
        pa = objects[i].rig.tri_polygon[pairs[:, 0]]
        pb = objects[j].rig.tri_polygon[pairs[:, 1]]
        for a, b in zip(pa.tolist(), pb.tolist()):
            if i == j:
                if a == b:
                    continue
                a, b = min(a, b), max(a, b)
            out.add((i, a, j, b))
    return sorted(out)


def brute_force_pairs(pos_a: np.ndarray, tri_a: np.ndarray, pos_b: np.ndarray | None = None,
                      tri_b: np.ndarray | None = None, keys: np.ndarray | None = None,
                      block: int = 4_000_000) -> np.ndarray:
    """Every intersecting triangle pair by testing all pairs (small meshes only).

    Self-collision when `pos_b` is None: pairs i < j, adjacent pairs (by `keys`) dropped.
    Returns (K, 2) int64 sorted lexicographically.
    """
    self_mode = pos_b is None
    Ta = tri_a.shape[0]
    Tb = Ta if self_mode else tri_b.shape[0]
    out = []
    rows = max(1, block // max(Tb, 1))
    for s in range(0, Ta, rows):
        ia, ib = np.meshgrid(np.arange(s, min(s + rows, Ta)), np.arange(Tb), indexing="ij")
        ia, ib = ia.ravel(), ib.ravel()
        if self_mode:
            keep = ia < ib
            ia, ib = ia[keep], ib[keep]
            far = ~traversal.adjacent_pairs(keys, ia, ib)
            ia, ib = ia[far], ib[far]
            hit = triangles.triangle_pairs_intersect(pos_a, tri_a, ia, pos_a, tri_a, ib)
        else:
            hit = triangles.triangle_pairs_intersect(pos_a, tri_a, ia, pos_b, tri_b, ib)
        out.append(np.stack([ia[hit], ib[hit]], 1))
    pairs = np.concatenate(out) if out else np.zeros((0, 2), np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
