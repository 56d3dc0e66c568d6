"""What a scan or a merge writes: its outputs checked before the work starts, written
atomically (kept elsewhere when they cannot be), the JUnit XML, and the contact episodes'
console lines.
"""
from __future__ import annotations

import os

from .errors import UsageError


def check_outputs(args) -> None:
    """Every output of a scan (JSON, JUnit, the snapshots folder), before the file is
    loaded and the build starts: a scan must not fail at its end for want of a place to
    write its work, nor replace a file its user could not write (`core.report.writing`)."""
    from ..core.report import writing as core_report

    try:
        for flag, path in (("--json", args.json), ("--junit", getattr(args, "junit", None))):
            if path is not None:
                core_report.check_output_path(path, flag)
        if getattr(args, "snapshots", None) is not None:
            core_report.check_output_folder(args.snapshots, "--snapshots", "frame_*.png")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.json is not None and getattr(args, "junit", None) is not None and \
            os.path.abspath(args.json) == os.path.abspath(args.junit):
        raise UsageError("--json and --junit name the same file")


def write_output(path: str, text: str, what: str) -> None:
    """Write an output atomically. If it cannot be written there (it turned read-only, or
    its folder did, since `check_outputs`), the text goes to a new file beside it or in
    the temporary folder, and the one-line error says where: work done is never thrown
    away for want of its output file."""
    from ..core.report import writing as core_report

    try:
        core_report.write_atomic(path, text)
    except core_report.OutputError as exc:
        kept = core_report.keep_elsewhere(path, text)
        raise UsageError(f"{exc}; {what} is kept in {kept}") from None


def print_contact_episodes(report) -> None:
    """The contact episodes by bone pair (bounded), when the report has contacts."""
    from ..core.contacts import groups as contact_groups

    ce = report.contact_episodes()
    if ce is not None and ce:
        print(contact_groups.summary(ce))


def print_near_episodes(report) -> list:
    """The near episodes by bone pair (bounded) of a clearance scan, printed with the
    clearance; returns them (empty without a clearance)."""
    from ..core.contacts import groups as contact_groups
    from ..core.contacts import near as near_contacts

    if report.clearance is None:
        return []
    eps = report.near_episodes()
    print(f"clearance {contact_groups.length_text(report.clearance)} "
          f"({report.clearance!r} scene units): {near_contacts.summary(eps)}")
    return eps


def write_junit(args, report) -> None:
    from ..core.report import writing as core_report

    xml = core_report.junit_xml(f"skin_collide scan {os.path.basename(args.file)}",
                                report.objects, args.self_collision, report.episodes(),
                                len(report.frames),
                                contact_eps=report.contact_episodes() or (),
                                near_eps=report.near_episodes() if report.clearance is not None
                                else (),
                                clearance_gate=bool(args.fail_on_collision
                                                    and report.clearance is not None))
    write_output(args.junit, xml, "the JUnit XML")
