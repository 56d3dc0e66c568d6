"""A studio's files (issue 26): characters linked from an asset file, or library
overrides of them, in shot files. Built data survives saving and reopening, the asset
file's own build is reused, objects are told apart by their full names, linked mesh data
is never written silently, and rest contacts belong to the character."""
import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import inside_blender_binary

pytestmark = [pytest.mark.blender, pytest.mark.asset]
bpy = pytest.importorskip("bpy")

FRAME = 4          # Cesium Man's arms pass through its body (self-collision)


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """Every test here runs with the add-on registered."""


def _save_character(src, out, action: str | None = None, build: bool = False) -> None:
    """Import `src` and save it as an asset file whose collection "char" holds everything;
    with `build`, Build (self-collision) first, as a rigger does in the asset file."""
    from skin_collide.addon import animation, extract, files

    files.load_file(str(src))
    scene = bpy.context.scene
    coll = bpy.data.collections.new("char")
    scene.collection.children.link(coll)
    for ob in list(scene.objects):
        for c in list(ob.users_collection):
            c.objects.unlink(ob)
        coll.objects.link(ob)
    ob = extract.skinned_meshes(scene)[0]
    if action is not None:
        # glTF's animation name; Blender 4.2's importer appends the armature's ("walk_Skeleton")
        act = next(a for a in bpy.data.actions if a.name == action
                   or a.name.startswith(action + "_"))
        animation.use_action(extract.modifier_report(ob).armature, act)
    if build:
        ob.select_set(True)
        bpy.context.view_layer.objects.active = ob
        scene.skin_collide.self_collision = True
        assert bpy.ops.skin_collide.build() == {"FINISHED"}
    bpy.ops.wm.save_as_mainfile(filepath=str(out))
    bpy.ops.wm.read_homefile(use_empty=True)


@pytest.fixture(scope="module")
def char_files(tmp_path_factory):
    """Cesium Man as an asset file, unbuilt ("plain") and built there ("built"), and a copy
    of the plain one under another name ("other": a second library)."""
    from conftest import ASSETS

    if ASSETS is None:
        pytest.skip("../shared/assets is not present on this machine")
    folder = tmp_path_factory.mktemp("assets")
    files = {"plain": folder / "char.blend", "built": folder / "char_built.blend",
             "other": folder / "char_other.blend"}
    _save_character(ASSETS / "cesium_man.glb", files["plain"])
    _save_character(ASSETS / "cesium_man.glb", files["other"])
    _save_character(ASSETS / "cesium_man.glb", files["built"], build=True)
    return files


def _link_collection(path):
    with bpy.data.libraries.load(str(path), link=True) as (_, data_to):
        data_to.collections = ["char"]
    return data_to.collections[0]


def shot(path, how: str, scene=None) -> list:
    """An empty shot file with the character of `path` linked ("link"), overridden
    (`override_hierarchy_create`, as *Make Library Override* does) or both. Returns the
    scene's meshes, sorted by full name."""
    if scene is None:
        bpy.ops.wm.read_homefile(use_empty=True)
        scene = bpy.context.scene
    coll = _link_collection(path)
    if how in ("link", "both"):
        scene.collection.children.link(coll)
    if how in ("override", "both"):
        coll.override_hierarchy_create(scene, bpy.context.view_layer)
    return meshes(scene)


def meshes(scene=None) -> list:
    scene = scene or bpy.context.scene
    return sorted((ob for ob in scene.objects if ob.type == "MESH"), key=lambda o: o.name_full)


def select(obs, active=None) -> None:
    for ob in bpy.context.scene.objects:
        ob.select_set(ob in obs)
    bpy.context.view_layer.objects.active = active or obs[0]


def save_and_reopen(path) -> None:
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))


def live_pairs() -> set:
    from skin_collide.addon import session

    res = session.live_result(bpy.context.scene)
    assert res is not None and not res.error, res and res.error
    return set(res.polygon_pairs)


