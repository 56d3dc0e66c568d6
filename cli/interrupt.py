"""Ctrl-C and SIGTERM during a scan: both stop it as a KeyboardInterrupt, and the scan loop
checks the flag after every frame, so the frames done are kept in the report.
"""
from __future__ import annotations

# Set by the signal handler: a KeyboardInterrupt raised while Blender runs Python inside
# its own C code (frame change handlers, drivers) is printed and swallowed there, so the
# scan loop also checks this flag after every frame (`raise_if_interrupted`).
_INTERRUPTED = [False]


def interrupt_on_signals() -> None:
    """SIGTERM (a CI job's timeout) stops the scan like Ctrl-C (SIGINT): the report is kept."""
    import signal

    _INTERRUPTED[0] = False

    def handler(signum, frame):
        _INTERRUPTED[0] = True
        raise KeyboardInterrupt

    try:
        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
    except ValueError:      # not the main thread
        pass


def raise_if_interrupted() -> None:
    if _INTERRUPTED[0]:
        raise KeyboardInterrupt
