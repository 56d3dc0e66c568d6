"""Issue 26 §3: output files (`core.report.writing`), without Blender.

The rule: an existing output is replaced only if this user could write it in place
(opening it for writing succeeds: permissions, ACLs, immutable and append-only flags,
read-only mounts) and it has a write permission bit for someone, so that a file made
read-only with `chmod a-w` is protected from root too (root's open() ignores the bits).
New files get the mode a plain open() gives (0666 & ~umask); a replaced file keeps its
mode. Errors name the user's path, in one line, never the temporary file.
"""
import os
import shutil
import stat
import subprocess
import sys

import pytest

from skin_collide.core.report import writing as report

DOC = '{"frames": []}\n'


def _no_leftovers(folder) -> list[str]:
    return [p for p in os.listdir(folder) if p.startswith(".skin_collide-")]


def _assert_refused_and_untouched(path, before: bytes, exc) -> None:
    msg = str(exc)
    assert str(path) in msg and "\n" not in msg
    assert ".skin_collide-" not in msg and "'" not in msg and "Errno" not in msg
    assert path.read_bytes() == before
    assert not _no_leftovers(path.parent)


def test_a_read_only_target_is_refused_for_root_too(tmp_path):
    """`chmod 0444` protects a file from every user; root's open() would succeed, so the
    missing write bits decide."""
    target = tmp_path / "reviewed.json"
    target.write_text("reviewed\n")
    target.chmod(0o444)
    assert report.replace_refusal(str(target)) is not None
    with pytest.raises(ValueError, match="read-only") as exc:
        report.check_output_path(str(target), "--json")
    _assert_refused_and_untouched(target, b"reviewed\n", exc.value)
    assert str(exc.value).startswith("--json ")
    with pytest.raises(report.OutputError, match="read-only") as exc:
        report.write_atomic(str(target), DOC)
    _assert_refused_and_untouched(target, b"reviewed\n", exc.value)
    target.chmod(0o644)                                   # writable again: replaced
    report.write_atomic(str(target), DOC)
    assert target.read_text() == DOC


def test_an_immutable_target_is_refused(tmp_path):
    chattr = shutil.which("chattr")
    target = tmp_path / "reviewed.xml"
    target.write_text("<reviewed/>")
    if chattr is None or subprocess.run([chattr, "+i", str(target)],
                                        capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here (needs root and a file system with flags)")
    try:
        assert stat.S_IMODE(target.stat().st_mode) & 0o222     # the write bits are set
        with pytest.raises(ValueError, match="immutable") as exc:
            report.check_output_path(str(target), "--junit")
        _assert_refused_and_untouched(target, b"<reviewed/>", exc.value)
        with pytest.raises(report.OutputError) as exc:
            report.write_atomic(str(target), "<new/>")
        _assert_refused_and_untouched(target, b"<reviewed/>", exc.value)
    finally:
        subprocess.run([chattr, "-i", str(target)], check=True)


# The case: an ordinary user, a folder it may write, a file another user owns and
# it may not write. The atomic rename needs only the folder's permission, so it must be
# refused by the file's own permissions.
OTHER_USER_SCRIPT = r"""
import sys
from skin_collide.core.report import writing as report
target = sys.argv[1]
try:
    report.check_output_path(target, "--json")
    print("check: accepted")
except ValueError as exc:
    print("check:", exc)
try:
    report.write_atomic(target, "replaced\n")
    print("write: replaced")
except report.OutputError as exc:
    print("write:", exc)
"""


def test_another_users_file_is_refused_in_a_folder_this_user_may_write():
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to act as another user")
    here = os.path.dirname(os.path.abspath(__file__))
    above = [here]
    while os.path.dirname(above[-1]) != above[-1]:
        above.append(os.path.dirname(above[-1]))
    if any(not os.stat(p).st_mode & 0o001 for p in above):
        pytest.skip("the other user cannot reach this checkout (a private folder above it)")
    import tempfile

    folder = tempfile.mkdtemp(prefix="skin_collide_rw_")   # under /tmp: nobody reaches it
    try:
        os.chmod(folder, 0o777)
        target = os.path.join(folder, "reviewed.json")
        with open(target, "w") as fh:
            fh.write("reviewed\n")
        os.chmod(target, 0o644)                           # root's, readable, not writable
        res = subprocess.run([setpriv, "--reuid", "65534", "--regid", "65534",
                              "--clear-groups", sys.executable, "-c", OTHER_USER_SCRIPT, target],
                             capture_output=True, text=True, timeout=600, cwd=folder)
        assert res.returncode == 0, res.stderr
        lines = dict(ln.split(": ", 1) for ln in res.stdout.splitlines())
        assert "not writable by this user" in lines["check"] and target in lines["check"]
        assert "not writable by this user" in lines["write"] and target in lines["write"]
        with open(target) as fh:
            assert fh.read() == "reviewed\n"
        assert os.stat(target).st_uid == 0
        assert not _no_leftovers(folder)
    finally:
        shutil.rmtree(folder)


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_new_outputs_get_the_mode_of_a_plain_open(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        report.write_atomic(str(tmp_path / "new.json"), DOC)
        with open(tmp_path / "plain.json", "w") as fh:
            fh.write(DOC)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "plain.json").stat().st_mode) == mode


def test_a_replaced_output_keeps_its_mode(tmp_path):
    target = tmp_path / "r.json"
    target.write_text("old")
    target.chmod(0o640)
    old = os.umask(0o077)
    try:
        report.write_atomic(str(target), DOC)
    finally:
        os.umask(old)
    assert target.read_text() == DOC
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_target_that_is_not_a_regular_file_is_refused(tmp_path):
    """The atomic rename would replace a FIFO (or a device node: `--junit /dev/null` as
    root) with a regular file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        report.check_output_path(str(fifo), "--junit")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_folder_with_files_that_cannot_be_replaced_is_refused(tmp_path):
    """`scan --snapshots DIR`: the pictures' names are known only after the scan, so every
    existing picture the scan might replace is checked before the first frame."""
    folder = tmp_path / "shots"
    folder.mkdir()
    (folder / "frame_00003.png").write_bytes(b"png")
    (folder / "notes.txt").write_text("x")
    (folder / "notes.txt").chmod(0o444)                   # not a picture: not ours to check
    assert report.check_output_folder(str(folder), "--snapshots", "frame_*.png") == str(folder)
    (folder / "frame_00003.png").chmod(0o444)
    with pytest.raises(ValueError, match="read-only") as exc:
        report.check_output_folder(str(folder), "--snapshots", "frame_*.png")
    assert str(folder / "frame_00003.png") in str(exc.value)
    with pytest.raises(ValueError, match="does not exist"):
        report.check_output_folder(str(tmp_path / "none"), "--snapshots", "frame_*.png")
    with pytest.raises(ValueError, match="not writable"):
        report.check_output_folder("/proc", "--snapshots", "frame_*.png")