def blenders_answer(obs, self_collision: bool) -> set:
    """Our pairs from a fresh build, having checked them against Blender's BVHTree overlap
    of the evaluated meshes (disagreements judged exactly)."""
    from blender_helpers import judged_against_blender

    ours, missed, extra, n = judged_against_blender(bpy, obs, self_collision=self_collision)
    assert n > 0 and not missed and not extra
    return ours


def refuse_to_build(*args, **kwargs):
    raise AssertionError("the collision data was built again instead of being reused")


@pytest.fixture
def no_builds(monkeypatch):
    """Any build (the stored data not being used) fails the test."""
    from skin_collide.core import scan as core_scan

    monkeypatch.setattr(core_scan, "prepare", refuse_to_build)
    monkeypatch.setattr(core_scan.objects, "prepare", refuse_to_build)
    return monkeypatch


def canonical(pairs) -> set:
    """Polygon pairs regardless of which object of a pair comes first."""
    return {tuple(sorted([(a, pa), (b, pb)])) for a, pa, b, pb in pairs}


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "skin_collide", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


needs_subprocess = pytest.mark.skipif(inside_blender_binary(),
                                      reason="the CLI runs in a subprocess (plain pytest run)")


# 1. Built data of an overridden or linked character survives saving and reopening.

@pytest.mark.parametrize("how", ["override", "link"])
def test_built_data_survives_save_and_reopen(char_files, tmp_path, how, monkeypatch):
    (ob,) = shot(char_files["plain"], how)
    select([ob])
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    scene.frame_set(FRAME)
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    before = live_pairs()
    assert before
    from skin_collide.addon import storage

    save_and_reopen(tmp_path / f"shot_{how}.blend")
    (ob,) = meshes()
    assert storage.has_data(ob), [t.name for t in bpy.data.texts]
    assert storage.stale_reason(ob) == ""
    from skin_collide.core import scan as core_scan

    monkeypatch.setattr(core_scan, "prepare", refuse_to_build)
    monkeypatch.setattr(core_scan.objects, "prepare", refuse_to_build)
    scene = bpy.context.scene
    assert scene.skin_collide.live
    scene.frame_set(FRAME - 1)
    scene.frame_set(FRAME)                  # the live overlay, after reopening
    assert live_pairs() == before
    monkeypatch.undo()
    assert blenders_answer([ob], self_collision=True) == before


@pytest.mark.parametrize("how", ["link", "override"])
def test_built_data_survives_a_missing_library(char_files, tmp_path, how):
    """The asset file is away (an unmounted drive) when the shot is opened and saved: the
    shot's data for the character is kept, and used once the library is back."""
    import shutil

    from skin_collide.addon import storage

    asset = tmp_path / "char.blend"
    shutil.copy(char_files["plain"], asset)
    (ob,) = shot(asset, how)
    select([ob])
    bpy.context.scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    path = tmp_path / "shot.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    asset.rename(tmp_path / "away.blend")
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    bpy.ops.wm.save_mainfile()                  # opened and saved without the library
    (tmp_path / "away.blend").rename(asset)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    (ob,) = meshes()
    assert storage.has_data(ob) and not storage.inherited(ob)
    assert storage.stale_reason(ob) == ""
    bpy.context.scene.frame_set(FRAME)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    assert live_pairs() == blenders_answer([ob], self_collision=True)


# 2. Bake Highlight and Select Colliding Faces never write linked mesh data silently.

@pytest.mark.parametrize("how", ["override", "link"])
def test_bake_and_select_refuse_linked_mesh_data(char_files, how):
    from skin_collide.addon import bake

    (ob,) = shot(char_files["plain"], how)
    select([ob])
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    scene.frame_set(FRAME)
    selected = np.zeros(len(ob.data.polygons), bool)
    ob.data.polygons.foreach_get("select", selected)
    with pytest.raises(RuntimeError, match=r"mesh data of 'Cesium_Man.*' is linked .*make it local"):
        bpy.ops.skin_collide.bake_highlight()
    assert bake.ATTRIBUTE not in ob.data.color_attributes
    with pytest.raises(RuntimeError, match=r"mesh data of 'Cesium_Man.*' is linked .*make it local"):
        bpy.ops.skin_collide.select_colliding()
    after = np.zeros(len(ob.data.polygons), bool)
    ob.data.polygons.foreach_get("select", after)
    assert np.array_equal(after, selected)


