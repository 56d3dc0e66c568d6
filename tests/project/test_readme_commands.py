"""The README's two commands, as a newcomer types them: the first runs on a fresh copy of
the repository (no out/, no .venv of its own) and writes its report; `.ci/run` calls the
second one."""
import json
import re
import subprocess

import pytest
from repo_copy import REPO, dev_env, fresh_copy


def readme_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = re.search(r"^## The two commands\n(.*?)^## ", readme, re.S | re.M)
    assert section, "README has a section '## The two commands'"
    block = re.search(r"```bash\n(.*?)```", section.group(1), re.S)
    assert block, "that section shows the commands in a bash block"
    lines = [ln.split("#", 1)[0].strip() for ln in block.group(1).splitlines()]
    return [ln for ln in lines if ln]


def test_the_readme_shows_two_commands_and_ci_runs_the_second():
    main, tests = readme_commands()
    assert main.startswith("bash dev skin_collide ") and tests == "bash dev test"
    ci = [ln.strip() for ln in (REPO / ".ci" / "run").read_text().splitlines()]
    assert tests in ci, ".ci/run calls the README's test command as it is written"


def test_the_first_command_runs_on_a_fresh_clone(tmp_path):
    bpy = pytest.importorskip("bpy")
    if bpy.app.binary_path:
        pytest.skip("runs `bash dev` with the pip bpy module (plain pytest run)")
    main, _ = readme_commands()
    clone = fresh_copy(tmp_path / "clone")
    assert not (clone / "out").exists()
    res = subprocess.run(["bash", "-c", main], cwd=clone, env=dev_env(), capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    json_arg = re.search(r"--json\s+(\S+)", main).group(1)
    report = json.loads((clone / json_arg).read_text())
    assert report["complete"] is True and len(report["frames"]) == 48
    assert any(fr["pairs"] for fr in report["frames"]), "the demo characters cross mid-way"
    assert (clone / "out" / "demo.blend").is_file()
