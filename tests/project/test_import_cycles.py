"""No two modules of the package import each other, not even for type hints.

Stricter than tests/core/test_architecture.py's runtime check: every import counts, those
under ``if TYPE_CHECKING:`` and those deferred into a function too (a type-only or deferred
import is still two modules that need each other, and a refactor that makes it a real
import breaks at load time). Static: parses the sources with `ast`, imports nothing.
"""
from __future__ import annotations

import ast
from pathlib import Path

# The module list and the cycle finder are the runtime check's (tests/core is on the path,
# tests/conftest.py); only which imports count differs here.
from test_architecture import cycles, modules

PACKAGE = "skin_collide"

#: Cycles known and owned elsewhere, each named by its sorted modules. Empty: none.
KNOWN: set[tuple[str, ...]] = set()


def package_modules() -> dict[str, Path]:
    """Dotted name (relative to the package, "" for its root) -> source file."""
    return modules()


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module `name` imports anywhere in its source."""
    is_package = path.name == "__init__.py"
    here = name.split(".") if name else []
    package = here if is_package else here[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    out.add(_deepest(alias.name[len(PACKAGE) + 1:], modules))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                base += node.module.split(".") if node.module else []
            elif node.module == PACKAGE or (node.module or "").startswith(PACKAGE + "."):
                base = node.module.split(".")[1:]
            else:
                continue
            stem = ".".join(base)
            for alias in node.names:
                sub = f"{stem}.{alias.name}" if stem else alias.name
                out.add(sub if sub in modules else _deepest(stem, modules))
    out.discard(None)
    out.discard(name)
    return out


def _deepest(dotted: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of `dotted` that is a module (attribute paths end at one)."""
    parts = dotted.split(".") if dotted else []
    for k in range(len(parts), -1, -1):
        if ".".join(parts[:k]) in modules:
            return ".".join(parts[:k])
    return None


def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {m: imported_modules(m, p, modules) for m, p in modules.items()}


def find_cycles(edges: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """Every strongly connected component of more than one module."""
    return [tuple(c) for c in cycles(edges)]


def test_the_checker_finds_cycles_and_edges():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [("a", "b", "c")]
    assert find_cycles({"a": {"b"}, "b": set()}) == []
    graph = import_graph()
    assert "core.rig" in graph["core.types"]
    assert "core.methods.registry" in graph["core.scan.objects"]


def test_type_checking_and_function_imports_count(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                   "    from skin_collide.core import rig\n"
                   "def f():\n    from skin_collide.core.scan import CollisionObject\n")
    assert imported_modules("x", src, package_modules()) == {"core.rig", "core.scan"}


def test_no_import_cycle_in_the_package():
    cycles = [c for c in find_cycles(import_graph()) if c not in KNOWN]
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
