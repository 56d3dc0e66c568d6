"""Command line: ``python -m skin_collide doctor|scan|demo|sphere-set ...`` (headless; bpy imported lazily).

Exit codes: 0 success (a clean scan), 1 collisions found (`scan --fail-on-collision`),
2 bad input (missing or unreadable file, no character mesh, unknown object, empty frame
range, an output path that cannot be written), with a one-line message on stderr,
130 interrupted (Ctrl-C; the frames done are kept in the report, marked interrupted).
stdout carries only the command's own lines; Blender's log lines go to stderr.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time

import numpy as np


def exit_process(status: int):
    """Flush stdout and stderr and end the process now, without the interpreter's exit
    handlers. With the pip bpy imported this is how a finished command (or test run, or
    script) leaves: bpy 4.5 LTS hangs for ever in a static destructor at exit once a file
    was read (its audio device close thread still waits on a condition variable that the
    destructor destroys; docs/versions.md). Call it only once the work is written."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


class UsageError(Exception):
    """Bad input: reported as one line on stderr, exit code 2."""


def _import_bpy():
    try:
        import bpy  # noqa: F401
    except ImportError:
        raise UsageError("the 'bpy' module is not installed: run `bash dev skin_collide ...` "
                         "or `pip install bpy==5.0.1` (Python 3.11)") from None
    return bpy


def parse_frames(text: str | None) -> tuple[int, int] | None:
    """'START:END' (inclusive) -> (start, end); None stays None."""
    if text is None:
        return None
    try:
        a, b = text.split(":")
        start, end = int(a), int(b)
    except ValueError:
        raise UsageError(f"--frames expects START:END, got '{text}'") from None
    if end < start:
        raise UsageError(f"empty frame range {start}:{end}")
    return start, end


def _select_meshes(scene, names: list[str] | None, frames: tuple[int, int] | None = None):
    """The meshes to check (`addon.motion.Selection`): those `names` give, each by its full
    name (``Cesium_Man [char.blend]`` for a linked one, ``Crowd.001/Body`` for a mesh a
    collection instance draws) or a bare name only one drawn mesh has, or every mesh the
    scene's view layer draws that Blender's evaluation moves in `frames` (default the
    scene's range), with the notes on the meshes left out (none when names are given)."""
    import bpy

    from .addon import drawn, extract, identity, motion

    span = list(range(frames[0], frames[1] + 1)) if frames else None
    if not names:
        sel = motion.characters(scene, span)
        if not sel.meshes:
            raise UsageError("no character in the file: no drawn mesh that an armature, a "
                             "parent, a constraint, animation, a shape key, a cache or a "
                             "deforming modifier moves"
                             + ("; " + "; ".join(sel.notes) if sel.notes else ""))
        return sel
    every = drawn.drawn_meshes(bpy.context.evaluated_depsgraph_get())
    chosen = []
    for n in names:
        try:
            m = identity.find(every, n)
            ob = None if m is not None else identity.find(scene.objects, n)
        except identity.AmbiguousName as exc:
            raise UsageError(str(exc)) from None
        if m is None and ob is None:
            raise UsageError(f"no object named '{n}' in the file")
        if m is None:
            if ob.type != "MESH":
                raise UsageError(f"object '{n}' is not a mesh")
            why = motion.left_out_reason(ob, bpy.context.evaluated_depsgraph_get())
            raise UsageError(f"object '{n}' is not checked: "
                             f"{why or 'Blender does not draw it'}")
        chosen.append(m)
    sel = motion.characters(scene, span, named=chosen)
    for m in chosen:
        if m not in sel.meshes:
            note = next((x for x in sel.notes if x.startswith(f"'{m.name}'")), "")
            raise UsageError(f"object '{m.name_full}' is not a character: "
                             + (note or extract.skip_note(drawn.source_of(m))))
    sel.notes = []
    return sel


# One ExitStack per running `main` (nested for `farm-commands --run`): the scene `_load`
# made the context's (`addon.scenes.use`) is left when the command ends.
_SCENE_CONTEXTS: list = []


def _leave_scene() -> None:
    """Leave the scene a previous `_load` of this command entered (before a file is read:
    a context override must not outlive the data it points at)."""
    if _SCENE_CONTEXTS:
        _SCENE_CONTEXTS[-1].close()


def _load(args):
    """Open the file, make the scene of `--scene` (default: the saved window's) the
    context's with its view layer (`addon.scenes`), and pick the meshes: (bpy, scene,
    meshes, notes on the meshes skipped); UsageError on bad input."""
    bpy = _import_bpy()
    from .addon import files, report, scenes

    _leave_scene()
    try:
        report.load_quietly(args.file)
    except files.FileError as exc:
        raise UsageError(str(exc)) from None
    try:
        scene, layer = scenes.choose(getattr(args, "scene", None))
    except scenes.SceneError as exc:
        raise UsageError(str(exc)) from None
    use = scenes.use(scene, layer)
    if _SCENE_CONTEXTS:
        _SCENE_CONTEXTS[-1].enter_context(use)
    else:
        use.__enter__()         # outside `main`: for the rest of the process
    try:
        args.selection = _select_meshes(scene, args.object,
                                        parse_frames(getattr(args, "frames", None)))
        meshes, notes = args.selection.meshes, args.selection.notes
    except UsageError as exc:
        if args.object:
            raise
        # No character: say in which scene, and which scenes have some.
        text, prefix = str(exc), "no character in the file"
        if text.startswith(prefix):
            text = f"no character in scene '{scene.name_full}' (view layer '{layer.name}')" \
                + text[len(prefix):]
        raise UsageError(f"{text}; {scenes.characters_hint(scene)}") from None
    return bpy, scene, meshes, notes


def _scene_line(scene) -> str:
    """The console header's scene line: the scene checked and its view layer (the
    context's, set by `_load`)."""
    import bpy

    return f"scene: {scene.name_full} (view layer {bpy.context.view_layer.name})"


def _print_notes(notes: list[str]) -> None:
    """One `note:` line per mesh skipped (`_select_meshes`)."""
    for note in notes:
        print(f"note: {note}", flush=True)


