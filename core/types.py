"""The types every layer shares: what a method reads per frame (`Frame`), the fixed shape of
a bounding-volume hierarchy (`Hierarchy`) and its volumes at one frame (`Volumes`, with
every optional hook declared here with its default), and what the viewport draws
(`Drawable`); and what the stages of one frame hand each other (`core.scan.frame`):
`FrameInputs` -> `ObjectPairs` (broad phase) -> `FrameSeams` -> pairs with their
`QueryStats` -> `FrameResult`. `Rig` and `Pose` (the character and one frame of its bones)
are in `core.rig`.

The bottom of the import order: types <- geometry and bounds <- methods <- query <- report
<- addon <- operators, panels, cli (docs/architecture.md).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, ClassVar, NamedTuple, Protocol

import numpy as np

from .rig import Pose, Rig

__all__ = ["Hierarchy", "Frame", "Volumes", "LazySphereVolumes", "Drawable", "Prepared",
           "Pose", "Rig", "QueryStats", "FrameInputs", "ObjectPairs", "FrameSeams", "FrameResult"]


@dataclass
class Hierarchy:
    """The fixed shape of a bounding-volume hierarchy, in breadth-first order.

    Attributes:
        first_child: (N,) int32 first child of each node (children are contiguous), -1 for
            leaves. Node 0 is the root.
        child_count: (N,) int32.
        leaf_ptr: (N + 1,) int64 CSR offsets into `leaf_tris`: the triangles a leaf holds
            (empty for inner nodes).
        leaf_tris: (M,) int64 triangle indices (the mesh's loop-triangle order).
    """

    first_child: np.ndarray
    child_count: np.ndarray
    leaf_ptr: np.ndarray
    leaf_tris: np.ndarray

    @property
    def n_nodes(self) -> int:
        return int(self.first_child.shape[0])

    @classmethod
    def one_triangle_per_leaf(cls, first_child: np.ndarray, child_count: np.ndarray,
                              leaf_tri: np.ndarray) -> "Hierarchy":
        """From a tree whose leaves hold one triangle each (`leaf_tri` (N,), -1 inner)."""
        is_leaf = leaf_tri >= 0
        ptr = np.zeros(leaf_tri.size + 1, dtype=np.int64)
        np.cumsum(is_leaf, out=ptr[1:])
        return cls(first_child, child_count, ptr, leaf_tri[is_leaf].astype(np.int64))


@dataclass
class Frame:
    """One object at one frame: what every method may read.

    Attributes:
        positions: (V, 3) float64 world-space evaluated positions (the geometric truth).
        triangles: (T, 3) int32 the triangles Blender draws at this frame (quads re-split).
        pose: the frame's `Pose`, or None when only positions are known (rest contacts,
            bottom-up methods).
    """

    positions: np.ndarray
    triangles: np.ndarray
    pose: Pose | None = None


class NarrowPhase(NamedTuple):
    """What answers a pair of volumes below their traversal: `whole`, a whole-tree pass
    of their own, f(a, b, triangle_test) -> (ta (K,), tb (K,), tests) (`collide_fast`);
    `leaves`, a filter of the triangle pairs of two overlapping leaves, f(a, la, b, lb)
    -> (ta, tb) or None (`leaf_pairs`). None: the generic traversal, and every pair of
    two leaves' triangles."""

    whole: Callable | None = None
    leaves: Callable | None = None


