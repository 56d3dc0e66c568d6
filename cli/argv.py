"""The command line's words, fixed before argparse reads them: a value that starts with a
minus sign is joined to its flag (`--frames -5:-3` -> `--frames=-5:-3`, `--clearance -1mm`
-> `--clearance=-1mm`), so that argparse does not take it for an option and print its
multi-line usage; the value's own check then reports it in one line. A `--clearance`
whose value is missing is one line too (`MissingValue`).
"""
from __future__ import annotations

from .errors import UsageError
from .frames import join_negative_frames

#: Flags whose value is checked by skin_collide (one line, exit 2), whatever it is.
CHECKED_VALUE = {"--clearance": "a distance D (2mm, 1cm, or scene units)",
                 "--subframes": "a whole number N from 1 to 64",
                 "--step-to": "a frame F, or none"}


def prepare(argv: list[str]) -> list[str]:
    """`argv` with negative values joined to their flags; UsageError (one line) for a
    checked flag given last or followed by another option."""
    out, k = [], 0
    argv = join_negative_frames(argv)
    while k < len(argv):
        word = argv[k]
        if word in CHECKED_VALUE:
            value = argv[k + 1] if k + 1 < len(argv) else None
            if value is None or value.startswith("--"):
                raise UsageError(f"{word} needs a value: {CHECKED_VALUE[word]}")
            if value.startswith("-"):
                out.append(f"{word}={value}")
                k += 2
                continue
        out.append(word)
        k += 1
    return out
