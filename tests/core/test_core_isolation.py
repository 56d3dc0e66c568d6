"""core/ must import and run with no Blender module anywhere on the path."""
import re
import subprocess
import sys
import textwrap
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
BLENDER_MODULES = ("bpy", "mathutils", "bmesh", "gpu", "bpy_extras", "bl_math", "idprop")


def test_core_sources_never_import_blender():
    pattern = re.compile(r"^\s*(import|from)\s+(%s)\b" % "|".join(BLENDER_MODULES), re.M)
    offenders = [str(p.relative_to(CORE)) for p in CORE.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_core_imports_and_runs_with_blender_blocked():
    from conftest import inside_blender_binary

    if inside_blender_binary():
        import pytest

        pytest.skip("needs a plain Python interpreter (covered by the plain pytest run)")
    code = textwrap.dedent(f"""
        import importlib, importlib.abc, pkgutil, sys
        BLOCKED = {BLENDER_MODULES!r}
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in BLOCKED:
                    raise ImportError("blocked " + name)
                return None
        sys.meta_path.insert(0, Block())
        import skin_collide.core as core
        # Every module, those in core's rooms (subpackages) too.
        names = [m.name for m in pkgutil.walk_packages(core.__path__, "skin_collide.core.")]
        for n in names:
            importlib.import_module(n)
        import numpy as np
        from skin_collide.core import procedural, skinning
        rig = procedural.tube_rig()
        pose = procedural.random_pose(rig, np.random.default_rng(0))
        out = skinning.lbs_rig(rig, pose)
        assert out.shape == (rig.n_vertices, 3) and np.isfinite(out).all()
        assert not [m for m in sys.modules if m.split(".")[0] in BLOCKED]
        print("modules", len(names))
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "modules" in res.stdout
