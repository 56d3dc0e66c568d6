"""One frame, as its stages, top to bottom (docs/architecture.md, "One frame"). The frame
is planned once (`plan_frame`: its object broad phase, its seams, and which stages run,
from its `FrameQuery`), then `collide_frame` runs the plan's stages in order:

    inputs  = FrameInputs(positions, poses, triangles)        the frame's surfaces
    near    = broad_phase.object_pairs(positions)              object pairs whose boxes meet
    inflated = broad_phase.object_pairs_within(positions, d)   the same inflated by the
                                                                clearance d, when asked
    seams   = seams.frame_seams(objects, inputs, near.pairs     which vertices are one
                                (+ inflated.pairs))             (once, for both stages)
    exact   = exact.ExactTest(inputs, seams)                    the narrow phase's exact test
    between = between.pairs_between(..., near, seams, exact)    candidate pairs of the two
                                                                objects' volumes, tested
    within  = within.pairs_within(...)                          self pairs, when asked
    clear   = clearance.near_between(objects, inputs, inflated, ...) pairs of two objects
                                                                within the clearance d,
                                                                when asked

With a clearance on a whole query (a scan: no first hit, no cap, no budget), `between`
and `clear` are one stage, `clearance.near_and_hits_between`: the clearance candidates (boxes
inflated by d) hold every pair whose boxes meet, so its traversal gives the intersecting
pairs too (the exact test on the pairs whose boxes meet, as the box path of `between`),
and the frame makes one traversal, not two.

Each stage reads what the ones above it made (the types in `core.types`) and never calls
back up. Contacts are made from the result by the report (`core.contacts.pairs`,
`core.contacts.groups`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..query import broad_phase
from ..query.near_pairs import TooManyPairs
from ..rig import Pose
from ..types import FrameInputs, FrameResult, FrameSeams, ObjectPairs, QueryStats
from .between import pairs_between
from .carry import Carried
from .clearance import apart_from, near_and_hits_between, near_between
from .dispatch import OWN, check_mode, frame_method, frame_triangles
from .exact import ExactTest
from .objects import CollisionObject
from .seams import frame_seams
from .within import pairs_within


@dataclass(frozen=True)
class FrameQuery:
    """How one frame is queried: `query_frame`'s options (their meaning in its docstring;
    `carried`: what the live overlay carries between updates, `carry.Carried`, None for
    a query that carries nothing).
    `fold`: the pairs between objects come from the clearance stage's traversal (a whole
    query with a clearance: no first hit, no cap, no budget)."""

    mode: str = OWN
    self_collision: bool = False
    first_hit: bool = False
    enough_self: Callable | None = None
    enough_between: Callable | None = None
    clearance: float | None = None
    clearance_limit: int | None = None
    carried: Carried | None = None

    @property
    def fold(self) -> bool:
        return (self.clearance is not None and not self.first_hit
                and self.enough_between is None and self.clearance_limit is None)


@dataclass
class FramePlan:
    """What a frame will do, decided once from its query before any stage runs: the
    object pairs whose boxes meet (`near`; and with a clearance, whose boxes inflated by
    it meet, `inflated`), their seams, and the stages in order. `kept`: the kept frames
    of carrying objects, brought up to this frame once and shared by the stages."""

    near: ObjectPairs | None
    inflated: ObjectPairs | None
    seams: FrameSeams | None
    stages: list
    kept: dict = field(default_factory=dict)


def query_frame(objects: list[CollisionObject], positions: list[np.ndarray],
                poses: list[Pose | None], triangles: list[np.ndarray | None] | None = None,
                **options) -> FrameResult:
    """Collide every pair of objects (and each with itself if `self_collision`).

    Adjacent triangles are never reported: within an object those sharing a weld id (a
    vertex, or a split vertex with the same rest position and weights), between objects
    those sharing a seam vertex (`seams.seam_ids`: parts of one character on one armature).

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
        clearance: a distance d >= 0 (scene units): also every non-intersecting triangle
            pair of two different objects within d (`FrameResult.near`, `clearance.near_between`;
            pairs sharing a seam vertex left out). None: no clearance stage.
        clearance_limit: the clearance stage's work budget per object pair (the live
            overlay's; `clearance.near_between`'s `limit`): past it, `FrameResult.near` is
            empty and `FrameResult.near_stopped` says how far it got. None: no budget.
    """
    return collide_frame(objects, _inputs(objects, positions, poses, triangles),
                         FrameQuery(**options))


def collide_frame(objects: list[CollisionObject], inputs: FrameInputs,
                  q: FrameQuery) -> FrameResult:
    """The frame's plan (`plan_frame`), its stages in order, then the rule that a polygon
    pair is intersecting or near, never both."""
    check_mode(q.mode)
    t0 = time.perf_counter()
    modes = [frame_method(obj, pose, q.mode) for obj, pose in zip(objects, inputs.poses)]
    result = FrameResult([], 0.0, modes=modes, triangles=inputs.triangles)
    plan = plan_frame(objects, inputs, q)
    for stage in plan.stages:
        stage(objects, inputs, q, plan, result)
    result.near = apart_from(result.near, result.pairs)
    result.ms = (time.perf_counter() - t0) * 1000.0
    return result


def plan_frame(objects: list[CollisionObject], inputs: FrameInputs,
               q: FrameQuery) -> FramePlan:
    """The frame's object broad phase, seams and stages: between objects (the clearance
    fold, or `pairs_between`), within each (with self-collision), the clearance stage
    (with a clearance, unless folded)."""
    inflated = near = seams = None
    if q.clearance is not None:
        inflated = broad_phase.object_pairs_within(inputs.positions, q.clearance)
    stages: list = []
    if inputs.n > 1:
        near = broad_phase.object_pairs(inputs.positions)
        # One seam stage for both stages: whether seams hold is decided per object pair
        # and the frame's keys do not depend on which pairs asked, so the union's answer
        # is the intersection stages' own on their pairs.
        seams = frame_seams(objects, inputs, near.pairs if inflated is None else
                            np.concatenate([near.pairs, inflated.pairs]))
        stages.append(_folded if q.fold else _between)
    if q.self_collision:
        stages.append(_within)
    if q.clearance is not None and not (q.fold and inputs.n > 1):
        stages.append(_near)
    return FramePlan(near, inflated, seams, stages)


def _folded(objects, inputs: FrameInputs, q: FrameQuery, plan: FramePlan,
            result: FrameResult) -> None:
    """Pairs between objects and near pairs from one traversal: the clearance candidates
    (boxes inflated by d) hold every pair whose boxes meet (module docstring)."""
    result.near, result.pairs = near_and_hits_between(objects, inputs, plan.inflated,
                                                      plan.seams, q.clearance)
    result.stats.append(QueryStats(extra=dict(
        object_pairs=int(plan.near.pairs.shape[0]), box_pairs=0, traversed_pairs=0,
        carried_pairs=0, clearance_pairs=int(plan.inflated.pairs.shape[0]))))


def _between(objects, inputs: FrameInputs, q: FrameQuery, plan: FramePlan,
             result: FrameResult) -> None:
    """Pairs between objects (`between.pairs_between`: carried, boxed, deep, traversed)."""
    exact = ExactTest(inputs, plan.seams)
    result.pairs, st, methods = pairs_between(objects, inputs, plan.near, plan.seams, exact,
                                              q.mode, q.first_hit, q.enough_between, plan.kept,
                                              q.carried)
    result.stats.append(st)
    for k, m in methods.items():
        result.modes[k] = m


def _within(objects, inputs: FrameInputs, q: FrameQuery, plan: FramePlan,
            result: FrameResult) -> None:
    """Each object's self pairs (`within.pairs_within`), unless a first hit was found."""
    if q.first_hit and result.pairs:
        return
    pairs, stats = pairs_within(objects, inputs, q.mode, q.first_hit, q.enough_self, plan.kept,
                                q.carried)
    result.pairs += pairs
    result.stats += stats


