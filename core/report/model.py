"""The report model of a scan: one `FrameRecord` per frame (named polygon pairs after the
filters, contacts, timings, the method per object), the `ScanReport` of a run (its JSON
document, the one schema of the headless scan and the panel's Scan Frame Range, and its
episodes), and the report's `source` (what `core.report.merge` checks). Pure Python over the
pipeline's results: `addon.scanner.Scanner` fills it, `core.report.writing` writes it,
`from_json` reads a written one back.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ..cache import derived
from ..contacts import clearance as near_contacts
from ..contacts import groups as contact_groups
from ..contacts import pairs as contacts
from ..contacts import passing
from ..methods import registry
from ..types import FrameRecord
from . import writing as core_report

__all__ = ["FrameRecord", "ReportContext", "ScanReport", "from_json", "report_source",
           "scan_report"]


@dataclass(frozen=True)
class ReportContext:
    """What a scan's report says of where it comes from, given by its front end: the
    report's "source" (the file, method, flags; None: omitted), how the run saw the shot
    (`ScanReport.seen`), its notes, and (scene, view layer) it evaluates in (None: not
    known yet)."""

    source: dict | None = None
    seen: dict | None = None
    notes: tuple = ()
    where: tuple | None = None


@dataclass
class ScanReport:
    """A scan's frames so far. `refit` maps each object to the method actually used
    (registry ids; several joined by "+" if it changed between frames); `complete` is
    False until every frame was scanned; `interrupted` is True when the scan was stopped
    (Ctrl-C)."""

    objects: list[str]
    frames: list[FrameRecord]
    refit: dict[str, str]
    build_seconds: dict[str, float]
    complete: bool = True
    interrupted: bool = False
    frames_requested: int = 0
    #: what was scanned and how ({file, method, self, first_hit, filters}); `core.report.merge`
    #: refuses to merge reports whose sources differ. None: not written.
    source: dict | None = None
    #: per object whose method's own self test leaves something out (`Method.coverage`,
    #: e.g. sphere chains): what it leaves out and how it is decided. Empty: not written.
    uncovered: dict = field(default_factory=dict)
    #: per object whose asked method was passed over (`registry.resolve`): why, one
    #: "<method>: <reason>" per method skipped, joined by "; ". Empty: not written.
    fallback: dict = field(default_factory=dict)
    #: per object, which surface is checked (`extract.describe_surface`: "evaluated
    #: surface: 15,900 vertices after Subdivision Surface", "own mesh: 3,273 vertices"),
    #: when some object is checked on an evaluated surface. Empty: not written.
    surface: dict = field(default_factory=dict)
    #: the scene scanned (its full name) and the view layer it was evaluated in
    #: (`addon.scenes`); `core.report.merge` refuses reports of different ones. None: not written.
    scene: str | None = None
    view_layer: str | None = None
    #: the clearance D of `scan --clearance` (scene units), or None: no clearance stage,
    #: and the report has no near fields.
    clearance: float | None = None
    #: how the run saw the shot (`addon.trust`, docs/cli.md "What the run sees"):
    #: {"autoexec": the file's scripts ran, "failed_drivers": [[owner, path, expression],
    #: ...] checked as evaluated (--allow-failed-drivers), "missing": [{library, path,
    #: objects}, ...] not checked (--allow-missing)}, written at the top level (the
    #: panel's reports too: its session's Auto Run, and what it evaluates; nothing refused).
    #: Empty: not written.
    seen: dict = field(default_factory=dict)
    #: which surfaces were checked: "viewport" (the viewport's evaluation) or "render"
    #: (`scan --as-rendered`: Blender's render-mode evaluation).
    evaluation: str = "viewport"
    #: notes on the scan as a whole (the meshes that draw otherwise in renders). Empty:
    #: not written.
    notes: list = field(default_factory=list)

    def near_episodes(self) -> list:
        """Near episodes by bone pair (`core.contacts.clearance.NearEpisode`)."""
        return near_contacts.near_episodes(
            [(f.frame, [c.summary_json() for c in f.near_contacts])
             for f in self.frames if not f.not_checked])

    def episodes(self) -> list[contacts.Episode]:
        return contacts.episodes([(f.frame, f.pairs) for f in self.frames if not f.not_checked])

    def contact_episodes(self) -> list:
        """Episodes by bone pair (`core.contacts.groups.ContactEpisode`)."""
        return contact_groups.contact_episodes(
            [(f.frame, [c.summary_json() for c in f.contacts])
             for f in self.frames if not f.not_checked])

    def between_checked(self) -> bool:
        """Whether some frame's step to the next checked sample was checked
        (`scan --between-frames`)."""
        return any(f.between is not None for f in self.frames if not f.not_checked)

    def pass_steps(self) -> list[tuple]:
        """``[(frame, its step's pass-through contacts as in the report)]`` of the frames
        whose step was checked (`core.contacts.passing.pass_episodes`' input)."""
        return [(f.frame, [{"objects": [c.a, c.b], "bones": list(c.bones), "t": c.t,
                            "step": list(c.step)} for c in f.passes])
                for f in self.frames if not f.not_checked and f.between is not None]

    def pass_episodes(self) -> list:
        """Pass-through episodes by bone pair (`core.contacts.passing.PassEpisode`)."""
        return passing.pass_episodes(self.pass_steps())

    def to_json(self, max_total: int | None = None) -> dict:
        """The report document, the one schema of the headless scan and the panel's Scan
        Frame Range. `max_total` caps the pairs listed in all (the panel's stored Text):
        later frames keep their exact count (`pairs_total`) and `truncated`."""
        frames, room = [], (max_total if max_total is not None else -1)
        for f in self.frames:
            pairs = f.pairs if room < 0 else f.pairs[:room]
            if room >= 0:
                room -= len(pairs)
            entry = {"frame": f.frame, "pairs": [list(p) for p in pairs], "ms": round(f.ms, 4)}
            if f.not_checked:
                entry["not_checked"] = f.not_checked
            else:
                entry["contacts"] = contact_groups.to_json(f.contacts)
                if self.clearance is not None:
                    entry["near_contacts"] = [c.to_json(pairs=f.near_pairs is not None)
                                              for c in f.near_contacts]
                if f.near_pairs is not None:
                    entry["near"] = f.near_pairs
                if f.between is not None:
                    entry["between"] = f.between
                    entry["step_to"] = _frame_number(f.step_to)
                    entry["step_ms"] = round(f.step_ms, 4)
                    entry["passes_through"] = [c.to_json() for c in f.passes]
                if len(pairs) < f.n_pairs:
                    entry["pairs_total"] = f.n_pairs
                    entry["truncated"] = True
                    for c in entry["contacts"]:      # pairs listed up to the limit
                        c["n_pairs"] = len(c.pop("pairs"))
            frames.append(entry)
        doc = {
            **({"clearance": self.clearance} if self.clearance is not None else {}),
            **({"scene": self.scene, "view_layer": self.view_layer}
               if self.scene is not None else {}),
            "objects": self.objects,
            "evaluation": self.evaluation,
            **({"notes": list(self.notes)} if self.notes else {}),
            "refit": self.refit,
            **({"uncovered": self.uncovered} if self.uncovered else {}),
            **({"fallback": self.fallback} if self.fallback else {}),
            **({"surface": self.surface} if self.surface else {}),
            **self.seen,
            "complete": self.complete,
            "interrupted": self.interrupted,
            "frames_requested": self.frames_requested or len(self.frames),
            "frames": frames,
            "episodes": [e.to_json() for e in self.episodes()],
            "contact_episodes": [e.to_json() for e in
                                 contact_groups.episodes_of_report(frames)],
            "segments_limit": contact_groups.SEGMENTS_LIMIT_TEXT,
        }
        if self.clearance is not None:
            doc["near_episodes"] = [e.to_json() for e in near_contacts.episodes_of_report(frames)]
        if any(f.get("truncated") for f in frames):
            doc["limit"] = ("pairs are listed up to a limit (per frame, and "
                            f"{max_total} in all); pairs_total gives the exact counts")
        if self.source is not None:
            doc["source"] = self.source
        return doc

    def write_json(self, path: str) -> None:
        """Atomic: the file is always a whole document (old or new)."""
        core_report.write_atomic(path, core_report.dumps(self.to_json()))


def report_source(file: str, method: str, self_collision: bool, first_hit: bool,
                  ignore_rest_contacts: bool, allow: str | None = None,
                  sha256: str | None = None, evaluation: str = "viewport") -> dict:
    """The report's "source": what `core.report.merge` checks before combining reports. The file
    is identified by `sha256`, a digest of its content (`core.report.merge.file_digest`; None
    where the file on disk is not what was scanned, e.g. the panel's unsaved scene): farm
    machines mount one file at different paths, and two shots may hold files of one name.
    "path" (absolute) names it in messages, "file" is its base name; `allow` is a digest
    of the allow-list's content (None without one); `evaluation` the surfaces checked
    ("viewport", or "render": `scan --as-rendered`)."""
    return {"file": os.path.basename(file), "path": os.path.abspath(file) if file else "",
            "sha256": sha256, "method": method, "self": bool(self_collision),
            "first_hit": bool(first_hit),
            "filters": {"ignore_rest_contacts": bool(ignore_rest_contacts), "allow": allow},
            "evaluation": evaluation}


def _contact_from_json(c: dict) -> contact_groups.Contact:
    """A report's contact (`Contact.to_json`) as a `Contact`; a list the report cut (its
    pairs past `limit`, its segments past `segments_total`) stays cut."""
    return contact_groups.Contact(
        c["objects"][0], c["objects"][1],
        np.asarray(c.get("pairs", ()), dtype=np.int64).reshape(-1, 2), float(c["length"]),
        c["kind"], tuple(c["bones"]), np.asarray(c.get("center", (0.0, 0.0, 0.0)), np.float64),
        np.asarray(c.get("segments", ()), dtype=np.float64).reshape(-1, 6),
        t=c.get("t"), step=tuple(c["step"]) if "step" in c else None)


def _frame_number(x) -> int | float:
    """A sample's frame as JSON: an int for a whole frame, else its float (subframes)."""
    return int(x) if float(x) == int(x) else float(x)


def _near_from_json(c: dict) -> near_contacts.NearContact:
    """A report's near contact (`NearContact.to_json`) as a `NearContact`."""
    return near_contacts.NearContact(
        c["objects"][0], c["objects"][1],
        np.asarray(c.get("pairs", ()), dtype=np.int64).reshape(-1, 2), float(c["min_distance"]),
        np.asarray(c["points"], np.float64).reshape(2, 3), tuple(c["bones"]))


def from_json(doc: dict) -> ScanReport:
    """The `ScanReport` of a report document (`ScanReport.to_json`, or `core.report.merge`'s merged
    report), for what reads a report back: its episodes, contact episodes, JUnit XML. What
    the document does not keep is left empty: each frame's evaluation ms and methods, the
    build seconds."""
    frames = [FrameRecord(f["frame"], [tuple(p) for p in f["pairs"]], float(f.get("ms", 0.0)),
                          0.0, not_checked=f.get("not_checked", ""),
                          pairs_total=int(f.get("pairs_total", -1)),
                          contacts=[_contact_from_json(c) for c in f.get("contacts", ())],
                          near_contacts=[_near_from_json(c) for c in f.get("near_contacts", ())],
                          near_pairs=[list(p) for p in f["near"]] if "near" in f else None,
                          between=[list(p) for p in f["between"]] if "between" in f else None,
                          passes=[_contact_from_json(c) for c in f.get("passes_through", ())],
                          step_to=f.get("step_to"), step_ms=float(f.get("step_ms", 0.0)))
              for f in doc["frames"]]
    return ScanReport(list(doc["objects"]), frames, dict(doc.get("refit", {})), {},
                      complete=bool(doc.get("complete", True)),
                      interrupted=bool(doc.get("interrupted", False)),
                      frames_requested=int(doc.get("frames_requested", 0)),
                      source=doc.get("source"), uncovered=dict(doc.get("uncovered", {})),
                      fallback=dict(doc.get("fallback", {})),
                      surface=dict(doc.get("surface", {})),
                      scene=doc.get("scene"), view_layer=doc.get("view_layer"),
                      clearance=doc.get("clearance"),
                      seen={k: doc[k] for k in ("autoexec", "failed_drivers", "missing")
                            if k in doc},
                      evaluation=doc.get("evaluation", "viewport"),
                      notes=list(doc.get("notes", ())))


def scan_report(objects: list, records: list, settings, about: ReportContext,
                n_requested: int | None = None, interrupted: bool = False,
                evaluation: str = "viewport", surface: dict | None = None) -> ScanReport:
    """The report of a scan's `records` (complete when all `n_requested` frames are in) by
    its `core.scan.ScanSettings`:
    per object the methods used (`refit`), what its method's own self test leaves out
    (`uncovered`), why an asked method was passed over (`fallback`), with what the front
    end says of its origin (`about`) and, per object, the surface checked (`surface`,
    when some object is on an evaluated surface)."""
    n_requested = len(records) if n_requested is None else n_requested
    refit = {}
    for k, o in enumerate(objects):             # a loop over objects
        used = sorted({r.modes[k] for r in records if len(r.modes) > k})
        refit[o.name] = "+".join(used) if used else o.method
    uncovered = {}
    if settings.self_collision and settings.in_core:
        for o in objects:
            cov = derived(o, "coverage", lambda o=o: registry.get(o.method).coverage(o.rig, o.data))
            if cov is not None:
                uncovered[o.name] = cov
    where = about.where
    return ScanReport([o.name for o in objects], list(records), refit,
                      {o.name: o.build_seconds for o in objects},
                      complete=len(records) == n_requested and not interrupted,
                      interrupted=interrupted, frames_requested=n_requested,
                      source=about.source, uncovered=uncovered,
                      fallback={o.name: o.reason for o in objects if o.reason},
                      surface=surface or {}, scene=where[0] if where else None,
                      view_layer=where[1] if where else None, clearance=settings.clearance,
                      seen=dict(about.seen or {}), evaluation=evaluation,
                      notes=list(about.notes))
