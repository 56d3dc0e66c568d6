"""Settings stored in the .blend (PropertyGroups)."""
from __future__ import annotations

import bpy


class SKINCOLLIDE_PG_settings(bpy.types.PropertyGroup):
    """Scene-wide settings of skin_collide."""

    last_report: bpy.props.StringProperty(
        name="Last Report", description="The last doctor summary of the active mesh",
        default="")


CLASSES = (SKINCOLLIDE_PG_settings,)


def register() -> None:
    bpy.types.Scene.skin_collide = bpy.props.PointerProperty(type=SKINCOLLIDE_PG_settings)


def unregister() -> None:
    del bpy.types.Scene.skin_collide
