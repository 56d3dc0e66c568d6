"""Where built data lives (addon.storage): compact bytes in the file, or the disk cache next
to it; stale, foreign and missing caches; Shift+D; earlier files."""
import base64
import io
import json
import os

import numpy as np
import pytest

from skin_collide.addon.state import STATE
from skin_collide.core import cache

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")


@pytest.fixture(scope="module", autouse=True)
def addon():
    import skin_collide

    skin_collide.register()
    yield
    skin_collide.unregister()


@pytest.fixture
def demo():
    from skin_collide.addon import demo_rig

    bpy.ops.wm.read_homefile(use_empty=True)
    a, b = demo_rig.build_demo_scene(rings=16, segments=10, frames=24)
    for ob in (a, b):
        ob.select_set(True)
    bpy.context.view_layer.objects.active = a
    yield a, b
    bpy.ops.wm.read_homefile(use_empty=True)


def frames_pairs() -> list:
    rep = json.loads(bpy.context.scene.skin_collide.report.as_string())
    return [(f["frame"], f["pairs"]) for f in rep["frames"]]


def scan() -> list:
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    return frames_pairs()


def reopen(path) -> None:
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))


def cache_files(folder) -> list:
    d = folder / "skin_collide_cache"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_byte_properties_need_deleting_before_reassigning():
    """The Blender behaviour `storage.set_bytes` works around: assigning bytes to an
    existing byte-string property stops at the first zero byte."""
    t = bpy.data.texts.new("probe")
    t["p"] = b"ab\0c"
    t["p"] = b"abcdef\0gh"
    assert len(t["p"]) == 6
    bpy.data.texts.remove(t)


def test_file_data_is_compact_binary_and_rebuilds_keep_it_whole(demo, tmp_path):
    from skin_collide.addon import storage
    from skin_collide.core.storage import blob

    a, b = demo
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.build() == {"FINISHED"}      # replaces existing bytes
    text = a.skin_collide.data
    assert text.name.startswith(".")                          # hidden from ID lists
    assert len(text.lines) <= 2 and "do not edit" in text.as_string()
    data = bytes(text[storage.BLOB_KEY])
    assert blob.is_blob(data) and b"\0" in data
    assert storage.location(a) == "FILE" and not storage.needs_rebuild(a)
    before = scan()
    path = tmp_path / "file.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    reopen(path)
    a = bpy.data.objects["Left"]
    assert bytes(a.skin_collide.data[storage.BLOB_KEY]) == data
    assert storage.load(a) is not None and scan() == before
    assert cache_files(tmp_path) == []


def test_duplicate_shares_the_bytes_instead_of_copying(demo):
    from skin_collide.addon import storage

    a, b = demo
    bpy.ops.skin_collide.build()
    n_texts = len(bpy.data.texts)
    for ob in bpy.context.scene.objects:
        ob.select_set(ob == a)
    bpy.context.view_layer.objects.active = a
    bpy.ops.object.duplicate()
    copy = bpy.context.active_object
    assert copy != a and copy.skin_collide.data == a.skin_collide.data
    assert len(bpy.data.texts) == n_texts and not storage.has_data(copy)
    assert storage.load(a) is not None


def test_disk_cache_keeps_the_file_lean_and_scans_identically(demo, tmp_path):
    from skin_collide.addon import storage
    from skin_collide.core.storage import persist

    a, b = demo
    bpy.context.scene.skin_collide.data_location = "DISK"
    bpy.ops.skin_collide.build()                 # unsaved: stays in the file for now
    assert storage.location(a) == "FILE" and storage.cache_dir() is None
    before = scan()
    in_file = tmp_path / "in_file.blend"
    bpy.context.scene.skin_collide.data_location = "FILE"
    bpy.ops.wm.save_as_mainfile(filepath=str(in_file))
    bpy.context.scene.skin_collide.data_location = "DISK"
    lean = tmp_path / "lean.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(lean))    # save_pre moves the data out
    sig = a.skin_collide.signature
    assert storage.location(a) == "DISK"
    assert f"{sig}{storage.CACHE_SUFFIX}" in cache_files(tmp_path)
    assert len(cache_files(tmp_path)) == 2
    assert os.path.getsize(lean) < os.path.getsize(in_file)
    reopen(lean)
    a = bpy.data.objects["Left"]
    assert storage.location(a) == "DISK" and not STATE.missing_data
    obj = storage.load(a)
    assert persist.rig_signature(obj.rig) == sig
    assert scan() == before
    # Back into the file on the next save when the setting says so.
    bpy.context.scene.skin_collide.data_location = "FILE"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "back.blend"))
    assert storage.location(a) == "FILE"


