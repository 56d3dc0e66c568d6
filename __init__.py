"""skin_collide: exact, fast collision detection for skinned characters.

The package is both a Blender extension (this file registers it) and a plain Python package
(`skin_collide.core` is pure numpy). Nothing here imports bpy at import time, so
``import skin_collide`` works outside Blender.
"""

_registered: list = []


def _classes():
    from .addon import properties
    from .operators import build, doctor, live, scan, sphere_set
    from .panels import main_panel

    return (*properties.CLASSES, *doctor.CLASSES, *build.CLASSES, *sphere_set.CLASSES,
            *live.CLASSES, *scan.CLASSES, *main_panel.CLASSES)


def register() -> None:
    import bpy

    from .addon import handlers, properties

    for cls in _classes():
        bpy.utils.register_class(cls)
        _registered.append(cls)
    properties.register()
    handlers.register()


def unregister() -> None:
    import bpy

    from .addon import handlers, properties

    handlers.unregister()
    properties.unregister()
    while _registered:
        bpy.utils.unregister_class(_registered.pop())
