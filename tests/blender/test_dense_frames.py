"""Issue 16: dense frames (very many colliding pairs in a pose that is not degenerate).
The exact tests run in blocks (memory-bound otherwise); a capped live query stops counting
once the cap is passed and says "more than N"; every other path stays exact."""
import numpy as np
import pytest
from test_self_collision import as_set, elbow_fold, position_ids

from skin_collide.core import aabb_tree as sc
from skin_collide.core import procedural, scan, skinning
from skin_collide.core.aabb_tree import query as q
from skin_collide.core.aabb_tree import self_traversal


@pytest.fixture(scope="module")
def tube():
    rig = procedural.tube_rig(rings=30, segments=16, n_bones=6, length=2.0, radius=0.3)
    weld = position_ids(rig.rest_positions)
    return rig, weld, sc.build(rig.rest_positions, rig.triangles, weld)


def test_blocks_and_early_stop_of_the_self_tree(tube, monkeypatch):
    rig, weld, tree = tube
    pos = skinning.lbs_rig(rig, elbow_fold(rig))
    full = sc.self_pairs(tree, pos, rig.triangles, weld)
    assert len(full) > 40
    monkeypatch.setattr(self_traversal, "EXACT_BLOCK", 64)    # many blocks
    monkeypatch.setattr(self_traversal, "LEVEL_BLOCK", 3)
    st = {}
    again = sc.self_pairs(tree, pos, rig.triangles, weld, stats=st, enough=lambda p: False)
    assert np.array_equal(again, full) and st["stopped"] is False
    assert np.array_equal(sc.self_pairs(tree, pos, rig.triangles, weld), full)
    st = {}
    part = sc.self_pairs(tree, pos, rig.triangles, weld, stats=st,
                         enough=lambda p: len(p) > 10)
    assert st["stopped"] is True and 10 < len(part) < len(full)
    assert as_set(part) <= as_set(full)
    assert np.all(part[:, 0] < part[:, 1])


def test_prefix_blocks_of_a_dense_frame_cover_every_candidate(tube, monkeypatch):
    """Past the budget the traversal goes a prefix at a time; taken to the end, its blocks
    are exactly the candidates of the level-by-level traversal."""
    rig, weld, tree = tube
    pos = skinning.lbs_rig(rig, elbow_fold(rig))
    tris = np.asarray(rig.triangles, np.intp)
    boxes = q.frame_boxes(tree, pos, tris, tree.weld_ids)
    sa, sb, tests = q.candidate_leaf_pairs(tree, boxes)
    monkeypatch.setattr(self_traversal, "EXACT_BLOCK", 16)
    for budget in (8, 100, 10 ** 9):
        counts = {"box_tests": 0}
        blocks = list(q._capped_leaf_blocks(tree, boxes, budget, counts))
        assert all(a.size <= 16 for a, _ in blocks)
        ga = np.concatenate([a for a, _ in blocks])
        gb = np.concatenate([b for _, b in blocks])
        assert as_set(np.stack([ga, gb], 1)) == as_set(np.stack([sa, sb], 1))
        assert ga.size == sa.size                                   # each one once
        assert counts.get("prefix", False) == (budget < 10 ** 9)
        if budget == 10 ** 9:
            assert counts["box_tests"] == tests


