"""Writing scan reports safely: output-path checks, atomic JSON, JUnit XML. Pure Python.

A scan writes its JSON report progressively (`ProgressiveJSON`): the file on disk is always
a complete, valid document of the frames done so far, replaced atomically (a temporary
file in the same folder, then `os.replace`), so a scan that is killed keeps its work.
"""
from __future__ import annotations

import errno
import fnmatch
import json
import os
import secrets
import stat
import tempfile
import time
import xml.etree.ElementTree as ET
from typing import Callable, Sequence

from ..contacts.pairs import Episode


class OutputError(ValueError):
    """An output cannot be written; the message (one line) names the user's path."""


def replace_refusal(path: str) -> str | None:
    """Why the existing file at `path` must not be replaced by an output, as words that
    follow "is" ("read-only (...)", "not writable by this user", ...); None when it may be
    replaced, or when there is no file there.

    The atomic rename that replaces an output needs only the folder's permission, so the
    file's own is checked here: it is replaced only if this user could write it in place,
    i.e. opening it for writing succeeds (permissions, ACLs, immutable and append-only
    flags, read-only mounts; the open neither truncates nor changes the file), and it has
    a write bit for someone: root's open() ignores permissions, and a file made read-only
    with `chmod a-w` is protected from root too."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"not readable as a file ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if not st.st_mode & 0o222:
        return "read-only (no write permission for anyone)"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.EPERM:
            return "immutable or append-only (chattr)"
        if exc.errno == errno.EROFS:
            return "on a read-only file system"
        if exc.errno == errno.EACCES:
            return "not writable by this user"
        return f"not writable ({exc.strerror})"
    os.close(fd)
    return None


def _folder_refusal(folder: str) -> str | None:
    """Why no file can be created in `folder` (None: it can)."""
    try:    # the real test (os.access is wrong for root and some network folders)
        fd, probe = tempfile.mkstemp(prefix=".skin_collide-", suffix=".probe", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError:
        return "not writable"
    if not os.stat(folder).st_mode & 0o222:     # the files' rule: chmod a-w binds root too
        return "not writable (no write permission for anyone)"
    return None


def check_output_path(path: str, flag: str) -> str:
    """The absolute path if a file can be written there; ValueError with one line if not
    (empty, a directory, a missing or read-only folder, an existing file that must not be
    replaced: `replace_refusal`). Checked before a scan starts (before the build)."""
    if not path or not path.strip():
        raise ValueError(f"{flag} needs a file name")
    full = os.path.abspath(path)
    if path.endswith(os.sep) or os.path.isdir(full):
        raise ValueError(f"{flag} is a directory, not a file: {full}")
    _check_folder(os.path.dirname(full), flag)
    why = replace_refusal(full)
    if why:
        raise ValueError(f"{flag} {full} is {why}: it is not replaced")
    return full


def _check_folder(folder: str, flag: str) -> None:
    """ValueError with one line unless `folder` exists and files can be written in it."""
    if not os.path.isdir(folder):
        raise ValueError(f"the folder for {flag} does not exist: {folder}")
    why = _folder_refusal(folder)
    if why:
        raise ValueError(f"the folder for {flag} is {why}: {folder}")


def check_output_folder(folder: str, flag: str, pattern: str) -> str:
    """The absolute path of an output folder (`scan --snapshots DIR`) if files can be
    written in it; ValueError with one line if not. The files' names are known only later
    (the worst frames), so every existing file matching `pattern` that the command might
    replace must be replaceable too (`replace_refusal`)."""
    full = os.path.abspath(folder)
    _check_folder(full, flag)
    for name in sorted(os.listdir(full)):
        if fnmatch.fnmatch(name, pattern):
            why = replace_refusal(os.path.join(full, name))
            if why:
                raise ValueError(f"{flag} {full}: {os.path.join(full, name)} is {why}: "
                                 "it would be replaced")
    return full


def _create_new(folder: str, stem: str, suffix: str) -> tuple[int, str]:
    """A new file `folder/<stem><random><suffix>`, open for writing. Created with mode
    0666 so that the kernel applies the umask (and a folder's default ACL) as for a plain
    open(); `tempfile.mkstemp` would make it 0600 whatever the umask, and the output,
    renamed from it, unreadable to the other users of a CI machine."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = os.path.join(folder, f"{stem}{secrets.token_hex(4)}{suffix}")
        try:
            return os.open(path, flags, 0o666), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", folder)


def write_atomic(path: str, text: str) -> None:
    """Replace `path` with `text` atomically: a reader sees the old or the new file, whole.

    The file gets the mode a plain open() would give: a new file 0666 & ~umask, a replaced
    one its own mode. Raises OutputError (one line naming `path`, never the temporary file)
    when the folder cannot be written or the existing file must not be replaced
    (`replace_refusal`, checked again here: it may have changed since the scan began)."""
    full = os.path.abspath(path)
    why = replace_refusal(full)
    if why:
        raise OutputError(f"cannot write {full}: the file is {why}")
    try:
        fd, tmp = _create_new(os.path.dirname(full), ".skin_collide-", ".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {full}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w") as fh:
            try:        # a replaced file keeps its mode, as open() on it would
                os.fchmod(fh.fileno(), stat.S_IMODE(os.stat(full).st_mode) & 0o777)
            except FileNotFoundError:
                pass
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, full)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {full}: {exc.strerror or exc}") from None
        raise


