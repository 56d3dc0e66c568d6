"""The code's shape, checked: `core/` has no import cycle, imports run one way between the
layers, and no registered method id is written outside `core/methods/` (the registry
gives the default, the older `--mode` names and every label). Static: reads the sources,
imports no Blender module."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from skin_collide.core.methods import registry

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "skin_collide"
#: Not part of the package's code (tests, benchmarks, build output, virtual envs).
SKIP = {"tests", "bench", "docs", "dist", "farm", "out"}


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name relative to the package ("core.scan")."""
    out = {}
    for p in ROOT.rglob("*.py"):
        rel = p.relative_to(ROOT)
        if rel.parts[0] in SKIP or any(part.startswith(".") or part.endswith(".egg-info")
                                       for part in rel.parts):
            continue
        name = ".".join(rel.with_suffix("").parts)
        if name.endswith("__init__"):
            name = name[:-len("__init__")].rstrip(".")
        out[name] = p
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of import nodes under ``if TYPE_CHECKING:`` (they never run)."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                for n in ast.walk(sub):
                    skip.add(id(n))
    return skip


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (at module level or inside functions:
    an import deferred into a function to dodge a cycle is still that cycle)."""
    mods = modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, path in mods.items():
        is_pkg = path.name == "__init__.py"
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        here = m.split(".") if m else []
        base_parts = here if is_pkg else here[:-1]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 0:
                    if not (node.module or "").startswith(PACKAGE + "."):
                        continue
                    base = node.module[len(PACKAGE) + 1:]
                else:
                    parts = base_parts[:len(base_parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                subs = [f"{base}.{a.name}" if base else a.name for a in node.names]
                found = [s for s in subs if s in mods]
                targets += found
                if len(found) < len(subs):          # names taken from the module itself
                    targets.append(base)
            elif isinstance(node, ast.Import):
                targets += [a.name[len(PACKAGE) + 1:] for a in node.names
                            if a.name.startswith(PACKAGE + ".")]
            edges[m] |= {t for t in targets if t in mods and t != m}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_imports():
    """The checker must be able to fail: it finds edges we know exist."""
    g = import_graph()
    assert "core.methods.registry" in g["core.scan.objects"]
    assert "core.types" in g["core.hierarchy.traversal"]
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]


def test_core_has_no_import_cycle():
    g = import_graph()
    core = {m: {t for t in e if t.startswith("core")} for m, e in g.items()
            if m.startswith("core")}
    assert cycles(core) == []


def test_the_whole_package_has_no_import_cycle():
    assert cycles(import_graph()) == []


#: The layers, lowest first: a module may import its own layer and those below it. Inside
#: `core/` too (issue 56): the primitives, then the methods, then the frame's query stages,
#: the pipeline, and what is made of its answers (reports, storage).
LAYERS = [
    ("core.geometry", "core.cache"),       # array geometry and the one cache helper
    ("core.rig", "core.types"),
    ("core.keys", "core.welds", "core.skinning", "core.procedural", "core.triangles",
     "core.bounds", "core.aabb_tree", "core.hierarchy"),       # primitives of every method
    ("core.methods",),                     # one room per method, and their registry
    ("core.query", "core.contacts"),       # the frame's query stages; contacts of pairs
    ("core.scan",),                        # the frame pipeline
    ("core.report", "core.storage"),       # made of its answers
    ("core",),
    ("addon",),
    ("operators", "panels", "cli", "farm_commands", "testing", "__main__", ""),
]


def _layer(m: str) -> int:
    for k, prefixes in enumerate(LAYERS):
        if any(m == p or (p and m.startswith(p + ".")) for p in prefixes):
            return k
    raise AssertionError(f"module {m} is in no layer")


def test_imports_run_one_way():
    """geometry <- rig, types <- primitives <- methods <- query <- scan <- report, storage
    <- addon <- operators, panels, cli: nothing imports a layer above."""
    bad = [(m, t) for m, ts in import_graph().items() for t in ts if _layer(t) > _layer(m)]
    assert bad == []


def test_the_layer_check_can_fail():
    """A method importing the query stages, or storage, is above its layer."""
    assert _layer("core.query.multi") > _layer("core.methods.obb")
    assert _layer("core.storage.blob") > _layer("core.methods.sphere_tree")
    assert _layer("core.methods.registry") > _layer("core.hierarchy.traversal")
    with pytest.raises(AssertionError):
        _layer("elsewhere.module")


def test_every_core_module_is_in_a_named_layer():
    """A new room of core/ must be placed in LAYERS, not fall into the catch-all."""
    loose = [m for m in modules() if m.startswith("core.") and _layer(m) == _layer("core")]
    assert loose == []


def test_no_module_name_three_times_in_core():
    """Names say what a module is: none is used by three modules of core/ (three
    `near.py` were, until issue 56)."""
    from collections import Counter

    names = Counter(p.name for p in (ROOT / "core").rglob("*.py") if p.name != "__init__.py")
    assert [n for n, k in names.items() if k >= 3] == []


def test_methods_do_not_import_the_query_pipeline_or_the_registry():
    """A method's room needs the types, geometry, bounds and query primitives, never the
    frame pipeline (`core.scan`) or the registry that lists it."""
    bad = [(m, t) for m, ts in import_graph().items() if m.startswith("core.methods.")
           and m != "core.methods.registry"
           for t in ts if t in ("core.scan", "core.methods.registry")]
    assert bad == []


def _id_literals(path: Path, ids: set[str]) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in ids]


def test_no_method_id_is_written_outside_core_methods():
    ids = set(registry.ids())
    assert {"sphere-tree", "bottom-up", "rebuild"} <= ids       # the check has ids to find
    found = {str(p.relative_to(ROOT)): hits for m, p in modules().items()
             if not m.startswith("core.methods")
             for hits in [_id_literals(p, ids)] if hits}
    assert found == {}


def test_the_literal_check_finds_a_literal(tmp_path):
    p = tmp_path / "x.py"
    p.write_text('METHOD = "sphere-tree"\n"""a docstring naming sphere-tree is fine"""\n')
    assert _id_literals(p, set(registry.ids())) == [(1, "sphere-tree")]


@pytest.mark.parametrize("name", ["core", "core/methods"])
def test_every_core_folder_says_what_it_holds(name):
    assert (ROOT / name / "README.md").is_file()


def test_the_core_tests_need_no_blender():
    """`pytest tests/core` runs without bpy: no core test module needs it to import, and
    none registers the add-on (a test that can use Blender skips inside itself)."""
    bad = []
    for p in sorted((ROOT / "tests" / "core").glob("test_*.py")):
        tree = ast.parse(p.read_text())
        for node in tree.body:                   # module-level statements, not functions
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            text = ast.unparse(node)
            if ("importorskip('bpy')" in text or "import bpy" in text
                    or "registered_addon" in text or "skin_collide.addon" in text):
                bad.append((p.name, node.lineno))
    assert bad == []
