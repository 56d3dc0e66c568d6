"""The registry of bounding-volume methods and the one place where fallbacks are decided.

Everything that names a method (the panel's enum, the CLI's `--method` choices, the id
stored with built data, the JSON report's `refit` map) reads it from here.
"""
from __future__ import annotations

from .base import Method
from ..rig import Rig

_METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add `method` (replacing one with the same id, so re-registration is harmless)."""
    _METHODS[method.id] = method
    return method


def get(method_id: str) -> Method:
    """The method with this id; KeyError with the known ids otherwise."""
    _ensure_builtin()
    try:
        return _METHODS[method_id]
    except KeyError:
        raise KeyError(f"unknown method '{method_id}' (known: {', '.join(ids())})") from None


def methods() -> list[Method]:
    """Every registered method, in registration order."""
    _ensure_builtin()
    return list(_METHODS.values())


def ids() -> list[str]:
    return [m.id for m in methods()]


def resolve(method_id: str, rig: Rig) -> tuple[Method, list[str]]:
    """The method actually used for `rig` when `method_id` is asked for.

    Follows each method's `fallback` while `supports` gives a reason. Returns the method
    and the reasons of the methods passed over (empty when the first one is used).
    Raises ValueError when the chain ends without a method that supports the rig.
    """
    reasons: list[str] = []
    seen: set[str] = set()
    current: str | None = method_id
    while current is not None and current not in seen:
        seen.add(current)
        m = get(current)
        why = m.supports(rig)
        if why is None:
            return m, reasons
        reasons.append(f"{m.id}: {why}")
        current = m.fallback
    raise ValueError(f"no method can collide '{rig.name}': " + "; ".join(reasons))


_loaded = False


def _ensure_builtin() -> None:
    """Import the built-in methods once (each registers itself on import)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from . import builtin  # noqa: F401