def keep_elsewhere(path: str, text: str) -> str:
    """Write `text`, meant for `path` but refused there, to a new file beside it
    (`<name>.kept-XXXXXXXX<ext>`) or, failing that, in the temporary folder; returns the
    new file's path. The work a command did is never thrown away because its output
    turned read-only while it ran. OutputError if neither place can be written."""
    full = os.path.abspath(path)
    stem, ext = os.path.splitext(os.path.basename(full))
    errors = []
    for folder in (os.path.dirname(full), tempfile.gettempdir()):
        try:
            fd, kept = _create_new(folder, f"{stem}.kept-", ext)
        except OSError as exc:
            errors.append(f"{folder}: {exc.strerror or exc}")
            continue
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            os.unlink(kept)
            errors.append(f"{kept}: {exc.strerror or exc}")
            continue
        return kept
    raise OutputError(f"cannot keep the output for {full} anywhere: {'; '.join(errors)}")


PAIRS_PER_LINE = 200
"""A frame with more pairs than this has them on several lines: Blender's
`Text.from_string` is quadratic in a line's length (a capped frame's 20,000 pairs on one
line took 9.7 s to store in the panel's report Text; bpy 5.0.1)."""
_PAIRS_MARK = "\u0000pairs\u0000"


def _frame_json(frame: dict) -> str:
    """One frame on one line, its long pair lists ("pairs", and the "near" pairs of
    `--near-pairs`) on several."""
    long = {k: v for k in ("pairs", "near") if isinstance(v := frame.get(k), list)
            and len(v) > PAIRS_PER_LINE}
    if not long:
        return json.dumps(frame)
    text = json.dumps({**frame, **{k: _PAIRS_MARK + k for k in long}})
    for k, pairs in long.items():
        rows = ",\n ".join(json.dumps(pairs[i:i + PAIRS_PER_LINE])[1:-1]
                            for i in range(0, len(pairs), PAIRS_PER_LINE))
        text = text.replace(json.dumps(_PAIRS_MARK + k), f"[\n {rows}]", 1)
    return text


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


def _frame_text(x) -> str:
    x = float(x)
    return str(int(x)) if x == int(x) else f"{x:g}"


