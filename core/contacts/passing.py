"""Contacts of kind "passes through" (issue 57): polygon pairs that touch during a step
between two checked samples and at neither sample, grouped like a frame's contacts (the
same components and bones, `groups`), each with its first contact ``t`` (a lower bound in
[0, 1] of the step) and the step's two samples. They have no intersection curve at a
sample: their length is 0 and their centre is where the first pair stands at ``t``
(the midpoint of its two triangles' centroids on the linear motion). What the user reads
of them: episodes by bone pair over consecutive steps (`PassEpisode`, `pass_episodes`),
their console lines (`summary`) and the scan's verdict with them (`verdict`). Pure numpy."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .contact import Contact
from .episodes import Episode, keyed_runs, summary_lines
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


# -- what the user reads of them: episodes by bone pair, their lines ------------------------


def _step_text(x) -> str:
    """A step's sample as people read it: "3" for a whole frame, "3.25" between frames."""
    x = float(x)
    return str(int(x)) if x == int(x) else f"{x:g}"


@dataclass
class PassEpisode(Episode):
    """A run of consecutive checked steps in which objects `a`, `b` pass through each
    other between bones `bone_a`, `bone_b` (keyed as `ContactEpisode`): `start` is the
    first step's first frame, `end` the last step's end (its next checked sample),
    `steps` how many steps, `first_frame` the earliest first contact as a frame (the
    first step's start + t × its length; a lower bound)."""

    steps: int
    first_frame: float

    def to_json(self) -> dict:
        return {"objects": [self.a, self.b], "bones": [self.bone_a, self.bone_b],
                "start": self.start, "end": self.end, "steps": self.steps,
                "first_frame": self.first_frame, "kind": PASSES}

    def describe(self) -> str:
        """"Body × Prop, hand.R × -: passes through between frames 2 and 3" (and
        ", in 3 steps" for a run of steps)."""
        who = f"{self.a} (self)" if self.a == self.b else f"{self.a} × {self.b}"
        bones = f"{self.bone_a or '-'} × {self.bone_b or '-'}"
        steps = f", in {self.steps} steps" if self.steps > 1 else ""
        return (f"{who}, {bones}: passes through between frames {_step_text(self.start)} "
                f"and {_step_text(self.end)}{steps}")


def _fold(value: tuple, c: dict) -> tuple:
    """A step's earliest first contact (as a frame) and its end, over its contacts."""
    a, b = (float(x) for x in c["step"])
    first = a + float(c["t"]) * (b - a)
    return (min(value[0], first), b)


def pass_episodes(steps: Sequence[tuple]) -> list[PassEpisode]:
    """Pass-through episodes by bone pair from ``[(frame, its step's pass-through contacts
    as in the report: objects, bones, t, step), ...]`` of the frames whose step was
    checked, in scan order: per (objects, bones), runs of consecutive checked steps."""
    out = []
    for key, run in keyed_runs(steps, _fold, (float("inf"), None)):
        out.append(PassEpisode(*key, run[0][0], run[-1][1][1], len(run), run[0][1][0]))
    return out


def report_steps(frames: Sequence[dict]) -> list[tuple]:
    """``[(frame, passes_through)]`` of a report's frames whose step was checked (they
    carry "between"): what `pass_episodes` reads."""
    return [(f["frame"], f.get("passes_through", [])) for f in frames
            if "not_checked" not in f and "between" in f]


def episodes_of_report(frames: Sequence[dict]) -> list[PassEpisode]:
    """`pass_episodes` of a report's frames."""
    return pass_episodes(report_steps(frames))


def steps_passing(steps: Sequence[tuple]) -> int:
    """How many of the steps (`pass_episodes`' input) have a pass-through."""
    return sum(1 for _, found in steps if found)


def step_episodes(steps: Sequence[tuple]) -> list[tuple[tuple, list[PassEpisode]]]:
    """Per step with pass-throughs, ((frame, its end), its pass-through episodes by bone
    pair): one JUnit test case each."""
    out = []
    for frame, found in steps:
        if found:
            eps = pass_episodes([(frame, found)])
            out.append(((frame, eps[0].end), eps))
    return out


def summary(eps: Sequence[PassEpisode], limit: int = 10) -> str:
    """Lines naming the pass-through episodes (in frame order, `limit` of them, then how
    many more): bounded for the console."""
    return summary_lines(eps, lambda e: (e.start, e.a, e.b, str(e.bone_a), str(e.bone_b)),
                         "pass-through", "no pass-throughs between frames", limit)


def verdict(collision_summary: str, n_collisions: int, eps: Sequence[PassEpisode],
            limit: int = 3) -> str:
    """The scan's last line with pass-throughs: the collision episodes' line
    (`core.contacts.pairs.summary`) and the pass-through episodes; never "no collision
    episodes" when something passes through between frames."""
    if not eps:
        return collision_summary
    first = sorted(eps, key=lambda e: (e.start, e.a, e.b, str(e.bone_a), str(e.bone_b)))
    names = "; ".join(e.describe() for e in first[:limit]) + \
        (f"; and {len(eps) - limit} more" if len(eps) > limit else "")
    passing = f"{len(eps)} pass-through episode(s) between frames: {names}"
    if not n_collisions:
        return f"no collision at the checked frames, but {passing}"
    return f"{collision_summary}; and {passing}"