@pytest.mark.parametrize("damage", ["missing", "foreign", "stale", "garbage"])
def test_bad_cache_is_detected_and_rebuilt_when_first_needed(demo, tmp_path, damage):
    from skin_collide.addon import storage
    from skin_collide.core import scan as core_scan
    from skin_collide.core.storage import persist

    a, b = demo
    bpy.context.scene.skin_collide.data_location = "DISK"
    path = tmp_path / "cached.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    if damage == "missing":                        # a rebuild keeps the method asked
        bpy.context.scene.skin_collide.method = "box-tree"
    bpy.ops.skin_collide.build()
    bpy.context.scene.skin_collide.method = "sphere-tree"
    before = scan()
    sig_a = a.skin_collide.signature
    file_a = tmp_path / "skin_collide_cache" / f"{sig_a}{storage.CACHE_SUFFIX}"
    file_b = tmp_path / "skin_collide_cache" / f"{b.skin_collide.signature}.skcb"
    bpy.ops.wm.save_mainfile()
    if damage == "missing":
        file_a.unlink()
    elif damage == "foreign":                      # another character's data
        file_a.write_bytes(file_b.read_bytes())
    elif damage == "stale":                        # data of an older version of the rig
        rig = storage.load(a).rig
        rig.rest_positions = rig.rest_positions * 1.01
        file_a.write_bytes(persist.to_bytes(core_scan.prepare(rig)))
    else:
        file_a.write_bytes(b"SKCB\x01\x02" + os.urandom(64))
    STATE.objects.clear()                         # as in a new Blender session
    reopen(path)
    a = bpy.data.objects["Left"]
    text = a.skin_collide.data
    assert storage.has_data(a) and storage.stale_reason(a) == ""
    assert not STATE.objects                          # opening decoded nothing
    if damage == "missing":
        assert STATE.missing_data == {"Left"}             # noted at load, not built
    build_id = text[storage.BUILD_KEY]
    obj = storage.load(a)                              # first need: rebuilt here
    assert text[storage.BUILD_KEY] != build_id
    assert obj.method == ("box-tree" if damage == "missing" else "sphere-tree")
    assert persist.rig_signature(obj.rig) == sig_a == a.skin_collide.signature
    assert persist.rig_signature(persist.from_bytes(file_a.read_bytes()).rig) == sig_a
    assert "Left" not in STATE.missing_data
    assert storage.load(a) is obj                      # cached, not rebuilt twice
    assert scan() == before


def test_files_of_earlier_versions_still_load(demo):
    from skin_collide.addon import storage
    from skin_collide.core.storage import persist

    a, b = demo
    bpy.ops.skin_collide.build()
    before = scan()
    obj = storage.load(a)
    arrays = persist.all_arrays(obj)
    arrays["format"] = np.array(3)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    text = a.skin_collide.data
    del text[storage.BLOB_KEY]
    text.from_string(base64.encodebytes(buf.getvalue()).decode("ascii"))
    text[storage.BUILD_KEY] = "old"
    STATE.objects.clear()
    assert np.array_equal(storage.load(a).data.tree.radii, obj.data.tree.radii)
    assert scan() == before


def count_decoding(monkeypatch) -> dict:
    """From now on, counts of the stored data decoded (``decode``) and of self trees
    built (``tree``), on any thread."""
    from skin_collide.core import aabb_tree as sc_mod
    from skin_collide.core.storage import persist

    calls = {"decode": 0, "tree": 0}
    real_decode, real_build = persist.from_bytes, sc_mod.build

    def decode(data):
        calls["decode"] += 1
        return real_decode(data)

    def build(*args, **kw):
        calls["tree"] += 1
        return real_build(*args, **kw)

    monkeypatch.setattr(persist, "from_bytes", decode)
    monkeypatch.setattr(sc_mod, "build", build)
    return calls


