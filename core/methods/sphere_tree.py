"""Sphere trees (Kavan & Žára 2005) as methods: the on-demand LBS refit, and the bottom-up
refit from the evaluated mesh that is exact for any deformation (the end of every chain).

The tree is built once on the rest pose (`core.bounds.sphere_tree`); per frame a `SphereVolumes`
computes only the spheres a query reaches. Leaves take the minimal ball of their frame
triangle (exact, and cheaper than any bound); inner nodes take the method's bound.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..bounds import refit, sphere_tree
from ..bounds.balls import minimal_balls
from ..bounds.float32_rounding import spheres_float32
from ..cache import derived
from ..rig import Pose, Rig
from .base import Drawable, Frame, Hierarchy, LazySphereVolumes, Method

# What storage keeps of a `TreeData` (docs/storage.md §3): not the node vertex sets, and of
# the bounds only their corner rows (the rest of the bounds is recomputed at load in a
# fraction of the build); rest spheres in float32, grown to contain the float64 ones
# (`spheres_float32`, docs/storage.md §2).
TREE = "tree."
BOUNDS = "bounds."
DERIVED = (TREE + "node_vert_ptr", TREE + "node_verts")
KEPT_BOUNDS = ("corner_ptr", "entry_ptr", "entry_slot", "entry_weight")


def build_tree(rig: Rig) -> sphere_tree.SphereTree:
    """The rest-pose tree, with node vertex sets over whole polygons: Blender re-splits
    quads per frame, so the bounds must hold for either split."""
    return sphere_tree.build(rig.rest_positions, rig.triangles, tri_polygon=rig.tri_polygon,
                             poly_ptr=rig.poly_ptr, poly_verts=rig.poly_verts)


def _hierarchy(tree: sphere_tree.SphereTree) -> Hierarchy:
    """The tree's `Hierarchy`, made once per tree (every frame's volumes share it)."""
    return derived(tree, "hierarchy", lambda: Hierarchy.one_triangle_per_leaf(
        tree.first_child, tree.child_count, tree.leaf_tri))


def bottom_up_volumes(tree: sphere_tree.SphereTree, frame: Frame) -> "SphereVolumes":
    """Every sphere of `tree` refitted from the frame's evaluated mesh (exact for any
    deformation): what every sphere-tree method does when the pose is unknown."""
    eager = refit.refit_bottom_up(tree, frame.triangles, frame.positions)
    return SphereVolumes(tree, eager=eager, method_id="bottom-up")


def on_demand_volumes(tree: sphere_tree.SphereTree, frame: Frame,
                      inner_refit: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
                      method_id: str) -> "SphereVolumes":
    """Lazy spheres of an on-demand method: leaves take the exact ball of their frame
    triangle (cheaper than any bound, and exact), inner nodes `inner_refit(nodes)`, the
    method's bound of the node's deformed vertices."""
    positions, tris = frame.positions, frame.triangles

    def refit_nodes(nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        leaf = tree.leaf_tri[nodes] >= 0
        if leaf.all():
            return refit.leaf_spheres(tree, tris, positions, nodes)
        c = np.empty((nodes.size, 3))
        r = np.empty(nodes.size)
        c[leaf], r[leaf] = refit.leaf_spheres(tree, tris, positions, nodes[leaf])
        c[~leaf], r[~leaf] = inner_refit(nodes[~leaf])
        return c, r

    return SphereVolumes(tree, refit_fn=refit_nodes, method_id=method_id)


class SphereVolumes(LazySphereVolumes):
    """World-space spheres of one tree at one frame, computed the first time they are
    needed by `refit_fn(nodes) -> (centers, radii)`; `eager` gives all of them up front."""

    def __init__(self, tree: sphere_tree.SphereTree,
                 refit_fn: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
                 eager: tuple[np.ndarray, np.ndarray] | None = None,
                 method_id: str | None = None):
        super().__init__(_hierarchy(tree), refit_fn, eager, method_id)
        self.tree = tree


@dataclass
class TreeData:
    """Prepared data of the sphere-tree methods: the tree, and the LBS bounds if any."""

    tree: sphere_tree.SphereTree
    bounds: refit.LbsBounds | None = None

    def arrays(self) -> dict[str, np.ndarray]:
        out = {f"tree.{k}": v for k, v in self.tree.arrays().items()}
        if self.bounds is not None:
            out.update({f"bounds.{k}": v for k, v in self.bounds.arrays().items()})
        return out

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "TreeData":
        tree = sphere_tree.SphereTree(**{k[5:]: v for k, v in d.items() if k.startswith("tree.")})
        b = {k[7:]: v for k, v in d.items() if k.startswith("bounds.")}
        return cls(tree, refit.LbsBounds(**b) if b else None)


class SphereTreeMethod(Method):
    """What the sphere-tree methods share: their data (`TreeData`), its storage, its
    count and its drawing. `bounds_fn(tree, rig, corners=...)` rebuilds the method's
    bounds at load from their stored corner rows (None: a method without bounds)."""

    bounds_fn: Callable | None = None

    def load(self, arrays: dict[str, np.ndarray]) -> TreeData:
        return TreeData.from_arrays(arrays)

    def compact(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        kept = {BOUNDS + k for k in KEPT_BOUNDS}
        out = {k: v for k, v in arrays.items()
               if k not in DERIVED and (k in kept or not k.startswith(BOUNDS))}
        try:
            out[TREE + "centers"], out[TREE + "radii"] = spheres_float32(
                arrays[TREE + "centers"], arrays[TREE + "radii"])
        except ValueError:
            pass                           # beyond float32: stored exactly
        return out

    def expand(self, arrays: dict[str, np.ndarray], rig: Rig) -> dict[str, np.ndarray]:
        d = dict(arrays)
        for k in ("centers", "radii"):
            d[TREE + k] = d[TREE + k].astype(np.float64)
        if TREE + "node_verts" not in d:
            d[TREE + "node_vert_ptr"], d[TREE + "node_verts"] = sphere_tree.node_vertices(
                d[TREE + "parent"], d[TREE + "leaf_tri"], d[TREE + "level_ptr"], rig)
        full = any(k.startswith(BOUNDS) and k[len(BOUNDS):] not in KEPT_BOUNDS for k in d)
        if BOUNDS + "corner_ptr" in d and not full and self.bounds_fn is not None:
            tree = sphere_tree.SphereTree(**{k[len(TREE):]: v for k, v in d.items()
                                             if k.startswith(TREE)})
            corners = tuple(d.pop(BOUNDS + k) for k in KEPT_BOUNDS)
            d.update({BOUNDS + k: v for k, v in
                      self.bounds_fn(tree, rig, corners=corners).arrays().items()})
        return d

    def summary(self, prepared: TreeData) -> str:
        return f"{prepared.tree.n_nodes} spheres"

    def drawable(self, rig: Rig, prepared: TreeData, frame: Frame, level: int) -> Drawable:
        """The exact balls of one level's nodes at this frame (their evaluated vertices)."""
        t = prepared.tree
        lp = t.level_ptr
        level = min(max(int(level), 0), lp.size - 2)
        ptr = t.node_vert_ptr[lp[level]:lp[level + 1] + 1]
        verts = t.node_verts[ptr[0]:ptr[-1]]
        c, r = minimal_balls(np.asarray(frame.positions, np.float64)[verts], ptr - ptr[0])
        return Drawable(centers=c, radii=r)


