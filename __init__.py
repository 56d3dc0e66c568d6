"""skin_collide: exact, fast collision detection for skinned characters.

The package is both a Blender extension (this file registers it) and a plain Python package
(`skin_collide.core` is pure numpy). Nothing here imports bpy at import time, so
``import skin_collide`` works outside Blender.
"""

_registered: list = []


def _classes():
    from .addon import properties
    from .operators import build, contacts, doctor, live, scan, sphere_set
    from .panels import main_panel

    return (*properties.CLASSES, *doctor.CLASSES, *build.CLASSES, *sphere_set.CLASSES,
            *live.CLASSES, *scan.CLASSES, *contacts.CLASSES, *main_panel.CLASSES)


def register() -> None:
    import bpy

    from .addon import handlers, properties

    for cls in _classes():
        bpy.utils.register_class(cls)
        _registered.append(cls)
    properties.register()
    handlers.register()
    if not bpy.app.binary_path:
        # The pip bpy module (scripts, the CLI, tests): bpy 4.2 LTS segfaults at interpreter
        # exit while a PropertyGroup with an `update` callback is still registered, so
        # unregister first (atexit runs this before bpy's own exit handler, which was
        # registered when bpy was imported).
        import atexit

        atexit.unregister(_unregister_at_exit)
        atexit.register(_unregister_at_exit)


def _unregister_at_exit() -> None:
    if _registered:
        try:
            unregister()
        except Exception:       # noqa: BLE001 - exiting anyway; never turn exit into a crash
            pass


def unregister() -> None:
    """Undo `register`; safe to call again (a no-op then). With the pip bpy it runs twice
    for an add-on a script enabled with `addon_utils.enable`: at exit
    (`_unregister_at_exit`), then when Blender disables its add-ons."""
    import atexit

    import bpy

    atexit.unregister(_unregister_at_exit)

    from .addon import handlers, properties

    handlers.unregister()
    properties.unregister()
    while _registered:
        bpy.utils.unregister_class(_registered.pop())
