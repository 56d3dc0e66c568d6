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

import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from . import triangles as tri_test
from . import welds
from .aabb_tree import for_object, frame_state, keep_cross_pairs, object_cross_pairs, object_self_pairs
from .contacts import pairs as contacts
from .geometry import triangulation
from .methods import registry
from .methods.base import Method
from .query import broad_phase, multi, traversal
from .rig import Pose, Rig
from .types import Frame, Volumes

#: A query's default: each object answers with its own method (with its fallbacks). The
#: other value of `query_frame`'s `mode` is the id of a `Method.for_any_object` method,
#: which every object then uses (`registry.any_object()`: the bottom-up sphere tree).
OWN = "on-demand"


@dataclass
class CollisionObject:
    """Everything a query needs about one rig, built once.

    Attributes:
        name: object name. rig: the `Rig`.
        method: id of the registered method (`core.methods.registry`) actually built for
            the rig, after the fallback chain of the one asked for (`asked`).
        data: that method's prepared data (`Method.prepare`; arrays, storable).
        reason: why the asked method was passed over ("" when it is used).
        vertex_keys: (V,) int64 weld ids (`welds.vertex_weld_ids`: equal ids ⇔ same
            vertex, or same armature-space rest position and same weights); adjacency keys
            of a frame's triangles are ``vertex_keys[frame_triangles]``.
        build_seconds: time to build the method's data.
        asked: the method id asked for at build.
    """

    name: str
    rig: Rig
    method: str
    data: object
    reason: str
    vertex_keys: np.ndarray
    build_seconds: float = 0.0
    asked: str = registry.DEFAULT
    # Made on first use, never persisted: the self-collision tree
    # (`self_collision.for_object`) and, per other method a query asks every object to use
    # (`Method.for_any_object`), that method's data.
    self_tree: object = field(default=None, repr=False)
    _other_data: dict = field(default_factory=dict, repr=False)
    #: Set by the live overlay while the artist poses: self-collision keeps its last
    #: complete answer (`self_last`) and re-checks only what moved
    #: (`self_collision.object_self_pairs`).
    #: The name is historical: the flag carries the pairs between two carrying objects
    #: too (`self_collision.object_cross_pairs`, kept in `cross_last` on the first object
    #: of the pair, by id of the other); `self_last` is the kept frame both share
    #: (`self_collision.frame_state`: positions, triangles, boxes), kept even when
    #: self-collision is off.
    carry_self_pairs: bool = field(default=False, repr=False)
    self_last: object = field(default=None, repr=False)
    cross_last: dict = field(default_factory=dict, repr=False)
    #: `welds.shared_vertices(vertex_keys)`, made on first use (`frame_keys`).
    shared_vertices: object = field(default=None, repr=False)

    def data_for(self, method: Method):
        """The prepared data of `method` for this object: its own when it was built for
        it, else adopted from its own (`Method.adopt`) or built once and kept."""
        if method.id == self.method:
            return self.data
        if method.id not in self._other_data:
            d = method.adopt(self.data)
            self._other_data[method.id] = method.prepare(self.rig) if d is None else d
        return self._other_data[method.id]

    def own_aabb_tree(self):
        """The exact AABB tree the method's data already is (`Method.aabb_tree`), or None."""
        return registry.get(self.method).aabb_tree(self.data)

    @property
    def summary(self) -> str:
        """What the build made, for people (`Method.summary`)."""
        return registry.get(self.method).summary(self.data)

    @property
    def refit_method(self) -> str:
        """The method's label, for people."""
        return registry.get(self.method).label

    @property
    def refit_reason(self) -> str:
        return self.reason or registry.get(self.method).description


