"""The proven float32 margin of the refits: a bound on how far Blender's Armature modifier,
computing in float32, may put a vertex from the exact LBS of the same matrices
(`float32_margin`, per frame, as a slope over a node's mesh-local extent plus an offset).
The proof is docs/refit_bounds.md, "Float32 margin" (§F.1-F.8); the functions below follow
its steps.
"""
from __future__ import annotations

import numpy as np

from ..cache import Recent
from ..rig import Pose
from .lbs_data import LbsBounds

# Blender's Armature modifier computes in float32 (premat, chan_mat, the weighted sum,
# postmat) on the coordinates it is given, while the bound is exact arithmetic on the same
# float32 matrices. Refitted spheres grow by a PROVEN bound on that rounding (the γ_n model
# over each float32 operation of armature_deform.cc), computed per frame from the
# magnitudes Blender computes with (mesh-local coordinates per node, M⁻¹A, the bone
# matrices' entries and translations): docs/refit_bounds.md, "Float32 margin" (§F.1-F.8).
U32 = 2.0 ** -24          # float32 unit roundoff
TINY32 = 2.0 ** -149      # the smallest float32 subnormal


def _norms(m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Of affine matrices (..., 3+, 4): spectral norm σ and Frobenius norm F of the linear
    part, the spectral norm of its inverse, and |t| (Euclidean)."""
    s = np.linalg.svd(m[..., :3, :3], compute_uv=False)
    return (s[..., 0], np.sqrt((s * s).sum(axis=-1)), 1.0 / s[..., 2],
            np.linalg.norm(m[..., :3, 3], axis=-1))


def _gamma(n: float) -> float:
    """γ_n = n·u / (1 − n·u), u = 2⁻²⁴: |Π_k (1 + δ_k)^{±1} − 1| ≤ γ_n over n float32
    roundings (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1)."""
    return n * U32 / (1.0 - n * U32)


def _abs_adjugate(B: np.ndarray) -> np.ndarray:
    """(..., 3, 3) the adjugate of 3×3 matrices B with every product counted positive
    (each entry is the 2×2 permanent of a minor): for B = |L| it bounds the sum of the
    absolute values of the monomials of adj(L). Returned transposed (rows of minors);
    only its norms are used."""
    out = np.empty_like(B)
    for i in range(3):
        r1, r2 = [k for k in range(3) if k != i]
        for j in range(3):
            c1, c2 = [k for k in range(3) if k != j]
            out[..., i, j] = B[..., r1, c1] * B[..., r2, c2] + B[..., r1, c2] * B[..., r2, c1]
    return out


def _permanent3(B: np.ndarray) -> np.ndarray:
    """(...,) the permanent of 3×3 non-negative matrices: the sum of the absolute values of
    the determinant's six monomials when B = |L|."""
    return (B[..., 0, 0] * (B[..., 1, 1] * B[..., 2, 2] + B[..., 1, 2] * B[..., 2, 1])
            + B[..., 0, 1] * (B[..., 1, 0] * B[..., 2, 2] + B[..., 1, 2] * B[..., 2, 0])
            + B[..., 0, 2] * (B[..., 1, 0] * B[..., 2, 1] + B[..., 1, 1] * B[..., 2, 0]))


#: Roundings on any path of the cofactor / determinant evaluation of Blender's 4×4 float32
#: inverse (Eigen's `computeInverseWithCheck`; counted 5 and 9 in its cofactor code, with
#: slack for its SIMD block variant), docs/refit_bounds.md §F.2.
INV_COFACTOR_DEPTH = 8
INV_DET_DEPTH = 12


def _inverse_rounding(L: np.ndarray, e: np.ndarray | float = 0.0) -> np.ndarray:
    """(...,) η‖adj⁺‖_F / |det|: the spectral-norm bound on the rounding of the linear part
    of Blender's float32 inverse of an affine matrix whose linear part is L + E with
    |E_ij| ≤ e (the translation part errs by at most this times |t|); inf when the bound
    does not apply (nearly singular). docs/refit_bounds.md §F.2."""
    e = np.asarray(e, dtype=np.float64)[..., None, None]
    B = np.abs(L) + e
    adj = np.sqrt((_abs_adjugate(B) ** 2).sum(axis=(-2, -1)))
    perm = _permanent3(B)
    det_lo = np.abs(np.linalg.det(L)) - (perm - _permanent3(np.abs(L)))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(det_lo > 0, _gamma(INV_DET_DEPTH) * perm / det_lo, np.inf)
        eta = ((_gamma(INV_COFACTOR_DEPTH) + rho) * (1 + _gamma(2)) / (1 - rho)
               + _gamma(2))
        out = eta * adj / det_lo
    return np.where(rho < 0.5, out, np.inf)


#: Our own float64 evaluation (Pose matrices, inverses, the bound itself) is treated as
#: exact; this allowance, relative to the world coordinates' magnitude, is 2^13 float64
#: ulps and covers it with room (docs/refit_bounds.md §F.7).
F64_ALLOWANCE = 2.0 ** -40


def _rest_terms(bounds: LbsBounds) -> tuple:
    """The rest matrices' part of §F.5, constant per rig (cached on `bounds`): R_j, the
    rounding of Blender's R_j⁻¹ (linear, translation) and bounds on |R̂_j⁻¹| (F, |t|)."""
    cached = bounds.__dict__.get("_f32_rest")
    if cached is not None:
        return cached
    R = bounds.joint_rest[bounds.used_joints]
    Ri = np.linalg.inv(R)
    _, FRi, _, tRi = _norms(Ri)
    tR = np.linalg.norm(R[:, :3, 3], axis=-1)
    eRL = _inverse_rounding(R[:, :3, :3])
    eRt = eRL * tR
    sR, FR = _norms(R)[:2]
    out = (R, eRL, eRt, FRi + np.sqrt(3.0) * eRL, tRi + eRt, sR, FR)
    bounds.__dict__["_f32_rest"] = out
    return out


#: `_world_terms` of the last few (armature, mesh) world matrices: they rarely change
#: between frames, and their inverses, SVDs and determinants are LAPACK calls (slow and
#: jittery on a loaded machine when OpenBLAS wakes its threads for a 4×4 matrix).
_WORLD_TERMS = Recent(32)


def _world_terms(A: np.ndarray, M: np.ndarray) -> tuple | None:
    """The part of `float32_margin` that depends on the armature and mesh world matrices
    only (§F.3, §F.4), memoized on their exact bytes (the same numbers as computing it);
    None when the bound does not apply."""
    return _WORLD_TERMS.get(A.tobytes() + M.tobytes(), lambda: _world_terms_uncached(A, M))


def _world_terms_uncached(A: np.ndarray, M: np.ndarray) -> tuple | None:
    g = _gamma
    r3 = np.sqrt(3.0)
    X = np.linalg.inv(M)
    Q = X @ A                                        # postmat, exact
    P = np.linalg.inv(Q)                             # premat, exact
    sg, Fg, ig, tg = _norms(np.stack([A, M, X, Q, P]))   # one batched SVD
    (sA, sM, _, sQ, sP), (FA, _, FX, FQ, FP) = sg.tolist(), Fg.tolist()
    inv_min_A, inv_min_P = float(ig[0]), float(ig[4])      # 1/σ_min
    tA, tM, tX, tQ, tP = tg.tolist()
    # §F.3 postmat: X̂ = fl(M⁻¹) (its translation errs by the linear bound times |t_M|),
    # then Q̂ = fl(X̂ · A): γ_3 on the linear part, γ_4 on the translation.
    eXL = float(_inverse_rounding(M[:3, :3]))
    eXt = eXL * tM
    FXh, tXh = FX + r3 * eXL, tX + eXt
    eQL = eXL * sA + g(3) * FXh * FA
    eQt = eXL * tA + eXt + g(4) * (FXh * tA + tXh)
    # §F.4 premat P̂ = fl(Q̂⁻¹): the exact inverse of Q̂ differs from P by a Neumann-bounded
    # perturbation; the inversion of Q̂ rounds as in §F.2 with |Q̂_L − Q_L|_ij ≤ eQL.
    if sP * eQL >= 0.5:
        return None
    dPL = sP * sP * eQL / (1.0 - sP * eQL)
    dPt = dPL * (tQ + eQt) + sP * eQt
    eIL = float(_inverse_rounding(Q[:3, :3], eQL))
    ePL = dPL + eIL
    ePt = dPt + eIL * (tQ + eQt)
    return (sA, sM, sQ, sP, FQ, FP, inv_min_A, inv_min_P, tM, tQ, tP, eQL, eQt, ePL, ePt)


def float32_margin(pose: Pose, bounds: LbsBounds,
                   sigma_c: np.ndarray | None = None) -> tuple[float, float]:
    """Bound on |Blender's float32 evaluated vertex − exact LBS| in world space, as
    (slope, offset) over a node's mesh-local extent m: error ≤ slope·m + offset.

    A proof, not an estimate: docs/refit_bounds.md, "Float32 margin", bounds every float32
    operation of Blender's Armature modifier with the standard model (γ_n = n·u/(1−n·u),
    u = 2⁻²⁴) over the magnitudes it computes with, step by step as below: postmat =
    fl(fl(M⁻¹)·A) and premat = fl(postmat⁻¹) (Eigen's cofactor inverse), chan_mat_j =
    fl(pose_j · fl(rest_j⁻¹)), q = fl(premat·p), co = q + Σ w_j (chan_mat_j q − q) / Σ w_j,
    p' = fl(postmat·co) stored in float32; our reader applies M in float64. Magnitudes are
    affine functions a·m + b of the local extent (|p| ≤ √3 m), each step's error too, so
    the per-frame cost is a few operations per joint and the per-node margin is one
    multiply-add. No safety factor: second-order terms are inside the γ_n and the Neumann
    factors; inf when a matrix is too close to singular for the bound to apply.

    `sigma_c`: the frame's (J + 1,) spectral norms of the skinning matrices C_j
    (`FrameTransforms.sigma`); given, the bone matrices' norms are bounded from them
    (§F.5: σ(D_j) ≤ σ(C_j) / (σ_min(A) σ_min(A⁻¹M)), no SVD per joint), else computed.
    """
    u = U32
    g = _gamma
    r3 = np.sqrt(3.0)
    terms = _world_terms(pose.armature_world, pose.mesh_world)
    if terms is None:
        return float("inf"), float("inf")
    sA, sM, sQ, sP, FQ, FP, inv_min_A, inv_min_P, tM, tQ, tP, eQL, eQt, ePL, ePt = terms
    # §F.5 chan_mat D̂_j = fl(S_j · fl(R_j⁻¹)), S_j = pose_mat (Blender's, read exactly).
    R, eRL, eRt, FRh, tRh, sR, FR = _rest_terms(bounds)
    D = pose.deform_with_static()[bounds.used_joints]
    tD = np.linalg.norm(D[:, :3, 3], axis=-1)
    # |t_S| of S_j = D_j R_j (pose_mat), directly; its linear part's norms bounded by
    # σ(S_L) ≤ σ(D_L) σ(R_L) and F(S_L) ≤ σ(D_L) F(R_L).
    tS = np.linalg.norm(np.einsum("uij,uj->ui", D[:, :3, :3], R[:, :3, 3]) + D[:, :3, 3],
                        axis=-1)
    if sigma_c is None:
        sD = _norms(D)[0]
    else:
        # C_L = A_L D_L Y_L with Y = A⁻¹M = P, so σ(D_L) ≤ σ(C_L) σ(A_L⁻¹) σ(P_L⁻¹).
        sD = np.asarray(sigma_c)[bounds.used_joints] * inv_min_A * inv_min_P
    FD = r3 * sD
    sS, FS = sD * sR, sD * FR
    eDL = sS * eRL + g(3) * FS * FRh
    eDt = sS * eRt + g(4) * (FS * tRh + tS)
    # §F.6 the vertex, affine in m: |p| ≤ √3 m; (slope, offset) pairs.
    q = np.array([sP * r3, tP])                                  # |q|, q = P p exact
    e_q = (np.array([ePL * r3, ePt])
           + g(4) * np.array([(FP + r3 * ePL) * r3, tP + ePt]))  # |q̂ − q|
    qh = q + e_q                                                 # |q̂|
    # per joint: y_j = fl(D̂_j q̂) against D_j q
    y_err = (np.stack([eDL * qh[0], eDL * qh[1] + eDt])
             + sD * e_q[:, None]
             + g(4) * np.stack([(FD + r3 * eDL) * qh[0],
                                (FD + r3 * eDL) * qh[1] + tD + eDt]))
    y_mag = np.stack([sD * q[0], sD * q[1] + tD]) + y_err
    K = float(bounds.max_influences)
    blend = u * (1 + u) + g(3 * K) * (1 + u)
    co_mag = np.array([float((sD * q[0]).max()), float((sD * q[1] + tD).max())])
    e_co = (y_err.max(axis=1) + blend * (y_mag.max(axis=1) + qh) + u * co_mag) / (1 - u)
    e_co = np.maximum(e_co, e_q)          # a vertex Blender leaves in place keeps q̂
    coh = co_mag + e_co
    # §F.7 p' = fl(Q̂ · ĉo), stored as float32 (no further rounding); M in float64.
    e_out = (eQL * coh + np.array([0.0, eQt]) + sQ * e_co
             + g(4) * ((FQ + r3 * eQL) * coh + np.array([0.0, tQ + eQt])))
    world = sM * (sQ * co_mag + np.array([0.0, tQ])) + np.array([0.0, tM])
    slope, offset = sM * e_out + F64_ALLOWANCE * world
    return float(slope), float(offset)


# --- float32 spheres that hold float64 ones (storage, docs/storage.md §2) ---------------

def _up32(x: np.ndarray) -> np.ndarray:
    """float32 values ≥ x (float64), each the nearest such float32."""
    y = x.astype(np.float32)
    low = y.astype(np.float64) < x
    y[low] = np.nextafter(y[low], np.float32(np.inf))
    return y


def spheres_float32(centers: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float32 spheres that contain the given float64 ones (docs/storage.md §2).

    Each centre is rounded to the nearest float32, which moves it by at most
    ``2⁻²⁴·√3·|c|∞ + √3·2⁻¹⁴⁹`` (subnormals); the radius grows by that bound, with one
    float64 ulp of slack per operation, and is rounded UP to float32. So the float32 ball
    ``B(fl32(c), r₃₂)`` contains ``B(c, r)``, and anything ``B(c, r)`` enclosed.

    Args:
        centers: (N, 3) float64; radii: (N,) float64, ≥ 0.
    Returns:
        centers (N, 3) float32 and radii (N,) float32.
    """
    c = np.asarray(centers, dtype=np.float64)
    r = np.asarray(radii, dtype=np.float64)
    if not (np.isfinite(c).all() and np.isfinite(r).all()):
        raise ValueError("non-finite sphere")
    with np.errstate(over="ignore"):
        c32 = c.astype(np.float32)
    shift = np.sqrt(3.0) * (U32 * np.abs(c).max(axis=1, initial=0.0) + TINY32)
    # Every float64 operation above and below rounds by at most 2⁻⁵³ relative; 2⁻⁴⁸ of
    # the total covers the handful of them (docs/storage.md §2).
    grown = (r + shift) * (1.0 + 2.0 ** -48)
    with np.errstate(over="ignore"):
        r32 = _up32(grown)
    if not (np.isfinite(c32).all() and np.isfinite(r32).all()):
        raise ValueError("sphere out of float32 range")
    return c32, r32
