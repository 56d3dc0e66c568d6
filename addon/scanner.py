"""Scan frames of a Blender scene for collisions: Blender's part of the frame pipeline.

A `Scanner` builds (or is given) the collision data of the meshes once; per frame it reads
what Blender evaluated (`evaluate`: world positions, the triangles Blender draws, poses)
into `core.types.FrameInputs` and hands it to the core's pipeline
(`core.scan.pipeline.collide`: query, the pairs that count, polygon pairs, contacts and
their filters, near contacts, the frame record, the memo). Its `core.scan.ScanSettings`
are decided once by the front end (the CLI, the panel, `skin_collide.testing`); the state
a scan carries between frames is a `core.scan.pipeline.FrameState` it holds and passes in.
The reference method, Blender's own BVHTree, answers in `addon.reference`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from ..core import scan as core_scan
from ..core.contacts import pairs as contacts
from ..core.methods import registry
from ..core.report.model import FrameRecord, ReportContext, ScanReport, report_source, scan_report  # noqa: F401
from ..core.rig import bone_rest_inverse
from ..core.scan.degenerate import collapsed_bones
from ..core.scan.pipeline import FrameFilters, FrameOutcome, FrameState  # noqa: F401
from ..core.scan.settings import ScanSettings
from ..core.types import FrameInputs
from . import drawn, evaluation, extract, motion, reference, rest_pose
from .reference import bvhtree_pairs  # noqa: F401  (the reference's pairs, by their old name)

#: The older spelling of a scan's method (`registry.MODES`: mode name -> method id).
MODES = tuple(registry.MODES)


class DegeneratePose(extract.RigError):
    """Bones of the pose collapse space (zero scale): the frame is not checked
    (`core.scan.degenerate`)."""


class Scanner:
    """Build once, then query frame after frame."""

    def __init__(self, meshes: list, mode: str | None = None, self_collision: bool = False,
                 first_hit: bool = False, method: str | None = None,
                 objects: list | None = None, ids: list | None = None,
                 selection=None, clearance: float | None = None, near_pairs: bool = False,
                 settings: ScanSettings | None = None, zones: dict | None = None,
                 state: FrameState | None = None, about: ReportContext = ReportContext()):
        """`settings`: the scan's `ScanSettings`; without them, those of the keywords
        (`method`, a registered id, default `registry.DEFAULT`, which hands rigs it cannot
        bound to its fallbacks; `mode`, its older spelling; `self_collision`, `first_hit`,
        `clearance`, `near_pairs`). `objects`: already built `CollisionObject`s of `meshes`
        (loaded from the .blend) instead of building them here. `selection`: the
        `motion.Selection` that chose `meshes` (its sampled frames verify each rig's motion
        model, `motion.checked_rig`); without it the rigs are read as the meshes' settings
        say. `ids`: per object, what identifies it in rest contacts (default its name).
        `zones`: object index -> (P,) bool polygons in an ignore zone (default: those of
        the settings' contact filter, `addon.zones.zone_masks`; ValueError for an unknown
        object or group). `state`: what the frames carry (`FrameState`: memos). `about`:
        what its report says of its origin (`ReportContext`)."""
        if settings is None:
            settings = ScanSettings.of(mode, method, self_collision=self_collision,
                                       first_hit=first_hit, clearance=clearance,
                                       near_pairs=near_pairs)
        if not meshes:
            raise extract.RigError("no character (skinned mesh or rigid prop) to scan")
        self.settings = settings
        self.meshes = meshes
        if objects is None:
            objects = _build(meshes, selection, settings)
        self.objects = objects
        #: Collection instances take part: their matrices are read once per frame.
        self.instances = any(drawn.is_instance(ob) for ob in meshes)
        if zones is None:
            from . import zones as zone_masks

            zones = zone_masks.zone_masks(meshes, objects,
                                          settings.contact_filter.ignore_groups) \
                if any(settings.contact_filter.ignore_groups.values()) else {}
        self.filters = FrameFilters(tuple(ids) if ids is not None else
                                    tuple(o.name for o in objects), zones=zones)
        self.state = state if state is not None else FrameState()
        self.about = about
        #: per mesh, the (T, 3) triangles Blender draws at the last evaluated frame.
        self.triangles: list[np.ndarray] | None = None
        #: the last frame's outcome (its near pairs, whether a live budget stopped it).
        self.last: FrameOutcome | None = None
        #: the evaluation the scan reads (`addon.evaluation`: "viewport" or "render"), the
        #: one current when it was built.
        self.evaluation = evaluation.mode()
        self._collapse: dict = {}          # object index -> `core.scan.degenerate.Collapse`

    # -- read-only views of the settings and the last frame -------------------------------
    self_collision = property(lambda self: self.settings.self_collision)
    clearance = property(lambda self: self.settings.clearance)
    ignore = property(lambda self: self.filters.ignore)
    ids = property(lambda self: list(self.filters.ids))
    zones = property(lambda self: self.filters.zones)
    frame_memo = property(lambda self: self.state.frame_memo)
    by_blender = property(lambda self: not self.settings.in_core)
    near = property(lambda self: self.last.near if self.last else [])
    stopped = property(lambda self: bool(self.last and self.last.stopped))
    dense = property(lambda self: bool(self.last and self.last.dense))
    near_stopped = property(lambda self: self.last.near_stopped if self.last else 0)
    source = property(lambda self: self.about.source)

    def reconfigure(self, **changes) -> None:
        """The scan's settings with `changes` (`ScanSettings.with_`), the data kept."""
        self.settings = self.settings.with_(**changes)

    def carry_state(self, state: FrameState) -> None:
        """Carry `state` from frame to frame (the live overlay's memos, kept per scene)."""
        self.state = state

    def ignore_contacts(self, index: contacts.ContactIndex) -> None:
        """Drop these rest contacts from every frame (`rest_pose_contacts`, or the panel's
        stored ones), keyed by the scan's ids."""
        self.filters = replace(self.filters, ignore=index)

    def refit_label(self, obj) -> str:
        """The method this scan uses for `obj`, in words: id, label and, when the asked
        method was passed over, why."""
        m = registry.get(obj.method)
        why = f"; instead of {obj.reason}" if obj.reason else ""
        return f"{m.id} ({m.label}{why})"

    def refit_id(self, k: int) -> str:
        """The method id object `k` is built for (before any frame)."""
        return self.objects[k].method

    def rest_pose_contacts(self, scene) -> contacts.ContactIndex:
        """Triangle pairs colliding in the rest pose (armatures switched to Rest Position
        for the evaluation, then restored), keyed by `ids`: the rule of the panel's *Ignore
        Rest Contacts* (`addon.session.store_rest_contacts`) and of
        `--ignore-rest-contacts`. Hand the result to `ignore_contacts`."""
        tri_pairs = rest_pose.rest_pose_pairs(self.meshes, self.objects, self.self_collision,
                                    rebuild=self.by_blender)
        ids = self.filters.ids
        return contacts.ContactIndex(
            (ids[i], a, ids[j], b) for i, j, p in tri_pairs for a, b in p.tolist())

    def evaluate(self, depsgraph) -> tuple[list[np.ndarray], list]:
        """Evaluated world positions and poses of every mesh at the current frame; the
        frame's triangles are kept in `self.triangles` (used by `query` by default).

        Raises `extract.RigError` when a mesh no longer matches its data (armature gone or
        another one, a topology other than the one built on: `extract.check_topology`,
        which names the object and the frame), and `DegeneratePose` when bones collapse
        space (the frame cannot be checked)."""
        positions, poses, tris = [], [], []
        degenerate: list[str] = []
        frame = depsgraph.scene.frame_current
        if self.instances:
            drawn.refresh(depsgraph)
        for k, (ob, obj) in enumerate(zip(self.meshes, self.objects)):
            if not extract.is_evaluated(ob, depsgraph):
                raise extract.RigError(f"{extract.not_evaluated(ob)}: enable it, or leave "
                                       "it out")
            extract.check_rig_matches(ob, obj.rig)
            extract.check_topology(ob, ob.evaluated_get(depsgraph).data, obj.rig, frame)
            pos, t = extract.evaluated_frame(ob, depsgraph, obj.rig)
            pose = extract.rigid_pose(ob, depsgraph) if obj.rig.is_rigid else \
                extract.pose_from_object(ob, depsgraph,
                                         (obj.rig.bone_rest, bone_rest_inverse(obj.rig)))
            positions.append(pos)
            tris.append(t)
            poses.append(pose)
            bad, self._collapse[k] = collapsed_bones(obj.rig, pose, self._collapse.get(k))
            degenerate += [f"{ob.name_full}: {b}" for b in bad]
        self.triangles = tris
        if degenerate:
            raise DegeneratePose(
                "bones or props scaled to (almost) zero squash the skin ("
                + ", ".join(degenerate[:4])
                + (" ..." if len(degenerate) > 4 else "") + "): the frame is not checked, "
                "since every squashed triangle touches every other; fix the pose")
        return positions, poses

    def _ask(self):
        """The frame's query: the core's, or Blender's for the reference method."""
        return reference.ask if self.by_blender else core_scan.pipeline.query

    def query(self, positions, poses, triangles=None
              ) -> tuple[list[tuple[int, int, np.ndarray]], float, list[str]]:
        """The query alone: triangle pairs per object pair (indices into the frame's
        triangles, `triangles`, by default those of the last `evaluate`), query
        milliseconds and the method used per object. Its near pairs and whether a budget
        stopped it are the scanner's `near`, `stopped`, `dense`, `near_stopped`."""
        inputs = FrameInputs(list(positions), list(poses),
                             self.triangles if triangles is None else triangles)
        res = self._ask()(self.objects, inputs, self.settings, self.filters, self.state.carried)
        self.last = FrameOutcome(inputs.positions, inputs.triangles, res.pairs,
                                 FrameRecord(0, [], res.ms, 0.0, res.modes), inputs.poses,
                                 res.near, any(st.extra.get("stopped") for st in res.stats),
                                 any(st.extra.get("dense") for st in res.stats),
                                 res.near_stopped)
        return res.pairs, res.ms, res.modes

    def keep(self, tri_pairs) -> list[tuple[int, int, np.ndarray]]:
        """The triangle pairs that count: unique, self pairs as (min, max), without the
        rest contacts and the ignore zones (`core.scan.pipeline.counted`)."""
        return core_scan.pipeline.counted(self.objects, tri_pairs, self.filters)

    def polygon_pairs(self, tri_pairs) -> list[tuple[str, int, str, int]]:
        """The named polygon pairs of triangle pairs (i, j, (K, 2))."""
        return core_scan.pipeline.polygon_pairs(self.objects, tri_pairs)

    def current(self, scene, depsgraph, eval_ms: float = 0.0,
                state: FrameState | None = None) -> FrameOutcome:
        """The scene's current frame through the whole pipeline: evaluate once, then the
        core's (`core.scan.pipeline.collide`). A frame whose bones collapse space comes
        back not checked (no pairs, the reason in its record)."""
        f = scene.frame_current
        try:
            positions, poses = self.evaluate(depsgraph)
        except DegeneratePose as exc:
            rec = FrameRecord(f, [], 0.0, eval_ms, [], not_checked=str(exc))
            self.last = FrameOutcome([], [], [], rec)
            return self.last
        inputs = FrameInputs(positions, poses, self.triangles)
        self.last = core_scan.pipeline.collide(self.objects, inputs, self.settings,
                                               self.filters, state or self.state, f, eval_ms,
                                               ask=self._ask())
        return self.last

    def step(self, scene, f: int, state: FrameState | None = None,
             subframe: float = 0.0) -> FrameRecord:
        """Evaluate and query one frame (in the current `evaluation`), or a sample between
        frames (`subframe` in [0, 1))."""
        if evaluation.mode() != self.evaluation:
            raise extract.RigError(f"this scan was built on the {self.evaluation} evaluation "
                                   f"and cannot step in the {evaluation.mode()} one")
        t0 = time.perf_counter()
        evaluation.frame_set(scene, f, subframe)
        dg = evaluation.depsgraph()
        eval_ms = (time.perf_counter() - t0) * 1000.0
        return self.current(scene, dg, eval_ms, state).record

    def report(self, records: list[FrameRecord], n_requested: int | None = None,
               interrupted: bool = False) -> ScanReport:
        """The report of `records` (complete when all `n_requested` frames are in)."""
        surface = ({o.name: extract.describe_surface(o.rig) for o in self.objects}
                   if any(o.rig.surface for o in self.objects) else {})
        return scan_report(self.objects, records, self.settings, self.about, n_requested,
                           interrupted, self.evaluation, surface)

    def run(self, scene, frames: list[int], progress=None,
            records: list[FrameRecord] | None = None, last_step_to: int | None = None
            ) -> ScanReport:
        """Step through `frames`; `progress(i, n, record)` is called after each frame.
        Records are appended to `records` (if given) as they come, so a caller keeps the
        frames done when the scan is interrupted.

        With the settings' `between`, each frame's record also gets the step to the next
        checked frame (`core.scan.pipeline.between`, through `subframes` samples a frame),
        once that frame is evaluated; the last frame's step goes to `last_step_to` when
        given (a chunk of a longer shot checks the step into the next chunk), else it has
        none."""
        records = [] if records is None else records
        if self.about.where is None:
            self.about = replace(self.about, where=where(scene))
        state = self.state
        if state.frame_memo is None and not self.by_blender:
            # A held pose (frames that do not move) is answered once (core.scan.memo);
            # Blender's own answer (`rebuild`, the reference) is always asked.
            state = replace(state, frame_memo=core_scan.FrameMemo(None, frames=1))
        between = self.settings.between
        walk = list(frames) + ([last_step_to] if between and last_step_to is not None else [])
        open_step: list = []            # the samples of the step still open: its frame's first
        for k, f in enumerate(walk):
            extra = k == len(frames)    # the next chunk's first frame: its step's end only
            rec = self.step(scene, f, state)
            if between:
                self._close_step(records, open_step, self.last, f)
                open_step = [] if extra else [(len(records), self.last)]
                if not extra:
                    # The samples between this frame and the next (`subframes`).
                    for s in range(1, self.settings.subframes):
                        self.step(scene, f, state, s / self.settings.subframes)
                        open_step.append((None, self.last))
            if extra:
                break
            records.append(rec)
            if progress is not None:
                progress(k, len(frames), rec)
        return self.report(records, len(frames))

    def _close_step(self, records: list, samples: list, end: FrameOutcome, to: float) -> None:
        """Give the record that opened `samples` ([(record index, outcome)]) the step to
        `end` (the next checked frame's outcome)."""
        if not samples:
            return
        at = samples[0][0]
        step = close_step(self, records[at].frame, [o for _, o in samples], end, to)
        if step is not None:
            records[at] = step.on(records[at])


