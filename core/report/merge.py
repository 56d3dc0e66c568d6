"""Merge scan reports of frame chunks into the report of the whole range (pure Python).

A render farm (Flamenco, Deadline, OpenCue) or `scan --jobs N` runs one
``scan FILE --frames A:B --json part.json`` per chunk; `merge_reports` combines the parts:
frames in frame order, the `refit` map united per object (and the `fallback` reasons kept),
episodes recomputed over the merged frames (`core.contacts.pairs.episodes`), so that an episode
crossing a chunk boundary is one episode. Reports of different scenes (the report's ``scene``
and ``view_layer``), files, objects or settings (its ``source``) are refused.

The file is identified by a digest of its content (``source["sha256"]``, `file_digest`), not
by its name: `sh010/pair.blend` and `sh020/pair.blend` are different files, and one file
mounted at two paths on a farm is one. Reports without a digest (older ones, the panel's
of an unsaved scene) fall back to the full path, or the base name; `source_notes` says so.

Reports with and without the check between frames (``source["between"]``, `scan
--between-frames`), or of other samples per frame, are refused. A frame's step ("between",
"passes_through") travels with its frame: the chunk that holds a step's first frame
checked it (its scan's ``--step-to``), so no step is in two chunks.
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from typing import Sequence

from ..contacts import clearance as near_contacts
from ..contacts import groups as contact_groups
from ..contacts import pairs as contacts


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


def _hash_file(h, path: str) -> None:
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)


def _gltf_buffer_files(path: str) -> list[str]:
    """The files a .gltf's buffers name (geometry, skin and animation live there; the .gltf
    is only their index). Embedded (data:) buffers are in the .gltf itself."""
    try:
        with open(path, "rb") as fh:
            doc = json.load(fh)
        buffers = doc.get("buffers", []) if isinstance(doc, dict) else []
    except (OSError, ValueError):
        return []
    return [urllib.parse.unquote(b["uri"]) for b in buffers
            if isinstance(b, dict) and isinstance(b.get("uri"), str)
            and not b["uri"].startswith("data:")]


def file_digest(path: str) -> str:
    """sha256 (hex) of the scanned file's bytes, for a .gltf with the buffer files it names
    (a missing one counts by its name only). What `merge` identifies a chunk's file by."""
    h = hashlib.sha256()
    _hash_file(h, path)
    if path.lower().endswith(".gltf"):
        for uri in _gltf_buffer_files(path):
            h.update(b"\0" + uri.encode())
            buffer = os.path.join(os.path.dirname(path), uri)
            if os.path.isfile(buffer):
                _hash_file(h, buffer)
    return h.hexdigest()


_IDENTITY = ("file", "path", "sha256")
"""The keys of ``source`` that say which file was scanned (compared by `_same_file`); the
others are settings, compared as they are."""


def _basis(a: dict, b: dict) -> str:
    """What two sources' files are compared by: their content when both have a digest,
    else their full paths when both have one, else their base names (older reports)."""
    if a.get("sha256") and b.get("sha256"):
        return "sha256"
    if a.get("path") and b.get("path"):
        return "path"
    return "file"


def _where(source: dict) -> str:
    return source.get("path") or source.get("file") or "an unsaved scene"


def _scene_of(doc: dict) -> str:
    if "scene" not in doc:
        return "an unnamed scene (a report written before reports named their scene)"
    return f"scene '{doc['scene']}' (view layer '{doc.get('view_layer')}')"


def _between_words(source: dict) -> str:
    """What a report's source says of the check between frames (`scan --between-frames`,
    its ``"between"``: {"subframes": N})."""
    between = source.get("between")
    if not between:
        return "checks the frames only (no --between-frames)"
    return (f"checks between frames too (--between-frames, --subframes "
            f"{between.get('subframes', 1)})")


def _settings(source: dict) -> dict:
    return {k: v for k, v in source.items() if k not in _IDENTITY}


def source_notes(docs: Sequence[dict], names: Sequence[str]) -> list[str]:
    """One line per report whose file could not be compared by content (no digest):
    what it was compared by instead. Empty when every report has a digest."""
    if len(docs) < 2:
        return []
    notes = []
    for name, d in zip(names, docs):
        src = d.get("source", {})
        if src.get("sha256"):
            continue
        by = "full path" if all(o.get("source", {}).get("path") for o in docs) else "base name"
        notes.append(f"{name} has no digest of its file (an older skin_collide, or the panel's "
                     f"report of an unsaved scene): its file is compared by its {by}, "
                     f"{_where(src)}")
    return notes


def _refit_union(values: Sequence[str]) -> str:
    used = sorted({m for v in values for m in v.split("+") if m})
    return "+".join(used)


