"""Skinning that reproduces Blender's Armature modifier, plus spherical blend skinning.

* `lbs`: linear blend skinning, ``v' = Σ w_j C_j v`` with Blender's normalization.
* `dqs`: the Armature modifier's "Preserve Volume" (dual quaternions), including Blender's
  handling of bone scale (scale applied about the vertex, "pivot") and its order-dependent
  sign flips, so that it matches the evaluated mesh.
* `sbs`: spherical blend skinning (QLERP about a rotation centre per joint-set), from
  Kavan & Žára 2005 as used by Kavan, O'Sullivan & Žára 2006 for sphere refitting.

All functions are vectorized over vertices; the only Python loops run over influence slots
(at most a handful) or over bones.
"""
from __future__ import annotations

import numpy as np

from .rig import CONTRIB_EPSILON, Pose, Rig, transform_points

# -- linear blend skinning ------------------------------------------------------------------


def lbs(rest: np.ndarray, joints: np.ndarray, weights: np.ndarray,
        matrices: np.ndarray) -> np.ndarray:
    """Linear blend skinning.

    Args:
        rest: (V, 3) float64 rest positions.
        joints: (V, K) int32 joint indices, -1 padding (padding must carry weight 0).
        weights: (V, K) float64 normalized weights.
        matrices: (J', 4, 4) float64 skinning matrices indexed by `joints`.

    Returns:
        (V, 3) float64 deformed positions ``Σ_k w_k C_{j_k} v``.
    """
    blended = np.zeros((rest.shape[0], 3, 4))
    for k in range(joints.shape[1]):
        w = weights[:, k]
        used = w != 0.0
        if not used.any():
            continue
        blended[used] += w[used, None, None] * matrices[joints[used, k], :3, :]
    return np.einsum("vij,vj->vi", blended[:, :, :3], rest) + blended[:, :, 3]


def lbs_rig(rig: Rig, pose: Pose) -> np.ndarray:
    """World-space LBS positions of `rig` in `pose`: (V, 3) float64."""
    joints, weights = rig.padded_influences()
    return lbs(rig.rest_positions, joints, weights, pose.skinning_matrices())


# -- quaternion helpers ---------------------------------------------------------------------


