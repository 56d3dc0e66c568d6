"""Balanced AABB trees refitted bottom-up from the evaluated mesh, as a method (`box-tree`).

The tree is the self-collision tree of `core.aabb_tree` (median split at rest, one
triangle per leaf slot, float32 boxes rounded outward; soundness in
docs/self_collision.md). Per frame every box is refitted from the evaluated positions and
the frame's triangles, which is exact for any deformation (shape keys, any modifier,
Preserve Volume): the method supports every rig.

Two box trees meet level by level in whole-array passes (`self_collision.cross_candidates`):
`BoxVolumes.collide_fast` is the generic traversal's fast path for a pair of the same kind.
Against another kind, the generic traversal compares enclosing spheres of the boxes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import welds
from ..aabb_tree import query as box_query
from ..aabb_tree.boxes import LO, NEG_HI
from ..aabb_tree.tree import SelfTree, build
from ..cache import derived
from ..rig import Rig
from .base import Drawable, Frame, Hierarchy, Method, Volumes


@dataclass
class BoxTreeData:
    """Prepared data of `box-tree`: the rig's `SelfTree` (also its self-collision tree)."""

    tree: SelfTree

    def arrays(self) -> dict[str, np.ndarray]:
        t = self.tree
        out = {"height": np.array(t.height), "n_slots": np.array(t.n_slots),
               "tri_slot": t.tri_slot, "slot_tri": t.slot_tri, "rest_keys": t.rest_keys,
               "adj_ptr": t.adj_ptr, "adj_idx": t.adj_idx, "weld_ids": t.weld_ids,
               "build_seconds": np.array(t.build_seconds)}
        for level, (a, b) in enumerate(t.seeds):
            out[f"seed_a.{level}"], out[f"seed_b.{level}"] = a, b
        # "face_": the columns of the rows [lo, pad, -hi, pad]. Data stored as "col_"
        # indexed rows [lo, -hi, pads]; it is ignored (the hints then start from x).
        for level, (a, b) in enumerate(t.seed_cols or []):
            out[f"face_a.{level}"], out[f"face_b.{level}"] = a, b
        return out

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "BoxTreeData":
        H = int(d["height"])
        seeds = [(d[f"seed_a.{k}"].astype(np.intp), d[f"seed_b.{k}"].astype(np.intp))
                 for k in range(H + 1)]
        cols = None
        if "face_a.0" in d:
            cols = [(d[f"face_a.{k}"].astype(np.intp), d[f"face_b.{k}"].astype(np.intp))
                    for k in range(H + 1)]
        tree = SelfTree(H, int(d["n_slots"]), d["tri_slot"].astype(np.intp),
                        d["slot_tri"].astype(np.intp), seeds, d["rest_keys"].astype(np.int64),
                        d["adj_ptr"].astype(np.intp), d["adj_idx"].astype(np.intp),
                        d["weld_ids"].astype(np.int64), cols, float(d["build_seconds"]))
        return cls(tree)


def box_hierarchy(tree: SelfTree) -> Hierarchy:
    """The implicit complete tree as a `Hierarchy` in breadth-first order: node k of level
    l is ``2**l - 1 + k``; the leaves (level H) hold their slot's triangle, or none.
    Made once per tree."""
    return derived(tree, "box_hierarchy", lambda: _box_hierarchy(tree))


def _box_hierarchy(tree: SelfTree) -> Hierarchy:
    H = tree.height
    n = 2 ** (H + 1) - 1
    inner = 2 ** H - 1
    first = np.full(n, -1, np.int32)
    first[:inner] = 2 * np.arange(inner) + 1
    count = np.zeros(n, np.int32)
    count[:inner] = 2
    has = tree.slot_tri >= 0
    ptr = np.zeros(n + 1, np.int64)
    ptr[inner + 1:] = np.cumsum(has)
    return Hierarchy(first, count, ptr, tree.slot_tri[has].astype(np.int64))


