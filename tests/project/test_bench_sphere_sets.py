"""The sphere-sets scenario (bench/scenarios/sphere_sets.py): its coverage checks on a triangle whose corners and middle
are or are not in the balls; the plot's series; the plot itself (matplotlib, a
benchmark-only dependency: skipped where it is not installed, as in CI)."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:          # `python -m bench` runs from the repository root
    sys.path.insert(0, str(ROOT))

from bench.scenarios import sphere_sets as b  # noqa: E402


def _results():
    cells = [{"asset": "cesium_man.glb", "method": "variational", "count": n, "status": "done",
              "e_r": e} for n, e in ((32, 0.81), (8, 3.28), (16, 1.69))]
    cells += [{"asset": "fox.glb", "method": "grid", "count": 8, "status": "done", "e_r": 4.5},
              {"asset": "fox.glb", "method": "grid", "count": 16, "status": "stopped",
               "e_r": 4.1},
              {"asset": "fox.glb", "method": "top-down", "count": 8, "status": "not reached",
               "why": "killed"}]
    return {"cells": cells, "assets": {}}


def test_coverage_checks_on_one_triangle():
    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    t = np.array([[0, 1, 2]])
    corners = v.copy()
    # Balls of 0.8 at the corners hold the whole triangle together, none alone.
    assert b.union_coverage(corners, np.full(3, 0.8), v, t)[0] == 0
    assert b.coverage(corners, np.full(3, 0.8), v, t)[0] == 1
    # Balls of 0.6 leave the middle of the long edge out (0.707 from its corners).
    missed, gap = b.union_coverage(corners, np.full(3, 0.6), v, t)
    assert missed == 1 and abs(gap - (np.sqrt(0.5) - 0.6) / np.sqrt(2)) < 1e-12
    # One ball about the circumcentre holds it all.
    assert b.coverage(np.array([[0.5, 0.5, 0]]), np.array([np.sqrt(0.5) + 1e-9]), v, t)[0] == 0


def test_plot_series_finished_fits_sorted_with_the_cesium_man_references():
    series = {s["label"]: s for s in b.plot_series(_results())}
    assert list(series) == ["Cesium Man variational", "Fox grid", "Cesium Man AMAA (issue 10)",
                            "Cesium Man goal (issue 10)"]
    cm = series["Cesium Man variational"]
    assert (cm["x"], cm["y"]) == ([8, 16, 32], [3.28, 1.69, 0.81])
    assert series["Fox grid"]["x"] == [8]                      # the stopped fit is left out
    assert series["Cesium Man goal (issue 10)"]["linestyle"] is None       # markers only
    assert series["Cesium Man AMAA (issue 10)"]["x"] == list(b.AMAA)
    fox_only = {"cells": [c for c in _results()["cells"] if c["asset"] == "fox.glb"]}
    assert [s["label"] for s in b.plot_series(fox_only)] == ["Fox grid"]


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "er.png"
    b.plot(_results(), str(out))
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (w, h) == (1160, 620)


def test_the_plot_needs_no_matplotlib_until_it_draws():
    # Importing the benchmark (fits, tables) must not import matplotlib.
    import subprocess

    code = "import sys; import bench.scenarios.sphere_sets; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
