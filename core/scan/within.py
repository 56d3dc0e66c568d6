"""The pairs within each object at one frame (self-collision): the object's method's own
self query when it has one (e.g. sphere chains), else the exact AABB self tree
(`self_collision`; docs/self_collision.md), plus the pairs that meet only at welds parted
this frame (`seams.parted_self_pairs`)."""
from __future__ import annotations

import numpy as np

from ..rig import Pose
from ..types import Frame, FrameInputs, QueryStats
from .carry import Carried, Kept, object_self_pairs
from .dispatch import query_method
from .objects import CollisionObject
from .seams import parted_self_pairs


def pairs_within(objects: list[CollisionObject], inputs: FrameInputs, mode: str,
                 first_hit: bool = False, enough=None, kept: dict | None = None,
                 carried: Carried | None = None
                 ) -> tuple[list[tuple[int, int, np.ndarray]], list[QueryStats]]:
    """Self pairs of every object: per object with pairs (i, i, (K, 2) int64, t < u), and
    one `QueryStats` per object queried. `enough`: optional f(i, pairs) -> bool for capped
    frames. `kept`: the kept frames the pairs between objects already brought up to this
    frame (object index -> `Kept`); `carried`: what the live overlay carries between
    updates (`carry.Carried`; None: nothing). With `first_hit`, stops at the first object
    with a pair and keeps one pair."""
    found, stats = [], []
    kept = kept or {}
    for i, obj in enumerate(objects):
        st = QueryStats()
        stop = None if enough is None else (lambda p, i=i: enough(i, p))
        pos, tris = inputs.positions[i], inputs.triangles[i]
        pairs = _self_pairs(obj, pos, inputs.poses[i], tris, mode, st, stop, kept.get(i),
                            carried)
        parted = parted_self_pairs(obj, pos, tris)
        if parted.size:
            pairs = np.concatenate([pairs.reshape(-1, 2).astype(np.int64), parted])
        if first_hit:
            pairs = pairs[:1]
        stats.append(st)
        if pairs.size:
            found.append((i, i, pairs))
            if first_hit:
                break
    return found, stats


def _self_pairs(obj: CollisionObject, positions: np.ndarray, pose: Pose | None,
                tris: np.ndarray, mode: str, st: QueryStats,
                enough=None, state: Kept | None = None,
                carried: Carried | None = None) -> np.ndarray:
    """Self pairs of one object: its method's own self query (`Method.self_pairs`, e.g.
    sphere chains) when it has one, else the exact AABB self tree."""
    m = query_method(obj, mode)
    if m.supports_self:
        pairs = m.self_pairs(obj.rig, obj.data_for(m), Frame(positions, tris, pose),
                             obj.vertex_keys, stats=st)
        if pairs is not None:
            return pairs
    return object_self_pairs(obj, positions, tris, stats=st, enough=enough, state=state,
                             carried=carried)
