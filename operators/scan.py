"""Operators: scan the frame range, and export the last scan's report."""
from __future__ import annotations

import csv
import json
import os

import bpy
from bpy_extras.io_utils import ExportHelper

from ..addon import extract, scanner, session, storage
from ..core.contacts import groups as contact_groups
from ..core.report import writing as core_report
from .stepping import TimerSteps, guard_operators, object_mode_poll

MARKER_PREFIX = "collide "
REPORT_MAX_PAIRS = 100_000
"""At most this many polygon pairs go into the stored report in all (later frames keep
their exact count, `"pairs_total"`, with `"truncated": true`); per frame at most
`session.MAX_PAIRS`."""


def report_document(scene, meshes, objects, records, n_requested: int,
                    first_hit: bool = False, steps: dict | None = None) -> dict:
    """The scan's report in the headless scan's schema, built by the same code
    (`addon.scanner.ScanReport` of the scene's `session.pipeline`), capped at
    REPORT_MAX_PAIRS pairs in all. `steps`: with Between Frames, record index -> its
    frame's `scanner.Step` (its "between", "step_to", "step_ms", "passes_through")."""
    # The pairs are the records'; first_hit only goes into the report's "source".
    sc = session.pipeline(scene, meshes, objects, first_hit=first_hit, scan=bool(steps))
    steps = steps or {}
    frame_records = []
    for k, (f, r) in enumerate(records):
        rec = scanner.FrameRecord(f, r.polygon_pairs, r.ms, 0.0, list(r.modes),
                                  not_checked=r.error if r.not_checked else "",
                                  pairs_total=r.n_pairs, contacts=list(r.contacts),
                                  near_contacts=list(getattr(r, "near_contacts", None) or []))
        step = steps.get(k)
        frame_records.append(rec if step is None else step.on(rec))   # as `Scanner.run`
    return sc.report(frame_records, n_requested).to_json(max_total=REPORT_MAX_PAIRS)


def _record(scene, meshes, objects, records, n_requested: int, first_hit: bool = False,
            steps: dict | None = None) -> int:
    """Store a finished scan: per-frame counts (the timeline strip), the report (JSON in
    the headless scan's schema, as a Text), with Between Frames each frame's step and the
    pass-through contacts the panel lists, and, if asked, episode markers."""
    s = scene.skin_collide
    steps = steps or {}
    s.frame_counts.clear()
    s.passes.clear()
    for k, (frame, res) in enumerate(records):
        item = s.frame_counts.add()
        item.frame, item.pairs = frame, (-1 if res.not_checked else res.n_pairs)
        item.crossing = sum(c.length for c in getattr(res, "contacts", None) or []
                            if c.kind == "crossing")
        item.near = len(getattr(res, "near_contacts", None) or [])
        step = steps.get(k)
        if step is None:
            continue
        item.step_to, item.passes = float(step.to), len(step.found.passes)
        for index, c in enumerate(step.found.passes):
            p = s.passes.add()
            p.frame, p.step_to, p.t, p.index = frame, float(step.to), float(c.t), index
            p.object_a, p.object_b = c.a, c.b
            p.bone_a, p.bone_b = c.bones[0] or "", c.bones[1] or ""
            p.pairs = len(c.pairs)
    report = report_document(scene, meshes, objects, records, n_requested, first_hit, steps)
    if s.report is None:
        s.report = bpy.data.texts.new(storage.TEXT_PREFIX + "report.json")
    s.report.from_string(core_report.dumps(report))
    for m in [m for m in scene.timeline_markers if m.name.startswith(MARKER_PREFIX)]:
        scene.timeline_markers.remove(m)
    episodes = 0
    if s.add_markers:
        before = 0
        for frame, res in records:
            if res.n_pairs > 0 and not before:
                scene.timeline_markers.new(f"{MARKER_PREFIX}{frame}", frame=frame)
                episodes += 1
            before = res.n_pairs > 0
    return episodes