def prepare(rig: Rig, method: str = registry.DEFAULT, **options) -> CollisionObject:
    """Build the data of `method` for `rig`, or of the first method of its fallback chain
    that is exact for the rig (`registry.resolve`). Raises KeyError for an unknown id.
    `options` (e.g. a sphere set's count, seed, progress) go to the asked method's
    `prepare`; a fallback method is built with its defaults."""
    t0 = time.perf_counter()
    m, reasons = registry.resolve(method, rig)
    asked = registry.get(method)
    extra = set(options) - set(asked.options) - (
        {"progress", "should_stop"} if asked.reports_progress else set())
    if extra:
        raise TypeError(f"method '{method}' takes no option {', '.join(sorted(extra))} "
                        f"(its options: {', '.join(asked.options) or 'none'})")
    data = m.prepare(rig, **options) if m.id == method else m.prepare(rig)
    keys = welds.vertex_weld_ids(rig)
    return CollisionObject(rig.name, rig, m.id, data, "; ".join(reasons), keys,
                           time.perf_counter() - t0, asked=method)


#: The rig arrays a build depends on (`build_key`).
_BUILD_ARRAYS = ("rest_positions", "triangles", "tri_polygon", "weight_ptr", "weight_bone",
                 "weight_value", "bone_parents", "bone_rest", "bone_deform", "poly_ptr",
                 "poly_verts")


def build_key(rig: Rig) -> tuple:
    """What a method's build of `rig` depends on: its rest mesh, weights and bones (by
    name), and what decides the method (Preserve Volume, the surface, `unsupported`),
    not its object's or its armature's name nor where the mesh stands: copies of one
    character (a crowd, linked duplicates, instances) have one key and can share a
    build (`prepare_shared`)."""
    h = hashlib.sha1()
    for name in _BUILD_ARRAYS:
        h.update(np.ascontiguousarray(getattr(rig, name)).tobytes())
    if rig.face_origin is not None:
        h.update(rig.face_origin.tobytes())
    h.update("\0".join(rig.bone_names).encode())
    return (h.hexdigest(), rig.preserve_volume, rig.surface, rig.is_rigid,
            tuple(rig.unsupported))


def prepare_shared(rigs: list[Rig], method: str = registry.DEFAULT, self_trees: bool = False,
                   **options) -> list[CollisionObject]:
    """`prepare_all` once per `build_key`: the rigs of copies of one character share one
    build (`renamed` for each but the first), so a crowd of one character builds once."""
    unique, expand = shared_builds(rigs)
    return expand(prepare_all(unique, method, self_trees=self_trees, **options))


def shared_builds(rigs: list[Rig]) -> tuple[list[Rig], object]:
    """The rigs to build, once per `build_key`, and the function that gives every rig of
    `rigs` its object from the objects built for them (`renamed` for each but the first
    of a key): `prepare_shared`, and the panel's Build, which builds them in steps."""
    keys = [build_key(r) for r in rigs]
    first: dict[tuple, int] = {}
    unique = []
    for rig, k in zip(rigs, keys):
        if k not in first:
            first[k] = len(unique)
            unique.append(rig)

    def expand(objects: list[CollisionObject]) -> list[CollisionObject]:
        out, used = [], set()
        for rig, k in zip(rigs, keys):
            i = first[k]
            out.append(objects[i] if i not in used else renamed(objects[i], rig))
            used.add(i)
        return out

    return unique, expand


def renamed(obj: CollisionObject, rig: Rig) -> CollisionObject:
    """`obj` for another object whose rig has the same `build_key` (a collection instance,
    a copy of the character: `rig`, under its own name): the same built data and self
    tree, made once, and its own rig, name and per-frame state."""
    return CollisionObject(rig.name, rig, obj.method, obj.data, obj.reason, obj.vertex_keys,
                           0.0, obj.asked, self_tree=obj.self_tree, _other_data=obj._other_data,
                           shared_vertices=obj.shared_vertices)


