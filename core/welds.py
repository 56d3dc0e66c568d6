"""Weld ids: which vertices are "the same vertex" for adjacency, decided once at build.

Two vertices get the same id when they are deformed by the same armature, coincide at rest
in armature space (``A⁻¹ M p`` with the matrices recorded at build, `Rig.mesh_to_armature`)
and carry the same normalized weights (compared by bone name). LBS moves such vertices
identically in every pose, so triangles meeting there are adjacent, within one mesh (glTF
seams, split normals) or between meshes (a character split into parts). Vertices that
coincide at rest but carry different weights (lip corners, eyelids, a pinned part) separate
when posed and are NOT welded.

The per-frame test is then an index compare (`adjacent_pairs`): no tolerance,
nothing that grows with the world coordinates. Everything here is pure numpy.
"""
from __future__ import annotations

import numpy as np

from .rig import Rig

#: Bone-name id of the virtual static joint (vertices Blender leaves in place follow the
#: mesh object, not a bone) and of padding, in the weight part of a key row.
_STATIC = -2
_PAD = -1


def _key_rows(rigs: list[Rig]) -> np.ndarray:
    """(ΣV, R) int64 rows: armature, armature-space rest position bits, then
    (bone-name id, normalized weight bits) pairs sorted by name id."""
    names: dict[str, int] = {}
    arms: dict[str, int] = {}
    parts = []
    per_rig = []
    for k, rig in enumerate(rigs):
        joints, weights = rig.padded_influences()
        # Bone names -> ids shared by the whole set; index J is the static joint.
        ids = np.array([names.setdefault(n, len(names)) for n in rig.bone_names] + [_STATIC],
                       dtype=np.int64)
        name_id = np.where(joints >= 0, ids[np.maximum(joints, 0)], _PAD)
        # An unnamed armature (a rig built without Blender) welds only within its mesh.
        arm = arms.setdefault(rig.armature, len(arms)) if rig.armature else -(k + 1)
        per_rig.append((rig, name_id, weights, arm))
    K = max(p[1].shape[1] for p in per_rig) if per_rig else 1
    for rig, name_id, weights, arm in per_rig:
        V = rig.n_vertices
        # Canonical order (by name id, padding last) and a canonical normalization (summed
        # in that order), so that parts whose vertex groups are ordered differently agree.
        sort_key = np.where(name_id == _PAD, np.iinfo(np.int64).max, name_id)
        order = np.argsort(sort_key, axis=1, kind="stable")
        nid = np.take_along_axis(name_id, order, axis=1)
        w = np.take_along_axis(weights, order, axis=1)
        total = np.cumsum(w, axis=1)[:, -1:]
        w = np.where(nid != _PAD, w / np.where(total > 0, total, 1.0), 0.0)
        pad = K - nid.shape[1]
        if pad:
            nid = np.pad(nid, ((0, 0), (0, pad)), constant_values=_PAD)
            w = np.pad(w, ((0, 0), (0, pad)))
        q = rig.rest_armature_positions() + 0.0            # + 0.0 turns -0.0 into 0.0
        row = np.empty((V, 4 + 2 * K), dtype=np.int64)
        row[:, 0] = arm
        row[:, 1:4] = q.view(np.int64)
        row[:, 4::2] = nid
        row[:, 5::2] = (w + 0.0).view(np.int64)
        parts.append(row)
    if not parts:
        return np.zeros((0, 4 + 2 * K), dtype=np.int64)
    return np.concatenate(parts)


def global_weld_ids(rigs: list[Rig]) -> list[np.ndarray]:
    """Per rig, (V_k,) int64 vertex ids over the whole set: equal ids ⇔ same armature,
    same armature-space rest position (bit for bit, float64) and same normalized weights
    per bone name. Ids are dense, 0 .. (number of distinct vertices − 1)."""
    rows = _key_rows(rigs)
    if rows.shape[0] == 0:
        return [np.zeros(0, np.int64) for _ in rigs]
    _, inv = np.unique(rows, axis=0, return_inverse=True)
    inv = inv.reshape(-1).astype(np.int64)
    out, start = [], 0
    for rig in rigs:
        out.append(inv[start:start + rig.n_vertices])
        start += rig.n_vertices
    return out


def vertex_weld_ids(rig: Rig) -> np.ndarray:
    """(V,) int64 weld id of each vertex of one mesh (self-collision adjacency): vertices
    with the same rest position AND the same weights share an id."""
    return global_weld_ids([rig])[0]


