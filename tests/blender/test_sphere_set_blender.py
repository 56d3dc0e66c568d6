"""Sphere sets in Blender (pip bpy, the demo's two tube characters): *Build Sphere Set*
builds the panel's number of spheres per character and stores it in the .blend; the data
survives save and reload; the scan on it equals the sphere-tree scan; *Show Spheres*
draws the set posed; the panel's Method enum offers `sphere-set`; the threaded build an
artist runs (worker thread, modal loop, Esc, errors) is driven without a window."""
import json

import numpy as np
import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """Every test here runs with the add-on registered."""


@pytest.fixture
def demo():
    from blender_helpers import selected_demo

    yield selected_demo(bpy)
    bpy.ops.wm.read_homefile(use_empty=True)


def frames_of(report_text: str):
    return [(f["frame"], f["pairs"]) for f in json.loads(report_text)["frames"]]


def test_build_store_reload_and_scan_like_the_sphere_tree(demo, tmp_path, monkeypatch,
                                                         cheap_union_search):
    from skin_collide.addon import storage
    from skin_collide.core import scan as core_scan

    # Object pairs with few triangles where their boxes meet skip the trees: not here.
    monkeypatch.setattr(core_scan.between, "BOX_PAIRS_MAX", 0)
    monkeypatch.setattr(core_scan.between, "DEEP_SHARE", float("inf"))

    scene = bpy.context.scene
    s = scene.skin_collide
    s.sphere_count = 12
    s.self_collision = True
    assert bpy.ops.skin_collide.build_sphere_set() == {"FINISHED"}
    objs = {ob.name: storage.load(ob) for ob in demo}
    for name, obj in objs.items():
        assert obj.method == "sphere-set", (name, obj.reason)
        assert obj.data.set_radii.size == 12
        assert obj.data.tri_sphere.shape == (obj.rig.n_triangles,)
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    with_set = s.report.as_string()
    assert set(json.loads(with_set)["refit"].values()) == {"sphere-set"}
    # Saved and reloaded: the same set, not stale, the same scan without a rebuild.
    path = tmp_path / "set.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(path))
    scene = bpy.context.scene
    for name, before in objs.items():
        ob = bpy.data.objects[name]
        assert storage.has_data(ob) and storage.stale_reason(ob) == ""
        after = storage.load(ob)
        assert after.method == "sphere-set"
        assert np.array_equal(after.data.set_centers, before.data.set_centers)
        assert np.array_equal(after.data.set_radii, before.data.set_radii)
        assert np.array_equal(after.data.leaf_tris, before.data.leaf_tris)
    scene.skin_collide.report.from_string("")
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    assert frames_of(scene.skin_collide.report.as_string()) == frames_of(with_set)
    # The sphere tree's scan of the same frames: the same pairs.
    for ob in (bpy.data.objects["Left"], bpy.data.objects["Right"]):
        ob.select_set(True)
    scene.skin_collide.method = "sphere-tree"
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert {storage.load(bpy.data.objects[n]).method for n in objs} == {"sphere-tree"}
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    ref = scene.skin_collide.report.as_string()
    assert frames_of(ref) == frames_of(with_set)
    assert sum(len(p) for _, p in frames_of(ref)) > 0


def quick_fit(monkeypatch):
    """The top-down set in place of the variational fit (where the fit is not tested)."""
    from skin_collide.core.methods.sphere_set import method as ss

    real = ss.fit_set
    monkeypatch.setattr(ss, "fit_set", lambda v, t, count, seed=0, progress=None,
                        should_stop=None, builder=None: real(v, t, count, seed,
                                                             builder="top-down"))


def test_show_spheres_draws_the_set_posed(demo, monkeypatch):
    from skin_collide.addon import overlay, session, storage
    from skin_collide.core.methods import registry
    from skin_collide.core.methods.base import Frame

    quick_fit(monkeypatch)
    scene = bpy.context.scene
    scene.skin_collide.sphere_count = 10
    assert bpy.ops.skin_collide.build_sphere_set() == {"FINISHED"}
    objs = {ob.name: storage.load(ob) for ob in demo}
    scene.frame_set(18)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert res.modes == ["sphere-set", "sphere-set"]
    _, lines = overlay.result_arrays(res, objs, True, 99)       # the deepest level: the set
    leaves = sum(int((o.data.hier.first_child < 0).sum()) for o in objs.values())
    assert lines.shape == (leaves * 3 * 24 * 2, 3)
    # Each posed sphere holds the evaluated vertices of its triangles.
    m = registry.get("sphere-set")
    for k, name in enumerate(res.names):
        o = objs[name]
        pos = res.positions[k]
        d = m.drawable(o.rig, o.data, Frame(pos, o.rig.triangles, res.poses[k]), 99)
        h = o.data.hierarchy
        for i, n in enumerate(np.nonzero(o.data.hier.first_child < 0)[0]):
            tris = h.leaf_tris[h.leaf_ptr[n]:h.leaf_ptr[n + 1]]
            v = pos[o.rig.triangles[tris].ravel()]
            assert (np.linalg.norm(v - d.centers[i], axis=1) <= d.radii[i]).all()


