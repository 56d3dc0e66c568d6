"""Frame chunks: how a frame range is cut into the contiguous pieces that `scan --frames A:B`
runs, for `scan --jobs N` (N nearly equal chunks) and for render farms (chunks of a given
size). Pure Python, no Blender.

A farm names a chunk as a range expression: OpenJD's task chunking passes "START-END"
(even "7-7"; "-5--3" for negative frames), Flamenco and OpenJD range expressions write
"7", "7,8" and "7-16". `parse_chunk` reads all of them and `chunk_name` writes the short
form. `by_size` is the one definition of the chunk boundaries: `farm-commands` cuts with
it, the Flamenco job type with a JavaScript copy of it, and the OpenJD template's tasks
(`farm-commands --run CHUNK`) refuse a chunk it does not make; tests/cli/test_farm.py checks
all three against it.
"""
from __future__ import annotations

import re


class ChunkError(ValueError):
    """A chunk or range that cannot be used; the message (one line) says why."""


def evenly(start: int, end: int, n: int) -> list[tuple[int, int]]:
    """[start, end] split into at most `n` contiguous chunks of nearly equal length
    (`scan --jobs N`)."""
    total = end - start + 1
    n = max(1, min(n, total))
    bounds = [start + (total * k) // n for k in range(n + 1)]
    return [(bounds[k], bounds[k + 1] - 1) for k in range(n)]


def by_size(start: int, end: int, size: int) -> list[tuple[int, int]]:
    """[start, end] split into contiguous chunks of at most `size` frames: a farm's chunks.

    As Open Job Description's task chunking cuts a contiguous range (CHUNK[INT],
    rangeConstraint CONTIGUOUS, a fixed defaultTaskCount): ceil(frames / size) chunks whose
    lengths differ by at most one, the longer ones spread evenly over the range (48 frames
    by 10: 1-10, 11-20, 21-29, 30-39, 40-48), not `size` frames each and a short last one.
    The Flamenco job type and `farm-commands` cut the same way."""
    if size < 1:
        raise ChunkError(f"the chunk size must be at least 1, got {size}")
    if end < start:
        raise ChunkError(f"empty frame range {start}:{end}")
    total = end - start + 1
    count = -(-total // size)
    base, extra = divmod(total, count)
    lengths = [base] * count
    for k in range(extra):               # the `extra` longer chunks, evenly spaced
        lengths[k * count // extra] += 1
    out, a = [], start
    for n in lengths:
        out.append((a, a + n - 1))
        a += n
    return out


def chunk_name(start: int, end: int) -> str:
    """A contiguous chunk in range-expression notation: "7", "7,8", "7-16"."""
    if end < start:
        raise ChunkError(f"empty frame range {start}:{end}")
    if start == end:
        return str(start)
    if end == start + 1:
        return f"{start},{end}"
    return f"{start}-{end}"


_ONE = re.compile(r"^\s*(-?\d+)\s*$")
_TWO = re.compile(r"^\s*(-?\d+)\s*,\s*(-?\d+)\s*$")
_RANGE = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")


def parse_chunk(text: str) -> tuple[int, int]:
    """A contiguous chunk's range expression ("7", "7,8", "7-16", "-5--3") -> (start, end).
    Anything else (a list with gaps, a step, a reversed range) is a ChunkError."""
    m = _ONE.match(text)
    if m:
        f = int(m.group(1))
        return f, f
    m = _TWO.match(text) or _RANGE.match(text)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        if _TWO.match(text) and b != a + 1:
            raise ChunkError(f"chunk '{text}' is not a contiguous frame range")
        if b < a:
            raise ChunkError(f"chunk '{text}' is an empty frame range")
        return a, b
    raise ChunkError(f"chunk '{text}' is not a contiguous frame range "
                     "(expected F, F,F+1 or START-END)")


# -- the steps between frames (`scan --between-frames`, issue 57) ---------------------------

def last_step_to(last: int, scene_start: int, scene_end: int) -> int | None:
    """Where the step from a scan's last frame ends when nothing says (`scan --step-to`
    not given): at the next frame when it lies in the scene's range, the frames the shot
    plays (so `--frames 1:10` of a 1:250 shot checks 10 -> 11, and chunks that a user cuts
    by hand merge into the scan of their union); else nowhere (the scene's last frame has
    no step after it). None: no step from the last frame."""
    nxt = last + 1
    return nxt if scene_start <= nxt <= scene_end else None


def step_targets(parts: list[tuple[int, int]], last: int | None) -> list[int | None]:
    """Per chunk of one scan (`evenly`, `by_size`), where its last frame's step ends: a
    step that spans two chunks is checked by the chunk that holds its first frame, so each
    chunk's step goes to the next chunk's first frame; the last chunk's goes to `last`
    (the whole scan's rule: None leaves it to the chunk's own default)."""
    return [b[0] for b in parts[1:]] + [last]