def cmd_doctor(args) -> int:
    frames_override = parse_frames(args.frames)
    bpy, scene, meshes, notes = _load(args)
    from .addon import doctor, extract, motion
    print(f"file: {args.file}")
    print(_scene_line(scene))
    _print_notes(notes)
    sel = args.selection
    try:
        rigs = motion.rigs(meshes, sel.sampled, sel.moved)
    except extract.RigError as exc:
        raise UsageError(str(exc)) from None
    for ob, rig in zip(meshes, rigs):
        try:
            rep = doctor.describe(ob, rig)
        except extract.RigError as exc:
            raise UsageError(str(exc)) from None
        arms = extract.armatures_of(ob)
        if frames_override:
            frames = list(range(frames_override[0], frames_override[1] + 1))
            label = f"frames {frames[0]}-{frames[-1]}"
        else:
            frames, label = doctor.frames_to_check(scene, arms[0] if arms else None)
        doctor.measure_deviation(scene, ob, rep, frames)
        rep = doctor.settle(ob, rep, motion.SKIN_TOLERANCE)
        print(f"mesh: {rep.name}")
        for key, value in rep.facts:
            print(f"  {key}: {value}")
        if rep.rig.surface:
            label = ("not measured: the evaluated surface is refitted from Blender's "
                     "positions, nothing skins it")
        print(f"  frames: {label}")
        print(f"max_deviation: {rep.max_deviation:.3e}")
        print(f"max_deviation_relative: {rep.max_deviation_relative:.3e}")
    return 0


def _progress(k: int, n: int, rec) -> None:
    width = 20
    done = int(width * (k + 1) / n)
    bar = "#" * done + "." * (width - done)
    print(f"[{bar}] {k + 1:>4}/{n} frame {rec.frame:>5}: {len(rec.pairs):>6} pairs "
          f"{rec.ms:8.2f} ms query ({'/'.join(sorted(set(rec.modes)))}), "
          f"{rec.eval_ms:7.1f} ms Blender evaluation", flush=True)


EXIT_CLEAN, EXIT_COLLISIONS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _check_outputs(args) -> None:
    """Every output of a scan (JSON, JUnit, the snapshots folder), before the file is
    loaded and the build starts: a scan must not fail at its end for want of a place to
    write its work, nor replace a file its user could not write (`core.report.writing`)."""
    from .core.report import writing as core_report

    try:
        for flag, path in (("--json", args.json), ("--junit", getattr(args, "junit", None))):
            if path is not None:
                core_report.check_output_path(path, flag)
        if getattr(args, "snapshots", None) is not None:
            core_report.check_output_folder(args.snapshots, "--snapshots", "frame_*.png")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.json is not None and getattr(args, "junit", None) is not None and \
            os.path.abspath(args.json) == os.path.abspath(args.junit):
        raise UsageError("--json and --junit name the same file")


def _write_output(path: str, text: str, what: str) -> None:
    """Write an output atomically. If it cannot be written there (it turned read-only, or
    its folder did, since `_check_outputs`), the text goes to a new file beside it or in
    the temporary folder, and the one-line error says where: work done is never thrown
    away for want of its output file."""
    from .core.report import writing as core_report

    try:
        core_report.write_atomic(path, text)
    except core_report.OutputError as exc:
        kept = core_report.keep_elsewhere(path, text)
        raise UsageError(f"{exc}; {what} is kept in {kept}") from None


def _range_note(scene, meshes, frame_list: list[int]) -> str | None:
    """One line when requested frames lie outside the scene range or the actions."""
    from .addon import report

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


