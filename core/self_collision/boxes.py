"""Float32 boxes of the exact AABB trees (`core.self_collision`), rounded outward so that
they enclose the float64 triangles (docs/self_collision.md): per triangle, and per level of
a tree. Shared by the tree's build (which picks each seed pair's separating column at
rest) and its queries.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .tree import SelfTree

INF32 = np.float32(np.inf)
#: Column k of a row [lo, -hi, pads] faces column SWAP[k] of another: lo_a against -hi_b.
SWAP = np.array([3, 4, 5, 0, 1, 2, 6, 7])


def outward_f32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) float32 arrays with lo <= x <= hi elementwise (x float64, finite).

    Casting rounds to nearest (error at most half a float32 spacing); one step of
    `np.nextafter` away from the cast value is at least that half spacing (proof in
    docs/self_collision.md), so the bounds hold for every finite x that fits float32.
    """
    x32 = x.astype(np.float32)
    return np.nextafter(x32, -INF32), np.nextafter(x32, INF32)


#: One box row (8 float32) as a single element, so that rows are gathered and scattered
#: with 1-D indices (several times faster than row indexing of a 2-D array).
ROW = np.dtype((np.void, 32))


def as_rows(x: np.ndarray) -> np.ndarray:
    """A C-contiguous (n, 8) float32 array as (n,) `ROW` elements (a view)."""
    return x.view(ROW).ravel()


def triangle_boxes(positions: np.ndarray, tris: np.ndarray, swapped: bool = False):
    """(T, 8) float32 rows [lo, -hi, -inf, -inf] enclosing each triangle's float64
    vertices (positions (V, 3) float64, tris (T, 3) int); with `swapped`, also the rows
    [-hi, lo, -inf, -inf] (the B side of `query.boxes_overlap`), as a pair."""
    lo_v, hi_v = outward_f32(positions)
    # Per vertex its own row, then per triangle the min of its three vertices' rows:
    # one gather of 3T rows, first vertices first, so that the two mins run over
    # contiguous (T, 8) blocks (a min over rows strided by three is eight times slower).
    v = np.empty((lo_v.shape[0], 8), np.float32)
    v[:, :3] = lo_v
    np.negative(hi_v, out=v[:, 3:6])
    v[:, 6:] = -INF32
    idx = np.asarray(tris, np.intp).T.ravel()
    out = _min_of_three(v, idx)
    if not swapped:
        return out
    vs = np.empty_like(v)
    vs[:, :3] = v[:, 3:6]
    vs[:, 3:6] = lo_v
    vs[:, 6:] = -INF32
    return out, _min_of_three(vs, idx)


def _min_of_three(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
    g = np.take(as_rows(v), idx).view(np.float32).reshape(3, -1, 8)
    out = np.minimum(g[0], g[1])
    np.minimum(out, g[2], out=out)
    return out


def stacked_boxes(tree: "SelfTree", tri_box: np.ndarray) -> np.ndarray:
    """(2**(H+1), 8) float32 rows of every level in one array, in heap order: node k of
    level l is row ``2**l + k`` (row 0 is unused), so a level is the contiguous slice
    ``[2**l, 2**(l+1))`` and one pass can test node pairs of every level
    (`query._seed_pass`). `tri_box` (T, 8) are the triangles' rows, [lo, -hi, -inf,
    -inf] or their swapped form [-hi, lo, -inf, -inf] (either: empty slots are +inf in
    the first six columns, and each level is the min of its children, which commutes
    with swapping columns). The min of two rows is exact, so parents enclose children."""
    S = tree.n_slots
    out = np.empty((2 * S, 8), np.float32)
    out[0] = _EMPTY_ROW
    leaf = as_rows(out[S:])
    leaf[tree.tri_slot] = as_rows(np.ascontiguousarray(tri_box))
    if tree.n_triangles < S:
        leaf[empty_slots(tree)] = as_rows(_EMPTY_ROW[None])[0]
    for level in range(tree.height - 1, -1, -1):
        n = 1 << level
        child = out[2 * n:4 * n]
        np.minimum(child[0::2], child[1::2], out=out[n:2 * n])
    return out


#: The row of an empty slot: never overlaps (+inf plus anything not -inf is +inf > 0).
_EMPTY_ROW = np.array([np.inf] * 6 + [-np.inf] * 2, np.float32)


def empty_slots(tree: "SelfTree") -> np.ndarray:
    """(S - T,) intp the leaf slots that hold no triangle (made once, kept on the tree)."""
    e = getattr(tree, "_empty_slots", None)
    if e is None:
        e = np.flatnonzero(tree.slot_tri < 0)
        tree._empty_slots = e
    return e


def level_boxes(tree: "SelfTree", tri_box: np.ndarray) -> list[np.ndarray]:
    """Per level 0..H, (2**l, 8) float32 rows [lo, -hi, -inf, -inf] (empty = +inf in the
    first six columns): views of `stacked_boxes`."""
    X = stacked_boxes(tree, tri_box)
    return [X[1 << level:2 << level] for level in range(tree.height + 1)]
