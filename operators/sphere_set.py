"""Operator: build a variational sphere set (`sphere-set` method) for the characters."""
from __future__ import annotations

import threading

import bpy

from ..addon import extract, session
from ..core import scan as core_scan
from ..core.methods.sphere_set.method import SphereSetMethod
from .build import SKINCOLLIDE_OT_build, build_each
from .stepping import guard_operators


def prepare_set(rig, count: int, seed: int, **progress):
    """`rig`'s sphere set of `count` spheres fitted with `seed` (down the method's fallback
    chain for a rig it cannot bound, as every build), as a `core.scan.CollisionObject`."""
    return core_scan.prepare(rig, SphereSetMethod.id, count=count, seed=seed, **progress)


def fraction(*args) -> float | None:
    """The fit's progress report as a fraction in [0, 1]: progress(fraction) or
    progress(done, total); None when it is neither."""
    try:
        f = float(args[0]) / float(args[1]) if len(args) >= 2 else float(args[0])
    except (IndexError, TypeError, ValueError, ZeroDivisionError):
        return None
    return min(max(f, 0.0), 1.0)


class _Job:
    """The fits of all characters, one after the other, in a worker thread (numpy only:
    the rigs are read from Blender before it starts, and the results are stored by the
    operator in the main thread). `stop` makes the fit's `should_stop` say yes."""

    def __init__(self, rigs, count: int, seed: int):
        self.rigs, self.count, self.seed = rigs, count, seed
        self.objects: list = []
        self.fraction = 0.0             # of the current character
        self.error: BaseException | None = None
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)

    def progress(self, *args) -> None:
        f = fraction(*args)
        if f is not None:
            self.fraction = f

    def run(self) -> None:
        try:
            for rig in self.rigs:
                if self.stop:
                    return
                self.fraction = 0.0
                self.objects.append(prepare_set(
                    rig, self.count, self.seed, progress=self.progress,
                    should_stop=lambda: self.stop))
        except BaseException as exc:     # noqa: BLE001 - reported by the operator
            self.error = exc

    @property
    def done(self) -> float:
        return len(self.objects) + (self.fraction if len(self.objects) < len(self.rigs) else 0.0)


class SKINCOLLIDE_OT_build_sphere_set(bpy.types.Operator):
    """Build a variational sphere set with the panel's number of spheres for each character
    (selected meshes or the chosen collection), animated with the skeleton; it is saved
    with the file. Esc cancels and keeps the old data"""

    bl_idname = "skin_collide.build_sphere_set"
    bl_label = "Build Sphere Set"
    bl_options = {"REGISTER", "UNDO"}
    cancel_message = "Sphere-set build cancelled; the collision data is unchanged"

    # Build's own steps (not by subclassing: Blender loses track of a registered operator
    # class that another registered one derives from).
    poll = classmethod(SKINCOLLIDE_OT_build.poll.__func__)
    _prepare = SKINCOLLIDE_OT_build._prepare
    _store = SKINCOLLIDE_OT_build._store

    def execute(self, context):
        try:
            meshes, rigs = self._prepare(context)
        except (extract.RigError, session.SessionError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        s = context.scene.skin_collide
        wm = context.window_manager

        def build_one(k, rig):
            def progress(*args):
                f = fraction(*args)
                if f is not None:
                    wm.progress_update(k + f)
            return prepare_set(rig, s.sphere_count, s.sphere_seed,
                                           progress=progress)

        # Copies of one character fit one set (`core.scan.shared_builds`, from `_prepare`).
        self._store(context, meshes, self._expand(build_each(context, rigs, build_one)))
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.window is None or bpy.app.background:
            return self.execute(context)
        try:
            self._meshes, rigs = self._prepare(context)
        except (extract.RigError, session.SessionError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        s = context.scene.skin_collide
        self._job = _Job(rigs, s.sphere_count, s.sphere_seed)
        wm = context.window_manager
        wm.progress_begin(0, len(rigs))
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        self._job.thread.start()
        return {"RUNNING_MODAL"}

    def _end(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()

    def modal(self, context, event):
        job = self._job
        if event.type == "ESC":
            job.stop = True              # the worker stops at the fit's next check
            self._end(context)
            self.report({"WARNING"}, self.cancel_message)
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        context.window_manager.progress_update(job.done)
        if job.thread.is_alive():
            return {"RUNNING_MODAL"}
        self._end(context)
        if job.error is not None:
            exc = job.error
            msg = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            self.report({"ERROR"}, (msg.splitlines() or ["failed"])[0])
            return {"CANCELLED"}
        self._store(context, self._meshes, self._expand(job.objects))
        return {"FINISHED"}


CLASSES = (SKINCOLLIDE_OT_build_sphere_set,)
guard_operators(CLASSES)