def cmd_scan(args) -> int:
    from .core.contacts import pairs as contacts
    from .core.report import writing as core_report

    frames = parse_frames(args.frames)
    _check_outputs(args)
    _contact_filter(args)       # a bad --min-length: one line before the file is loaded
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
    jobs, note = cap_jobs(jobs, usable_cores())
    if note:
        print(f"skin_collide: note: {note}", file=sys.stderr, flush=True)
    if jobs > 1:
        if frames is None:
            _, scene, _, _ = _load(args)
            if scene.frame_end < scene.frame_start:
                raise UsageError(f"the scene's frame range {scene.frame_start}:{scene.frame_end} is empty")
            frames = (scene.frame_start, scene.frame_end)
        if not os.path.isfile(args.file):
            raise UsageError(f"no such file: {args.file}")
        return _scan_jobs(args, frames, jobs)
    bpy, scene, meshes, notes = _load(args)
    print(_scene_line(scene))
    _print_notes(notes)
    from .addon import extract, scanner
    if frames is None:
        if scene.frame_end < scene.frame_start:
            raise UsageError(f"the scene's frame range {scene.frame_start}:{scene.frame_end} is empty")
        frames = (scene.frame_start, scene.frame_end)
    if not args.self_collision and len(meshes) < 2:
        raise UsageError("only one object: pass --self for self-collision, or name two objects")
    try:
        built = _built_objects(meshes, _scan_method(args), args.selection)
        sc = scanner.Scanner(meshes, self_collision=args.self_collision,
                             first_hit=args.first_hit, method=_scan_method(args),
                             objects=built, selection=args.selection)
        sc.allow_polygons = allow
        sc.contact_filter = _contact_filter(args)
        sc.zones = _zones(meshes, sc)
        sc.source = _source(args)
        sc.where = scanner.where(scene)
        if args.ignore_rest_contacts:
            sc.ignore = sc.rest_pose_contacts(scene)
    except extract.RigError as exc:
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
    frame_list = list(range(frames[0], frames[1] + 1))
    note = _range_note(scene, meshes, frame_list)
    if note:
        print(note, flush=True)

    records: list = []
    _interrupt_on_signals()
    t_start = time.perf_counter()
    writer = None
    if args.json:
        writer = core_report.ProgressiveJSON(
            args.json, lambda: sc.report(records, len(frame_list)).to_json(), interval=1.0)
        writer.flush()      # a valid, empty, incomplete report from the start
    estimated = [False]

    def progress(k, n, rec):
        _raise_if_interrupted()
        _progress(k, n, rec)
        if writer is not None:
            writer.maybe_write()
        if not estimated[0] and n > 10 and (k + 1 >= 5 or time.perf_counter() - t_start > 5.0):
            estimated[0] = True
            per = (time.perf_counter() - t_start) / (k + 1)
            print(f"estimate: {per * 1000:.0f} ms per frame, about {_duration(per * (n - k - 1))} "
                  f"for the remaining {n - k - 1} frames", flush=True)

    try:
        report = sc.run(scene, frame_list, progress=progress, records=records)
    except extract.RigError as exc:
        if writer is not None:
            # The last write, with why it stopped ("complete": false).
            doc = sc.report(records, len(frame_list)).to_json()
            doc["error"] = f"stopped after {len(records)} frames: {exc}"
            _write_output(args.json, core_report.dumps(doc), "the report")
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
        if args.json:
            _write_output(args.json, core_report.dumps(report.to_json()), "the report")
        if args.junit:
            _write_junit(args, report)
        where = f"; the report in {args.json} is marked interrupted" if args.json else ""
        print(f"skin_collide: interrupted after {len(records)} of {len(frame_list)} frames{where}",
              file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except Exception as exc:
        # A bug of ours: keep the frames done, as a valid report marked incomplete and
        # with the error, then let `main` print the one line.
        if args.json:
            doc = sc.report(records, len(frame_list)).to_json()   # complete: false
            doc["error"] = f"internal error after {len(records)} frames: {_describe(exc)}"
            # (If that fails too, its one line says where the report, with the error, is.)
            _write_output(args.json, core_report.dumps(doc), "the report")
        raise
    if args.json:
        _write_output(args.json, core_report.dumps(report.to_json()), "the report")
    if args.junit:
        _write_junit(args, report)
    colliding = [r.frame for r in report.frames if r.pairs]
    ms = np.array([r.ms for r in report.frames])
    wrote = ", ".join(p for p in (args.json, args.junit) if p)
    print(f"{len(colliding)} of {len(frame_list)} frames collide; query ms mean {ms.mean():.2f} "
          f"max {ms.max():.2f}" + (f"; wrote {wrote}" if wrote else ""))
    _scan_snapshots(args, sc, scene, report)
    eps = report.episodes()
    _print_contact_episodes(report)
    print(contacts.summary(eps))          # the verdict stays the last line
    if args.fail_on_collision and eps:
        return EXIT_COLLISIONS
    return EXIT_CLEAN


def _print_contact_episodes(report) -> None:
    """The contact episodes by bone pair (bounded), when the report has contacts."""
    from .core.contacts import groups as contact_groups

    ce = report.contact_episodes()
    if ce is not None and ce:
        print(contact_groups.summary(ce))


def _zones(meshes, sc) -> dict:
    """`--ignore-group OBJECT GROUP`: per scanned object index, its polygons inside the
    groups (one line, exit 2, for an unknown object or group)."""
    from .addon import zones

    try:
        return zones.zone_masks(meshes, sc.objects, sc.contact_filter.ignore_groups)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _surface_text(rig) -> str:
    """Which surface the scan checks, and what moves a rigid prop, for the object line."""
    from .addon import extract

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

    from .addon import motion, properties, storage
    from .core.methods import registry

    if not hasattr(bpy.types.Object, "skin_collide"):
        # Headless, the add-on is not registered: its properties (only they, no handlers)
        # make the stored data readable.
        for cls in properties.CLASSES:
            bpy.utils.register_class(cls)
        properties.register()
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


def _source(args) -> dict:
    """The report's "source": what `merge` checks before combining chunk reports (the
    file's content digest and path, the method, the flags that change which pairs are
    reported, and the allow-list's content digest)."""
    import hashlib

    from .core.report import merge as core_merge

    allow = None
    if args.allow:
        with open(args.allow, "rb") as fh:
            allow = hashlib.sha256(fh.read()).hexdigest()[:16]
    from .addon import scanner

    src = scanner.report_source(args.file, _scan_method(args), args.self_collision,
                                args.first_hit, args.ignore_rest_contacts, allow,
                                sha256=core_merge.file_digest(args.file))
    src["filters"].update(_contact_filter(args).describe())
    return src


def _contact_filter(args):
    """The contact filters of the scan flags (one line, exit 2, when one is bad)."""
    from .core.contacts import filters as contact_filters

    groups: dict = {}
    for ob, group in getattr(args, "ignore_group", None) or []:
        groups.setdefault(ob, set()).add(group)
    try:
        return contact_filters.ContactFilter(
            crossing_only=getattr(args, "crossing_only", False),
            min_length=getattr(args, "min_length", None) or 0.0,
            ignore_bones={tuple(p) for p in getattr(args, "ignore_bones", None) or []},
            ignore_groups=groups)
    except ValueError as exc:
        raise UsageError(f"--min-length: {exc}") from None


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (a container's or `taskset`'s
    share of the machine), else the machine's count."""
    count = getattr(os, "process_cpu_count", None)          # Python 3.13
    if count is not None:
        n = count()
    elif hasattr(os, "sched_getaffinity"):
        n = len(os.sched_getaffinity(0))
    else:
        n = os.cpu_count()
    return max(1, n or 1)


def cap_jobs(asked: int, cores: int) -> tuple[int, str | None]:
    """(the number of workers, a note when fewer than asked): at most one worker per core.
    Each worker is a Blender process of its own (0.56 GB for MakeHuman) and the workers
    are CPU-bound, so more than the cores only costs memory: `--jobs 99` on a long shot
    would ask for ~55 GB."""
    if asked <= cores:
        return asked, None
    return cores, (f"--jobs {asked} capped at {cores}: the {cores} "
                   f"core{'s' if cores != 1 else ''} this process may use")


def _chunks(start: int, end: int, n: int) -> list[tuple[int, int]]:
    """[start, end] split into at most `n` contiguous chunks of nearly equal length
    (`core.report.chunks`, which also cuts a render farm's chunks)."""
    from .core.report import chunks

    return chunks.evenly(start, end, n)


def _worker_flags(args) -> list[str]:
    """The scan flags a worker repeats (the report's content), not the outputs."""
    out = []
    if getattr(args, "scene", None) is not None:
        out += ["--scene", args.scene]
    for name in args.object or []:
        out += ["--object", name]
    if args.self_collision:
        out.append("--self")
    out += ["--method", _scan_method(args)]
    if args.first_hit:
        out.append("--first-hit")
    if args.ignore_rest_contacts:
        out.append("--ignore-rest-contacts")
    if args.allow:
        out += ["--allow", os.path.abspath(args.allow)]
    if getattr(args, "crossing_only", False):
        out.append("--crossing-only")
    if getattr(args, "min_length", None):
        out += ["--min-length", repr(float(args.min_length))]
    for a, b in getattr(args, "ignore_bones", None) or []:
        out += ["--ignore-bones", a, b]
    for ob, group in getattr(args, "ignore_group", None) or []:
        out += ["--ignore-group", ob, group]
    return out


WORKER_EXIT_GRACE = 5.0
"""Seconds a worker may take to exit once its final report is on disk. The pip bpy 4.5 hung
for ever at process exit (avoided by `os._exit` in __main__.py); a worker that hangs after
its work is done is killed then, and its report, whole, is kept."""


def _read_report(path: str) -> dict | None:
    """A worker's report, or None while there is none (it is replaced atomically, so a
    file that exists is whole)."""
    from .core.report import merge as core_merge

    try:
        return core_merge.load(path)
    except core_merge.MergeError:
        return None


def _is_final(doc: dict) -> bool:
    """A worker's last write: every frame in, or it stopped and said why (Ctrl-C, an error)."""
    return bool(doc.get("complete") or doc.get("interrupted") or "error" in doc)


class _Worker:
    """One chunk's worker process, and what the parent knows of it."""

    def __init__(self, index: int, count: int, chunk: tuple[int, int], part: str, log: str,
                 proc):
        self.chunk, self.part, self.log, self.proc = chunk, part, log, proc
        self.label = f"worker {index + 1}/{count} (frames {chunk[0]}-{chunk[1]})"
        self.final_at: float | None = None      # when its final report was seen
        self._seen = None                       # the part file's identity when last read

    def notice_final_report(self) -> None:
        """Read the report again when the file changed; note when it is the final one."""
        if self.final_at is not None:
            return
        try:
            st = os.stat(self.part)
        except OSError:
            return
        key = (st.st_ino, st.st_mtime_ns, st.st_size)   # a rewrite is a new inode
        if key == self._seen:
            return
        self._seen = key
        doc = _read_report(self.part)
        if doc is not None and _is_final(doc):
            self.final_at = time.monotonic()


def _exit_words(code: int) -> str:
    import signal

    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def _wait_workers(workers: list[_Worker], grace: float = WORKER_EXIT_GRACE) -> None:
    """Until every worker has ended, saying so as each does. A worker that wrote its final
    report but is still running `grace` seconds later is killed: its work is on disk, and
    the parent must never wait for ever."""
    import subprocess

    running = list(workers)
    while running:
        for w in list(running):
            code = w.proc.poll()
            w.notice_final_report()
            if code is not None:
                done = "finished" if code in (EXIT_CLEAN, EXIT_COLLISIONS) else "ended"
                print(f"{w.label} {done}, {_exit_words(code)}", flush=True)
                running.remove(w)
            elif w.final_at is not None and time.monotonic() - w.final_at > grace:
                w.proc.kill()
                w.proc.wait()
                print(f"{w.label} wrote its report but did not exit within {grace:.0f} s: "
                      "stopped it", flush=True)
                running.remove(w)
        if running:
            try:
                running[0].proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass


def _why_not_finished(w: _Worker, doc: dict | None) -> str:
    """Why a worker's chunk is not whole: its own one-line error, else how it ended."""
    try:
        with open(w.log, errors="replace") as fh:
            lines = [ln.strip() for ln in fh if ln.startswith("skin_collide:")
                     and not ln.startswith("skin_collide: note:")]
    except OSError:
        lines = []
    if lines:
        return lines[-1][len("skin_collide: "):].removeprefix("error: ")
    if doc is not None and doc.get("interrupted"):
        return "it was interrupted"
    return _exit_words(w.proc.returncode)


def _scan_jobs(args, frames: tuple[int, int], jobs: int) -> int:
    """`scan --jobs N`: one worker process per contiguous chunk of frames (each loads the
    file and builds once), their reports merged into one. Ctrl-C (or SIGTERM) stops every
    worker; the frames they finished are kept, the report marked interrupted. A worker
    that ends without finishing its chunk fails the scan (exit 2, one line) and the report
    keeps every frame the workers did."""
    import shutil
    import signal
    import subprocess
    import tempfile

    from .core.contacts import pairs as contacts
    from .core.report import merge as core_merge
    from .core.report import writing as core_report

    chunks = _chunks(frames[0], frames[1], jobs)
    tmp = tempfile.mkdtemp(prefix="skin_collide_jobs_")
    keep_tmp = False
    base = [sys.executable, "-m", "skin_collide", "scan", os.path.abspath(args.file)]
    flags = _worker_flags(args)
    print(f"scanning frames {frames[0]}-{frames[1]} in {len(chunks)} worker processes: "
          + ", ".join(f"{a}-{b}" for a, b in chunks), flush=True)
    _interrupt_on_signals()
    workers: list[_Worker] = []
    interrupted = False
    t0 = time.perf_counter()
    try:
        for k, (a, b) in enumerate(chunks):
            part = os.path.join(tmp, f"part_{k}.json")
            log = os.path.join(tmp, f"part_{k}.log")
            with open(log, "w") as fh:
                proc = subprocess.Popen(base + [f"--frames={a}:{b}", "--json", part] + flags,
                                        stdout=fh, stderr=subprocess.STDOUT)
            workers.append(_Worker(k, len(chunks), (a, b), part, log, proc))
        _wait_workers(workers)
    except KeyboardInterrupt:
        interrupted = True
        procs = [w.proc for w in workers]
        # A Ctrl-C in a terminal reaches the workers too (same process group): give them a
        # moment to write their reports, then interrupt those still running.
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and any(p.poll() is None for p in procs):
            time.sleep(0.05)
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    try:
        reports = [_read_report(w.part) for w in workers]
        # Unfinished: no complete report (a worker we stopped after its final report, or
        # killed on Ctrl-C, is judged by its report, not its exit status).
        unfinished = [(w, d) for w, d in zip(workers, reports)
                      if not (d is not None and d.get("complete"))]
        docs = [d for d in reports if d is not None]
        failure = None
        if unfinished and not interrupted:
            w, d = unfinished[0]
            why = _why_not_finished(w, d)
            if not any(doc["frames"] for doc in docs):
                # Nothing was scanned (a bad --object, an unreadable file): the worker's own
                # line is the message, as `--jobs 1` would print it.
                raise UsageError(why if w.proc.returncode == EXIT_USAGE and why
                                 else f"{w.label} did not finish: {why}")
            others = len(unfinished) - 1
            failure = (f"{w.label} did not finish: {why}"
                       + (f" (and {others} other worker{'s' if others > 1 else ''})"
                          if others else ""))
        if not docs:
            print("skin_collide: interrupted before any frame was scanned", file=sys.stderr)
            return EXIT_INTERRUPTED
        try:
            doc = core_merge.merge_reports(docs)
        except core_merge.MergeError as exc:
            raise UsageError(str(exc)) from None
        # The workers' own object lines stay in their logs: say which scene they scanned,
        # which method each object got, and why when the asked one was passed over (as
        # `scan --jobs 1` does).
        if "scene" in doc:
            print(f"scene: {doc['scene']} (view layer {doc.get('view_layer')})", flush=True)
        for name in doc["objects"]:
            why = doc.get("fallback", {}).get(name)
            surface = doc.get("surface", {}).get(name)
            print(f"object {name}: refit: {doc['refit'].get(name, '')}"
                  + (f" (instead of {why})" if why else "")
                  + (f"; surface: {surface}" if surface else ""), flush=True)
        n_frames = frames[1] - frames[0] + 1
        doc["frames_requested"] = n_frames
        if interrupted or failure or len(doc["frames"]) < n_frames:
            doc["interrupted"] = doc["interrupted"] or interrupted
            doc["complete"] = False
        done = len(doc["frames"])
        if failure:
            doc["error"] = failure
            if args.json:
                _write_output(args.json, core_report.dumps(doc), "the report")
                failure += (f"; the report in {args.json} keeps the {done} frames done "
                            "(\"complete\": false)")
            raise UsageError(failure)
        if args.json:
            _write_output(args.json, core_report.dumps(doc), "the report")
        report = _report_from_doc(doc)
        if args.junit:
            _write_junit(args, report)
        if interrupted:
            where = f"; the report in {args.json} is marked interrupted" if args.json else ""
            print(f"skin_collide: interrupted after {done} of {n_frames} frames{where}",
                  file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        colliding = sum(1 for f in doc["frames"] if f["pairs"])
        wrote = ", ".join(p for p in (args.json, args.junit) if p)
        print(f"{colliding} of {n_frames} frames collide; {len(workers)} workers, "
              f"{time.perf_counter() - t0:.1f} s wall" + (f"; wrote {wrote}" if wrote else ""))
        eps = report.episodes()
        _print_contact_episodes(report)
        print(contacts.summary(eps))
        if args.fail_on_collision and eps:
            return EXIT_COLLISIONS
        return EXIT_CLEAN
    except core_report.OutputError as exc:
        # Not even a kept copy could be written: the workers' reports stay where they are.
        keep_tmp = True
        raise UsageError(f"{exc}; the workers' reports are kept in {tmp}") from None
    finally:
        if not keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _report_from_doc(doc: dict):
    """A report document as an object with what the JUnit writer and summary read."""
    from types import SimpleNamespace

    from .core.contacts import pairs as contacts

    frames = [SimpleNamespace(frame=f["frame"], pairs=[tuple(p) for p in f["pairs"]],
                              not_checked=f.get("not_checked", "")) for f in doc["frames"]]
    eps = contacts.episodes([(f.frame, f.pairs) for f in frames if not f.not_checked])
    from .core.contacts import groups as contact_groups

    ce = contact_groups.episodes_of_report(doc["frames"]) if "contact_episodes" in doc \
        else None
    return SimpleNamespace(objects=doc["objects"], frames=frames, episodes=lambda: eps,
                           contact_episodes=lambda: ce)


def cmd_merge(args) -> int:
    """`merge REPORT... --json OUT`: chunk reports into the report of the whole range."""
    from .core.contacts import pairs as contacts
    from .core.report import merge as core_merge
    from .core.report import writing as core_report

    if args.junit and os.path.abspath(args.junit) == os.path.abspath(args.json):
        raise UsageError("--json and --junit name the same file")
    try:
        core_report.check_output_path(args.json, "--json")
        if args.junit:
            core_report.check_output_path(args.junit, "--junit")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        docs = [core_merge.load(p) for p in args.reports]
        doc = core_merge.merge_reports(docs, names=args.reports)
    except core_merge.MergeError as exc:
        raise UsageError(str(exc)) from None
    for note in core_merge.source_notes(docs, args.reports):
        print(f"skin_collide: note: {note}", file=sys.stderr)
    core_report.write_atomic(args.json, core_report.dumps(doc))
    eps = _report_from_doc(doc).episodes()
    if args.junit:
        xml = core_report.junit_xml(f"skin_collide scan {doc['source'].get('file')}",
                                    doc["objects"], bool(doc["source"].get("self")), eps,
                                    len(doc["frames"]))
        _write_output(args.junit, xml, "the JUnit XML")
    print(f"merged {len(docs)} reports: {len(doc['frames'])} frames, "
          f"{sum(1 for f in doc['frames'] if f['pairs'])} colliding; wrote {args.json}")
    _print_contact_episodes(_report_from_doc(doc))
    print(contacts.summary(eps))
    return EXIT_CLEAN


# Set by the signal handler: a KeyboardInterrupt raised while Blender runs Python inside
# its own C code (frame change handlers, drivers) is printed and swallowed there, so the
# scan loop also checks this flag after every frame (`_raise_if_interrupted`).
_INTERRUPTED = [False]


def _interrupt_on_signals() -> None:
    """SIGTERM (a CI job's timeout) stops the scan like Ctrl-C (SIGINT): the report is kept."""
    import signal

    _INTERRUPTED[0] = False

    def handler(signum, frame):
        _INTERRUPTED[0] = True
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
    except ValueError:      # not the main thread
        pass


def _raise_if_interrupted() -> None:
    if _INTERRUPTED[0]:
        raise KeyboardInterrupt


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _write_junit(args, report) -> None:
    from .core.report import writing as core_report

    xml = core_report.junit_xml(f"skin_collide scan {os.path.basename(args.file)}",
                                report.objects, args.self_collision, report.episodes(),
                                len(report.frames),
                                contact_eps=report.contact_episodes() or ())
    _write_output(args.junit, xml, "the JUnit XML")


# -- snapshot (and scan --snapshots) ------------------------------------------------------------

def parse_size(text: str) -> tuple[int, int]:
    """'WxH' -> (W, H), each 16..4096 pixels."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size expects WxH in pixels, got '{text}'") from None
    if not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise UsageError(f"--size {text}: width and height must be 16-4096 pixels")
    return w, h


def _scan_snapshots(args, sc, scene, report) -> None:
    """One viewport picture per collision episode, at its worst frame (--snapshots DIR)."""
    if getattr(args, "snapshots", None) is None:
        return
    from .addon import snapshot

    worst = [e.worst_frame for e in report.episodes()]
    try:
        paths = snapshot.episode_snapshots(sc, scene, worst, args.snapshots)
    except snapshot.GPUUnavailable as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {len(paths)} snapshot(s) to {args.snapshots}"
          + (": " + ", ".join(os.path.basename(p) for p in paths) if paths else ""))


def cmd_snapshot(args) -> int:
    size = parse_size(args.size)
    if not args.png.lower().endswith(".png"):
        raise UsageError(f"--png must name a .png file, got '{args.png}'")
    from .core.report import writing as core_report

    try:
        core_report.check_output_path(args.png, "--png")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    bpy, scene, meshes, _ = _load(args)
    from .addon import extract, scanner, snapshot
    if not args.self_collision and len(meshes) < 2:
        raise UsageError("only one object: pass --self for self-collision, or name two objects")
    try:
        sc = scanner.Scanner(meshes, self_collision=args.self_collision)
        res, _ = snapshot.frame_snapshot(sc, scene, args.frame, os.path.abspath(args.png), size)
    except extract.RigError as exc:
        raise UsageError(str(exc)) from None
    except snapshot.GPUUnavailable as exc:
        raise UsageError(str(exc)) from None
    print(_scene_line(scene))
    print(f"frame {args.frame}: {res.n_pairs} colliding pair(s); wrote {args.png} "
          f"({size[0]}x{size[1]})")
    return 0


OBJECT_HELP = ("mesh object by name (a linked one by its full name, "
               "\"Cesium_Man [char.blend]\"; repeatable")


def _add_scene_flag(parser) -> None:
    parser.add_argument("--scene", metavar="NAME",
                        help="the scene to check, made the window's for the run, with its first "
                             "view layer (default: the scene the file was saved on, with its "
                             "window's view layer)")


def _add_snapshot_parser(sub) -> None:
    sn = sub.add_parser("snapshot", help="picture the viewport at a frame, colliding triangles "
                        "in the overlay colour (PNG)")
    sn.add_argument("file", help=".blend, .glb or .gltf")
    sn.add_argument("--frame", type=int, required=True)
    sn.add_argument("--object", action="append", help=OBJECT_HELP + "; default all)")
    _add_scene_flag(sn)
    sn.add_argument("--self", dest="self_collision", action="store_true",
                    help="also show each object's self-intersections")
    sn.add_argument("--png", required=True, help="output picture path")
    sn.add_argument("--size", default="640x400", help="WxH in pixels (default 640x400)")
    sn.set_defaults(func=cmd_snapshot)


def cmd_demo(args) -> int:
    bpy = _import_bpy()
    from .addon import demo_rig, report
    from .core.report import writing as core_report

    # The demo is a generator: like --out, the folder of its --json report is created
    # (the README's first command, `demo --json out/demo_scan.json`, runs on a fresh clone).
    out = os.path.abspath(args.out)
    for path, flag in ((args.json, "--json"), (out, "--out")):
        if not path:
            continue
        try:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                os.makedirs(folder)
            core_report.check_output_path(path, flag)
        except OSError as exc:
            raise UsageError(f"cannot create the folder for {flag}: "
                             f"{exc.filename or path}: {exc.strerror}") from None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    with report.blender_output_to_stderr():
        demo_rig.build_demo_scene(rings=args.rings, segments=args.segments,
                                  frames=args.frame_count, preserve_volume=args.preserve_volume)
        bpy.ops.wm.save_as_mainfile(filepath=out)
    print(f"wrote {out}: two tube characters, "
          f"{len(bpy.data.objects['Left'].data.polygons)} polygons each, frames 1-{args.frame_count}")
    args.file, args.object, args.frames = out, None, None
    status = cmd_doctor(args)
    if status == 0 and args.json:
        args.mode, args.method, args.self_collision, args.first_hit = None, None, False, False
        args.junit, args.allow, args.ignore_rest_contacts = None, None, False
        args.fail_on_collision, args.jobs = False, 1
        status = cmd_scan(args)
    return status


def _rest_mesh(scene, name: str):
    """(vertices (V, 3) float64, triangles (T, 3) int64) of mesh object `name`'s own data
    (rest pose, mesh-local coordinates: no modifier, no object transform)."""
    from .addon import identity

    try:
        ob = identity.find(scene.objects, name)
    except identity.AmbiguousName as exc:
        raise UsageError(str(exc)) from None
    if ob is None:
        raise UsageError(f"no object named '{name}' in the file")
    if ob.type != "MESH":
        raise UsageError(f"object '{name}' is a {ob.type.lower()}, not a mesh")
    me = ob.data
    V = len(me.vertices)
    co = np.empty(3 * V, dtype=np.float32)
    me.vertices.foreach_get("co", co)
    me.calc_loop_triangles()
    T = len(me.loop_triangles)
    if T == 0:
        raise UsageError(f"mesh '{name}' has no faces")
    tris = np.empty(3 * T, dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(-1, 3).astype(np.float64), tris.reshape(-1, 3).astype(np.int64)


def cmd_sphere_set(args) -> int:
    """Fit a variational sphere set to one mesh's rest pose and write it as JSON."""
    import json

    from .core.methods.sphere_set import baselines
    from .core.methods.sphere_set import method as ss
    from .core.report import writing as core_report

    if args.count < 1:
        raise UsageError(f"--count must be at least 1, got {args.count}")
    try:
        out = core_report.check_output_path(args.json, "--json")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    bpy = _import_bpy()
    from .addon import files, report

    try:
        report.load_quietly(args.file)
    except files.FileError as exc:
        raise UsageError(str(exc)) from None
    vertices, triangles = _rest_mesh(bpy.context.scene, args.object)
    if not ss.variational_available():
        raise UsageError("the variational sphere-set fit (core/methods/sphere_set/variational.py) is "
                         "not in this version of skin_collide")
    t0 = time.perf_counter()
    s = ss.fit_set(vertices, triangles, args.count, seed=args.seed, builder="variational")
    seconds = time.perf_counter() - t0
    if not (np.isfinite(s.outside_volume) and np.isfinite(s.mesh_volume)):
        baselines.measure_set(s, vertices, triangles, seed=args.seed)
    doc = {"centers": np.asarray(s.centers, np.float64).tolist(),
           "radii": np.asarray(s.radii, np.float64).tolist(),
           "outside_volume": float(s.outside_volume), "mesh_volume": float(s.mesh_volume)}
    _write_output(out, json.dumps(doc, allow_nan=False), "the sphere set")
    e_r = s.outside_volume / s.mesh_volume if s.mesh_volume else float("nan")
    print(f"sphere set of '{args.object}': {s.count} spheres over {triangles.shape[0]} "
          f"triangles, outside volume {s.outside_volume:.6g} (E_r {e_r:.3f}), "
          f"mesh volume {s.mesh_volume:.6g}")
    print(f"build time: {seconds:.2f} s")
    print(f"wrote {out}")
    return 0


# -- farm-commands (farm_commands.py builds the commands) ------------------------------

def _switch(parser, flag: str, help: str) -> None:
    """A flag that may also be given a value, `--self` or `--self=yes|no`: a job template
    cannot leave an argument out, it can only set its value."""
    parser.add_argument(flag, nargs="?", const="yes", default="no", choices=("yes", "no"),
                        help=help + " (or =yes / =no)")


def _add_farm_parser(sub) -> None:
    from . import farm_commands as farm
    from .core.methods import registry

    p = sub.add_parser(
        "farm-commands",
        help="the commands a render farm runs for a shot: one scan per chunk of frames, "
             "then the merge (an OpenCue cuecmd list; --run runs one of them)",
        description="Prints one `scan` command per chunk of at most --chunk frames, then the "
                    "`merge` of their reports, one shell line each. The chunks are the ones "
                    "Open Job Description's task chunking makes (core/report/chunks.py), which the "
                    "OpenJD template and the Flamenco job type in farm/ run too.")
    p.add_argument("file", help="the shot (.blend, .glb or .gltf), as the render nodes see it")
    p.add_argument("--frames", required=True, metavar="START:END",
                   help="the shot's frames, inclusive (negative frames allowed)")
    p.add_argument("--chunk", type=int, required=True, metavar="N", help="frames per scan task")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"output folder: scan_START_END.json per chunk, {farm.MERGED_JSON} and "
                        f"{farm.MERGED_JUNIT} (JUnit) from the merge")
    p.add_argument("--scene", metavar="NAME", default="",
                   help="the scene to scan (an empty value: the scene the file was saved on)")
    p.add_argument("--object", action="append", metavar="NAME",
                   help="only these mesh objects (repeatable; default: every character)")
    _switch(p, "--self", "also each object against itself")
    p.add_argument("--method", choices=registry.ids(), metavar="ID",
                   help=f"the collision method (default: scan's default, {registry.DEFAULT})")
    _switch(p, "--first-hit", "at most one pair per colliding frame")
    _switch(p, "--ignore-rest-contacts", "drop the pairs that collide in the rest pose")
    p.add_argument("--allow", metavar="FILE", default="",
                   help="reviewed pairs to drop (an empty value: none)")
    p.add_argument("--python", default="python3", metavar="EXE",
                   help="the render nodes' interpreter with bpy and skin_collide "
                        "(default python3), written at the start of each line")
    p.add_argument("--part", choices=("all", "scans", "merge"), default="all",
                   help="print every line (default), only the scans, or only the merge")
    p.add_argument("--run", metavar="CHUNK",
                   help="run one chunk's scan (CHUNK as the farm names it: 7, 7,8 or 7-16) or "
                        "'merge' here, printing its command first, instead of printing all")
    p.set_defaults(func=cmd_farm_commands)


def _plan_from_args(args) -> dict:
    from . import farm_commands as farm

    start, end = parse_frames(args.frames)
    if args.chunk < 1:
        raise UsageError(f"--chunk must be at least 1, got {args.chunk}")
    flags = farm.scan_flags(args.object, args.self == "yes", _scan_method(args),
                       args.first_hit == "yes", args.ignore_rest_contacts == "yes",
                       args.allow or None, scene=args.scene or None)
    return farm.plan(args.file, start, end, args.chunk, args.out, flags)


def cmd_farm_commands(args) -> int:
    """`farm-commands`: print the shot's farm commands, or run one of them (`--run`)."""
    from . import farm_commands as farm
    from .core.report import chunks

    steps = _plan_from_args(args)
    if args.run is None:
        names = [n for n in steps if n != "merge"] if args.part != "merge" else []
        if args.part != "scans":
            names.append("merge")
        for name in names:
            print(farm.command_line(args.python, steps[name]))
        return 0
    name = args.run.strip()
    if name != "merge":
        try:
            a, b = chunks.parse_chunk(name)
        except chunks.ChunkError as exc:
            raise UsageError(f"--run: {exc}") from None
        name = chunks.chunk_name(a, b)
        if name not in steps:
            known = ", ".join(n for n in steps if n != "merge")
            raise UsageError(f"--run {args.run}: not one of the chunks of --frames {args.frames} "
                             f"--chunk {args.chunk} ({known}): the farm cut the frames "
                             "differently")
    print(f"running: {farm.command_line(args.python, steps[name])}", flush=True)
    return main(list(steps[name]))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m skin_collide",
                                description="Exact collision detection for skinned characters.")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("doctor", help="what skin_collide sees in each character mesh of a file")
    d.add_argument("file", help=".blend, .glb or .gltf")
    d.add_argument("--object", action="append", help=OBJECT_HELP + ")")
    d.add_argument("--frames", help="START:END (default: the armature's action)")
    _add_scene_flag(d)
    d.set_defaults(func=cmd_doctor)
    m = sub.add_parser("demo", help="generate two animated tube characters, save, and doctor them")
    m.add_argument("--out", default="out/demo.blend")
    m.add_argument("--rings", type=int, default=48)
    m.add_argument("--segments", type=int, default=24)
    m.add_argument("--frame-count", type=int, default=48)
    m.add_argument("--preserve-volume", action="store_true")
    m.add_argument("--json", help="also scan the demo's frames and write the report here")
    m.set_defaults(func=cmd_demo)
    sc = sub.add_parser(
        "scan", help="collide skinned meshes over a frame range, write JSON / JUnit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="exit codes:\n"
               "  0    clean (or collisions found without --fail-on-collision)\n"
               "  1    --fail-on-collision and a frame has pairs beyond those allowed\n"
               "  2    bad input (file, object, frame range, output path, allow-list)\n"
               "  130  interrupted (Ctrl-C or SIGTERM): the frames done are in the report, marked\n"
               "       \"interrupted\": true\n"
               "The JSON report is rewritten atomically at most once a second while the scan\n"
               "runs (\"complete\": false until the last frame).")
    sc.add_argument("file", help=".blend, .glb or .gltf")
    sc.add_argument("--object", action="append",
                    help=OBJECT_HELP + "; default: every skinned mesh and rigid prop)")
    sc.add_argument("--frames", help="START:END inclusive, negative frames allowed "
                                     "(default: the scene's range)")
    _add_scene_flag(sc)
    sc.add_argument("--self", dest="self_collision", action="store_true",
                    help="also report each object's self-intersections")
    from .core.methods import registry

    sc.add_argument("--method", choices=registry.ids(), metavar="ID",
                    help=f"the collision method (default {registry.DEFAULT}, which passes rigs "
                         "it cannot bound to its fallbacks): " + "; ".join(
                             f"{m.id}: {m.label}" for m in registry.methods()))
    sc.add_argument("--mode", choices=tuple(_registry.MODES),
                    help="older spelling of --method: " + ", ".join(
                        f"{k} = {v}" for k, v in _registry.MODES.items()))
    sc.add_argument("--first-hit", action="store_true",
                    help="report at most one colliding pair per frame (a yes/no per frame); "
                         "the query stops at the first batch of pairs it finds")
    sc.add_argument("--json", metavar="OUT", help="write the report here (progressively, atomically)")
    sc.add_argument("--junit", metavar="OUT.xml", help="write JUnit XML here: one test case per object pair "
                                    "(and per object with --self), failing with its episodes")
    sc.add_argument("--fail-on-collision", action="store_true",
                    help="exit 1 when any frame has colliding pairs (after --allow and "
                         "--ignore-rest-contacts)")
    sc.add_argument("--ignore-rest-contacts", action="store_true",
                    help="drop the triangle pairs that already collide in the rest pose "
                         "(armatures in Rest Position), as the panel's Ignore Rest Contacts")
    sc.add_argument("--allow", metavar="FILE",
                    help="reviewed, accepted polygon pairs: a scan JSON, the panel's exported "
                         "JSON or CSV, or {\"allow\": [[obj_a, poly_a, obj_b, poly_b], ...]}")
    sc.add_argument("--crossing-only", action="store_true",
                    help="drop touching contacts (length 0 up to 1e-9 of the scene size)")
    sc.add_argument("--min-length", type=float, metavar="D",
                    help="drop contacts whose intersection curve is shorter than D (scene units)")
    sc.add_argument("--ignore-bones", nargs=2, action="append", metavar=("BONE", "BONE"),
                    help="drop contacts between these two bones (repeatable; either order)")
    sc.add_argument("--ignore-group", nargs=2, action="append", metavar=("OBJECT", "GROUP"),
                    help="never report pairs with a polygon of OBJECT inside its vertex "
                         "group GROUP (a vertex of it in the group; repeatable)")
    sc.add_argument("--snapshots", metavar="DIR",
                    help="also write a viewport picture of each collision episode's worst frame")
    sc.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="split the frames over N worker processes (each loads the file and "
                         "builds once; at most one per usable core); the same report as --jobs 1")
    sc.set_defaults(func=cmd_scan)
    mg = sub.add_parser("merge", help="combine scan reports of frame chunks (render farm, "
                        "--jobs) into the report of the whole range")
    mg.add_argument("reports", nargs="+", metavar="REPORT", help="scan --json reports")
    mg.add_argument("--json", required=True, metavar="OUT", help="write the merged report here")
    mg.add_argument("--junit", metavar="OUT.xml", help="also write JUnit XML here, as scan --junit")
    mg.set_defaults(func=cmd_merge)
    from .core.methods.sphere_set.method import SphereSetMethod

    # The command that fits the sphere-set method's data is named after the method.
    ss = sub.add_parser(SphereSetMethod.id, help="fit a variational sphere set (Wang et al. 2006) "
                        "to one mesh's rest pose; JSON in mesh data coordinates")
    ss.add_argument("file", help=".blend, .glb or .gltf")
    ss.add_argument("--object", required=True, help="the mesh object's name")
    ss.add_argument("--count", type=int, required=True, metavar="N", help="number of spheres")
    ss.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    ss.add_argument("--json", required=True, metavar="OUT",
                    help="write {centers, radii, outside_volume, mesh_volume} here (atomically)")
    ss.set_defaults(func=cmd_sphere_set)
    _add_snapshot_parser(sub)
    _add_farm_parser(sub)
    return p


