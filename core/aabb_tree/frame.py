"""One frame's float32 boxes over a `SelfTree` (`FrameBoxes`): made whole for a frame
(`frame_boxes`), or brought up to date where a pose edit moved triangles
(`update_frame_boxes`, bit for bit the same rows). The self and cross traversals
(`self_traversal`, `seeds`, `cross`) read them.

Each level stores its boxes as (n, 8) rows ``[lo, pad, -hi, pad]`` (`boxes`); the parent
row is the min of its two children's rows (exact). Two sibling rows are one 64-byte record
(`descend._ROW2`), so both children of a node are one gather.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .boxes import frame_stack, swap_halves, triangle_boxes
from .descend import _ROW2
from .self_tree import SelfTree


def _level_rows(X: np.ndarray, Xs: np.ndarray, level: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Level `level`'s rows (2**l, 8) and swapped rows, views of the stacked rows `X` and
    `Xs` (`boxes.stacked_boxes`), and both as sibling-pair records (one 64-byte record per
    pair of siblings) for the children gathers (views: an update of the rows shows in
    all of them)."""
    R, Rs = X[1 << level:2 << level], Xs[1 << level:2 << level]
    if level == 0:                            # the root has no sibling
        none = R[:0].reshape(0, 16).view(_ROW2).ravel()
        return R, Rs, none, none
    return R, Rs, R.reshape(-1, 16).view(_ROW2).ravel(), Rs.reshape(-1, 16).view(_ROW2).ravel()


@dataclass
class FrameBoxes:
    """One frame's boxes over a `SelfTree`, and the frame's keys.

    A carried query (pose edits, `object_self_pairs`) keeps them and updates only the
    rows of moved triangles and their ancestors (`update_frame_boxes`); the result is
    bit for bit the boxes of a fresh `frame_boxes` (min/max and the outward rounding are
    the same operations on the same numbers).

    Attributes:
        keys: (T, 3) int64 welded keys of the frame's triangles.
        resplit: (T,) bool, the triangles whose keys differ from the rest keys (a polygon
            split the other way): only they can make re-split pairs (`_resplit_pairs`).
        stack: the (2**(H+1), 8) float32 rows of every level (`boxes.stacked_boxes`)
            and their swapped copy, of which `rows` and `heap` are views.
    """

    keys: np.ndarray
    resplit: np.ndarray
    stack: tuple[np.ndarray, np.ndarray]

    @property
    def rows(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Per level 0..H, `_level_rows`' four arrays: (2**l, 8) float32 rows, their
        swapped copy, and their sibling-pair record views (views of `stack`, made on
        first use: the whole-frame self query reads `heap` only)."""
        rows = self.__dict__.get("_rows")
        if rows is None:
            X, Xs = self.stack
            height = X.shape[0].bit_length() - 2          # 2**(H+1) rows
            rows = [_level_rows(X, Xs, level) for level in range(height + 1)]
            self.__dict__["_rows"] = rows
        return rows

    @property
    def heap(self) -> tuple[None, None, np.ndarray, np.ndarray]:
        """The stacked rows and swapped rows as sibling-pair records, in the form of a
        level of `rows` for `_children`: record r holds heap rows 2r and 2r + 1, the
        children of heap node r, so the self traversal names nodes by heap row (node k
        of level l is ``2**l + k``) on every level (views of `stack`)."""
        X, Xs = self.stack
        return (None, None, X.reshape(-1, 16).view(_ROW2).ravel(),
                Xs.reshape(-1, 16).view(_ROW2).ravel())


def frame_boxes(tree: SelfTree, positions: np.ndarray, tris: np.ndarray,
                weld_ids: np.ndarray) -> FrameBoxes:
    """The boxes of every level of `tree` for one frame: positions (V, 3) float64, tris
    (T, 3) intp the frame's triangles, weld_ids (V,) int64."""
    X = frame_stack(tree, positions, tris)
    # The swapped rows are the rows with their halves exchanged (the min of each level
    # commutes with that): one gather of 16-byte parts instead of a second refit.
    Xs = swap_halves(X)
    keys = np.take(weld_ids, tris)
    d = keys != tree.rest_keys
    return FrameBoxes(keys, d[:, 0] | d[:, 1] | d[:, 2], (X, Xs))


def update_frame_boxes(fb: FrameBoxes, tree: SelfTree, positions: np.ndarray, tris: np.ndarray,
                       weld_ids: np.ndarray, changed: np.ndarray) -> None:
    """Update `fb` in place for a frame in which only the triangles `changed` ((m,) intp,
    distinct) have other vertex positions or indices than the frame `fb` was made for:
    their boxes and keys, then, level by level up, the rows of their ancestors (O(m H))."""
    if not changed.size:
        return
    v = np.take(tris, changed, axis=0)
    # `triangle_boxes` of the moved triangles' own corners (O(m), not a pass over every
    # vertex): the same rows of the same coordinates.
    corners = np.take(positions, v.ravel(), axis=0)
    box = triangle_boxes(corners, np.arange(corners.shape[0]).reshape(-1, 3))
    keys = np.take(weld_ids, v)
    fb.keys[changed] = keys
    d = keys != np.take(tree.rest_keys, changed, axis=0)
    fb.resplit[changed] = d[:, 0] | d[:, 1] | d[:, 2]
    H = tree.height
    slots = np.take(tree.tri_slot, changed)
    order = np.argsort(slots)
    nodes = np.take(slots, order)
    R = np.take(box, order, axis=0)
    X, Xs = fb.rows[H][0], fb.rows[H][1]
    X[nodes] = R
    Xs[nodes] = swap_halves(R)
    for level in range(H - 1, -1, -1):
        nodes = nodes >> 1                    # sorted: equal parents are neighbours
        first = np.empty(nodes.size, bool)
        first[0] = True
        np.not_equal(nodes[1:], nodes[:-1], out=first[1:])
        nodes = nodes[first]
        # Both children of each node in one gather (siblings are one 64-byte record).
        pair = np.take(fb.rows[level + 1][0].reshape(-1, 2, 8), nodes, axis=0)
        R = np.minimum(pair[:, 0], pair[:, 1])
        fb.rows[level][0][nodes] = R
        fb.rows[level][1][nodes] = swap_halves(R)

