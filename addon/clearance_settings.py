"""What happens when the panel's Clearance settings change (issue 42): turning Clearance
off drops the near results at once; turning it on, or a new distance, queries the current
frame again. Called from the settings' update (`addon.properties`); never raises."""
from __future__ import annotations

import dataclasses

from . import extract, session
from .state import STATE


def drop_near(scene) -> None:
    """Forget the near results of `scene`'s last query at once (Clearance turned off): the
    overlay, the panel and Frame Contact see intersections only."""
    res = session.live_result(scene)
    if res is not None and (res.near_contacts or res.near_triangles or res.clearance_note
                            or res.clearance is not None):
        STATE.live[scene.name_full] = dataclasses.replace(
            res, near_contacts=[], near_triangles=[], clearance_note="", clearance=None)
    STATE.drawn.pop(scene.name_full, None)


def requery(scene, context) -> None:
    """Query the current frame again with the scene's settings (Clearance turned on, or a
    new distance), when there is something to update: the live overlay is on, or the
    panel shows a result. A problem is kept for the panel (`session.record_error`), never
    raised: this runs inside a property update."""
    if not (scene.skin_collide.live or session.live_result(scene) is not None):
        return
    if context is None or getattr(context, "scene", None) != scene:
        return                    # only the context's scene has a depsgraph at hand
    try:
        session.query(scene, context.evaluated_depsgraph_get(), session.shown_built(scene),
                      carry=bool(scene.skin_collide.live))
    except session.DegeneratePose as exc:
        session.not_checked(scene, str(exc))
    except (session.SessionError, extract.RigError, ValueError) as exc:
        session.record_error(scene, str(exc))
    except Exception as exc:  # noqa: BLE001 - a property update must never raise
        session.record_error(scene, f"collision check failed: {type(exc).__name__}: {exc}")


def settings_changed(context, scene=None) -> None:
    """The panel's Clearance toggle or distance changed (`scene`'s, default the
    context's): off drops the near results at once (`drop_near`); on, the current frame
    is queried again with the new distance (`requery`)."""
    scene = scene if scene is not None else getattr(context, "scene", None)
    if scene is None:
        return
    if not scene.skin_collide.clearance:
        drop_near(scene)
    else:
        requery(scene, context)
    for window in getattr(getattr(context, "window_manager", None), "windows", []):
        for area in window.screen.areas:
            area.tag_redraw()
