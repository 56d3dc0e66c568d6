"""`python -m skin_collide farm-commands`: the commands a render farm runs for one shot.

One scan command per chunk of frames (`core.report.chunks.by_size`, the boundaries OpenJD's task
chunking makes) and the merge of their reports. Printed, they are an OpenCue `cuecmd`
command list; with ``--run CHUNK`` (or ``--run merge``) this runs one of them in this
process, which is how the Open Job Description template
(farm/openjd/skin_collide_scan.yaml) runs its tasks; the Flamenco job type
(farm/flamenco/skin_collide_scan.js) writes the same commands itself, and a test checks
that they agree. No Blender here: the commands are built from the arguments alone (the
command itself, its arguments and `--run`, is in `cli/farm.py`; the scan flags, in
`cli/scan_flags.py`).
"""
from __future__ import annotations

import shlex

from .core.methods import registry
from .core.report import chunks

MERGED_JSON = "report.json"
MERGED_JUNIT = "report.xml"
MERGED_CSV = "report.contacts.csv"


def chunk_report(out: str, start: int, end: int) -> str:
    """Where the scan of frames start..end writes its report, in the output folder `out`
    (joined with "/": the farm's path, which need not be this machine's)."""
    return f"{out.rstrip('/')}/scan_{start}_{end}.json"


def scan_flags(objects=(), self_collision=False, method: str | None = None, first_hit=False,
               ignore_rest_contacts=False, allow=None, scene: str | None = None,
               clearance: str | None = None, near_pairs: bool = False,
               as_rendered: bool = False, enable_autoexec: bool = False,
               allow_failed_drivers: bool = False, allow_missing: bool = False,
               between_frames: bool = False, subframes: int | None = None) -> list[str]:
    """The scan flags that decide the report's content, in one order for every farm (the
    same flags for every chunk, as `merge` requires; the order of `cli.scan_flags`);
    `method` None: the default one; `scene` None (or empty): the scene the file was saved
    on; `clearance` None (or empty): no clearance (`scan --clearance`, as given: "2mm");
    `as_rendered`: the surfaces renders draw (`scan --as-rendered`); `enable_autoexec`,
    `allow_failed_drivers`, `allow_missing`: what the run may trust and go on without
    (`scan`'s flags, docs/cli.md "What the run sees"); `between_frames`: the steps between
    frames too (`scan --between-frames`), `subframes` its samples per frame (None or 1:
    one; `plan` then gives each chunk but the last its `--step-to`)."""
    from .cli import scan_flags as flags

    return flags.forward({"scene": scene or None, "object": objects,
                          "self_collision": self_collision, "method": method or registry.DEFAULT,
                          "first_hit": first_hit, "ignore_rest_contacts": ignore_rest_contacts,
                          "allow": allow or None, "clearance": clearance or None,
                          "near_pairs": near_pairs, "as_rendered": as_rendered,
                          "enable_autoexec": enable_autoexec,
                          "allow_failed_drivers": allow_failed_drivers,
                          "allow_missing": allow_missing, "between_frames": between_frames,
                          "subframes": str(subframes) if subframes and subframes > 1
                          else None})


def scan_args(file: str, start: int, end: int, out: str, flags: list[str],
              step_to: int | None = None) -> list[str]:
    """`python -m skin_collide` arguments of one chunk's scan; `step_to`: where its last
    frame's step between frames ends (`scan --step-to`, the next chunk's first frame)."""
    step = [f"--step-to={step_to}"] if step_to is not None else []
    return ["scan", file, f"--frames={start}:{end}", *step, *flags, "--json",
            chunk_report(out, start, end)]


def merge_args(out: str, parts: list[tuple[int, int]], junit: bool = True) -> list[str]:
    """`python -m skin_collide` arguments of the merge of every chunk's report: the merged
    report, and (`junit`) its JUnit XML and contacts' CSV."""
    base = out.rstrip("/")
    args = ["merge", *(chunk_report(out, a, b) for a, b in parts), "--json", f"{base}/{MERGED_JSON}"]
    if junit:
        args += ["--junit", f"{base}/{MERGED_JUNIT}", "--contacts-csv", f"{base}/{MERGED_CSV}"]
    return args


def plan(file: str, start: int, end: int, size: int, out: str, flags: list[str]) -> dict:
    """{chunk name: scan arguments} for every chunk, in frame order, and "merge": the
    merge's arguments. With `--between-frames` in `flags`, a step that spans two chunks is
    checked by the chunk that holds its first frame: each chunk but the last scans with
    `--step-to` the next chunk's first frame (the last one's step follows scan's own rule,
    as the scan of the whole range would)."""
    parts = chunks.by_size(start, end, size)
    between = "--between-frames" in flags
    targets = chunks.step_targets(parts, None) if between else [None] * len(parts)
    steps = {chunks.chunk_name(a, b): scan_args(file, a, b, out, flags, to)
             for (a, b), to in zip(parts, targets)}
    steps["merge"] = merge_args(out, parts)
    return steps


def command_line(python: str, args: list[str]) -> str:
    """One shell line: `PYTHON -m skin_collide ARGS`, quoted for a POSIX shell."""
    return shlex.join([python, "-m", "skin_collide", *args])