class SKINCOLLIDE_OT_scan(TimerSteps, bpy.types.Operator):
    """Check every frame of the scene's range and show the colliding frames in the
    timeline. Esc cancels and keeps the previous results"""

    bl_idname = "skin_collide.scan"
    bl_label = "Scan Frame Range"
    bl_options = {"REGISTER", "UNDO"}
    cancel_message = "Scan cancelled; the previous results are kept"

    use_scene_range: bpy.props.BoolProperty(name="Scene Range", default=True)
    frame_start: bpy.props.IntProperty(name="Start", default=1)
    frame_end: bpy.props.IntProperty(name="End", default=250)
    first_hit: bpy.props.BoolProperty(
        name="First Hit", description="Stop each frame at the first colliding pair (a "
        "yes/no per frame, faster)", default=False)

    @classmethod
    def poll(cls, context):
        return object_mode_poll(cls, context)

    def _setup(self, context):
        scene = context.scene
        start, end = ((scene.frame_start, scene.frame_end) if self.use_scene_range
                      else (self.frame_start, self.frame_end))
        if end < start:
            raise session.SessionError(f"the frame range {start}-{end} is empty")
        # The characters the viewport shows, as the live overlay and Refresh check them:
        # hiding one leaves it out of the scan (the result names it).
        self._meshes = session.shown_built(scene, context.view_layer, full_check=True,
                                           verb="scan")
        self._hidden = [ob.name_full for ob in session.built_meshes(scene)
                        if ob not in self._meshes]
        self._objects = session.load_objects(self._meshes)
        # Between Frames (issue 57): the scan's pipeline for the steps, its settings the
        # panel's (`session.panel_settings`: refused with First Hit, before any change).
        self._between = None
        if scene.skin_collide.between_frames:
            self._between = session.pipeline(scene, self._meshes, self._objects,
                                             first_hit=self.first_hit, scan=True)
        self._frames = list(range(start, end + 1))
        self._start_frame = scene.frame_current
        self._start_subframe = scene.frame_subframe
        self._records = []
        self._steps: dict[int, scanner.Step] = {}       # record index -> its frame's step
        self._open: list = []                   # the open step's samples, its frame's first

    def _step(self, context) -> bool:
        scene = context.scene
        f = self._frames[len(self._records)]
        scene.frame_set(f)
        try:
            res = session.query(scene, context.evaluated_depsgraph_get(), self._meshes,
                                self._objects, first_hit=self.first_hit, exact_count=True,
                                scan=self._between is not None)
        except session.DegeneratePose as exc:
            res = session.not_checked(scene, str(exc))
        if self._between is not None:
            self._step_between(context, f, res.outcome)
        self._records.append((f, res))
        return len(self._records) == len(self._frames)

    def _step_between(self, context, f: int, outcome) -> None:
        """Close the step into frame `f` (`outcome`: its first sample, None when it was not
        checked), then, unless `f` is the last frame, open its own through its subframes."""
        if self._open:
            at = len(self._records) - 1
            step = scanner.close_step(self._between, self._records[at][0], self._open,
                                      outcome, f)
            if step is not None:
                self._steps[at] = step
        self._open = []
        if outcome is None or f == self._frames[-1]:
            return
        self._open = [outcome]
        n = self._between.settings.subframes
        for k in range(1, n):
            context.scene.frame_set(f, subframe=k / n)
            self._open.append(self._between.current(context.scene,
                                                    context.evaluated_depsgraph_get()))

    def _restore(self, context) -> None:
        context.scene.frame_set(self._start_frame, subframe=self._start_subframe)

    def _cancel(self, context) -> None:
        self._restore(context)

    def on_failure(self, context) -> None:
        if hasattr(self, "_start_frame"):
            self._restore(context)

    def _finish(self, context):
        scene = context.scene
        self._restore(context)
        episodes = _record(scene, self._meshes, self._objects, self._records,
                           len(self._frames), self.first_hit, self._steps)
        n = sum(1 for _, r in self._records if r.n_pairs > 0)
        skipped = [r for _, r in self._records if r.not_checked]
        hidden = ", ".join(f"'{name}'" for name in self._hidden)
        near = sum(1 for _, r in self._records if r.near_contacts and r.n_pairs == 0)
        note = next((r.clearance_note for _, r in self._records if r.clearance_note), "")
        between = ""
        if self._between is not None:
            found = sum(len(st.found.passes) for st in self._steps.values())
            marked = sum(1 for st in self._steps.values() if st.found.passes)
            between = (f", {found} pass-through(s) between frames in {marked} step(s)"
                       if found else ", nothing passes through between frames")
        self.report({"WARNING" if skipped or hidden or note else "INFO"},
                    f"{n} of {len(self._records)} frames collide" + between
                    + (f", {near} more under the clearance" if near else "")
                    + (f"; {note}" if note else "")
                    + (f"; {episodes} marker(s) placed" if episodes else "")
                    + (f"; {len(skipped)} frame(s) not checked: {skipped[0].error}"
                       if skipped else "")
                    + (f"; hidden, not scanned: {hidden}" if hidden else ""))

    def execute(self, context):
        try:
            self._setup(context)
            wm = context.window_manager
            wm.progress_begin(0, len(self._frames))
            try:
                while len(self._records) < len(self._frames):
                    self._step(context)
                    wm.progress_update(len(self._records))
            finally:
                wm.progress_end()
        except (session.SessionError, extract.RigError, ValueError) as exc:
            if hasattr(self, "_start_frame"):
                self._restore(context)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self._finish(context)
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.window is None or bpy.app.background:
            return self.execute(context)
        try:
            self._setup(context)
        except (session.SessionError, extract.RigError, ValueError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return self._begin_steps(context, len(self._frames))


class SKINCOLLIDE_OT_export_report(bpy.types.Operator, ExportHelper):
    """Export the last scan: JSON (the headless scan's schema) or CSV (one row per pair,
    and one row per contact in <name>.contacts.csv)"""

    bl_idname = "skin_collide.export_report"
    bl_label = "Export Collision Report"
    filename_ext = ".json"
    filter_glob: bpy.props.StringProperty(default="*.json;*.csv", options={"HIDDEN"})
    # ExportHelper's own filepath, declared again to say that `//` works: execute resolves
    # it against the saved .blend (Blender 4.5 warns about the prefix otherwise).
    filepath: bpy.props.StringProperty(
        name="File Path", description="Where to write the report (`//` is next to the "
        "saved .blend)", maxlen=1024, subtype="FILE_PATH",
        options={"PATH_SUPPORTS_BLEND_RELATIVE"} if bpy.app.version >= (4, 5, 0) else set())

    @classmethod
    def poll(cls, context):
        if context.scene is None or context.scene.skin_collide.report is None:
            cls.poll_message_set("Scan the frame range first")
            return False
        return True

    def check(self, context):
        # Keep a .csv name as typed; ExportHelper would otherwise append .json.
        return False

    def execute(self, context):
        try:
            path = resolve_output_path(self.filepath)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        try:
            report = json.loads(context.scene.skin_collide.report.as_string())
        except ValueError:
            self.report({"ERROR"}, "the last scan's report cannot be read: scan again")
            return {"CANCELLED"}
        try:
            if path.lower().endswith(".csv"):
                with open(path, "w", newline="", encoding="utf-8") as fh:
                    w = csv.writer(fh)
                    w.writerow(["frame", "object_a", "polygon_a", "object_b", "polygon_b", "ms"])
                    for fr in report["frames"]:
                        for a, pa, b, pb in fr["pairs"]:
                            w.writerow([fr["frame"], a, pa, b, pb, fr["ms"]])
                # One row per contact, beside it (the pairs' CSV stays an allow-list).
                with open(contacts_csv_path(path), "w", newline="", encoding="utf-8") as fh:
                    fh.write(contact_groups.contacts_csv(report))
            else:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(core_report.dumps(report))
        except OSError as exc:
            self.report({"ERROR"}, f"cannot write {path}: {exc.strerror or exc}")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Wrote {path}")
        return {"FINISHED"}


def contacts_csv_path(path: str) -> str:
    """Where the contacts' CSV of a pairs' CSV `path` goes: `<name>.contacts.csv`."""
    return os.path.splitext(path)[0] + ".contacts.csv"


def resolve_output_path(filepath: str) -> str:
    """The absolute path to write, or ValueError with a one-line reason: empty, relative
    ('//') in a never-saved file (Blender's exporters refuse those too), a folder, or a
    missing folder."""
    if not filepath or not filepath.strip():
        raise ValueError("no file name given")
    if filepath.startswith("//"):
        if not bpy.data.filepath:
            raise ValueError(f"'{filepath}' is relative to the .blend file: save the file "
                             "first, or choose an absolute path")
        filepath = bpy.path.abspath(filepath)
    path = os.path.abspath(filepath)
    if os.path.isdir(path) or filepath.endswith(("/", os.sep)):
        raise ValueError(f"{path} is a folder: give a file name")
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        raise ValueError(f"no such folder: {folder}")
    return path


CLASSES = (SKINCOLLIDE_OT_scan, SKINCOLLIDE_OT_export_report)
guard_operators(CLASSES)
