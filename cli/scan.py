"""`scan FILE`: collide the characters of a file over a frame range, in this process or over
`--jobs` worker processes (`cli.jobs`), and write the JSON report (progressively) and JUnit
XML; the exit code says whether a frame collides (`--fail-on-collision`).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from . import scan_flags
from .errors import EXIT_CLEAN, EXIT_COLLISIONS, EXIT_INTERRUPTED, UsageError, describe
from .frames import parse_frames
from .interrupt import interrupt_on_signals, raise_if_interrupted
from .jobs import cap_jobs, scan_jobs, usable_cores
from .load import evaluation_line, print_notes, run_loaded, scene_line
from .outputs import (
    check_outputs,
    print_verdict,
    steps_text,
    write_contacts_csv,
    write_junit,
    write_output,
)
from .scan_flags import contact_filter, report_source, scan_method
from .snapshot import scan_snapshots

EPILOG = ("exit codes:\n"
          "  0    clean (or collisions found without --fail-on-collision)\n"
          "  1    --fail-on-collision and a frame has pairs beyond those allowed (or, with\n"
          "       --clearance, near contacts; with --between-frames, pass-throughs)\n"
          "  2    bad input (file, object, frame range, output path, allow-list), or a\n"
          "       shot the run cannot see as the artist does: drivers that fail, linked\n"
          "       data missing (see --enable-autoexec, --allow-failed-drivers,\n"
          "       --allow-missing)\n"
          "  130  interrupted (Ctrl-C or SIGTERM): the frames done are in the report, marked\n"
          "       \"interrupted\": true\n"
          "The JSON report is rewritten atomically at most once a second while the scan\n"
          "runs (\"complete\": false until the last frame).")


def add_parser(sub) -> None:
    from ..core.methods import registry

    sc = sub.add_parser(
        "scan", help="collide skinned meshes over a frame range, write JSON / JUnit",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    sc.add_argument("file", help=".blend, .glb or .gltf")
    scan_flags.add(sc, "--object")
    sc.add_argument("--frames", help="START:END inclusive, negative frames allowed "
                                     "(default: the scene's range)")
    for flag in ("--scene", "--self", "--method"):
        scan_flags.add(sc, flag)
    sc.add_argument("--mode", choices=tuple(registry.MODES),
                    help="older spelling of --method: " + ", ".join(
                        f"{k} = {v}" for k, v in registry.MODES.items()))
    scan_flags.add(sc, "--first-hit")
    sc.add_argument("--json", metavar="OUT", help="write the report here (progressively, atomically)")
    sc.add_argument("--junit", metavar="OUT.xml", help="write JUnit XML here: one test case per object pair "
                                    "(and per object with --self), failing with its episodes")
    sc.add_argument("--contacts-csv", metavar="OUT.csv",
                    help="write the contacts here as CSV: one row per contact and frame "
                         "(near contacts too, with --clearance)")
    sc.add_argument("--fail-on-collision", action="store_true",
                    help="exit 1 when any frame has colliding pairs (after --allow and "
                         "--ignore-rest-contacts)")
    for flag in ("--ignore-rest-contacts", "--allow", "--crossing-only", "--min-length",
                 "--ignore-bones", "--ignore-group", "--clearance", "--near-pairs",
                 "--between-frames", "--subframes", "--as-rendered", *scan_flags.SEEN_FLAGS):
        scan_flags.add(sc, flag)
    sc.add_argument("--step-to", metavar="F|none",
                    help="with --between-frames, the frame the last frame's step ends at "
                         "(a farm chunk's: the next chunk's first frame; `none`: no step "
                         "from the last frame); default: the next frame when it is in the "
                         "scene's range, else none")
    sc.add_argument("--snapshots", metavar="DIR",
                    help="also write a viewport picture of each collision episode's worst frame")
    sc.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="split the frames over N worker processes (each loads the file and "
                         "builds once; at most one per usable core); the same report as --jobs 1")
    sc.set_defaults(func=run)


def run(args) -> int:
    """Scan the frames (`--frames`, default the scene's range): the exit status."""
    frames = parse_frames(args.frames)
    allow, jobs = _check_flags(args, frames)
    if jobs > 1:
        if frames is None:
            frames = run_loaded(args, lambda bpy, scene, meshes, notes: _scene_frames(scene))
            _check_flags_frames(args, frames)
        if not os.path.isfile(args.file):
            raise UsageError(f"no such file: {args.file}")
        return scan_jobs(args, frames, jobs)
    return run_loaded(args, lambda *loaded: _scan_loaded(args, frames, allow, *loaded))


def _scan_loaded(args, frames, allow, bpy, scene, meshes, notes) -> int:
    """`run` once the file is loaded and the meshes picked (in the evaluation of
    `--as-rendered`, `load.run_loaded`)."""
    print(scene_line(scene))
    print(evaluation_line())
    print_notes(notes)
    differs = _render_note(args, scene, meshes)
    if differs:
        print(f"note: {differs}", flush=True)
    if frames is None:
        frames = _scene_frames(scene)
    if not args.self_collision and len(meshes) < 2:
        raise UsageError("only one object: pass --self for self-collision, or name two objects")
    frame_list = list(range(frames[0], frames[1] + 1))
    step_to, step_note = _last_step(args, scene, frame_list)
    sc = _scanner(args, scene, meshes, allow,
                  [n for n in (differs, step_note) if n])
    note = _range_note(scene, meshes, frame_list)
    if note:
        print(note, flush=True)
    if step_note:
        print(f"note: {step_note}", flush=True)
    return _scan_frames(args, sc, scene, frame_list, step_to)


def _last_step(args, scene, frame_list: list[int]) -> tuple[int | None, str | None]:
    """With `--between-frames`: (where the last frame's step ends, None for no step; the
    note that says when it has none). `--step-to F` (a farm chunk's, a `--jobs` worker's:
    the next chunk's first frame) or `none`, else the default rule
    (`core.report.chunks.last_step_to`: the next frame when it is in the scene's range)."""
    from ..core.report import chunks

    if not getattr(args, "between_frames", False):
        return None, None
    given = scan_flags.parse_step_to(getattr(args, "step_to", None))
    last = frame_list[-1]
    if given == "none":
        return None, (f"no step is checked from the last frame {last} (--step-to none)")
    if given is not None:
        if given <= last:
            raise UsageError(f"--step-to {given}: the last frame's step must end after it "
                             f"(frame {last})")
        return given, None
    to = chunks.last_step_to(last, scene.frame_start, scene.frame_end)
    if to is None:
        return None, (f"no step is checked from the last frame {last}: frame {last + 1} "
                      f"is past the scene's range {scene.frame_start}:{scene.frame_end} "
                      f"(--step-to {last + 1} checks it)")
    return to, None


def _check_flags(args, frames: tuple[int, int] | None = None) -> tuple[set, int]:
    """(the allowed polygon pairs, the number of worker processes): every flag checked
    before the file is loaded, each bad one a one-line error."""
    from ..core.contacts import pairs as contacts

    check_outputs(args)
    scan_flags.check_between(getattr(args, "between_frames", False),
                             getattr(args, "subframes", None), args.first_hit)
    step_to = scan_flags.parse_step_to(getattr(args, "step_to", None))
    if step_to is not None and not getattr(args, "between_frames", False):
        raise UsageError("--step-to sets where the last frame's step between frames ends: "
                         "it needs --between-frames")
    _check_flags_frames(args, frames)
    contact_filter(args)       # a bad --min-length: one line before the file is loaded
    scan_flags.parse_clearance(getattr(args, "clearance", None))       # a bad --clearance too
    if getattr(args, "near_pairs", False) and getattr(args, "clearance", None) is None:
        raise UsageError("--near-pairs lists the near pairs of --clearance: give --clearance D")
    allow = set()
    if args.allow:
        try:
            allow = contacts.load_allow_list(args.allow)
        except contacts.AllowListError as exc:
            raise UsageError(str(exc)) from None
    jobs = getattr(args, "jobs", 1)
    if jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {jobs}")
    if jobs > 1 and getattr(args, "snapshots", None) is not None:
        # Refused as asked, before the cap: the command is valid on every machine or none.
        raise UsageError("--snapshots cannot be combined with --jobs (run it with --jobs 1)")
    if getattr(args, "as_rendered", False) and getattr(args, "snapshots", None) is not None:
        raise UsageError("--snapshots cannot be combined with --as-rendered (picture a "
                         "frame with `snapshot --as-rendered`)")
    jobs, note = cap_jobs(jobs, usable_cores())
    if note:
        print(f"skin_collide: note: {note}", file=sys.stderr, flush=True)
    return allow, jobs


def _check_flags_frames(args, frames: tuple[int, int] | None) -> None:
    """`--step-to F` after the frames' last one (one line, exit 2, when not)."""
    step_to = scan_flags.parse_step_to(getattr(args, "step_to", None))
    if isinstance(step_to, int) and frames is not None and step_to <= frames[1]:
        raise UsageError(f"--step-to {step_to}: the last frame's step must end after it "
                         f"(frame {frames[1]})")


def _render_note(args, scene, meshes) -> str | None:
    """Without `--as-rendered`: the one line naming the checked meshes that renders draw
    otherwise (`addon.render_differences`); with it, the one naming the meshes Cycles
    subdivides adaptively; else None."""
    import bpy

    from ..addon import render_differences

    if getattr(args, "as_rendered", False):
        return render_differences.adaptive_note(scene, meshes)
    return render_differences.note(scene, bpy.context.view_layer, meshes)


def _scene_frames(scene) -> tuple[int, int]:
    """The scene's frame range (a one-line error when it is empty)."""
    if scene.frame_end < scene.frame_start:
        raise UsageError(f"the scene's frame range {scene.frame_start}:{scene.frame_end} is empty")
    return scene.frame_start, scene.frame_end


def _scanner(args, scene, meshes, allow: set, notes: list[str]):
    """The `addon.scanner.Scanner` of the flags (the collision data the panel stored when it
    fits, else built), its object lines and those of the rest contacts and allow-list."""
    from ..addon import extract, scanner
    from ..core.scan import ScanSettings

    between = bool(getattr(args, "between_frames", False))
    try:
        settings = ScanSettings(method=scan_method(args), self_collision=args.self_collision,
                                first_hit=args.first_hit,
                                clearance=scan_flags.clearance(args, scene),
                                near_pairs=bool(getattr(args, "near_pairs", False)),
                                allow=frozenset(allow), contact_filter=contact_filter(args),
                                between=between,
                                subframes=scan_flags.check_between(
                                    between, getattr(args, "subframes", None), args.first_hit))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    about = scanner.ReportContext(source=report_source(args), seen=getattr(args, "seen", {}),
                                  notes=tuple(notes), where=scanner.where(scene))
    try:
        built = _built_objects(meshes, settings.method, args.selection)
        sc = scanner.Scanner(meshes, settings=settings, objects=built,
                             selection=args.selection, about=about)
        if args.ignore_rest_contacts:
            sc.ignore_contacts(sc.rest_pose_contacts(scene))
    except extract.RigError as exc:
        raise UsageError(str(exc)) from None
    except ValueError as exc:           # an unknown object or group of --ignore-group
        raise UsageError(str(exc)) from None
    for obj in sc.objects:
        how = ("loaded from the .blend (built by the panel)" if built is not None
               else f"built in {obj.build_seconds:.2f} s")
        print(f"object {obj.name}: {obj.rig.n_triangles} triangles, {_volume_count(obj)}, "
              f"{how}; refit: {sc.refit_label(obj)}; {_surface_text(obj.rig)}")
    if args.ignore_rest_contacts:
        print(f"ignoring {sc.ignore.count} triangle pairs in contact in the rest pose")
    if args.allow:
        print(f"allowing {len(allow)} reviewed polygon pairs from {args.allow}")
    return sc


def _scan_frames(args, sc, scene, frame_list: list[int], step_to: int | None = None) -> int:
    """Scan the frames, a progress line each, the JSON report rewritten as they come
    (with `--between-frames`, the last frame's step to `step_to`, `_last_step`). A
    stop (Ctrl-C, SIGTERM, a rig that fails, an error of ours) keeps the frames done in
    the report, marked incomplete; then the outputs and the summary (`_finish`)."""
    from ..addon import extract
    from ..core.report import writing as core_report

    records: list = []
    interrupt_on_signals()
    t_start = time.perf_counter()
    writer = None
    if args.json:
        writer = core_report.ProgressiveJSON(
            args.json, lambda: sc.report(records, len(frame_list)).to_json(), interval=1.0)
        writer.flush()      # a valid, empty, incomplete report from the start
    estimated = [False]

    def progress(k, n, rec):
        raise_if_interrupted()
        _progress(k, n, rec)
        if writer is not None:
            writer.maybe_write()
        if not estimated[0] and n > 10 and (k + 1 >= 5 or time.perf_counter() - t_start > 5.0):
            estimated[0] = True
            per = (time.perf_counter() - t_start) / (k + 1)
            print(f"estimate: {per * 1000:.0f} ms per frame, about {_duration(per * (n - k - 1))} "
                  f"for the remaining {n - k - 1} frames", flush=True)

    try:
        report = sc.run(scene, frame_list, progress=progress, records=records,
                        last_step_to=step_to)
    except extract.RigError as exc:
        if writer is not None:
            # The last write, with why it stopped ("complete": false).
            doc = sc.report(records, len(frame_list)).to_json()
            doc["error"] = f"stopped after {len(records)} frames: {exc}"
            write_output(args.json, core_report.dumps(doc), "the report")
        raise UsageError(str(exc)) from None
    except core_report.OutputError as exc:
        # The report turned unwritable while the scan ran: stop, keep the frames done.
        doc = sc.report(records, len(frame_list)).to_json()
        doc["error"] = f"stopped after {len(records)} frames: {exc}"
        kept = core_report.keep_elsewhere(args.json, core_report.dumps(doc))
        raise UsageError(f"{exc}; the report of the {len(records)} frames done is kept "
                         f"in {kept}") from None
    except KeyboardInterrupt:
        report = sc.report(records, len(frame_list), interrupted=True)
        _write_outputs(args, report)
        where = f"; the report in {args.json} is marked interrupted" if args.json else ""
        print(f"skin_collide: interrupted after {len(records)} of {len(frame_list)} frames{where}",
              file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Exception as exc:
        # A bug of ours: keep the frames done, as a valid report marked incomplete and
        # with the error, then let `main` print the one line.
        if args.json:
            doc = sc.report(records, len(frame_list)).to_json()   # complete: false
            doc["error"] = f"internal error after {len(records)} frames: {describe(exc)}"
            # (If that fails too, its one line says where the report, with the error, is.)
            write_output(args.json, core_report.dumps(doc), "the report")
        raise
    late = _late_drivers(args, sc)
    if late:
        # A driver failed at a frame the characters' choice did not sample: no verdict,
        # the report kept with why.
        if args.json:
            doc = report.to_json()
            doc["error"] = late
            write_output(args.json, core_report.dumps(doc), "the report")
        raise UsageError(late)
    return _finish(args, sc, scene, report, len(frame_list))


def _late_drivers(args, sc) -> str | None:
    """The one line for drivers that failed during the scan and not before (`load`
    checked those), unless `--allow-failed-drivers`; None when there are none."""
    from ..addon import trust

    if getattr(args, "allow_failed_drivers", False):
        return None
    failed = trust.failed_drivers(sc.meshes)
    if not failed:
        return None
    return "during the scan: " + trust.drivers_line(failed, bool((sc.about.seen or {}).get("autoexec")))


def _write_outputs(args, report) -> str:
    """The report's files (`--json`, `--junit`, `--contacts-csv`), its JSON form made
    once; returns the paths written, for the summary line."""
    from ..core.report import writing as core_report

    csv_out = getattr(args, "contacts_csv", None)
    doc = report.to_json() if args.json or csv_out else None
    if args.json:
        write_output(args.json, core_report.dumps(doc), "the report")
    if args.junit:
        write_junit(args, report)
    write_contacts_csv(args, doc)
    return ", ".join(p for p in (args.json, args.junit, csv_out) if p)


def _finish(args, sc, scene, report, n_frames: int) -> int:
    """Write the outputs, print the summary (the verdict last): the exit status."""
    wrote = _write_outputs(args, report)
    colliding = [r.frame for r in report.frames if r.pairs]
    ms = np.array([r.ms for r in report.frames])
    print(f"{len(colliding)} of {n_frames} frames collide{steps_text(report)}; query ms "
          f"mean {ms.mean():.2f} max {ms.max():.2f}" + (f"; wrote {wrote}" if wrote else ""))
    scan_snapshots(args, sc, scene, report)
    failing = print_verdict(report)       # the verdict stays the last line
    if args.fail_on_collision and failing:
        return EXIT_COLLISIONS
    return EXIT_CLEAN


def _progress(k: int, n: int, rec) -> None:
    width = 20
    done = int(width * (k + 1) / n)
    bar = "#" * done + "." * (width - done)
    print(f"[{bar}] {k + 1:>4}/{n} frame {rec.frame:>5}: {len(rec.pairs):>6} pairs "
          f"{rec.ms:8.2f} ms query ({'/'.join(sorted(set(rec.modes)))}), "
          f"{rec.eval_ms:7.1f} ms Blender evaluation", flush=True)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _range_note(scene, meshes, frame_list: list[int]) -> str | None:
    """One line when requested frames lie outside the scene range or the actions."""
    from ..addon import report

    scene_range = [(scene.frame_start, scene.frame_end)]
    acts = report.action_ranges(meshes)
    out_scene = report.count_outside(frame_list, scene_range)
    out_act = report.count_outside(frame_list, acts) if acts else 0
    if not out_scene and not out_act:
        return None
    acts_text = ", ".join(f"{a}:{b}" for a, b in acts) if acts else "none"
    return (f"note: {out_scene} of {len(frame_list)} frames lie outside the scene range "
            f"{scene.frame_start}:{scene.frame_end} and {out_act} outside the action "
            f"range(s) {acts_text} (the pose holds still there)")


def _surface_text(rig) -> str:
    """Which surface the scan checks, and what moves a rigid prop, for the object line."""
    from ..addon import extract

    text = f"surface: {extract.describe_surface(rig)}"
    if rig.rigid and rig.unsupported:
        return text + f"; no armature, moved by {rig.rigid}: refitted from Blender's positions"
    return text + (f"; rigid, moves with {rig.rigid}" if rig.rigid else "")


def _volume_count(obj) -> str:
    """What the object's method built, for the scan's object line (`Method.summary`)."""
    return obj.summary or "no volumes of its own"


def _built_objects(meshes, method: str, selection=None):
    """The collision data stored in the .blend by the panel's Build (`addon.storage`), when
    every mesh has it, it is not stale and it was built for the method this scan resolves
    to; else None (the scan builds). Render-farm chunks of a built file thus skip the
    build; the pairs are the same either way."""
    import bpy

    from ..addon import evaluation, motion, properties, storage
    from ..core.methods import registry

    if not hasattr(bpy.types.Object, "skin_collide"):
        # Headless, the add-on is not registered: its properties (only they, no handlers)
        # make the stored data readable.
        for cls in properties.CLASSES:
            bpy.utils.register_class(cls)
        properties.register()
    if evaluation.mode() != evaluation.VIEWPORT:
        return None         # the panel builds on the viewport's surfaces
    out = []
    for ob in meshes:
        try:
            if not storage.has_data(ob) or storage.stale_reason(ob):
                return None
            obj = storage.load(ob)
            if obj is None or obj.name != ob.name_full or \
                    registry.resolve(method, obj.rig)[0].id != obj.method:
                return None
            if selection is not None and motion.verify(ob, obj.rig, selection.sampled):
                return None         # its model no longer holds: the scan builds afresh
        except (ValueError, KeyError):
            return None
        out.append(obj)
    return out
