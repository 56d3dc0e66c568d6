"""`core.scan.prepare_all`: several characters built on a thread pool give the objects
(and answers) that building them one at a time gives. Pure numpy; no bpy."""
from __future__ import annotations

import math

import numpy as np

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.methods import registry
from skin_collide.core.scan import carry as sc_carry


def _rigs():
    return [procedural.tube_rig(rings=18 + 2 * k, segments=10, n_bones=4 + k % 2,
                                length=1.5, radius=0.25, name=f"Tube{k}")
            for k in range(4)]


def test_threaded_builds_equal_one_at_a_time(monkeypatch):
    rigs = _rigs()
    serial = scan.prepare_all(rigs, workers=1, self_trees=True)
    threads = []
    real = scan.prepare

    def spy(rig, method=registry.DEFAULT, **kw):
        import threading

        threads.append(threading.get_ident())
        return real(rig, method, **kw)

    monkeypatch.setattr(scan.objects, "prepare", spy)
    pooled = scan.prepare_all(rigs, workers=3, self_trees=True)
    assert len(threads) == 4
    assert [o.name for o in pooled] == [r.name for r in rigs]          # in order
    rng = np.random.default_rng(5)
    pos, poses = [], []
    for k, r in enumerate(rigs):
        pose = procedural.random_pose(r, rng, max_angle=math.radians(170),
                                      scale_range=(0.7, 1.4))
        p = skinning.lbs_rig(r, pose)
        p[:, 0] += 0.3 * k                                              # side by side
        pos.append(p)
        poses.append(pose)
    for a, b in zip(serial, pooled):
        assert a.method == b.method and np.array_equal(a.vertex_keys, b.vertex_keys)
        ta, tb = sc_carry.for_object(a), sc_carry.for_object(b)
        assert b.self_tree is not None                                  # built up front
        assert ta.height == tb.height and np.array_equal(ta.tri_slot, tb.tri_slot)
        assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1])
                   for x, y in zip(ta.seeds, tb.seeds))
    want = scan.query_frame(serial, pos, poses, self_collision=True)
    got = scan.query_frame(pooled, pos, poses, self_collision=True)
    assert [(i, j) for i, j, _ in want.pairs] == [(i, j) for i, j, _ in got.pairs]
    assert all(np.array_equal(p, q) for (_, _, p), (_, _, q) in zip(want.pairs, got.pairs))
    assert want.pairs                                                   # something to compare


def test_one_rig_or_a_progress_method_builds_in_the_caller(monkeypatch):
    import threading

    me = threading.get_ident()
    seen = []

    def spy(r, method=registry.DEFAULT, **kw):
        seen.append((threading.get_ident(), method))
        return r.name                                  # no real build: only who builds

    monkeypatch.setattr(scan.objects, "prepare", spy)
    rigs = _rigs()
    assert scan.prepare_all(rigs[:1], workers=4) == [rigs[0].name]
    progress = next(m.id for m in registry.methods() if m.reports_progress)
    assert scan.prepare_all(rigs, progress, workers=4) == [r.name for r in rigs]
    assert len(seen) == 5 and all(t == me for t, _ in seen)
    seen.clear()
    scan.prepare_all(rigs, workers=2)
    assert len(seen) == 4 and any(t != me for t, _ in seen)         # the pool's threads


def test_copies_of_one_character_share_one_build():
    """A crowd of one character (copies under other names, on other armatures) builds
    once: the copies get the first one's data under their own rigs, and a frame's pairs
    are those of objects built one by one. A rig that differs (another pose of the rest
    mesh, or `unsupported`) builds its own."""
    import dataclasses

    import numpy as np

    from skin_collide.core import procedural, scan, skinning

    base = procedural.tube_rig(rings=10, segments=8, n_bones=3)
    copies = [dataclasses.replace(base, name=f"Fox.{k:03d}", armature=f"Arm.{k:03d}")
              for k in range(3)]
    bent = dataclasses.replace(base, name="Other", rest_positions=base.rest_positions * 1.01)
    odd = dataclasses.replace(base, name="Odd", unsupported=["shape keys"])
    objs = scan.prepare_shared(copies + [bent, odd])
    assert [o.name for o in objs] == ["Fox.000", "Fox.001", "Fox.002", "Other", "Odd"]
    assert objs[1].data is objs[0].data and objs[2].data is objs[0].data
    assert objs[1].rig.armature == "Arm.001"
    assert objs[3].data is not objs[0].data and objs[4].data is not objs[0].data
    assert objs[4].method != objs[0].method          # refitted bottom-up
    from skin_collide.core.rig import Pose

    p0 = procedural.random_pose(base, np.random.default_rng(3))
    poses = []
    for dx in (0.0, 0.05, 0.1):             # the copies a little apart: they cross
        t = np.eye(4)
        t[0, 3] = dx
        poses.append(Pose(p0.deform, t @ p0.armature_world, t @ p0.mesh_world))
    pos = [skinning.lbs_rig(base, p) for p in poses]
    alone = [scan.prepare(r) for r in copies]
    shared = scan.query_frame(objs[:3], pos, poses, self_collision=True)
    apart = scan.query_frame(alone, pos, poses, self_collision=True)
    assert shared.n_pairs > 0
    assert [(i, j, p.tolist()) for i, j, p in shared.pairs] == \
        [(i, j, p.tolist()) for i, j, p in apart.pairs]


def test_copies_share_a_self_tree_made_on_first_use(monkeypatch):
    """Copies built without self trees (a scan without --self) make their exact box tree
    on first use (the self stage, the deep way between characters, clearance): once for
    all copies, whichever copy asks first; a rig that differs makes its own."""
    import dataclasses

    base = procedural.tube_rig(rings=10, segments=8, n_bones=3)
    copies = [dataclasses.replace(base, name=f"Fox.{k:03d}") for k in range(3)]
    other = dataclasses.replace(base, name="Other", rest_positions=base.rest_positions * 1.01)
    objs = scan.prepare_shared(copies + [other])
    assert all(o.self_tree is None for o in objs)
    built = []
    real = sc_carry.aabb_tree.build

    def counting(*args, **kw):
        built.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(sc_carry.aabb_tree, "build", counting)
    tree = sc_carry.for_object(objs[2])                 # a copy asks first
    assert sc_carry.for_object(objs[0]) is tree and sc_carry.for_object(objs[1]) is tree
    assert len(built) == 1
    assert sc_carry.for_object(objs[3]) is not tree and len(built) == 2


def test_copies_made_ready_side_by_side_build_their_tree_once(monkeypatch):
    """Copies asking for their tree from several threads at once (the Build operator makes
    its objects ready side by side) wait for one build of their original's."""
    import dataclasses
    import threading
    import time

    base = procedural.tube_rig(rings=10, segments=8, n_bones=3)
    copies = [dataclasses.replace(base, name=f"Fox.{k:03d}") for k in range(4)]
    objs = scan.prepare_shared(copies)
    built = []
    real = sc_carry.aabb_tree.build

    def slow(*args, **kw):
        built.append(1)
        time.sleep(0.05)                               # long enough for the others to ask
        return real(*args, **kw)

    monkeypatch.setattr(sc_carry.aabb_tree, "build", slow)
    trees = [None] * len(objs)

    def ask(k):
        trees[k] = sc_carry.for_object(objs[k])

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(len(objs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1 and all(t is trees[0] for t in trees)
