"""Collision episodes of a scan: runs of consecutive colliding frames (pure)."""
from __future__ import annotations

import numpy as np


def episodes(frames, counts) -> list[tuple[int, int]]:
    """Runs of consecutive colliding frames.

    Args:
        frames: (F,) int scanned frames (any order; a gap in the numbering ends a run);
            counts: (F,) int colliding pairs per frame.
    Returns:
        [(first, last)] inclusive, in frame order.
    """
    f = np.asarray(frames, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    order = np.argsort(f, kind="stable")
    hit = f[order][c[order] > 0]
    if hit.size == 0:
        return []
    breaks = np.nonzero(np.diff(hit) != 1)[0]
    starts = np.concatenate([[0], breaks + 1])
    ends = np.concatenate([breaks, [hit.size - 1]])
    return [(int(hit[a]), int(hit[b])) for a, b in zip(starts, ends)]


def worst_frames(runs: list[tuple[int, int]], frames, counts) -> list[int]:
    """The frame with the most pairs in each run (the first such frame on ties)."""
    f = np.asarray(frames, dtype=np.int64)
    c = np.asarray(counts, dtype=np.int64)
    order = np.argsort(f, kind="stable")
    f, c = f[order], c[order]
    out = []
    for a, b in runs:
        sel = (f >= a) & (f <= b)
        out.append(int(f[sel][np.argmax(c[sel])]))
    return out
