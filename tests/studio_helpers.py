"""Blender's own answer on the surfaces it draws, read here apart from the product, for the
studio-file tests (modifier stacks around the Armature, rigid props): positions and loop
triangles straight from each object's evaluated mesh, ``BVHTree.overlap`` (epsilon 0, world
space) between and within them, pairs of one mesh sharing a vertex index dropped (the
generated meshes of these tests have no coincident vertices, which the tests check, so
index adjacency is the whole of adjacency there). Every disagreement with our pairs is
judged exactly, as tests/blender/test_strong_poses_blender.py does."""
from __future__ import annotations

import math

import numpy as np
from test_strong_poses_blender import judge, reference_pairs


def evaluated(ob, dg) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """World positions (V, 3) float64, loop triangles (T, 3) and their polygons (T,) of
    `ob`'s evaluated mesh: what the viewport draws."""
    ob_eval = ob.evaluated_get(dg)
    return drawn_arrays(ob_eval.data, ob_eval.matrix_world)


def drawn_arrays(me, matrix_world) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`evaluated` of an evaluated mesh drawn at `matrix_world` (an instance's too)."""
    V = len(me.vertices)
    co = np.empty(V * 3, np.float32)
    me.vertices.foreach_get("co", co)
    M = np.array([list(r) for r in matrix_world], dtype=np.float64)
    pos = co.reshape(V, 3).astype(np.float64) @ M[:3, :3].T + M[:3, 3]
    me.calc_loop_triangles()
    T = len(me.loop_triangles)
    tris = np.empty(T * 3, np.int32)
    poly = np.empty(T, np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    me.loop_triangles.foreach_get("polygon_index", poly)
    return pos, tris.reshape(T, 3), poly


def truth(meshes, dg, self_collision: bool, keys: list | None = None) -> tuple[set, list]:
    """Blender's pairs {(i, j, a, b)} (triangle indices; i ≤ j, a < b when i == j) and
    the evaluated (positions, triangles, polygons) per mesh. Pairs of one mesh sharing a
    vertex are dropped: by index, or by `keys` (per mesh, (V,) vertex keys over the whole
    set, `test_strong_poses_blender.weld_keys`, for meshes with seams; then pairs of two
    meshes sharing a key, parts of one character, are dropped too)."""
    ev = [evaluated(m, dg) for m in meshes]
    if keys is None:        # vertex indices, made distinct across meshes
        offsets = np.cumsum([0] + [e[0].shape[0] for e in ev])
        keys = [np.arange(e[0].shape[0]) + o for e, o in zip(ev, offsets)]
    return reference_pairs([e[0] for e in ev], [e[1] for e in ev], keys, self_collision), ev


def no_coincident_vertices(sc) -> None:
    """The product welds no two vertices of these meshes (so index adjacency, the
    reference's, is its adjacency too)."""
    for o in sc.objects:
        assert np.unique(o.vertex_keys).size == o.rig.n_vertices, o.name


def compare(sc, meshes, dg, self_collision: bool, tag: str, keys: list | None = None
            ) -> tuple[int, int, int]:
    """The Scanner's pairs at the current frame against `truth` (with `keys`): the same
    triangles, no pair missed (a pair only Blender reports must be exactly disjoint), and
    a pair only we report must meet exactly or touch within `TOUCH`. Returns (Blender
    pairs, ours-only, Blender-only)."""
    pos, poses = sc.evaluate(dg)
    theirs, ev = truth(meshes, dg, self_collision, keys)
    for m, t, (_p, tr, _) in zip(meshes, sc.triangles, ev):
        assert np.array_equal(t, tr), (tag, m.name, "not the drawn triangles")
    res, _, _ = sc.query(pos, poses)
    ours = set()
    for i, j, p in res:
        for a, b in p.tolist():
            ours.add((i, j, min(a, b), max(a, b)) if i == j else (i, j, a, b))
    return judge(theirs, ours, [e[0] for e in ev], [e[1] for e in ev], tag)


def strong_poses(bpy, armatures, rng, far: np.ndarray | None = None) -> None:
    """A strong random pose on every armature (170° twists about random axes, per-axis
    bone scale 0.6–1.5, small bone translations), the armatures moved by `far`."""
    from blender_helpers import random_blender_pose
    from mathutils import Matrix, Vector

    for a in armatures:
        random_blender_pose(a, rng, max_angle=math.radians(170), scale=(0.6, 1.5),
                            translate=0.05)
        if far is not None:
            a.matrix_world = Matrix.Translation(Vector(far.tolist())) @ a.matrix_world
    bpy.context.view_layer.update()


def report_pairs(doc: dict) -> dict[int, set]:
    """Per frame, the report's polygon pairs as a set of tuples."""
    return {f["frame"]: {tuple(p) for p in f["pairs"]} for f in doc["frames"]}
