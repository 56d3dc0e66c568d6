"""Ground truth in strong random poses on EVERY shared asset (issue 7), not the shipped
actions: 170° twists about random axes, per-axis bone scale 0.6–1.5, small bone
translations (a quarter of the median bone length at most), set on the armatures by the
test. Per asset, two poses: the first at the
asset's own place, the second with both characters moved 1 km from the origin
(1000, −1000, 500 m). In each pose:

* self-collision of all the asset's skinned meshes together (pairs within a mesh and
  between parts of one armature);
* the asset's biggest mesh against a copy on its own armature, turned a quarter and, in
  each pose, moved so that the two meshes' centroids coincide (they interpenetrate), each
  in its own random pose.

The reference is Blender's ``BVHTree.overlap`` (epsilon 0) on the EVALUATED loop triangles
in world space, with adjacency removed by keys computed here independently of the product
(`weld_keys`: same armature, same armature-space rest position, same normalized weights by
bone name). EVERY disagreement is judged in exact rational arithmetic on the float64
coordinates, none is sampled: zero missed pairs (a pair only Blender reports must be
exactly disjoint: its float32 arithmetic), and a pair only we report must exactly
intersect or touch within `TOUCH` × max(1, |coordinates|) (each triangle grown by that
much from its centroid: a few tens of float32 ulps of the coordinates; Blender's test
skips touching and coplanar contacts).
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from blender_helpers import random_blender_pose
from conftest import ASSET_FILES
from test_triangles import reference as exact_intersect

pytestmark = [pytest.mark.asset, pytest.mark.blender]

#: Touch tolerance of the judge, relative to max(1, |coordinate|) (scene units): 4e-6,
#: i.e. 4 µm for a character at the origin, 4 mm at 1 km (float32's ulp there: 61 µm).
TOUCH = 4e-6
FAR = np.array([1000.0, -1000.0, 500.0])


def weld_keys(rigs) -> list[np.ndarray]:
    """Per rig, (V,) int64 keys, equal ⇔ same armature, same armature-space rest position
    (float64, exactly) and same normalized weights per bone name (to 1e-9). Written for
    the test, apart from core.welds: a reference filter that welded too much would hide
    misses."""
    names = sorted({n for r in rigs for n in r.bone_names})
    col = {n: i for i, n in enumerate(names)}
    arms = {}
    rows = []
    for k, r in enumerate(rigs):
        V = r.n_vertices
        W = np.zeros((V, len(names) + 1))
        vert = np.repeat(np.arange(V), np.diff(r.weight_ptr))
        cols = np.array([col[r.bone_names[b]] for b in r.weight_bone], dtype=np.int64)
        np.add.at(W, (vert, cols), r.weight_value)
        total = W.sum(axis=1)
        static = total <= 1e-4                     # Blender leaves these in place
        W[static] = 0.0
        W[static, -1] = 1.0
        W[~static] /= total[~static, None]
        arm = arms.setdefault(r.armature, len(arms)) if r.armature else -(k + 1)
        rows.append(np.hstack([np.full((V, 1), float(arm)), r.rest_armature_positions(),
                               np.round(W, 9)]))
    allrows = np.concatenate(rows)
    inv = np.unique(allrows, axis=0, return_inverse=True)[1].reshape(-1)
    out, s = [], 0
    for r in rigs:
        out.append(inv[s:s + r.n_vertices].astype(np.int64))
        s += r.n_vertices
    return out


def drawn_triangles(ob, dg) -> np.ndarray:
    me = ob.evaluated_get(dg).data
    me.calc_loop_triangles()
    t = np.empty(len(me.loop_triangles) * 3, dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", t)
    return t.reshape(-1, 3)


def reference_pairs(pos, tris, keys, self_collision: bool) -> set:
    """Blender's overlap as {(i, j, a, b)} (i ≤ j; a < b when i == j), minus pairs of
    triangles sharing a key (adjacent: a vertex, a weld, or a seam of one armature)."""
    from mathutils.bvhtree import BVHTree

    trees = [BVHTree.FromPolygons(p.tolist(), t.tolist(), all_triangles=True, epsilon=0.0)
             for p, t in zip(pos, tris)]
    n = len(pos)
    jobs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if self_collision:
        jobs += [(i, i) for i in range(n)]
    out = set()
    for i, j in jobs:
        raw = trees[i].overlap(trees[j])
        if not raw:
            continue
        p = np.asarray(raw, dtype=np.int64)
        if i == j:
            p = np.unique(np.sort(p, axis=1), axis=0)
            p = p[p[:, 0] != p[:, 1]]
        ka, kb = keys[i][tris[i][p[:, 0]]], keys[j][tris[j][p[:, 1]]]
        p = p[~np.any(ka[:, :, None] == kb[:, None, :], axis=(1, 2))]
        out |= {(i, j, a, b) for a, b in p.tolist()}
    return out


def meets(A, B, grow=0.0) -> bool:
    A, B = A.copy(), B.copy()
    if grow:
        eps = grow * max(1.0, float(np.abs(A).max()), float(np.abs(B).max()))
        for T in (A, B):
            out = T - T.mean(axis=0)
            n = np.linalg.norm(out, axis=1, keepdims=True)
            T += eps * out / np.where(n > 0, n, 1.0)
    return bool(exact_intersect(A[0:1], A[1:2], A[2:3], B[0:1], B[1:2], B[2:3])[0])


def check(sc, meshes, dg, self_collision: bool, tag: str) -> tuple[int, int, int]:
    """Our pairs against the reference, every disagreement judged. Returns (Blender pairs,
    ours-only touches, Blender-only float32 artifacts)."""
    pos, poses = sc.evaluate(dg)
    tris = [drawn_triangles(m, dg) for m in meshes]
    for m, ours_t, t in zip(meshes, sc.triangles, tris):
        assert np.array_equal(ours_t, t), (tag, m.name, "not the drawn triangles")
    res, _, _ = sc.query(pos, poses)
    ours = set()
    for i, j, p in res:
        for a, b in p.tolist():
            ours.add((i, j, min(a, b), max(a, b)) if i == j else (i, j, a, b))
    keys = weld_keys([o.rig for o in sc.objects])
    theirs = reference_pairs(pos, tris, keys, self_collision)
    return judge(theirs, ours, pos, tris, tag)


def judge(theirs: set, ours: set, pos, tris, tag: str) -> tuple[int, int, int]:
    """Our pairs {(i, j, a, b)} against Blender's, judged exactly on the triangles
    (`pos[i][tris[i][a]]`): no pair Blender reports that meets is missed, and a pair only
    we report meets exactly or touches within `TOUCH`. Returns (Blender's pairs, ours only,
    Blender's only)."""
    def tri(i, a):
        return pos[i][tris[i][a]]

    only_b = sorted(theirs - ours)
    only_o = sorted(ours - theirs)
    missed = [q for q in only_b if meets(tri(q[0], q[2]), tri(q[1], q[3]))]
    extra = [q for q in only_o if not meets(tri(q[0], q[2]), tri(q[1], q[3]))
             and not meets(tri(q[0], q[2]), tri(q[1], q[3]), grow=TOUCH)]
    assert missed == [], (tag, len(missed), missed[:5])
    assert extra == [], (tag, len(extra), extra[:5])
    return len(theirs), len(only_o), len(only_b)


@pytest.mark.parametrize("asset", ASSET_FILES or ["(none)"])
def test_strong_random_poses_equal_blender(bpy_module, assets_dir, asset):
    from skin_collide.addon import extract, files, scanner

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    import scenes

    bpy = bpy_module
    t_start = time.perf_counter()
    files.load_file(str(assets_dir / asset))
    scene = bpy.context.scene
    meshes = extract.skinned_meshes(scene)
    assert meshes
    arms = list({extract.modifier_report(m).armature.name: extract.modifier_report(m).armature
                 for m in meshes}.values())
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    arm = extract.modifier_report(ob).armature
    for a in arms:
        a.animation_data_clear()
    dg = bpy.context.evaluated_depsgraph_get()
    c = extract.evaluated_positions(ob, dg).mean(axis=0)
    d = c - np.array(arm.matrix_world.translation)
    turned = np.array([-d[1], d[0], 0.0])
    offset = tuple(float(x) for x in (d - turned) * np.array([1.0, 1.0, 0.0]))
    ob2, arm2 = scenes.duplicate_character(ob, arm, "copy", offset=offset, turn=math.pi / 2)
    arm2.animation_data_clear()
    everyone = arms + [arm2]
    base = {a.name: a.matrix_world.copy() for a in everyone}
    selfscan = scanner.Scanner(meshes, mode="on-demand", self_collision=True)
    pairscan = scanner.Scanner([ob, ob2], mode="on-demand")
    rng = np.random.default_rng(sum(map(ord, asset)))
    # Bone translations of at most a quarter of the median bone length (0.05 at most):
    # glTF armatures scaled ×100 would otherwise throw parts metres apart.
    lengths = [b.length for b in arm.data.bones]
    shift = min(0.05, 0.25 * float(np.median(lengths)))
    totals = np.zeros((2, 3), int)
    for k, far in enumerate((False, True)):
        for a in everyone:
            random_blender_pose(a, rng, max_angle=math.radians(170), scale=(0.6, 1.5),
                                translate=shift)
            m = base[a.name].copy()
            if far:
                m.translation = m.translation + type(m.translation)(FAR.tolist())
            a.matrix_world = m
        bpy.context.view_layer.update()
        # The copy's mesh centred on the original's in this pose (a random pose throws a
        # hand or a tail anywhere): the two then interpenetrate on every asset.
        dg = bpy.context.evaluated_depsgraph_get()
        move = (extract.evaluated_positions(ob, dg).mean(axis=0)
                - extract.evaluated_positions(ob2, dg).mean(axis=0))
        m = arm2.matrix_world.copy()
        m.translation = m.translation + type(m.translation)(move.tolist())
        arm2.matrix_world = m
        bpy.context.view_layer.update()
        dg = bpy.context.evaluated_depsgraph_get()
        if far:
            p = extract.evaluated_positions(ob, dg)
            assert np.abs(p).max() > 900.0
        totals[0] += check(selfscan, meshes, dg, True, f"{asset} self pose {k}")
        totals[1] += check(pairscan, [ob, ob2], dg, False, f"{asset} copies pose {k}")
    print(f"{asset}: self (Blender pairs, ours-only touches, Blender-only) {totals[0].tolist()}, "
          f"copies {totals[1].tolist()}; {time.perf_counter() - t_start:.1f} s")
    assert totals[1, 0] > 0, "the copies never met: the test would prove nothing"
