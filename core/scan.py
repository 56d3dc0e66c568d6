"""Collision queries over several skinned objects, one frame at a time.

`prepare` builds, once per rig, what a query needs (sphere tree, LBS bounds when the rig
allows the on-demand refit, weld ids for self-collision); `seam_ids` decides, once per set
of objects, which vertices of different meshes are one vertex (`core.welds`). `query_frame` refits
and collides every object pair (and each object with itself when asked) for one frame,
given the frame's evaluated positions and poses, and returns triangle pairs plus timings.
Triangles are the frame's (Blender re-splits deformed quads, `core.geometry.triangulation`):
their indices are the same at every frame, their vertices are not.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from . import refit, refit_dqs, sphere_tree, traversal, welds
from . import triangles as tri_test
from .geometry import triangulation
from .refit_policy import ON_DEMAND_LBS, ON_DEMAND_PV, choose_refit
from .rig import Pose, Rig
from .self_collision import object_self_pairs

MODES = ("on-demand", "bottom-up")


@dataclass
class CollisionObject:
    """Everything a query needs about one rig, built once.

    Attributes:
        name: object name. rig: the `Rig`. tree: its `SphereTree` over the rest pose.
        bounds: `LbsBounds` for the on-demand refit (`refit_dqs.DqsBounds` with Preserve
            Volume), or None when the rig needs the bottom-up fallback.
            refit_method, refit_reason: as `choose_refit` says.
        vertex_keys: (V,) int64 weld ids (`welds.vertex_weld_ids`: equal ids ⇔ same
            vertex, or same armature-space rest position and same weights); adjacency keys
            of a frame's triangles are ``vertex_keys[frame_triangles]``.
        build_seconds: time to build tree and bounds.
    """

    name: str
    rig: Rig
    tree: sphere_tree.SphereTree
    bounds: refit.LbsBounds | None
    refit_method: str
    refit_reason: str
    vertex_keys: np.ndarray
    build_seconds: float = 0.0
    # Built on the first self-collision query (`self_collision.for_object`), not persisted.
    self_tree: object = None


def prepare(rig: Rig, collapse_c: float = sphere_tree.COLLAPSE_C) -> CollisionObject:
    """Build the sphere tree (and the LBS or Preserve Volume bounds when valid) for `rig`."""
    t0 = time.perf_counter()
    tree = sphere_tree.build(rig.rest_positions, rig.triangles, collapse_c=collapse_c,
                             tri_polygon=rig.tri_polygon, poly_ptr=rig.poly_ptr,
                             poly_verts=rig.poly_verts)
    method, reason = choose_refit(rig)
    bounds = (refit.lbs_bounds(tree, rig) if method == ON_DEMAND_LBS
              else refit_dqs.dqs_bounds(tree, rig) if method == ON_DEMAND_PV else None)
    keys = welds.vertex_weld_ids(rig)
    return CollisionObject(rig.name, rig, tree, bounds, method, reason, keys,
                           time.perf_counter() - t0)


# Seam ids of the last few object sets (strong references, so ids of objects in the cache
# cannot be reused): a scan queries the same set frame after frame.
_SEAM_CACHE: list[tuple[tuple, list, list]] = []
_SEAM_CACHE_SIZE = 8


def seam_ids(objects: list[CollisionObject]) -> list[np.ndarray | None]:
    """Per object, (V,) int64 vertex ids shared across the set (`welds.global_weld_ids`),
    or None for an object whose armature no other object of the set shares (it has no
    seams). Computed once per set and cached; the per-frame seam test is an index compare.
    """
    key = tuple(id(o) for o in objects)
    for k, objs, ids in _SEAM_CACHE:
        if k == key:
            return ids
    names = [o.rig.armature for o in objects]
    shared = [bool(n) and names.count(n) > 1 for n in names]
    ids: list[np.ndarray | None] = [None] * len(objects)
    group = [i for i, s in enumerate(shared) if s]
    if group:
        for i, g in zip(group, welds.global_weld_ids([objects[i].rig for i in group])):
            ids[i] = g
    _SEAM_CACHE.insert(0, (key, list(objects), ids))
    del _SEAM_CACHE[_SEAM_CACHE_SIZE:]
    return ids


def seams_apply(a: CollisionObject, b: CollisionObject, pose_a: Pose | None,
                pose_b: Pose | None) -> bool:
    """Whether seams between `a` and `b` hold this frame: the same armature, and (when the
    poses are known) the same armature transform and bone matrices, bit for bit. A cheap
    guard, per object pair, against two copies that only share a name."""
    if not a.rig.armature or a.rig.armature != b.rig.armature:
        return False
    if pose_a is None or pose_b is None:
        return True
    return bool(np.array_equal(pose_a.deform, pose_b.deform)
                and np.array_equal(pose_a.armature_world, pose_b.armature_world))


def seam_pairs(ids_a: np.ndarray, tri_a: np.ndarray, ta: np.ndarray,
               ids_b: np.ndarray, tri_b: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """(K,) bool: triangle ta[k] of mesh A and tb[k] of mesh B share a seam vertex (equal
    global ids, `seam_ids`)."""
    a = ids_a[tri_a[ta]]
    b = ids_b[tri_b[tb]]
    return np.any(a[:, :, None] == b[:, None, :], axis=(1, 2))


@dataclass
class FrameResult:
    """Pairs and statistics of one frame.

    Attributes:
        pairs: list of (object index a, object index b, (K, 2) int64 triangle pairs).
        ms: query time in milliseconds (refit, traversal and triangle tests).
        stats: per object pair, `traversal.QueryStats`.
        modes: the refit actually used per object ("on-demand" or "bottom-up").
        triangles: per object, the (T, 3) int32 triangles of the frame the pairs index.
    """

    pairs: list[tuple[int, int, np.ndarray]]
    ms: float
    stats: list[traversal.QueryStats] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    triangles: list[np.ndarray] = field(default_factory=list)

    @property
    def n_pairs(self) -> int:
        return int(sum(p.shape[0] for _, _, p in self.pairs))


def _spheres(obj: CollisionObject, positions: np.ndarray, pose: Pose | None,
             mode: str, tris: np.ndarray) -> tuple[traversal.LazySpheres, str]:
    if mode == "on-demand" and obj.bounds is not None and pose is not None:
        tree, bounds = obj.tree, obj.bounds
        if isinstance(bounds, refit_dqs.DqsBounds):     # Preserve Volume
            frame = refit_dqs.with_float32(
                refit_dqs.dqs_frame(pose, tree, obj.rig.bone_rest), pose, bounds)
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
    eager = refit.refit_bottom_up(obj.tree, tris, positions)
    return traversal.LazySpheres(obj.tree, eager=eager), "bottom-up"


def frame_triangles(obj: CollisionObject, positions: np.ndarray) -> np.ndarray:
    """(T, 3) int32 the triangles Blender draws for `obj` at `positions` (quads re-split
    by Blender's rule; n-gons keep their rest triangles). Pass mesh-local positions for a
    bit-exact match with Blender; world positions agree up to rounding (see
    `core.geometry.triangulation`)."""
    return triangulation.frame_triangles(obj.rig, positions)


def query_frame(objects: list[CollisionObject], positions: list[np.ndarray],
                poses: list[Pose | None], mode: str = "on-demand",
                self_collision: bool = False, first_hit: bool = False,
                triangles: list[np.ndarray | None] | None = None) -> FrameResult:
    """Collide every pair of objects (and each with itself if `self_collision`).

    Adjacent triangles are never reported: within an object those sharing a weld id (a
    vertex, or a split vertex with the same rest position and weights), between objects
    those sharing a seam vertex (`seam_ids`: parts of one character on one armature).

    Args:
        objects: prepared objects.
        positions: per object, (V, 3) float64 world-space evaluated positions: the single
            source of geometric truth for the exact triangle tests.
        poses: per object, the frame's `Pose` (needed by the on-demand refit).
        mode: "on-demand" (falls back to bottom-up per object where the rig requires it)
            or "bottom-up".
        first_hit: stop at the first intersecting triangle pair found.
        triangles: per object, the (T, 3) triangles Blender draws at this frame (from
            `frame_triangles` on the mesh-local evaluated positions, or Blender's evaluated
            loop triangles for meshes with n-gons); None (or a None entry) decides the
            quads from `positions` here.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    t0 = time.perf_counter()
    if triangles is None:
        triangles = [None] * len(objects)
    tris_all = [frame_triangles(obj, pos) if t is None else np.asarray(t, dtype=np.int32)
                for obj, pos, t in zip(objects, positions, triangles)]
    spheres, modes = [], []
    for obj, pos, pose, tris in zip(objects, positions, poses, tris_all):
        if len(objects) == 1:
            # Only self pairs, which do not use the sphere tree: skip its refit set-up.
            s = None
            m = "on-demand" if mode == "on-demand" and obj.bounds is not None and pose is not None else "bottom-up"
        else:
            s, m = _spheres(obj, pos, pose, mode, tris)
        spheres.append(s)
        modes.append(m)
    result = FrameResult([], 0.0, modes=modes, triangles=tris_all)
    seams = seam_ids(objects)
    jobs = [(i, j) for i in range(len(objects)) for j in range(i + 1, len(objects))]
    if self_collision:
        jobs += [(i, i) for i in range(len(objects))]
    for i, j in jobs:
        tri_i, tri_j = tris_all[i], tris_all[j]
        pos_i, pos_j = positions[i], positions[j]

        def test(ta, tb, pos_i=pos_i, pos_j=pos_j, tri_i=tri_i, tri_j=tri_j):
            return tri_test.triangle_pairs_intersect(pos_i, tri_i, ta, pos_j, tri_j, tb)

        if i == j:
            # Exact self-collision on its own AABB tree (docs/self_collision.md).
            st = traversal.QueryStats()
            pairs = object_self_pairs(objects[i], pos_i, tri_i, stats=st)
            if first_hit:
                pairs = pairs[:1]
        else:
            if seams[i] is not None and seams[j] is not None and \
                    seams_apply(objects[i], objects[j], poses[i], poses[j]):
                # Mesh parts of one character meet along seams decided at build.
                def test_apart(ta, tb, test=test, ids_i=seams[i], ids_j=seams[j],
                               tri_i=tri_i, tri_j=tri_j):
                    hit = np.zeros(ta.size, dtype=bool)
                    far = np.nonzero(~seam_pairs(ids_i, tri_i, ta, ids_j, tri_j, tb))[0]
                    hit[far] = test(ta[far], tb[far])
                    return hit
            else:
                test_apart = test

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

    Self-collision when `pos_b` is None: pairs i < j, adjacent pairs (by `keys`, (T, 3)
    per-triangle keys of `tri_a`: ``vertex_keys[tri_a]``) dropped. Pass the frame's
    triangles (`frame_triangles`), not the rest ones.
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
            hit = tri_test.triangle_pairs_intersect(pos_a, tri_a, ia, pos_a, tri_a, ib)
        else:
            hit = tri_test.triangle_pairs_intersect(pos_a, tri_a, ia, pos_b, tri_b, ib)
        out.append(np.stack([ia[hit], ib[hit]], 1))
    pairs = np.concatenate(out) if out else np.zeros((0, 2), np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
