"""Every benchmark scenario runs (`python -m bench NAME --smoke`: a small generated rig, one
to three frames, tiny sizes, no shared asset), so none rots unseen; the A/B scenarios run
`--against HEAD` and must find both answers equal. Nothing here asserts on time: only that
each scenario ran to the end and printed its rows."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:          # `python -m bench` runs from the repository root
    sys.path.insert(0, str(ROOT))

from bench import registry  # noqa: E402

SCENARIOS = sorted(registry.load_all())

#: What each scenario prints once it has run (a row of its table, or its summary line).
EXPECT = {
    "between": "| with --between-frames |",
    "ccd": "mesh_pairs, 18 x 18 triangles: 163 candidate pairs",
    "chains-coverage": "method pairs (both constructions) == chains + complement",
    "clearance": "| pair | ",
    "contacts": "| **contacts / query** |",
    "crowd": "| 3 | 0.35 | ",
    "crowd-storage": "| shared | 1 of 2 |",
    "degenerate": "bone bone_3 scale (0.0,): ours",
    "dense-pairs": "exact (Scan's query):",
    "first-update": "| 0 | 336 | ",
    "live-contacts": "| **contacts / live update** |",
    "live-loop": "Second loop equal to the first on every frame",
    "obb-chains": "self tree (all pairs)",
    "pair-playback": "| 0.30 | ",
    "pairs-aabb": "| AABB pairs ms |",
    "pose-edits": "| 336 | bone_3 | ",
    "pose-edits-pair": "| 0.1 m | bone_3 | ",
    "rigid-seeds": "| 0.9 | ",
    "self": "level 1: the never-generated rest-adjacent leaf pairs",
    "self-playback": "Checked against a scanner built anew: 2 frames, equal",
    "sphere-set-build-time": "N=4: build",
    "sphere-set-fit-quality": "4 | ",
    "sphere-set-sov-time": "3 SOV batches",
    "sphere-sets": "| 4 | ",
    "storage": "| smoke-tube.blend | 0 | 1 | 336 | ",
    "table-sbs": "PV on-demand / LBS on-demand",
    "table3": "Table 2 (level 1, frame",
    "threads": "| (d) self tree",
    "viewport": "| Rebuilding / cached redraw |",
    "weight-bounds": "vertex tree: N=3999",
}

#: More ways through a few scenarios: (arguments, what they print).
VARIANTS = [
    (["storage", "--arrays"], "All arrays raw"),
    (["dense-pairs", "pose", "0.5", "2", "1"], "random pose (scales 0.5-2.0, seed 1)"),
    (["first-update", "--characters", "2", "--reopen", "0", "--drop-kept"], "(open "),
    (["live-loop", "--pair"], "two characters 0.55 m apart"),
    (["self", "--skip-old"], "| Ours ms |"),
]

#: The A/B scenarios against HEAD: what they print once every answer compared equal.
AGAINST = [
    (["self"], "answers equal"),
    (["self", "--frame"], "answers equal"),
    (["table3"], "pairs equal on every frame"),
    (["clearance"], "| shirt | 2 | "),
]


def _bench(args: list[str]) -> str:
    pytest.importorskip("bpy")
    env = dict(os.environ)
    # No shared asset may be needed: point the benches at a folder that does not exist.
    env["SKIN_COLLIDE_SHARED"] = str(ROOT / "no-such-shared-folder")
    env.pop("SKIN_COLLIDE_ASSETS", None)
    res = subprocess.run([sys.executable, "-m", "bench", *args, "--smoke"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res.stdout


def test_every_scenario_has_an_expected_line_and_the_list_shows_them():
    assert sorted(EXPECT) == SCENARIOS
    res = subprocess.run([sys.executable, "-m", "bench", "--list"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    listed = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    assert listed == SCENARIOS
    for name in SCENARIOS:
        assert registry.SCENARIOS[name].smoke, f"{name} has no --smoke settings"


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_scenario_runs_on_the_small_rig(name):
    out = _bench([name])
    assert EXPECT[name] in out, out[-3000:]


@pytest.mark.parametrize("args, expect", VARIANTS, ids=[" ".join(a) for a, _ in VARIANTS])
def test_more_options_run(args, expect):
    out = _bench(args)
    assert expect in out, out[-3000:]


@pytest.mark.parametrize("args, expect", AGAINST, ids=[" ".join(a) for a, _ in AGAINST])
def test_against_head_compares_equal_answers(args, expect):
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "HEAD"],
                          capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout: nothing to materialize")
    out = _bench([*args, "--against", "HEAD"])
    assert "A: HEAD (" in out and expect in out, out[-3000:]
    if args[0] == "table3":
        assert '"version": "A"' in out and '"version": "B"' in out
