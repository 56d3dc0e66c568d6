"""The `--frames START:END` value: parsed, and joined to its flag when it starts with a
minus sign (a negative frame) so that argparse does not take it for an option.
"""
from __future__ import annotations

import re

from .errors import UsageError


def parse_frames(text: str | None) -> tuple[int, int] | None:
    """'START:END' (inclusive) -> (start, end); None stays None."""
    if text is None:
        return None
    try:
        a, b = text.split(":")
        start, end = int(a), int(b)
    except ValueError:
        raise UsageError(f"--frames expects START:END, got '{text}'") from None
    if end < start:
        raise UsageError(f"empty frame range {start}:{end}")
    return start, end


_FRAMES_VALUE = re.compile(r"^-?\d+:-?\d+$")


def join_negative_frames(argv: list[str]) -> list[str]:
    """`--frames -5:-3` -> `--frames=-5:-3` (argparse takes '-5:-3' for an option)."""
    out, k = [], 0
    while k < len(argv):
        if argv[k] == "--frames" and k + 1 < len(argv) and _FRAMES_VALUE.match(argv[k + 1]):
            out.append(f"--frames={argv[k + 1]}")
            k += 2
            continue
        out.append(argv[k])
        k += 1
    return out

