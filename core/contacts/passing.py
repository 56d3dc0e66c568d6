"""Contacts of kind "passes through" (issue 57): polygon pairs that touch during a step
between two checked samples and at neither sample, grouped like a frame's contacts (the
same components and bones, `groups`), each with its first contact ``t`` (a lower bound in
[0, 1] of the step) and the step's two samples. They have no intersection curve at a
sample: their length is 0 and their centre is where the first pair stands at ``t``
(the midpoint of its two triangles' centroids on the linear motion). Pure numpy."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .contact import Contact
from .groups import _group

#: The kind of a contact that happens only between two samples.
PASSES = "passes through"


def passing_contacts(objects: Sequence, start: Sequence[np.ndarray], end: Sequence[np.ndarray],
                     triangles: Sequence[np.ndarray], pairs: list, step: tuple
                     ) -> list[Contact]:
    """The pass-through contacts of one step.

    Args:
        objects: the scan's `core.scan.CollisionObject`s (name, rig, vertex_keys).
        start, end: per object, (V, 3) float64 world positions at the step's two samples.
        triangles: per object, (T, 3) int the triangles at the first sample.
        pairs: [(i, j, (K, 2) int64 triangle pairs (self as (min, max), a polygon never
            with itself), (K,) float64 first-contact times)], only pairs that touch at
            neither sample.
        step: (first sample, next sample), frames.
    Returns:
        The contacts, per object pair in the order of `pairs`, each object pair's by
        their first polygon pair.
    """
    out: list[Contact] = []
    for i, j, tp, t in pairs:                   # a loop over object pairs
        if not tp.size:
            continue
        oa, ob = objects[i], objects[j]
        same = i == j
        pa = oa.rig.tri_polygon[tp[:, 0]].astype(np.int64)
        pb = ob.rig.tri_polygon[tp[:, 1]].astype(np.int64)
        if same:
            pa, pb = np.minimum(pa, pb), np.maximum(pa, pb)
        g = _group(oa, ob, same, tp, pa, pb)
        C = g.pstart.size - 1
        first = np.full(C, np.inf)
        np.minimum.at(first, g.tcid, t)
        # Per contact its earliest triangle pair, where the centre is taken.
        order = np.lexsort((t, g.tcid))
        lead = order[np.searchsorted(g.tcid[order], np.arange(C))]
        ca = _centroids(start[i], end[i], triangles[i], tp[lead, 0], t[lead])
        cb = _centroids(start[j], end[j], triangles[j], tp[lead, 1], t[lead])
        center = 0.5 * (ca + cb)
        out += [Contact(oa.name, ob.name, g.pairs[g.pstart[c]:g.pstart[c + 1]], 0.0, PASSES,
                        g.bones[c], center[c], t=float(first[c]), step=tuple(step))
                for c in range(C)]
    return out


def _centroids(p0: np.ndarray, p1: np.ndarray, tris: np.ndarray, which: np.ndarray,
               t: np.ndarray) -> np.ndarray:
    """(m, 3) the centroids of triangles `which` at times `t` of the linear motion."""
    c0 = p0[tris[which]].mean(axis=1)
    c1 = p1[tris[which]].mean(axis=1)
    return (1.0 - t)[:, None] * c0 + t[:, None] * c1
