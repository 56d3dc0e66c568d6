"""Command line: ``python -m skin_collide doctor|scan|demo|sphere-set ...`` (headless; bpy imported lazily).

Exit codes: 0 success (a clean scan), 1 collisions found (`scan --fail-on-collision`),
2 bad input (missing or unreadable file, no character mesh, unknown object, empty frame
range, an output path that cannot be written), with a one-line message on stderr,
130 interrupted (Ctrl-C; the frames done are kept in the report, marked interrupted).
stdout carries only the command's own lines; Blender's log lines go to stderr.

One module per command (`doctor`, `demo`, `scan`, `merge`, `sphere_set`, `snapshot`,
`farm`), each with its `add_parser` and `run`; the scan flags are defined once in
`scan_flags`, `scan --jobs` runs in `jobs`, the error convention is `errors`, the words
fixed before argparse reads them (a negative value) `argv`.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import demo, doctor, farm, merge, scan, snapshot, sphere_set
from .argv import prepare as prepare_argv
from .errors import (
    EXIT_CLEAN,
    EXIT_COLLISIONS,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
    describe,
    exit_process,
    os_error_line,
)
from .frames import join_negative_frames, parse_frames
from .jobs import cap_jobs, split_frames, usable_cores
from .load import SCENE_CONTEXTS, select_meshes
from .scan_flags import worker_flags

__all__ = ["main", "build_parser", "exit_process", "UsageError", "parse_frames", "cap_jobs",
           "usable_cores", "EXIT_CLEAN", "EXIT_COLLISIONS", "EXIT_USAGE", "EXIT_INTERRUPTED"]

# Names scripts and tests reach here by the names they had when the command line was one
# module.
_chunks, _join_negative_frames, _select_meshes, _worker_flags = \
    split_frames, join_negative_frames, select_meshes, worker_flags


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m skin_collide",
                                description="Exact collision detection for skinned characters.")
    sub = p.add_subparsers(dest="command", required=True)
    for command in (doctor, demo, scan, merge, sphere_set, snapshot, farm):
        command.add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    import contextlib

    try:
        argv = prepare_argv(list(sys.argv[1:] if argv is None else argv))
    except UsageError as exc:
        print(f"skin_collide: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = build_parser().parse_args(argv)
    with contextlib.ExitStack() as scene_context:
        SCENE_CONTEXTS.append(scene_context)
        try:
            return _run(args)
        finally:
            SCENE_CONTEXTS.pop()


def _run(args) -> int:
    """Run the command: its exit status, every error as one line on stderr. A command that
    hands over to another (`farm-commands --run`) returns that one's arguments: it runs
    here, in this process."""
    try:
        status = args.func(args)
        if isinstance(status, list):
            return main(status)
        return status
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
        print(f"skin_collide: error: {os_error_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:                 # noqa: BLE001 - a bug of ours: one line, exit 2
        print(f"skin_collide: internal error (please report it): {describe(exc)}",
              file=sys.stderr)
        return EXIT_USAGE
