"""The core's one caching mechanism (issue 56): every value computed once and kept goes
through here, under an explicit key, bounded, and forgotten in one place.

* `derived(holder, key, make)`: a value that depends on one object only and never changes
  while the object lives (a tree's hierarchy, a rig's dominant bones, a mesh's columns).
  Kept in the object's own ``__dict__`` under one slot, so it lives and dies with the
  object; `forget(holder)` drops it (the only invalidation: such objects are immutable in
  what the values read).
* `Recent(size)`: values keyed by a tuple the caller makes (object identities, exact
  bytes of matrices, shapes), at most `size` of them, least recently used dropped first.
  Objects named by identity in a key are kept alive by the entry (`keep`), so that their
  ids cannot be reused while it is cached.

Nothing else in `core/` keeps computed values on objects or in module globals
(`tests/core/test_cache.py` greps for it). Runtime state that changes frame to frame (a
live session's kept answers) is not a cache: it is passed in and returned.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, TypeVar

T = TypeVar("T")

#: The one attribute a holder's derived values live under.
SLOT = "_skin_collide_derived"


def derived(holder: Any, key: str, make: Callable[[], T]) -> T:
    """`make()` computed once per `holder` and `key`, then kept with the holder. Works on
    frozen dataclasses too (the holder's ``__dict__`` is written directly); a holder
    without a ``__dict__`` (a tuple) is given the value uncached."""
    store = getattr(holder, "__dict__", None)
    if store is None:
        return make()
    values = store.get(SLOT)
    if values is None:
        values = store[SLOT] = {}
    try:
        return values[key]
    except KeyError:
        value = values[key] = make()
        return value


def holds(holder: Any, key: str) -> bool:
    """Whether `holder` keeps its derived value `key` already."""
    return key in (getattr(holder, "__dict__", {}).get(SLOT) or {})


def forget(holder: Any, *keys: str) -> None:
    """Drop `holder`'s derived values `keys` (all of them when none is named)."""
    values = getattr(holder, "__dict__", {}).get(SLOT)
    if values is None:
        return
    if keys:
        for k in keys:
            values.pop(k, None)
    else:
        values.clear()


class Recent:
    """At most `size` values by key, the least recently used dropped first."""

    def __init__(self, size: int):
        self.size = int(size)
        self._entries: OrderedDict[Hashable, tuple[Any, tuple]] = OrderedDict()

    def get(self, key: Hashable, make: Callable[[], T], keep: tuple = ()) -> T:
        """The value of `key`, made by `make()` when not kept; `keep`: objects the entry
        holds alive (those whose ids are in the key)."""
        hit = self._entries.get(key)
        if hit is not None:
            self._entries.move_to_end(key)
            return hit[0]
        value = make()
        self._entries[key] = (value, tuple(keep))
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
