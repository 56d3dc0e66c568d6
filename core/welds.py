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