def test_a_dense_frame_tests_at_most_the_budget(tube):
    """A capped query tests at most `budget` candidate pairs: then its pairs are a subset
    and it says dense; under the budget, or uncapped, it is exact."""
    rig, weld, tree = tube
    pos = skinning.lbs_rig(rig, elbow_fold(rig))
    st = {}
    full = sc.self_pairs(tree, pos, rig.triangles, weld, stats=st)
    n_candidates = st["triangle_tests"]
    assert st["dense"] is False and st["stopped"] is False and n_candidates > 200
    for budget in (1, 50, n_candidates // 2):
        st = {}
        part = sc.self_pairs(tree, pos, rig.triangles, weld, stats=st, budget=budget,
                             enough=lambda p: False)
        assert st["dense"] is True and st["stopped"] is True
        assert st["triangle_tests"] == budget                 # the work, counted
        assert as_set(part) <= as_set(full) and len(part) <= len(full)
    st = {}
    again = sc.self_pairs(tree, pos, rig.triangles, weld, stats=st, budget=n_candidates)
    assert np.array_equal(again, full)
    assert st["dense"] is False and st["stopped"] is False
    assert st["triangle_tests"] == n_candidates


def test_cross_pairs_in_blocks(tube, monkeypatch):
    rig, weld, tree = tube
    other = procedural.tube_rig(rings=14, segments=10, n_bones=4, length=1.5, radius=0.2)
    tree2 = sc.build(other.rest_positions, other.triangles, position_ids(other.rest_positions))
    rng = np.random.default_rng(4)
    pa = skinning.lbs_rig(rig, procedural.random_pose(rig, rng, translate=0.1))
    pb = skinning.lbs_rig(other, procedural.random_pose(other, rng, translate=0.1))
    pb += pa.mean(axis=0) - pb.mean(axis=0)
    whole = sc.cross_pairs(tree, pa, rig.triangles, tree2, pb, other.triangles)
    monkeypatch.setattr(self_traversal, "EXACT_BLOCK", 50)
    blocks = sc.cross_pairs(tree, pa, rig.triangles, tree2, pb, other.triangles)
    assert len(whole) > 0 and np.array_equal(whole, blocks)
    assert as_set(whole) == as_set(scan.brute_force_pairs(pa, rig.triangles, pb,
                                                          other.triangles))


def test_report_json_keeps_lines_short():
    """The panel stores its scan report in a Text, whose from_string is quadratic in a
    line's length: a capped frame's pairs go on several lines (still the same JSON)."""
    import json

    from skin_collide.core.report import writing as report

    frames = [{"frame": 1, "pairs": [["a b", i, "日本", i + 1] for i in range(20000)],
               "ms": 1.5, "pairs_total": 30000, "truncated": True},
              {"frame": 2, "pairs": [["a b", 1, "日本", 2]], "ms": 0.5}]
    doc = {"objects": ["a b", "日本"], "complete": True, "frames": frames}
    text = report.dumps(doc)
    assert json.loads(text) == doc
    lines = text.splitlines()
    assert max(map(len, lines)) < 50 * report.PAIRS_PER_LINE
    assert any(line.startswith('{"frame": 2') for line in lines)   # small frames: one line


bpy = pytest.importorskip("bpy")


@pytest.fixture
def folded(registered_addon):
    """One generated character folded onto itself, built, self-collision on."""
    import math

    from blender_helpers import selected_demo

    a, b = selected_demo(bpy)
    for ob in bpy.context.scene.objects:
        ob.select_set(ob == a)
    arm = next(m.object for m in a.modifiers if m.type == "ARMATURE")
    arm.animation_data_clear()
    for k, pb in enumerate(arm.pose.bones):
        pb.rotation_mode = "XYZ"
        pb.rotation_euler = (math.radians(80) if k else 0.0, 0.0, 0.0)
    bpy.context.view_layer.update()
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    yield a
    bpy.ops.wm.read_homefile(use_empty=True)


@pytest.mark.blender
def test_a_dense_live_frame_stops_counting_and_says_more_than(folded, monkeypatch):
    from skin_collide.addon import session

    scene = bpy.context.scene
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    full = session.live_result(scene)
    assert not full.more_than and full.n_pairs > 30
    everything = set(full.polygon_pairs)
    monkeypatch.setattr(session, "MAX_PAIRS", 5)
    monkeypatch.setattr(self_traversal, "EXACT_BLOCK", 8)   # stop early in a small frame
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert res.more_than and "more than 5" in res.warning
    assert 5 < res.n_pairs < full.n_pairs               # a lower bound, found quickly
    assert len(res.polygon_pairs) == 5 and set(res.polygon_pairs) <= everything
    # Scan Frame Range keeps exact counts (its report lists them).
    f = scene.frame_current
    assert bpy.ops.skin_collide.scan(use_scene_range=False, frame_start=f, frame_end=f) \
        == {"FINISHED"}
    assert scene.skin_collide.frame_counts[0].pairs == full.n_pairs


@pytest.mark.blender
def test_a_dense_live_frame_tests_a_budget_and_says_so(folded, monkeypatch):
    """More candidates than the live budget: Refresh tests only that many and says
    "dense frame"; its pairs are a subset; Scan Frame Range stays exact."""
    from skin_collide.addon import session

    scene = bpy.context.scene
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    full = session.live_result(scene)
    assert not full.more_than and not full.dense and full.n_pairs > 30
    assert full.count_text == str(full.n_pairs)
    seen = []
    real = q.self_pairs

    def counted(*args, **kw):
        st = kw.get("stats")
        out = real(*args, **kw)
        seen.append(dict(st) if st is not None else None)
        return out

    monkeypatch.setattr(q, "CANDIDATE_BUDGET", 60)
    monkeypatch.setattr(sc, "self_pairs", counted)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert seen and seen[-1]["dense"] and seen[-1]["triangle_tests"] == 60
    assert res.more_than and res.dense
    assert "dense frame" in res.warning and "Scan Frame Range counts them all" in res.warning
    assert res.n_pairs < full.n_pairs and res.count_text == f"at least {res.n_pairs}"
    assert set(res.polygon_pairs) <= set(full.polygon_pairs)
    f = scene.frame_current
    assert bpy.ops.skin_collide.scan(use_scene_range=False, frame_start=f, frame_end=f) \
        == {"FINISHED"}
    assert scene.skin_collide.frame_counts[0].pairs == full.n_pairs


@pytest.mark.blender
def test_a_dense_frame_between_objects_stops_counting_too(registered_addon, monkeypatch):
    from blender_helpers import selected_demo

    from skin_collide.addon import session
    from skin_collide.core import scan as core_scan
    from skin_collide.core.query import multi

    a, b = selected_demo(bpy, build=True)
    scene = bpy.context.scene
    monkeypatch.setattr(core_scan.between, "BOX_PAIRS_MAX", 0)    # through the stacked traversal
    monkeypatch.setattr(core_scan.between, "DEEP_SHARE", float("inf"))
    monkeypatch.setattr(multi, "MULTI_CHUNK", 4)          # in many small steps
    monkeypatch.setattr(multi, "CAPPED_CHUNK", 4)         # (the live ones too)
    for f in range(8, 25):
        scene.frame_set(f)
        assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
        full = session.live_result(scene)
        if full.n_pairs > 12:
            break
    assert full.n_pairs > 12 and not full.more_than
    monkeypatch.setattr(session, "MAX_PAIRS", 3)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert res.more_than and "more than 3" in res.warning
    assert 3 < res.n_pairs < full.n_pairs
    assert set(res.polygon_pairs) <= set(full.polygon_pairs)
    # A dense frame: more triangle tests than the live budget. Only that many are made.
    monkeypatch.setattr(session, "MAX_PAIRS", 20000)
    monkeypatch.setattr(multi, "DENSE_TESTS_MIN", 5)
    monkeypatch.setattr(multi, "DENSE_TESTS_PER_TRIANGLE", 0.0)
    monkeypatch.setattr(multi, "DENSE_HIT_SHARE", 1000.0)  # few hits: not dense, exact
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert not res.dense and not res.more_than and res.polygon_pairs == full.polygon_pairs
    monkeypatch.setattr(multi, "DENSE_HIT_SHARE", 0.0)
    seen = []
    real = multi.collide_many

    def counted(*args, **kw):
        out, st = real(*args, **kw)
        seen.append(st)
        return out, st

    monkeypatch.setattr(multi, "collide_many", counted)
    assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
    res = session.live_result(scene)
    assert seen[-1].triangle_tests == 5 and seen[-1].extra["dense"]
    assert res.dense and res.more_than and "dense frame" in res.warning
    assert res.n_pairs < full.n_pairs and res.count_text == f"at least {res.n_pairs}"
    assert set(res.polygon_pairs) <= set(full.polygon_pairs)
    bpy.ops.wm.read_homefile(use_empty=True)