class Volumes(ABC):
    """The volumes of one object's hierarchy at one frame, computed on demand.

    Subclasses fill in `ensure` (compute the volumes of some nodes, once per frame),
    `size` (a length used to decide which node of a pair to descend into) and
    `overlap` (may two nodes' contents meet). Every kind can also give an enclosing
    sphere per node (`spheres`), which is how volumes of different kinds are compared.
    """

    kind: ClassVar[str] = "sphere"
    #: The dispatch table of narrow phases (issue 56): (kind of a, kind of b) ->
    #: `NarrowPhase`, for the pairs of kinds that have one of their own. A kind with a
    #: whole-tree pass or a leaf filter enters itself, paired with itself, when it is
    #: defined (`__init_subclass__`); `narrow_phase` looks a pair up.
    narrow: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        whole = cls.collide_fast if cls.whole_tree_pass else None
        leaves = cls.leaf_pairs if cls.leaf_pairs is not Volumes.leaf_pairs else None
        if whole is not None or leaves is not None:
            Volumes.narrow[(cls, cls)] = NarrowPhase(whole, leaves)

    def __init__(self, hierarchy: Hierarchy, method_id: str | None = None):
        self.hierarchy = hierarchy
        self.refitted = 0
        #: the method that actually made these volumes (a method may hand over to its
        #: fallback for one frame, e.g. when the pose is unknown): the JSON `refit` id.
        self.method_id = method_id

    @abstractmethod
    def ensure(self, nodes: np.ndarray) -> None:
        """Make the volumes of `nodes` ((n,) int64, repeats allowed) available."""

    @abstractmethod
    def size(self, nodes: np.ndarray) -> np.ndarray:
        """(n,) float64 a length per node (its radius, or its box's half-diagonal)."""

    @abstractmethod
    def spheres(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Enclosing spheres of `nodes` (already ensured): centres (n, 3), radii (n,)."""

    def overlap(self, na: np.ndarray, other: "Volumes", nb: np.ndarray) -> np.ndarray:
        """(n,) bool: may node na[k] of self and node nb[k] of `other` share a point?

        Must never say False for nodes whose contents touch (soundness). The default
        compares enclosing spheres; kinds with a tighter test of their own override it for
        a partner of the same kind. Both sides are ensured first.
        """
        self.ensure(na)
        other.ensure(nb)
        ca, ra = self.spheres(na)
        cb, rb = other.spheres(nb)
        d = ca - cb
        s = ra + rb
        # A negative radius marks an empty node (it meets nothing).
        return (s >= 0) & (np.einsum("ij,ij->i", d, d) <= s * s)

    #: True for kinds with a whole-tree pass of their own against a partner of the same
    #: kind (`collide_fast`): the scan sends such object pairs there instead of through
    #: the stacked traversal of `core.query.multi`.
    whole_tree_pass: ClassVar[bool] = False

    def collide_fast(self, other: "Volumes",
                     triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray]
                     ) -> tuple[np.ndarray, np.ndarray, int]:
        """Optional (with `whole_tree_pass`): every intersecting triangle pair between
        self and `other` (same kind), as (K,) int64 triangle indices of each side and the
        number of exact tests made. `triangle_test` has `core.hierarchy.traversal.collide`'s
        contract."""
        raise NotImplementedError(f"{type(self).__name__} has no whole-tree pass")

    def leaf_pairs(self, la: np.ndarray, other: "Volumes", lb: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray] | None:
        """Optional: the candidate triangle pairs ((K,) int64 each side) of the
        overlapping leaf pairs (la[k], lb[k]) against a partner of the same kind, a
        superset of the intersecting ones. None (the default): the traversal takes every
        pair of the two leaves' triangles (kinds whose leaves hold many triangles filter
        that cartesian product here)."""
        return None


def narrow_phase(a: Volumes, b: Volumes | None) -> NarrowPhase:
    """The narrow phase of the pair (a, b), looked up by their kinds in the table
    (`Volumes.narrow`); a self query (`b` None) asks a paired with itself."""
    return Volumes.narrow.get((type(a), type(a if b is None else b)), NarrowPhase())


class LazySphereVolumes(Volumes):
    """Sphere volumes computed the first time a node is reached, by
    ``refit_fn(nodes) -> (centers (n, 3), radii (n,))``; `eager` gives all of them up
    front. Shared by every method whose nodes are spheres (sphere trees, sphere sets)."""

    kind = "sphere"

    def __init__(self, hierarchy: Hierarchy,
                 refit_fn: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
                 eager: tuple[np.ndarray, np.ndarray] | None = None,
                 method_id: str | None = None):
        super().__init__(hierarchy, method_id)
        self.refit_fn = refit_fn
        n = hierarchy.n_nodes
        if eager is not None:
            self.centers, self.radii = eager
            self.done = np.ones(n, dtype=bool)
        else:
            self.centers = np.zeros((n, 3))
            self.radii = np.zeros(n)
            self.done = np.zeros(n, dtype=bool)

    def ensure(self, nodes: np.ndarray) -> None:
        todo = nodes[~self.done[nodes]]
        if todo.size == 0:
            return
        todo = np.unique(todo)
        c, r = self.refit_fn(todo)
        self.centers[todo] = c
        self.radii[todo] = r
        self.done[todo] = True
        self.refitted += int(todo.size)

    def size(self, nodes: np.ndarray) -> np.ndarray:
        return self.radii[nodes]

    def spheres(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.centers[nodes], self.radii[nodes]


@dataclass
class Drawable:
    """What a method shows in the viewport for one level of its hierarchy at one frame
    (*Show Spheres*): spheres ``centers`` (n, 3) / ``radii`` (n,), or boxes ``corners``
    (n, 8, 3) with corner k at bits (x, y, z) = (k & 1, k >> 1 & 1, k >> 2 & 1) of the
    box's local axes. World space, float64. The Blender glue turns it into lines."""

    centers: np.ndarray | None = None
    radii: np.ndarray | None = None
    corners: np.ndarray | None = None