# 4. Two objects with the same name are two objects.

@needs_subprocess
def test_linked_and_overridden_copies_are_told_apart(char_files, tmp_path):
    from skin_collide.addon import bake

    over, linked = shot(char_files["plain"], "both")
    assert (linked.name_full, over.name_full) == ("Cesium_Man [char.blend]", "Cesium_Man")
    over.data = over.data.copy()            # a local mesh: Select and Bake may write it
    root = next(o for o in bpy.context.scene.objects if o.type == "EMPTY" and not o.library)
    root.location.x = 0.2                   # the override steps aside: 617 pairs at frame 4
    select([linked, over], active=over)
    scene = bpy.context.scene
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    scene.frame_set(FRAME)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    pairs = live_pairs()
    assert canonical(pairs) == canonical(blenders_answer([linked, over], self_collision=False))
    assert {frozenset((a, b)) for a, _, b, _ in pairs} == {
        frozenset(("Cesium_Man [char.blend]", "Cesium_Man"))}
    own = {pa for a, pa, _, _ in pairs if a == "Cesium_Man"} | \
          {pb for _, _, b, pb in pairs if b == "Cesium_Man"}
    assert bpy.ops.skin_collide.select_colliding() == {"FINISHED"}
    sel = np.zeros(len(over.data.polygons), bool)
    over.data.polygons.foreach_get("select", sel)
    assert set(np.flatnonzero(sel).tolist()) == own
    # Bake writes the local mesh with its own faces only; the linked one is left alone.
    assert bpy.ops.skin_collide.bake_highlight() == {"FINISHED"}
    colours = np.empty(len(over.data.loops) * 4, np.float32)
    over.data.color_attributes[bake.ATTRIBUTE].data.foreach_get("color", colours)
    starts = np.empty(len(over.data.polygons), np.int32)
    over.data.polygons.foreach_get("loop_start", starts)
    assert set(np.flatnonzero(colours.reshape(-1, 4)[starts, 1] < 0.1).tolist()) == own
    assert bake.ATTRIBUTE not in linked.data.color_attributes
    # The command line names them the same way, and picks them by full name.
    path = tmp_path / "both.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    out = tmp_path / "both.json"
    res = run_cli("scan", path, "--frames", f"{FRAME}:{FRAME}", "--json", out)
    assert res.returncode == 0, res.stderr
    assert "(self)" not in res.stdout and "Cesium_Man [char.blend]" in res.stdout
    doc = json.loads(out.read_text())
    assert doc["objects"] == ["Cesium_Man [char.blend]", "Cesium_Man"]
    assert canonical(doc["frames"][0]["pairs"]) == canonical(pairs)
    for name in ("Cesium_Man [char.blend]", "Cesium_Man"):
        res = run_cli("scan", path, "--frames", f"{FRAME}:{FRAME}", "--self", "--object", name,
                      "--json", out)
        assert res.returncode == 0, res.stderr
        assert json.loads(out.read_text())["objects"] == [name]


@needs_subprocess
def test_an_ambiguous_bare_name_is_refused(char_files, tmp_path):
    shot(char_files["plain"], "link")
    shot(char_files["other"], "link", scene=bpy.context.scene)
    assert [o.name_full for o in meshes()] == ["Cesium_Man [char.blend]",
                                               "Cesium_Man [char_other.blend]"]
    path = tmp_path / "two_libraries.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    res = run_cli("scan", path, "--frames", "1:1", "--self", "--object", "Cesium_Man")
    assert res.returncode == 2
    lines = [l for l in res.stderr.splitlines() if l.startswith("skin_collide:")]
    assert len(lines) == 1 and "ambiguous" in lines[0]     # (Blender logs its file reads)
    assert "'Cesium_Man [char.blend]'" in lines[0] and "'Cesium_Man [char_other.blend]'" in lines[0]


