"""Which refit a rig gets: the on-demand bound where it is proven safe, else bottom-up."""
from __future__ import annotations

from .rig import Rig

ON_DEMAND_LBS = "on-demand LBS (Kavan & Zara 2005)"
BOTTOM_UP = "bottom-up from evaluated positions"


def choose_refit(rig: Rig) -> tuple[str, str]:
    """(method, reason). The LBS bound assumes Blender's linear blend of the rest mesh, so
    anything else (Preserve Volume, shape keys, other deforming modifiers, B-Bones ...)
    falls back to bottom-up refitting from the positions Blender evaluated."""
    if rig.unsupported:
        return BOTTOM_UP, "; ".join(rig.unsupported)
    if rig.preserve_volume:
        return BOTTOM_UP, "Preserve Volume (dual quaternions): the LBS bound does not hold"
    return ON_DEMAND_LBS, "linear blend skinning of the rest mesh"
