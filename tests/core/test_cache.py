"""`core.cache`, the core's one caching mechanism (issue 56): values derived from one
object are made once and kept with it, forgotten in one place; `Recent` keeps at most
its size, least recently used dropped first, and keeps alive the objects its keys name by
identity. And the rule itself: no other cache is written in `core/` (no
``getattr(x, "_name", None)`` memo, no value set on another object, no hand-made LRU)."""
from __future__ import annotations

import ast
import gc
import re
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from skin_collide.core import cache

CORE = Path(__file__).resolve().parents[2] / "core"


class Holder:
    pass


@dataclass(frozen=True)
class Frozen:
    x: int


def test_derived_is_made_once_per_holder_and_key():
    calls = []
    a, b = Holder(), Holder()

    def make(tag):
        calls.append(tag)
        return np.arange(3) + len(calls)

    first = cache.derived(a, "k", lambda: make("a"))
    assert cache.derived(a, "k", lambda: make("again")) is first
    assert cache.derived(b, "k", lambda: make("b")) is not first
    assert cache.derived(a, "other", lambda: make("a2")) is not first
    assert calls == ["a", "b", "a2"]
    cache.forget(a, "k")
    assert cache.derived(a, "k", lambda: make("a3")) is not first
    cache.forget(a)
    cache.derived(a, "other", lambda: make("a4"))
    assert calls == ["a", "b", "a2", "a3", "a4"]


def test_derived_works_on_frozen_dataclasses_and_tuples():
    f = Frozen(1)
    v = cache.derived(f, "k", lambda: [1])
    assert cache.derived(f, "k", lambda: [2]) is v
    # No __dict__: made every time, never an error.
    t = (1, 2)
    assert cache.derived(t, "k", lambda: [3]) == [3]


def test_recent_is_bounded_least_recent_first_and_keeps_its_objects_alive():
    r = cache.Recent(2)
    made = []

    def make(k):
        made.append(k)
        return k * 10

    obj = Holder()
    ref = weakref.ref(obj)
    assert r.get(("a", id(obj)), lambda: make(1), keep=(obj,)) == 10
    del obj
    gc.collect()
    assert ref() is not None                 # the entry holds it: its id cannot be reused
    assert r.get("b", lambda: make(2)) == 20
    assert r.get(("a", id(ref())), lambda: make(99)) == 10      # a hit moves it last
    assert r.get("c", lambda: make(3)) == 30                    # drops "b", the least recent
    assert len(r) == 2
    assert r.get("b", lambda: make(4)) == 40
    gc.collect()
    assert ref() is None                     # dropped with its entry
    assert made == [1, 2, 3, 4]
    with pytest.raises(ZeroDivisionError):
        r.get("d", lambda: 1 / 0)            # a failing make keeps nothing
    assert len(r) == 2


_MEMO = re.compile(r"getattr\(\s*[\w.]+\s*,\s*[\"']_\w+[\"']\s*,\s*None\s*\)")


def _module_level_containers(tree: ast.Module) -> list[str]:
    """Module-level names bound to an empty dict or list (a cache in the making)."""
    out = []
    for node in tree.body:
        value = getattr(node, "value", None)
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if isinstance(value, (ast.Dict, ast.List)) and not (value.keys if isinstance(
                value, ast.Dict) else value.elts):
            out += [ast.unparse(t) for t in targets]
    return out


def test_no_other_cache_in_core():
    memo, globals_ = [], []
    for p in sorted(CORE.rglob("*.py")):
        if p.name == "cache.py" and p.parent == CORE:
            continue
        text = p.read_text()
        memo += [f"{p.relative_to(CORE)}:{m.group(0)}" for m in _MEMO.finditer(text)]
        globals_ += [f"{p.relative_to(CORE)}:{n}" for n in
                     _module_level_containers(ast.parse(text))]
    assert memo == []
    assert globals_ == []


def test_the_rule_finds_what_it_forbids():
    assert _MEMO.search('h = getattr(tree, "_hierarchy", None)')
    tree = ast.parse("_CACHE: list = []\nX = {}\nY = {1: 2}\n")
    assert _module_level_containers(tree) == ["_CACHE", "X"]
