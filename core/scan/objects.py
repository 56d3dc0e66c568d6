"""The prepared objects a frame's stages read: `CollisionObject` (a rig and what its method
built once), `prepare` and its variants for several rigs and for copies of one character
(`build_key`, `shared_builds`, `renamed`: a crowd builds once)."""
from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .. import welds
from ..methods import registry
from ..methods.base import Method
from ..rig import Rig
from .carry import for_object


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
    #: The clearance stage's units (`core.scan.clearance.faces_for`), made on first use.
    face_units: object = field(default=None, repr=False)
    _other_data: dict = field(default_factory=dict, repr=False)
    #: A copy's original (`renamed`): the copy takes its self tree from it, made once
    #: for all copies even when made on first use (a crowd deep in one another).
    tree_source: object = field(default=None, repr=False)
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
                           tree_source=obj.tree_source or obj,
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
