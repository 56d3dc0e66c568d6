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


def triangle_boxes(positions: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(T, 8) float32 rows [lo, -hi, -inf, -inf] enclosing each triangle's float64
    vertices (positions (V, 3) float64, tris (T, 3) int)."""
    lo_v, hi_v = outward_f32(positions)
    neg_hi = -hi_v
    out = np.empty((tris.shape[0], 8), np.float32)
    a, b, c = tris[:, 0], tris[:, 1], tris[:, 2]
    np.minimum(np.minimum(np.take(lo_v, a, 0), np.take(lo_v, b, 0)), np.take(lo_v, c, 0),
               out=out[:, :3])
    np.minimum(np.minimum(np.take(neg_hi, a, 0), np.take(neg_hi, b, 0)), np.take(neg_hi, c, 0),
               out=out[:, 3:6])
    out[:, 6:] = -INF32
    return out


def level_boxes(tree: "SelfTree", tri_box: np.ndarray) -> list[np.ndarray]:
    """Per level 0..H, (2**l, 8) float32 rows [lo, -hi, -inf, -inf] (empty = +inf in the
    first six columns). The min of two rows is exact, so parents enclose children."""
    leaf = np.full((tree.n_slots, 8), INF32, np.float32)
    leaf[:, 6:] = -INF32
    leaf[tree.tri_slot] = tri_box
    out = [leaf]
    for _ in range(tree.height):
        x = out[-1]
        out.append(np.minimum(x[0::2], x[1::2]))
    out.reverse()
    return out