def junit_xml(suite: str, objects: Sequence[str], self_collision: bool,
              eps: Sequence[Episode], frames: int, seconds: float = 0.0,
              contact_eps: Sequence = (), contacts_per_case: int = 5,
              near_eps: Sequence = (), clearance_gate: bool = False,
              pass_steps: Sequence | None = None) -> str:
    """JUnit XML: one test case per object pair (and per object, for self-collision),
    failing with its collision episodes in the message, and the contact episodes of that
    object pair by bone pair (`core.contacts.groups.ContactEpisode`, the longest crossings
    first, at most `contacts_per_case` in the message, all in the text). `near_eps`: the
    near episodes of a clearance scan (`core.contacts.clearance.NearEpisode`); with
    `clearance_gate` (`--fail-on-collision` with `--clearance`) they fail their object
    pair's case too (type "clearance" when it has no collision), else they are listed in
    the system-out only. `pass_steps`: with `scan --between-frames`, per step with
    pass-throughs ((frame, next frame), its `core.contacts.passing.PassEpisode`s,
    `passing.step_episodes`): a failing test case each, "between frames F and G" (type
    "passes through"), or one passing case "between frames" when none passes through;
    None: the steps were not checked, no such case."""
    cases: list[tuple[str, list[Episode]]] = []
    for i, a in enumerate(objects):
        if self_collision:
            cases.append((f"{a} self", [e for e in eps if e.a == a and e.b == a]))
        for b in objects[i + 1:]:
            key = tuple(sorted((a, b)))
            cases.append((f"{a} x {b}", [e for e in eps if (e.a, e.b) == key]))

    def near_of(name: str) -> list:
        if not clearance_gate or name.endswith(" self"):
            return []
        a, b = name.split(" x ", 1)
        return sorted((e for e in near_eps if {e.a, e.b} == {a, b}),
                      key=lambda e: (e.closest, e.start))

    failures = sum(1 for name, es in cases if es or near_of(name))
    steps = list(pass_steps) if pass_steps is not None else []
    n_step_cases = (len(steps) or 1) if pass_steps is not None else 0
    failures += len(steps)
    root = ET.Element("testsuites")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases) + n_step_cases),
                       failures=str(failures), errors="0", time=f"{seconds:.3f}")
    for name, es in cases:
        tc = ET.SubElement(ts, "testcase", classname=suite, name=name, time="0")
        if es:
            a, b = es[0].a, es[0].b
            ce = sorted((c for c in contact_eps if (c.a, c.b) == (a, b)),
                        key=lambda c: (-(c.kind == "crossing"), -c.worst_length, c.start))
            msg = "; ".join([e.describe() for e in es]
                            + [c.describe() for c in ce[:contacts_per_case]]
                            + ([f"and {len(ce) - contacts_per_case} more contact episodes"]
                               if len(ce) > contacts_per_case else []))
            fl = ET.SubElement(tc, "failure", message=msg, type="collision")
            fl.text = "\n".join(
                [f"frames {e.start}-{e.end} ({e.frames} frames, {e.pairs} pair-frames), "
                 f"worst frame {e.worst_frame}: {e.worst_pairs} pairs" for e in es]
                + [c.describe() for c in ce] + [n.describe() for n in near_of(name)])
        elif near_of(name):
            ne = near_of(name)
            fl = ET.SubElement(tc, "failure", type="clearance",
                               message="; ".join(n.describe() for n in ne[:contacts_per_case])
                               + (f"; and {len(ne) - contacts_per_case} more near episodes"
                                  if len(ne) > contacts_per_case else ""))
            fl.text = "\n".join(n.describe() for n in ne)
    for (start, end), pe in steps:
        tc = ET.SubElement(ts, "testcase", classname=suite,
                           name=f"between frames {_frame_text(start)} and {_frame_text(end)}",
                           time="0")
        fl = ET.SubElement(tc, "failure", type="passes through",
                           message="; ".join(e.describe() for e in pe[:contacts_per_case])
                           + (f"; and {len(pe) - contacts_per_case} more"
                              if len(pe) > contacts_per_case else ""))
        fl.text = "\n".join(e.describe() for e in pe)
    if pass_steps is not None and not steps:
        ET.SubElement(ts, "testcase", classname=suite, name="between frames", time="0")
    out = f"{frames} frames scanned"
    if near_eps and not clearance_gate:
        out += "\n" + "\n".join(n.describe() for n in near_eps)
    ET.SubElement(ts, "system-out").text = out
    return ET.tostring(root, encoding="unicode", xml_declaration=True)
