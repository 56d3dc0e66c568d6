"""Scan frames of a Blender scene for collisions: the glue between bpy and core.scan.

A scan runs one registered method (`core.methods.registry`): each object answers with the
method it was built for (the asked one, or its fallback), a `Method.for_any_object` method
(the bottom-up refit) answers for every object, and a method outside the numpy core
(`Method.in_core` False: Blender's own ``mathutils.bvhtree.BVHTree`` rebuilt every frame on
the evaluated world-space loop triangles and queried with ``overlap``, the reference) is
answered here by `bvhtree_pairs`.

Every method uses the triangles Blender draws at the frame (deformed quads are re-split,
`core.geometry.triangulation`); `evaluate` reads them with the positions.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..core import scan as core_scan
from ..core import welds
from ..core.contacts import clearance as near_contacts
from ..core.contacts import filters as contact_filters
from ..core.contacts import groups as contact_groups
from ..core.contacts import pairs as contacts
from ..core.methods import registry
from ..core.report.model import FrameRecord, ScanReport, report_source  # noqa: F401
from . import drawn, evaluation, extract, motion

#: The older spelling of a scan's method (`registry.MODES`: mode name -> method id).
MODES = tuple(registry.MODES)


class DegeneratePose(extract.RigError):
    """Bones of the pose collapse space (zero scale): the frame is not checked, because
    every squashed triangle touches every other one (MakeHuman with spine03 at scale 0:
    2.1 million triangle pairs; Blender's own BVHTree took 29-58 s for that frame,
    `python -m bench degenerate`)."""


@dataclass
class FrameOutcome:
    """The current frame through the pipeline: what the overlay, selection and bake need
    besides the report's record.

    Attributes:
        positions: per object (V, 3) float64 evaluated world positions.
        triangles: per object (T, 3) int32 the frame's triangles.
        tri_pairs: per colliding object pair (i, j, (K, 2) int64) triangle pairs after the
            rest-contact filter (self pairs as (min, max)).
        record: the report's `FrameRecord` (polygon pairs after every filter).
        poses: per object, the frame's `Pose`.
        near: with a clearance, the clearance stage's answer (`FrameResult.near`: per
            object pair (i, j, `core.scan.clearance.NearResult`)), before the filters.
    """

    positions: list[np.ndarray]
    triangles: list[np.ndarray]
    tri_pairs: list[tuple[int, int, np.ndarray]]
    record: FrameRecord
    poses: list = field(default_factory=list)
    near: list = field(default_factory=list)


class Scanner:
    """Build once, then query frame after frame."""

    def __init__(self, meshes: list, mode: str | None = None, self_collision: bool = False,
                 first_hit: bool = False, method: str | None = None,
                 objects: list | None = None, ids: list | None = None,
                 selection=None, clearance: float | None = None, near_pairs: bool = False):
        """`method`: a registered method id (`core.methods.registry`; default
        `registry.DEFAULT`, which hands rigs it cannot bound to its fallbacks). `mode` is
        the older spelling (`registry.MODES`). `objects`:
        already built `CollisionObject`s of `meshes` (loaded from the .blend) instead of
        building them here. `selection`: the `motion.Selection` that chose `meshes` (its
        sampled frames verify each rig's motion model, `motion.checked_rig`); without it
        the rigs are read as the meshes' settings say. `clearance`: a distance D >= 0
        (scene units): every frame also gets its near contacts, the non-intersecting
        polygon pairs of two different objects within D (`core.scan.clearance`,
        `core.contacts.clearance`); `near_pairs`: each frame also lists those pairs with their
        distances (`FrameRecord.near_pairs`)."""
        if mode is not None and mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}")
        if method is None:
            method = registry.MODES[mode] if mode is not None else registry.DEFAULT
        try:
            m = registry.get(method)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if not meshes:
            raise extract.RigError("no character (skinned mesh or rigid prop) to scan")
        if clearance is not None:
            clearance = float(clearance)
            if not (clearance >= 0.0 and np.isfinite(clearance)):
                raise ValueError(f"the clearance must be a finite distance >= 0, got {clearance}")
        #: the clearance D (scene units) or None; `near` is the last query's near pairs.
        self.clearance = clearance
        self.near_pairs = near_pairs
        self.near: list = []
        self.meshes = meshes
        self.method = method
        #: The method is answered by Blender, not the numpy core (the reference).
        self.by_blender = not m.in_core
        # How query_frame runs: each object's own method, or this one for every object.
        self.query_mode = method if m.for_any_object else core_scan.OWN
        self.self_collision = self_collision
        self.first_hit = first_hit
        #: Capped frames (the panel's MAX_PAIRS): with no filters, the exact self tree
        #: stops once an object's own polygon pairs exceed this many; `stopped` then says
        #: the frame's pairs are a subset (the count a lower bound). None: every pair.
        self.max_pairs: int | None = None
        self.stopped = False
        #: Set with `stopped` when a capped frame was dense: more candidate triangle pairs
        #: than the live budget (`core.aabb_tree.query.CANDIDATE_BUDGET`), so only a
        #: prefix of them was tested (the pairs found are a subset, possibly under the cap).
        self.dense = False
        #: The clearance stage's work budget (the live overlay's,
        #: `core.scan.LIVE_LIMIT`; None: every near pair, as scans need). When a
        #: frame passes it, `near_stopped` is the node-pair count it stopped at and the
        #: frame has no near results.
        self.clearance_limit: int | None = None
        self.near_stopped = 0
        if objects is None:
            if selection is not None:
                rigs = motion.rigs(meshes, selection.sampled,
                                   [selection.why(ob) for ob in meshes])
            else:
                rigs = [extract.rig_from_object(ob) for ob in meshes]
            for rig in rigs:
                if rig.n_triangles == 0:
                    raise extract.RigError(f"mesh '{rig.name}' has no faces to collide")
            # Copies of one character (instances, a crowd) build once.
            objects = core_scan.prepare_shared(rigs, method, self_trees=self_collision)
        self.objects = objects
        #: Collection instances take part: their matrices are read once per frame.
        self.instances = any(drawn.is_instance(ob) for ob in meshes)
        #: per object, what identifies it in rest contacts (names headless; the panel
        #: passes stable ids that survive renames).
        self.ids: list = list(ids) if ids is not None else [o.name for o in objects]
        #: per mesh, the (T, 3) triangles Blender draws at the last evaluated frame.
        self.triangles: list[np.ndarray] | None = None
        # Contacts not to report: rest-pose triangle pairs by `ids`
        # (`--ignore-rest-contacts`, see `rest_pose_contacts`) and accepted polygon pairs by
        # name (`--allow`, canonical).
        self.ignore = contacts.ContactIndex()
        self.allow_polygons: set[contacts.Contact] = set()
        #: the report's "source" (set by the caller that knows the file; None: omitted).
        self.source: dict | None = None
        #: how the run saw the shot (`core.report.model.ScanReport.seen`; the CLI's).
        self.seen: dict = {}
        #: (scene, view layer) the frames are evaluated in, which the report names
        #: (`where`; set by the first `step` when the caller did not).
        self.where: tuple[str, str] | None = None
        #: filters on contacts (`--crossing-only`, `--min-length`, ignored bone pairs) and
        #: ignore zones (`zones`: object index -> (P,) bool polygons inside the zone).
        self.contact_filter = contact_filters.ContactFilter()
        self.zones: dict = {}
        #: contacts of object pairs whose counted pairs did not change since the last
        #: frame (`contact_groups.frame_contacts`' memo): the live overlay keeps one per
        #: scene while the artist poses; None: contacts are computed afresh.
        self.contacts_memo: dict | None = None
        #: answers of frames already seen (`core.scan.FrameMemo`): the live overlay keeps
        #: one per scene and settings, so that a frame whose inputs are bit for bit those of
        #: one answered before (playback looping, scrubbing back) is answered from it.
        #: None: every frame is queried.
        self.frame_memo: core_scan.FrameMemo | None = None
        #: the evaluation the scan reads (`addon.evaluation`: "viewport" or "render"), the
        #: one current when it was built; and the report's notes on the whole scan.
        self.evaluation = evaluation.mode()
        self.notes: list[str] = []

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
        `--ignore-rest-contacts`. Assign the result to `ignore`."""
        tri_pairs = rest_pose_pairs(self.meshes, self.objects, self.self_collision,
                                    rebuild=self.by_blender)
        return contacts.ContactIndex(
            (self.ids[i], a, self.ids[j], b) for i, j, p in tri_pairs for a, b in p.tolist())

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
        for ob, obj in zip(self.meshes, self.objects):
            if not extract.is_evaluated(ob, depsgraph):
                raise extract.RigError(f"{extract.not_evaluated(ob)}: enable it, or leave "
                                       "it out")
            check_rig_matches(ob, obj)
            extract.check_topology(ob, ob.evaluated_get(depsgraph).data, obj.rig, frame)
            pos, t = extract.evaluated_frame(ob, depsgraph, obj.rig)
            pose = extract.rigid_pose(ob, depsgraph) if obj.rig.is_rigid else \
                extract.pose_from_object(ob, depsgraph, _built_rest(obj))
            positions.append(pos)
            tris.append(t)
            poses.append(pose)
            degenerate += [f"{ob.name_full}: {b}" for b in degenerate_bones(obj, pose)]
        self.triangles = tris
        if degenerate:
            raise DegeneratePose(
                "bones or props scaled to (almost) zero squash the skin ("
                + ", ".join(degenerate[:4])
                + (" ..." if len(degenerate) > 4 else "") + "): the frame is not checked, "
                "since every squashed triangle touches every other; fix the pose")
        return positions, poses

    def query(self, positions, poses, triangles=None
              ) -> tuple[list[tuple[int, int, np.ndarray]], float, list[str]]:
        """Triangle pairs per object pair (indices into the frame's triangles, which are
        `triangles`, by default those of the last `evaluate`), query milliseconds and the
        method used per object."""
        if triangles is None:
            triangles = self.triangles
        if self.by_blender:
            t0 = time.perf_counter()
            pairs = bvhtree_pairs(self.objects, positions, self.self_collision, triangles,
                                  poses)
            self.near, self.near_stopped = [], 0
            if self.clearance is not None:
                try:
                    self.near = core_scan.clearance_frame(self.objects, positions, poses,
                                                          self.clearance, triangles,
                                                          limit=self.clearance_limit,
                                                          intersecting=pairs)
                except core_scan.TooManyPairs as exc:
                    self.near_stopped = exc.count
            return pairs, (time.perf_counter() - t0) * 1000.0, [self.method] * len(self.objects)
        # With filters, the first pair found may be one they drop: then the whole frame is
        # queried and the first pair kept after the filters (never a false "clean").
        first = self.first_hit and not self.ignore and not self.allow_polygons
        capped = (self.max_pairs is not None and not self.first_hit and not self.ignore
                  and not self.allow_polygons)
        res = core_scan.query_frame(self.objects, positions, poses, mode=self.query_mode,
                                    self_collision=self.self_collision,
                                    first_hit=first, triangles=triangles,
                                    enough_self=self._enough_self if capped else None,
                                    enough_between=self._enough_between if capped else None,
                                    clearance=self.clearance,
                                    clearance_limit=self.clearance_limit)
        self.near, self.near_stopped = res.near, res.near_stopped
        self.stopped = any(st.extra.get("stopped") for st in res.stats)
        self.dense = any(st.extra.get("dense") for st in res.stats)
        return res.pairs, res.ms, res.modes

    def _enough_between(self, tri_pairs) -> bool:
        """Whether triangle pairs between objects (i, j, (K, 2)) already make more than
        `max_pairs` polygon pairs."""
        if sum(p.shape[0] for _, _, p in tri_pairs) <= self.max_pairs:
            return False
        total = 0
        for i, j, p in tri_pairs:
            pp = np.stack([self.objects[i].rig.tri_polygon[p[:, 0]],
                           self.objects[j].rig.tri_polygon[p[:, 1]]], 1)
            total += contacts.normalized_pairs(pp, False).shape[0]
        return total > self.max_pairs

    def _enough_self(self, i: int, pairs: np.ndarray) -> bool:
        """Whether self pairs `pairs` of object i already make more than `max_pairs`
        polygon pairs (then the frame is capped anyway and the rest is not tested)."""
        if pairs.shape[0] <= self.max_pairs:
            return False
        poly = self.objects[i].rig.tri_polygon
        pp = contacts.normalized_pairs(np.stack([poly[pairs[:, 0]], poly[pairs[:, 1]]], 1),
                                       True)
        return int(np.count_nonzero(pp[:, 0] != pp[:, 1])) > self.max_pairs

    def keep(self, tri_pairs) -> list[tuple[int, int, np.ndarray]]:
        """The triangle pairs that count: unique, self pairs as (min, max), without the
        rest contacts of `ignore`. Whole-array work per object pair."""
        out = []
        for i, j, p in tri_pairs:
            p = contacts.normalized_pairs(p, i == j)
            if self.ignore:
                p = self.ignore.drop(self.ids[i], self.ids[j], p)
            if p.size:
                out.append((i, j, p))
        return out

    def polygon_pairs(self, tri_pairs) -> list[tuple[str, int, str, int]]:
        rows = core_scan.polygon_pair_rows(self.objects, core_scan.FrameResult(tri_pairs, 0.0))
        names = np.array([o.name for o in self.objects], dtype=object)
        return list(zip(names[rows[:, 0]].tolist(), rows[:, 1].tolist(),
                        names[rows[:, 2]].tolist(), rows[:, 3].tolist()))

    def _polygons(self, tri_pairs) -> list[tuple[str, int, str, int]]:
        """The frame's reported polygon pairs: after the allow-list; with `first_hit`,
        only the first one."""
        pairs = self.polygon_pairs(tri_pairs)
        if self.allow_polygons:
            pairs = contacts.drop_named(pairs, self.allow_polygons)
        if self.first_hit:
            pairs = pairs[:1]
        return pairs

    def current(self, scene, depsgraph, eval_ms: float = 0.0) -> FrameOutcome:
        """The scene's current frame through the whole pipeline: evaluate once, collide,
        drop rest contacts, map to polygons, filter. A frame whose bones collapse space
        comes back not checked (no pairs, the reason in its record)."""
        f = scene.frame_current
        try:
            positions, poses = self.evaluate(depsgraph)
        except DegeneratePose as exc:
            rec = FrameRecord(f, [], 0.0, eval_ms, [], not_checked=str(exc))
            return FrameOutcome([], [], [], rec)
        memo = self.frame_memo
        if memo is not None:
            t0 = time.perf_counter()
            seen = memo.get(f, positions, self.triangles)
            if seen is not None:
                # The inputs of a frame answered before, bit for bit: its answer
                # (core.scan.memo). Only complete answers are kept.
                self.stopped = self.dense = False
                self.near, self.near_stopped = seen.near, 0
                rec = replace(seen.record, frame=f, eval_ms=eval_ms,
                              ms=(time.perf_counter() - t0) * 1000.0)
                return replace(seen, positions=positions, poses=poses,
                               triangles=self.triangles, record=rec)
        tri_pairs, ms, modes = self._query_whole(positions, poses)
        t0 = time.perf_counter()
        kept = contact_filters.drop_zone_pairs(self.objects, self.keep(tri_pairs), self.zones)
        pairs, found = self._contacts(positions, kept)
        if self.contact_filter.drops_contacts:      # the overlay shows what is reported
            kept = contact_filters.keep_contact_pairs(self.objects, kept, found)
        near = self.near
        rec = FrameRecord(f, pairs, 0.0, eval_ms, modes, contacts=found)
        if self.clearance is not None:
            rec.near_contacts, rec.near_pairs = self._near_contacts(near)
        rec.ms = ms + (time.perf_counter() - t0) * 1000.0
        out = FrameOutcome(positions, self.triangles, kept, rec, poses, near)
        if memo is not None and not (self.stopped or self.dense or self.near_stopped):
            memo.put(f, positions, self.triangles, out)
        return out

    def _near_contacts(self, near) -> tuple[list, list | None]:
        """The frame's near contacts after the filters that apply to them, and with
        `near_pairs` their polygon pairs with distances (`near_contacts.reported`)."""
        return near_contacts.reported(self.objects, near, self.zones, self.allow_polygons,
                                      self.contact_filter.ignore_bones, self.near_pairs)

    def _query_whole(self, positions, poses):
        """`query`, on the whole frame when contact filters or ignore zones are set (like
        the allow-list: the first pair found, or a capped frame's, may be one they drop;
        the first pair is then kept after the filters, never a false "clean")."""
        if not (self.contact_filter.active or self.zones):
            return self.query(positions, poses)
        first_hit, max_pairs = self.first_hit, self.max_pairs
        self.first_hit, self.max_pairs = False, None
        try:
            return self.query(positions, poses)
        finally:
            self.first_hit, self.max_pairs = first_hit, max_pairs

    def _contacts(self, positions, kept) -> tuple[list, list]:
        """The frame's reported polygon pairs and its contacts (`core.contacts.groups`),
        after the allow-list and the contact filters; with `first_hit`, the first pair left
        and its contact."""
        flt = self.contact_filter
        first_hit, self.first_hit = self.first_hit, self.first_hit and not flt.drops_contacts
        try:
            pairs = self._polygons(kept)
        finally:
            self.first_hit = first_hit
        restrict = bool(self.allow_polygons) or self.first_hit
        found = contact_groups.frame_contacts(self.objects, positions, self.triangles, kept,
                                              reported=pairs if restrict else None,
                                              memo=self.contacts_memo)
        if flt.drops_contacts:
            found = [c for c in found if flt.keep(c)]
            kept_pairs = {(c.a, int(x), c.b, int(y)) for c in found
                          for x, y in c.pairs.tolist()}
            pairs = [p for p in pairs if tuple(p) in kept_pairs
                     or (p[0], p[3], p[2], p[1]) in kept_pairs]
            if self.first_hit and pairs:
                pairs = pairs[:1]
                found = contact_groups.frame_contacts(self.objects, positions,
                                                      self.triangles, kept, reported=pairs)
        return pairs, found

    def step(self, scene, f: int) -> FrameRecord:
        """Evaluate and query one frame (in the current `evaluation`)."""
        if evaluation.mode() != self.evaluation:
            raise extract.RigError(f"this scan was built on the {self.evaluation} evaluation "
                                   f"and cannot step in the {evaluation.mode()} one")
        if self.where is None:
            self.where = where(scene)
        t0 = time.perf_counter()
        evaluation.frame_set(scene, f)
        dg = evaluation.depsgraph()
        eval_ms = (time.perf_counter() - t0) * 1000.0
        return self.current(scene, dg, eval_ms).record

    def report(self, records: list[FrameRecord], n_requested: int | None = None,
               interrupted: bool = False) -> ScanReport:
        """The report of `records` (complete when all `n_requested` frames are in)."""
        n_requested = len(records) if n_requested is None else n_requested
        refit = {}
        for k, o in enumerate(self.objects):
            used = sorted({r.modes[k] for r in records if len(r.modes) > k})
            refit[o.name] = "+".join(used) if used else self.refit_id(k)
        return ScanReport([o.name for o in self.objects], list(records), refit,
                          {o.name: o.build_seconds for o in self.objects},
                          complete=len(records) == n_requested and not interrupted,
                          interrupted=interrupted, frames_requested=n_requested,
                          source=self.source, uncovered=self.uncovered(),
                          fallback={o.name: o.reason for o in self.objects if o.reason},
                          surface=self.surfaces(),
                          scene=self.where[0] if self.where else None,
                          view_layer=self.where[1] if self.where else None,
                          clearance=self.clearance, seen=self.seen,
                          evaluation=self.evaluation, notes=list(self.notes))

    def surfaces(self) -> dict:
        """Per object, the surface checked (`ScanReport.surface`), when some object is on
        an evaluated surface; else empty."""
        if not any(o.rig.surface for o in self.objects):
            return {}
        return {o.name: extract.describe_surface(o.rig) for o in self.objects}

    def uncovered(self) -> dict:
        """With self-collision, per object whose method says what its own self test leaves
        out (`Method.coverage`): that entry (computed once per object)."""
        if not self.self_collision or self.by_blender:
            return {}
        out = {}
        for o in self.objects:
            cov = getattr(o, "_coverage", False)
            if cov is False:
                cov = registry.get(o.method).coverage(o.rig, o.data)
                o._coverage = cov
            if cov is not None:
                out[o.name] = cov
        return out

    def run(self, scene, frames: list[int], progress=None,
            records: list[FrameRecord] | None = None) -> ScanReport:
        """Step through `frames`; `progress(i, n, record)` is called after each frame.
        Records are appended to `records` (if given) as they come, so a caller keeps the
        frames done when the scan is interrupted."""
        records = [] if records is None else records
        kept = self.frame_memo
        if kept is None and not self.by_blender:
            # A held pose (frames that do not move) is answered once (core.scan.memo);
            # Blender's own answer (`rebuild`, the reference) is always asked.
            self.frame_memo = core_scan.FrameMemo(None, frames=1)
        try:
            for k, f in enumerate(frames):
                rec = self.step(scene, f)
                records.append(rec)
                if progress is not None:
                    progress(k, len(frames), rec)
        finally:
            self.frame_memo = kept
        return self.report(records, len(frames))


def where(scene) -> tuple[str, str]:
    """(scene, view layer) a scan of `scene` evaluates in: its full name and the context's
    view layer when it belongs to the scene (`addon.scenes.use` makes it so), else the
    scene's first."""
    from . import scenes

    return scene.name_full, scenes.view_layer_for(scene).name


def _built_rest(obj) -> tuple[np.ndarray, np.ndarray]:
    """The rig's bone rest matrices and their inverses, inverted once per object."""
    inv = getattr(obj, "_rest_inverse", None)
    if inv is None:
        inv = obj._rest_inverse = np.linalg.inv(obj.rig.bone_rest)
    return obj.rig.bone_rest, inv


def check_rig_matches(ob, obj) -> None:
    """The armature the modifier uses now must have the bones the data was built with
    (RigError otherwise: the data would silently describe another skeleton). A rigid
    prop must still be one: no Armature modifier."""
    arm = extract.modifier_report(ob).armature
    if obj.rig.is_rigid:
        if arm is not None:
            raise extract.RigError(f"'{ob.name}' was built as a rigid prop but has an Armature "
                                   "modifier now: rebuild")
        return
    if arm is None:
        raise extract.RigError(f"'{ob.name_full}' has no Armature modifier with an armature "
                               "object any more: restore it, or rebuild")
    if arm.type != "ARMATURE":
        raise extract.RigError(f"the Armature modifier of '{ob.name_full}' points to "
                               f"'{arm.name_full}', which is not an armature")
    bones = arm.data.bones
    names = obj.rig.bone_names
    # `keys()` lists the names in C, in the collection's order (a Python loop over the
    # bones cost 0.13 ms a frame on MakeHuman's 163).
    if len(bones) != len(names) or bones.keys() != list(names):
        raise extract.RigError(f"the armature of '{ob.name_full}' ('{arm.name_full}', {len(bones)} "
                               f"bones) is not the one it was built with ({len(names)} "
                               "bones): rebuild")


def degenerate_bones(obj, pose, tol: float = 1e-3) -> list[str]:
    """Deform bones weighting the mesh whose pose matrix (nearly) collapses space: a
    singular value at most `tol` (relative to the rest pose, which is 1). They squash skin
    to a point, a line, a plane or a millimetre-sized blob, which makes almost every
    triangle touch every other one. For a rigid prop: its world matrix, when it is scaled
    to zero or one axis is at most `tol` of the largest."""
    rig = obj.rig
    if rig.is_rigid:
        # A prop scaled to zero (a common way to hide one) or flattened: its world matrix
        # collapses space (no rest scale to compare with: relative to its largest axis).
        sv = np.linalg.svd(pose.mesh_world[:3, :3], compute_uv=False)
        if not np.isfinite(sv).all() or sv[0] == 0.0 or sv[2] <= tol * (1 + 1e-6) * sv[0]:
            return ["its world matrix (the prop is scaled to (almost) zero)"]
        return []
    used = getattr(obj, "_used_bones", None)
    if used is None:                     # once per object, not per frame
        used = np.zeros(rig.n_bones, dtype=bool)
        if rig.weight_bone.size:
            used[np.unique(rig.weight_bone)] = True
        obj._used_bones = used
    if not used.any() or pose.deform.shape[0] != rig.n_bones:
        return []
    m = pose.deform[used, :3, :3]
    # Only the matrices that changed since the last call are decomposed again (a pose
    # edit changes a few bones); the verdict of a matrix depends on it alone.
    last = getattr(obj, "_degenerate_last", None)
    if last is not None and last[0].shape == m.shape and last[2] == tol:
        changed = (m != last[0]).reshape(len(m), 9).any(axis=1)
        bad = last[1].copy()
    else:
        changed = np.ones(len(m), dtype=bool)
        bad = np.zeros(len(m), dtype=bool)
    if changed.any():
        idx = np.flatnonzero(changed)
        finite = np.isfinite(m[idx]).reshape(idx.size, 9).all(axis=1)
        bad[idx[~finite]] = True             # NaN or infinite: no decomposition exists
        idx = idx[finite]
        bad[idx] = False
        # Blender hands the matrices over in float32: allow its rounding at the threshold.
        at = tol * (1 + 1e-6)
        # sigma_min = |det| / (sigma_1 sigma_2) >= 2 |det| / |m|_F^2 (sigma_1 sigma_2 is
        # at most half the sum of their squares): a matrix with |det| > 2 at |m|_F^2 has
        # sigma_min > 4 at, proved sound without a decomposition; the margin dwarfs the
        # rounding of det and |m|_F below |m|_F^2 = 1e20 (beyond it, the SVD decides).
        # Playback turns every bone, and a batched SVD of all of them cost 0.4 ms a frame
        # on MakeHuman.
        mi = m[idx]
        fro2 = np.einsum("kij,kij->k", mi, mi)
        with np.errstate(over="ignore", invalid="ignore"):
            sound = (np.abs(np.linalg.det(mi)) > 2.0 * at * fro2) & (fro2 < 1e20)
        idx = idx[~sound]
        if idx.size:
            sv = np.linalg.svd(m[idx], compute_uv=False)        # (c, 3), descending
            bad[idx] = sv[:, 2] <= at
    obj._degenerate_last = (m.copy(), bad, tol)
    names = np.array(rig.bone_names, dtype=object)[used]
    return [str(n) for n in names[bad]]


def rest_pose_pairs(meshes: list, objects: list, self_collision: bool,
                    rebuild: bool = False) -> list[tuple[int, int, np.ndarray]]:
    """Triangle pairs (indices into the rest pose's evaluated triangles) colliding in the
    rest pose: armatures switched to Rest Position for the evaluation, then restored (those
    deforming the meshes, and those whose bones rigid props hang from). The one rule
    behind the panel's *Ignore Rest Contacts* and `scan --ignore-rest-contacts`.
    Bottom-up from the evaluated positions (the pose bones' matrices do not follow Rest
    Position, so the LBS bound must not be used), or Blender's BVHTree with `rebuild`."""
    import bpy

    arms = [a for ob in meshes for a in extract.armatures_of(ob)]
    with extract.rest_position(arms):
        dg = evaluation.depsgraph()
        frame = bpy.context.scene.frame_current
        for ob, obj in zip(meshes, objects):
            extract.check_topology(ob, ob.evaluated_get(dg).data, obj.rig, frame)
        frames = [extract.evaluated_frame(ob, dg, obj.rig) for ob, obj in zip(meshes, objects)]
        positions, tris = [f[0] for f in frames], [f[1] for f in frames]
        if rebuild:
            return bvhtree_pairs(objects, positions, self_collision, tris)
        return core_scan.query_frame(objects, positions, [None] * len(objects),
                                     mode=registry.any_object().id,
                                     self_collision=self_collision,
                                     triangles=tris).pairs


def bvhtree_pairs(objects, positions, self_collision: bool,
                  triangles=None, poses: list | None = None
                  ) -> list[tuple[int, int, np.ndarray]]:
    """Blender's BVHTree rebuild + overlap on world-space triangles, as triangle pairs.

    `triangles`: per object, the frame's (T, 3) triangles (Blender's evaluated loop
    triangles, `Scanner.evaluate`); None decides the quads from `positions`.

    Self pairs come back in both orders and include adjacent triangles that Blender does
    not skip (sharing one vertex, or a welded seam); they are deduplicated, and all pairs
    are filtered with the same adjacency rules as `core.scan.query_frame` (weld ids within
    a mesh, seam ids decided at build between meshes; `poses` as given to `query_frame`).
    """
    from mathutils.bvhtree import BVHTree

    if triangles is None:
        triangles = [None] * len(objects)
    tris = [core_scan.frame_triangles(o, p) if t is None else t
            for o, p, t in zip(objects, positions, triangles)]
    trees = [BVHTree.FromPolygons(p.tolist(), t.tolist(), all_triangles=True, epsilon=0.0)
             for t, p in zip(tris, positions)]
    out = []
    n = len(objects)
    poses = [None] * n if poses is None else poses
    seams = core_scan.seam_ids(objects)
    jobs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if self_collision:
        jobs += [(i, i) for i in range(n)]
    for i, j in jobs:
        raw = trees[i].overlap(trees[j])
        if not raw:
            continue
        pairs = np.asarray(raw, dtype=np.int64)
        if i == j:
            pairs = np.unique(np.sort(pairs, axis=1), axis=0)
            pairs = pairs[pairs[:, 0] != pairs[:, 1]]
            keys = core_scan.frame_keys(objects[i], positions[i])
            keys = objects[i].vertex_keys if keys is None else keys
            far = ~welds.adjacent_pairs(keys[tris[i]], pairs[:, 0], pairs[:, 1])
        elif seams[i] is not None and seams[j] is not None and \
                core_scan.seams_apply(objects[i], objects[j], poses[i], poses[j]):
            far = ~core_scan.seam_pairs(seams[i], tris[i], pairs[:, 0],
                                        seams[j], tris[j], pairs[:, 1])
        else:
            far = np.ones(pairs.shape[0], dtype=bool)
        pairs = pairs[far]
        if pairs.size:
            out.append((i, j, pairs))
    return out
