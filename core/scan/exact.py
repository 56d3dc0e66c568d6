"""The exact test of candidate triangle pairs between objects (the narrow phase's last
step): a pair sharing a seam vertex is adjacent and never reported; every other pair gets
the float64 triangle-triangle test (`core.triangles`) on the frame's stacked positions,
and a pair it calls intersecting counts only if the two triangles' float64 boxes meet.

Why the boxes: triangles whose boxes are apart are disjoint (exactly: min and max round
nothing), but the triangle test calls pairs touching within its tolerance (about 1e-12 L)
intersecting, even a hair apart. Without the boxes, whether such a pair counted depended
on the path that proposed it: the box path (`broad_phase.box_filtered_pairs`) and the
clearance traversal (`core.query.near_pairs`) only test pairs whose boxes meet, the methods'
traversals test whatever their volumes pass. One definition for every path: intersecting
means boxes that meet and the test says so."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import triangles as tri_test
from ..types import FrameInputs, FrameSeams


def share_seam_vertex(G: np.ndarray, va: np.ndarray, vb: np.ndarray) -> np.ndarray:
    """The seam rule on K triangle pairs: (K,) bool, the triangles share a vertex key.

    G: (sum V_k,) int64 the frame's global vertex keys (`FrameSeams.G`); va, vb: (K, 3)
    int the two triangles' corners as indices into the frame's stacked vertices (`G`'s
    rows). Shared by the intersection stages' exact test and the clearance stage, so that
    both skip the same adjacent pairs."""
    ka, kb = G[va], G[vb]
    return np.any(ka[:, :, None] == kb[:, None, :], axis=(1, 2))


class ExactTest:
    """f(ga, gb) -> (K,) bool on stacked triangle indices (`FrameInputs.T` rows) of
    candidate pairs of different objects: True where they intersect and are not adjacent
    across a seam (`FrameSeams`). `between(i, j)` gives the same test on the local
    triangle indices of objects i and j (what a method's traversal hands out)."""

    def __init__(self, inputs: FrameInputs, seams: FrameSeams) -> None:
        self.inputs = inputs
        self.seams = seams

    def __call__(self, ga: np.ndarray, gb: np.ndarray) -> np.ndarray:
        inp, G = self.inputs, self.seams.G
        P, T = inp.P, inp.T
        apart = np.ones(ga.size, dtype=bool)
        if G is not None:
            oa = np.searchsorted(inp.tri_off, ga, side="right") - 1
            ob = np.searchsorted(inp.tri_off, gb, side="right") - 1
            s = np.nonzero(self.seams.hold[oa, ob])[0]
            if s.size:
                apart[s] = ~share_seam_vertex(G, T[ga[s]], T[gb[s]])
        hit = np.zeros(ga.size, dtype=bool)
        idx = np.nonzero(apart)[0]
        hit[idx] = tri_test.triangle_pairs_intersect(P, T, ga[idx], P, T, gb[idx])
        h = np.flatnonzero(hit)                    # few: the boxes of the hits only
        if h.size:
            hit[h[~tri_test.boxes_meet(P, T[ga[h]], P, T[gb[h]])]] = False
        return hit

    def between(self, i: int, j: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """The test on triangle indices local to objects i and j."""
        off = self.inputs.tri_off

        def test(ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
            return self(ta + off[i], tb + off[j])
        return test
