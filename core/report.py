"""Writing scan reports safely: output-path checks, atomic JSON, JUnit XML. Pure Python.

A scan writes its JSON report progressively (`ProgressiveJSON`): the file on disk is always
a complete, valid document of the frames done so far, replaced atomically (a temporary
file in the same folder, then `os.replace`), so a scan that is killed keeps its work.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
import xml.etree.ElementTree as ET
from typing import Callable, Sequence

from .contacts import Episode


def check_output_path(path: str, flag: str) -> str:
    """The absolute path if a file can be written there; ValueError with one line if not
    (empty, a directory, a missing or read-only folder). Checked before a scan starts."""
    if not path or not path.strip():
        raise ValueError(f"{flag} needs a file name")
    full = os.path.abspath(path)
    if path.endswith(os.sep) or os.path.isdir(full):
        raise ValueError(f"{flag} is a directory, not a file: {full}")
    folder = os.path.dirname(full)
    if not os.path.isdir(folder):
        raise ValueError(f"the folder for {flag} does not exist: {folder}")
    try:    # the real test (os.access is wrong for root and some network folders)
        fd, probe = tempfile.mkstemp(prefix=".skin_collide-", suffix=".probe", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError:
        raise ValueError(f"the folder for {flag} is not writable: {folder}") from None
    return full


def write_atomic(path: str, text: str) -> None:
    """Replace `path` with `text` atomically: a reader sees the old or the new file, whole."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".skin_collide-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


PAIRS_PER_LINE = 200
"""A frame with more pairs than this has them on several lines: Blender's
`Text.from_string` is quadratic in a line's length (a capped frame's 20,000 pairs on one
line took 9.7 s to store in the panel's report Text; bpy 5.0.1)."""
_PAIRS_MARK = "\u0000pairs\u0000"


def _frame_json(frame: dict) -> str:
    pairs = frame.get("pairs")
    if not isinstance(pairs, list) or len(pairs) <= PAIRS_PER_LINE:
        return json.dumps(frame)
    rows = ",\n ".join(json.dumps(pairs[k:k + PAIRS_PER_LINE])[1:-1]
                        for k in range(0, len(pairs), PAIRS_PER_LINE))
    text = json.dumps({**frame, "pairs": _PAIRS_MARK})
    return text.replace(json.dumps(_PAIRS_MARK), f"[\n {rows}]", 1)


def dumps(report: dict) -> str:
    """A scan report as JSON text with one frame per line: small diffs, readable by eye,
    and fast in Blender's Text editor (slow on one huge line). The one formatter of the
    headless scan's file, the panel's stored report and its export."""
    if not isinstance(report.get("frames"), list):
        return json.dumps(report, indent=1) + "\n"
    head = {k: v for k, v in report.items() if k != "frames"}
    frames = ",\n".join(_frame_json(f) for f in report["frames"])
    body = json.dumps(head)[:-1]
    sep = ", " if head else ""
    return f'{body}{sep}"frames": [\n{frames}\n]}}\n'


class ProgressiveJSON:
    """Rewrites a JSON document atomically at most every `interval` seconds (and on
    `flush`). `build()` returns the document to write."""

    def __init__(self, path: str, build: Callable[[], dict], interval: float = 1.0):
        self.path, self.build, self.interval = path, build, interval
        self._last = -float("inf")

    def maybe_write(self) -> bool:
        now = time.monotonic()
        if now - self._last < self.interval:
            return False
        self.flush()
        return True

    def flush(self) -> None:
        write_atomic(self.path, dumps(self.build()))
        self._last = time.monotonic()


def junit_xml(suite: str, objects: Sequence[str], self_collision: bool,
              eps: Sequence[Episode], frames: int, seconds: float = 0.0) -> str:
    """JUnit XML: one test case per object pair (and per object, for self-collision),
    failing with its collision episodes in the message."""
    cases: list[tuple[str, list[Episode]]] = []
    for i, a in enumerate(objects):
        if self_collision:
            cases.append((f"{a} self", [e for e in eps if e.a == a and e.b == a]))
        for b in objects[i + 1:]:
            key = tuple(sorted((a, b)))
            cases.append((f"{a} x {b}", [e for e in eps if (e.a, e.b) == key]))
    failures = sum(1 for _, es in cases if es)
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)),
                       failures=str(failures), errors="0", time=f"{seconds:.3f}")
    for name, es in cases:
        tc = ET.SubElement(ts, "testcase", classname=suite, name=name, time="0")
        if es:
            msg = "; ".join(e.describe() for e in es)
            fl = ET.SubElement(tc, "failure", message=msg, type="collision")
            fl.text = "\n".join(
                f"frames {e.start}-{e.end} ({e.frames} frames, {e.pairs} pair-frames), "
                f"worst frame {e.worst_frame}: {e.worst_pairs} pairs" for e in es)
    ET.SubElement(ts, "system-out").text = f"{frames} frames scanned"
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