def prepare_all(rigs: list[Rig], method: str = registry.DEFAULT, self_trees: bool = False,
                workers: int | None = None, **options) -> list[CollisionObject]:
    """`prepare` for several rigs, on a thread pool of `workers` (default: the machine's
    cores). A build is long numpy array work that releases the GIL, so characters build
    side by side: 1.6-1.8x (and the self trees 1.9-2.1x) on 2 cores
    (docs/benchmarks.md#threads-issue-29-item-4); one frame's query does not gain, so
    queries stay serial. With `self_trees`, each object's self-collision tree is built
    too (else on its first self query). One rig, one worker, or a method that reports
    progress (its callbacks talk to the caller) builds one rig at a time. The objects are
    those `prepare` makes (with the method's `options`), in the order of `rigs`; the first
    error is raised.
    """
    def one(rig: Rig) -> CollisionObject:
        obj = prepare(rig, method, **options)
        if self_trees:
            for_object(obj)
        return obj

    n = 1 if registry.get(method).reports_progress else workers
    return side_by_side(one, rigs, n)


def side_by_side(fn, items: list, workers: int | None = None) -> list:
    """``[fn(x) for x in items]``, on a thread pool of `workers` (default: the cores) when
    there is more than one item and worker; the first error is raised."""
    n = min(len(items), workers or os.cpu_count() or 1)
    if n <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(fn, items))


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
    for k, _objs, ids in _SEAM_CACHE:
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


def weld_tolerance(rig: Rig) -> float | None:
    """How welds are judged per frame for `rig` (`welds.frame_weld_ids`' `rel_tol`):

    * None, never: under skinning and rigid motion welded vertices never part (the
      on-demand refit's premise; they may differ in the last float32 bits where their
      groups are listed in another order, which is not a parting);
    * 0, at the same position bit for bit: a rig refitted from Blender's positions on its
      own mesh (`Rig.unsupported`: Corrective Smooth, shape keys, caches ...);
    * `welds.SEAM_TOLERANCE` of the welded vertices' extent: an evaluated surface, whose
      seams come out of the modifiers a few ulps apart and were welded so at build
      (`welds.snap_seams`)."""
    if not rig.unsupported:
        return None
    return welds.SEAM_TOLERANCE if rig.surface else 0.0


def frame_keys(obj: CollisionObject, positions: np.ndarray) -> np.ndarray | None:
    """`obj`'s weld ids at this frame (`welds.frame_weld_ids`, judged as `weld_tolerance`
    says): None while every weld holds, else (V,) int64 ids with the parted welds split.
    `positions`: (V, 3) float64."""
    tol = weld_tolerance(obj.rig)
    if tol is None:
        return None
    if obj.shared_vertices is None:
        obj.shared_vertices = welds.shared_vertices(obj.vertex_keys)
    return welds.frame_weld_ids(obj.vertex_keys, positions, *obj.shared_vertices, rel_tol=tol)


def parted_self_pairs(obj: CollisionObject, positions: np.ndarray, tris: np.ndarray
                      ) -> np.ndarray:
    """Intersecting triangle pairs of `obj` that meet only at welds parted this frame
    (`welds.parted_pairs`): the self queries skip every pair adjacent by the build's weld
    ids, so these are tested here, exactly. A few hundred pairs at most on a character
    whose seams a Corrective Smooth opens; none (and a compare of the welded vertices'
    positions) when every weld holds. Returns (K, 2) int64."""
    keys = frame_keys(obj, positions)
    if keys is None:
        return np.zeros((0, 2), np.int64)
    cand = welds.parted_pairs(tris, obj.vertex_keys, keys)
    if not cand.size:
        return cand
    hit = tri_test.triangle_pairs_intersect(positions, tris, cand[:, 0], positions, tris,
                                            cand[:, 1])
    return cand[hit]


