"""The modal step loop behind Build and Scan (progress, Esc), without a window."""
from types import SimpleNamespace

from skin_collide.operators.stepping import TimerSteps


class FakeWM:
    def __init__(self):
        self.log = []

    def progress_begin(self, a, b):
        self.log.append(("begin", b))

    def progress_update(self, v):
        self.log.append(("update", v))

    def progress_end(self):
        self.log.append(("end",))

    def event_timer_add(self, t, window=None):
        self.log.append(("timer+",))
        return "timer"

    def event_timer_remove(self, timer):
        self.log.append(("timer-",))

    def modal_handler_add(self, op):
        self.log.append(("modal",))


class Job(TimerSteps):
    cancel_message = "stopped"

    def __init__(self, n, fail_at=None):
        self.n, self.fail_at, self.done, self.finished, self.cancelled, self.reports = n, fail_at, 0, False, False, []

    def _step(self, context):
        if self.done == self.fail_at:
            raise ValueError("broken input")
        self.done += 1
        return self.done == self.n

    def _finish(self, context):
        self.finished = True

    def _cancel(self, context):
        self.cancelled = True

    def report(self, kind, msg):
        self.reports.append((kind, msg))


def ctx():
    return SimpleNamespace(window_manager=FakeWM(), window=object())


def ev(kind):
    return SimpleNamespace(type=kind)


def test_runs_to_completion_with_progress():
    c, job = ctx(), Job(3)
    assert job._begin_steps(c, 3) == {"RUNNING_MODAL"}
    assert job.modal(c, ev("MOUSEMOVE")) == {"PASS_THROUGH"}
    results = [job.modal(c, ev("TIMER")) for _ in range(3)]
    assert results == [{"RUNNING_MODAL"}, {"RUNNING_MODAL"}, {"FINISHED"}]
    assert job.finished and not job.cancelled
    assert ("update", 3) in c.window_manager.log and c.window_manager.log[-1] == ("end",)


def test_escape_cancels_and_undoes():
    c, job = ctx(), Job(5)
    job._begin_steps(c, 5)
    job.modal(c, ev("TIMER"))
    assert job.modal(c, ev("ESC")) == {"CANCELLED"}
    assert job.cancelled and not job.finished
    assert job.reports == [({"WARNING"}, "stopped")]
    assert ("timer-",) in c.window_manager.log


def test_a_failing_step_reports_the_error():
    c, job = ctx(), Job(5, fail_at=2)
    job._begin_steps(c, 5)
    job.modal(c, ev("TIMER"))
    job.modal(c, ev("TIMER"))
    assert job.modal(c, ev("TIMER")) == {"CANCELLED"}
    assert job.cancelled and job.reports == [({"ERROR"}, "broken input")]
