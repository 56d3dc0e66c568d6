"""What the command-line tests share: `python -m skin_collide ...` run as a pipeline script
runs it (`run`), and the generated two-character demo shot (`make_demo`)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(*args, cwd=None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m skin_collide ARGS` (each argument str()'d) in a subprocess, its output
    captured as text."""
    return subprocess.run([sys.executable, "-m", "skin_collide", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=timeout)


def make_demo(folder: Path, frame_count: int = 12) -> tuple[Path, subprocess.CompletedProcess]:
    """`demo --rings 12 --segments 8` written to FOLDER/demo.blend: its path and the run."""
    out = Path(folder) / "demo.blend"
    res = run("demo", "--out", out, "--rings", "12", "--segments", "8",
              "--frame-count", frame_count)
    assert res.returncode == 0, res.stderr
    assert out.is_file()
    return out, res
