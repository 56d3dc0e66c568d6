"""The code passes the project's ruff rules (pyproject.toml `[tool.ruff]`: pyflakes,
pycodestyle, import order; Blender's annotations and operator names allowed). ruff is
installed with the test requirements; where it is missing the test says so and skips."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ruff() -> list[str]:
    exe = Path(sys.executable).with_name("ruff")
    if exe.is_file():
        return [str(exe)]
    found = shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (it comes with requirements.txt)")
    return [found]


def test_the_code_passes_ruff():
    proc = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_finds_what_it_should(tmp_path):
    """The rules are on: an unused import and a misplaced import order are reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\n\nprint(os.sep)\n")
    proc = subprocess.run([*_ruff(), "check", "--no-cache", "--config",
                           str(ROOT / "pyproject.toml"), str(bad)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "F401" in proc.stdout and "I001" in proc.stdout