def test_a_build_keeps_its_stored_form_for_the_session(demo, monkeypatch):
    """Build keeps the stored form of its data for the session without decoding the
    bytes it wrote, and the first live update neither decodes nor builds a self tree
    again (the rest-contact query built them on the kept objects); its answer is the one
    decoded data gives. A rebuild undone brings the earlier data back (the kept object is
    named by its build id)."""
    from skin_collide.addon import session, storage

    a, b = demo
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    bpy.context.scene.frame_set(5)
    calls = count_decoding(monkeypatch)
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    # The two tubes are copies of one build (`storage.shared`): one self tree for both.
    assert calls == {"decode": 0, "tree": 1}
    # ... and each polygon's dominant bone, which the first self contact needs.
    assert all(cache.holds(storage.load(ob).rig, "polygon_bones")
               for ob in (a, b))
    dg = bpy.context.evaluated_depsgraph_get()
    kept = session.query(scene, dg, [a, b], carry=True)
    assert calls == {"decode": 0, "tree": 1}
    assert kept.n_pairs > 0                              # frame 5: the tubes cross
    STATE.objects.clear()                                # as after reopening the file
    STATE.shared_bases.clear()
    fresh = session.query(scene, dg, [a, b])
    assert calls == {"decode": 1, "tree": 2}                # decoded once, one tree
    assert fresh.polygon_pairs == kept.polygon_pairs
    # Undo of a rebuild, as Blender's undo does it to the Text: the earlier bytes and
    # build id come back, and the object kept for the new build is not used for them.
    text = storage.text_of(a)
    old_id, old_bytes = str(text[storage.BUILD_KEY]), bytes(text[storage.BLOB_KEY])
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert calls["decode"] == 1                          # the rebuild decoded nothing
    assert storage.text_of(a) == text and str(text[storage.BUILD_KEY]) != old_id
    text[storage.BUILD_KEY] = old_id
    storage.set_bytes(text, old_bytes)
    calls["decode"] = 0
    again = session.query(scene, bpy.context.evaluated_depsgraph_get(), [a, b])
    assert calls["decode"] == 1                          # a's earlier data; b's kept
    assert again.polygon_pairs == kept.polygon_pairs


def test_opening_a_file_decodes_the_live_characters_in_the_background(demo, tmp_path,
                                                                      monkeypatch):
    """With the live overlay on, opening the file starts decoding its characters' data
    (and their self trees) in a background thread; the first update takes them without
    decoding, and answers as data decoded on the spot does. With the overlay off nothing
    is decoded ahead; a decoding that failed is done again where it is needed."""
    from concurrent.futures import Future

    from skin_collide.addon import handlers, session

    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"} and scene.skin_collide.live
    path = tmp_path / "live.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    reopen(path)
    assert not STATE.prefetched                 # headless (as here): nothing ahead
    monkeypatch.setattr(handlers, "_prefetch_on_load", lambda: True)    # interactive
    reopen(path)
    jobs = dict(STATE.prefetched)
    assert len(jobs) == 1                       # the two tubes share one build's bytes
    for _, future in jobs.values():
        obj = future.result()
        assert obj.self_tree is not None
        assert cache.holds(obj.rig, "polygon_bones")
    calls = count_decoding(monkeypatch)
    scene = bpy.context.scene
    a, b = bpy.data.objects["Left"], bpy.data.objects["Right"]
    scene.frame_set(5)
    dg = bpy.context.evaluated_depsgraph_get()
    ahead = session.query(scene, dg, [a, b])
    assert calls == {"decode": 0, "tree": 0} and not STATE.prefetched
    assert ahead.n_pairs > 0
    STATE.objects.clear()
    STATE.shared_bases.clear()
    on_the_spot = session.query(scene, dg, [a, b])
    assert calls == {"decode": 1, "tree": 1}
    assert on_the_spot.polygon_pairs == ahead.polygon_pairs
    # A decoding that failed: decoded again on this thread.
    STATE.objects.clear()
    STATE.shared_bases.clear()
    failed = Future()
    failed.set_exception(ValueError("damaged"))
    key = next(iter(jobs))
    STATE.prefetched[key] = (jobs[key][0], failed)
    assert session.query(scene, dg, [a, b]).polygon_pairs == ahead.polygon_pairs
    assert calls["decode"] == 2 and not STATE.prefetched
    # The overlay off: nothing is decoded ahead.
    bpy.context.scene.skin_collide.live = False
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    reopen(path)
    assert not STATE.prefetched


def fresh_session() -> None:
    """Forget every decoded build, as opening the file again does."""
    STATE.objects.clear()
    STATE.shared_bases.clear()


