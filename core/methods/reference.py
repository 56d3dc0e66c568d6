"""Blender's own `BVHTree`, rebuilt every frame from the evaluated triangles: the reference
every method is checked against (`scan --method rebuild`).

It lives in the registry so that the panel, the CLI and the JSON name it like any other
method, but its pairs come from Blender (`addon.scanner.bvhtree_pairs`): the numpy core
has no volumes for it (`in_core` is False) and prepares nothing beyond the rig.
"""
from __future__ import annotations

import numpy as np

from ..rig import Rig
from .base import Frame, Method, Volumes


class NoData:
    """The reference keeps nothing per rig."""

    def arrays(self) -> dict[str, np.ndarray]:
        return {}


class BlenderRebuild(Method):
    id = "rebuild"
    label = "Blender BVHTree, rebuilt every frame (reference)"
    description = "Blender's own BVHTree.overlap on the evaluated triangles of each frame"
    fallback = None
    in_core = False

    def prepare(self, rig: Rig) -> NoData:
        return NoData()

    def load(self, arrays: dict[str, np.ndarray]) -> NoData:
        return NoData()

    def volumes(self, rig: Rig, prepared: NoData, frame: Frame) -> Volumes:
        raise NotImplementedError("the reference method is answered by Blender "
                                  "(addon.scanner.bvhtree_pairs), not by the numpy core")
