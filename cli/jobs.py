"""`scan --jobs N`: the frames split over worker processes (a `python -m skin_collide scan`
each, repeating the scan's flags), watched until they end, and their reports merged into
the scan's report (`core.report.merge`). At most one worker per usable core.
"""
from __future__ import annotations

import os
import sys
import time

from .errors import EXIT_CLEAN, EXIT_COLLISIONS, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from .interrupt import interrupt_on_signals
from .outputs import (
    print_verdict,
    steps_text,
    write_contacts_csv,
    write_junit,
    write_output,
)
from .scan_flags import worker_flags


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


def split_frames(start: int, end: int, n: int) -> list[tuple[int, int]]:
    """[start, end] split into at most `n` contiguous chunks of nearly equal length
    (`core.report.chunks`, which also cuts a render farm's chunks)."""
    from ..core.report import chunks

    return chunks.evenly(start, end, n)


WORKER_EXIT_GRACE = 5.0
"""Seconds a worker may take to exit once its final report is on disk. The pip bpy 4.5 hung
for ever at process exit (avoided by `os._exit` in __main__.py); a worker that hangs after
its work is done is killed then, and its report, whole, is kept."""


def _read_report(path: str) -> dict | None:
    """A worker's report, or None while there is none (it is replaced atomically, so a
    file that exists is whole)."""
    from ..core.report import merge as core_merge

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


def scan_jobs(args, frames: tuple[int, int], jobs: int) -> int:
    """`scan --jobs N`: one worker process per contiguous chunk of frames (each loads the
    file and builds once), their reports merged into one. Ctrl-C (or SIGTERM) stops every
    worker; the frames they finished are kept, the report marked interrupted. A worker
    that ends without finishing its chunk fails the scan (exit 2, one line) and the report
    keeps every frame the workers did."""
    import shutil
    import tempfile

    from ..core.report import writing as core_report

    chunks = split_frames(frames[0], frames[1], jobs)
    tmp = tempfile.mkdtemp(prefix="skin_collide_jobs_")
    keep_tmp = False
    print(f"scanning frames {frames[0]}-{frames[1]} in {len(chunks)} worker processes: "
          + ", ".join(f"{a}-{b}" for a, b in chunks), flush=True)
    interrupt_on_signals()
    t0 = time.perf_counter()
    workers, interrupted = _run_workers(args, chunks, tmp)
    try:
        return _gather(args, frames, workers, interrupted, t0)
    except core_report.OutputError as exc:
        # Not even a kept copy could be written: the workers' reports stay where they are.
        keep_tmp = True
        raise UsageError(f"{exc}; the workers' reports are kept in {tmp}") from None
    finally:
        if not keep_tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _run_workers(args, chunks: list[tuple[int, int]], tmp: str) -> tuple[list[_Worker], bool]:
    """Start a worker per chunk (its report and log in the folder `tmp`) and wait for them:
    (the workers, whether Ctrl-C or SIGTERM stopped them)."""
    import subprocess

    base = [sys.executable, "-m", "skin_collide", "scan", os.path.abspath(args.file)]
    flags = worker_flags(args)
    steps = worker_step_to(args, chunks)
    workers: list[_Worker] = []
    try:
        for k, (a, b) in enumerate(chunks):
            part = os.path.join(tmp, f"part_{k}.json")
            log = os.path.join(tmp, f"part_{k}.log")
            with open(log, "w") as fh:
                proc = subprocess.Popen(base + [f"--frames={a}:{b}", "--json", part] + flags
                                        + steps[k],
                                        stdout=fh, stderr=subprocess.STDOUT)
            workers.append(_Worker(k, len(chunks), (a, b), part, log, proc))
        _wait_workers(workers)
    except KeyboardInterrupt:
        _stop_workers([w.proc for w in workers])
        return workers, True
    return workers, False