def matrix_to_quat(m: np.ndarray) -> np.ndarray:
    """Unit quaternions (w, x, y, z) of rotation matrices, canonical with w ≥ 0.

    Args:
        m: (..., 3, 3) float64 rotation matrices (columns are normalized first, as
            Blender's ``mat4_to_quat`` does).
    Returns:
        (..., 4) float64.
    """
    m = m / np.linalg.norm(m, axis=-2, keepdims=True)
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    # Four candidate formulas; pick per matrix the one with the largest pivot (Shepperd),
    # which keeps the division well conditioned.
    cand = np.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22,
                     1 - m00 + m11 - m22, 1 - m00 - m11 + m22], axis=-1)
    pick = np.argmax(cand, axis=-1)
    s = np.sqrt(np.maximum(np.take_along_axis(cand, pick[..., None], -1)[..., 0], 1e-300)) * 2
    q = np.empty(m.shape[:-2] + (4,))
    r21, r12 = m[..., 2, 1], m[..., 1, 2]
    r02, r20 = m[..., 0, 2], m[..., 2, 0]
    r10, r01 = m[..., 1, 0], m[..., 0, 1]
    q0 = np.stack([0.25 * s, (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s], -1)
    q1 = np.stack([(r21 - r12) / s, 0.25 * s, (r01 + r10) / s, (r02 + r20) / s], -1)
    q2 = np.stack([(r02 - r20) / s, (r01 + r10) / s, 0.25 * s, (r12 + r21) / s], -1)
    q3 = np.stack([(r10 - r01) / s, (r02 + r20) / s, (r12 + r21) / s, 0.25 * s], -1)
    for i, qi in enumerate((q0, q1, q2, q3)):
        sel = pick == i
        q[sel] = qi[sel]
    q *= np.where(q[..., :1] < 0, -1.0, 1.0)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrices scaled by |q|² of (possibly unnormalized) quaternions.

    Args:
        q: (..., 4) float64 (w, x, y, z).
    Returns:
        (..., 3, 3) float64 equal to |q|² times the rotation of q/|q|.
    """
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return np.stack([
        np.stack([w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), w * w + y * y - x * x - z * z, 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), w * w + z * z - x * x - y * y], -1),
    ], -2)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product of (..., 4) quaternions."""
    aw, av = a[..., :1], a[..., 1:]
    bw, bv = b[..., :1], b[..., 1:]
    return np.concatenate([aw * bw - np.sum(av * bv, -1, keepdims=True),
                           aw * bv + bw * av + np.cross(av, bv)], -1)


def _pure(v: np.ndarray) -> np.ndarray:
    """(..., 3) vectors as pure quaternions (..., 4)."""
    return np.concatenate([np.zeros(v.shape[:-1] + (1,)), v], -1)


# -- dual quaternion skinning, as Blender does it --------------------------------------------


def _orthogonalize_about_y(m: np.ndarray) -> np.ndarray:
    """Blender's ``orthogonalize_m4(m, 1)`` on (..., 3, 3): the rotation it takes from a
    scaled or sheared bone matrix for Preserve Volume.

    The Y axis (the bone's direction) is kept. Which other axis is kept in plane depends
    on dot products with the *unnormalized* columns, exactly as Blender branches: with
    large scale and shear the second branch is taken, and the difference is up to 10% of
    the model's size.
    """
    x, z = m[..., :, 0], m[..., :, 2]
    y = m[..., :, 1] / np.linalg.norm(m[..., :, 1], axis=-1, keepdims=True)

    def unit(v):
        return v / np.linalg.norm(v, axis=-1, keepdims=True)

    # Branch 1: keep the XY plane.
    z1 = unit(np.cross(x, y))
    x1 = np.cross(y, z1)
    # Branch 2: keep the YZ plane.
    x2 = unit(np.cross(y, z))
    z2 = np.cross(x2, y)
    # Branch 3 (degenerate axes): any frame around Y.
    x3 = unit(np.cross(y, np.stack([y[..., 1], y[..., 2], y[..., 0]], -1)))
    z3 = np.cross(x3, y)
    b1 = (np.sum(y * x, -1) < 1)[..., None]
    b2 = (np.sum(x * z, -1) < 1)[..., None]
    xo = np.where(b1, x1, np.where(b2, x2, x3))
    zo = np.where(b1, z1, np.where(b2, z2, z3))
    return np.stack([xo, y, zo], axis=-1)


def bone_dual_quats(bone_rest: np.ndarray, deform: np.ndarray):
    """Blender's ``mat4_to_dquat(arm_mat, chan_mat)`` for every bone.

    Args:
        bone_rest: (J, 4, 4) float64 bone rest matrices in armature space.
        deform: (J, 4, 4) float64 armature-space deform matrices.
    Returns:
        quat (J, 4), trans (J, 4) float64 (the dual part), scale (J, 4, 4) float64 and
        has_scale (J,) bool. Scale is the part of the deformation that a rigid dual
        quaternion cannot express; Blender applies it about each vertex first.
    """
    J = deform.shape[0]
    base_rs = deform @ bone_rest
    size = np.linalg.norm(base_rs[:, :3, :3], axis=1)
    m3 = deform[:, :3, :3]
    gram = np.swapaxes(m3, 1, 2) @ m3
    orthonormal = np.all(np.abs(gram - np.eye(3)) <= 1e-5, axis=(1, 2))
    has_scale = (~orthonormal | (np.linalg.det(deform) < 0)
                 | (np.sum((size - 1.0) ** 2, axis=1) > 1e-8))
    R = deform.copy()
    scale = np.broadcast_to(np.eye(4), (J, 4, 4)).copy()
    if has_scale.any():
        brs = base_rs[has_scale]
        base_r = np.broadcast_to(np.eye(4), brs.shape).copy()
        rot = _orthogonalize_about_y(brs[:, :3, :3])
        base_r[:, :3, :3] = quat_to_matrix(matrix_to_quat(rot))
        base_r[:, :3, 3] = brs[:, :3, 3]
        base = bone_rest[has_scale]
        base_inv = np.linalg.inv(base)
        R[has_scale] = base_r @ base_inv
        S = np.linalg.solve(base_r, brs)
        scale[has_scale] = base @ S @ base_inv
    quat = matrix_to_quat(R[:, :3, :3])
    trans = 0.5 * quat_mul(_pure(R[:, :3, 3]), quat)
    return quat, trans, scale, has_scale


def dqs(rest: np.ndarray, weight_ptr: np.ndarray, weight_bone: np.ndarray,
        weight_value: np.ndarray, bone_rest: np.ndarray, pose: Pose) -> np.ndarray:
    """Dual quaternion skinning exactly as Blender's Armature modifier with Preserve Volume.

    Args:
        rest: (V, 3) float64 mesh-local rest positions.
        weight_ptr: (V + 1,) int64 CSR offsets; weight_bone (W,) int32; weight_value (W,)
            float64 raw weights in Blender's per-vertex group order (the order decides the
            quaternion sign flips, so it must be kept).
        bone_rest: (J, 4, 4) float64 bone rest matrices (armature space).
        pose: the frame's `Pose`.
    Returns:
        (V, 3) float64 world-space positions.
    """
    V = rest.shape[0]
    to_arm = pose.mesh_to_armature()
    co = transform_points(to_arm, rest)
    quat, trans, scale, has_scale = bone_dual_quats(bone_rest, pose.deform)
    counts = np.diff(weight_ptr)
    sum_q = np.zeros((V, 4))
    sum_t = np.zeros((V, 4))
    contrib = np.zeros(V)
    for k in range(int(counts.max()) if V else 0):
        verts = np.nonzero(counts > k)[0]
        idx = weight_ptr[verts] + k
        bone = weight_bone[idx]
        w = weight_value[idx]
        q = quat[bone]
        t = trans[bone].copy()
        scaled = has_scale[bone]
        if scaled.any():
            # Blender turns the bone's scale at this vertex into a translation of the
            # dual quaternion (add_weighted_dq_dq_pivot), i.e. x -> R (x + d) + t.
            p = co[verts[scaled]]
            S = scale[bone[scaled]]
            d = np.einsum("nij,nj->ni", S[:, :3, :3], p) + S[:, :3, 3] - p
            t[scaled] += 0.5 * quat_mul(q[scaled], _pure(d))
        # Sign flip against the running sum, in Blender's group order.
        w_signed = np.where(np.sum(q * sum_q[verts], axis=1) < 0, -w, w)
        sum_q[verts] += w_signed[:, None] * q
        sum_t[verts] += w_signed[:, None] * t
        contrib[verts] += w
    moved = contrib > CONTRIB_EPSILON
    out = co.copy()
    qn = sum_q[moved]
    tn = sum_t[moved]
    len2 = np.sum(qn * qn, axis=1)
    rot = quat_to_matrix(qn)
    w, v = qn[:, :1], qn[:, 1:]
    tw, tv = tn[:, :1], tn[:, 1:]
    tr = 2.0 * (w * tv - tw * v + np.cross(v, tv))
    out[moved] = (np.einsum("nij,nj->ni", rot, co[moved]) + tr) / len2[:, None]
    return transform_points(pose.armature_world, out)


def dqs_rig(rig: Rig, pose: Pose) -> np.ndarray:
    """World-space Preserve Volume positions of `rig` in `pose`: (V, 3) float64."""
    return dqs(rig.rest_positions, rig.weight_ptr, rig.weight_bone, rig.weight_value,
               rig.bone_rest, pose)


def skin_rig(rig: Rig, pose: Pose) -> np.ndarray:
    """The deformation Blender applies to `rig`: LBS, or DQS when Preserve Volume is on."""
    return dqs_rig(rig, pose) if rig.preserve_volume else lbs_rig(rig, pose)


# -- spherical blend skinning (Kavan & Žára 2005; refit in Kavan, O'Sullivan & Žára 2006) ----


def rotation_centres(joint_sets: np.ndarray, matrices: np.ndarray) -> np.ndarray:
    """Rotation centre r_c of each joint-set: the point whose images are closest together.

    Minimizes ``Σ_{a<b} |C_a r − C_b r|²`` (least squares, minimum-norm solution, so
    single-joint sets get the origin, where any point would do).

    Args:
        joint_sets: (U, K) int32 joint indices, -1 padding.
        matrices: (J', 4, 4) float64 skinning matrices.
    Returns:
        (U, 3) float64.
    """
    U, K = joint_sets.shape
    pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
    if not pairs:
        return np.zeros((U, 3))
    A = np.zeros((U, 3 * len(pairs), 3))
    rhs = np.zeros((U, 3 * len(pairs)))
    for p, (a, b) in enumerate(pairs):
        valid = (joint_sets[:, a] >= 0) & (joint_sets[:, b] >= 0)
        Ca = matrices[np.maximum(joint_sets[:, a], 0)]
        Cb = matrices[np.maximum(joint_sets[:, b], 0)]
        A[valid, 3 * p:3 * p + 3] = (Ca[:, :3, :3] - Cb[:, :3, :3])[valid]
        rhs[valid, 3 * p:3 * p + 3] = (Cb[:, :3, 3] - Ca[:, :3, 3])[valid]
    return np.einsum("uij,uj->ui", np.linalg.pinv(A), rhs)


def sbs(rest: np.ndarray, joints: np.ndarray, weights: np.ndarray,
        matrices: np.ndarray) -> np.ndarray:
    """Spherical blend skinning: ``v' = Q_w (v − r_c) + Σ w_i C_i r_c``.

    Q_w is the QLERP of the joints' rotation quaternions (each aligned to the hemisphere
    of the vertex's first joint), and r_c the rotation centre of the vertex's joint-set.

    Args:
        rest: (V, 3) float64; joints (V, K) int32 (-1 padding); weights (V, K) float64
            normalized; matrices (J', 4, 4) float64 skinning matrices (rigid, or the
            rotation is taken from the orthonormalized 3×3 part).
    Returns:
        (V, 3) float64.
    """
    sets, inverse = np.unique(joints, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    rc = rotation_centres(sets, matrices)[inverse]
    u, _, vt = np.linalg.svd(matrices[:, :3, :3])
    quats = matrix_to_quat(u @ vt)
    safe = np.maximum(joints, 0)
    q = quats[safe]                                                    # (V, K, 4)
    sign = np.where(np.sum(q * q[:, :1], axis=-1) < 0, -1.0, 1.0)
    qw = np.sum((weights * sign)[..., None] * q, axis=1)
    Q = quat_to_matrix(qw) / np.sum(qw * qw, axis=1)[:, None, None]
    C = matrices[safe]                                                 # (V, K, 4, 4)
    lin = np.einsum("vk,vkij,vj->vi", weights, C[:, :, :3, :3], rc) \
        + np.einsum("vk,vki->vi", weights, C[:, :, :3, 3])
    return np.einsum("vij,vj->vi", Q, rest - rc) + lin
