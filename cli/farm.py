"""`farm-commands FILE --frames A:B --chunk N --out DIR`: the commands a render farm runs for
a shot (one scan per chunk of frames, then the merge), printed as an OpenCue cuecmd list,
or one of them run here (`--run`). `farm_commands.py` builds the commands.
"""
from __future__ import annotations

from . import scan_flags
from .errors import UsageError
from .frames import parse_frames
from .scan_flags import scan_method


def add_parser(sub) -> None:
    from .. import farm_commands as farm

    p = sub.add_parser(
        "farm-commands",
        help="the commands a render farm runs for a shot: one scan per chunk of frames, "
             "then the merge (an OpenCue cuecmd list; --run runs one of them)",
        description="Prints one `scan` command per chunk of at most --chunk frames, then the "
                    "`merge` of their reports, one shell line each. The chunks are the ones "
                    "Open Job Description's task chunking makes (core/report/chunks.py), which the "
                    "OpenJD template and the Flamenco job type in farm/ run too.")
    p.add_argument("file", help="the shot (.blend, .glb or .gltf), as the render nodes see it")
    p.add_argument("--frames", required=True, metavar="START:END",
                   help="the shot's frames, inclusive (negative frames allowed)")
    p.add_argument("--chunk", type=int, required=True, metavar="N", help="frames per scan task")
    p.add_argument("--out", required=True, metavar="DIR",
                   help=f"output folder: scan_START_END.json per chunk, {farm.MERGED_JSON}, "
                        f"{farm.MERGED_JUNIT} (JUnit) and {farm.MERGED_CSV} from the merge")
    scan_flags.add_farm_flags(p)
    p.add_argument("--python", default="python3", metavar="EXE",
                   help="the render nodes' interpreter with bpy and skin_collide "
                        "(default python3), written at the start of each line")
    p.add_argument("--part", choices=("all", "scans", "merge"), default="all",
                   help="print every line (default), only the scans, or only the merge")
    p.add_argument("--run", metavar="CHUNK",
                   help="run one chunk's scan (CHUNK as the farm names it: 7, 7,8 or 7-16) or "
                        "'merge' here, printing its command first, instead of printing all")
    p.set_defaults(func=run)


def _plan_from_args(args) -> dict:
    from .. import farm_commands as farm

    start, end = parse_frames(args.frames)
    if args.chunk < 1:
        raise UsageError(f"--chunk must be at least 1, got {args.chunk}")
    flags = farm.scan_flags(args.object, args.self_collision == "yes", scan_method(args),
                            args.first_hit == "yes", args.ignore_rest_contacts == "yes",
                            args.allow or None, scene=args.scene or None,
                            clearance=args.clearance or None,
                            near_pairs=args.near_pairs == "yes",
                            as_rendered=args.as_rendered == "yes",
                            enable_autoexec=args.enable_autoexec == "yes",
                            allow_failed_drivers=args.allow_failed_drivers == "yes",
                            allow_missing=args.allow_missing == "yes",
                            between_frames=args.between_frames == "yes",
                            subframes=scan_flags.check_between(
                                args.between_frames == "yes", args.subframes,
                                args.first_hit == "yes"))
    if args.clearance:
        scan_flags.parse_clearance(args.clearance)         # a bad one: one line, exit 2
    elif args.near_pairs == "yes":                         # scan would refuse every chunk
        raise UsageError("--near-pairs lists the near pairs of --clearance: give --clearance D")
    return farm.plan(args.file, start, end, args.chunk, args.out, flags)


def run(args) -> int | list[str]:
    """Print the shot's farm commands (exit status 0), or with `--run` print one of them
    and hand it over: its arguments, which `cli.main` runs in this process."""
    from .. import farm_commands as farm
    from ..core.report import chunks

    steps = _plan_from_args(args)
    if args.run is None:
        names = [n for n in steps if n != "merge"] if args.part != "merge" else []
        if args.part != "scans":
            names.append("merge")
        for name in names:
            print(farm.command_line(args.python, steps[name]))
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
    print(f"running: {farm.command_line(args.python, steps[name])}", flush=True)
    return list(steps[name])
