"""Collision queries over several skinned objects, one frame at a time: the frame pipeline.

`prepare` (`objects`) builds, once per rig, what a query needs (the method's data, weld
ids for self-collision); `seams.seam_ids` decides, once per set of objects, which vertices
of different meshes are one vertex (`core.welds`). `query_frame` (`frame`) answers one
frame as its stages: the frame's inputs -> object pairs (the broad phase) -> seams ->
candidate triangle pairs of each object pair's volumes through the exact test (`between`)
-> self pairs (`within`); `pairs` turns the answer into polygon pairs. `pipeline` takes
a frame's inputs the rest of the way (the pairs that count, contacts, filters, the
record, the memo), configured once by `ScanSettings` (`settings`). Triangles are the
frame's (Blender re-splits deformed quads, `core.geometry.triangulation`): their indices
are the same at every frame, their vertices are not.

The names below are this package's public face; a stage's helpers live in its module.
"""
from ..types import FrameResult
from . import pipeline
from .clearance import LIVE_LIMIT, TooManyPairs
from .dispatch import OWN, check_mode, frame_method, frame_triangles, query_method, volumes
from .frame import clearance_frame, query_frame
from .memo import FrameMemo
from .objects import (
                      CollisionObject,
                      build_key,
                      prepare,
                      prepare_all,
                      prepare_shared,
                      renamed,
                      shared_builds,
                      side_by_side,
)
from .pairs import brute_force_pairs, polygon_pair_rows, polygon_pairs
from .pipeline import FrameFilters, FrameOutcome, FrameState
from .seams import frame_keys, parted_self_pairs, seam_ids, seam_pairs, seams_apply, weld_tolerance
from .settings import ScanSettings

__all__ = ["LIVE_LIMIT", "OWN", "CollisionObject", "FrameFilters", "FrameMemo", "FrameOutcome",
           "FrameResult", "FrameState", "ScanSettings", "TooManyPairs", "pipeline",
           "brute_force_pairs", "build_key",
           "check_mode", "clearance_frame", "frame_keys", "frame_method", "frame_triangles", "parted_self_pairs",
           "polygon_pair_rows", "polygon_pairs", "prepare", "prepare_all", "prepare_shared",
           "query_frame", "query_method", "renamed", "seam_ids", "seam_pairs", "seams_apply",
           "shared_builds", "side_by_side", "volumes", "weld_tolerance"]