class Prepared(Protocol):
    """What a method builds once per rig. Arrays only, so that it can be stored."""

    def arrays(self) -> dict[str, np.ndarray]:
        ...


# -- what the stages of one frame hand each other (core.scan.frame.query_frame) -------------

@dataclass
class QueryStats:
    """Counts of one query (one object pair's traversal, one self query, or all the pairs
    between objects of a frame): volume (node pair) tests, exact triangle tests, volumes
    refitted, traversal chunks, and whatever else a stage reports in ``extra``."""

    volume_tests: int = 0
    triangle_tests: int = 0
    refitted: int = 0
    chunks: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def sphere_tests(self) -> int:   # the name the sphere-tree benchmarks print
        return self.volume_tests


@dataclass(eq=False)
class FrameInputs:
    """One frame of n objects, as every stage reads it.

    Attributes:
        positions: per object, (V_k, 3) float64 world-space evaluated positions: the
            single source of geometric truth for the exact triangle tests.
        poses: per object, the frame's `Pose` or None (no pose: a bottom-up refit).
        triangles: per object, (T_k, 3) int32 the triangles Blender draws at this frame.
    The stacked arrays below are made on first use (a frame of one object never needs
    them): ``tri_off`` (n+1,) int64 and ``v_off`` (n+1,) int64 the offsets of each
    object's triangles and vertices in them, ``P`` (sum V_k, 3) float64 the positions,
    ``T`` (sum T_k, 3) int64 the triangles indexing ``P``, ``PT`` (3, sum V_k) the
    positions one row per axis (what the box filter reads).
    """

    positions: list[np.ndarray]
    poses: list[Pose | None]
    triangles: list[np.ndarray]

    @property
    def n(self) -> int:
        return len(self.positions)

    @cached_property
    def tri_off(self) -> np.ndarray:
        off = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum([t.shape[0] for t in self.triangles], out=off[1:])
        return off

    @cached_property
    def v_off(self) -> np.ndarray:
        off = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum([p.shape[0] for p in self.positions], out=off[1:])
        return off

    @cached_property
    def P(self) -> np.ndarray:
        return np.concatenate(self.positions)

    @cached_property
    def T(self) -> np.ndarray:
        return np.concatenate([t.astype(np.int64) + o
                               for t, o in zip(self.triangles, self.v_off[:-1])])

    @cached_property
    def PT(self) -> np.ndarray:
        PT = np.empty((3, int(self.v_off[-1])))         # one row per axis, C order
        for p, a, b in zip(self.positions, self.v_off[:-1].tolist(), self.v_off[1:].tolist()):
            PT[:, a:b] = p.T
        return PT


@dataclass
class ObjectPairs:
    """The broad phase's answer: ``pairs`` (M, 2) int64 the object pairs (i < j) whose
    position boxes meet, sorted; ``lo``, ``hi`` (n, 3) float64 the boxes, or None for a
    frame of one object (no pairs)."""

    pairs: np.ndarray
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None


