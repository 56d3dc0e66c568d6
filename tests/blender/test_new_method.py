"""A method defined in tests/ (not in the package) and registered runs through the code the
CLI and the panel use: the panel's method choice and Build, the storage round trip through
a saved .blend, `scan --method` with its JSON report, and the live overlay's result. No
file of the package knows it."""
from __future__ import annotations

import json

import numpy as np
import pytest

bpy = pytest.importorskip("bpy")
pytestmark = pytest.mark.usefixtures("registered_addon")


@pytest.fixture
def runs():
    from toy_method import TriangleRuns

    from skin_collide.core.methods import registry

    m = registry.register(TriangleRuns())
    yield m
    registry.unregister(m.id)


def _pairs(doc):
    return {f["frame"]: sorted(map(tuple, f["pairs"])) for f in doc["frames"]}


def test_a_method_from_outside_runs_through_build_storage_scan_and_live(runs, tmp_path,
                                                                         capsys):
    from blender_helpers import selected_demo

    from skin_collide import cli
    from skin_collide.addon import storage
    from skin_collide.addon.state import STATE
    from skin_collide.core import scan as core_scan
    from skin_collide.core.methods import registry

    bpy.ops.wm.read_homefile(use_empty=True)
    names = [ob.name for ob in selected_demo(bpy, frames=12)]
    scene = bpy.context.scene
    scene.skin_collide.method = runs.id               # the panel offers it
    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    path = tmp_path / "runs.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))

    # Storage: the data comes back from the saved file, with its option.
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    meshes = [scene.objects[n] for n in names]
    loaded = [storage.load(ob) for ob in meshes]
    assert [o.method for o in loaded] == [runs.id, runs.id]
    fresh = [core_scan.prepare(o.rig, runs.id) for o in loaded]
    for o, f in zip(loaded, fresh):
        assert int(o.data.leaf_size) == runs.options["leaf_size"]
        assert np.array_equal(o.data.run_ptr, f.data.run_ptr)
        assert o.summary == f"{o.data.run_ptr.size - 1} runs"
    # Options: declared ones pass, others are refused with the method's own list.
    assert int(core_scan.prepare(loaded[0].rig, runs.id, leaf_size=3).data.leaf_size) == 3
    with pytest.raises(TypeError, match="leaf_size"):
        core_scan.prepare(loaded[0].rig, runs.id, count=3)

    # The CLI's scan: the data built in the file is used, the JSON names the method, and
    # every frame's pairs are those of the default method (both exact).
    ours, ref = tmp_path / "runs.json", tmp_path / "default.json"
    assert cli.main(["scan", str(path), "--method", runs.id, "--self", "--frames", "1:12",
                     "--json", str(ours)]) == 0
    out = capsys.readouterr().out
    assert "loaded from the .blend" in out and "runs" in out
    assert cli.main(["scan", str(path), "--method", registry.DEFAULT, "--self",
                     "--frames", "1:12", "--json", str(ref)]) == 0
    doc, base = json.loads(ours.read_text()), json.loads(ref.read_text())
    assert set(doc["refit"].values()) == {runs.id}
    assert _pairs(doc) == _pairs(base)
    assert sum(len(p) for p in _pairs(doc).values()) > 0      # the demo collides

    # The live overlay: a frame change with Live on gives the same pairs as the report.
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    assert scene.skin_collide.method == runs.id
    frame = max(_pairs(doc), key=lambda f: len(_pairs(doc)[f]))
    scene.skin_collide.live = True
    scene.frame_set(frame)
    res = STATE.live.get(scene.name_full)
    assert res is not None and not res.error, getattr(res, "error", None)
    assert res.modes == [runs.id, runs.id]
    assert sorted(map(tuple, res.polygon_pairs)) == _pairs(doc)[frame]
    bpy.ops.wm.read_homefile(use_empty=True)
