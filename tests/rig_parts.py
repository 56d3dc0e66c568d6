"""Test helpers on procedural meshes and rigs (pure numpy, no bpy): vertex normals, and a
rig cut into two mesh parts that meet along a seam (one character of several meshes)."""
from __future__ import annotations

import numpy as np

from skin_collide.core.rig import Rig


def vertex_normals(pos: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """(V, 3) unit area-weighted vertex normals of positions (V, 3), triangles (T, 3)."""
    c = pos[tri]
    fn = np.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0])
    vn = np.zeros_like(pos)
    for k in range(3):
        np.add.at(vn, tri[:, k], fn)
    return vn / np.linalg.norm(vn, axis=1, keepdims=True)


def split_rig(rig: Rig, name: str, armature: str) -> list[Rig]:
    """The rig cut into a lower and an upper mesh part (triangles by centroid height),
    named `name`0 and `name`1, each with its own vertex numbering: the parts meet along
    a seam ring (same rest positions and weights there, same armature `armature`)."""
    z = rig.rest_positions[rig.triangles].mean(axis=1)[:, 2]
    cut = 0.5 * (z.min() + z.max())
    parts = []
    for k, mask in enumerate((z < cut, z >= cut)):
        tris = rig.triangles[mask]
        used = np.unique(tris)
        remap = np.full(rig.n_vertices, -1)
        remap[used] = np.arange(used.size)
        counts = np.diff(rig.weight_ptr)[used]
        take = np.concatenate([np.arange(rig.weight_ptr[v], rig.weight_ptr[v + 1]) for v in used])
        ptr = np.concatenate([[0], np.cumsum(counts)])
        parts.append(Rig(f"{name}{k}", rig.rest_positions[used], remap[tris],
                         np.unique(rig.tri_polygon[mask], return_inverse=True)[1], ptr,
                         rig.weight_bone[take], rig.weight_value[take], rig.bone_names,
                         rig.bone_parents, rig.bone_rest, rig.bone_deform, armature=armature))
    return parts
