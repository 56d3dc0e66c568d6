"""Reading characters from Blender: bpy objects -> `core.rig.Rig` / `core.rig.Pose`, and
fast reads of evaluated positions; everything Blender-specific about reading a character
lives in this package, so the core stays pure numpy. `stack` reads what a mesh's settings
say (its modifier stack, its armature, what moves it; which meshes are characters),
`mesh` the mesh arrays (and `RigError`), `rig` the rig of a mesh's own data (bones,
weights, rigid props), `surface` which surface is collided (the evaluated one when
modifiers change the topology) and its per-frame check, `pose` the per-frame state (bone
matrices, world matrices, evaluated positions and triangles). Callers use the names
re-exported here (``extract.rig_from_object``); patching one of them here reaches callers
outside the package only.
"""
from __future__ import annotations

from .mesh import (
    RigError,
    read_loop_triangles,
    read_polygons,
    read_topology,
    read_topology_arrays,
    same_topology,
)
from .pose import evaluated_frame, evaluated_positions, pose_from_object, rigid_pose
from .rig import mesh_to_armature_at_rest, read_weights, source_rig
from .stack import (
    ModifierReport,
    armature_parent,
    armatures_of,
    character_meshes,
    deformers,
    is_evaluated,
    modifier_label,
    modifier_report,
    not_evaluated,
    not_evaluated_note,
    plain_stack,
    skinned_meshes,
    skip_note,
    stack_labels,
    what_moves,
)
from .surface import (
    FACE_TAG,
    check_rig_matches,
    check_topology,
    describe_surface,
    own_faces,
    rest_position,
    rig_from_object,
    surface_rig,
)

__all__ = [
    "FACE_TAG", "ModifierReport", "RigError", "armature_parent", "armatures_of",
    "character_meshes", "check_rig_matches", "check_topology", "deformers", "describe_surface", "evaluated_frame",
    "evaluated_positions", "is_evaluated", "mesh_to_armature_at_rest", "modifier_label",
    "modifier_report", "not_evaluated", "not_evaluated_note", "own_faces", "plain_stack",
    "pose_from_object", "read_loop_triangles", "read_polygons", "read_topology",
    "read_topology_arrays", "read_weights", "rest_position", "rig_from_object", "rigid_pose",
    "same_topology", "skinned_meshes", "skip_note", "source_rig", "stack_labels",
    "surface_rig", "what_moves",
]
