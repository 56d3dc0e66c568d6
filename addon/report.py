"""Headless-scan helpers around Blender: keep Blender's C-level log lines off stdout, and
the frame ranges a scan can be compared against (scene range, action ranges)."""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys


def _flush_c_stdout() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def blender_output_to_stderr():
    """Send everything written to file descriptor 1 (Blender prints from C: `Read blend:`,
    the glTF importer's `INFO:` lines) to stderr for the duration, so that stdout keeps only
    the command's own lines. `contextlib.redirect_stdout` would not catch C writes."""
    sys.stdout.flush()
    _flush_c_stdout()
    try:
        saved = os.dup(1)
    except OSError:          # no fd 1 (embedded): nothing to redirect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        _flush_c_stdout()
        os.dup2(saved, 1)
        os.close(saved)


def load_quietly(path: str, trusted: bool = False) -> None:
    """`addon.files.load_file` with Blender's log lines sent to stderr."""
    from . import files

    with blender_output_to_stderr():
        files.load_file(path, trusted)


def action_ranges(meshes) -> list[tuple[int, int]]:
    """The frame ranges (inclusive, rounded outwards) of the actions of the meshes'
    armatures, of the meshes themselves and of their parents (what moves a rigid prop),
    deduplicated."""
    import math

    from . import extract

    out = set()
    for ob in meshes:
        holders = [ob, *extract.armatures_of(ob)]
        p = ob.parent
        while p is not None:
            holders.append(p)
            p = p.parent
        for h in holders:
            ad = getattr(h, "animation_data", None) if h is not None else None
            act = ad.action if ad is not None else None
            if act is not None:
                a, b = act.frame_range
                out.add((int(math.floor(a)), int(math.ceil(b))))
    return sorted(out)


def count_outside(frames: list[int], ranges: list[tuple[int, int]]) -> int:
    """How many of `frames` lie outside every range of `ranges`."""
    return sum(1 for f in frames if not any(a <= f <= b for a, b in ranges))