def merge_reports(docs: Sequence[dict], names: Sequence[str] | None = None) -> dict:
    """One report from chunk reports (`ScanReport.to_json` documents).

    Raises MergeError when the reports come from different scenes or view layers
    (``scene``, ``view_layer``), files, objects or settings (``source``, ``objects``), lack
    a ``source`` (written before reports had one), list pairs up to a limit, or scan the
    same frame twice.
    """
    if not docs:
        raise MergeError("no report to merge")
    names = list(names) if names is not None else [f"report {k + 1}" for k in range(len(docs))]
    first = docs[0]
    for name, d in zip(names, docs):
        if "source" not in d:
            raise MergeError(f"{name} has no \"source\" (written by an older skin_collide): "
                             "rescan it")
        if (d.get("scene"), d.get("view_layer")) != (first.get("scene"), first.get("view_layer")):
            what = "view layers" if d.get("scene") == first.get("scene") else "scenes"
            raise MergeError(f"{name} is a scan of {_scene_of(d)} but {names[0]} of "
                             f"{_scene_of(first)}: reports of different {what}")
        if d["objects"] != first["objects"]:
            raise MergeError(f"{name} is a scan of other objects ({', '.join(d['objects'])}) "
                             f"than {names[0]} ({', '.join(first['objects'])})")
        a, b = first["source"], d["source"]
        basis = _basis(a, b)
        if a.get(basis) != b.get(basis):
            how = {"sha256": "their contents differ",
                   "path": "compared by full path: a report without a file digest",
                   "file": "compared by base name: a report without a file digest"}[basis]
            raise MergeError(f"{names[0]} scans {_where(a)} but {name} scans {_where(b)}: "
                             f"different files ({how})")
        if a.get("between") != b.get("between"):
            raise MergeError(f"{name} {_between_words(b)} but {names[0]} "
                             f"{_between_words(a)}: reports of different settings")
        if _settings(a) != _settings(b):
            diff = sorted(k for k in set(_settings(a)) | set(_settings(b))
                          if a.get(k) != b.get(k))
            raise MergeError(f"{name} differs from {names[0]} in {', '.join(diff)}: "
                             "reports of different settings")
        if d.get("evaluation", "viewport") != first.get("evaluation", "viewport"):
            raise MergeError(f"{name} checks the {d.get('evaluation', 'viewport')} evaluation "
                             f"but {names[0]} the {first.get('evaluation', 'viewport')} one: "
                             "reports of different settings")
        if d.get("clearance") != first.get("clearance"):
            raise MergeError(f"{name} has clearance {d.get('clearance')} but {names[0]} "
                             f"{first.get('clearance')}: reports of different settings")
        if "limit" in d:
            raise MergeError(f"{name} lists pairs up to a limit: merge needs whole reports")
        if ("contact_episodes" in d) != ("contact_episodes" in first):
            old = name if "contact_episodes" not in d else names[0]
            raise MergeError(f"{old} has no contacts (written by an older skin_collide) but "
                             "the other reports do: rescan it")
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
    notes = list(dict.fromkeys(n for d in docs for n in d.get("notes", ())))
    # The key order of `ScanReport.to_json`.
    return {
        **({"clearance": first["clearance"]} if "clearance" in first else {}),
        **({"scene": first["scene"], "view_layer": first.get("view_layer")}
           if "scene" in first else {}),
        "objects": list(first["objects"]),
        **({"evaluation": first["evaluation"]} if "evaluation" in first else {}),
        **({"notes": notes} if notes else {}),
        "refit": refit,
        **({"uncovered": first["uncovered"]} if "uncovered" in first else {}),
        **({"fallback": fallback} if fallback else {}),
        **({"surface": first["surface"]} if "surface" in first else {}),
        **_seen(docs),
        "complete": all(d.get("complete") for d in docs) and not interrupted,
        "interrupted": interrupted,
        "frames_requested": sum(int(d.get("frames_requested", len(d["frames"]))) for d in docs),
        "frames": merged,
        "episodes": [e.to_json() for e in eps],
        **({"contact_episodes": [e.to_json() for e in contact_groups.episodes_of_report(merged)],
            "segments_limit": first.get("segments_limit",
                                        contact_groups.SEGMENTS_LIMIT_TEXT)}
           if "contact_episodes" in first else {}),
        **({"near_episodes": [e.to_json() for e in near_contacts.episodes_of_report(merged)]}
           if "clearance" in first else {}),
        # The first source with a digest: the merged report names its file by content.
        "source": next((d["source"] for d in docs if d["source"].get("sha256")),
                       first["source"]),
    }


def _seen(docs: list[dict]) -> dict:
    """How the chunks saw the shot (`ScanReport.seen`): the file's scripts trusted when
    every chunk trusted them, and every failed driver and missing library of any chunk,
    each once, in first-seen order. Empty when no chunk says."""
    if not any("autoexec" in d for d in docs):
        return {}
    out = {"autoexec": all(d.get("autoexec", False) for d in docs)}
    for key in ("failed_drivers", "missing"):
        items = {}
        for d in docs:
            for x in d.get(key, ()):
                items.setdefault(repr(x), x)
        out[key] = list(items.values())
    return out