_FRAMES_VALUE = re.compile(r"^-?\d+:-?\d+$")


def _join_negative_frames(argv: list[str]) -> list[str]:
    """`--frames -5:-3` -> `--frames=-5:-3` (argparse takes '-5:-3' for an option)."""
    out, k = [], 0
    while k < len(argv):
        if argv[k] == "--frames" and k + 1 < len(argv) and _FRAMES_VALUE.match(argv[k + 1]):
            out.append(f"--frames={argv[k + 1]}")
            k += 2
            continue
        out.append(argv[k])
        k += 1
    return out


# `--mode` values and the method each one names (core.scan, no bpy to parse arguments).
from .core.methods import registry as _registry  # noqa: E402


def _scan_method(args) -> str:
    """The method id of `--method`, or of the older `--mode`; both must agree."""
    by_mode = _registry.MODES[args.mode] if getattr(args, "mode", None) else None
    method = getattr(args, "method", None)
    if method and by_mode and method != by_mode:
        raise UsageError(f"--method {method} and --mode {args.mode} disagree: give one")
    return method or by_mode or _registry.DEFAULT


def main(argv: list[str] | None = None) -> int:
    import contextlib

    argv = _join_negative_frames(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    with contextlib.ExitStack() as scene_context:
        _SCENE_CONTEXTS.append(scene_context)
        try:
            return _run(args)
        finally:
            _SCENE_CONTEXTS.pop()


def _run(args) -> int:
    """Run the command: its exit status, every error as one line on stderr."""
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"skin_collide: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("skin_collide: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout closed by the reader (`| head`): stop quietly, as shell tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except (ValueError, OSError) as exc:     # RigError, SessionError, unwritable output
        print(f"skin_collide: error: {_os_error_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:                 # noqa: BLE001 - a bug of ours: one line, exit 2
        print(f"skin_collide: internal error (please report it): {_describe(exc)}",
              file=sys.stderr)
        return EXIT_USAGE


def _os_error_line(exc: BaseException) -> str:
    """One line for a ValueError or OSError: an OSError as `file: reason` (its str() is
    `[Errno 13] Permission denied: '/x'`, a repr; a rename names both paths)."""
    if isinstance(exc, OSError) and exc.strerror:
        names = [n for n in (exc.filename, exc.filename2) if n]
        return f"{' -> '.join(map(str, names))}: {exc.strerror}" if names else exc.strerror
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _describe(exc: BaseException) -> str:
    """`Type: first line of the message`, for one-line error reports."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__
