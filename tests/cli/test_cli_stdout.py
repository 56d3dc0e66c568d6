"""The command line keeps stdout for its own lines, and refuses a bad --json target before
any work (issue 7 §5):

* glTF import: Blender's importer prints ``HH:MM:SS | INFO: ...`` lines; for `doctor` and
  `scan` of a .glb they go to stderr, and stdout holds only the command's lines;
* `scan --json` into a read-only folder or at a directory: exit 2 with one error line,
  before the file is even opened (no ``Read blend`` on stderr, no object or progress line on
  stdout: no frame was evaluated), and nothing is written there.
"""
import os
import re
import stat

import pytest
from test_cli_ci import _save, run

pytestmark = pytest.mark.blender

#: Blender's log prefix ("13:16:39 | INFO: ...", "00:00.401  blend | Read blend: ...").
LOG = re.compile(r"^\d\d:\d\d[:.]\d\d\d?\s*(\w+\s*)?\|")


@pytest.mark.asset
def test_gltf_info_lines_stay_off_stdout(assets_dir, tmp_path):
    glb = assets_dir / "fox.glb"
    doc = run("doctor", glb)
    scan = run("scan", glb, "--self", "--frames", "1:2", "--json", tmp_path / "r.json")
    for res, first in ((doc, "file: "), (scan, "scene: Scene (view layer ViewLayer)")):
        assert res.returncode in (0, 1), res.stderr[-2000:]
        assert "INFO:" in res.stderr          # the importer did talk: on stderr
        lines = res.stdout.splitlines()
        assert lines and lines[0].startswith(first), res.stdout[:500]
        assert not [ln for ln in lines if "INFO" in ln or LOG.match(ln)], res.stdout
    assert scan.stdout.splitlines()[1] == "evaluation: viewport (the surfaces the viewport draws)"
    assert scan.stdout.splitlines()[2].startswith("object fox: "), scan.stdout[:500]
    # doctor: only its report (keys, two-space indented facts, the deviation lines)
    assert all(re.match(r"^(file|scene|evaluation|mesh|max_deviation\w*): |^  \w+: ", ln)
               for ln in doc.stdout.splitlines()), doc.stdout
    # scan: the object line, one progress line per frame, the summary lines
    progress = [ln for ln in scan.stdout.splitlines() if ln.startswith("[")]
    assert len(progress) == 2


def _read_only_folder(tmp_path):
    """A folder this process cannot create files in: a chmod 555 folder, or, for root
    (who ignores the mode), /proc."""
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    try:
        (d / "probe").write_text("x")
    except OSError:
        return d
    (d / "probe").unlink()
    return "/proc"


@pytest.mark.parametrize("where", ["read-only folder", "a directory"])
def test_json_target_is_refused_before_the_first_frame(tmp_path, where):
    blend = _save(tmp_path / "cross.blend")
    target = (os.path.join(_read_only_folder(tmp_path), "report.json")
              if where == "read-only folder" else str(tmp_path))
    res = run("scan", blend, "--frames", "1:12", "--json", target)
    assert res.returncode == 2, res.stdout + res.stderr
    err = [ln for ln in res.stderr.splitlines() if ln.startswith("skin_collide:")]
    assert len(err) == 1 and "--json" in err[0], res.stderr
    assert "Traceback" not in res.stderr
    # Refused before the work: the .blend was never read, nothing was built or evaluated.
    assert "Read blend" not in res.stderr, res.stderr
    assert res.stdout == "", res.stdout
    if where == "read-only folder":
        assert not os.path.exists(target)
    else:
        assert os.listdir(tmp_path) == ["cross.blend"]      # no temporary file left