def worker_step_to(args, chunks: list[tuple[int, int]]) -> list[list[str]]:
    """Per worker, its `--step-to` (`scan --between-frames`): a step that spans two chunks
    is checked by the worker that holds its first frame, so each worker's last step goes
    to the next chunk's first frame, and the last worker's as the scan's own (`--step-to`
    as given, else the default rule, which the worker applies to the same scene). Empty
    lists without --between-frames."""
    from ..core.report import chunks as core_chunks

    if not getattr(args, "between_frames", False):
        return [[] for _ in chunks]
    given = getattr(args, "step_to", None)
    return [[f"--step-to={to}"] if to is not None else []
            for to in core_chunks.step_targets(chunks, given)]


def _stop_workers(procs: list) -> None:
    """After Ctrl-C: let the workers write their reports, interrupt those still running."""
    import signal
    import subprocess

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


def _merged(workers: list[_Worker], interrupted: bool) -> tuple[dict | None, str | None]:
    """(the workers' reports merged, None when none wrote one; why the scan failed, None
    when every worker finished or the scan was interrupted). A one-line error when no
    worker scanned a frame or the reports do not merge."""
    from ..core.report import merge as core_merge

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
        return None, failure
    try:
        return core_merge.merge_reports(docs), failure
    except core_merge.MergeError as exc:
        raise UsageError(str(exc)) from None


def _print_objects(doc: dict) -> None:
    """The workers' own object lines stay in their logs: say which scene they scanned,
    which method each object got, and why when the asked one was passed over (as
    `scan --jobs 1` does)."""
    if "scene" in doc:
        print(f"scene: {doc['scene']} (view layer {doc.get('view_layer')})", flush=True)
    if "evaluation" in doc:
        from .load import EVALUATION_LINES

        print(EVALUATION_LINES[doc["evaluation"]], flush=True)
    for note in doc.get("notes", ()):
        print(f"note: {note}", flush=True)
    for name in doc["objects"]:
        why = doc.get("fallback", {}).get(name)
        surface = doc.get("surface", {}).get(name)
        print(f"object {name}: refit: {doc['refit'].get(name, '')}"
              + (f" (instead of {why})" if why else "")
              + (f"; surface: {surface}" if surface else ""), flush=True)


def _gather(args, frames: tuple[int, int], workers: list[_Worker], interrupted: bool,
            t0: float) -> int:
    """The scan's report from the workers': written, its summary printed; the exit status."""
    from ..core.report import model as scan_report
    from ..core.report import writing as core_report

    doc, failure = _merged(workers, interrupted)
    if doc is None:
        print("skin_collide: interrupted before any frame was scanned", file=sys.stderr)
        return EXIT_INTERRUPTED
    _print_objects(doc)
    n_frames = frames[1] - frames[0] + 1
    doc["frames_requested"] = n_frames
    if interrupted or failure or len(doc["frames"]) < n_frames:
        doc["interrupted"] = doc["interrupted"] or interrupted
        doc["complete"] = False
    done = len(doc["frames"])
    if failure:
        doc["error"] = failure
        if args.json:
            write_output(args.json, core_report.dumps(doc), "the report")
            failure += (f"; the report in {args.json} keeps the {done} frames done "
                        "(\"complete\": false)")
        raise UsageError(failure)
    if args.json:
        write_output(args.json, core_report.dumps(doc), "the report")
    report = scan_report.from_json(doc)
    if args.junit:
        write_junit(args, report)
    write_contacts_csv(args, doc)
    if interrupted:
        where = f"; the report in {args.json} is marked interrupted" if args.json else ""
        print(f"skin_collide: interrupted after {done} of {n_frames} frames{where}",
              file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    colliding = sum(1 for f in doc["frames"] if f["pairs"])
    wrote = ", ".join(p for p in (args.json, args.junit, getattr(args, "contacts_csv", None))
                        if p)
    print(f"{colliding} of {n_frames} frames collide{steps_text(report)}; {len(workers)} "
          f"workers, {time.perf_counter() - t0:.1f} s wall" + (f"; wrote {wrote}" if wrote else ""))
    if print_verdict(report) and args.fail_on_collision:
        return EXIT_COLLISIONS
    return EXIT_CLEAN
