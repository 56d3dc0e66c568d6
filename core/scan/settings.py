"""What configures a scan's frames, decided once by its front end (issue 56): the CLI from
its flags, the panel from its PropertyGroup, `skin_collide.testing` from its keywords.
One frozen object, passed to the frame pipeline (`core.scan.pipeline`); nothing is set on
a scanner afterwards.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..contacts.filters import ContactFilter
from ..methods import registry


@dataclass(frozen=True)
class ScanSettings:
    """A scan's settings.

    Attributes:
        method: a registered method id (`core.methods.registry`).
        self_collision: also each object against itself.
        first_hit: at most one polygon pair a frame (the query stops at its first batch).
        clearance: a distance D >= 0 (scene units): the frame's near contacts too; None:
            no clearance stage.
        near_pairs: with a clearance, each frame lists its near polygon pairs.
        allow: reviewed polygon pairs never reported (canonical named pairs,
            `core.contacts.pairs.canonical`).
        contact_filter: the filters on contacts and the ignore zones' groups.
        max_pairs: the live overlay's cap: with no filter, the query stops counting past
            this many polygon pairs of an object pair (the frame is then marked stopped).
            None: every pair (scans).
        clearance_limit: the live overlay's budget for the clearance stage (node pairs,
            `core.scan.LIVE_LIMIT`); None: every near pair (scans).
        carry: the live overlay while posing: pairs re-checked only where triangles moved,
            the rest carried from the last complete answer (`core.scan.carry`).
        between: also between consecutive checked samples, under linear motion (issue 57,
            `core.scan.pipeline.between`): each frame's step to the next.
        subframes: with `between`, samples per frame (the animation is evaluated at
            ``f + k / subframes``; the motion is linear between samples).
    """

    method: str = registry.DEFAULT
    self_collision: bool = False
    first_hit: bool = False
    clearance: float | None = None
    near_pairs: bool = False
    allow: frozenset = frozenset()
    contact_filter: ContactFilter = field(default_factory=ContactFilter)
    max_pairs: int | None = None
    clearance_limit: int | None = None
    carry: bool = False
    between: bool = False
    subframes: int = 1

    def __post_init__(self) -> None:
        try:
            registry.get(self.method)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
        if self.clearance is not None:
            d = float(self.clearance)
            if not (d >= 0.0 and math.isfinite(d)):
                raise ValueError(f"the clearance must be a finite distance >= 0, got {d}")
            object.__setattr__(self, "clearance", d)
        object.__setattr__(self, "allow", frozenset(self.allow))
        if not (isinstance(self.subframes, int) and 1 <= self.subframes <= 64):
            raise ValueError(f"subframes must be a whole number from 1 to 64, got "
                             f"{self.subframes!r}")
        if self.subframes > 1 and not self.between:
            raise ValueError("subframes sample the motion between frames: they need the "
                             "check between frames")
        if self.between and self.first_hit:
            raise ValueError("the check between frames lists every pair: it cannot stop at "
                             "the first hit")

    @classmethod
    def of(cls, mode: str | None = None, method: str | None = None, **values) -> "ScanSettings":
        """The settings of a method id, or of its older spelling `mode`
        (`registry.MODES`); default `registry.DEFAULT`."""
        if mode is not None and mode not in registry.MODES:
            raise ValueError(f"mode must be one of {', '.join(registry.MODES)}")
        if method is None:
            method = registry.MODES[mode] if mode is not None else registry.DEFAULT
        return cls(method=method, **values)

    @property
    def in_core(self) -> bool:
        """Whether the numpy core answers the method (else Blender's BVHTree, the
        reference, answered by the add-on)."""
        return registry.get(self.method).in_core

    def with_(self, **changes) -> "ScanSettings":
        """These settings with `changes`."""
        return replace(self, **changes)
