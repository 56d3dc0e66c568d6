"""The command line's exit codes and its one-line error convention: bad input raises
`UsageError`, which `skin_collide.cli.main` prints as ``skin_collide: error: <message>`` on
stderr and ends with exit code 2 (`EXIT_USAGE`); other errors are one line too
(`os_error_line`, `describe`).
"""
from __future__ import annotations

import os
import sys


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


EXIT_CLEAN, EXIT_COLLISIONS, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def os_error_line(exc: BaseException) -> str:
    """One line for a ValueError or OSError: an OSError as `file: reason` (its str() is
    `[Errno 13] Permission denied: '/x'`, a repr; a rename names both paths)."""
    if isinstance(exc, OSError) and exc.strerror:
        names = [n for n in (exc.filename, exc.filename2) if n]
        return f"{' -> '.join(map(str, names))}: {exc.strerror}" if names else exc.strerror
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def describe(exc: BaseException) -> str:
    """`Type: first line of the message`, for one-line error reports."""
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__
