"""Handlers: the live collision check while scrubbing (frame changes) and while posing
(depsgraph updates), and re-attaching drawing after a file load.

Posing fires `depsgraph_update_post` on every step of a drag, with no frame change. The
live update there is throttled: while a query runs, or when updates come faster than the
queries take, the update is only marked pending and is caught up later, by the next handler
call or by a one-shot timer (real Blender; `bpy.app.timers` never fire in the pip module,
where `catch_up()` is called directly or by the next update).
"""
from __future__ import annotations

import time

import bpy
from bpy.app.handlers import persistent

from . import overlay, session, storage
from .state import STATE, quiet  # noqa: F401  (quiet: the older import path)

# Minimum pause after a live query, as a multiple of its duration (1.0: a drag spends at
# most half of its time in queries). The tests set it to 0 or to a large value.
THROTTLE = 1.0


def _update(scene, depsgraph) -> None:
    """Collide the built characters as evaluated now; keep the result and its pair count."""
    STATE.busy = True
    t0 = time.perf_counter()
    try:
        shown = session.shown_meshes(scene, depsgraph.view_layer)
        if not shown and session.built_meshes(scene):   # all hidden: nothing to show
            session.forget(scene)
            pairs = 0
        else:
            res = session.query(scene, depsgraph, session.built(scene, shown), carry=True)
            pairs = res.n_pairs
    except (session.SessionError, ValueError) as exc:
        session.record_error(scene, str(exc))
        pairs = 0
    except Exception as exc:  # noqa: BLE001 - a handler must never raise on every frame
        session.record_error(scene, f"collision check failed: {type(exc).__name__}: {exc}")
        pairs = 0
    finally:
        STATE.busy = False
        STATE.last_end = time.perf_counter()
        STATE.last_seconds = STATE.last_end - t0
    if scene.skin_collide.live_pairs != pairs:    # a write tags the scene: only on change
        with quiet():
            scene.skin_collide.live_pairs = pairs


def _live(scene) -> bool:
    s = getattr(scene, "skin_collide", None)
    return s is not None and s.live


def _note_mesh_changes(depsgraph) -> None:
    """Meshes whose data this update changed (weights, vertices): their next use re-reads
    the weights (`session.per_vertex_stale_reason`). A frame change after a script's edit
    brings the edit in its own updates (no depsgraph_update_post then)."""
    if depsgraph is None:
        return
    try:
        for upd in depsgraph.updates:
            if upd.is_updated_geometry and isinstance(upd.id, bpy.types.Mesh):
                session.mark_mesh_changed(upd.id.original)
    except Exception as exc:  # noqa: BLE001 - a handler must never raise
        print(f"skin_collide: could not read the depsgraph updates: {exc}")


@persistent
def on_frame_change(scene, depsgraph) -> None:
    """Refit and collide the built characters at the new frame (viewport only)."""
    _note_mesh_changes(depsgraph)
    if STATE.busy or depsgraph is None or depsgraph.mode == "RENDER" or not _live(scene):
        return
    STATE.pending = ""                # the frame's query sees the latest pose too
    _update(scene, depsgraph)


def _relevant(scene, depsgraph) -> bool:
    """Whether the update touched a built mesh, the armature deforming it or an object it
    hangs from, or changed which built meshes the viewport shows (hiding one need not
    list it among the updates)."""
    last = session.live_result(scene)
    shown = {ob.name_full for ob in session.shown_meshes(scene, depsgraph.view_layer)}
    if set(last.names if last is not None else ()) != shown and \
            (last is None or not last.error):
        return True
    watched = set()
    for ob in session.built_meshes(scene):        # hiding one is relevant too
        watched.add(ob.name_full)
        for mod in ob.modifiers:
            if mod.type == "ARMATURE" and mod.object is not None:
                watched.add(mod.object.name_full)
        p = ob.parent                    # a rigid prop moves with its whole parent chain
        while p is not None:
            watched.add(p.name_full)
            p = p.parent
    for upd in depsgraph.updates:
        idb = upd.id
        if isinstance(idb, bpy.types.Object) and idb.original.name_full in watched:
            return True
    return False


