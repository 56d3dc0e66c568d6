"""Shared operator pieces: the Object Mode poll, and a modal operator that does its work
one step per timer tick, with progress and Esc."""
from __future__ import annotations


def object_mode_poll(cls, context) -> bool:
    """Poll for operators that change data: a scene, in Object Mode (with a message)."""
    if context.scene is None:
        return False
    if context.mode != "OBJECT":
        cls.poll_message_set("Switch to Object Mode")
        return False
    return True


class TimerSteps:
    """Mixin: call `_begin_steps(context, total)` from invoke(); implement `_step(context)`
    (one unit of work, returns True when everything is done), `_finish(context)` and
    `_cancel(context)` (undo partial effects). Esc cancels."""

    cancel_message = "Cancelled"

    def _begin_steps(self, context, total: int):
        wm = context.window_manager
        wm.progress_begin(0, total)
        self._steps_done = 0
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        return {"RUNNING_MODAL"}

    def _end_steps(self, context) -> None:
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()

    def modal(self, context, event):
        if event.type == "ESC":
            self._end_steps(context)
            self._cancel(context)
            self.report({"WARNING"}, self.cancel_message)
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        try:
            done = self._step(context)
        except Exception as exc:  # noqa: BLE001 - SessionError/RigError, or a bug: report it
            self._end_steps(context)
            self._cancel(context)
            msg = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            self.report({"ERROR"}, msg.splitlines()[0] if msg else "failed")
            return {"CANCELLED"}
        self._steps_done += 1
        context.window_manager.progress_update(self._steps_done)
        if done:
            self._end_steps(context)
            self._finish(context)
            return {"FINISHED"}
        return {"RUNNING_MODAL"}


def _report_failure(op, context, exc) -> set:
    first = (str(exc).strip().splitlines() or [""])[0]
    op.report({"ERROR"}, f"{op.bl_label} failed: {first or type(exc).__name__}")
    cleanup = getattr(op, "on_failure", None)     # an operator's optional clean-up hook
    if cleanup is not None:
        try:
            cleanup(context)
        except Exception:  # noqa: BLE001
            pass
    return {"CANCELLED"}


def guarded(method):
    """Wrap an operator's execute (self, context) or invoke/modal (self, context, event) so
    that no unexpected Python exception escapes: it becomes a one-line error report and
    CANCELLED. The operators change the scene only after every check and computation has
    succeeded, so a failure before that point leaves the scene unchanged. (Blender checks
    the argument count of these methods, so each arity gets its own wrapper.)"""
    import functools

    if method.__code__.co_argcount == 2:
        @functools.wraps(method)
        def wrapper(self, context):
            try:
                return method(self, context)
            except Exception as exc:  # noqa: BLE001 - the one place that turns bugs into reports
                return _report_failure(self, context, exc)
    else:
        @functools.wraps(method)
        def wrapper(self, context, event):
            try:
                return method(self, context, event)
            except Exception as exc:  # noqa: BLE001
                return _report_failure(self, context, exc)
    return wrapper


def guard_operators(classes) -> None:
    """Apply `guarded` to execute, invoke and modal of every operator class in `classes`
    (those the class itself defines or inherits)."""
    for cls in classes:
        for name in ("execute", "invoke", "modal"):
            fn = getattr(cls, name, None)
            if fn is not None and not getattr(fn, "_skin_collide_guarded", False):
                g = guarded(fn)
                g._skin_collide_guarded = True
                setattr(cls, name, g)
