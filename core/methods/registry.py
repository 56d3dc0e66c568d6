"""The registry of bounding-volume methods: an explicit list, and the one place where the
default, the older `--mode` names and the fallbacks are decided.

Everything that names a method (the panel's enum, the CLI's `--method` choices, the id
stored with built data, the JSON report's `refit` map) reads it from here; no code outside
`core/methods/` writes a method's id. Importing a method module registers nothing: the
built-in methods are listed below, in the order the panel and the CLI show them, and
`register` adds others (a studio's own method, a test's).
"""
from __future__ import annotations

from ..rig import Rig
from .base import Method
from .box_tree import BoxTree
from .chains import ChainsMethod
from .obb import ObbCab
from .pv_sphere_tree import PvSphereTree
from .reference import BlenderRebuild
from .sphere_set.method import SphereSetMethod
from .sphere_tree import BottomUpSphereTree, LbsSphereTree

#: The methods that ship with skin_collide, in the order they are shown.
BUILTIN: tuple[Method, ...] = (LbsSphereTree(), BottomUpSphereTree(), PvSphereTree(),
                               BoxTree(), ObbCab(), SphereSetMethod(), ChainsMethod(),
                               BlenderRebuild())

#: The method asked for when none is named: it hands rigs it cannot bound down its
#: fallback chain (Preserve Volume, then the bottom-up refit).
DEFAULT: str = LbsSphereTree.id

#: The older `--mode` spelling of `--method` (the CLI's `--mode`, `skin_collide.testing`):
#: each mode names a registered method.
MODES: dict[str, str] = {"on-demand": DEFAULT, "bottom-up": BottomUpSphereTree.id,
                         "rebuild": BlenderRebuild.id}

_METHODS: dict[str, Method] = {m.id: m for m in BUILTIN}


def register(method: Method) -> Method:
    """Add `method` (replacing one with the same id, so re-registration is harmless)."""
    _METHODS[method.id] = method
    return method


def unregister(method_id: str) -> None:
    """Remove a method added by `register` (a built-in one cannot be removed)."""
    if any(m.id == method_id for m in BUILTIN):
        raise ValueError(f"'{method_id}' is a built-in method")
    _METHODS.pop(method_id, None)


def get(method_id: str) -> Method:
    """The method with this id; KeyError with the known ids otherwise."""
    try:
        return _METHODS[method_id]
    except KeyError:
        raise KeyError(f"unknown method '{method_id}' (known: {', '.join(ids())})") from None


def methods() -> list[Method]:
    """Every registered method, in registration order."""
    return list(_METHODS.values())


def ids() -> list[str]:
    return [m.id for m in methods()]


def any_object() -> Method:
    """The method every object can use whatever its data (`Method.for_any_object`): the
    one a query asks of all objects when the pose is unknown (rest contacts) or when the
    user asks for it (`--mode bottom-up`)."""
    return next(m for m in methods() if m.for_any_object)


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
