"""Issue 16: no exception escapes the command line. A bug of ours (any exception besides
bad input) is one line on stderr saying it is an internal error and what it was, exit 2,
and the frames a scan already finished stay in its report, marked incomplete."""
import json

import pytest
from conftest import inside_blender_binary

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")


@pytest.fixture(autouse=True)
def headless_properties():
    """`cli.main` in-process registers the add-on's properties when the add-on is not
    registered (as a headless scan does): unregister them after, for the next modules."""
    import skin_collide

    had = hasattr(bpy.types.Object, "skin_collide")
    yield
    if not had and hasattr(bpy.types.Object, "skin_collide") and not skin_collide._registered:
        from skin_collide.addon import properties

        properties.unregister()
        for cls in reversed(properties.CLASSES):
            bpy.utils.unregister_class(cls)


@pytest.fixture
def demo_file(tmp_path):
    from skin_collide.addon import demo_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    demo_rig.build_demo_scene(rings=8, segments=6, frames=12)
    path = tmp_path / "demo.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    yield path
    bpy.ops.wm.read_homefile(use_empty=True)


def test_internal_error_in_a_scan_is_one_line_and_keeps_the_frames_done(
        demo_file, tmp_path, monkeypatch, capsys):
    from skin_collide import cli
    from skin_collide.addon import scanner

    real_step = scanner.Scanner.step
    calls = []

    def failing_step(self, scene, f, *args, **kw):
        calls.append(f)
        if len(calls) == 4:
            raise ZeroDivisionError("injected failure")
        return real_step(self, scene, f, *args, **kw)

    monkeypatch.setattr(scanner.Scanner, "step", failing_step)
    out = tmp_path / "scan.json"
    status = cli.main(["scan", str(demo_file), "--frames", "1:8", "--json", str(out)])
    err = capsys.readouterr().err
    assert status == 2
    lines = [ln for ln in err.splitlines() if ln.startswith("skin_collide:")]
    assert lines == ["skin_collide: internal error (please report it): "
                     "ZeroDivisionError: injected failure"], err
    assert "Traceback" not in err
    doc = json.loads(out.read_text())            # still a whole, valid document
    assert [f["frame"] for f in doc["frames"]] == [1, 2, 3]
    assert doc["complete"] is False and doc["frames_requested"] == 8
    assert "ZeroDivisionError: injected failure" in doc["error"]
    assert "after 3 frames" in doc["error"]


@pytest.mark.parametrize("command", ["doctor", "scan"])
def test_internal_error_before_the_first_frame(demo_file, monkeypatch, capsys, command):
    from skin_collide import cli
    from skin_collide.addon import extract

    def broken(*a, **k):
        raise AttributeError("'NoneType' object has no attribute 'bones'\nsecond line")

    monkeypatch.setattr(extract, "rig_from_object", broken)
    status = cli.main([command, str(demo_file), "--frames", "1:2"])
    err = capsys.readouterr().err
    assert status == 2
    lines = [ln for ln in err.splitlines() if ln.startswith("skin_collide:")]
    assert lines == ["skin_collide: internal error (please report it): AttributeError: "
                     "'NoneType' object has no attribute 'bones'"], err
    assert "Traceback" not in err and "second line" not in err


@pytest.mark.skipif(inside_blender_binary(), reason="needs the pip bpy in a subprocess")
def test_usage_errors_keep_their_own_wording(tmp_path, capsys):
    from skin_collide import cli

    status = cli.main(["scan", str(tmp_path / "missing.blend")])
    err = capsys.readouterr().err
    assert status == 2 and "internal error" not in err and "skin_collide: error:" in err