@dataclass(frozen=True)
class Step:
    """One frame's step to the next checked frame (`--between-frames`, the panel's
    Between Frames): the core's answer (`core.scan.pipeline.between`: rows and
    pass-through contacts), where it ends, and what it cost (its subframes' queries and
    its continuous check, ms)."""

    found: object
    to: float
    ms: float

    def on(self, rec: FrameRecord) -> FrameRecord:
        """The frame's record with its step; its ms are all the frame costs (its query,
        its subframes' and its step's)."""
        return replace(rec, between=self.found.rows, passes=list(self.found.passes),
                       step_to=self.to, step_ms=self.ms, ms=rec.ms + self.ms)


def close_step(sc: "Scanner", frame: int, samples: list, end: FrameOutcome | None,
               to: float) -> Step | None:
    """The step from `frame` through its `samples` (the frame's `FrameOutcome`, then its
    subframes') to `end` (the next checked frame's outcome; None: not checked), by `sc`'s
    objects, settings and filters; None when a sample could not be checked (collapsed
    bones)."""
    if not samples or end is None:
        return None
    outs = [*samples, end]
    if any(o.record.not_checked for o in outs):
        return None
    found = core_scan.pipeline.between(sc.objects, outs, sc.settings, sc.filters, (frame, to))
    return Step(found, to, found.ms + sum(o.record.ms for o in outs[1:-1]))


def _build(meshes: list, selection, settings: ScanSettings) -> list:
    """The meshes' `CollisionObject`s, built for the settings' method (copies of one
    character, instances or a crowd, build once)."""
    if selection is not None:
        rigs = motion.rigs(meshes, selection.sampled, [selection.why(ob) for ob in meshes])
    else:
        rigs = [extract.rig_from_object(ob) for ob in meshes]
    for rig in rigs:
        if rig.n_triangles == 0:
            raise extract.RigError(f"mesh '{rig.name}' has no faces to collide")
    return core_scan.prepare_shared(rigs, settings.method, self_trees=settings.self_collision)


def where(scene) -> tuple[str, str]:
    """(scene, view layer) a scan of `scene` evaluates in: its full name and the context's
    view layer when it belongs to the scene (`addon.scenes.use` makes it so), else the
    scene's first."""
    from . import scenes

    return scene.name_full, scenes.view_layer_for(scene).name