def adjacent_pairs(tri_keys: np.ndarray, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """(K,) bool: triangles ta[k], tb[k] share a vertex key.

    Args:
        tri_keys: (T, 3) int64 per-triangle weld ids (``vertex_weld_ids(rig)[triangles]``,
            so that split vertices with the same rest position and weights count as one).
        ta, tb: (K,) int triangle indices.
    """
    a = tri_keys[ta]
    b = tri_keys[tb]
    return np.any(a[:, :, None] == b[:, None, :], axis=(1, 2))


def shared_vertices(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertices welded to another one, and the first vertex of each one's weld id.

    Args:
        keys: (V,) int64 weld ids (`vertex_weld_ids`).
    Returns:
        members (M,) int64 and firsts (M,) int64: every vertex whose id another vertex
        shares, and the lowest-index vertex of that id (itself for that one).
    """
    keys = np.asarray(keys)
    if keys.size < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    start = np.empty(k.size, dtype=bool)
    start[0] = True
    np.not_equal(k[1:], k[:-1], out=start[1:])
    group = np.cumsum(start) - 1
    first = order[start][group]
    shared = np.bincount(group)[group] > 1
    return order[shared].astype(np.int64), first[shared].astype(np.int64)


def frame_weld_ids(keys: np.ndarray, positions: np.ndarray, members: np.ndarray,
                   firsts: np.ndarray, rel_tol: float = 0.0) -> np.ndarray | None:
    """The weld ids of one frame: welded vertices are one vertex only while they are drawn
    at the same position. Under skinning (LBS or dual quaternions) and rigid motion they
    stay together (same rest position, same weights); a deformation that reads more than
    that (Corrective Smooth, a shape key, a cache) can pull them apart, and the triangles
    on either side are then no longer adjacent (docs/exactness.md).

    "The same position" allows float32 rounding: Blender's skinning sums a vertex's
    weights in its own group order, so welded vertices listing their groups in another
    order come out a few ulps apart (1.2e-7 on subdivided Cesium Man, 1.5 m tall), and an
    evaluated surface's seams come out of the modifiers so apart (`snap_seams`). A weld
    holds while its vertices are within `rel_tol` times the welded vertices' extent (per
    axis) of one another.

    Args:
        keys: (V,) int64 the ids decided at build (`vertex_weld_ids`).
        positions: (V, 3) float64 the frame's positions.
        members, firsts: `shared_vertices(keys)`.
        rel_tol: the tolerance, relative to the welded vertices' extent (`SEAM_TOLERANCE`).
    Returns:
        None when every weld holds (then `keys` are the frame's ids), else (V,) int64 ids
        where the vertices of each parted weld are split by their exact position.
    """
    if not members.size:
        return None
    # Gathers and per-column reductions: about 0.1 ms for Cesium Man's 3,483 welded
    # vertices (a reduction over axis 0 of an (n, 3) array costs ten times that).
    a = np.take(positions, members, axis=0)
    d = np.abs(a - np.take(positions, firsts, axis=0))
    tol = rel_tol * max(float(a[:, k].max() - a[:, k].min()) for k in range(3)) \
        if rel_tol else 0.0
    if not d.max() > tol:
        return None
    apart = np.any(d > tol, axis=1)
    opened = np.isin(keys[members], np.unique(keys[members[apart]]))
    v = members[opened]
    # + 0.0 turns -0.0 into 0.0: equal coordinates, equal bits.
    bits = np.ascontiguousarray(positions[v] + 0.0).view(np.int64)
    rows = np.column_stack([keys[v], bits])
    _, inv = np.unique(rows, axis=0, return_inverse=True)
    out = np.array(keys, dtype=np.int64)
    out[v] = int(out.max()) + 1 + inv.reshape(-1)
    return out


def parted_pairs(triangles: np.ndarray, keys: np.ndarray, frame_keys: np.ndarray
                 ) -> np.ndarray:
    """Triangle pairs adjacent by the build's weld ids but not by the frame's: those that
    meet only at a weld that has parted this frame. The self queries never generate
    pairs adjacent by `keys`, so these are tested on their own (`core.scan`).

    Args:
        triangles: (T, 3) int32 the frame's triangles.
        keys, frame_keys: (V,) int64 `vertex_weld_ids` and `frame_weld_ids`.
    Returns:
        (K, 2) int64 triangle pairs a < b, unique.
    """
    changed = frame_keys != keys
    t, c = np.nonzero(changed[triangles])
    if not t.size:
        return np.zeros((0, 2), np.int64)
    # (weld id, triangle) once each, grouped by weld id: every two triangles of a group
    # met at that weld.
    rows = np.unique(np.column_stack([keys[triangles[t, c]], t.astype(np.int64)]), axis=0)
    k, tri = rows[:, 0], rows[:, 1]
    start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    size = np.diff(np.r_[start, k.size])
    n = np.repeat(size, size)                     # group size of each row
    s = np.repeat(start, size)                    # group start of each row
    a = np.repeat(np.arange(k.size), n)
    b = np.repeat(s, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
    a, b = tri[a], tri[b]
    keep = a < b
    pairs = np.unique(np.column_stack([a[keep], b[keep]]), axis=0)
    if not pairs.size:
        return pairs.reshape(0, 2)
    near = adjacent_pairs(frame_keys[triangles], pairs[:, 0], pairs[:, 1])
    return pairs[~near]


#: Tolerance of `snap_seams`, relative to the largest rest coordinate of the surface.
SEAM_TOLERANCE = 1e-5


def snap_seams(positions: np.ndarray, joints: np.ndarray, weights: np.ndarray,
               tol: float | None = None) -> np.ndarray:
    """Rest positions of an evaluated surface (`Rig.surface`) with each group of vertices
    that lie within `tol` of one another, axis by axis (chained), and carry the same
    normalized weights moved onto its lowest-index vertex, so that `vertex_weld_ids`
    welds them.

    Why: modifiers compute the two sides of a seam (glTF splits vertices at UV seams)
    separately, so vertices that coincide on the mesh's own data come out a few float32
    ulps apart on the surface Blender evaluates: on Cesium Man under a Subdivision Surface
    (level 1), 408 of 713 seam vertex pairs, up to 4.8e-6 apart at coordinates of about 1.
    Without this their triangles, which touch along the seam on every frame, would be
    reported as contacts. The tolerance is relative to the surface's size at rest
    (`SEAM_TOLERANCE` × its largest coordinate; mesh-local, so nothing grows with the
    distance from the origin), far below any feature a character has.

    Args:
        positions: (V, 3) float64 mesh-local rest positions.
        joints, weights: (V, K) `Rig.padded_influences` (rows compared exactly).
        tol: the distance per axis (default from `SEAM_TOLERANCE`).
    Returns:
        (V, 3) float64, a copy.
    """
    V = positions.shape[0]
    out = np.array(positions, dtype=np.float64)
    if V < 2:
        return out
    if tol is None:
        tol = SEAM_TOLERANCE * max(float(np.abs(positions).max()), 1e-30)
    # Cells of side `tol`: vertices within `tol` lie in the same or a neighbouring cell.
    cell = np.floor(positions / tol).astype(np.int64)
    cell -= cell.min(axis=0)
    span = cell.max(axis=0) + 3
    code = (cell[:, 0] * span[1] + cell[:, 1]) * span[2] + cell[:, 2]
    order = np.argsort(code, kind="stable")
    sorted_code = code[order]
    a_all, b_all = [], []
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for dz in (-1, 0, 1):
                target = code + (dx * span[1] + dy) * span[2] + dz
                lo = np.searchsorted(sorted_code, target, side="left")
                hi = np.searchsorted(sorted_code, target, side="right")
                n = hi - lo
                if not n.any():
                    continue
                a = np.repeat(np.arange(V), n)
                b = order[np.repeat(lo - np.cumsum(n) + n, n) + np.arange(n.sum())]
                keep = a < b
                a_all.append(a[keep])
                b_all.append(b[keep])
    a = np.concatenate(a_all)
    b = np.concatenate(b_all)
    near = np.all(np.abs(positions[a] - positions[b]) <= tol, axis=1)
    a, b = a[near], b[near]
    same = np.all(joints[a] == joints[b], axis=1) & np.all(weights[a] == weights[b], axis=1)
    a, b = a[same], b[same]
    if not a.size:
        return out
    # Connected groups: every vertex takes the lowest index reachable (label propagation
    # with pointer jumping; a few rounds for the short chains seams make).
    label = np.arange(V)
    while True:
        new = label.copy()
        np.minimum.at(new, a, label[b])
        np.minimum.at(new, b, label[a])
        new = new[new]
        if np.array_equal(new, label):
            break
        label = new
    return out[label]
