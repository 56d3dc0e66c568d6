"""Frames seen before (`FrameMemo`): the live overlay's answer to a frame whose inputs are
bit for bit those of a frame it already answered (Blender's playback looping over a
shot, the artist scrubbing back and forth) is that frame's answer again, without a query.

Why this is exact: a frame's intersecting pairs, polygon pairs, contacts and near pairs
are a function of the objects (their built data, welds and seams: the caller's `key`
names them and every setting that filters the answer), the evaluated positions and the
frame's triangles. Equal inputs, compared as bits (float64 positions as 64-bit integers,
so that even -0.0 and 0.0 differ), give the same answer; any other input is a miss and is
answered in full. Only complete answers are kept (never a capped or stopped frame, whose
subset can depend on what the query carried).

Pure Python and numpy.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple, Sequence

import numpy as np

#: The positions and triangles a memo keeps, in bytes, at most: about 300 frames of
#: MakeHuman at 27k triangles, 35 frames of two MakeHumans at 107k. The oldest frames go
#: first.
MEMO_BYTES = 200 * 1024 * 1024


class _Seen(NamedTuple):
    positions: list
    triangles: list
    answer: object
    nbytes: int


def same_bits(a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> bool:
    """Whether two lists of arrays are equal bit for bit (shapes, dtypes and every byte)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind == "f":
            kind = np.dtype(f"i{x.dtype.itemsize}")
            x, y = np.ascontiguousarray(x).view(kind), np.ascontiguousarray(y).view(kind)
        if not np.array_equal(x, y):
            return False
    return True


class FrameMemo:
    """The answers of the last frames answered, by frame number, for one `key` (the
    caller's: the objects and settings the answers depend on; a memo is dropped, not
    consulted, when its key changes).

    Attributes:
        key: what the kept answers depend on besides their inputs (compared by the caller).
        budget: bytes of kept positions and triangles, at most (`MEMO_BYTES`).
        frames: the most frames kept (None: as many as the budget holds); a scan, which
            never goes back, keeps its last frame only, for held poses.
        hits, misses: counts of `get` (for benchmarks and tests).
    """

    def __init__(self, key, budget: int = MEMO_BYTES, frames: int | None = None):
        self.key = key
        self.budget = int(budget)
        self.frames = frames
        self._frames: OrderedDict[int, _Seen] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._frames)

    def get(self, frame: int, positions: Sequence[np.ndarray],
            triangles: Sequence[np.ndarray]):
        """The answer kept for `frame` when its per-object (V, 3) positions and (T, 3)
        triangles were bit for bit these; else that of the frame used last, when its
        inputs were these (a held pose: frames of an animation that do not move); else
        None."""
        for key in (frame, next(reversed(self._frames), None)):
            seen = self._frames.get(key) if key is not None else None
            if seen is not None and same_bits(seen.positions, positions) \
                    and same_bits(seen.triangles, triangles):
                self._frames.move_to_end(key)
                self.hits += 1
                return seen.answer
        self.misses += 1
        return None

    def put(self, frame: int, positions: Sequence[np.ndarray],
            triangles: Sequence[np.ndarray], answer) -> None:
        """Keep `answer`, complete, for `frame` with these inputs (replacing the frame's
        earlier one). The arrays are kept, not copied: the caller never changes them."""
        old = self._frames.pop(frame, None)
        if old is not None:
            self._bytes -= old.nbytes
        nbytes = sum(np.asarray(a).nbytes for a in (*positions, *triangles))
        if nbytes > self.budget:
            return
        self._frames[frame] = _Seen(list(positions), list(triangles), answer, nbytes)
        self._bytes += nbytes
        while self._bytes > self.budget or (self.frames is not None
                                            and len(self._frames) > self.frames):
            _, gone = self._frames.popitem(last=False)
            self._bytes -= gone.nbytes
