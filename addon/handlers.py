"""Frame-change and file-load handlers: the live collision check while scrubbing."""
from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from . import overlay, session, storage

_busy = False


@persistent
def on_frame_change(scene, depsgraph) -> None:
    """Refit and collide the built characters at the new frame (viewport only)."""
    global _busy
    if _busy or depsgraph is None or depsgraph.mode == "RENDER":
        return
    s = getattr(scene, "skin_collide", None)
    if s is None or not s.live:
        return
    _busy = True
    try:
        meshes = [ob for ob in scene.objects if ob.type == "MESH" and storage.has_data(ob)]
        meshes = session.built(scene, meshes)
        session.query(scene, depsgraph, meshes)
    except (session.SessionError, ValueError) as exc:
        session.record_error(scene, str(exc))
    except Exception as exc:  # noqa: BLE001 - a handler must never raise on every frame
        session.record_error(scene, f"collision check failed: {type(exc).__name__}: {exc}")
    finally:
        _busy = False


@persistent
def on_load_post(*_args) -> None:
    """Data and settings come back with the file; drawing and results are re-attached.
    Data of meshes deleted or joined away (in files saved before `on_save_pre` existed)
    is removed."""
    for scene in bpy.data.scenes:
        session.forget(scene)
    _clean_orphans()
    overlay.enable_drawing()


@persistent
def on_save_pre(*_args) -> None:
    """Do not save the collision data of meshes that no longer exist."""
    _clean_orphans()


def _clean_orphans() -> None:
    try:
        storage.remove_orphans()
    except Exception as exc:  # noqa: BLE001 - never block saving or loading a file
        print(f"skin_collide: could not clean unused collision data: {exc}")


def register() -> None:
    if on_frame_change not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(on_frame_change)
    if on_load_post not in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.append(on_load_post)
    if on_save_pre not in bpy.app.handlers.save_pre:
        bpy.app.handlers.save_pre.append(on_save_pre)
    overlay.enable_drawing()


def unregister() -> None:
    overlay.disable_drawing()
    for lst, fn in ((bpy.app.handlers.frame_change_post, on_frame_change),
                    (bpy.app.handlers.load_post, on_load_post),
                    (bpy.app.handlers.save_pre, on_save_pre)):
        while fn in lst:
            lst.remove(fn)
