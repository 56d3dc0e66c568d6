"""Frame-change and file-load handlers: the live collision check while scrubbing."""
from __future__ import annotations

import bpy
from bpy.app.handlers import persistent

from . import overlay, session

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
        meshes = [ob for ob in scene.objects if ob.type == "MESH" and ob.skin_collide.data]
        meshes = session.built(scene, meshes)
        session.query(scene, depsgraph, meshes)
    except (session.SessionError, ValueError) as exc:
        session.record_error(scene, str(exc))
    finally:
        _busy = False


@persistent
def on_load_post(*_args) -> None:
    """Data and settings come back with the file; drawing and results are re-attached."""
    for scene in bpy.data.scenes:
        session.forget(scene)
    overlay.enable_drawing()


def register() -> None:
    if on_frame_change not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(on_frame_change)
    if on_load_post not in bpy.app.handlers.load_post:
        bpy.app.handlers.load_post.append(on_load_post)
    overlay.enable_drawing()


def unregister() -> None:
    overlay.disable_drawing()
    for lst, fn in ((bpy.app.handlers.frame_change_post, on_frame_change),
                    (bpy.app.handlers.load_post, on_load_post)):
        while fn in lst:
            lst.remove(fn)
