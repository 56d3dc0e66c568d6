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
        except ValueError as exc:        # SessionError and RigError are ValueErrors
            self._end_steps(context)
            self._cancel(context)
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self._steps_done += 1
        context.window_manager.progress_update(self._steps_done)
        if done:
            self._end_steps(context)
            self._finish(context)
            return {"FINISHED"}
        return {"RUNNING_MODAL"}