def test_panel_offers_the_method_and_the_count():
    from skin_collide.panels import main_panel  # noqa: F401 - registered with the add-on

    s = bpy.context.scene.skin_collide
    from skin_collide.addon.properties import method_choices

    assert "sphere-set" in method_choices()
    s.method = "sphere-set"                 # the menu takes it
    s.method = "sphere-tree"
    assert s.sphere_count == 64 and s.bl_rna.properties["sphere_count"].hard_min == 1


def test_nothing_selected_is_an_error_that_changes_nothing(demo):
    for ob in demo:
        ob.select_set(False)
    with pytest.raises(RuntimeError):
        bpy.ops.skin_collide.build_sphere_set()
    assert all(ob.skin_collide.data is None for ob in demo)


def test_build_button_and_a_missing_disk_cache_keep_the_count(demo, tmp_path, monkeypatch):
    """*Build Collision Data* with the Method set to sphere-set takes the panel's count;
    data in a disk cache that goes missing is rebuilt with the same count and seed."""
    import shutil

    from skin_collide.addon import storage

    scene = bpy.context.scene
    s = scene.skin_collide
    s.method = "sphere-set"
    s.sphere_count = 7
    s.sphere_seed = 2
    path = tmp_path / "cached.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    scene.skin_collide.data_location = "DISK"
    quick_fit(monkeypatch)       # the fit itself is not what is tested here
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    a = bpy.data.objects["Left"]
    built = storage.load(a)
    assert built.method == "sphere-set" and built.data.set_radii.size == 7
    assert (tmp_path / "skin_collide_cache").is_dir()
    bpy.ops.wm.save_mainfile()
    shutil.rmtree(tmp_path / "skin_collide_cache")
    bpy.ops.wm.open_mainfile(filepath=str(path))
    a = bpy.data.objects["Left"]
    again = storage.load(a)                      # rebuilt: the cache is gone
    assert again.method == "sphere-set"
    assert again.data.set_radii.size == 7 and int(again.data.set_info[3]) == 2
    assert np.array_equal(again.data.set_centers, built.data.set_centers)


@pytest.mark.parametrize("preserve_volume", [False, True])
def test_posed_sets_hold_blenders_vertices_10_km_out(demo, monkeypatch, preserve_volume):
    """Blender's own evaluated (float32) vertices, the characters moved 10 km out by root
    motion, animation frames and random strong poses (170° twists, bone scale 0.5-2):
    every refitted node of the set's hierarchy holds its polygons' vertices."""
    import math

    from blender_helpers import random_blender_pose

    from skin_collide.addon import scanner
    from skin_collide.core.methods import registry
    from skin_collide.core.methods.base import Frame

    quick_fit(monkeypatch)       # the refit is what is tested here
    arms = [ob.modifiers["Armature"].object for ob in demo]
    for ob in demo:
        ob.modifiers["Armature"].use_deform_preserve_volume = preserve_volume
    for arm in arms:
        arm.location = tuple(np.array(arm.location) + np.array([1e4, 1e4, 5e3]))
    bpy.context.view_layer.update()
    sc = scanner.Scanner(list(demo), method="sphere-set")
    assert [o.method for o in sc.objects] == ["sphere-set"] * 2
    assert all(o.data.preserve_volume == preserve_volume for o in sc.objects)
    m = registry.get("sphere-set")
    rng = np.random.default_rng(7)
    for state in range(5):
        if state < 2:
            bpy.context.scene.frame_set(8 + 10 * state)
        else:
            for arm in arms:
                arm.animation_data_clear()
                random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
            bpy.context.view_layer.update()
        pos, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        for o, p, pose, tris in zip(sc.objects, pos, poses, sc.triangles):
            assert np.abs(p).max() > 5e3
            t = o.data.hier
            v = m.volumes(o.rig, o.data, Frame(p, tris, pose))
            v.ensure(np.arange(t.n_nodes))
            seg = np.repeat(np.arange(t.n_nodes), np.diff(t.node_vert_ptr))
            d = np.linalg.norm(p[t.node_verts] - v.centers[seg], axis=1)
            assert (d <= v.radii[seg]).all(), (state, o.name, (d - v.radii[seg]).max())


# --- The threaded build (invoke/modal), without a window --------------------------------
# Headless, `invoke` runs `execute`; the worker thread and the modal loop an artist gets
# are driven here directly: a fake operator (its report, its stored meshes) and the fake
# window manager of test_stepping around the real `_Job`, `modal` and `_store`.


