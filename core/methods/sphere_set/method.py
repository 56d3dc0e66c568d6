"""Sphere sets (Wang et al. 2006) animated with the skeleton, as the method `sphere-set`.

Rest (`build`): a set of N spheres whose union contains every rest triangle, with a
sphere per triangle that groups them (`SphereSet.info["triangle_sphere"]`; it need not
contain the triangle: each group is bounded by its own minimal ball below), from the
variational fit (`core.methods.sphere_set.variational.fit`) when it is there, else the top-down
baseline (`core.methods.sphere_set.baselines.top_down`). Each sphere holding triangles becomes a
leaf of a small binary hierarchy: the leaves are split top-down by their centres
(`sphere_tree.split_binary`, Quinlan's rule), so that inner nodes are refitted on demand
too and a query visits few of them.

Every node takes the vertices of WHOLE polygons of its triangles (Blender re-splits quads
per frame) and, from them, the joint sets, weight intervals and corners of the on-demand
refit (`refit.lbs_bounds`, or `refit_dqs.dqs_bounds` when the rig uses Preserve Volume).
A node's rest sphere is the exact minimal ball of those vertices: for a leaf that is never
larger than the set's own sphere grown to the whole polygons (which contains the same
vertices), so the set decides the grouping and the refit starts from the tightest sound
sphere. Per frame a node's sphere is the refit bound of its deformed vertices (LBS or
Preserve Volume, with Blender's float32 margin), computed only when a query reaches it;
without a pose (rest contacts) every node is the minimal ball of its evaluated vertices.

Queries: overlapping sphere pairs give candidate triangle pairs; the triangles of a leaf
pair are first filtered by padded per-triangle AABBs (`sweep.leaf_pair_candidates`, exact:
it drops only pairs whose boxes are apart), and the caller's exact triangle test decides.
So the answer between characters equals the sphere tree's and brute force's.

Self-collision: the method has no `Method.self_pairs` of its own, so the scan answers it on
the object's exact AABB self tree (`core.aabb_tree`): a sphere-set object's self pairs
ARE the self tree's. The set's own self traversal (`traversal.collide(volumes, None, test)`: a leaf against itself gives
its own triangle pairs, every other overlapping pair the filtered ones) is exact as well and
gives the same pairs (tests/core/test_sphere_set_method.py); it is slower than the self tree
(the pairs within one sphere are all tested), which is why the scan does not use it.
"""
from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...bounds import refit, refit_dqs, sphere_tree
from ...bounds.balls import minimal_balls
from ...cache import derived
from ...hierarchy import sweep
from ...rig import Rig
from ..base import Drawable, Frame, Hierarchy, LazySphereVolumes, Method
from ..obb import TRI_PAD
from . import baselines
from .types import SphereSet

#: Spheres per set when `prepare` builds one (the panel's *Spheres* overrides it).
COUNT = 64
#: Seed of the variational fit when `prepare` builds one.
SEED = 0

_VARIATIONAL = __name__.rsplit(".", 2)[0] + ".sphere_set.variational"


def variational_available() -> bool:
    """Whether `core.methods.sphere_set.variational` (the fit of Wang et al.) is installed."""
    try:
        return importlib.util.find_spec(_VARIATIONAL) is not None
    except (ImportError, ValueError):
        return False


def fit_set(vertices: np.ndarray, triangles: np.ndarray, count: int, seed: int = 0,
            progress: Callable | None = None, should_stop: Callable | None = None,
            builder: str | None = None) -> SphereSet:
    """A sphere set over the rest mesh: `builder` "variational" (the default when it is
    available), "top-down" or "grid" (`baselines`). Raises ValueError for a bad count,
    ImportError when "variational" is asked and missing."""
    if int(count) < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    if builder is None:
        builder = "variational" if variational_available() else "top-down"
    if builder == "variational":
        from . import variational
        return variational.fit(np.asarray(vertices, np.float64), np.asarray(triangles, np.int64),
                               int(count), seed=seed, progress=progress,
                               should_stop=should_stop)
    try:
        fn = baselines.BUILDERS[builder]
    except KeyError:
        raise ValueError(f"unknown sphere-set builder '{builder}'") from None
    return fn(vertices, triangles, int(count), seed=seed)