@dataclass
class FrameSeams:
    """Which vertices of different objects are one vertex at this frame (parts of one
    character on one armature, `core.scan.seams`).

    Attributes:
        ids: per object, (V_k,) int64 seam ids shared across the object set, or None (the
            object shares its armature with no other object). The list is cached per set,
            so its identity names the rule a kept answer was computed with.
        hold: (n, n) bool, for the candidate pairs: whether seams hold between i and j
            this frame (same armature and bit-equal poses).
        G: (sum V_k,) int64 the frame's global vertex keys (seam ids where seams hold,
            split where a weld parted this frame; a unique negative id elsewhere), or None
            when no seam holds between any candidate pair.
    """

    ids: list
    hold: np.ndarray
    G: np.ndarray | None = None

    def key(self, i: int, j: int) -> tuple | None:
        """The seam rule between i and j, compared by identity with a kept answer's."""
        return (self.ids[i], self.ids[j]) if self.hold[i, j] else None


@dataclass
class FrameResult:
    """Pairs and statistics of one frame.

    Attributes:
        pairs: list of (object index a, object index b, (K, 2) int64 triangle pairs).
        ms: query time in milliseconds (refit, traversal and triangle tests).
        stats: per object pair, `QueryStats`.
        modes: the method actually used per object this frame (registry ids, e.g.
            "sphere-tree", "sphere-tree-pv", "bottom-up").
        triangles: per object, the (T, 3) int32 triangles of the frame the pairs index.
        near: with a clearance, per object pair (i, j, `core.scan.clearance.NearResult`: (K, 2)
            int64 triangle pairs, (K,) float64 distances, (K, 3) closest points of each
            side) the non-intersecting pairs of two different objects within it.
        near_stopped: 0, or, when the clearance stage passed its work budget
            (`query_frame`'s `clearance_limit`: the live overlay), the number of node
            pairs on the traversal level where it stopped; `near` is then empty (a part of
            the near pairs would give wrong closest distances, so none are given).
    """

    pairs: list[tuple[int, int, np.ndarray]]
    ms: float
    stats: list[QueryStats] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    triangles: list[np.ndarray] = field(default_factory=list)
    near: list = field(default_factory=list)
    near_stopped: int = 0

    @property
    def n_pairs(self) -> int:
        return int(sum(p.shape[0] for _, _, p in self.pairs))


@dataclass
class FrameRecord:
    """One scanned frame: its polygon pairs (named, after the filters; `pairs_total` is the
    exact count when `pairs` was capped), query and evaluation ms, the method used per
    object, and why the frame was not checked (empty when it was)."""

    frame: int
    pairs: list[tuple[str, int, str, int]]
    ms: float
    eval_ms: float
    modes: list[str] = field(default_factory=list)
    not_checked: str = ""
    pairs_total: int = -1
    #: the frame's contacts (`core.contacts.groups.Contact`), partitioning `pairs`
    contacts: list = field(default_factory=list)
    #: with a clearance, the frame's near contacts (`core.contacts.clearance.NearContact`)
    near_contacts: list = field(default_factory=list)
    #: with `--near-pairs`, its near polygon pairs [obj A, poly A, obj B, poly B,
    #: distance] (`core.contacts.clearance.near_pair_rows`); None: not listed
    near_pairs: list | None = None
    #: with `--between-frames` (issue 57), the polygon pairs that touch at some time of
    #: the step from this frame to the next checked sample [obj A, poly A, obj B, poly B,
    #: t] (`core.scan.pipeline.between`); None: no step checked from this frame
    between: list | None = None
    #: with `--between-frames`, the step's contacts of kind "passes through"
    #: (`core.contacts.passing`)
    passes: list = field(default_factory=list)
    #: with `--between-frames`, the next checked sample (the step's end) and the step's
    #: milliseconds (its subframes' queries and its continuous check; `ms` includes them)
    step_to: float | None = None
    step_ms: float = 0.0

    @property
    def n_pairs(self) -> int:
        return self.pairs_total if self.pairs_total >= 0 else len(self.pairs)
