"""core.aabb_tree: exact self pairs from the balanced AABB tree.

* equals brute force on generated rigs in strong random poses and a 170° elbow fold,
  with the rest triangles and with quads re-split differently from the rest;
* equals the old sphere-tree self query on MakeHuman and Cesium Man (animation frames and
  strong random poses);
* the float32 broad phase never drops a pair whose float64 boxes overlap (coordinates up
  to 10 km, boxes touching exactly);
* structure: every non-empty slot holds one triangle, seeds never touch and never repeat.
"""
import math

import numpy as np
import pytest

from skin_collide.core import aabb_tree as sc
from skin_collide.core import procedural, scan, skinning, triangles, welds
from skin_collide.core.aabb_tree import query as q
from skin_collide.core.aabb_tree import tree as sc_tree
from skin_collide.core.bounds import refit
from skin_collide.core.hierarchy import traversal
from skin_collide.core.methods.sphere_tree import SphereVolumes
from skin_collide.core.rig import Pose
from skin_collide.core.scan import carry as sc_carry


def position_ids(rest: np.ndarray) -> np.ndarray:
    """(V,) one id per distinct rest position: the weld ids of a rig with one bone per
    position (split seams welded), for building trees from bare arrays."""
    return np.unique(rest, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def as_set(pairs):
    return set(map(tuple, np.asarray(pairs).reshape(-1, 2).tolist()))


def old_self_pairs(obj, pos, tris):
    """The sphere-tree self query `scan.query_frame` ran before (bottom-up refit)."""
    spheres = SphereVolumes(obj.data.tree, eager=refit.refit_bottom_up(obj.data.tree, tris, pos))
    keys = obj.vertex_keys[tris]

    def test(a, b):
        hit = np.zeros(a.size, dtype=bool)
        far = np.nonzero(~welds.adjacent_pairs(keys, a, b))[0]
        hit[far] = triangles.triangle_pairs_intersect(pos, tris, a[far], pos, tris, b[far])
        return hit

    pairs, _ = traversal.collide(spheres, None, test)
    return pairs


def elbow_fold(rig, angle=math.radians(170)):
    """Fold the middle bone of a chain by `angle` about X (the tube bends back on itself)."""
    J = rig.n_bones
    local = np.repeat(np.eye(4)[None], J, 0)
    c, s = math.cos(angle), math.sin(angle)
    local[J // 2, :3, :3] = [[1, 0, 0], [0, c, -s], [0, s, c]]
    return _chain_pose(rig, local)


def resplit(rig, rng, fraction=0.5):
    """The rig's triangles with a random `fraction` of its quads split along the other
    diagonal (triangle indices keep their polygon, as Blender's re-split does)."""
    tris = rig.triangles.copy()
    poly = rig.tri_polygon
    counts = np.bincount(poly)
    first = np.flatnonzero(np.r_[True, poly[1:] != poly[:-1]])
    quads = first[counts[poly[first]] == 2]
    flip = quads[rng.random(quads.size) < fraction]
    a, b, c = tris[flip, 0], tris[flip, 1], tris[flip, 2]
    d = tris[flip + 1, 2]                      # (a, b, c), (a, c, d) -> (a, b, d), (b, c, d)
    tris[flip] = np.stack([a, b, d], 1)
    tris[flip + 1] = np.stack([b, c, d], 1)
    return tris


@pytest.fixture(scope="module")
def tube():
    rig = procedural.tube_rig(rings=30, segments=16, n_bones=6, length=2.0, radius=0.3)
    return rig, position_ids(rig.rest_positions), sc.build(rig.rest_positions, rig.triangles,
                                                            position_ids(rig.rest_positions))


def test_equals_brute_force_strong_poses(tube):
    rig, weld, tree = tube
    rng = np.random.default_rng(7)
    poses = [elbow_fold(rig)] + [procedural.random_pose(rig, rng) for _ in range(4)]
    total = 0
    for pose in poses:
        pos = skinning.lbs_rig(rig, pose)
        ours = sc.self_pairs(tree, pos, rig.triangles, weld)
        bf = scan.brute_force_pairs(pos, rig.triangles, keys=weld[rig.triangles])
        assert as_set(ours) == as_set(bf)
        assert np.all(ours[:, 0] < ours[:, 1])
        total += len(bf)
    assert total > 0                                  # the poses do fold the tube


def test_equals_brute_force_with_resplit_quads(tube):
    rig, weld, tree = tube
    rng = np.random.default_rng(3)
    total = 0
    for pose in [elbow_fold(rig), procedural.random_pose(rig, rng),
                 procedural.random_pose(rig, rng)]:
        pos = skinning.lbs_rig(rig, pose)
        tris = resplit(rig, rng)
        st = {}
        ours = sc.self_pairs(tree, pos, tris, weld, stats=st)
        bf = scan.brute_force_pairs(pos, tris, keys=weld[tris])
        assert as_set(ours) == as_set(bf)
        assert len(np.unique(ours, axis=0)) == len(ours)   # each pair once
        total += len(bf)
        assert st["resplit"] > 0                      # rest-adjacent pairs came apart
    assert total > 0


def test_seams_welded_and_coincident_vertices():
    """Split vertices at one position (a glTF seam) count as shared."""
    rig = procedural.tube_rig(rings=12, segments=10, n_bones=4)
    # Duplicate the vertices of one column and re-point the triangles using them on one side.
    V = rig.rest_positions.shape[0]
    col = np.arange(0, V, 10)
    rest = np.concatenate([rig.rest_positions, rig.rest_positions[col]])
    remap = np.arange(V)
    remap[col] = V + np.arange(col.size)
    tris = rig.triangles.copy()
    side = rig.rest_positions[tris].mean(axis=1)[:, 1] < 0
    tris[side] = remap[tris[side]]
    weld = position_ids(rest)
    tree = sc.build(rest, tris, weld)
    rng = np.random.default_rng(5)
    for _ in range(3):
        pose = procedural.random_pose(rig, rng)
        base = skinning.lbs_rig(rig, pose)
        pos = np.concatenate([base, base[col]])
        ours = sc.self_pairs(tree, pos, tris, weld)
        assert as_set(ours) == as_set(scan.brute_force_pairs(pos, tris, keys=weld[tris]))
    # Without welding, the split seam's triangles would count as non-adjacent.
    assert weld.max() + 1 == V


def test_query_frame_uses_it_and_equals_old_query(tube):
    rig, weld, _ = tube
    obj = scan.prepare(rig)
    rng = np.random.default_rng(11)
    for pose in (elbow_fold(rig), procedural.random_pose(rig, rng)):
        pos = skinning.lbs_rig(rig, pose)
        res = scan.query_frame([obj], [pos], [pose], self_collision=True)
        ours = res.pairs[0][2] if res.pairs else np.zeros((0, 2), np.int64)
        assert as_set(ours) == as_set(old_self_pairs(obj, pos, res.triangles[0]))
    assert isinstance(obj.self_tree, sc.SelfTree)


@pytest.mark.parametrize("T", [1, 2, 3, 5])
def test_tiny_meshes(T):
    rng = np.random.default_rng(T)
    pos = rng.random((3 * T, 3))
    tris = np.arange(3 * T).reshape(T, 3)
    weld = np.arange(3 * T)
    tree = sc.build(pos, tris, weld)
    for _ in range(5):
        p = rng.random((3 * T, 3))
        assert as_set(sc.self_pairs(tree, p, tris, weld)) == \
            as_set(scan.brute_force_pairs(p, tris, keys=weld[tris]))


def test_structure(tube):
    rig, weld, tree = tube
    T = rig.n_triangles
    assert np.array_equal(np.sort(tree.tri_slot), np.unique(tree.tri_slot))
    assert np.array_equal(tree.slot_tri[tree.tri_slot], np.arange(T))
    assert (tree.slot_tri >= 0).sum() == T
    # Balanced: the two halves of every node differ by at most one triangle.
    occ = (tree.slot_tri >= 0).astype(int)
    for level in range(tree.height):
        n = occ.reshape(1 << (level + 1), -1).sum(axis=1).reshape(-1, 2)
        assert np.all(np.abs(n[:, 0] - n[:, 1]) <= 1)
    keys = weld[rig.triangles]
    for level, (a, b) in enumerate(tree.seeds):
        assert np.all(a < b)
        assert np.unique(a.astype(np.int64) * (1 << level) + b).size == a.size
        if level == tree.height:
            ta, tb = tree.slot_tri[a], tree.slot_tri[b]
            assert np.all(ta >= 0) and np.all(tb >= 0)
            assert not welds.adjacent_pairs(keys, ta, tb).any()


def test_float32_boxes_never_drop_float64_overlaps():
    """Outward float32 bounds enclose float64 values, and two float64 boxes that overlap
    (or touch exactly) overlap in float32, up to 10 km from the origin."""
    rng = np.random.default_rng(0)
    for scale in (1e-3, 1.0, 37.0, 1e4):
        n = 20000
        x = (rng.random((n, 3)) - 0.5) * 2 * scale
        x[: n // 4] = np.round(x[: n // 4])                    # exactly representable too
        lo, hi = q.outward_f32(x)
        assert np.all(lo.astype(np.float64) <= x) and np.all(x <= hi.astype(np.float64))
        # Triangle A; triangle B touches A's box exactly (its min equals A's max on an axis)
        # or overlaps it by a few float64 ulps: float64 boxes overlap in every case.
        a = (rng.random((n, 3, 3)) - 0.5) * 2 * scale
        b = a + (rng.random((n, 3, 3)) - 0.5) * 1e-3 * scale
        ax = rng.integers(0, 3, n)
        r = np.arange(n)
        shift = a[r, :, ax].max(axis=1) - b[r, :, ax].min(axis=1)
        shift = shift - np.abs(shift) * 1e-15 * rng.integers(0, 2, n)
        b[r, :, ax] += shift[:, None]
        pos = np.concatenate([a.reshape(-1, 3), b.reshape(-1, 3)])
        ta = np.arange(3 * n).reshape(n, 3)
        tb = ta + 3 * n
        lo64 = lambda t: pos[t].min(axis=1)               # noqa: E731
        hi64 = lambda t: pos[t].max(axis=1)               # noqa: E731
        ov64 = np.all((lo64(ta) <= hi64(tb)) & (lo64(tb) <= hi64(ta)), axis=1)
        assert ov64.mean() > 0.5
        box = q.triangle_boxes(pos, np.concatenate([ta, tb]))
        ov32 = q.boxes_overlap(box[:n], box[n:][:, q.SWAP])
        assert np.all(ov32[ov64])
        # Sanity: clearly apart boxes are rejected, so the test can fail.
        far = q.triangle_boxes(pos + np.array([3 * scale, 0, 0]) * (np.arange(pos.shape[0]) >= 3 * n)[:, None],
                               np.concatenate([ta, tb]))
        assert not q.boxes_overlap(far[:n], far[n:][:, q.SWAP]).any()


# -- shared assets -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def asset_frames():
    """Per asset: the prepared object and a few (positions, label) frames: animation frames
    evaluated by Blender and strong random poses skinned by core.skinning."""
    from conftest import ASSETS

    if ASSETS is None:
        pytest.skip("../shared/assets is not present on this machine")
    bpy = pytest.importorskip("bpy")
    from skin_collide.addon import animation, extract, files

    out = {}
    for asset in ("makehuman_default.blend", "cesium_man.glb"):
        files.load_file(str(ASSETS / asset))
        meshes = extract.skinned_meshes(bpy.context.scene)
        ob = max(meshes, key=lambda o: len(o.data.polygons))
        obj = scan.prepare(extract.rig_from_object(ob))
        arm = extract.modifier_report(ob).armature
        frames = animation.action_frames(arm.animation_data.action)
        frames = [frames[len(frames) // 3], frames[(2 * len(frames)) // 3]]
        items = []
        for f in frames:
            bpy.context.scene.frame_set(f)
            dg = bpy.context.evaluated_depsgraph_get()
            items.append((extract.evaluated_positions(ob, dg), f"frame {f}"))
        rng = np.random.default_rng(2)
        # Every bone up to 30°, 10% of bones up to 170° (stronger poses crumple MakeHuman's
        # 160 bones into ~25k pairs, which only makes the old query slow to compare with).
        for k in range(2):
            pose = procedural.random_pose(obj.rig, rng, max_angle=math.radians(30),
                                          scale_range=(0.9, 1.1))
            d = pose.deform.copy()
            strong = rng.random(obj.rig.n_bones) < 0.10
            R = procedural.random_rotation(rng, math.radians(170), int(strong.sum()))
            d[strong, :3, :3] = d[strong, :3, :3] @ R
            pose = Pose(d, pose.armature_world, pose.mesh_world)
            items.append((skinning.lbs_rig(obj.rig, pose), f"random {k}"))
        out[asset] = (obj, items)
        bpy.ops.wm.read_homefile(use_empty=True)
    return out


@pytest.mark.asset
@pytest.mark.blender
@pytest.mark.parametrize("asset", ["makehuman_default.blend", "cesium_man.glb"])
def test_equals_old_sphere_query_on_assets(asset_frames, asset):
    obj, items = asset_frames[asset]
    total = 0
    for pos, label in items:
        ours = sc_carry.object_self_pairs(obj, pos)
        old = old_self_pairs(obj, pos, obj.rig.triangles)
        assert as_set(ours) == as_set(old), label
        total += len(old)
    assert total > 0


def test_frame_levels_refuse_another_topology(tube):
    """A tree refitted on a frame with another number of triangles would name the wrong
    triangles in every slot: `frame_levels` says so instead."""
    rig, _weld, tree = tube
    levels = sc.frame_levels(tree, rig.rest_positions, rig.triangles)
    assert levels and levels[0].shape[0] >= 1
    for other in (rig.triangles[:-1], np.vstack([rig.triangles, rig.triangles[:1]])):
        with pytest.raises(ValueError, match="built for"):
            sc.frame_levels(tree, rig.rest_positions, other)


def test_cross_pairs_equal_brute_force(tube):
    rig, weld, tree = tube
    other = procedural.tube_rig(rings=14, segments=10, n_bones=4, length=1.5, radius=0.2)
    w2 = position_ids(other.rest_positions)
    tree2 = sc.build(other.rest_positions, other.triangles, w2)
    rng = np.random.default_rng(4)
    total = 0
    for _ in range(4):
        pa = skinning.lbs_rig(rig, procedural.random_pose(rig, rng, translate=0.1))
        pb = skinning.lbs_rig(other, procedural.random_pose(other, rng, translate=0.1))
        pb += pa.mean(axis=0) - pb.mean(axis=0)            # make them meet
        for (ta, a, pos_a), (tb, b, pos_b) in [((tree, rig, pa), (tree2, other, pb)),
                                               ((tree2, other, pb), (tree, rig, pa))]:
            ours = sc.cross_pairs(ta, pos_a, a.triangles, tb, pos_b, b.triangles)
            bf = scan.brute_force_pairs(pos_a, a.triangles, pos_b, b.triangles)
            assert as_set(ours) == as_set(bf)
            total += len(bf)
    assert total > 0


def _box_pairs_brute_force(tree_a, fa, tree_b, fb):
    """Every leaf slot pair (slot of A, slot of B) whose float32 rows overlap, by testing
    all of them (`boxes_overlap` on the leaf rows of two `FrameBoxes`), sorted."""
    from skin_collide.core.aabb_tree.boxes import boxes_overlap

    ra, rb = fa.rows[tree_a.height][0], fb.rows[tree_b.height][1]
    ok = boxes_overlap(ra[:, None, :], rb[None, :, :])
    return np.argwhere(ok)


@pytest.mark.parametrize("mask_block", [8192, 5])
@pytest.mark.parametrize("rings_b", [3, 6, 14, 40])
def test_cross_candidates_equal_brute_force_at_any_height_difference(rings_b, mask_block,
                                                                     monkeypatch):
    """The cross traversal descends one tree alone, several levels at a time, once the
    other is at its leaves (`aabb_tree.cross._JUMP`): the slot pairs whose boxes overlap
    are those of testing every leaf pair, whichever tree is the deeper (height
    differences 1 to 4: one jump of 1, 2 or 3 levels, or a jump and a remainder), and
    with moved triangles only the pairs holding one (`cross_candidates_moved`); the
    jumps' and steps' tests made a block of node pairs at a time (`_MASK_BLOCK`: one
    block, or many)."""
    from skin_collide.core.aabb_tree import cross

    monkeypatch.setattr(cross, "_MASK_BLOCK", mask_block)
    a = procedural.tube_rig(rings=40, segments=12, n_bones=4, length=1.5, radius=0.2)
    b = procedural.tube_rig(rings=rings_b, segments=6, n_bones=2, length=0.6, radius=0.25)
    trees = [sc.build(r.rest_positions, r.triangles, position_ids(r.rest_positions))
             for r in (a, b)]
    rng = np.random.default_rng(rings_b)
    pos = [skinning.lbs_rig(r, procedural.random_pose(r, rng, translate=0.1)) for r in (a, b)]
    pos[1] += pos[0].mean(axis=0) - pos[1].mean(axis=0)     # make them meet
    heights = set()
    for i, j in ((0, 1), (1, 0)):
        (ra, ta, pa), (rb, tb, pb) = ((a, b)[i], trees[i], pos[i]), ((a, b)[j], trees[j], pos[j])
        heights.add(ta.height - tb.height)
        fa = sc.frame_boxes(ta, pa, ra.triangles, position_ids(pa))
        fb = sc.frame_boxes(tb, pb, rb.triangles, position_ids(pb))
        want = _box_pairs_brute_force(ta, fa, tb, fb)
        assert len(want) > 0
        la = sc.frame_levels(ta, pa, ra.triangles)
        lb = sc.frame_levels(tb, pb, rb.triangles)
        sa, sb = cross.cross_candidates(ta, la, tb, lb)
        got = np.stack([sa, sb], axis=1)
        assert np.array_equal(got[np.lexsort((sb, sa))], want)
        for share in (0.05, 0.5):
            ma = rng.random(ta.n_triangles) < share
            mb = rng.random(tb.n_triangles) < share
            sa, sb = sc.cross_candidates_moved(ta, fa, ma, tb, fb, mb)
            moved = (ma[np.take(ta.slot_tri, want[:, 0])]
                     | mb[np.take(tb.slot_tri, want[:, 1])])
            got = np.stack([sa, sb], axis=1)
            assert np.array_equal(got[np.lexsort((sb, sa))], want[moved])
    assert max(abs(h) for h in heights) >= 1


def test_culling_stats_count_the_surface_that_reaches_an_exact_test(tube):
    """`tested_triangles` (the surface the culling does not remove, as bench_self reports
    it) covers every triangle of every reported pair and no more than the mesh; at rest
    nothing intersects, the folded elbow does."""
    rig, weld, tree = tube
    counts = []
    for pose in (None, elbow_fold(rig)):
        pos = rig.rest_positions if pose is None else skinning.lbs_rig(rig, pose)
        st = {}
        pairs = sc.self_pairs(tree, pos, rig.triangles, weld, stats=st)
        assert 0 <= st["tested_triangles"] <= rig.n_triangles
        assert np.unique(pairs).size <= st["tested_triangles"]
        assert st["triangle_tests"] == 0 or st["tested_triangles"] > 0
        counts.append((st["tested_triangles"], len(pairs)))
    assert counts[0][1] == 0 and counts[1][1] > 0


def _seeds_with_isin(tree):
    """The per-level seeds as built before issue 29: all levels' touching pairs at once
    and `np.isin` against them."""
    from skin_collide.core.aabb_tree.tree import rest_adjacent_pairs
    H = tree.height
    ta, tb = rest_adjacent_pairs(tree.rest_keys)
    sa, sb = tree.tri_slot[ta], tree.tri_slot[tb]
    sa, sb = np.minimum(sa, sb), np.maximum(sa, sb)
    occupied = tree.slot_tri >= 0
    touch, occ = [], []
    for level in range(H + 1):
        a, b = sa >> (H - level), sb >> (H - level)
        m = a != b
        touch.append(np.unique(a[m].astype(np.int64) * (1 << level) + b[m]))
        occ.append(occupied.reshape(1 << level, -1).any(axis=1))
    seeds = [(np.zeros(0, np.intp), np.zeros(0, np.intp))]
    for level in range(1, H + 1):
        n_prev, n = 1 << (level - 1), 1 << level
        pa, pb = touch[level - 1] // n_prev, touch[level - 1] % n_prev
        ca = np.concatenate([(2 * pa[:, None] + np.array([0, 0, 1, 1])).ravel(),
                             2 * np.arange(n_prev)])
        cb = np.concatenate([(2 * pb[:, None] + np.array([0, 1, 0, 1])).ravel(),
                             2 * np.arange(n_prev) + 1])
        keep = ~np.isin(ca.astype(np.int64) * n + cb, touch[level]) & occ[level][ca] & occ[level][cb]
        seeds.append((ca[keep].astype(np.intp), cb[keep].astype(np.intp)))
    return seeds


def test_chunked_seed_build_equals_isin_build(monkeypatch, tube):
    """Issue 29: seeds generated per chunk of touching pairs (a sorted search instead of
    `np.isin`) are the same arrays in the same order, whatever the chunk size."""
    from skin_collide.core.aabb_tree import tree as st
    rig, weld, tree = tube
    want = _seeds_with_isin(tree)
    for chunk in (4, 64, 1 << 20):
        monkeypatch.setattr(st, "_SEED_CHUNK", chunk)
        t = st.build(rig.rest_positions, rig.triangles, weld)
        assert len(t.seeds) == len(want)
        for (a, b), (wa, wb), (fa, fb), (ga, gb) in zip(t.seeds, want, t.seed_cols,
                                                        tree.seed_cols):
            assert np.array_equal(a, wa) and np.array_equal(b, wb)
            assert a.dtype == wa.dtype and b.dtype == wb.dtype
            assert np.array_equal(fa, ga) and np.array_equal(fb, gb)
    assert sum(a.size for a, _ in want) > 0


def _chain_pose(rig, local):
    """The pose of a bone chain from per-bone local transforms (J, 4, 4)."""
    return Pose(procedural.chain_deform(rig, local), np.eye(4), np.eye(4))


def _rotation(rng, max_angle):
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    a = rng.uniform(-max_angle, max_angle)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    m = np.eye(4)
    m[:3, :3] = np.eye(3) + math.sin(a) * K + (1 - math.cos(a)) * K @ K
    return m


def test_carried_pairs_equal_full_query_on_pose_edits(monkeypatch):
    """Issue 29 item 1: with carried pairs, each pose edit re-checks only the triangles
    whose positions (or split) changed; the answer equals the full query and brute force
    after every edit: one bone at a time, undo to an earlier pose, weights changed
    between edits (some vertices moved alone), re-split quads, and switching between two
    characters. Both the complete and the capped (`enough`) paths."""
    rigs = [procedural.tube_rig(rings=30, segments=16, n_bones=6, length=2.0, radius=0.3),
            procedural.tube_rig(rings=22, segments=12, n_bones=5, length=1.6, radius=0.25)]
    full = [scan.prepare(r) for r in rigs]
    carry = [[scan.prepare(r) for r in rigs] for _ in range(2)]   # complete, capped
    stores = [sc_carry.Carried(), sc_carry.Carried()]              # what each carries
    seen = []
    real = sc.self_pairs

    def spy(*args, **kw):
        if kw.get("moved") is not None:
            seen.append(int(np.count_nonzero(kw["moved"])))
        return real(*args, **kw)

    monkeypatch.setattr(sc, "self_pairs", spy)
    rng = np.random.default_rng(29)
    local = []
    for r in rigs:
        m = np.repeat(np.eye(4)[None], r.n_bones, 0)
        c, s = math.cos(math.radians(170)), math.sin(math.radians(170))
        m[r.n_bones // 2, 1:3, 1:3] = [[c, -s], [s, c]]          # folded: pairs to carry
        local.append(m)
    history = [[m.copy()] for m in local]
    carried_total = 0
    for step in range(36):
        i = 0 if step % 6 else 1                                  # switch characters
        rig = rigs[i]
        kind = step % 4
        if kind == 1 and len(history[i]) > 2:                     # undo
            local[i] = history[i][int(rng.integers(len(history[i]) - 1))].copy()
        else:                                                     # one bone, mostly the end
            j = int(rng.choice(rig.n_bones, p=np.r_[np.ones(rig.n_bones - 2),
                                                    4, 4] / (rig.n_bones + 6)))
            local[i][j] = local[i][j] @ _rotation(rng, math.radians(40))
        history[i].append(local[i].copy())
        pos = skinning.lbs_rig(rig, _chain_pose(rig, local[i]))
        if kind == 2:                                             # weights edited
            some = rng.choice(pos.shape[0], 5, replace=False)
            pos[some] += rng.normal(scale=0.02, size=(5, 3))
        tris = resplit(rig, rng, 0.05) if kind == 3 else rig.triangles
        want = sc_carry.object_self_pairs(full[i], pos, tris)
        bf = scan.brute_force_pairs(pos, tris, keys=full[i].vertex_keys[tris])
        assert as_set(want) == as_set(bf), step
        got = sc_carry.object_self_pairs(carry[0][i], pos, tris, carried=stores[0])
        assert np.array_equal(got, want), step
        got = sc_carry.object_self_pairs(carry[1][i], pos, tris, enough=lambda p: False,
                                         carried=stores[1])
        assert np.array_equal(got, want), step
        last = stores[0].frame(carry[0][i])
        carried_total += len(want) if seen and seen[-1] < tris.shape[0] else 0
        assert last is not None and last.pairs is got or np.array_equal(last.pairs, want)
        # What is kept (updated in place where triangles moved) is bit for bit a fresh
        # frame's: positions, triangles, boxes of every level and keys.
        fresh = q.frame_boxes(last.tree, pos, np.asarray(tris, np.intp), last.tree.weld_ids)
        assert np.array_equal(last.positions, pos) and np.array_equal(last.tris, tris)
        assert np.array_equal(last.boxes.stack[0], fresh.stack[0])
        assert np.array_equal(last.boxes.stack[1], fresh.stack[1])
        assert np.array_equal(last.boxes.keys, fresh.keys)
        assert np.array_equal(last.boxes.resplit, fresh.resplit)
        for kept_rows, fresh_rows in zip(last.boxes.rows, fresh.rows):
            assert np.array_equal(kept_rows[0], fresh_rows[0])
            assert np.array_equal(kept_rows[1], fresh_rows[1])
    n = rigs[0].n_triangles
    assert len(seen) >= 10 and min(seen) < n // 2         # incremental queries did run
    assert carried_total > 0


def test_carried_pairs_not_kept_from_a_stopped_query():
    """A capped query that stopped is a subset: nothing is carried from it (its frame,
    positions and boxes, is kept: the pairs between objects share it)."""
    rig = procedural.tube_rig(rings=30, segments=16, n_bones=6, length=2.0, radius=0.3)
    obj = scan.prepare(rig)
    carried = sc_carry.Carried()
    pos = skinning.lbs_rig(rig, elbow_fold(rig))
    st = traversal.QueryStats()
    part = sc_carry.object_self_pairs(obj, pos, enough=lambda p: len(p) > 0, stats=st,
                                      carried=carried)
    assert st.extra["stopped"] and carried.frame(obj).pairs is None
    full = sc_carry.object_self_pairs(obj, pos, carried=carried)
    assert as_set(part) <= as_set(full) and carried.frame(obj).pairs is not None
    assert carried.frame(obj).carried is None          # nothing carried from the stopped one


def _edit_bone(rig, deform, j, R):
    """The skinning matrices after rotating bone `j` by R about its posed head: the bone
    and its descendants turn rigidly (one pose edit in the viewport)."""
    sub = np.zeros(rig.n_bones, bool)
    sub[j] = True
    parents = np.asarray(rig.bone_parents)
    for _ in range(rig.n_bones):
        grow = ~sub & (parents >= 0) & sub[np.maximum(parents, 0)]
        if not grow.any():
            break
        sub |= grow
    head = deform[j] @ np.r_[rig.bone_rest[j][:3, 3], 1.0]
    T = np.eye(4)
    T[:3, :3] = R[:3, :3]
    T[:3, 3] = head[:3] - R[:3, :3] @ head[:3]
    out = deform.copy()
    out[sub] = T @ deform[sub]
    return out


@pytest.mark.asset
@pytest.mark.blender
def test_carried_pairs_equal_full_query_on_asset_pose_edits():
    """Issue 29 item 1 on every shared asset: random single-bone pose edits (and undos)
    from a posed start; the carried answer equals the full query after every edit."""
    from conftest import ASSET_FILES, ASSETS

    if ASSETS is None:
        pytest.skip("../shared/assets is not present on this machine")
    bpy = pytest.importorskip("bpy")
    from skin_collide.addon import extract, files

    rng = np.random.default_rng(29)
    incremental = 0
    for asset in ASSET_FILES:
        files.load_file(str(ASSETS / asset))
        meshes = extract.skinned_meshes(bpy.context.scene)
        ob = max(meshes, key=lambda o: len(o.data.polygons))
        full = scan.prepare(extract.rig_from_object(ob))
        carry = scan.prepare(full.rig)
        carried = sc_carry.Carried()
        rig = full.rig
        pose = procedural.random_pose(rig, rng, max_angle=math.radians(30),
                                      scale_range=(1.0, 1.0))
        history = [pose.deform]
        for step in range(8):
            if step % 4 == 3:
                d = history[int(rng.integers(len(history)))]
            else:
                j = int(rng.integers(rig.n_bones))
                d = _edit_bone(rig, history[-1], j, _rotation(rng, math.radians(60)))
            history.append(d)
            pos = skinning.lbs_rig(rig, Pose(d, pose.armature_world, pose.mesh_world))
            want = sc_carry.object_self_pairs(full, pos)
            # (a copy: the kept positions are brought up to date in place)
            kept = carried.frame(carry)
            last = None if kept is None else kept.positions.copy()
            got = sc_carry.object_self_pairs(carry, pos, carried=carried)
            assert np.array_equal(got, want), (asset, step)
            if last is not None and carried.frame(carry) is not None:
                moved = (pos != last).any(axis=1)[rig.triangles].any(axis=1)
                incremental += int(np.count_nonzero(moved) <= sc_carry.CARRY_MAX_MOVED * moved.size)
        bpy.ops.wm.read_homefile(use_empty=True)
    assert incremental > 10


def test_seeds_of_nodes_equals_a_scan_of_all_seeds():
    """The node -> seeds index finds exactly the seeds with a member among the nodes."""
    rig = procedural.tube_rig(rings=30, segments=16, n_bones=6, length=2.0, radius=0.3)
    obj = scan.prepare(rig)
    tree = sc_carry.for_object(obj)
    rng = np.random.default_rng(3)
    for level in range(1, tree.height + 1):
        sa, sb = tree.seeds[level]
        for k in (0, 1, 7, 1 << level):
            nodes = np.unique(rng.integers(0, 1 << level, size=min(k, 1 << level)))
            mask = np.zeros(1 << level, bool)
            mask[nodes] = True
            want = np.flatnonzero(mask[sa] | mask[sb])
            got = sc_tree.seeds_of_nodes(tree, level, nodes)
            assert np.array_equal(np.sort(got), want), (level, k)      # each seed once


def _hint_test(hints, fb):
    """Per seed of the hint triple `hints` (`tree.seed_hints` or `merged_seed_hints`):
    its hinted coordinate's test passes (does not prove the boxes apart), and its boxes
    overlap. A hint is a consistent pair of indices: a face of the node ``ha >> 3`` and
    the opposite face of the node ``hb >> 3``."""
    from skin_collide.core.aabb_tree.boxes import FACES, SWAP
    _, ha, hb = hints
    na, nb = ha >> 3, hb >> 3
    assert np.isin(ha & 7, FACES).all() and np.array_equal(hb & 7, SWAP[ha & 7])
    X, Xs = fb.stack
    flat = X.ravel()
    return flat[ha] + flat[hb] <= 0, q.boxes_overlap(X[na], Xs[nb])


def test_seed_hints_follow_the_frame_and_never_change_the_answer(tube):
    """Issue 29: a seed's first, one-coordinate test uses the coordinate that last
    separated it (the rest one at first). After a query every seed apart in that frame
    is separated by its hint, so a second look at the frame tests fully only the seeds
    that overlap. The answer never depends on the hints: scrambled (but consistent)
    hints give brute force's pairs. A whole frame tests the merged seeds (half seeds
    among them), a carried query the plain seeds of its moved nodes: both kinds."""
    from skin_collide.core.aabb_tree.boxes import FACES, SWAP
    rig, weld, _ = tube
    tree = sc.build(rig.rest_positions, rig.triangles, weld)
    rng = np.random.default_rng(11)
    # Turned 90 degrees about X and far from the origin: the rest's best coordinates
    # mostly point the wrong way (a character turning, a Y-up file).
    turn = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    poses = [elbow_fold(rig)] + [procedural.random_pose(rig, rng) for _ in range(3)]
    stale = {"merged": 0, "plain": 0}
    for pose in poses:
        pos = skinning.lbs_rig(rig, pose) @ turn.T + np.array([3e3, -2e3, 1e3])
        fb = q.frame_boxes(tree, pos, rig.triangles, weld)
        bf = scan.brute_force_pairs(pos, rig.triangles, keys=weld[rig.triangles])
        everything = np.ones(rig.triangles.shape[0], bool)
        for kind, hints, query in (
                ("merged", sc_tree.merged_seed_hints,
                 lambda: sc.self_pairs(tree, pos, rig.triangles, weld)),
                ("plain", sc_tree.seed_hints,
                 lambda: sc.self_pairs(tree, pos, rig.triangles, weld, moved=everything))):
            passed, over = _hint_test(hints(tree), fb)
            assert np.all(passed[over])            # overlapping boxes pass any coordinate
            stale[kind] += np.count_nonzero(passed & ~over)
            first = query()
            passed, over = _hint_test(hints(tree), fb)
            assert np.array_equal(passed, over)    # every apart seed: apart along its hint
            _, ha, hb = hints(tree)
            col = FACES[rng.integers(0, 6, ha.size)]
            ha[:] = (ha >> 3) * 8 + col
            hb[:] = (hb >> 3) * 8 + SWAP[col]
            again = query()
            assert as_set(first) == as_set(bf) == as_set(again), kind
    assert stale["merged"] > 0 and stale["plain"] > 0   # the turned frames staled them


def _leaf_pairs_below(tree, a, b, la, lb):
    """Every leaf slot pair (a < b) below node pairs (a of level la, b of level lb), one
    row per pair below each node pair (repeats kept)."""
    H = tree.height
    da, db = 1 << (H - la), 1 << (H - lb)
    sa = (a[:, None] * da + np.arange(da)).repeat(db, axis=1)
    sb = np.tile(b[:, None] * db + np.arange(db), (1, da))
    sa, sb = sa.ravel(), sb.ravel()
    full = (tree.slot_tri[sa] >= 0) & (tree.slot_tri[sb] >= 0)
    sa, sb = sa[full], sb[full]
    return np.stack([np.minimum(sa, sb), np.maximum(sa, sb)], axis=1)


def test_half_seeds_stand_for_exactly_the_seeds_they_replace(tube):
    """`merged_seed_hints`: the seeds left, those moved down to the first level and the
    half seeds (a node of level l with a node of level l - 1) cover exactly the leaf
    pairs the plain seeds cover, each once; so no merged seed's two nodes touch (no leaf
    pair below them shares a rest key). Half seeds exist, and no seed sits above
    `FIRST_LEVEL`."""
    rig, weld, tree = tube
    with tree.hint_lock:
        ptr, ha, hb = sc_tree.merged_seed_hints(tree)
    H = tree.height
    want, got = [], []
    for level, (a, b) in enumerate(tree.seeds):
        want.append(_leaf_pairs_below(tree, a, b, level, level))
        same = slice(ptr[level], ptr[level + 1])
        half = slice(ptr[H + 1 + level], ptr[H + 2 + level])
        off = 1 << level
        got.append(_leaf_pairs_below(tree, (ha[same] >> 3) - off, (hb[same] >> 3) - off,
                                     level, level))
        if level:
            got.append(_leaf_pairs_below(tree, (ha[half] >> 3) - off,
                                         (hb[half] >> 3) - off // 2, level, level - 1))
            assert np.all((ha[half] >> 3) >= off) and np.all((ha[half] >> 3) < 2 * off)
            assert np.all((hb[half] >> 3) >= off // 2) and np.all((hb[half] >> 3) < off)
    want, got = np.concatenate(want), np.concatenate(got)
    assert len(np.unique(want, axis=0)) == len(want)
    assert len(np.unique(got, axis=0)) == len(got)     # each leaf pair under one seed
    assert as_set(want) == as_set(got)
    keys = weld[rig.triangles]
    t = tree.slot_tri[got]
    assert not q._keys_adjacent(keys, t[:, 0], t[:, 1]).any()
    assert ptr[-1] > ptr[H + 1]                         # some half seeds
    top = min(sc_tree.FIRST_LEVEL, H)                   # none above the first level
    assert ptr[top] == 0 and ptr[H + 1 + top] == ptr[H + 1]


def test_seed_hints_shared_by_threads(tube):
    """Two threads querying one tree at once (each moving the shared hints) get the
    answers each frame has alone."""
    from concurrent.futures import ThreadPoolExecutor
    rig, weld, _ = tube
    tree = sc.build(rig.rest_positions, rig.triangles, weld)
    rng = np.random.default_rng(5)
    frames = [skinning.lbs_rig(rig, procedural.random_pose(rig, rng)) for _ in range(6)]
    frames[0] = skinning.lbs_rig(rig, elbow_fold(rig))
    want = [scan.brute_force_pairs(p, rig.triangles, keys=weld[rig.triangles]) for p in frames]

    def run(k):
        return [sc.self_pairs(tree, frames[(k + i) % 6], rig.triangles, weld) for i in range(12)]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(run, range(2)))
    for k, got in enumerate(results):
        for i, pairs in enumerate(got):
            assert as_set(pairs) == as_set(want[(k + i) % 6])


def test_stacked_boxes_hold_every_level_in_heap_order(tube):
    """`boxes.stacked_boxes`: level l is rows [2**l, 2**(l+1)), each the min of its two
    children, empty slots +inf in the first six columns, pads -inf; rows with lo and -hi
    exchanged stack to the stack with its columns exchanged (the query's swapped rows);
    `frame_stack` (the leaves made in slot order) is the same stack bit for bit."""
    from skin_collide.core.aabb_tree import boxes as bx
    from skin_collide.core.aabb_tree import query as q
    rig, weld, tree = tube
    pos = skinning.lbs_rig(rig, elbow_fold(rig)) + 500.0
    rows = bx.triangle_boxes(pos, rig.triangles)
    lo, hi = bx.outward_f32(pos[rig.triangles])
    assert np.array_equal(rows[:, bx.LO], lo.min(axis=1))
    assert np.array_equal(rows[:, bx.NEG_HI], -hi.max(axis=1))
    assert np.all(rows[:, 3::4] == -np.inf)
    assert np.array_equal(bx.swap_halves(rows), rows[:, bx.SWAP])
    X = bx.stacked_boxes(tree, rows)
    Xs = bx.stacked_boxes(tree, rows[:, bx.SWAP])
    assert np.array_equal(X[1:, bx.SWAP], Xs[1:])
    assert np.array_equal(bx.frame_stack(tree, pos, rig.triangles), X)
    fb = q.frame_boxes(tree, pos, np.asarray(rig.triangles, np.intp), weld)
    assert np.array_equal(fb.stack[0], X) and np.array_equal(fb.stack[1][1:], Xs[1:])
    leaf = np.full((tree.n_slots, 8), np.inf, np.float32)
    leaf[:, 3::4] = -np.inf
    leaf[tree.tri_slot] = rows
    level = leaf
    for lv in range(tree.height, -1, -1):
        assert np.array_equal(X[1 << lv:2 << lv], level), lv
        level = np.minimum(level[0::2], level[1::2])
    assert all(np.array_equal(a, X[1 << lv:2 << lv])
               for lv, a in enumerate(bx.level_boxes(tree, rows)))


def test_outward_rounding_steps_like_nextafter():
    """`boxes._step_f32` (integer steps on float32 bit patterns) gives np.nextafter's bits
    for every float32 class: normal and subnormal of both signs, both zeros, the largest
    finite values, infinities and NaN; so `outward_f32` brackets its input."""
    from skin_collide.core.aabb_tree import boxes as bx
    rng = np.random.default_rng(4)
    x = rng.standard_normal(100_000) * 10.0 ** rng.uniform(-46, 39, 100_000)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, -3.4028235e38,
               1e-45, -1e-45, 1.1754944e-38, -1.1754944e-38, 1.0, -1.0]
    with np.errstate(over="ignore"):
        y = np.concatenate([x, special]).astype(np.float32)
        for down in (True, False):
            got = bx._step_f32(y.copy(), down)
            want = np.nextafter(y, np.float32(-np.inf if down else np.inf))
            assert np.array_equal(got.view(np.int32), want.view(np.int32)), down
    p = rng.standard_normal((1000, 3)) * 1e3
    lo, hi = bx.outward_f32(p)
    assert np.all(lo < p) and np.all(p < hi)


def test_hints_of_another_row_layout_are_not_used(tube):
    """Seed columns stored by a version with rows [lo, -hi, pads] pair coordinates of
    different axes under [lo, pad, -hi, pad]: `seed_arrays` refuses them and starts from
    x, and the answer stays brute force's; the box-tree method stores its columns under
    new names, so that old stored columns are never read back."""
    from skin_collide.core.aabb_tree.boxes import SWAP
    from skin_collide.core.methods.box_tree import BoxTreeData
    rig, weld, tree = tube
    old_swap = np.array([3, 4, 5, 0, 1, 2, 6, 7])
    cols = []
    for a, b in tree.seeds:
        c = np.full(a.size, 4, np.intp)                # old -hi_y: now -hi_x
        cols.append((a * 8 + c, b * 8 + old_swap[c]))
    old = sc_tree.SelfTree(tree.height, tree.n_slots, tree.tri_slot, tree.slot_tri,
                           tree.seeds, tree.rest_keys, tree.adj_ptr, tree.adj_idx,
                           tree.weld_ids, cols)
    na, nb, _, ha, hb = sc_tree.seed_arrays(old)
    assert np.array_equal(ha, 8 * na) and np.array_equal(hb, 8 * nb + SWAP[0])
    _, ha, hb = sc_tree.merged_seed_hints(old)          # made from the same first hints
    assert np.isin(ha & 7, [0, SWAP[0]]).all() and np.array_equal(hb & 7, SWAP[ha & 7])
    pos = skinning.lbs_rig(rig, elbow_fold(rig))
    bf = scan.brute_force_pairs(pos, rig.triangles, keys=weld[rig.triangles])
    assert as_set(sc.self_pairs(old, pos, rig.triangles, weld)) == as_set(bf)
    arrays = BoxTreeData(tree).arrays()
    assert "face_a.0" in arrays and not any(k.startswith("col_") for k in arrays)
    renamed = {k.replace("face_", "col_"): v for k, v in arrays.items()}
    assert BoxTreeData.from_arrays(renamed).tree.seed_cols is None
    back = BoxTreeData.from_arrays(arrays).tree
    assert all(np.array_equal(x, y) for p, q_ in zip(back.seed_cols, tree.seed_cols)
               for x, y in zip(p, q_))


def test_resplit_pairs_each_once(tube):
    """`_resplit_pairs`: the rest-adjacent pairs with no frame key in common whose boxes
    overlap, each pair once (t < u), with either or both triangles re-split."""
    rig, weld, tree = tube
    rng = np.random.default_rng(8)
    pos = skinning.lbs_rig(rig, elbow_fold(rig))
    seen = 0
    for fraction in (0.3, 1.0):
        tris = np.asarray(resplit(rig, rng, fraction), np.intp)
        fb = q.frame_boxes(tree, pos, tris, weld)
        ta, tb = q._resplit_pairs(tree, fb.keys, fb, fb.resplit)
        got = np.stack([ta, tb], axis=1)
        assert np.all(ta < tb) and len(np.unique(got, axis=0)) == len(got)
        a, b = sc_tree.rest_adjacent_pairs(tree.rest_keys)
        keys = fb.keys
        apart = ~(keys[a][:, :, None] == keys[b][:, None, :]).any(axis=(1, 2))
        lo, hi = boxes_lo_hi(pos, tris)
        over = np.all((lo[a] <= hi[b]) & (lo[b] <= hi[a]), axis=1)
        want = {(int(x), int(y)) for x, y in zip(a[apart & over], b[apart & over])}
        assert as_set(got) == want
        seen += len(want)
    assert seen > 0


def boxes_lo_hi(pos, tris):
    """Per triangle the float32 outward box (lo, hi), (T, 3) each."""
    from skin_collide.core.aabb_tree import boxes as bx
    lo, hi = bx.outward_f32(pos[tris])
    return lo.min(axis=1), hi.max(axis=1)
