"""A contact's intersection curve measured (`core.contacts.groups`): from its triangle
pairs' crossing segments (`core.geometry.segments`), its length, its kind (crossing or
touching, against the frame's size, `frame_size`), its centre and its segments
(`_contacts_of`). Pure numpy.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .contact import Contact

#: A contact is a crossing when its length exceeds this × the frame's size.
KIND_RELATIVE = 1e-9


def frame_size(positions: Sequence[np.ndarray]) -> float:
    """The largest side of the meshes' world bounding boxes (each mesh's own box)."""
    # Column by column: numpy's axis-0 reduction of a (V, 3) array is ~15x slower.
    sides = [max(float(p[:, k].max() - p[:, k].min()) for k in range(3))
             for p in positions if len(p)]
    return max(sides) if sides else 0.0


def _contacts_of(name_a: str, name_b: str, g, p0: np.ndarray, p1: np.ndarray,
                 ln: np.ndarray, size: float) -> list[Contact]:
    """The contacts of grouping `g` (a `groups._Grouping`) with its triangle pairs'
    crossing segments (p0, p1 (K, 3) float64, lengths ln (K,)) at a frame of size `size`."""
    tcid = g.tcid
    C = g.pstart.size - 1
    length = np.bincount(tcid, weights=ln, minlength=C)
    # The centre: the midpoint of each contact's longest segment.
    order = np.lexsort((ln, tcid))
    last = order[np.r_[np.flatnonzero(np.diff(tcid[order])), tcid.size - 1]]
    center = 0.5 * (p0[last] + p1[last])
    # Segments grouped by contact (in pair order within each).
    nz = np.flatnonzero(ln > 0)
    nz = nz[np.argsort(tcid[nz], kind="stable")]
    sstart = np.searchsorted(tcid[nz], np.arange(C + 1))
    segs = np.concatenate([p0[nz], p1[nz]], axis=1)
    limit = KIND_RELATIVE * size
    return [Contact(name_a, name_b, g.pairs[g.pstart[c]:g.pstart[c + 1]], float(length[c]),
                    "crossing" if length[c] > limit else "touching", g.bones[c], center[c],
                    segs[sstart[c]:sstart[c + 1]])
            for c in range(C)]