# 6. Data built in the asset file is reused by a link or an override.

@pytest.mark.parametrize("how", ["link", "override"])
def test_data_built_in_the_asset_file_is_reused(char_files, tmp_path, how, no_builds):
    from skin_collide.addon import session, storage

    (ob,) = shot(char_files["built"], how)
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    assert storage.has_data(ob)
    assert storage.stale_reason(ob) == ""
    assert session.per_vertex_stale_reason(ob, full_check=True) == ""
    scene.frame_set(FRAME)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    first = live_pairs()
    save_and_reopen(tmp_path / f"reuse_{how}.blend")
    bpy.context.scene.frame_set(FRAME)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    assert live_pairs() == first
    no_builds.undo()
    assert blenders_answer(meshes(), self_collision=True) == first
    # The asset's data cannot be cleared here; what is built here can, and then the
    # asset's data is used again.
    (ob,) = meshes()
    select([ob])
    with pytest.raises(RuntimeError, match="built in its asset file .*clear it there"):
        bpy.ops.skin_collide.clear()
    assert bpy.ops.skin_collide.build() == {"FINISHED"} and not storage.inherited(ob)
    assert bpy.ops.skin_collide.clear() == {"FINISHED"}
    assert storage.inherited(ob) and storage.stale_reason(ob) == ""
    if inside_blender_binary():
        return
    res = run_cli("scan", tmp_path / f"reuse_{how}.blend", "--self", "--frames",
                  f"{FRAME}:{FRAME}")
    assert res.returncode == 0, res.stderr
    assert "loaded from the .blend" in res.stdout


# 9. Rest contacts belong to the character, not to the scene.

def test_rest_contacts_follow_the_character_into_every_scene(assets_dir, tmp_path):
    """A segmented character (its parts interpenetrate by design) linked into two shot
    scenes, built in the first: Ignore Rest Contacts drops the same pairs in both."""
    from skin_collide.addon import session

    enemy = tmp_path / "enemy.blend"
    _save_character(assets_dir / "platformer_enemy.glb", enemy, action="walk")
    (ob,) = shot(enemy, "link")
    first = bpy.context.scene
    second = bpy.data.scenes.new("Shot 2")
    second.collection.children.link(next(c for c in bpy.data.collections if c.library))
    frame = 10
    for scene in (first, second):
        s = scene.skin_collide
        s.self_collision, s.ignore_rest_contacts = True, True
        scene.frame_current = frame
    select([ob])
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    _same_in_both_scenes(frame)
    path = tmp_path / "two_scenes.blend"
    save_and_reopen(path)
    _same_in_both_scenes(frame)
    assert len(session.rest_contacts(bpy.data.scenes["Shot 2"])) > 100


def _same_in_both_scenes(frame: int) -> None:
    """Both scenes drop the same rest contacts, and the pairs kept without dropping them
    are Blender's answer."""
    counts = {}
    for name in ("Scene", "Shot 2"):
        scene = bpy.data.scenes[name]
        bpy.context.window.scene = scene
        scene.frame_set(frame)
        for ignore in (False, True):
            scene.skin_collide.ignore_rest_contacts = ignore
            assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
            counts[name, ignore] = live_pairs()
    assert counts["Scene", True] == counts["Shot 2", True]
    assert counts["Scene", False] == counts["Shot 2", False]
    assert len(counts["Shot 2", True]) < len(counts["Shot 2", False])
    (ob,) = meshes(bpy.data.scenes["Shot 2"])
    assert counts["Shot 2", False] == blenders_answer([ob], self_collision=True)
