"""`merge REPORT... --json OUT`: scan reports of frame chunks (a render farm's, or
`scan --jobs`) combined into the report of the whole range (`core.report.merge`), and its JUnit
XML."""
from __future__ import annotations

import sys

from .errors import EXIT_CLEAN, UsageError
from .outputs import (
    check_outputs,
    pass_steps_of,
    print_verdict,
    steps_text,
    write_contacts_csv,
    write_output,
)


def add_parser(sub) -> None:
    mg = sub.add_parser("merge", help="combine scan reports of frame chunks (render farm, "
                        "--jobs) into the report of the whole range")
    mg.add_argument("reports", nargs="+", metavar="REPORT", help="scan --json reports")
    mg.add_argument("--json", required=True, metavar="OUT", help="write the merged report here")
    mg.add_argument("--junit", metavar="OUT.xml", help="also write JUnit XML here, as scan --junit")
    mg.add_argument("--contacts-csv", metavar="OUT.csv",
                    help="also write the contacts as CSV here, as scan --contacts-csv")
    mg.set_defaults(func=run)


def run(args) -> int:
    """`merge REPORT... --json OUT`: chunk reports into the report of the whole range."""
    from ..core.report import merge as core_merge
    from ..core.report import model as scan_report
    from ..core.report import writing as core_report

    check_outputs(args)
    try:
        docs = [core_merge.load(p) for p in args.reports]
        doc = core_merge.merge_reports(docs, names=args.reports)
    except core_merge.MergeError as exc:
        raise UsageError(str(exc)) from None
    for note in core_merge.source_notes(docs, args.reports):
        print(f"skin_collide: note: {note}", file=sys.stderr)
    core_report.write_atomic(args.json, core_report.dumps(doc))
    report = scan_report.from_json(doc)
    eps = report.episodes()
    if args.junit:
        xml = core_report.junit_xml(f"skin_collide scan {doc['source'].get('file')}",
                                    doc["objects"], bool(doc["source"].get("self")), eps,
                                    len(doc["frames"]),
                                    near_eps=report.near_episodes()
                                    if report.clearance is not None else (),
                                    pass_steps=pass_steps_of(report))
        write_output(args.junit, xml, "the JUnit XML")
    write_contacts_csv(args, doc)
    print(f"merged {len(docs)} reports: {len(doc['frames'])} frames, "
          f"{sum(1 for f in doc['frames'] if f['pairs'])} colliding{steps_text(report)}; "
          f"wrote {args.json}")
    print_verdict(report)
    return EXIT_CLEAN
