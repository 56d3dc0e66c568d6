"""The Build operator builds its characters in batches, one rig per core side by side
(`operators.build.prepare_batch`, `core.scan.prepare_all`); the data is the same as one at
a time, and the modal Build takes one batch per step (Esc is read between steps)."""
import numpy as np
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("registered_addon")]
bpy = pytest.importorskip("bpy")


def _built(monkeypatch, meshes, size: int) -> tuple[list, list]:
    """Build `meshes` with batches of `size`: the batches `prepare_all` got, and each
    mesh's stored data as arrays."""
    from skin_collide.addon import storage
    from skin_collide.core import scan as core_scan
    from skin_collide.core.storage import persist
    from skin_collide.operators import build

    batches = []
    real = getattr(core_scan.prepare_all, "real", core_scan.prepare_all)

    def spy(rigs, *args, **kw):
        batches.append([r.name for r in rigs])
        return real(rigs, *args, **kw)

    spy.real = real
    monkeypatch.setattr(core_scan, "prepare_all", spy)
    monkeypatch.setattr(build, "batch_size", lambda: size)
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    return batches, [persist.all_arrays(storage.load(ob)) for ob in meshes]


def two_characters(demo_pair):
    """The demo pair, its right character made another one (a vertex of its rest mesh
    moved): copies of one character share one build (`core.scan.shared_builds`), and these
    tests count the builds of two."""
    a, b = demo_pair
    b.data.vertices[0].co.x += 1e-3
    b.data.update()
    return a, b


def test_batches_build_the_same_data_as_one_at_a_time(demo_pair, monkeypatch):
    a, b = two_characters(demo_pair)
    one, data_one = _built(monkeypatch, (a, b), 1)
    two, data_two = _built(monkeypatch, (a, b), 2)
    assert one == [[a.name_full], [b.name_full]] and two == [[a.name_full, b.name_full]]
    for x, y in zip(data_one, data_two):
        assert x.keys() == y.keys()
        for k in x:
            if k != "build_seconds":
                np.testing.assert_array_equal(x[k], y[k], err_msg=k)


def test_the_modal_build_takes_one_batch_per_step(demo_pair, monkeypatch):
    from types import SimpleNamespace

    from test_stepping import FakeWM

    from skin_collide.addon import storage
    from skin_collide.operators import build

    a, b = two_characters(demo_pair)
    monkeypatch.setattr(build, "batch_size", lambda: 1)
    Op = build.SKINCOLLIDE_OT_build
    op = SimpleNamespace(reports=[])
    op.report = lambda kind, msg: op.reports.append((kind, msg))
    op._store = lambda context, m, objs: Op._store(op, context, m, objs)
    op._meshes, op._rigs = Op._prepare(op, bpy.context)
    op._objects = []
    context = SimpleNamespace(window_manager=FakeWM(), scene=bpy.context.scene)
    assert Op._step(op, context) is False and len(op._objects) == 1
    assert Op._step(op, context) is True and len(op._objects) == 2
    assert not any(storage.has_data(ob) for ob in (a, b))     # stored only at the end
    Op._finish(op, bpy.context)
    assert all(storage.has_data(ob) for ob in (a, b))
    assert [k for k, _ in op.reports] == [{"INFO"}]
    monkeypatch.setattr(build, "batch_size", lambda: 2)         # both in one step
    op._objects = []
    assert Op._step(op, context) is True and len(op._objects) == 2


def test_copies_of_one_character_build_once(demo_pair, monkeypatch):
    """The demo pair is one character twice: Build makes its data once, and each mesh
    stores that data under its own name."""
    a, b = demo_pair
    batches, (data_a, data_b) = _built(monkeypatch, (a, b), 2)
    assert batches == [[a.name_full]]
    assert storage_names(a, b) == [a.name_full, b.name_full]
    for k in data_a:
        if not k.startswith("rig.") and k != "build_seconds" and k != "name":
            np.testing.assert_array_equal(data_a[k], data_b[k], err_msg=k)


def storage_names(*meshes) -> list[str]:
    from skin_collide.addon import storage

    return [storage.load(ob).name for ob in meshes]
