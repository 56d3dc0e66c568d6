"""The interface every bounding-volume method implements, and what a traversal needs.

A *method* (sphere tree with an LBS or Preserve Volume refit, sphere sets, sphere chains,
OBB trees, ...) turns a `Rig` into prepared data once (`Method.prepare`, arrays only, so
that it can be stored in the .blend) and, per frame, into `Volumes`: a fixed hierarchy of
nodes whose volumes are computed lazily, only for the nodes a query reaches. The generic
traversal (`core.hierarchy.traversal.collide`) needs nothing else: it asks `Volumes.overlap` for
node pairs, descends into the larger node (`Volumes.size`), and sends the triangles of
overlapping leaf pairs to the exact triangle test.

Adding a method touches only its own module and `core.methods.registry`.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from ..rig import Pose, Rig
from ..types import Drawable, Frame, Hierarchy, LazySphereVolumes, Prepared, Volumes  # noqa: F401


class Method(ABC):
    """A bounding-volume method. Instances are stateless; the registry holds one each.

    Attributes:
        id: stable identifier: stored in files, the CLI's `--method`, the JSON `refit` map.
        label: what the panel and the CLI help show.
        fallback: the id of the method to use for a rig this one does not support
            (None: the end of the chain).
    """

    id: ClassVar[str]
    label: ClassVar[str]
    fallback: ClassVar[str | None] = None
    description: ClassVar[str] = ""
    #: False for methods whose pairs come from outside the numpy core (Blender's own
    #: BVHTree, the reference): they have no `Volumes`, and the Blender glue answers.
    in_core: ClassVar[bool] = True
    #: False for methods that answer only between two objects (e.g. `obb`: a bone's leaf
    #: against itself would be its whole cartesian product); self-collision then runs on
    #: the object's own AABB tree.
    supports_self: ClassVar[bool] = True
    #: The build options `prepare` takes besides the rig, by name with their defaults
    #: (e.g. a sphere set's count and seed). Callers pass only these; `progress(done,
    #: total)` and `should_stop()` callables are passed to every method whose build is
    #: long enough to report (`reports_progress`).
    options: ClassVar[dict[str, object]] = {}
    reports_progress: ClassVar[bool] = False
    #: True for a method that can run on any object whatever method its data was built
    #: for (exact for any deformation, from the evaluated mesh): a query may ask every
    #: object to use it (`core.scan.query_frame(mode=<its id>)`), with `adopt` reusing the
    #: object's own data where it can.
    for_any_object: ClassVar[bool] = False

    def supports(self, rig: Rig) -> str | None:
        """None when this method is exact for `rig`, else the reason it is not."""
        return None

    @abstractmethod
    def prepare(self, rig: Rig, **options) -> Prepared:
        """Build the method's data for `rig` (rest pose), once. `options`: a subset of
        `options` (plus `progress`/`should_stop` when `reports_progress`)."""

    @abstractmethod
    def load(self, arrays: dict[str, np.ndarray]) -> Prepared:
        """Inverse of `Prepared.arrays()` (after `expand`)."""

    # -- storage (core.storage.persist): what is stored of `Prepared.arrays()` -------------------

    def compact(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """What to store of `arrays` (`Prepared.arrays()`): the default stores all of it.
        A method may drop what is cheap to derive again (`expand` recomputes it) or narrow
        dtypes, soundly (docs/storage.md)."""
        return arrays

    def expand(self, arrays: dict[str, np.ndarray], rig: Rig) -> dict[str, np.ndarray]:
        """Inverse of `compact`, given the rig: the arrays `load` takes."""
        return arrays

    def adopt(self, prepared: Prepared) -> Prepared | None:
        """For a `for_any_object` method: its data made from another method's `prepared`
        data of the same rig without a build (e.g. the bottom-up refit takes a sphere
        tree's tree), or None when it must `prepare` its own."""
        return None

    def aabb_tree(self, prepared: Prepared):
        """The object's exact AABB tree (`core.aabb_tree.SelfTree`) when the method's
        data is one, so that self-collision reuses it instead of building another; None
        (the default) otherwise."""
        return None

    def built_options(self, prepared: Prepared) -> dict[str, object]:
        """The `options` that build this very data again (stored beside it, so that a
        rebuild of a missing cache gives the same data); {} for methods without options."""
        return {}

    def summary(self, prepared: Prepared) -> str:
        """What the build made, for people (the scan's object line): "1,023 spheres"."""
        return ""

    @abstractmethod
    def volumes(self, rig: Rig, prepared: Prepared, frame: Frame) -> Volumes:
        """The frame's volumes. Must enclose every triangle Blender evaluates."""

    def self_pairs(self, rig: Rig, prepared: Prepared, frame: Frame,
                   vertex_keys: np.ndarray, stats=None) -> np.ndarray | None:
        """Optional self-collision of its own (`core.scan.query_frame` asks it first):
        every intersecting pair of the frame's triangles not sharing a weld id
        (``vertex_keys[frame.triangles]``, `core.welds.adjacent_pairs`), (K, 2) int64 with
        t < u, sorted; `stats` an optional `traversal.QueryStats`. None (the default):
        the object's exact AABB self tree answers (`core.aabb_tree`)."""
        return None

    def coverage(self, rig: Rig, prepared: Prepared) -> dict | None:
        """Optional: what the method's own test leaves out, for the scan's JSON
        (``uncovered``, per object); None when it covers everything."""
        return None

    def frame_method(self, prepared: Prepared, pose: Pose | None) -> str:
        """The id of the method whose volumes `volumes` hands out for a frame with `pose`
        (the JSON `refit` id), without making them. A method that passes some frames to
        another (e.g. an on-demand refit without a pose) overrides this."""
        return self.id

    def drawable(self, rig: Rig, prepared: Prepared, frame: Frame, level: int
                 ) -> Drawable | None:
        """The volumes of hierarchy level `level` (clamped to the deepest) at this frame,
        for the viewport; None lets the viewport show the object's sphere tree."""
        return None
