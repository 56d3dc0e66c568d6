"""Which refit a rig gets: the on-demand bound where it is proven safe, else bottom-up."""
from __future__ import annotations

from .rig import Rig

ON_DEMAND_LBS = "on-demand LBS (Kavan & Zara 2005)"
ON_DEMAND_PV = "on-demand Preserve Volume (dual quaternion bound, Kavan et al. 2006)"
BOTTOM_UP = "bottom-up from evaluated positions"


def choose_refit(rig: Rig) -> tuple[str, str]:
    """(method, reason). The LBS bound assumes Blender's linear blend of the rest mesh and the
    Preserve Volume bound (core.refit_dqs) its dual quaternion blend, so anything else
    (shape keys, other deforming modifiers, B-Bones ...) falls back to bottom-up refitting
    from the positions Blender evaluated."""
    if rig.unsupported:
        return BOTTOM_UP, "; ".join(rig.unsupported)
    if rig.preserve_volume:
        return ON_DEMAND_PV, "Preserve Volume: Blender's dual quaternion blend of the rest mesh"
    return ON_DEMAND_LBS, "linear blend skinning of the rest mesh"
