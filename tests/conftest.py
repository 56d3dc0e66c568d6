"""Shared fixtures. Core tests need only numpy; Blender tests import the pip `bpy` module
(or run inside a real Blender under pytest-blender), and asset tests skip cleanly when
../shared/assets is not there (a user's fresh machine)."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
# The shared helpers (tests/*.py) and the test modules that others import (tests/core,
# tests/blender, tests/cli, tests/project), whichever folder a run starts from.
for _folder in (TESTS / "project", TESTS / "cli", TESTS / "blender", TESTS / "core", TESTS):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

# Keep Blender's user configuration out of the user's home while testing.
os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="skin_collide_bl_"))


def shared_assets_dir() -> Path | None:
    """The characters' folder: SKIN_COLLIDE_ASSETS (set by `bash dev test --bpy V` for a
    Blender that cannot read the shared .blend files: copies saved in a format it reads),
    else SKIN_COLLIDE_SHARED/assets, else ../shared/assets."""
    direct = os.environ.get("SKIN_COLLIDE_ASSETS")
    env = os.environ.get("SKIN_COLLIDE_SHARED")
    if direct:
        cand = Path(direct)
    else:
        cand = Path(env) / "assets" if env else REPO.parent / "shared" / "assets"
    return cand if cand.is_dir() else None


def inside_blender_binary() -> bool:
    """True under pytest-blender (tests run inside a Blender executable, whose bundled
    Python cannot run `python -m skin_collide` in a subprocess)."""
    try:
        import bpy
    except ImportError:
        return False
    return bool(bpy.app.binary_path)


ASSETS = shared_assets_dir()
ASSET_FILES = sorted(p.name for p in ASSETS.iterdir()
                     if p.suffix in (".glb", ".blend")) if ASSETS else []


@pytest.fixture
def assets_dir() -> Path:
    if ASSETS is None:
        pytest.skip("../shared/assets is not present on this machine")
    return ASSETS


@pytest.fixture
def bpy_module():
    """The bpy module with an empty scene; skips when bpy is not importable."""
    bpy = pytest.importorskip("bpy")
    bpy.ops.wm.read_homefile(use_empty=True)
    yield bpy
    bpy.ops.wm.read_homefile(use_empty=True)


def pytest_collection_modifyitems(config, items):
    # Parametrized asset tests show up even without assets; make the skip explicit.
    for item in items:
        if "asset" in item.keywords and ASSETS is None:
            item.add_marker(pytest.mark.skip(reason="../shared/assets is not present"))


@pytest.fixture(scope="module")
def registered_addon():
    """The add-on registered for the module's tests, unregistered after (use with
    ``pytestmark = pytest.mark.usefixtures("registered_addon")``)."""
    pytest.importorskip("bpy")
    import skin_collide

    skin_collide.register()
    yield
    skin_collide.unregister()


@pytest.fixture
def demo_pair():
    """The two generated tube characters (`blender_helpers.selected_demo`), selected, in a
    new empty file, not built; the file is emptied again after the test."""
    bpy = pytest.importorskip("bpy")
    from blender_helpers import selected_demo

    bpy.ops.wm.read_homefile(use_empty=True)
    yield selected_demo(bpy)
    bpy.ops.wm.read_homefile(use_empty=True)


@pytest.fixture
def cheap_union_search(monkeypatch):
    """The variational fit with a small union search (few attempts, coarse samples), for
    tests where the set's quality is not what is tested: the same code paths, a fraction
    of the time on small procedural meshes. tests/core/test_sphere_set_union_search.py tests
    the search itself."""
    from skin_collide.core.methods.sphere_set import variational

    real = variational.fit

    def fit(*args, **kwargs):
        for key, val in (("union_attempts", 6), ("union_outside", 20_000), ("union_surface", 2000),
                         ("union_pairs", 1), ("union_densify", 1)):
            kwargs.setdefault(key, val)
        return real(*args, **kwargs)

    monkeypatch.setattr(variational, "fit", fit)


_exit_status = 0


def pytest_sessionfinish(session, exitstatus):
    global _exit_status
    _exit_status = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """With the pip bpy imported, end the process here, after pytest has printed and written
    everything: bpy 4.5 LTS hangs for ever in its static destructors at exit (see
    skin_collide.cli.exit_process), so the run would never return its status."""
    if "bpy" in sys.modules and not inside_blender_binary():
        from skin_collide.cli import exit_process

        exit_process(_exit_status)
