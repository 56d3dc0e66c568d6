"""The scenarios by name: each module of bench/scenarios/ registers one (or a few) with
`register`; `main` parses `python -m bench SCENARIO [options] [--smoke] [--against REV]`
and runs it."""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import pkgutil
import sys
from typing import Any, Callable


@dataclasses.dataclass
class Scenario:
    name: str
    #: One line, shown by `--list`.
    help: str
    #: Adds the scenario's own options to its parser.
    options: Callable[[argparse.ArgumentParser], None]
    #: Runs it on the parsed options; returns an exit status (None: 0).
    run: Callable[[argparse.Namespace], Any]
    #: Option values that `--smoke` sets: a small generated rig (`scenes.SMOKE`), one to
    #: three frames, tiny sizes; no shared asset.
    smoke: dict = dataclasses.field(default_factory=dict)
    #: Whether the scenario takes `--against REV` (A/B against another revision).
    against: bool = False
    #: Longer description (the module's docstring), shown by `SCENARIO --help`.
    doc: str = ""


SCENARIOS: dict[str, Scenario] = {}


def register(name: str, help: str, options, run, smoke: dict | None = None,
             against: bool = False, doc: str = "") -> Scenario:
    if name in SCENARIOS:
        raise ValueError(f"scenario {name!r} is registered twice")
    s = Scenario(name, help, options, run, dict(smoke or {}), against, doc)
    SCENARIOS[name] = s
    return s


def load_all() -> dict[str, Scenario]:
    """Imports every module of bench.scenarios (each registers itself)."""
    from bench import scenarios

    for info in sorted(pkgutil.iter_modules(scenarios.__path__), key=lambda i: i.name):
        importlib.import_module(f"bench.scenarios.{info.name}")
    return SCENARIOS


def parser_for(s: Scenario) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m bench {s.name}", description=s.doc or s.help,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    s.options(p)
    p.add_argument("--smoke", action="store_true",
                   help="a smoke run: a small generated rig, 1-3 frames, tiny sizes (no "
                        "shared asset; the numbers mean nothing)")
    if s.against:
        p.add_argument("--against", metavar="REV", default=None,
                       help="A/B: REV's skin_collide (imported under another name) against "
                            "this checkout's, alternating in this process, answers compared")
    return p


def parse(s: Scenario, argv: list[str]) -> argparse.Namespace:
    p = parser_for(s)
    args = p.parse_args(argv)
    if args.smoke:                  # the smoke settings, where the command line left the default
        for key, value in s.smoke.items():
            if getattr(args, key) == p.get_default(key):
                setattr(args, key, value)
    if not s.against:
        args.against = None
    return args


def listing() -> str:
    rows = sorted(load_all().values(), key=lambda s: s.name)
    width = max(len(s.name) for s in rows)
    return "\n".join(f"  {s.name:<{width}}  {s.help}" + ("  [--against]" if s.against else "")
                     for s in rows)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = ("usage: python -m bench SCENARIO [options] [--smoke] [--against REV]\n"
             "       python -m bench --list\n       python -m bench SCENARIO --help")
    if not argv or argv[0] in ("-h", "--help"):
        print(usage + "\n\nscenarios:\n" + listing())
        return 0 if argv else 2
    if argv[0] == "--list":
        print(listing())
        return 0
    found = load_all()
    name = argv[0]
    if name not in found:
        print(f"python -m bench: no scenario {name!r}; `python -m bench --list` lists them",
              file=sys.stderr)
        return 2
    s = found[name]
    status = s.run(parse(s, argv[1:]))
    return int(status or 0)