def _threaded(meshes, count):
    """(fake operator, fake context, job) as `invoke` leaves them, the thread not started."""
    from types import SimpleNamespace

    from test_stepping import FakeWM

    from skin_collide.addon import extract
    from skin_collide.operators import sphere_set as op_mod

    Op = op_mod.SKINCOLLIDE_OT_build_sphere_set
    job = op_mod._Job([extract.rig_from_object(ob) for ob in meshes], count, 0)
    # `_expand`: what `_prepare` sets (one object per mesh from the shared builds); these
    # rigs are the meshes' own.
    op = SimpleNamespace(_job=job, _meshes=list(meshes), _timer="timer", _expand=list,
                         cancel_message=Op.cancel_message, reports=[])
    op.report = lambda kind, msg: op.reports.append((kind, msg))
    op._end = lambda context: Op._end(op, context)
    op._store = lambda context, m, objs: Op._store(op, context, m, objs)
    op.modal = lambda context, event: Op.modal(op, context, event)
    context = SimpleNamespace(window_manager=FakeWM(), scene=bpy.context.scene)
    return op, context, job


def _event(kind):
    from types import SimpleNamespace

    return SimpleNamespace(type=kind)


def test_threaded_build_runs_in_the_worker_and_stores_when_done(demo, monkeypatch):
    """The modal loop keeps running while the worker fits, passes other events through,
    reports progress, and stores the sets only once the worker is done."""
    import threading

    from skin_collide.addon import storage
    from skin_collide.operators import sphere_set as ops_set

    quick_fit(monkeypatch)
    release = threading.Event()
    real = ops_set.prepare_set

    def held(rig, count, seed, progress=None, should_stop=None):
        release.wait()                      # the worker stays busy until the test says
        return real(rig, count, seed, progress=progress, should_stop=should_stop)

    monkeypatch.setattr(ops_set, "prepare_set", held)
    op, context, job = _threaded(demo, 9)
    job.thread.start()
    assert op.modal(context, _event("MOUSEMOVE")) == {"PASS_THROUGH"}
    assert op.modal(context, _event("TIMER")) == {"RUNNING_MODAL"}
    assert not any(storage.has_data(ob) for ob in demo)
    release.set()
    job.thread.join()
    assert op.modal(context, _event("TIMER")) == {"FINISHED"}
    for ob in demo:
        obj = storage.load(ob)
        assert obj.method == "sphere-set" and obj.data.set_radii.size == 9
    assert ("update", 2.0) in context.window_manager.log
    assert context.window_manager.log[-2:] == [("timer-",), ("end",)]
    assert [k for k, _ in op.reports] == [{"INFO"}]


def test_threaded_build_escape_stops_the_fit_and_changes_nothing(demo, monkeypatch,
                                                                cheap_union_search):
    """Esc: the operator cancels at once with its warning, the running fit sees its
    should_stop say yes and returns, and nothing is stored."""
    import threading

    from skin_collide.addon import storage
    from skin_collide.operators import sphere_set as ops_set

    started, stopped_seen = threading.Event(), []
    real = ops_set.prepare_set

    def watched(rig, count, seed, progress=None, should_stop=None):
        def progress2(*args):
            started.set()
            if progress is not None:
                progress(*args)

        def should_stop2():
            yes = should_stop()
            if yes:
                stopped_seen.append(True)
            return yes

        return real(rig, count, seed, progress=progress2, should_stop=should_stop2)

    monkeypatch.setattr(ops_set, "prepare_set", watched)
    op, context, job = _threaded(demo, 12)
    job.thread.start()
    started.wait()                          # the first fit is running
    assert op.modal(context, _event("ESC")) == {"CANCELLED"}
    assert op.reports == [({"WARNING"}, op.cancel_message)] and job.stop
    job.thread.join()
    assert stopped_seen, "the fit never saw the Esc"
    assert len(job.objects) <= 1            # the second character was never started
    assert not any(storage.has_data(ob) for ob in demo)


def test_threaded_build_error_is_one_line_and_changes_nothing(demo, monkeypatch):
    from skin_collide.addon import storage
    from skin_collide.operators import sphere_set as ops_set

    def broken(rig, count, seed, progress=None, should_stop=None):
        raise ValueError("the mesh is broken\nsecond line")

    monkeypatch.setattr(ops_set, "prepare_set", broken)
    op, context, job = _threaded(demo, 9)
    job.thread.start()
    job.thread.join()
    assert op.modal(context, _event("TIMER")) == {"CANCELLED"}
    assert op.reports == [({"ERROR"}, "the mesh is broken")]
    assert not any(storage.has_data(ob) for ob in demo)
