"""skin_collide: exact, fast collision detection for skinned characters.

The package is both a Blender extension (this file registers it) and a plain Python package
(`skin_collide.core` is pure numpy). Nothing here imports bpy at import time, so
``import skin_collide`` works outside Blender.
"""

_registered: list = []


def _classes():
    from .addon import properties
    from .operators import doctor
    from .panels import main_panel

    return (*properties.CLASSES, *doctor.CLASSES, *main_panel.CLASSES)


def register() -> None:
    import bpy

    from .addon import properties

    for cls in _classes():
        bpy.utils.register_class(cls)
        _registered.append(cls)
    properties.register()


def unregister() -> None:
    import bpy

    from .addon import properties

    properties.unregister()
    while _registered:
        bpy.utils.unregister_class(_registered.pop())