@persistent
def on_depsgraph_update(scene, depsgraph) -> None:
    """Follow pose edits (no frame change): collide again, throttled. Also notes meshes
    whose data changed (weight painting, Edit Mode, scripts): their next use re-reads
    the weights (`session.per_vertex_stale_reason`)."""
    _note_mesh_changes(depsgraph)
    if STATE.quiet or depsgraph is None or depsgraph.mode == "RENDER" or not _live(scene):
        return
    if not _relevant(scene, depsgraph) and STATE.pending != scene.name_full:
        return
    now = time.perf_counter()
    if STATE.busy or now - STATE.last_end < THROTTLE * STATE.last_seconds:
        if not STATE.pending:
            STATE.pending = scene.name_full
            _schedule_catch_up()
        return
    STATE.pending = ""
    _update(scene, depsgraph)


def catch_up() -> None:
    """Run the pending live update, if any (what the timer calls)."""
    if not STATE.pending or STATE.busy:
        return
    scene = bpy.data.scenes.get(STATE.pending)
    STATE.pending = ""
    if scene is None or not _live(scene):
        return
    _update(scene, bpy.context.evaluated_depsgraph_get())


def pending() -> bool:
    return bool(STATE.pending)


def _timer():
    if STATE.busy:
        return 0.05
    catch_up()
    return None


def _schedule_catch_up() -> None:
    delay = max(0.02, THROTTLE * STATE.last_seconds)
    if not bpy.app.timers.is_registered(_timer):
        bpy.app.timers.register(_timer, first_interval=delay)


def _prefetch_on_load() -> bool:
    """Decode the live characters' data in the background after a file opens: in an
    interactive session only (a headless run uses its data at once, or not at all)."""
    return not bpy.app.background


@persistent
def on_load_post(*_args) -> None:
    """Data and settings come back with the file; drawing and results are re-attached.
    Data of meshes deleted or joined away (in files saved before `on_save_pre` existed)
    is removed."""
    STATE.pending = ""
    STATE.shared_bases.clear()         # the closed file's decoded builds of copies
    for scene in bpy.data.scenes:
        session.forget(scene)
    session.forget_checks()
    _clean_orphans()
    try:
        storage.scan_missing()         # only notes them: rebuilt when first needed
        if _prefetch_on_load():        # decoded in the background, never waited for here
            storage.prefetch(bpy.data.scenes)
    except Exception as exc:  # noqa: BLE001 - never block loading a file
        print(f"skin_collide: could not check the collision data caches: {exc}")
    overlay.forget_drawn()
    overlay.enable_drawing()


@persistent
def on_save_pre(*args) -> None:
    """Do not save the collision data of meshes that no longer exist; put the data where
    the scene's Data Location says (the disk cache next to the file being saved)."""
    _clean_orphans()
    path = args[0] if args and isinstance(args[0], str) else None
    try:
        storage.relocate(path or None)
    except Exception as exc:  # noqa: BLE001 - never block saving a file
        print(f"skin_collide: could not move the collision data: {exc}")


def _clean_orphans() -> None:
    try:
        storage.remove_orphans()
    except Exception as exc:  # noqa: BLE001 - never block saving or loading a file
        print(f"skin_collide: could not clean unused collision data: {exc}")


_HANDLERS = ((lambda: bpy.app.handlers.frame_change_post, on_frame_change),
             (lambda: bpy.app.handlers.depsgraph_update_post, on_depsgraph_update),
             (lambda: bpy.app.handlers.load_post, on_load_post),
             (lambda: bpy.app.handlers.save_pre, on_save_pre))


def register() -> None:
    for lst, fn in _HANDLERS:
        if fn not in lst():
            lst().append(fn)
    overlay.enable_drawing()


def unregister() -> None:
    overlay.disable_drawing()
    storage.stop_prefetch()
    STATE.reset()
    if bpy.app.timers.is_registered(_timer):
        bpy.app.timers.unregister(_timer)
    for lst, fn in _HANDLERS:
        while fn in lst():
            lst().remove(fn)
