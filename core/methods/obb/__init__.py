"""OBB trees over the skeleton, updated by CAB (Schmidl, Walker & Lin 2004), as the
collision method `obb`.

Rest: `build.build` (one covariance box per bone's rigid part, a binary tree following
the skeleton). Per frame: `update.leaf_boxes_lbs` bounds each leaf from the bone matrices
(or, when the pose is unknown, fits its rest axes to the evaluated vertices), and
`update.update_tree` computes the parents bottom-up with CAB (or the paper's baselines,
covariance and AABB*, for the benchmark). Two OBB trees meet by the 15-axis separating
axis test; the triangles of a surviving leaf pair are filtered by per-triangle AABBs
(`core.hierarchy.sweep`) before the exact test. Soundness: docs/obb_cab.md.

Self-collision is not offered (`supports_self = False`): a bone's leaf against itself is
its whole cartesian product; self-collision runs on the object's own AABB tree.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ...hierarchy import sweep
from ...rig import Rig
from ..base import Drawable, Frame, Method, Volumes
from . import update
from .build import ObbData, build

#: Per-triangle AABBs for the leaf filter grow by this × the coordinates' magnitude, far
#: above the triangle test's touching tolerance (docs/triangle_test.md).
TRI_PAD = 2.0 ** -20


class ObbVolumes(Volumes):
    """Every box of one OBB tree at one frame (computed at construction: a bottom-up CAB
    pass over a few hundred nodes), as arrays `center` (N, 3), `axes` (N, 3, 3) rows,
    `extent` (N, 3), world space: also what the viewport draws."""

    kind = "box"
    whole_tree_pass = True

    def __init__(self, data: ObbData, frame: Frame, how: str = "cab",
                 method_id: str | None = None):
        super().__init__(data.hierarchy, method_id)
        self.data = data
        self.frame = frame
        if frame.pose is not None:
            leaf = update.leaf_boxes_lbs(data, frame.pose)
        else:
            leaf = update.leaf_boxes_from_positions(data, frame.positions)
        self.center, self.axes, self.extent = update.update_tree(data, leaf, frame.pose, how)
        self.radius = np.linalg.norm(self.extent, axis=1)
        self.refitted = int(self.center.shape[0])
        self._tri_boxes = None
        pos = frame.positions
        self.tri_pad = TRI_PAD * max(1.0, float(np.abs(pos).max(initial=0.0)))
        self.cartesian = 0      # triangle pairs of the surviving leaf pairs, unfiltered
        self.box_tests = 0      # box pairs tested by `collide_fast`
        self._collect: list | None = None
        self.leaf_pair_list = (np.zeros(0, np.int64), np.zeros(0, np.int64))

    def ensure(self, nodes: np.ndarray) -> None:
        return None

    def size(self, nodes: np.ndarray) -> np.ndarray:
        return self.radius[nodes]

    def spheres(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.center[nodes], self.radius[nodes]

    def overlap(self, na: np.ndarray, other: Volumes, nb: np.ndarray) -> np.ndarray:
        if not isinstance(other, ObbVolumes):
            return super().overlap(na, other, nb)
        return update.obb_overlap(self.center[na], self.axes[na], self.extent[na],
                                  other.center[nb], other.axes[nb], other.extent[nb])

    def triangle_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-triangle AABBs of the frame (T, 3) x 2, padded by TRI_PAD (once per frame)."""
        if self._tri_boxes is None:
            self._tri_boxes = sweep.triangle_boxes(self.frame.positions, self.frame.triangles,
                                                   self.tri_pad)
        return self._tri_boxes

    def leaf_pairs(self, la: np.ndarray, other: "ObbVolumes", lb: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The traversal's hook for overlapping leaf pairs. While `collide_fast` collects
        (the usual case) it records them and returns nothing; otherwise it returns the
        candidate triangle pairs at once (`candidates`)."""
        if self._collect is not None:
            self._collect.append((la, lb))
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return self.candidates(la, other, lb)

    def candidates(self, la: np.ndarray, other: "ObbVolumes", lb: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """Exactly the triangle pairs of the leaf pairs (la[k], lb[k]) whose (padded)
        AABBs overlap: a superset of the intersecting ones.

        One grid over the triangles of all the leaves involved (`sweep.grid_pairs`, one
        group), then the pairs whose leaves form one of the given leaf pairs: the work
        follows the triangles and the output, not the leaves' cartesian products."""
        h, ho = self.hierarchy, other.hierarchy
        self.cartesian += int(((h.leaf_ptr[la + 1] - h.leaf_ptr[la])
                               * (ho.leaf_ptr[lb + 1] - ho.leaf_ptr[lb])).sum())
        na, nb = self.data.tri_node, other.data.tri_node
        ta = np.nonzero(np.isin(na, la))[0]
        tb = np.nonzero(np.isin(nb, lb))[0]
        lo_a, hi_a = self.triangle_boxes()
        lo_b, hi_b = other.triangle_boxes()
        pa, pb = sweep.grid_pairs(np.zeros(ta.size, np.int64), ta, lo_a, hi_a,
                                  np.zeros(tb.size, np.int64), tb, lo_b, hi_b)
        nbn = int(ho.n_nodes)
        wanted = np.unique(la.astype(np.int64) * nbn + lb)
        key = na[pa].astype(np.int64) * nbn + nb[pb]
        keep = np.isin(key, wanted)
        return pa[keep], pb[keep]

    def collide_fast(self, other: "ObbVolumes",
                     triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray]
                     ) -> tuple[np.ndarray, np.ndarray, int]:
        """The generic traversal's fast path for two OBB trees: the box traversal collects
        every overlapping leaf pair, then one `candidates` call filters all their
        triangles together and the caller's exact test decides. Returns the hit triangle
        pairs (ta, tb) and the number of triangle tests."""
        from ...hierarchy import traversal

        self._collect = []
        try:
            _, st = traversal.collide(self, other, lambda a, b: np.zeros(a.size, bool),
                                      roots=(np.zeros(1, np.int64), np.zeros(1, np.int64)))
            pairs = self._collect
        finally:
            self._collect = None
        self.box_tests += st.volume_tests
        self.leaf_pair_list = (np.concatenate([p[0] for p in pairs]) if pairs else
                               np.zeros(0, np.int64),
                               np.concatenate([p[1] for p in pairs]) if pairs else
                               np.zeros(0, np.int64))
        la, lb = self.leaf_pair_list
        if la.size == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
        ta, tb = self.candidates(la, other, lb)
        hit = triangle_test(ta, tb) if ta.size else np.zeros(0, bool)
        return ta[hit], tb[hit], int(ta.size)

    def corners(self, nodes: np.ndarray | None = None) -> np.ndarray:
        """(n, 8, 3) corners of `nodes` (all nodes by default) for drawing."""
        nodes = np.arange(self.center.shape[0]) if nodes is None else nodes
        return update.corners(self.center[nodes], self.axes[nodes], self.extent[nodes])


