"""A fresh copy of the repository, as a newcomer's clone has it (only the files git tracks:
no .venv, out/, dist/ or caches), and the environment that runs `bash dev ...` in it with
this test run's own virtual environment and bpy version (nothing is installed again)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def fresh_copy(dest: Path) -> Path:
    """Copy the tracked files of the checkout to `dest`; skips outside a git checkout."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True)
    if files.returncode != 0:
        pytest.skip("not a git checkout")
    for rel in filter(None, files.stdout.split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def dev_env() -> dict[str, str]:
    """`bash dev` in a copy uses this interpreter's venv and its bpy version (so that its
    set-up installs nothing: SKIN_COLLIDE_NO_INSTALL, even where the venv's stamp is older
    than the copy's files, which would re-point its editable install at the copy)."""
    venv = os.path.dirname(os.path.dirname(sys.executable))
    env = dict(os.environ, SKIN_COLLIDE_VENV=venv, SKIN_COLLIDE_NO_INSTALL="1")
    if "SKIN_COLLIDE_BPY" not in env:      # plain pytest, not `bash dev test`
        from importlib import metadata
        try:
            env["SKIN_COLLIDE_BPY"] = metadata.version("bpy")
        except metadata.PackageNotFoundError:
            pass
    return env
