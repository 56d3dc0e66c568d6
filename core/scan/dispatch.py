"""Which method answers for an object in a query (`OWN`: its own, or one any object can
use), its volumes at a frame, and the triangles Blender draws at the frame."""
from __future__ import annotations

import numpy as np

from ..geometry import triangulation
from ..methods import registry
from ..methods.base import Method
from ..rig import Pose
from ..types import Frame, Volumes
from .objects import CollisionObject

#: A query's default: each object answers with its own method (with its fallbacks). The
#: other value of `query_frame`'s `mode` is the id of a `Method.for_any_object` method,
#: which every object then uses (`registry.any_object()`: the bottom-up sphere tree).
OWN = "on-demand"


def query_method(obj: CollisionObject, mode: str) -> Method:
    """The method answering for `obj` in a query of `mode`: its own (`OWN`), or the
    `Method.for_any_object` method that `mode` names."""
    if mode == OWN:
        return registry.get(obj.method)
    return registry.get(mode)


def check_mode(mode: str) -> None:
    """ValueError unless `mode` is `OWN` or the id of a `Method.for_any_object` method."""
    if mode == OWN:
        return
    try:
        ok = registry.get(mode).for_any_object
    except KeyError:
        ok = False
    if not ok:
        anyone = [m.id for m in registry.methods() if m.for_any_object]
        raise ValueError(f"mode must be one of {(OWN, *anyone)}")


def volumes(obj: CollisionObject, positions: np.ndarray, pose: Pose | None, mode: str,
            tris: np.ndarray) -> Volumes:
    """The frame's volumes of `obj`: its method's, or those of the method `mode` names
    (`query_method`). `Volumes.method_id` says which method answered."""
    m = query_method(obj, mode)
    v = m.volumes(obj.rig, obj.data_for(m), Frame(positions, tris, pose))
    if v.method_id is None:
        v.method_id = m.id
    return v


def frame_triangles(obj: CollisionObject, positions: np.ndarray) -> np.ndarray:
    """(T, 3) int32 the triangles Blender draws for `obj` at `positions` (quads re-split
    by Blender's rule; n-gons keep their rest triangles). Pass mesh-local positions for a
    bit-exact match with Blender; world positions agree up to rounding (see
    `core.geometry.triangulation`)."""
    return triangulation.frame_triangles(obj.rig, positions)


def frame_method(obj: CollisionObject, pose: Pose | None, mode: str) -> str:
    """The method whose volumes `volumes` would hand out for `obj` this frame (the JSON
    `refit` id), without making them (`Method.frame_method`: e.g. sphere-tree methods pass
    a frame without a pose to the bottom-up refit)."""
    m = query_method(obj, mode)
    return m.frame_method(obj.data_for(m), pose)