class ObbCab(Method):
    id = "obb"
    label = "OBB tree over the skeleton, CAB update"
    description = ("One oriented box per bone, parents by CAB (Schmidl, Walker & Lin 2004); "
                   "between characters only")
    fallback = "bottom-up"
    supports_self = False

    def supports(self, rig: Rig) -> str | None:
        if rig.unsupported:
            return "; ".join(rig.unsupported)
        if rig.preserve_volume:
            return "Preserve Volume (dual quaternions): the LBS leaf bound does not hold"
        if rig.n_triangles == 0:
            return "no triangles"
        return None

    def prepare(self, rig: Rig) -> ObbData:
        return build(rig)

    def summary(self, prepared: ObbData) -> str:
        return f"{int(prepared.box_center.shape[0])} oriented boxes"

    def load(self, arrays: dict[str, np.ndarray]) -> ObbData:
        return ObbData.from_arrays(arrays)

    def volumes(self, rig: Rig, prepared: ObbData, frame: Frame, how: str = "cab"
                ) -> ObbVolumes:
        return ObbVolumes(prepared, frame, how, self.id)

    def drawable(self, rig: Rig, prepared: ObbData, frame: Frame, level: int) -> Drawable:
        """The boxes of one tree level (depth from the root; leaves above it stay shown)."""
        v = ObbVolumes(prepared, frame)
        depth = _depth_from_root(prepared)
        lvl = min(max(level, 0), int(depth.max()))
        nodes = np.nonzero((depth == lvl) | ((depth < lvl) & (prepared.first_child < 0)))[0]
        return Drawable(corners=v.corners(nodes))


def _depth_from_root(data: ObbData) -> np.ndarray:
    N = data.first_child.shape[0]
    depth = np.zeros(N, np.int64)
    for n in range(N):                    # breadth-first: parents first (N ~ 2 × bones)
        f = data.first_child[n]
        if f >= 0:
            depth[f:f + data.child_count[n]] = depth[n] + 1
    return depth
