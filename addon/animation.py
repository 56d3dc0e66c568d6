"""Switching an armature between its actions and listing the frames to evaluate."""
from __future__ import annotations

import math
import re

_BONE_PATH = re.compile(r'pose\.bones\["((?:[^"\\]|\\.)*)"\]')


def actions_for(arm_ob) -> list:
    """Actions that animate `arm_ob`: the assigned one first, then its NLA strips' actions,
    then every other action whose channels name its pose bones."""
    import bpy

    found = []
    ad = arm_ob.animation_data
    if ad is not None:
        if ad.action is not None:
            found.append(ad.action)
        for track in ad.nla_tracks:
            for strip in track.strips:
                if strip.action is not None and strip.action not in found:
                    found.append(strip.action)
    bones = {b.name for b in arm_ob.pose.bones}
    for act in bpy.data.actions:
        if act in found:
            continue
        animated = {m.group(1) for p in _fcurve_paths(act)
                    if (m := _BONE_PATH.match(p)) is not None}
        if animated & bones:
            found.append(act)
    return found


def _fcurve_paths(act) -> list[str]:
    fcurves = getattr(act, "fcurves", None)
    if fcurves is not None:
        try:
            return [fc.data_path for fc in fcurves]
        except (AttributeError, RuntimeError):
            pass
    paths = []
    # Blender 4.4+ layered actions keep their F-curves in channelbags.
    for layer in getattr(act, "layers", []):
        for strip in layer.strips:
            for bag in getattr(strip, "channelbags", []):
                paths.extend(fc.data_path for fc in bag.fcurves)
    return paths


def use_action(arm_ob, action) -> None:
    """Make `action` the only animation of `arm_ob` (NLA muted, slot assigned)."""
    ad = arm_ob.animation_data or arm_ob.animation_data_create()
    for track in ad.nla_tracks:
        track.mute = True
    ad.action = action
    slots = getattr(action, "slots", None)
    if slots is not None and len(slots) and getattr(ad, "action_slot", None) is None:
        ad.action_slot = slots[0]


def action_frames(action) -> list[int]:
    """Whole frames covering the action's range (glTF actions may start at 0.8)."""
    start, end = action.frame_range
    return list(range(int(math.floor(start)), int(math.ceil(end)) + 1))
