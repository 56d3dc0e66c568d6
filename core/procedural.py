"""Procedural rigs and random poses, so core tests and demos need no downloaded asset."""
from __future__ import annotations

import math

import numpy as np

from .rig import Pose, Rig


def tube_geometry(rings: int, segments: int, length: float, radius: float):
    """A capped tube along +Z.

    Returns vertices (V, 3) float64 and faces: a list of vertex-index tuples (quads along
    the body, two n-gon caps).
    """
    z = np.linspace(0.0, length, rings + 1)
    a = np.linspace(0.0, 2 * math.pi, segments, endpoint=False)
    # A slight waist keeps the shape from being perfectly symmetric.
    r = radius * (1.0 - 0.15 * np.sin(np.pi * z / length))
    verts = np.stack([np.outer(r, np.cos(a)), np.outer(r, np.sin(a)),
                      np.repeat(z[:, None], segments, 1)], -1).reshape(-1, 3)
    idx = np.arange((rings + 1) * segments).reshape(rings + 1, segments)
    nxt = np.roll(idx, -1, axis=1)
    quads = np.stack([idx[:-1], nxt[:-1], nxt[1:], idx[1:]], -1).reshape(-1, 4)
    faces = [tuple(q) for q in quads.tolist()]
    faces.append(tuple(idx[0][::-1].tolist()))
    faces.append(tuple(idx[-1].tolist()))
    return verts, faces


def fan_triangulate(faces: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Triangles (T, 3) int32 and their face index (T,) int32 of convex polygons."""
    tris, owner = [], []
    for f, face in enumerate(faces):
        for k in range(1, len(face) - 1):
            tris.append((face[0], face[k], face[k + 1]))
            owner.append(f)
    return np.asarray(tris, dtype=np.int32), np.asarray(owner, dtype=np.int32)


def chain_weights(z: np.ndarray, n_bones: int, length: float, spread: float = 0.6,
                  max_influences: int = 4) -> np.ndarray:
    """Smooth weights of points at heights `z` over a chain of equal bones along +Z.

    Returns (V, n_bones) float64, rows summing to 1, at most `max_influences` nonzero.
    """
    centres = (np.arange(n_bones) + 0.5) * length / n_bones
    d = (z[:, None] - centres[None, :]) / (spread * length / n_bones)
    w = np.exp(-0.5 * d * d)
    if n_bones > max_influences:
        cut = np.sort(w, axis=1)[:, -max_influences][:, None]
        w = np.where(w >= cut, w, 0.0)
    w[w < 1e-3] = 0.0
    return w / w.sum(axis=1, keepdims=True)


def chain_bone_rest(n_bones: int, length: float) -> np.ndarray:
    """(J, 4, 4) float64 rest matrices of a bone chain along +Z (bone Y axis = +Z)."""
    rest = np.zeros((n_bones, 4, 4))
    # Blender bones point along their local Y; map Y -> +Z, Z -> -Y.
    rest[:, :3, :3] = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    rest[:, 2, 3] = np.arange(n_bones) * length / n_bones
    rest[:, 3, 3] = 1.0
    return rest


def tube_rig(rings: int = 24, segments: int = 16, n_bones: int = 5, length: float = 2.0,
             radius: float = 0.25, name: str = "tube") -> Rig:
    """A skinned tube `Rig` (pure numpy), weights in ascending bone order."""
    verts, faces = tube_geometry(rings, segments, length, radius)
    tris, owner = fan_triangulate(faces)
    w = chain_weights(verts[:, 2], n_bones, length)
    vert, bone = np.nonzero(w)
    ptr = np.zeros(verts.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(vert, minlength=verts.shape[0]), out=ptr[1:])
    parents = np.arange(-1, n_bones - 1, dtype=np.int32)
    return Rig(name=name, rest_positions=verts, triangles=tris, tri_polygon=owner,
               weight_ptr=ptr, weight_bone=bone.astype(np.int32), weight_value=w[vert, bone],
               bone_names=[f"bone_{i}" for i in range(n_bones)], bone_parents=parents,
               bone_rest=chain_bone_rest(n_bones, length), bone_deform=np.ones(n_bones, bool))


def random_rotation(rng: np.random.Generator, max_angle: float, size: int) -> np.ndarray:
    """(size, 3, 3) float64 rotations about random axes by angles up to `max_angle` rad."""
    axis = rng.normal(size=(size, 3))
    axis /= np.linalg.norm(axis, axis=1, keepdims=True)
    ang = rng.uniform(-max_angle, max_angle, size)
    K = np.zeros((size, 3, 3))
    K[:, 0, 1], K[:, 0, 2], K[:, 1, 2] = -axis[:, 2], axis[:, 1], -axis[:, 0]
    K -= np.swapaxes(K, 1, 2)
    s, c = np.sin(ang)[:, None, None], np.cos(ang)[:, None, None]
    return np.eye(3) + s * K + (1 - c) * (K @ K)


def chain_deform(rig: Rig, local: np.ndarray) -> np.ndarray:
    """(J, 4, 4) armature-space deform matrices of per-bone local transforms `local`
    (J, 4, 4), parents first (forward kinematics over `rig.bone_parents`)."""
    J = rig.n_bones
    pose_mats = np.zeros((J, 4, 4))
    for j in range(J):                      # over bones (tens), once per pose
        p = rig.bone_parents[j]
        if p < 0:
            pose_mats[j] = rig.bone_rest[j] @ local[j]
        else:
            offset = np.linalg.solve(rig.bone_rest[p], rig.bone_rest[j])
            pose_mats[j] = pose_mats[p] @ offset @ local[j]
    return pose_mats @ np.linalg.inv(rig.bone_rest)


def random_pose(rig: Rig, rng: np.random.Generator, max_angle: float = math.radians(170),
                scale_range: tuple[float, float] = (0.5, 2.0), uniform_scale: bool = False,
                translate: float = 0.0) -> Pose:
    """A random pose through the bone hierarchy, as Blender composes it.

    Each bone gets a local rotation up to `max_angle` about a random axis, a local scale
    drawn from `scale_range` (per axis unless `uniform_scale`) and an optional local
    translation; pose matrices are composed parent to child like Blender's pose solver.
    Bones must be ordered parents first.
    """
    J = rig.n_bones
    R = random_rotation(rng, max_angle, J)
    if uniform_scale:
        S = np.repeat(rng.uniform(*scale_range, size=(J, 1)), 3, axis=1)
    else:
        S = rng.uniform(*scale_range, size=(J, 3))
    local = np.zeros((J, 4, 4))
    local[:, :3, :3] = R * S[:, None, :]
    local[:, :3, 3] = rng.uniform(-translate, translate, size=(J, 3))
    local[:, 3, 3] = 1.0
    deform = chain_deform(rig, local)
    arm = np.eye(4)
    arm[:3, :3] = random_rotation(rng, math.pi, 1)[0] * rng.uniform(0.5, 2.0)
    arm[:3, 3] = rng.uniform(-3, 3, 3)
    mesh = np.eye(4)
    mesh[:3, 3] = rng.uniform(-1, 1, 3)
    return Pose(deform, arm, arm @ mesh)
