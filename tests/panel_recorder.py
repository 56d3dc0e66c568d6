"""A stand-in for a panel's layout in tests: it records what a panel's draw code asked
for (operator buttons with their text and properties, labels)."""
from __future__ import annotations

from types import SimpleNamespace


class Recorder:
    """Stands in for a panel layout: what it was asked to draw."""

    def __init__(self):
        self.ops, self.labels = [], []

    def column(self, align=False):
        return self

    def operator(self, idname, text="", icon=""):
        op = SimpleNamespace(idname=idname, text=text, index=None)
        self.ops.append(op)
        return op

    def label(self, text="", icon=""):
        self.labels.append(text)