def _near(objects, inputs: FrameInputs, q: FrameQuery, plan: FramePlan,
          result: FrameResult) -> None:
    """The clearance stage on its own (the live overlay's budget may stop it)."""
    try:
        result.near = _clearance(objects, inputs, q.clearance, plan.inflated, plan.seams,
                                 q.clearance_limit)
    except TooManyPairs as exc:
        result.near, result.near_stopped = [], exc.count


def clearance_frame(objects: list[CollisionObject], positions: list[np.ndarray],
                    poses: list[Pose | None], clearance: float,
                    triangles: list[np.ndarray | None] | None = None,
                    limit: int | None = None, intersecting: list | None = None) -> list:
    """The clearance stage alone (`query_frame`'s arguments): per object pair (i, j,
    `clearance.NearResult`), for a scan whose intersections another method answers (Blender's
    BVHTree), `intersecting` (per object pair (i, j, (K, 2) triangle pairs)): their
    polygon pairs are not near ones (`clearance.apart_from`). `limit`: `clearance.near_between`'s
    (raises `TooManyPairs` past it)."""
    near = _clearance(objects, _inputs(objects, positions, poses, triangles), clearance,
                      limit=limit)
    return apart_from(near, intersecting or [])


def _clearance(objects: list[CollisionObject], inputs: FrameInputs, d: float,
               inflated: ObjectPairs | None = None, seams: FrameSeams | None = None,
               limit: int | None = None) -> list:
    """The clearance stage: the broad phase inflated by d, the seams of its object pairs,
    the near pairs. `inflated` and `seams`: the frame's, when `query_frame` computed them
    already (its seam stage ran on the inflated pairs too)."""
    if inflated is None:
        inflated = broad_phase.object_pairs_within(inputs.positions, d)
    if inputs.n < 2:
        return []
    if seams is None:
        seams = frame_seams(objects, inputs, inflated.pairs)
    return near_between(objects, inputs, inflated, seams, d, limit)


def _inputs(objects: list[CollisionObject], positions: list[np.ndarray],
            poses: list[Pose | None], triangles: list | None) -> FrameInputs:
    """The frame's inputs: the triangles Blender draws, decided here where not given."""
    if triangles is None:
        triangles = [None] * len(objects)
    tris = [frame_triangles(obj, pos) if t is None else np.asarray(t, dtype=np.int32)
            for obj, pos, t in zip(objects, positions, triangles)]
    return FrameInputs(list(positions), list(poses), tris)
