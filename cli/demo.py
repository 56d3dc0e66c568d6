"""`demo`: two animated tube characters generated, saved, and doctored (and scanned, with
`--json`): the first command of the README, on a fresh clone."""
from __future__ import annotations

import os

from . import doctor, scan
from .errors import UsageError
from .load import import_bpy


def add_parser(sub) -> None:
    m = sub.add_parser("demo", help="generate two animated tube characters, save, and doctor them")
    m.add_argument("--out", default="out/demo.blend")
    m.add_argument("--rings", type=int, default=48)
    m.add_argument("--segments", type=int, default=24)
    m.add_argument("--frame-count", type=int, default=48)
    m.add_argument("--preserve-volume", action="store_true")
    m.add_argument("--json", help="also scan the demo's frames and write the report here")
    m.set_defaults(func=run)


def run(args) -> int:
    """Build and save the demo scene, doctor it and, with --json, scan it."""
    bpy = import_bpy()
    from ..addon import demo_rig, report
    from ..core.report import writing as core_report

    # The demo is a generator: like --out, the folder of its --json report is created
    # (the README's first command, `demo --json out/demo_scan.json`, runs on a fresh clone).
    out = os.path.abspath(args.out)
    for path, flag in ((args.json, "--json"), (out, "--out")):
        if not path:
            continue
        try:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                os.makedirs(folder)
            core_report.check_output_path(path, flag)
        except OSError as exc:
            raise UsageError(f"cannot create the folder for {flag}: "
                             f"{exc.filename or path}: {exc.strerror}") from None
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    with report.blender_output_to_stderr():
        demo_rig.build_demo_scene(rings=args.rings, segments=args.segments,
                                  frames=args.frame_count, preserve_volume=args.preserve_volume)
        bpy.ops.wm.save_as_mainfile(filepath=out)
    print(f"wrote {out}: two tube characters, "
          f"{len(bpy.data.objects['Left'].data.polygons)} polygons each, frames 1-{args.frame_count}")
    args.file, args.object, args.frames = out, None, None
    status = doctor.run(args)
    if status == 0 and args.json:
        args.mode, args.method, args.self_collision, args.first_hit = None, None, False, False
        args.junit, args.allow, args.ignore_rest_contacts = None, None, False
        args.contacts_csv = None
        args.fail_on_collision, args.jobs = False, 1
        status = scan.run(args)
    return status
