"""Merge scan reports of frame chunks into the report of the whole range (pure Python).

A render farm (Flamenco, Deadline, OpenCue) or `scan --jobs N` runs one
``scan FILE --frames A:B --json part.json`` per chunk; `merge_reports` combines the parts:
frames in frame order, the `refit` map united per object (and the `fallback` reasons kept),
episodes recomputed over the merged frames (`core.contacts.episodes`), so that an episode
crossing a chunk boundary is one episode. Reports of different files, objects or settings
(the report's ``source``) are refused.
"""
from __future__ import annotations

import json
from typing import Sequence

from . import contacts


class MergeError(ValueError):
    """The reports cannot be merged; the message (one line) says why."""


def load(path: str) -> dict:
    """A scan report from `path` (MergeError if it is not one)."""
    try:
        with open(path) as fh:
            doc = json.load(fh)
    except (OSError, ValueError) as exc:
        raise MergeError(f"cannot read the report {path}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("frames"), list) \
            or "objects" not in doc:
        raise MergeError(f"{path} is not a skin_collide scan report")
    return doc


def _refit_union(values: Sequence[str]) -> str:
    used = sorted({m for v in values for m in v.split("+") if m})
    return "+".join(used)


def merge_reports(docs: Sequence[dict], names: Sequence[str] | None = None) -> dict:
    """One report from chunk reports (`ScanReport.to_json` documents).

    Raises MergeError when the reports come from different files, objects or settings
    (``source``, ``objects``), lack a ``source`` (written before reports had one), list
    pairs up to a limit, or scan the same frame twice.
    """
    if not docs:
        raise MergeError("no report to merge")
    names = list(names) if names is not None else [f"report {k + 1}" for k in range(len(docs))]
    first = docs[0]
    for name, d in zip(names, docs):
        if "source" not in d:
            raise MergeError(f"{name} has no \"source\" (written by an older skin_collide): "
                             "rescan it")
        if d["objects"] != first["objects"]:
            raise MergeError(f"{name} is a scan of other objects ({', '.join(d['objects'])}) "
                             f"than {names[0]} ({', '.join(first['objects'])})")
        if d["source"] != first["source"]:
            diff = sorted(k for k in set(d["source"]) | set(first["source"])
                          if d["source"].get(k) != first["source"].get(k))
            raise MergeError(f"{name} differs from {names[0]} in {', '.join(diff)}: "
                             "reports of different files or settings")
        if "limit" in d:
            raise MergeError(f"{name} lists pairs up to a limit: merge needs whole reports")
    frames: dict[int, dict] = {}
    for name, d in zip(names, docs):
        for f in d["frames"]:
            if f["frame"] in frames:
                raise MergeError(f"frame {f['frame']} is in two reports ({name} and another): "
                                 "chunks must not overlap")
            frames[f["frame"]] = f
    merged = [frames[k] for k in sorted(frames)]
    eps = contacts.episodes([(f["frame"], f["pairs"]) for f in merged if "not_checked" not in f])
    refit = {o: _refit_union([d["refit"].get(o, "") for d in docs]) for o in first["objects"]}
    # Why an object's asked method was passed over: the same in every chunk of one file,
    # but kept whole (each distinct reason once) if chunks disagree.
    fallback = {}
    for o in first["objects"]:
        why = list(dict.fromkeys(d["fallback"][o] for d in docs if o in d.get("fallback", {})))
        if why:
            fallback[o] = "; ".join(why)
    interrupted = any(d.get("interrupted") for d in docs)
    # The key order of `ScanReport.to_json`.
    return {
        "objects": list(first["objects"]),
        "refit": refit,
        **({"uncovered": first["uncovered"]} if "uncovered" in first else {}),
        **({"fallback": fallback} if fallback else {}),
        **({"surface": first["surface"]} if "surface" in first else {}),
        "complete": all(d.get("complete") for d in docs) and not interrupted,
        "interrupted": interrupted,
        "frames_requested": sum(int(d.get("frames_requested", len(d["frames"]))) for d in docs),
        "frames": merged,
        "episodes": [e.to_json() for e in eps],
        "source": first["source"],
    }