class BoxVolumes(Volumes):
    """Every float32 box of one tree at one frame (all refitted at the first use: a
    bottom-up refit is one pass over the triangles)."""

    kind = "box"
    whole_tree_pass = True

    def __init__(self, tree: SelfTree, frame: Frame, method_id: str | None = None):
        super().__init__(box_hierarchy(tree), method_id)
        self.tree = tree
        self.frame = frame
        self.levels: list[np.ndarray] | None = None
        self.rows: np.ndarray | None = None        # (N, 8) float32, BFS order

    def _refit(self) -> list[np.ndarray]:
        """The per-level float32 box rows (the whole-tree pass needs only these)."""
        if self.levels is None:
            tris = np.asarray(self.frame.triangles, np.intp)
            pos = np.asarray(self.frame.positions, np.float64)
            self.levels = box_query.level_boxes(self.tree, box_query.triangle_boxes(pos, tris))
            self.refitted = sum(x.shape[0] for x in self.levels)
        return self.levels

    def ensure(self, nodes: np.ndarray) -> None:
        """Rows in breadth-first order and the enclosing spheres, for the generic
        traversal (node-pair tests)."""
        if self.rows is not None:
            return
        self.rows = np.concatenate(self._refit())
        lo = self.rows[:, LO].astype(np.float64)
        hi = -self.rows[:, NEG_HI].astype(np.float64)
        empty = ~np.isfinite(lo).all(axis=1)
        lo[empty] = 0.0
        hi[empty] = 0.0
        self._centers = 0.5 * (lo + hi)
        half = 0.5 * np.linalg.norm(hi - lo, axis=1)
        # An empty node meets nothing: -inf keeps every sphere test false.
        self._radii = np.where(empty, -np.inf, half)

    def size(self, nodes: np.ndarray) -> np.ndarray:
        return self._radii[nodes]

    def spheres(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._centers[nodes], self._radii[nodes]

    def overlap(self, na: np.ndarray, other: Volumes, nb: np.ndarray) -> np.ndarray:
        if not isinstance(other, BoxVolumes):
            return super().overlap(na, other, nb)
        self.ensure(na)
        other.ensure(nb)
        return box_query.boxes_overlap(self.rows[na],
                                       other.rows[nb][:, box_query.SWAP])

    def collide_fast(self, other: "BoxVolumes",
                     triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray]
                     ) -> tuple[np.ndarray, np.ndarray, int]:
        """Two box trees level by level in whole-array passes; the caller's exact test on
        the overlapping leaves. Returns the hit triangle pairs (ta, tb) and the number of
        triangle tests."""
        sa, sb = box_query.cross_candidates(self.tree, self._refit(), other.tree,
                                            other._refit())
        ta = np.take(self.tree.slot_tri, sa).astype(np.int64)
        tb = np.take(other.tree.slot_tri, sb).astype(np.int64)
        hit = triangle_test(ta, tb) if ta.size else np.zeros(0, bool)
        return ta[hit], tb[hit], int(ta.size)


class BoxTree(Method):
    id = "box-tree"
    label = "Box tree, bottom-up refit"
    description = ("Balanced float32 AABB trees refitted from the evaluated mesh every frame "
                   "(exact for any deformation; fastest between two characters)")
    fallback = None

    def prepare(self, rig: Rig) -> BoxTreeData:
        return BoxTreeData(build(rig.rest_positions, rig.triangles, welds.vertex_weld_ids(rig)))

    def load(self, arrays: dict[str, np.ndarray]) -> BoxTreeData:
        return BoxTreeData.from_arrays(arrays)

    def aabb_tree(self, prepared: BoxTreeData) -> SelfTree:
        """Its tree is the one self-collision uses: no second build."""
        return prepared.tree

    def summary(self, prepared: BoxTreeData) -> str:
        return f"{int(prepared.tree.n_slots)} leaf boxes"

    def volumes(self, rig: Rig, prepared: BoxTreeData, frame: Frame) -> BoxVolumes:
        return BoxVolumes(prepared.tree, frame, self.id)

    def drawable(self, rig: Rig, prepared: BoxTreeData, frame: Frame, level: int) -> Drawable:
        """The non-empty boxes of one level of the tree at this frame."""
        rows = BoxVolumes(prepared.tree, frame)._refit()[min(max(level, 0), prepared.tree.height)]
        lo = rows[:, LO].astype(np.float64)
        hi = -rows[:, NEG_HI].astype(np.float64)
        keep = np.isfinite(lo).all(axis=1)
        lo, hi = lo[keep], hi[keep]
        bits = np.array([[k & 1, k >> 1 & 1, k >> 2 & 1] for k in range(8)], dtype=bool)
        corners = np.where(bits[None], hi[:, None, :], lo[:, None, :])
        return Drawable(corners=corners)
