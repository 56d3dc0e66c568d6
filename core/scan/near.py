"""The clearance stage of one frame (`core.scan.frame`, issue 42): every triangle pair of
two different objects whose exact float64 distance is at most ``d`` and that does not
intersect (the intersection stages report those), with its distance and closest points.

Per candidate object pair of the inflated broad phase
(`core.query.broad_phase.object_pairs_within`), `core.query.near.near_pairs` on the
frame's world positions and triangles, with each object's exact box tree kept on the
object (`core.scan.carry.for_object`, the self tree: built once, shared with the self
stage). Self-clearance is left out: neighbouring faces of one surface are within any d.

The seam rule (docs/clearance.md, "Seams"): between two parts of one character whose
seams hold this frame (`FrameSeams.hold`), a triangle pair sharing a seam vertex (the
frame's global key `FrameSeams.G`, which splits a seam parted this frame) touches by
construction and is not reported, as the intersection stages skip it. Pairs one ring
or more from the seam are reported when within d, like any other pair.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..query.near import near_pairs
from ..types import FrameInputs, FrameSeams, ObjectPairs
from .carry import for_object
from .exact import share_seam_vertex
from .objects import CollisionObject


class NearResult(NamedTuple):
    """The near pairs of one object pair (K rows, sorted by (triangle of A, of B)).

    pairs: (K, 2) int64 (triangle of A, triangle of B), indices into the frame's triangles.
    dist: (K,) float64 the distance, within ``DIST_REL_TOL * L`` of the exact one.
    point_a, point_b: (K, 3) float64 a closest pair of points (world space).
    """

    pairs: np.ndarray
    dist: np.ndarray
    point_a: np.ndarray
    point_b: np.ndarray


def near_between(objects: list[CollisionObject], inputs: FrameInputs, near: ObjectPairs,
                 seams: FrameSeams, d: float) -> list[tuple[int, int, NearResult]]:
    """The clearance stage: per object pair (i < j) of `near` (the broad phase inflated
    by d, `object_pairs_within`), the triangle pairs within d that do not intersect and
    do not share a seam vertex (module docstring). Object pairs with none are left out.

    Args:
        objects: the prepared objects. inputs: the frame's positions and triangles.
        near: the inflated broad phase's object pairs. seams: the seam stage's answer,
            computed for (at least) these pairs.
        d: the clearance, float >= 0, in scene units.
    Returns:
        list of (i, j, `NearResult`).
    """
    out = []
    for i, j in near.pairs.tolist():        # a loop over object pairs, never triangles
        if i == j:
            continue
        pa, pb = inputs.positions[i], inputs.positions[j]
        ta, tb = inputs.triangles[i], inputs.triangles[j]
        trees = (for_object(objects[i]), for_object(objects[j]))
        r = NearResult(*near_pairs(pa, ta, pb, tb, d, trees, points=True))
        if r.pairs.size and seams.G is not None and seams.hold[i, j]:
            apart = ~share_seam_vertex(seams.G, inputs.v_off[i] + ta[r.pairs[:, 0]],
                                       inputs.v_off[j] + tb[r.pairs[:, 1]])
            r = NearResult(*(x[apart] for x in r))
        if r.pairs.size:
            out.append((i, j, r))
    return out
