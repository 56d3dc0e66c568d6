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
               allow_failed_drivers: bool = False, allow_missing: bool = False) -> list[str]:
    """The scan flags that decide the report's content, in one order for every farm (the
    same flags for every chunk, as `merge` requires; the order of `cli.scan_flags`);
    `method` None: the default one; `scene` None (or empty): the scene the file was saved
    on; `clearance` None (or empty): no clearance (`scan --clearance`, as given: "2mm");
    `as_rendered`: the surfaces renders draw (`scan --as-rendered`); `enable_autoexec`,
    `allow_failed_drivers`, `allow_missing`: what the run may trust and go on without
    (`scan`'s flags, docs/cli.md "What the run sees")."""
    from .cli import scan_flags as flags

    return flags.forward({"scene": scene or None, "object": objects,
                          "self_collision": self_collision, "method": method or registry.DEFAULT,
                          "first_hit": first_hit, "ignore_rest_contacts": ignore_rest_contacts,
                          "allow": allow or None, "clearance": clearance or None,
                          "near_pairs": near_pairs, "as_rendered": as_rendered,
                          "enable_autoexec": enable_autoexec,
                          "allow_failed_drivers": allow_failed_drivers,
                          "allow_missing": allow_missing})


def scan_args(file: str, start: int, end: int, out: str, flags: list[str]) -> list[str]:
    """`python -m skin_collide` arguments of one chunk's scan."""
    return ["scan", file, f"--frames={start}:{end}", *flags, "--json", chunk_report(out, start, end)]


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
    merge's arguments."""
    parts = chunks.by_size(start, end, size)
    steps = {chunks.chunk_name(a, b): scan_args(file, a, b, out, flags) for a, b in parts}
    steps["merge"] = merge_args(out, parts)
    return steps


def command_line(python: str, args: list[str]) -> str:
    """One shell line: `PYTHON -m skin_collide ARGS`, quoted for a POSIX shell."""
    return shlex.join([python, "-m", "skin_collide", *args])
