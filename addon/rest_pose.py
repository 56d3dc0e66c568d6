"""The rest pose's colliding pairs: armatures switched to Rest Position for one evaluation,
then restored. The one rule behind the panel's *Ignore Rest Contacts*
(`addon.rest_contacts`) and `scan --ignore-rest-contacts` (`Scanner.rest_pose_contacts`).
"""
from __future__ import annotations

import numpy as np

from ..core import scan as core_scan
from ..core.methods import registry
from . import evaluation, extract, reference


def rest_pose_pairs(meshes: list, objects: list, self_collision: bool,
                    rebuild: bool = False) -> list[tuple[int, int, np.ndarray]]:
    """Triangle pairs (indices into the rest pose's evaluated triangles) colliding in the
    rest pose: armatures switched to Rest Position for the evaluation, then restored (those
    deforming the meshes, and those whose bones rigid props hang from). The one rule
    behind the panel's *Ignore Rest Contacts* and `scan --ignore-rest-contacts`.
    Bottom-up from the evaluated positions (the pose bones' matrices do not follow Rest
    Position, so the LBS bound must not be used), or Blender's BVHTree with `rebuild`."""
    import bpy

    arms = [a for ob in meshes for a in extract.armatures_of(ob)]
    with extract.rest_position(arms):
        dg = evaluation.depsgraph()
        frame = bpy.context.scene.frame_current
        for ob, obj in zip(meshes, objects):
            extract.check_topology(ob, ob.evaluated_get(dg).data, obj.rig, frame)
        frames = [extract.evaluated_frame(ob, dg, obj.rig) for ob, obj in zip(meshes, objects)]
        positions, tris = [f[0] for f in frames], [f[1] for f in frames]
        if rebuild:
            return reference.bvhtree_pairs(objects, positions, self_collision, tris)
        return core_scan.query_frame(objects, positions, [None] * len(objects),
                                     mode=registry.any_object().id,
                                     self_collision=self_collision,
                                     triangles=tris).pairs