@dataclass
class SetData:
    """Prepared data of `sphere-set` (arrays only).

    Attributes:
        set_centers, set_radii: (S, 3), (S,) the fitted set (rest, mesh-local).
        set_info: (4,) float64 outside volume, mesh volume, build seconds, seed.
        builder: () str which builder made the set ("variational", "top-down", "grid").
        tri_sphere: (T,) int64 the set's sphere containing each rest triangle.
        hier: the hierarchy as a `SphereTree` (rest minimal balls, node vertex sets over
            whole polygons, BFS; `leaf_tri` is -1 everywhere: leaves hold many triangles).
            (Stored under "hier.", the name it has had since the first stored sets.)
        leaf_ptr, leaf_tris: the `Hierarchy` CSR of each leaf node's triangles.
        node_sphere: (N,) int64 the set's sphere of a leaf node, -1 for inner nodes.
        bounds: `refit.LbsBounds`, or `refit_dqs.DqsBounds` for Preserve Volume rigs.
    """

    set_centers: np.ndarray
    set_radii: np.ndarray
    set_info: np.ndarray
    builder: str
    tri_sphere: np.ndarray
    hier: sphere_tree.SphereTree
    leaf_ptr: np.ndarray
    leaf_tris: np.ndarray
    node_sphere: np.ndarray
    bounds: refit.LbsBounds

    @property
    def hierarchy(self) -> Hierarchy:
        return derived(self, "hierarchy", lambda: Hierarchy(
            self.hier.first_child, self.hier.child_count, self.leaf_ptr, self.leaf_tris))

    @property
    def sphere_set(self) -> SphereSet:
        ov, mv, secs, seed = self.set_info.tolist()
        return SphereSet(self.set_centers, self.set_radii, ov, mv, secs,
                         {"triangle_sphere": self.tri_sphere, "builder": self.builder,
                          "seed": int(seed)})

    @property
    def preserve_volume(self) -> bool:
        return isinstance(self.bounds, refit_dqs.DqsBounds)

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"set.centers": self.set_centers, "set.radii": self.set_radii,
               "set.info": self.set_info, "set.builder": np.array(self.builder),
               "tri_sphere": self.tri_sphere, "leaf_ptr": self.leaf_ptr,
               "leaf_tris": self.leaf_tris, "node_sphere": self.node_sphere}
        out.update({f"hier.{k}": v for k, v in self.hier.arrays().items()})
        kind = "dqs" if self.preserve_volume else "lbs"
        out.update({f"{kind}.{k}": v for k, v in self.bounds.arrays().items()})
        return out

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "SetData":
        tree = sphere_tree.SphereTree(**{k[5:]: np.asarray(v) for k, v in d.items()
                                         if k.startswith("hier.")})
        if any(k.startswith("dqs.") for k in d):
            bounds = refit_dqs.DqsBounds(**{k[4:]: np.asarray(v) for k, v in d.items()
                                            if k.startswith("dqs.")})
        else:
            bounds = refit.LbsBounds(**{k[4:]: np.asarray(v) for k, v in d.items()
                                        if k.startswith("lbs.")})
        return cls(np.asarray(d["set.centers"], np.float64), np.asarray(d["set.radii"], np.float64),
                   np.asarray(d["set.info"], np.float64), str(d["set.builder"]),
                   np.asarray(d["tri_sphere"], np.int64), tree,
                   np.asarray(d["leaf_ptr"], np.int64), np.asarray(d["leaf_tris"], np.int64),
                   np.asarray(d["node_sphere"], np.int64), bounds)


