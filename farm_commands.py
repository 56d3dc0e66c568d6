"""`python -m skin_collide farm-commands`: the commands a render farm runs for one shot.

One scan command per chunk of frames (`core.chunks.by_size`, the boundaries OpenJD's task
chunking makes) and the merge of their reports. Printed, they are an OpenCue `cuecmd`
command list; with ``--run CHUNK`` (or ``--run merge``) this runs one of them in this
process, which is how the Open Job Description template
(farm/openjd/skin_collide_scan.yaml) runs its tasks; the Flamenco job type
(farm/flamenco/skin_collide_scan.js) writes the same commands itself, and a test checks
that they agree. No Blender here: the commands are built from the arguments alone.
"""
from __future__ import annotations

import shlex

from .core import chunks

MERGED_JSON = "report.json"
MERGED_JUNIT = "report.xml"


def chunk_report(out: str, start: int, end: int) -> str:
    """Where the scan of frames start..end writes its report, in the output folder `out`
    (joined with "/": the farm's path, which need not be this machine's)."""
    return f"{out.rstrip('/')}/scan_{start}_{end}.json"


def scan_flags(objects=(), self_collision=False, method="sphere-tree", first_hit=False,
               ignore_rest_contacts=False, allow=None) -> list[str]:
    """The scan flags that decide the report's content, in one order for every farm (the
    same flags for every chunk, as `merge` requires)."""
    out = []
    for name in objects or ():
        out += ["--object", name]
    if self_collision:
        out.append("--self")
    out += ["--method", method]
    if first_hit:
        out.append("--first-hit")
    if ignore_rest_contacts:
        out.append("--ignore-rest-contacts")
    if allow:
        out += ["--allow", allow]
    return out


def scan_args(file: str, start: int, end: int, out: str, flags: list[str]) -> list[str]:
    """`python -m skin_collide` arguments of one chunk's scan."""
    return ["scan", file, f"--frames={start}:{end}", *flags, "--json", chunk_report(out, start, end)]


def merge_args(out: str, parts: list[tuple[int, int]], junit: bool = True) -> list[str]:
    """`python -m skin_collide` arguments of the merge of every chunk's report."""
    base = out.rstrip("/")
    args = ["merge", *(chunk_report(out, a, b) for a, b in parts), "--json", f"{base}/{MERGED_JSON}"]
    if junit:
        args += ["--junit", f"{base}/{MERGED_JUNIT}"]
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


def _switch(parser, flag: str, help: str) -> None:
    """A flag that may also be given a value, `--self` or `--self=yes|no`: a job template
    cannot leave an argument out, it can only set its value."""
    parser.add_argument(flag, nargs="?", const="yes", default="no", choices=("yes", "no"),
                        help=help + " (or =yes / =no)")


def add_parser(sub) -> None:
    from .core.methods import registry

    p = sub.add_parser(
        "farm-commands",
        help="the commands a render farm runs for a shot: one scan per chunk of frames, "
             "then the merge (an OpenCue cuecmd list; --run runs one of them)",
        description="Prints one `scan` command per chunk of at most --chunk frames, then the "
                    "`merge` of their reports, one shell line each. The chunks are the ones "
                    "Open Job Description's task chunking makes (core/chunks.py), which the "
                    "OpenJD template and the Flamenco job type in farm/ run too.")
    p.add_argument("file", help="the shot (.blend, .glb or .gltf), as the render nodes see it")
    p.add_argument("--frames", required=True, metavar="START:END",
                   help="the shot's frames, inclusive (negative frames allowed)")
    p.add_argument("--chunk", type=int, required=True, metavar="N", help="frames per scan task")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"output folder: scan_START_END.json per chunk, {MERGED_JSON} and "
                        f"{MERGED_JUNIT} (JUnit) from the merge")
    p.add_argument("--object", action="append", metavar="NAME",
                   help="only these mesh objects (repeatable; default: every character)")
    _switch(p, "--self", "also each object against itself")
    p.add_argument("--method", choices=registry.ids(), metavar="ID",
                   help="the collision method (default: scan's default, sphere-tree)")
    _switch(p, "--first-hit", "at most one pair per colliding frame")
    _switch(p, "--ignore-rest-contacts", "drop the pairs that collide in the rest pose")
    p.add_argument("--allow", metavar="FILE", default="",
                   help="reviewed pairs to drop (an empty value: none)")
    p.add_argument("--python", default="python3", metavar="EXE",
                   help="the render nodes' interpreter with bpy and skin_collide "
                        "(default python3), written at the start of each line")
    p.add_argument("--part", choices=("all", "scans", "merge"), default="all",
                   help="print every line (default), only the scans, or only the merge")
    p.add_argument("--run", metavar="CHUNK",
                   help="run one chunk's scan (CHUNK as the farm names it: 7, 7,8 or 7-16) or "
                        "'merge' here, printing its command first, instead of printing all")
    p.set_defaults(func=cmd_farm_commands)


def _plan_from_args(args) -> dict:
    from .cli import UsageError, _scan_method, parse_frames

    start, end = parse_frames(args.frames)
    if args.chunk < 1:
        raise UsageError(f"--chunk must be at least 1, got {args.chunk}")
    flags = scan_flags(args.object, args.self == "yes", _scan_method(args),
                       args.first_hit == "yes", args.ignore_rest_contacts == "yes",
                       args.allow or None)
    return plan(args.file, start, end, args.chunk, args.out, flags)


def cmd_farm_commands(args) -> int:
    from .cli import UsageError

    steps = _plan_from_args(args)
    if args.run is None:
        names = [n for n in steps if n != "merge"] if args.part != "merge" else []
        if args.part != "scans":
            names.append("merge")
        for name in names:
            print(command_line(args.python, steps[name]))
        return 0
    name = args.run.strip()
    if name != "merge":
        try:
            a, b = chunks.parse_chunk(name)
        except chunks.ChunkError as exc:
            raise UsageError(f"--run: {exc}") from None
        name = chunks.chunk_name(a, b)
        if name not in steps:
            known = ", ".join(n for n in steps if n != "merge")
            raise UsageError(f"--run {args.run}: not one of the chunks of --frames {args.frames} "
                             f"--chunk {args.chunk} ({known}): the farm cut the frames "
                             "differently")
    print(f"running: {command_line(args.python, steps[name])}", flush=True)
    from . import cli

    return cli.main(list(steps[name]))