def test_copies_of_one_character_store_one_build(demo, tmp_path):
    """The two tubes are copies of one build (`core.scan.shared_builds`): the first's Text
    holds the bytes, the second's only its own fields and the holder; reopened, each is
    named as its own object and the scan is the one before."""
    from skin_collide.addon import storage
    from skin_collide.addon.extract import modifier_report

    a, b = demo
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    ta, tb = storage.text_of(a), storage.text_of(b)
    assert ta != tb and storage.BLOB_KEY in ta and storage.BLOB_KEY not in tb
    assert tb[storage.SHARED_KEY] == ta and len(tb[storage.OWN_KEY]) < 2000
    assert len(ta[storage.BLOB_KEY]) > 5 * len(tb[storage.OWN_KEY])
    assert storage.location(b) == "FILE" and not storage.needs_rebuild(b)
    before = scan()
    path = tmp_path / "copies.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    reopen(path)
    a, b = bpy.data.objects["Left"], bpy.data.objects["Right"]
    oa, ob_ = storage.load(a), storage.load(b)
    assert (oa.name, ob_.name) == ("Left", "Right")
    assert ob_.rig.armature == modifier_report(b).armature.name_full != oa.rig.armature
    assert ob_.data is oa.data                  # decoded once for both
    assert scan() == before


def test_the_bytes_copies_share_outlive_their_holder(demo, monkeypatch):
    """Rebuilding, clearing or deleting the copy whose Text holds the bytes leaves the other
    copy its data (handed over, never rebuilt)."""
    from skin_collide.addon import storage
    from skin_collide.addon.storage import store

    a, b = demo
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    before = scan()
    rebuilt = []
    real = store.rebuild
    monkeypatch.setattr(store, "rebuild", lambda ob: rebuilt.append(ob.name) or real(ob))
    # The holder built again alone: the copy takes the bytes it shared.
    for ob in bpy.context.scene.objects:
        ob.select_set(ob == a)
    bpy.context.view_layer.objects.active = a
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    tb = storage.text_of(b)
    assert storage.BLOB_KEY in tb and storage.SHARED_KEY not in tb
    fresh_session()
    assert storage.load(b).name == "Right" and not rebuilt
    # Both built again, then the holder cleared: the same.
    for ob in (a, b):
        ob.select_set(True)
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert storage.SHARED_KEY in storage.text_of(b)
    storage.clear(a)
    fresh_session()
    assert storage.load(b).name == "Right" and not rebuilt
    # The holder's object deleted, its data removed with it.
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    bpy.data.objects.remove(a)
    storage.remove_orphans()
    fresh_session()
    assert storage.BLOB_KEY in storage.text_of(b)
    assert storage.load(b).name == "Right" and not rebuilt
    for ob in bpy.context.scene.objects:
        ob.select_set(True)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    assert frames_pairs() == [(f, []) for f, _ in before]    # Right alone: no pair


def test_a_copy_whose_holder_is_gone_is_rebuilt_when_first_needed(demo):
    from skin_collide.addon import storage

    a, b = demo
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    before = scan()
    bpy.data.texts.remove(storage.text_of(a))     # not by the add-on: nothing handed over
    fresh_session()
    assert not storage.has_data(a) and storage.has_data(b) and storage.needs_rebuild(b)
    obj = storage.load(b)
    assert obj.name == "Right" and storage.BLOB_KEY in storage.text_of(b)
    assert storage.SHARED_KEY not in storage.text_of(b) and not storage.needs_rebuild(b)
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert scan() == before


def test_a_copy_linked_alone_brings_the_bytes_it_shares(demo, tmp_path):
    """Linking only the copy whose Text shares the other's bytes: the holder Text comes
    with it (an ID pointer of its Text), and its data loads under its own name."""
    from skin_collide.addon import storage

    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    lib = tmp_path / "lib.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(lib))
    bpy.ops.wm.read_homefile(use_empty=True)
    fresh_session()
    with bpy.data.libraries.load(str(lib), link=True) as (_src, dst):
        dst.objects = ["Right"]
    for ob in dst.objects:
        bpy.context.scene.collection.objects.link(ob)
    right = dst.objects[0]
    text = storage.text_of(right)
    assert text is not None and text.library is not None and storage.inherited(right)
    assert storage.SHARED_KEY in text and not storage.needs_rebuild(right)
    obj = storage.load(right)
    assert obj.name == right.name_full and obj.rig.armature.startswith("Right_rig")
