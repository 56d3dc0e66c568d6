"""A/B against another revision in one process (`--against REV`): `revision(REV)`
materializes REV's tree (`git archive` into a temporary directory, removed afterwards) and
imports its `skin_collide` package under another module name (`skin_collide_a`), so that
A (REV) and B (this checkout) run side by side, alternating, on the same scene and frames,
their answers compared. Runs of one version differ from day to day on a shared machine by
more than most changes; A and B in one process, interleaved, differ by far less."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile

from bench.scenes import ROOT

NAME = "skin_collide_a"


def materialize(rev: str, where: str) -> str:
    """REV's files (`git archive`) extracted into `where`; returns the full commit."""
    full = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", f"{rev}^{{commit}}"],
                          check=True, capture_output=True, text=True).stdout.strip()
    tar = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", full],
                         check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(where, filter="data")
    return full


def import_package(where: str, name: str = NAME):
    """The package whose root is `where` (the repository root is the package), imported as
    `name`."""
    spec = importlib.util.spec_from_file_location(
        name, f"{where}/__init__.py", submodule_search_locations=[where])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def module(name: str, *candidates: str):
    """The first of `candidates` (dotted paths under the package `name`) that imports: a
    module moved between revisions (`core.aabb_tree`, formerly `core.self_collision`)."""
    for c in candidates:
        try:
            return importlib.import_module(f"{name}.{c}")
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"none of {candidates} in {name}")


@contextlib.contextmanager
def revision(rev: str, name: str = NAME):
    """`with revision(REV) as a:` REV's skin_collide imported as `name` (its modules are
    `name.core...`, `name.addon...`); the files and the modules are gone afterwards."""
    where = tempfile.mkdtemp(prefix="bench_against_")
    try:
        full = materialize(rev, where)
        pkg = import_package(where, name)
        pkg.bench_revision = full
        print(f"A: {rev} ({full[:10]}) imported as {name}; B: this checkout", flush=True)
        yield pkg
    finally:
        for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[m]
        shutil.rmtree(where, ignore_errors=True)