@dataclass
class FrameResult:
    """Pairs and statistics of one frame.

    Attributes:
        pairs: list of (object index a, object index b, (K, 2) int64 triangle pairs).
        ms: query time in milliseconds (refit, traversal and triangle tests).
        stats: per object pair, `traversal.QueryStats`.
        modes: the method actually used per object this frame (registry ids, e.g.
            "sphere-tree", "sphere-tree-pv", "bottom-up").
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


def query_method(obj: CollisionObject, mode: str) -> Method:
    """The method answering for `obj` in a query of `mode`: its own (`OWN`), or the
    `Method.for_any_object` method that `mode` names."""
    if mode == OWN:
        return registry.get(obj.method)
    return registry.get(mode)


def check_mode(mode: str) -> None:
    """ValueError unless `mode` is `OWN` or the id of a `Method.for_any_object` method."""
    if mode == OWN:
        return
    try:
        ok = registry.get(mode).for_any_object
    except KeyError:
        ok = False
    if not ok:
        anyone = [m.id for m in registry.methods() if m.for_any_object]
        raise ValueError(f"mode must be one of {(OWN, *anyone)}")


def volumes(obj: CollisionObject, positions: np.ndarray, pose: Pose | None, mode: str,
            tris: np.ndarray) -> Volumes:
    """The frame's volumes of `obj`: its method's, or those of the method `mode` names
    (`query_method`). `Volumes.method_id` says which method answered."""
    m = query_method(obj, mode)
    v = m.volumes(obj.rig, obj.data_for(m), Frame(positions, tris, pose))
    if v.method_id is None:
        v.method_id = m.id
    return v


def frame_triangles(obj: CollisionObject, positions: np.ndarray) -> np.ndarray:
    """(T, 3) int32 the triangles Blender draws for `obj` at `positions` (quads re-split
    by Blender's rule; n-gons keep their rest triangles). Pass mesh-local positions for a
    bit-exact match with Blender; world positions agree up to rounding (see
    `core.geometry.triangulation`)."""
    return triangulation.frame_triangles(obj.rig, positions)


def query_frame(objects: list[CollisionObject], positions: list[np.ndarray],
                poses: list[Pose | None], mode: str = OWN,
                self_collision: bool = False, first_hit: bool = False,
                triangles: list[np.ndarray | None] | None = None,
                enough_self=None, enough_between=None) -> FrameResult:
    """Collide every pair of objects (and each with itself if `self_collision`).

    Adjacent triangles are never reported: within an object those sharing a weld id (a
    vertex, or a split vertex with the same rest position and weights), between objects
    those sharing a seam vertex (`seam_ids`: parts of one character on one armature).

    Args:
        objects: prepared objects.
        positions: per object, (V, 3) float64 world-space evaluated positions: the single
            source of geometric truth for the exact triangle tests.
        poses: per object, the frame's `Pose` (needed by the on-demand refit).
        mode: "on-demand": each object's own method (`CollisionObject.method`; a
            sphere-tree method refits bottom-up when its pose is None), or "bottom-up":
            every object's sphere tree refitted from the evaluated mesh.
        first_hit: stop at the first intersecting triangle pair found.
        triangles: per object, the (T, 3) triangles Blender draws at this frame (from
            `frame_triangles` on the mesh-local evaluated positions, or Blender's evaluated
            loop triangles for meshes with n-gons); None (or a None entry) decides the
            quads from `positions` here.
        enough_self: optional f(i, pairs) -> bool for capped frames: the exact self
            tree of object i stops once it says its (K, 2) pairs so far are enough (the
            self pairs are then a subset; the stats' ``extra["stopped"]`` says so).
        enough_between: the same for the pairs between objects that go through the
            stacked traversal: f(list of (i, j, (K, 2) triangle pairs)) -> bool.
    """
    check_mode(mode)
    t0 = time.perf_counter()
    n = len(objects)
    if triangles is None:
        triangles = [None] * n
    tris_all = [frame_triangles(obj, pos) if t is None else np.asarray(t, dtype=np.int32)
                for obj, pos, t in zip(objects, positions, triangles)]
    # Object-level broad phase (core.query.broad_phase): only objects whose boxes meet another's
    # get volumes and a traversal; the others cost their box.
    boxes = None
    candidates = np.zeros((0, 2), np.int64)
    if n > 1:
        boxes = broad_phase.position_boxes(positions)
        candidates = broad_phase.sweep_pairs(*boxes)
    vols: list[Volumes | None] = [None] * n
    modes = [frame_method(obj, pose, mode) for obj, pose in zip(objects, poses)]
    result = FrameResult([], 0.0, modes=modes, triangles=tris_all)
    seams = seam_ids(objects)
    for obj in objects:
        if not obj.carry_self_pairs:       # a query that does not carry starts afresh
            obj.self_last = None
            obj.cross_last = {}
    # The kept frames of carrying objects, brought up to this frame once and shared by the
    # pairs between objects and the self pairs (`self_collision.frame_state`).
    states: dict = {}
    if n > 1:
        # Fills `vols` for the objects that go through the tree traversal.
        result.pairs, st = _collide_candidates(objects, positions, poses, tris_all, seams,
                                               vols, candidates, boxes, first_hit, mode,
                                               enough_between, states)
        result.stats.append(st)
        for k, v in enumerate(vols):
            if v is not None:
                modes[k] = v.method_id
    if self_collision and not (first_hit and result.pairs):
        for i in range(n):
            # The method's own self query, or the exact AABB self tree (docs/self_collision.md).
            st = traversal.QueryStats()
            enough = None if enough_self is None else (lambda p, i=i: enough_self(i, p))
            pairs = _self_pairs(objects[i], positions[i], poses[i], tris_all[i], mode, st,
                                enough, states.get(i))
            parted = parted_self_pairs(objects[i], positions[i], tris_all[i])
            if parted.size:
                pairs = np.concatenate([pairs.reshape(-1, 2).astype(np.int64), parted])
            if first_hit:
                pairs = pairs[:1]
            result.stats.append(st)
            if pairs.size:
                result.pairs.append((i, i, pairs))
                if first_hit:
                    break
    result.ms = (time.perf_counter() - t0) * 1000.0
    return result


def _self_pairs(obj: CollisionObject, positions: np.ndarray, pose: Pose | None,
                tris: np.ndarray, mode: str, st: traversal.QueryStats,
                enough=None, state=None) -> np.ndarray:
    """Self pairs of one object: its method's own self query (`Method.self_pairs`, e.g.
    sphere chains) when it has one, else the exact AABB self tree."""
    m = query_method(obj, mode)
    if m.supports_self:
        pairs = m.self_pairs(obj.rig, obj.data_for(m), Frame(positions, tris, pose),
                             obj.vertex_keys, stats=st)
        if pairs is not None:
            return pairs
    return object_self_pairs(obj, positions, tris, stats=st, enough=enough, state=state)


def frame_method(obj: CollisionObject, pose: Pose | None, mode: str) -> str:
    """The method whose volumes `volumes` would hand out for `obj` this frame (the JSON
    `refit` id), without making them (`Method.frame_method`: e.g. sphere-tree methods pass
    a frame without a pose to the bottom-up refit)."""
    m = query_method(obj, mode)
    return m.frame_method(obj.data_for(m), pose)


# `welds.shared_vertices` of the last few concatenated seam ids (by the seam list's identity,
# which `seam_ids` caches per object set): a sort of every vertex, once per set.
_SEAM_VERTICES: list = []


def _seam_vertices(seams: list, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    for key, g, shared in _SEAM_VERTICES:
        if key is seams and g.shape == G.shape:
            return shared
    shared = welds.shared_vertices(G)
    _SEAM_VERTICES.insert(0, (seams, G, shared))
    del _SEAM_VERTICES[_SEAM_CACHE_SIZE:]
    return shared


def _seams_hold(objects, poses, seams, i: int, j: int) -> bool:
    return (seams[i] is not None and seams[j] is not None
            and seams_apply(objects[i], objects[j], poses[i], poses[j]))


#: Object pairs with at most this many triangles (both sides) in their boxes' shrunken
#: intersection are paired by boxes without a tree (core.query.broad_phase.box_filtered_pairs:
#: cells split in two, then a sweep); the others go through the tree traversal. On crowds
#: of Cesium Men the box path took half the CPU time of the traversal (bench_crowd.py).
BOX_PAIRS_MAX = 20000


def _collide_candidates(objects, positions, poses, tris_all, seams, vols, candidates, boxes,
                        first_hit: bool = False, mode: str = OWN, enough=None,
                        states: dict | None = None
                        ) -> tuple[list[tuple[int, int, np.ndarray]], traversal.QueryStats]:
    """Every intersecting triangle pair of the candidate object pairs (the broad phase's),
    on whole arrays over all of them: positions and triangles of all objects stacked; per
    pair, the triangles in the intersection of the two objects' boxes; pairs with few go
    straight to the exact test, the others through one tree traversal
    (`core.query.multi`), whose volumes are made here (in `vols`) for their objects only.
    Seams are dropped with one index compare. Each object pair's pairs are sorted.

    Between two carrying objects (``carry_self_pairs``, the live overlay) without
    `first_hit`, the pairs come from their last complete answer where it is kept
    (`self_collision.object_cross_pairs`: only what moved is traversed and tested); the
    complete answer of a pair that was carried or went through the traversal is kept for
    the next update; their kept frames, brought up to this frame, are put in `states`
    (object index -> `self_collision.Kept`)."""
    n = len(objects)
    st = traversal.QueryStats()
    st.extra.update(object_pairs=int(candidates.shape[0]), box_pairs=0, traversed_pairs=0,
                    carried_pairs=0)
    if not candidates.size:
        return [], st
    tri_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([t.shape[0] for t in tris_all], out=tri_off[1:])
    v_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([p.shape[0] for p in positions], out=v_off[1:])
    P = np.concatenate(positions)
    T = np.concatenate([t.astype(np.int64) + o for t, o in zip(tris_all, v_off[:-1])])
    # Seams hold between some pairs of parts of one character: their vertices compare by
    # global seam id; every other vertex gets an id of its own (negative, unique).
    seam_ok = np.zeros((n, n), dtype=bool)
    for i, j in candidates.tolist():
        if seams[i] is not None and seams[j] is not None:
            seam_ok[i, j] = _seams_hold(objects, poses, seams, i, j)
    G = None
    if seam_ok.any():
        G = np.concatenate([np.asarray(s, dtype=np.int64) if s is not None
                            else -(np.arange(p.shape[0], dtype=np.int64) + o + 1)
                            for s, p, o in zip(seams, positions, v_off[:-1])])
        # A seam holds only while its vertices are drawn at one position this frame
        # (`welds.frame_weld_ids`, judged as `weld_tolerance` says: a Corrective Smooth
        # on the parts can part it; skinning cannot).
        tols = [weld_tolerance(o.rig) for o, s_ in zip(objects, seams) if s_ is not None]
        tols = [t for t in tols if t is not None]
        if tols:
            parted = welds.frame_weld_ids(G, P, *_seam_vertices(seams, G), rel_tol=max(tols))
            G = G if parted is None else parted

    def test(ga, gb):
        apart = np.ones(ga.size, dtype=bool)
        if G is not None:
            oa = np.searchsorted(tri_off, ga, side="right") - 1
            ob = np.searchsorted(tri_off, gb, side="right") - 1
            s = np.nonzero(seam_ok[oa, ob])[0]
            if s.size:
                ka, kb = G[T[ga[s]]], G[T[gb[s]]]
                apart[s] = ~np.any(ka[:, :, None] == kb[:, None, :], axis=(1, 2))
        hit = np.zeros(ga.size, dtype=bool)
        idx = np.nonzero(apart)[0]
        hit[idx] = tri_test.triangle_pairs_intersect(P, T, ga[idx], P, T, gb[idx])
        return hit

    found = []
    # Carried pairs between carrying objects (docs/self_collision.md, "Carried pairs
    # between two meshes"): a loop over object pairs, never over triangles. A pair with
    # a kept answer is answered from it (only what moved is traversed and tested); a
    # pair without one goes the usual way and, when it goes through the traversal, its
    # answer is kept (a pair paired by boxes, few triangles, is cheap as it is).
    carry = not first_hit and states is not None
    carrying = []
    seam_key = {}

    def carried(i, j):
        for k in (i, j):
            if k not in states:
                states[k] = frame_state(objects[k], positions[k], tris_all[k])
        seam_key[i, j] = (seams[i], seams[j]) if seam_ok[i, j] else None
        carrying.append((i, j))

    done = np.zeros(candidates.shape[0], dtype=bool)
    for c, (i, j) in enumerate(candidates.tolist() if carry else []):
        if not (objects[i].carry_self_pairs and objects[j].carry_self_pairs
                and id(objects[j]) in objects[i].cross_last):
            continue
        carried(i, j)
        limit = None if enough is None else multi.live_budget([tris_all[i].shape[0],
                                                                tris_all[j].shape[0]])

        def test_ij(ta, tb, i=i, j=j):
            return test(ta + tri_off[i], tb + tri_off[j])

        p = object_cross_pairs(objects[i], states[i], objects[j], states[j], seam_key[i, j],
                               test_ij, limit)
        if p is not None:
            done[c] = True
            st.extra["carried_pairs"] += 1
            found.append(p + tri_off[[i, j]])
    if (done.any() and enough is not None
            and enough(multi.split_pairs(np.concatenate(found), tri_off))):
        st.extra["stopped"] = True      # capped: the carried answers already make enough
        st.extra["dense"] = False
        done[:] = True
    candidates = candidates[~done]
    ga = gb = big = np.zeros(0, np.int64)
    if candidates.size:
        PT = np.empty((3, int(v_off[-1])))         # one row per axis, C order
        for p, a, b in zip(positions, v_off[:-1].tolist(), v_off[1:].tolist()):
            PT[:, a:b] = p.T
        ga, gb, big, blo, bhi = broad_phase.box_filtered_pairs(candidates, tri_off, v_off, PT,
                                                               T, boxes[0], boxes[1],
                                                               BOX_PAIRS_MAX)
    st.extra["box_pairs"] = int(ga.size)
    if ga.size:
        hit = test(ga, gb)
        st.triangle_tests += int(ga.size)
        found.append(np.stack([ga[hit], gb[hit]], axis=1))
    trav = candidates[big]
    for i, j in trav.tolist() if carry else []:
        if (objects[i].carry_self_pairs and objects[j].carry_self_pairs
                and (i, j) not in seam_key):
            carried(i, j)                   # traversed in full now, kept for the next
    if trav.size and not (first_hit and found and found[0].size):
        for k in np.unique(trav).tolist():
            vols[k] = volumes(objects[k], positions[k], poses[k], mode, tris_all[k])
        # Pairs of a kind with a whole-tree pass of its own (box trees) keep it, pair by
        # pair; every other pair goes through one stacked traversal.
        own = np.array([vols[i].whole_tree_pass and type(vols[i]) is type(vols[j])
                        for i, j in trav.tolist()],
                       dtype=bool)
        for i, j in trav[own].tolist():
            def test_ij(ta, tb, i=i, j=j):
                return test(ta + tri_off[i], tb + tri_off[j])

            p, st2 = traversal.collide(vols[i], vols[j], test_ij, first_hit=first_hit)
            found.append(np.stack([p[:, 0] + tri_off[i], p[:, 1] + tri_off[j]], axis=1))
            st.triangle_tests += st2.triangle_tests
            st.refitted += st2.refitted
        rest = ~own
        if rest.any() and not (first_hit and sum(f.shape[0] for f in found)):
            # The volumes' own hierarchies; objects without volumes are never reached.
            stk = multi.stacked([v.hierarchy if v is not None else multi.EMPTY
                                 for v in vols], [t.shape[0] for t in tris_all])
            stop = None
            if enough is not None:
                def stop(so_far, before=list(found)):  # noqa: B006 - a snapshot, never mutated
                    return enough(multi.split_pairs(np.concatenate(before + [so_far]),
                                                    tri_off))
            more, st2 = multi.collide_many(vols, trav[rest], stk, test,
                                           boxes=(blo[rest], bhi[rest]), first_hit=first_hit,
                                           enough=stop, budget=None if stop is None else
                                           multi.live_budget([tris_all[k].shape[0] for k in
                                                              np.unique(trav[rest])]))
            found.append(more)
            if st2.extra.get("stopped"):
                st.extra["stopped"] = True
                st.extra["dense"] = bool(st2.extra.get("dense"))
            st.volume_tests, st.chunks = st2.volume_tests, st2.chunks
            st.refitted += st2.refitted
            st.triangle_tests += st2.triangle_tests
    st.extra["traversed_pairs"] = int(trav.shape[0])
    allp = np.concatenate(found) if found else np.zeros((0, 2), np.int64)
    allp = allp[np.lexsort((allp[:, 1], allp[:, 0]))]    # each object pair's pairs sorted
    out = multi.split_pairs(allp, tri_off)
    if carrying and not st.extra.get("stopped"):
        # Complete answers only (a capped query that stopped, first hit: never kept).
        got = {(i, j): p for i, j, p in out}
        empty = np.zeros((0, 2), np.int64)
        for i, j in carrying:
            keep_cross_pairs(objects[i], states[i], objects[j], states[j], seam_key[i, j],
                             got.get((i, j), empty))
    return (out[:1] if first_hit else out), st


def polygon_pair_rows(objects: list[CollisionObject], result: FrameResult) -> np.ndarray:
    """(N, 4) int64 unique unordered polygon pairs (obj a, poly a, obj b, poly b), sorted.

    Triangle pairs map to the mesh's own polygon indices; several triangle pairs of the
    same two polygons (quads) count once, and a polygon never pairs with itself.
    """
    rows = []
    for i, j, pairs in result.pairs:
        if not pairs.size:
            continue
        pp = np.stack([objects[i].rig.tri_polygon[pairs[:, 0]],
                       objects[j].rig.tri_polygon[pairs[:, 1]]], axis=1)
        pp = contacts.normalized_pairs(pp, i == j)
        if i == j:
            pp = pp[pp[:, 0] != pp[:, 1]]
        if pp.size:
            rows.append(np.column_stack([np.full(pp.shape[0], i), pp[:, 0],
                                         np.full(pp.shape[0], j), pp[:, 1]]))
    if not rows:
        return np.zeros((0, 4), dtype=np.int64)
    r = np.concatenate(rows).astype(np.int64, copy=False)
    return r[np.lexsort((r[:, 3], r[:, 2], r[:, 1], r[:, 0]))]


def polygon_pairs(objects: list[CollisionObject],
                  result: FrameResult) -> list[tuple[int, int, int, int]]:
    """`polygon_pair_rows` as tuples of ints."""
    # Column lists zipped: a tuple per row from `tolist()` costs several times more.
    return list(zip(*polygon_pair_rows(objects, result).T.tolist()))


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
            far = ~welds.adjacent_pairs(keys, ia, ib)
            ia, ib = ia[far], ib[far]
            hit = tri_test.triangle_pairs_intersect(pos_a, tri_a, ia, pos_a, tri_a, ib)
        else:
            hit = tri_test.triangle_pairs_intersect(pos_a, tri_a, ia, pos_b, tri_b, ib)
        out.append(np.stack([ia[hit], ib[hit]], 1))
    pairs = np.concatenate(out) if out else np.zeros((0, 2), np.int64)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
