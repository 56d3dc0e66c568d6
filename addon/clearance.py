"""Clearance in the viewport (issue 42): what the live overlay, the panel and the timeline
need of a frame's near contacts (what happens when the panel's Clearance settings change
is `addon.clearance_settings`).

The near contacts themselves come from the pipeline (`addon.scanner.Scanner(clearance=D)`,
the clearance stage `core.scan.clearance` and its grouping `core.contacts.clearance`); this module
only maps them to what is drawn and listed. Self-clearance is not computed: only pairs of
two different objects.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..core import scan as core_scan

#: The panel's hint when Clearance is on but fewer than two characters take part.
NEEDS_TWO = ("Clearance needs two characters (self-clearance is not computed): "
             "select a second one")


def distance(scene) -> float | None:
    """The scene's clearance D in scene units when its Clearance toggle is on, else None."""
    s = scene.skin_collide
    return float(s.clearance_distance) if s.clearance else None


def note(scene, n_meshes: int, stopped: int = 0) -> str:
    """What the panel says about the clearance of a query over `n_meshes` characters: the
    `NEEDS_TWO` hint when Clearance is on with fewer than two; when the live clearance
    stage passed its budget (`stopped` > 0: the node pairs it had reached,
    `core.scan.LIVE_LIMIT`), that the distance is too large to check live; else ''."""
    s = scene.skin_collide
    if not s.clearance:
        return ""
    if n_meshes < 2:
        return NEEDS_TWO
    return too_many_text(scene, float(s.clearance_distance)) if stopped else ""


def too_many_text(scene, d: float) -> str:
    """The panel's line when the live clearance stage stopped at its budget."""
    return (f"Clearance {distance_text(scene, d)}: too many faces that close to "
            f"check live (more than {core_scan.LIVE_LIMIT:,} pairs of boxes), so no near "
            "contacts are shown; lower the distance, or use Scan Frame Range")


def near_triangles(objects: Sequence, near: Sequence, found: Sequence,
                   hit_triangles: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Per object, the triangles to draw in the near colour.

    Args:
        objects: the frame's `CollisionObject`s (their `name` is what the contacts name).
        near: the clearance stage's answer, per object pair (i, j, `NearResult`): its
            rows are polygon pairs.
        found: the reported near contacts (`core.contacts.clearance.NearContact`, after the
            filters): only their polygon pairs are drawn, each with the triangles of its
            parts (a pair proved within D as a whole, both faces).
        hit_triangles: per object (H,) int64 its intersecting triangles; they keep the
            intersection colour, so they are left out here.
    Returns:
        per object (N,) int64 sorted unique triangle indices.
    """
    names = [o.name for o in objects]
    wanted: dict[tuple[str, str], list[np.ndarray]] = {}
    for c in found:
        wanted.setdefault((c.a, c.b), []).append(np.asarray(c.pairs, dtype=np.int64))
    parts: list[list[np.ndarray]] = [[] for _ in objects]
    for i, j, r in near:
        got = wanted.get((names[i], names[j]))
        if not got or not r.polys.size:
            continue
        want = np.concatenate(got)
        m = int(max(r.polys[:, 1].max(), want[:, 1].max())) + 1   # a polygon pair as one integer
        rows = np.flatnonzero(np.isin(r.polys[:, 0] * m + r.polys[:, 1],
                                      want[:, 0] * m + want[:, 1]))
        ta, tb = r.triangles(rows)
        parts[i].append(ta)
        parts[j].append(tb)
    out = []
    for k, p in enumerate(parts):
        t = np.unique(np.concatenate(p)).astype(np.int64) if p else np.zeros(0, np.int64)
        hit = hit_triangles[k] if k < len(hit_triangles) else np.zeros(0, np.int64)
        out.append(np.setdiff1d(t, hit, assume_unique=False) if hit.size and t.size else t)
    return out


def near_segments(found: Sequence) -> np.ndarray:
    """The closest segment of each near contact (its two closest points, [on A, on B]),
    as a LINES batch's vertices: (2S, 3) float32."""
    if not found:
        return np.zeros((0, 3), np.float32)
    return np.concatenate([np.asarray(c.points, dtype=np.float64).reshape(2, 3)
                           for c in found]).astype(np.float32)


def distance_text(scene, d: float) -> str:
    """A distance in scene units as the scene displays lengths (its unit system and unit
    scale: one scene unit is `scale_length` metres)."""
    units = scene.unit_settings
    if units.system == "NONE":
        return f"{d:.4g}"
    from bpy.utils import units as bl_units

    return bl_units.to_string(units.system, "LENGTH", float(d) * float(units.scale_length),
                              precision=3)