def on_demand_or_bottom_up(method: Method, prepared: "TreeData", pose: Pose | None) -> str:
    """On-demand sphere-tree methods refit bottom-up when the frame has no pose (or no
    bounds were built): the id their `volumes` hands out."""
    if pose is None or getattr(prepared, "bounds", None) is None:
        return BottomUpSphereTree.id
    return method.id


def rig_limits(rig: Rig) -> str | None:
    """Why the rest mesh plus bone matrices do not determine Blender's result, if so."""
    return "; ".join(rig.unsupported) if rig.unsupported else None


class LbsSphereTree(SphereTreeMethod):
    id = "sphere-tree"
    label = "Sphere tree, on-demand LBS refit"
    description = ("Refit only the spheres a query reaches, from the bone matrices "
                   "(Kavan & Žára 2005)")
    fallback = "sphere-tree-pv"     # Preserve Volume rigs; it passes the rest to bottom-up
    bounds_fn = staticmethod(refit.lbs_bounds)

    def supports(self, rig: Rig) -> str | None:
        if rig.unsupported:
            return rig_limits(rig)
        if rig.preserve_volume:
            return "Preserve Volume (dual quaternions): the LBS bound does not hold"
        return None

    def prepare(self, rig: Rig) -> TreeData:
        tree = build_tree(rig)
        return TreeData(tree, refit.lbs_bounds(tree, rig))

    def frame_method(self, prepared: TreeData, pose: Pose | None) -> str:
        return on_demand_or_bottom_up(self, prepared, pose)

    def volumes(self, rig: Rig, prepared: TreeData, frame: Frame) -> SphereVolumes:
        tree, bounds = prepared.tree, prepared.bounds
        if frame.pose is None or bounds is None:
            return bottom_up_volumes(tree, frame)
        transforms = refit.frame_transforms(frame.pose, tree)
        return on_demand_volumes(
            tree, frame, lambda nodes: refit.refit_on_demand(tree, bounds, transforms, nodes),
            self.id)


class BottomUpSphereTree(SphereTreeMethod):
    id = "bottom-up"
    label = "Sphere tree, bottom-up refit"
    description = "Refit every sphere from the evaluated mesh, leaves first (exact for any deformation)"
    fallback = None
    for_any_object = True

    def adopt(self, prepared) -> TreeData | None:
        """Any sphere-tree method's tree serves (its bounds are not needed)."""
        return TreeData(prepared.tree) if isinstance(prepared, TreeData) else None

    def prepare(self, rig: Rig) -> TreeData:
        return TreeData(build_tree(rig))

    def volumes(self, rig: Rig, prepared: TreeData, frame: Frame) -> SphereVolumes:
        return bottom_up_volumes(prepared.tree, frame)
