"""Sphere tree with the on-demand Preserve Volume refit (core.bounds.refit_dqs) as a method.

`sphere-tree` (LBS) passes Preserve Volume rigs on to this one; rigs whose evaluated mesh
is not determined by the bone matrices go on to `bottom-up`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..bounds import refit_dqs, sphere_tree
from ..rig import Pose, Rig
from .base import Frame
from .sphere_tree import (
    SphereTreeMethod,
    SphereVolumes,
    TreeData,
    bottom_up_volumes,
    build_tree,
    on_demand_or_bottom_up,
    on_demand_volumes,
    rig_limits,
)


@dataclass
class PvTreeData(TreeData):
    """The tree and its `refit_dqs.DqsBounds`."""

    @classmethod
    def from_arrays(cls, d: dict[str, np.ndarray]) -> "PvTreeData":
        tree = sphere_tree.SphereTree(**{k[5:]: v for k, v in d.items() if k.startswith("tree.")})
        b = {k[7:]: v for k, v in d.items() if k.startswith("bounds.")}
        return cls(tree, refit_dqs.DqsBounds(**b) if b else None)


class PvSphereTree(SphereTreeMethod):
    id = "sphere-tree-pv"
    label = "Sphere tree, on-demand Preserve Volume refit"
    description = ("Refit only the spheres a query reaches, from the bone dual quaternions "
                   "(a bound of Blender's Preserve Volume, after Kavan, O'Sullivan & Žára 2006)")
    fallback = "bottom-up"
    bounds_fn = staticmethod(refit_dqs.dqs_bounds)

    def supports(self, rig: Rig) -> str | None:
        if rig.unsupported:
            return rig_limits(rig)
        if not rig.preserve_volume:
            return "Preserve Volume is off (the LBS refit applies)"
        return None

    def prepare(self, rig: Rig) -> PvTreeData:
        tree = build_tree(rig)
        return PvTreeData(tree, refit_dqs.dqs_bounds(tree, rig))

    def load(self, arrays: dict[str, np.ndarray]) -> PvTreeData:
        return PvTreeData.from_arrays(arrays)

    def frame_method(self, prepared: PvTreeData, pose: Pose | None) -> str:
        return on_demand_or_bottom_up(self, prepared, pose)

    def volumes(self, rig: Rig, prepared: PvTreeData, frame: Frame) -> SphereVolumes:
        tree, bounds = prepared.tree, prepared.bounds
        if frame.pose is None or bounds is None:
            return bottom_up_volumes(tree, frame)
        dq_frame = refit_dqs.with_float32(refit_dqs.dqs_frame(frame.pose, tree, rig.bone_rest),
                                          frame.pose, bounds)
        return on_demand_volumes(
            tree, frame,
            lambda nodes: refit_dqs.refit_on_demand_dqs(tree, bounds, dq_frame, nodes), self.id)
