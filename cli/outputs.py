"""What a scan or a merge writes: its outputs checked before the work starts, written
atomically (kept elsewhere when they cannot be), the JUnit XML, the contacts' CSV, and the
contact episodes' console lines.
"""
from __future__ import annotations

import os

from .errors import UsageError

#: The files a scan or a merge writes: (flag, attribute of the parsed arguments).
OUTPUT_FLAGS = (("--json", "json"), ("--junit", "junit"), ("--contacts-csv", "contacts_csv"))


def check_outputs(args) -> None:
    """Every output of a scan or a merge (JSON, JUnit, the contacts' CSV, the snapshots
    folder), before the file is loaded and the build starts: a scan must not fail at its
    end for want of a place to write its work, nor replace a file its user could not
    write (`core.report.writing`), and no two outputs may name one file."""
    from ..core.report import writing as core_report

    given = [(flag, getattr(args, attr, None)) for flag, attr in OUTPUT_FLAGS]
    given = [(flag, path) for flag, path in given if path is not None]
    try:
        for flag, path in given:
            core_report.check_output_path(path, flag)
        if getattr(args, "snapshots", None) is not None:
            core_report.check_output_folder(args.snapshots, "--snapshots", "frame_*.png")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    seen: dict[str, str] = {}
    for flag, path in given:
        key = os.path.abspath(path)
        if key in seen:
            raise UsageError(f"{seen[key]} and {flag} name the same file")
        seen[key] = flag


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
    from ..core.contacts import clearance as near_contacts
    from ..core.contacts import groups as contact_groups

    if report.clearance is None:
        return []
    eps = report.near_episodes()
    print(f"clearance {contact_groups.length_text(report.clearance)} "
          f"({report.clearance!r} scene units): {near_contacts.summary(eps)}")
    return eps


def print_pass_episodes(report) -> list:
    """The pass-through episodes by bone pair (bounded) of a scan `--between-frames`, one
    line each ("A × B, bone × bone: passes through between frames 2 and 3"); returns
    them (empty when no step was checked or none passes through)."""
    from ..core.contacts import passing

    if not report.between_checked():
        return []
    eps = report.pass_episodes()
    if eps:
        print(passing.summary(eps))
    return eps


def steps_text(report) -> str:
    """The summary line's words on the steps between frames ("; 1 of 9 steps between
    frames passes through"), empty when no step was checked."""
    from ..core.contacts import passing

    if not report.between_checked():
        return ""
    steps = report.pass_steps()
    k = passing.steps_passing(steps)
    return (f"; {k} of {len(steps)} step{'s' if len(steps) != 1 else ''} between frames "
            f"pass{'es' if k == 1 else ''} through")


def print_verdict(report) -> bool:
    """The episodes (contacts, near contacts, pass-throughs) and the verdict, the last
    line: whether there is anything `--fail-on-collision` fails on."""
    from ..core.contacts import pairs as contacts
    from ..core.contacts import passing

    eps = report.episodes()
    print_contact_episodes(report)
    near = print_near_episodes(report)
    passes = print_pass_episodes(report)
    print(passing.verdict(contacts.summary(eps), len(eps), passes))
    return bool(eps or near or passes)


def write_contacts_csv(args, doc: dict) -> None:
    """With `--contacts-csv`, the report's contacts as CSV (`core.contacts.contact.
    contacts_csv`: one row per contact and frame, near contacts as rows of kind "near");
    `doc` is the report's JSON form."""
    if getattr(args, "contacts_csv", None):
        from ..core.contacts.contact import contacts_csv

        write_output(args.contacts_csv, contacts_csv(doc), "the contacts' CSV")


def pass_steps_of(report):
    """The JUnit cases of the steps between frames (`junit_xml`'s `pass_steps`): None when
    no step was checked."""
    from ..core.contacts import passing

    if not report.between_checked():
        return None
    return passing.step_episodes(report.pass_steps())


def write_junit(args, report) -> None:
    from ..core.report import writing as core_report

    xml = core_report.junit_xml(f"skin_collide scan {os.path.basename(args.file)}",
                                report.objects, args.self_collision, report.episodes(),
                                len(report.frames),
                                contact_eps=report.contact_episodes() or (),
                                near_eps=report.near_episodes() if report.clearance is not None
                                else (),
                                clearance_gate=bool(args.fail_on_collision
                                                    and report.clearance is not None),
                                pass_steps=pass_steps_of(report))
    write_output(args.junit, xml, "the JUnit XML")
