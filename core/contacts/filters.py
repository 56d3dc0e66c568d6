"""User filters on contacts (issue 28): crossing only, a minimum length, ignored bone
pairs, and ignore zones (polygons of a mesh inside a vertex group). Pure Python/numpy.

The zones are applied to a frame's triangle pairs before the contacts are formed ("never
report pairs inside this group"); the other filters drop whole contacts, and with them
their pairs, so a frame's reported pairs stay the union of its contacts' pairs and
`--fail-on-collision` counts what is left."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np


@dataclass
class ContactFilter:
    crossing_only: bool = False
    min_length: float = 0.0
    #: bone pairs whose contacts are fine, unordered: {frozenset({"hand.L", "hand.R"})}
    ignore_bones: set = field(default_factory=set)
    #: per object name, the vertex groups whose polygons are never reported
    ignore_groups: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (isinstance(self.min_length, (int, float)) and math.isfinite(self.min_length)
                and self.min_length >= 0):
            raise ValueError(f"the minimum length must be a finite number >= 0, got "
                             f"{self.min_length!r}")
        self.min_length = float(self.min_length)
        self.ignore_bones = {frozenset(p) for p in self.ignore_bones}

    @property
    def drops_contacts(self) -> bool:
        return self.crossing_only or self.min_length > 0 or bool(self.ignore_bones)

    @property
    def active(self) -> bool:
        return self.drops_contacts or any(self.ignore_groups.values())

    def keep(self, c) -> bool:
        """Whether contact `c` (a `contact_groups.Contact`) is reported."""
        if self.crossing_only and c.kind != "crossing":
            return False
        if self.min_length > 0 and c.length < self.min_length:
            return False
        if self.ignore_bones and frozenset(c.bones) in self.ignore_bones:
            return False
        return True

    def describe(self) -> dict:
        """The settings for the report's source.filters (only those set)."""
        out = {}
        if self.crossing_only:
            out["crossing_only"] = True
        if self.min_length > 0:
            out["min_length"] = self.min_length
        if self.ignore_bones:
            out["ignore_bones"] = sorted(sorted(p) if len(p) == 2 else [next(iter(p))] * 2
                                         for p in self.ignore_bones)
        if any(self.ignore_groups.values()):
            out["ignore_groups"] = {k: sorted(v) for k, v in sorted(self.ignore_groups.items())
                                    if v}
        return out


def parse_bone_pairs(text: str) -> set:
    """Bone pairs from "hand.L, hand.R; foot.L, foot.R" (the panel's field): pairs
    separated by ';' (or new lines), the two bones by ','. ValueError (one line) for a
    part that is not two names."""
    out = set()
    for part in (text or "").replace("\n", ";").split(";"):
        if not part.strip():
            continue
        names = [n.strip() for n in part.split(",")]
        if len(names) != 2 or not all(names):
            raise ValueError(f"'{part.strip()}' is not two bone names separated by a comma")
        out.add(tuple(names))
    return out


def drop_zone_pairs(objects: Sequence, tri_pairs, zones: dict) -> list:
    """`tri_pairs` [(i, j, (K, 2))] without the pairs that have a polygon inside a zone:
    `zones` maps an object index to a (P,) bool mask of its polygons."""
    if not zones:
        return tri_pairs
    out = []
    for i, j, p in tri_pairs:
        keep = np.ones(p.shape[0], dtype=bool)
        for k, col in ((i, 0), (j, 1)):
            m = zones.get(k)
            if m is not None:
                keep &= ~m[objects[k].rig.tri_polygon[p[:, col]]]
        if keep.any():
            out.append((i, j, p[keep]))
    return out


def keep_contact_pairs(objects: Sequence, tri_pairs, found: Sequence) -> list:
    """`tri_pairs` [(i, j, (K, 2))] restricted to the polygon pairs of contacts `found`
    (`contact_groups.Contact`, objects by name): what the overlay draws after the
    contact filters."""
    from .pairs import rows_in

    names = [o.name for o in objects]
    by_pair: dict = {}
    for c in found:
        by_pair.setdefault((c.a, c.b), []).append(c.pairs)
    out = []
    for i, j, p in tri_pairs:
        polys = by_pair.get((names[i], names[j]))
        if not polys:
            continue
        want = np.concatenate(polys)
        pa = objects[i].rig.tri_polygon[p[:, 0]].astype(np.int64)
        pb = objects[j].rig.tri_polygon[p[:, 1]].astype(np.int64)
        got = np.stack([pa, pb], 1)
        if i == j:
            got, want = np.sort(got, axis=1), np.sort(want, axis=1)
        keep = rows_in(got, want)
        if keep.any():
            out.append((i, j, p[keep]))
    return out
