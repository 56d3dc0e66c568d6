"""`python -m skin_collide snapshot` and `scan --snapshots`: pictures of the viewport with
the colliding triangles in the overlay colour (needs Mesa's EGL; skips only without it)."""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

from conftest import REPO, inside_blender_binary  # noqa: E402
from test_viewport_gpu import mesa_egl_present  # noqa: E402

if inside_blender_binary():
    pytest.skip("subprocess CLI tests need the pip bpy module (plain pytest run)",
                allow_module_level=True)
if not mesa_egl_present():
    pytest.skip("Mesa's EGL is not installed (libegl-mesa0 libgl1-mesa-dri libgbm1)",
                allow_module_level=True)

COLOUR = (1.0, 0.1, 0.05, 0.7)


def run(*args):
    return subprocess.run([sys.executable, "-m", "skin_collide", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def overlay_pixels(path: Path) -> int:
    from skin_collide.addon import snapshot

    img = bpy.data.images.load(str(path))
    try:
        w, h = img.size
        px = np.empty(w * h * 4, np.float32)
        img.pixels.foreach_get(px)
    finally:
        bpy.data.images.remove(img)
    return int(snapshot.overlay_mask(px.reshape(h, w, 4), COLOUR).sum())


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("snap") / "demo.blend"
    res = run("demo", "--out", out, "--rings", "12", "--segments", "8", "--frame-count", "12")
    assert res.returncode == 0, res.stderr
    return out


def test_scan_writes_one_picture_per_episode(demo, tmp_path):
    shots = tmp_path / "shots"
    shots.mkdir()
    res = run("scan", demo, "--json", tmp_path / "r.json", "--snapshots", shots)
    assert res.returncode == 0, res.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    want = sorted({e["worst_frame"] for e in report["episodes"]})
    assert want
    # Each is the frame with the most pairs of its object pair within its episode.
    counts = {f["frame"]: len(f["pairs"]) for f in report["frames"]}
    for e in report["episodes"]:
        run_counts = [counts[f] for f in range(e["start"], e["end"] + 1) if f in counts]
        assert counts[e["worst_frame"]] == max(run_counts) == e["worst_pairs"]
    assert sorted(p.name for p in shots.iterdir()) == [f"frame_{f:05d}.png" for f in want]
    assert all(overlay_pixels(shots / f"frame_{f:05d}.png") > 0 for f in want)


@pytest.mark.parametrize("args, message", [
    (["--frame", "3", "--size", "big"], "--size expects WxH"),
    (["--frame", "3", "--size", "8x8"], "16-4096"),
    (["--frame", "3", "--object", "Nobody"], "no object named 'Nobody'"),
    (["--frame", "3", "--object", "Left"], "only one object"),
])
def test_bad_input_is_one_line_and_exit_2(demo, tmp_path, args, message):
    res = run("snapshot", demo, "--png", tmp_path / "x.png", *args)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines()[-1].startswith("skin_collide: error: ")
    assert message in res.stderr and not (tmp_path / "x.png").exists()


def test_bad_folders_exit_2(demo, tmp_path):
    res = run("snapshot", demo, "--frame", "3", "--png", tmp_path / "no" / "x.png")
    assert res.returncode == 2 and "does not exist" in res.stderr
    res = run("scan", demo, "--json", tmp_path / "r.json", "--snapshots", tmp_path / "no")
    assert res.returncode == 2 and "--snapshots" in res.stderr


@pytest.mark.asset
def test_snapshot_of_a_held_out_scene(assets_dir, tmp_path):
    """Two copies of the fox (never used while writing the snapshot code), crossing."""
    sys.path.insert(0, str(REPO / "bench"))
    import scenes

    from skin_collide.addon import extract, files, scanner

    files.load_file(str(assets_dir / "fox.glb"))
    scene = bpy.context.scene
    ob = extract.skinned_meshes(scene)[0]
    arm = extract.modifier_report(ob).armature
    # Turned across the first fox, 90 units ahead: the two touch on some frames only.
    ob2, _ = scenes.duplicate_character(ob, arm, "copy", offset=(0.0, 90.0, 0.0), turn=math.pi / 2)
    rec = scanner.Scanner([ob, ob2]).run(scene, list(range(0, 41, 5)))
    hit = max(rec.frames, key=lambda r: len(r.pairs)).frame
    calm = next(r.frame for r in rec.frames if not r.pairs)
    path = tmp_path / "fox.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    for frame, colliding in ((hit, True), (calm, False)):
        png = tmp_path / f"f{frame}.png"
        res = run("snapshot", path, "--frame", frame, "--png", png, "--size", "200x150")
        assert res.returncode == 0, res.stderr
        n = overlay_pixels(png)
        assert (n > 20) if colliding else (n == 0), (frame, n)
