"""Object-level broad phase: which objects of a crowd may touch at this frame.

One axis-aligned box per object per frame, then sort-and-sweep on one axis, all on whole
arrays (no Python loop over object pairs). Only the object pairs whose boxes meet go to the
node-level traversal; objects far apart cost their box and nothing else.

Why the box of the evaluated positions (and not the root sphere of the on-demand refit):
the positions are already read for the exact triangle test, the box costs one min/max
over them (about 10 µs for a 3,000-vertex character) and it is the tightest bound there
is: every triangle Blender draws at the frame is the convex hull of three of these
vertices, so it lies in the box, whatever method or deformation made them. Two triangles
that share a point therefore have boxes that share a point, and closed boxes are compared
with ``<=`` in float64 on the very numbers the triangle test reads: no rounding is added,
and no pair can be lost here (docs/broad_phase.md).
"""
from __future__ import annotations

import numpy as np


def position_boxes(positions: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per object, the box of its (V, 3) float64 positions: lo (n, 3), hi (n, 3).

    An object without vertices gets an empty box (lo = +inf, hi = -inf), which meets
    nothing."""
    n = len(positions)
    lo = np.full((n, 3), np.inf)
    hi = np.full((n, 3), -np.inf)
    for k, p in enumerate(positions):       # one min/max per object, not per pair
        if p.shape[0]:
            lo[k] = p.min(axis=0)
            hi[k] = p.max(axis=0)
    return lo, hi


def sweep_pairs(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Object pairs whose closed boxes meet, by sort-and-sweep along the widest axis.

    Args:
        lo, hi: (n, 3) float64 box corners (lo <= hi, or an empty box with lo > hi).
    Returns:
        (P, 2) int64 pairs (i, j), i < j, sorted lexicographically.
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    n = lo.shape[0]
    valid = np.all(lo <= hi, axis=1)
    idx = np.nonzero(valid)[0]
    if idx.size < 2:
        return np.zeros((0, 2), np.int64)
    lo, hi = lo[idx], hi[idx]
    # Sweep the axis along which the boxes are spread most: fewest candidates.
    axis = int(np.argmax(hi.max(axis=0) - lo.min(axis=0)))
    order = np.argsort(lo[:, axis], kind="stable")
    start = lo[order, axis]
    end = hi[order, axis]
    # Box order[k] meets, on this axis, every later box whose start is <= its end.
    stop = np.searchsorted(start, end, side="right")
    count = np.maximum(stop - np.arange(idx.size) - 1, 0)
    first = np.repeat(np.arange(idx.size), count)
    off = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(count, out=off[1:])
    second = first + 1 + (np.arange(off[-1]) - off[first])
    a, b = order[first], order[second]
    meet = np.all((lo[a] <= hi[b]) & (lo[b] <= hi[a]), axis=1)
    a, b = idx[a[meet]], idx[b[meet]]
    pairs = np.stack([np.minimum(a, b), np.maximum(a, b)], axis=1).astype(np.int64)
    if n and pairs.size:
        pairs = pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
    return pairs


def meeting_pairs(positions: list[np.ndarray]) -> np.ndarray:
    """(P, 2) int64 the object pairs (i < j) whose position boxes meet at this frame."""
    lo, hi = position_boxes(positions)
    return sweep_pairs(lo, hi)
