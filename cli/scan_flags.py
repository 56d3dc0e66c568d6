"""The scan flags that decide a report's content, defined once: `SCAN_FLAGS` gives each
flag's spelling, its `args` attribute, its kind and its help, for `scan` (and the `--scene`
and `--object` of `doctor` and `snapshot`) and for `farm-commands`, which offers the ones
with a farm form. The same table orders the flags a `scan --jobs` worker repeats
(`worker_flags`) and a farm's scans carry (`farm_commands.scan_flags`), both through
`forward`; the report's "source" (`report_source`), which `merge` compares before it
combines reports, records what they decide.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..core.methods import registry
from .errors import UsageError

OBJECT_HELP = ("mesh object by name (a linked one by its full name, "
               "\"Cesium_Man [char.blend]\"; repeatable")


@dataclass(frozen=True)
class ScanFlag:
    """One scan flag. `kind`: "switch" (given or not), "value" (one value), "repeat" (a
    value per use) or "pairs" (two values per use). `scan`: its `add_argument` keywords on
    `scan`; `farm`: those on `farm-commands` (None: not offered there), where a switch
    also takes =yes / =no (`add_farm_flags`). Either may be a function giving them when
    the parser is built (`--method`: the methods registered by then)."""

    flag: str
    dest: str
    kind: str
    scan: dict | Callable[[], dict] = field(default_factory=dict)
    farm: dict | Callable[[], dict] | None = None


def _method_scan() -> dict:
    return dict(choices=registry.ids(), metavar="ID",
                help=f"the collision method (default {registry.DEFAULT}, which passes rigs "
                     "it cannot bound to its fallbacks): " + "; ".join(
                         f"{m.id}: {m.label}" for m in registry.methods()))


def _method_farm() -> dict:
    return dict(choices=registry.ids(), metavar="ID",
                help=f"the collision method (default: scan's default, {registry.DEFAULT})")


def _keywords(given: dict | Callable[[], dict]) -> dict:
    return given() if callable(given) else given


#: In the order a scan's flags are forwarded (a worker's, a farm chunk's command line).
SCAN_FLAGS = (
    ScanFlag("--scene", "scene", "value",
             dict(metavar="NAME",
                  help="the scene to check, made the window's for the run, with its first "
                       "view layer (default: the scene the file was saved on, with its "
                       "window's view layer)"),
             dict(metavar="NAME", default="",
                  help="the scene to scan (an empty value: the scene the file was saved on)")),
    ScanFlag("--object", "object", "repeat",
             dict(action="append",
                  help=OBJECT_HELP + "; default: every skinned mesh and rigid prop)"),
             dict(action="append", metavar="NAME",
                  help="only these mesh objects (repeatable; default: every character)")),
    ScanFlag("--self", "self_collision", "switch",
             dict(action="store_true", help="also report each object's self-intersections"),
             dict(help="also each object against itself")),
    ScanFlag("--method", "method", "value", _method_scan, _method_farm),
    ScanFlag("--first-hit", "first_hit", "switch",
             dict(action="store_true",
                  help="report at most one colliding pair per frame (a yes/no per frame); "
                       "the query stops at the first batch of pairs it finds"),
             dict(help="at most one pair per colliding frame")),
    ScanFlag("--ignore-rest-contacts", "ignore_rest_contacts", "switch",
             dict(action="store_true",
                  help="drop the triangle pairs that already collide in the rest pose "
                       "(armatures in Rest Position), as the panel's Ignore Rest Contacts"),
             dict(help="drop the pairs that collide in the rest pose")),
    ScanFlag("--allow", "allow", "value",
             dict(metavar="FILE",
                  help="reviewed, accepted polygon pairs: a scan JSON, the panel's exported "
                       "JSON or CSV, or {\"allow\": [[obj_a, poly_a, obj_b, poly_b], ...]}"),
             dict(metavar="FILE", default="",
                  help="reviewed pairs to drop (an empty value: none)")),
    ScanFlag("--crossing-only", "crossing_only", "switch",
             dict(action="store_true",
                  help="drop touching contacts (length 0 up to 1e-9 of the scene size)")),
    ScanFlag("--min-length", "min_length", "value",
             dict(type=float, metavar="D",
                  help="drop contacts whose intersection curve is shorter than D (scene units)")),
    ScanFlag("--ignore-bones", "ignore_bones", "pairs",
             dict(nargs=2, action="append", metavar=("BONE", "BONE"),
                  help="drop contacts between these two bones (repeatable; either order)")),
    ScanFlag("--ignore-group", "ignore_group", "pairs",
             dict(nargs=2, action="append", metavar=("OBJECT", "GROUP"),
                  help="never report pairs with a polygon of OBJECT inside its vertex "
                       "group GROUP (a vertex of it in the group; repeatable)")),
    ScanFlag("--clearance", "clearance", "value",
             dict(metavar="D",
                  help="also report near contacts: polygons of two different objects closer "
                       "than D that do not intersect (scene units, or with a unit: 2mm, "
                       "1cm, 0.1in, converted with the scene's unit scale); "
                       "--fail-on-collision fails on them too"),
             dict(metavar="D", default="",
                  help="also near contacts within D (2mm, 1cm, or scene units; an empty "
                       "value: none)")),
    ScanFlag("--near-pairs", "near_pairs", "switch",
             dict(action="store_true",
                  help="with --clearance, list every near polygon pair of each frame with "
                       "its distance (\"near\" beside \"pairs\"; large reports)"),
             dict(help="list the near polygon pairs (with --clearance)")),
    ScanFlag("--between-frames", "between_frames", "switch",
             dict(action="store_true",
                  help="also check every step between consecutive checked frames, each "
                       "vertex moving on a straight line from one frame to the next: pairs "
                       "that touch only between two frames are contacts of kind \"passes "
                       "through\" (--fail-on-collision fails on them); see --subframes, "
                       "--step-to"),
             dict(help="also check the steps between frames (linear motion)")),
    ScanFlag("--subframes", "subframes", "value",
             dict(metavar="N",
                  help="with --between-frames, sample the animation N times per frame (at "
                       "f + k/N, 1 to 64; default 1): the motion is linear between samples, "
                       "for fast action"),
             dict(metavar="N", default="",
                  help="samples per frame with --between-frames (1 to 64; an empty value: 1)")),
    ScanFlag("--as-rendered", "as_rendered", "switch",
             dict(action="store_true",
                  help="check the surfaces renders draw: Blender's render-mode evaluation "
                       "(modifiers' Render toggle and render levels, Disable in Renders, "
                       "Simplify's render values), not the viewport's"),
             dict(help="check the surfaces renders draw (render-mode evaluation)")),
    ScanFlag("--enable-autoexec", "enable_autoexec", "switch",
             dict(action="store_true",
                  help="trust the file: run its registered text blocks on load, as Blender "
                       "does with auto-run on (its -y), so that drivers calling their "
                       "functions evaluate as the artist sees them"),
             dict(help="trust the file's scripts (Blender's -y)")),
    ScanFlag("--allow-failed-drivers", "allow_failed_drivers", "switch",
             dict(action="store_true",
                  help="check the shot as it evaluates here even when drivers that move "
                       "the characters fail (listed in the report's \"failed_drivers\"); "
                       "without it such a run stops with exit 2"),
             dict(help="go on when drivers fail (listed in the report)")),
    ScanFlag("--allow-missing", "allow_missing", "switch",
             dict(action="store_true",
                  help="check what loaded when linked libraries or linked objects are "
                       "missing (listed in the report's \"missing\"); without it such a "
                       "run stops with exit 2 before any frame"),
             dict(help="go on when linked data is missing (listed in the report)")),
)
BY_FLAG = {f.flag: f for f in SCAN_FLAGS}

#: What a run may trust and go on without (`addon.trust`): every command that opens a
#: shot offers them (scan, doctor, snapshot, farm-commands).
SEEN_FLAGS = ("--enable-autoexec", "--allow-failed-drivers", "--allow-missing")


def add(parser, flag: str, **override) -> None:
    """Add scan flag `flag` to `parser` as `scan` has it (`override`: other keywords, e.g.
    the help of `doctor`'s `--object`)."""
    f = BY_FLAG[flag]
    parser.add_argument(f.flag, dest=f.dest, **{**_keywords(f.scan), **override})


def add_farm_flags(parser) -> None:
    """The scan flags `farm-commands` offers, in `SCAN_FLAGS` order. A switch may also be
    given a value, `--self` or `--self=yes|no`: a job template cannot leave an argument
    out, it can only set its value."""
    for f in SCAN_FLAGS:
        if f.farm is None:
            continue
        keywords = _keywords(f.farm)
        if f.kind == "switch":
            parser.add_argument(f.flag, dest=f.dest, nargs="?", const="yes", default="no",
                                choices=("yes", "no"), help=keywords["help"] + " (or =yes / =no)")
        else:
            parser.add_argument(f.flag, dest=f.dest, **keywords)


def forward(values: Mapping[str, Any]) -> list[str]:
    """The command-line arguments of scan flag values ({dest: value}; a missing dest: not
    given), in `SCAN_FLAGS` order: a switch when true, a value unless None, each value of
    a repeated flag, each pair of a paired one."""
    out: list[str] = []
    for f in SCAN_FLAGS:
        value = values.get(f.dest)
        if f.kind == "switch":
            out += [f.flag] if value else []
        elif f.kind == "value":
            out += [f.flag, str(value)] if value is not None else []
        elif f.kind == "repeat":
            for item in value or ():
                out += [f.flag, item]
        else:
            for a, b in value or ():
                out += [f.flag, a, b]
    return out


def worker_flags(args) -> list[str]:
    """The scan flags a `--jobs` worker repeats (the report's content), not the outputs:
    the method resolved, the allow-list by its absolute path."""
    values = {f.dest: getattr(args, f.dest, None) for f in SCAN_FLAGS}
    values["method"] = scan_method(args)
    values["allow"] = os.path.abspath(args.allow) if args.allow else None
    values["min_length"] = repr(float(args.min_length)) \
        if getattr(args, "min_length", None) else None
    n = parse_subframes(getattr(args, "subframes", None))
    values["subframes"] = str(n) if n is not None and n > 1 else None
    return forward(values)


SUBFRAMES_MAX = 64


def parse_subframes(text) -> int | None:
    """`--subframes` as a whole number (None: not given, or an empty farm value); one
    line, exit 2, when it is not one from 1 to `SUBFRAMES_MAX`."""
    if text is None or str(text).strip() == "":
        return None
    try:
        n = int(str(text).strip())
    except ValueError:
        n = None
    if n is None or not 1 <= n <= SUBFRAMES_MAX:
        raise UsageError(f"--subframes {text!r}: must be a whole number from 1 to "
                         f"{SUBFRAMES_MAX} (samples per frame)")
    return n


def check_between(between: bool, subframes, first_hit: bool) -> int:
    """The samples per frame of `--between-frames` / `--subframes` (1 without them); one
    line, exit 2, for a bad combination: `--subframes` more than 1 without
    `--between-frames`, `--between-frames` with `--first-hit` (the check between frames
    lists every pair; a first hit stops at one)."""
    n = parse_subframes(subframes)
    if n is not None and n > 1 and not between:
        raise UsageError(f"--subframes {n} samples the motion between frames: it needs "
                         "--between-frames")
    if between and first_hit:
        raise UsageError("--between-frames cannot be combined with --first-hit (the check "
                         "between frames lists every pair; --first-hit stops at one)")
    return n or 1


def parse_step_to(text) -> int | None | str:
    """`scan --step-to F|none`: the frame the last frame's step ends at (an int), "none"
    (no step from the last frame), or None (not given: the default rule,
    `core.report.chunks.last_step_to`); one line, exit 2, when it is neither."""
    if text is None:
        return None
    t = str(text).strip().lower()
    if t == "none":
        return "none"
    try:
        return int(t)
    except ValueError:
        raise UsageError(f"--step-to {text!r}: must be a frame (a whole number) or none") \
            from None


#: metres per unit of the units `--clearance` accepts.
UNITS = {"um": 1e-6, "mm": 1e-3, "cm": 1e-2, "dm": 0.1, "m": 1.0, "km": 1e3,
         "in": 0.0254, "ft": 0.3048}


def parse_clearance(text: str | None) -> tuple[float, float | None] | None:
    """`--clearance` as (number, metres per its unit or None for scene units); None when
    not given. One line, exit 2, when it is not a finite number >= 0 with a known unit."""
    if text is None:
        return None
    t = str(text).strip().lower().replace(" ", "")
    unit = next((u for u in sorted(UNITS, key=len, reverse=True) if t.endswith(u)), None)
    number = t[:-len(unit)] if unit else t
    try:
        value = float(number)
    except ValueError:
        raise UsageError(f"--clearance {text!r}: not a distance (a number >= 0, in scene "
                         f"units or with a unit: {', '.join(UNITS)})") from None
    if not (value >= 0.0 and value < float("inf")):
        raise UsageError(f"--clearance {text!r}: must be a finite distance >= 0")
    return value, (UNITS[unit] if unit else None)


def clearance(args, scene) -> float | None:
    """`--clearance` in scene units (None: not given): a number with a unit is converted
    with the scene's unit scale (one scene unit is `unit_settings.scale_length` metres)."""
    parsed = parse_clearance(getattr(args, "clearance", None))
    if parsed is None:
        return None
    value, metres = parsed
    if metres is None:
        return value
    scale = float(scene.unit_settings.scale_length) if scene is not None else 1.0
    return value * metres / (scale if scale > 0 else 1.0)


def scan_method(args) -> str:
    """The method id of `--method`, or of the older `--mode`; both must agree."""
    by_mode = registry.MODES[args.mode] if getattr(args, "mode", None) else None
    method = getattr(args, "method", None)
    if method and by_mode and method != by_mode:
        raise UsageError(f"--method {method} and --mode {args.mode} disagree: give one")
    return method or by_mode or registry.DEFAULT


def report_source(args) -> dict:
    """The report's "source": what `merge` checks before combining chunk reports (the
    file's content digest and path, the method, the flags that change which pairs are
    reported, and the allow-list's content digest)."""
    import hashlib

    from ..core.report import merge as core_merge

    allow = None
    if args.allow:
        with open(args.allow, "rb") as fh:
            allow = hashlib.sha256(fh.read()).hexdigest()[:16]
    from ..addon import scanner

    src = scanner.report_source(args.file, scan_method(args), args.self_collision,
                                args.first_hit, args.ignore_rest_contacts, allow,
                                sha256=core_merge.file_digest(args.file))
    src["filters"].update(contact_filter(args).describe())
    if getattr(args, "enable_autoexec", False):
        # The file's scripts ran: what Python drivers move differs from an untrusted run.
        src["filters"]["autoexec"] = True
    src["evaluation"] = "render" if getattr(args, "as_rendered", False) else "viewport"
    if getattr(args, "clearance", None) is not None:
        # The flag as given (a unit follows each file's own scale), and the pair list.
        src["filters"]["clearance"] = str(args.clearance)
        src["filters"]["near_pairs"] = bool(getattr(args, "near_pairs", False))
    if getattr(args, "between_frames", False):
        # The check between frames, and its samples per frame: reports with and without
        # it, or of other samples, do not merge (`core.report.merge`).
        src["between"] = {"subframes": parse_subframes(getattr(args, "subframes", None)) or 1}
    return src


def contact_filter(args):
    """The contact filters of the scan flags (one line, exit 2, when one is bad)."""
    from ..core.contacts import filters as contact_filters

    groups: dict = {}
    for ob, group in getattr(args, "ignore_group", None) or []:
        groups.setdefault(ob, set()).add(group)
    try:
        return contact_filters.ContactFilter(
            crossing_only=getattr(args, "crossing_only", False),
            min_length=getattr(args, "min_length", None) or 0.0,
            ignore_bones={tuple(p) for p in getattr(args, "ignore_bones", None) or []},
            ignore_groups=groups)
    except ValueError as exc:
        raise UsageError(f"--min-length: {exc}") from None