def build_hierarchy(rig: Rig, s: SphereSet) -> SetData:
    """The collision data of set `s` over `rig` (see the module docstring)."""
    T = rig.n_triangles
    ts = np.asarray(s.info["triangle_sphere"], dtype=np.int64)
    if ts.shape != (T,) or (T and (ts.min() < 0 or ts.max() >= s.count)):
        raise ValueError("the sphere set's triangle_sphere does not match the mesh")
    V = rig.n_vertices
    used = np.unique(ts)                                  # spheres holding triangles
    L = used.size
    leaf_of = np.searchsorted(used, ts)                   # (T,) leaf index per triangle
    tri_order = np.argsort(leaf_of, kind="stable")
    lt_ptr = np.zeros(L + 1, np.int64)
    np.cumsum(np.bincount(leaf_of, minlength=L), out=lt_ptr[1:])
    # Vertex set per leaf: every corner of the polygons of its triangles.
    tv_ptr, tv = sphere_tree.polygon_vertex_sets(rig.triangles, rig.tri_polygon, rig.poly_ptr,
                                                 rig.poly_verts)
    owner = np.repeat(leaf_of, np.diff(tv_ptr))
    key = np.unique(owner * np.int64(V) + tv)
    lv_ptr = np.zeros(L + 1, np.int64)
    np.cumsum(np.bincount(key // V, minlength=L), out=lv_ptr[1:])
    lv = key % V
    # Leaf centres for the split: the minimal balls of the leaves' vertices.
    rest = np.asarray(rig.rest_positions, np.float64)
    leaf_c, _ = minimal_balls(rest[lv], lv_ptr)
    order, start, end, parent, depth = sphere_tree.split_binary(leaf_c, 1)
    vptr, verts = sphere_tree.node_vertex_sets_of(lv_ptr, lv, order, start, end, V)
    centers, radii = minimal_balls(rest[verts], vptr)
    N = start.size
    # Creation order is breadth-first with contiguous siblings (children of one split are
    # made together, level by level, parents in order).
    child_count = np.bincount(parent[1:], minlength=N).astype(np.int32)
    first_child = np.full(N, -1, np.int32)
    has = np.nonzero(child_count > 0)[0]
    first_child[has] = (np.searchsorted(parent[1:], has) + 1).astype(np.int32)
    is_leaf = (end - start) == 1
    leaf_idx = np.where(is_leaf, order[start], -1)        # leaf index (into `used`)
    counts = np.where(is_leaf, lt_ptr[np.maximum(leaf_idx, 0) + 1]
                      - lt_ptr[np.maximum(leaf_idx, 0)], 0)
    leaf_ptr = np.zeros(N + 1, np.int64)
    np.cumsum(counts, out=leaf_ptr[1:])
    ln = np.nonzero(is_leaf)[0]
    leaf_tris = np.concatenate([tri_order[lt_ptr[leaf_idx[n]]:lt_ptr[leaf_idx[n] + 1]]
                                for n in ln]) if ln.size else np.zeros(0, np.int64)
    level_ptr = np.zeros(int(depth.max()) + 2, np.int64)
    np.cumsum(np.bincount(depth, minlength=int(depth.max()) + 1), out=level_ptr[1:])
    tree = sphere_tree.SphereTree(
        centers=centers, radii=radii, first_child=first_child, child_count=child_count,
        parent=parent.astype(np.int32), depth=depth.astype(np.int32),
        leaf_tri=np.full(N, -1, np.int32), level_ptr=level_ptr, node_vert_ptr=vptr,
        node_verts=verts.astype(np.int64))
    bounds = (refit_dqs.dqs_bounds(tree, rig) if rig.preserve_volume
              else refit.lbs_bounds(tree, rig))
    node_sphere = np.where(is_leaf, used[np.maximum(leaf_idx, 0)], -1).astype(np.int64)
    info = np.array([s.outside_volume, s.mesh_volume, s.build_seconds,
                     float(s.info.get("seed", 0))], dtype=np.float64)
    return SetData(np.asarray(s.centers, np.float64), np.asarray(s.radii, np.float64), info,
                   str(s.info.get("builder", s.info.get("method", "variational"))), ts, tree,
                   leaf_ptr, leaf_tris.astype(np.int64), node_sphere, bounds)


def build(rig: Rig, count: int = COUNT, seed: int = SEED, progress: Callable | None = None,
          should_stop: Callable | None = None, builder: str | None = None) -> SetData:
    """Fit a set of `count` spheres over the rig's rest mesh and build its collision data."""
    t0 = time.perf_counter()
    s = fit_set(rig.rest_positions, rig.triangles, count, seed, progress, should_stop, builder)
    if not s.build_seconds:
        s.build_seconds = time.perf_counter() - t0
    s.info.setdefault("seed", seed)
    if "builder" not in s.info:
        s.info["builder"] = s.info.get("method", builder or
                                       ("variational" if variational_available() else "top-down"))
    return build_hierarchy(rig, s)


class SetVolumes(LazySphereVolumes):
    """The spheres of one set hierarchy at one frame, computed when first needed by
    `refit_fn(nodes) -> (centers, radii)` (or all up front, `eager`)."""

    whole_tree_pass = True

    def __init__(self, data: SetData, frame: Frame, refit_fn=None, eager=None,
                 method_id: str | None = None):
        super().__init__(data.hierarchy, refit_fn, eager, method_id)
        self.data = data
        self.frame = frame
        if eager is not None:
            self.refitted = data.hier.n_nodes
        self._tri_boxes = None
        self.tri_pad = TRI_PAD * max(1.0, float(np.abs(frame.positions).max(initial=0.0)))
        self.cartesian = 0          # triangle pairs of the overlapping leaf pairs, unfiltered

    def triangle_boxes(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-triangle AABBs of the frame, padded by TRI_PAD (once per frame)."""
        if self._tri_boxes is None:
            self._tri_boxes = sweep.triangle_boxes(self.frame.positions, self.frame.triangles,
                                                   self.tri_pad)
        return self._tri_boxes

    def leaf_pairs(self, la: np.ndarray, other: "SetVolumes", lb: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The traversal's hook for overlapping leaf pairs: their triangle pairs whose
        padded AABBs overlap (a superset of the intersecting ones)."""
        h, ho = self.hierarchy, other.hierarchy
        self.cartesian += int(((h.leaf_ptr[la + 1] - h.leaf_ptr[la])
                               * (ho.leaf_ptr[lb + 1] - ho.leaf_ptr[lb])).sum())
        lo_a, hi_a = self.triangle_boxes()
        lo_b, hi_b = other.triangle_boxes()
        return sweep.leaf_pair_candidates(h, la, lo_a, hi_a, ho, lb, lo_b, hi_b)

    def collide_fast(self, other: "SetVolumes",
                     triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray]
                     ) -> tuple[np.ndarray, np.ndarray, int]:
        """Two sets: the generic traversal with the leaf filter above (the scan sends pairs
        of one kind with this hook here, not through the stacked crowd traversal, whose
        leaves would give whole cartesian products)."""
        from ...hierarchy import traversal

        p, st = traversal.collide(self, other, triangle_test,
                                  roots=(np.zeros(1, np.int64), np.zeros(1, np.int64)))
        return p[:, 0], p[:, 1], st.triangle_tests


def _exact_nodes(data: SetData, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimal balls of every node's evaluated vertices (exact for any deformation)."""
    t = data.hier
    return minimal_balls(np.asarray(positions, np.float64)[t.node_verts], t.node_vert_ptr)


class SphereSetMethod(Method):
    id = "sphere-set"
    label = "Sphere set, on-demand refit"
    description = ("A variational sphere set (Wang et al. 2006) refitted from the bone "
                   "matrices (LBS or Preserve Volume), with a small hierarchy over it")
    fallback = "bottom-up"
    options = {"count": COUNT, "seed": SEED, "builder": None}
    reports_progress = True

    def supports(self, rig: Rig) -> str | None:
        if rig.unsupported:
            return "; ".join(rig.unsupported)
        if rig.n_triangles == 0:
            return "no triangles"
        return None

    def prepare(self, rig: Rig, count: int | None = None, seed: int | None = None,
                progress: Callable | None = None, should_stop: Callable | None = None,
                builder: str | None = None) -> SetData:
        return build(rig, COUNT if count is None else count, SEED if seed is None else seed,
                     progress, should_stop, builder)

    def built_options(self, prepared: SetData) -> dict[str, object]:
        return {"count": int(prepared.set_radii.size), "seed": int(prepared.set_info[3])}

    def summary(self, prepared: SetData) -> str:
        return f"{prepared.set_radii.size} spheres in the set"

    def load(self, arrays: dict[str, np.ndarray]) -> SetData:
        return SetData.from_arrays(arrays)

    def volumes(self, rig: Rig, prepared: SetData, frame: Frame) -> SetVolumes:
        data = prepared
        tree, bounds = data.hier, data.bounds
        if frame.pose is None:
            return SetVolumes(data, frame, eager=_exact_nodes(data, frame.positions),
                              method_id=self.id)
        if data.preserve_volume:
            dq = refit_dqs.with_float32(refit_dqs.dqs_frame(frame.pose, tree, rig.bone_rest),
                                        frame.pose, bounds)

            def fn(nodes):
                return refit_dqs.refit_on_demand_dqs(tree, bounds, dq, nodes)
        else:
            tf = refit.frame_transforms(frame.pose, tree)

            def fn(nodes):
                return refit.refit_on_demand(tree, bounds, tf, nodes)
        return SetVolumes(data, frame, refit_fn=fn, method_id=self.id)

    def drawable(self, rig: Rig, prepared: SetData, frame: Frame, level: int) -> Drawable:
        """The refitted spheres of one hierarchy level (depth from the root; leaves above
        it stay shown). The deepest level is the set itself, posed."""
        v = self.volumes(rig, prepared, frame)
        t = prepared.hier
        lvl = min(max(int(level), 0), int(t.depth.max()))
        nodes = np.nonzero((t.depth == lvl) | ((t.depth < lvl) & (t.first_child < 0)))[0]
        v.ensure(nodes)
        c, r = v.spheres(nodes)
        return Drawable(centers=c.copy(), radii=r.copy())

    def posed_set(self, rig: Rig, prepared: SetData, frame: Frame
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Every leaf sphere at this frame (the set, posed): (L, 3), (L,)."""
        d = self.drawable(rig, prepared, frame, 1 << 30)
        return d.centers, d.radii
