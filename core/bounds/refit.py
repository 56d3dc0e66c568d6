"""Refitting sphere trees to a deformed pose.

* On demand, for linear blend skinning (Kavan & Žára 2005): a node's refitted sphere
  depends only on the skinning matrices C_j and per-node data precomputed at rest: its
  rest sphere (c, r) and the corners r_i of its weight polytopes. For each corner
  ``R_i = (Σ_j r_ij C_j c,  r · Σ_j r_ij σ_j)``, and the node's sphere is the approximate
  ball of all R_i (centre = mean of the R_i centres). Blender's bone matrices are affine,
  not rigid, so σ_j, the largest singular value of C_j's linear part, scales the radius:
  |A_j (v − c)| ≤ σ_j |v − c| ≤ σ_j r keeps the convex-combination argument of the paper
  intact (proof in docs/refit_bounds.md).
* Bottom-up, from the evaluated positions (the baseline and the fallback for deformations
  the LBS bound does not cover): leaves enclose their triangle, inner nodes the spheres of
  their children, deepest level first.
* Exact: the minimal ball of each node's deformed vertices (the "best possible" column of
  the paper's Table 2; too slow per frame, used by the benchmark).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..rig import Pose, Rig
from . import weight_bounds
from .balls import approx_balls_of_spheres, minimal_balls
from .sphere_tree import SphereTree

# Blender's Armature modifier computes in float32 (premat, chan_mat, the weighted sum,
# postmat) on the coordinates it is given, while the bound is exact arithmetic on the same
# float32 matrices. Refitted spheres grow by a PROVEN bound on that rounding (the γ_n model
# over each float32 operation of armature_deform.cc), computed per frame from the
# magnitudes Blender computes with (mesh-local coordinates per node, M⁻¹A, the bone
# matrices' entries and translations): docs/refit_bounds.md, "Float32 margin" (§F.1-F.8).
U32 = 2.0 ** -24          # float32 unit roundoff


@dataclass
class LbsBounds:
    """Per-node data for the on-demand LBS refit.

    Two sound bounds are stored; a refit computes both where available and keeps the
    smaller sphere:

    * corners (the paper's): each node's corner weight vectors, sparse;
    * the mean-weight bound: with ŵ the node's mean weight vector and
      ``c' = Σ_j ŵ_j C_j c``, every deformed vertex lies within
      ``r · max_j σ_j + Σ_j δ_j |C_j c − c'|`` of c', where
      ``δ_j = max(h_j − ŵ_j, ŵ_j − l_j)`` and [l_j, h_j] is the range of joint j's weight
      over the node's vertices (0 where a vertex lacks j). It costs one term per distinct
      joint, so nodes whose corners would be expensive (near the root) keep only this one;
      with the same centre, the hull of the transformed spheres ``max_j |C_j c − c'| + σ_j r``
      (the paper's Eq. 2, blind to weights) is also a bound, and the smaller radius is used.

    Attributes:
        joint_ptr: (N + 1,) int64 CSR of each node's distinct joints; node_joint (D,) int32
            (index J is the virtual static joint).
        mean_weight, delta: (D,) float64 ŵ_j and δ_j per (node, joint).
        corner_ptr: (N + 1,) int64 CSR of corner rows (empty for nodes without corners).
        entry_ptr: (R + 1,) int64 CSR of the nonzero entries of each corner row.
        entry_slot: (E,) int32 the entry's joint as a position in its node's joint list.
        entry_weight: (E,) float64 corner weight of that joint (a row sums to 1).
        local_extent: (N,) float64 max |p|∞ of each node's mesh-local rest vertices (the
            magnitude Blender's float32 arithmetic starts from).
        used_joints: (U,) int32 the joints any vertex uses (index J: the static joint).
        joint_rest: (J + 1, 4, 4) float64 bone rest matrices (identity for the static
            joint): Blender's chan_mat is pose_mat · rest⁻¹ in float32.
        max_influences: () int64 the most influences of a vertex.
    """

    joint_ptr: np.ndarray
    node_joint: np.ndarray
    mean_weight: np.ndarray
    delta: np.ndarray
    corner_ptr: np.ndarray
    entry_ptr: np.ndarray
    entry_slot: np.ndarray
    entry_weight: np.ndarray
    local_extent: np.ndarray
    used_joints: np.ndarray
    joint_rest: np.ndarray
    max_influences: np.ndarray

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def has_corners(self) -> np.ndarray:
        return np.diff(self.corner_ptr) > 0


# Nodes whose corners hold more entries than this keep only the mean-weight bound: near the
# root of a rig with many influences per vertex (MakeHuman: 9) a node has thousands of
# corners, and those nodes are refitted every frame.
CORNER_ENTRY_LIMIT = 64


#: Build-time memory bound: the per-node bounds are built over chunks of consecutive nodes
#: holding about this many (node, vertex) memberships (`_node_chunks`); a node larger than
#: that is a chunk of its own. Chunking changes no value: every per-node quantity depends
#: on the node's own vertices only (tests/test_refit.py compares tiny chunks with one).
BUILD_CHUNK_MEMBERSHIPS = 1 << 18
#: The mean-weight bounds gather K influences per membership: their chunks hold about this
#: many (membership, influence) entries.
MEAN_WEIGHT_CHUNK_ENTRIES = 1 << 20


def _node_chunks(node_vert_ptr: np.ndarray, memberships: int) -> np.ndarray:
    """Node boundaries (C + 1,) int64 from 0 to N: chunks of consecutive nodes holding about
    `memberships` memberships each (at least one node per chunk)."""
    N = node_vert_ptr.size - 1
    targets = np.arange(0, int(node_vert_ptr[-1]), max(1, int(memberships)))
    cuts = np.searchsorted(node_vert_ptr[:-1], targets, side="left")
    return np.unique(np.concatenate(([0], cuts, [N]))).astype(np.int64)


def _mean_weight_bounds(tree: SphereTree, joints: np.ndarray, weights: np.ndarray,
                        chunk_memberships: int | None = None):
    """Distinct joints per node with their mean weight and weight deviation δ, built over
    chunks of nodes (`_node_chunks`; default `MEAN_WEIGHT_CHUNK_ENTRIES` (membership,
    influence) entries per chunk)."""
    N = tree.n_nodes
    nv = np.diff(tree.node_vert_ptr)
    K = joints.shape[1]
    nj = int(joints.max()) + 1
    if chunk_memberships is None:
        chunk_memberships = max(1, MEAN_WEIGHT_CHUNK_ENTRIES // max(K, 1))
    parts = []
    cuts = _node_chunks(tree.node_vert_ptr, chunk_memberships)
    for a, b in zip(cuts[:-1], cuts[1:]):
        m0, m1 = tree.node_vert_ptr[a], tree.node_vert_ptr[b]
        node = np.repeat(np.arange(a, b), nv[a:b])
        verts = tree.node_verts[m0:m1]
        jn = joints[verts]                                           # (Mc, K)
        wn = weights[verts]
        valid = jn >= 0
        key = (np.repeat(node, K).reshape(-1, K)[valid] * nj + jn[valid])
        w = wn[valid]
        del node, verts, jn, wn, valid
        if key.size == 0:
            continue
        order = np.argsort(key, kind="stable")
        key, w = key[order], w[order]
        del order
        uniq, start, count = np.unique(key, return_index=True, return_counts=True)
        del key
        parts.append((uniq, np.add.reduceat(w, start), np.minimum.reduceat(w, start),
                      np.maximum.reduceat(w, start), count))
    if parts:
        uniq, wsum, wmin, wmax, count = (np.concatenate(x) for x in zip(*parts))
    else:
        uniq, wsum, wmin, wmax = (np.zeros(0, dtype=np.int64),) + (np.zeros(0),) * 3
        count = np.zeros(0, dtype=np.int64)
    u_node = uniq // nj
    # A vertex without the joint has weight 0 for it.
    lo = np.where(count < nv[u_node], 0.0, wmin)
    mean = wsum / nv[u_node]
    delta = np.maximum(wmax - mean, mean - lo)
    joint_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(np.bincount(u_node, minlength=N), out=joint_ptr[1:])
    return joint_ptr, (uniq % nj).astype(np.int32), mean, delta, uniq, nj


def lbs_bounds(tree: SphereTree, rig: Rig, corner_entry_limit: int = CORNER_ENTRY_LIMIT,
               corners: tuple | None = None) -> LbsBounds:
    """Both bounds for every node of `tree` (corners only where they are affordable).

    `corners`: (corner_ptr, entry_ptr, entry_slot, entry_weight) of an earlier call on the
    same tree and rig (stored data, `core.storage.persist`): they are most of the cost, the rest is
    recomputed."""
    joints, weights = rig.padded_influences()
    joint_ptr, node_joint, mean, delta, pair_key, nj = _mean_weight_bounds(tree, joints, weights)
    if corners is None:
        corner_ptr, entry_ptr, slot, entry_weight = _corner_rows(
            tree, joints, weights, joint_ptr, pair_key, nj, corner_entry_limit)
    else:
        corner_ptr, entry_ptr, slot, entry_weight = corners
    N = tree.n_nodes
    vert_extent = np.abs(rig.rest_positions).max(axis=1)
    starts = tree.node_vert_ptr[:-1]
    local_extent = np.zeros(N)
    has = np.diff(tree.node_vert_ptr) > 0
    local_extent[has] = np.maximum.reduceat(vert_extent[tree.node_verts], starts[has])
    joint_rest = np.concatenate([rig.bone_rest, np.eye(4)[None]], axis=0)
    return LbsBounds(joint_ptr, node_joint, mean, delta, corner_ptr, entry_ptr,
                     np.asarray(slot, dtype=np.int32), entry_weight, local_extent,
                     np.unique(joints[joints >= 0]).astype(np.int32), joint_rest,
                     np.array((joints >= 0).sum(axis=1).max(initial=1), dtype=np.int64))


def _corner_rows(tree: SphereTree, joints: np.ndarray, weights: np.ndarray,
                 joint_ptr: np.ndarray, pair_key: np.ndarray, nj: int, corner_entry_limit: int,
                 chunk_memberships: int = BUILD_CHUNK_MEMBERSHIPS):
    """The corner rows of the nodes whose corners are affordable: corner_ptr (N + 1,),
    entry_ptr (R + 1,), entry_slot (E,) and entry_weight (E,) (see `LbsBounds`).

    Built over chunks of nodes (`_node_chunks`), each chunk's corners compacted to entries
    before the next; `node_corners` skips the nodes it proves over the limit (most of the
    corners near the root), the exact count below decides the rest."""
    N = tree.n_nodes
    ptr = tree.node_vert_ptr
    corner_count = np.zeros(N, dtype=np.int64)
    ent_parts, slot_parts, weight_parts = [], [], []
    cuts = _node_chunks(ptr, chunk_memberships)
    for a, b in zip(cuts[:-1], cuts[1:]):
        nc = weight_bounds.node_corners(joints, weights, ptr[a:b + 1] - ptr[a],
                                        tree.node_verts[ptr[a]:ptr[b]],
                                        entry_limit=corner_entry_limit)
        n = int(b - a)
        nz = nc.joints >= 0
        row_entries = nz.sum(axis=1)
        row_node = np.repeat(np.arange(n), np.diff(nc.ptr))
        node_entries = np.bincount(row_node, weights=row_entries, minlength=n)
        keep_node = node_entries <= corner_entry_limit
        rows = np.nonzero(keep_node[row_node])[0]
        corner_count[a:b] = np.bincount(row_node[rows], minlength=n)
        mask = nz[rows]
        e_joint = nc.joints[rows][mask]
        e_node = np.repeat(row_node[rows] + a, row_entries[rows])
        slot = np.searchsorted(pair_key, e_node * nj + e_joint) - joint_ptr[e_node]
        ent_parts.append(row_entries[rows])
        slot_parts.append(slot.astype(np.int32))
        weight_parts.append(nc.weights[rows][mask])
        del nc, nz, mask, e_joint, e_node, slot
    corner_ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(corner_count, out=corner_ptr[1:])
    row_entries = np.concatenate(ent_parts) if ent_parts else np.zeros(0, dtype=np.int64)
    entry_ptr = np.zeros(row_entries.size + 1, dtype=np.int64)
    np.cumsum(row_entries, out=entry_ptr[1:])
    slot = np.concatenate(slot_parts) if slot_parts else np.zeros(0, dtype=np.int32)
    entry_weight = np.concatenate(weight_parts) if weight_parts else np.zeros(0)
    return corner_ptr, entry_ptr, slot, entry_weight


@dataclass
class FrameTransforms:
    """A frame's skinning matrices in the form the refit uses.

    Attributes:
        matrices: (J + 1, 3, 4) float64 C_j (row J: the static joint, i.e. the mesh's
            world matrix), mapping mesh-local rest positions to world space.
        sigma: (J + 1,) float64 largest singular value of each C_j[:, :3].
        pose: the frame's `Pose` (the float32 margin is computed from it on first use).
    """

    matrices: np.ndarray
    sigma: np.ndarray
    pose: Pose
    _margin: tuple | None = None

    def float32_margin(self, bounds: LbsBounds) -> tuple[float, float]:
        """(slope, offset): Blender's float32 vertices lie within
        ``slope · local_extent + offset`` of the exact LBS of the node (world units)."""
        if self._margin is None or self._margin[0] is not bounds:
            self._margin = (bounds, float32_margin(self.pose, bounds, self.sigma))
        return self._margin[1]


def frame_transforms(pose: Pose, tree: SphereTree) -> FrameTransforms:
    """Skinning matrices and their spectral norms for one frame."""
    C = pose.skinning_matrices()[:, :3, :]
    sigma = np.linalg.svd(C[:, :, :3], compute_uv=False)[:, 0]
    return FrameTransforms(C, sigma, pose)


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
_WORLD_TERMS: dict[bytes, tuple | None] = {}
_WORLD_TERMS_SIZE = 32


def _world_terms(A: np.ndarray, M: np.ndarray) -> tuple | None:
    """The part of `float32_margin` that depends on the armature and mesh world matrices
    only (§F.3, §F.4), memoized on their exact bytes (the same numbers as computing it);
    None when the bound does not apply."""
    key = A.tobytes() + M.tobytes()
    if key in _WORLD_TERMS:
        return _WORLD_TERMS[key]
    out = _world_terms_uncached(A, M)
    if len(_WORLD_TERMS) >= _WORLD_TERMS_SIZE:
        _WORLD_TERMS.clear()
    _WORLD_TERMS[key] = out
    return out


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


def expand_csr(ptr: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of `nodes` in a CSR: (rows, segment of each row, segment offsets)."""
    counts = ptr[nodes + 1] - ptr[nodes]
    seg_ptr = np.zeros(nodes.size + 1, dtype=np.int64)
    np.cumsum(counts, out=seg_ptr[1:])
    seg = np.repeat(np.arange(nodes.size), counts)
    rows = ptr[nodes][seg] + (np.arange(seg_ptr[-1]) - seg_ptr[seg])
    return rows, seg, seg_ptr


def _joint_moves(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                 nodes: np.ndarray):
    """The node centres moved by each of their joints: per (node, joint) pair, C_j c (P, 3)
    and σ_j (P,), with the pairs' node segment (P,) and CSR offsets (n + 1,)."""
    pj, pj_seg, pj_ptr = expand_csr(bounds.joint_ptr, nodes)
    j = bounds.node_joint[pj]
    M = frame.matrices[j]
    moved = np.einsum("eij,ej->ei", M[:, :, :3], tree.centers[nodes][pj_seg]) + M[:, :, 3]
    return pj, pj_seg, pj_ptr, moved, frame.sigma[j]


def mean_weight_spheres(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                        nodes: np.ndarray, moves=None) -> tuple[np.ndarray, np.ndarray]:
    """The mean-weight bound (with the hull bound on the same centre) of `nodes`:
    centres (n, 3), radii (n,) float64, without the float32 margin."""
    pj, pj_seg, pj_ptr, moved, sig = moves or _joint_moves(tree, bounds, frame, nodes)
    r0 = tree.radii[nodes]
    centers = np.add.reduceat(bounds.mean_weight[pj][:, None] * moved, pj_ptr[:-1], axis=0)
    spread = np.linalg.norm(moved - centers[pj_seg], axis=1)
    radii = (r0 * np.maximum.reduceat(sig, pj_ptr[:-1])
             + np.add.reduceat(bounds.delta[pj] * spread, pj_ptr[:-1]))
    # Any convex combination of the joints' transformed spheres lies in their hull
    # (the paper's Eq. 2), which is tighter than the sum above when a node has many joints.
    radii = np.minimum(radii, np.maximum.reduceat(spread + sig * r0[pj_seg], pj_ptr[:-1]))
    return centers, radii


def corner_spheres(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                   nodes: np.ndarray, moves=None) -> tuple[np.ndarray, np.ndarray]:
    """The paper's corner bound of `nodes` (all must have corners): each corner row is a
    convex combination of its joints' transformed spheres, and the approximate ball of
    those encloses the node. Centres (n, 3), radii (n,) float64, without the margin."""
    pj, pj_seg, pj_ptr, moved, sig = moves or _joint_moves(tree, bounds, frame, nodes)
    rows, row_seg, row_ptr = expand_csr(bounds.corner_ptr, nodes)
    ents, ent_seg, ent_ptr = expand_csr(bounds.entry_ptr, rows)
    w = bounds.entry_weight[ents]
    k = pj_ptr[:-1][row_seg[ent_seg]] + bounds.entry_slot[ents]
    rc = np.add.reduceat(w[:, None] * moved[k], ent_ptr[:-1], axis=0)
    rr = tree.radii[nodes][row_seg] * np.add.reduceat(w * sig[k], ent_ptr[:-1])
    return approx_balls_of_spheres(rc, rr, row_ptr)


def refit_on_demand(tree: SphereTree, bounds: LbsBounds, frame: FrameTransforms,
                    nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refitted world-space spheres of `nodes` under LBS (the smaller of the two bounds).

    Args:
        tree: the rest-pose tree; bounds: its `LbsBounds`; frame: the frame's transforms.
        nodes: (n,) int64 node indices.
    Returns:
        centers (n, 3) float64 and radii (n,) float64, each enclosing every deformed
        vertex of its node.
    """
    if nodes.size == 0:
        return np.zeros((0, 3)), np.zeros(0)
    moves = _joint_moves(tree, bounds, frame, nodes)
    centers, radii = mean_weight_spheres(tree, bounds, frame, nodes, moves)
    sub = np.nonzero(bounds.corner_ptr[nodes + 1] > bounds.corner_ptr[nodes])[0]
    if sub.size:
        pj, pj_seg, pj_ptr, moved, sig = moves
        # Re-slice the (node, joint) pairs of the nodes that carry corners.
        take, take_seg, take_ptr = expand_csr(pj_ptr, sub)
        sub_moves = (pj[take], take_seg, take_ptr, moved[take], sig[take])
        cc, cr = corner_spheres(tree, bounds, frame, nodes[sub], sub_moves)
        better = cr < radii[sub]
        centers[sub[better]] = cc[better]
        radii[sub[better]] = cr[better]
    slope, offset = frame.float32_margin(bounds)
    return centers, radii + (slope * bounds.local_extent[nodes] + offset)


def leaf_spheres(tree: SphereTree, triangles: np.ndarray, positions: np.ndarray,
                 nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimal balls of the deformed triangles of leaf `nodes`: exact and cheaper than any
    bound. (n, 3), (n,) float64. `triangles` (T, 3) are the FRAME's triangles (Blender
    re-splits quads per frame, `core.geometry.triangulation`).

    A triangle's minimal ball is its circumscribed ball when it is acute, else the ball on
    its longest edge (also for degenerate triangles).
    """
    p = positions[triangles[tree.leaf_tri[nodes]]]                 # (n, 3, 3)
    a, b, c = p[:, 0], p[:, 1], p[:, 2]
    u, v = b - a, c - a
    w = _cross3(u, v)
    ww = np.einsum("ij,ij->i", w, w)
    uu, vv = np.einsum("ij,ij->i", u, u), np.einsum("ij,ij->i", v, v)
    bc = c - b
    ee = np.einsum("ij,ij->i", bc, bc)
    # The longest edge (the first of ab, bc, ca on ties) and its midpoint.
    on_ab = (uu >= ee) & (uu >= vv)
    on_bc = ~on_ab & (ee >= vv)
    top = np.where(on_ab, uu, np.where(on_bc, ee, vv))
    mid = 0.5 * np.where(on_ab[:, None], a + b, np.where(on_bc[:, None], b + c, c + a))
    with np.errstate(divide="ignore", invalid="ignore"):
        circ = a + (uu[:, None] * _cross3(v, w) + vv[:, None] * _cross3(w, u)) / (2 * ww[:, None])
    # Obtuse (longest edge² ≥ sum of the others) or degenerate: the longest edge's ball.
    obtuse = 2 * top >= (uu + ee) + vv
    centers = np.where((obtuse | ~np.isfinite(circ).all(axis=1))[:, None], mid, circ)
    # Radius: the largest centre-vertex distance (sqrt is monotonic: the max of the
    # squares, summed in the order of `np.linalg.norm`).
    d = p - centers[:, None]
    d *= d
    r2 = d[:, :, 0] + d[:, :, 1] + d[:, :, 2]
    return centers, np.sqrt(np.maximum(np.maximum(r2[:, 0], r2[:, 1]), r2[:, 2]))


def _cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a × b of (n, 3) arrays (the arithmetic of `np.cross`, fewer calls)."""
    out = np.empty_like(a)
    a0, a1, a2 = a[:, 0], a[:, 1], a[:, 2]
    b0, b1, b2 = b[:, 0], b[:, 1], b[:, 2]
    np.subtract(a1 * b2, a2 * b1, out=out[:, 0])
    np.subtract(a2 * b0, a0 * b2, out=out[:, 1])
    np.subtract(a0 * b1, a1 * b0, out=out[:, 2])
    return out


def refit_bottom_up(tree: SphereTree, triangles: np.ndarray,
                    positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refit every node from deformed positions, leaves first.

    Args:
        tree: the tree; triangles: (T, 3) int vertex indices of the frame's triangles;
            positions: (V, 3) float64 deformed positions (world space).
    Returns:
        centers (N, 3) and radii (N,) float64 for all nodes.
    """
    N = tree.n_nodes
    centers = np.zeros((N, 3))
    radii = np.zeros(N)
    leaves = np.nonzero(tree.leaf_tri >= 0)[0]
    centers[leaves], radii[leaves] = leaf_spheres(tree, triangles, positions, leaves)
    for d in range(tree.level_ptr.size - 2, -1, -1):
        nodes = np.arange(tree.level_ptr[d], tree.level_ptr[d + 1])
        inner = nodes[tree.first_child[nodes] >= 0]
        if not inner.size:
            continue
        seg_ptr = np.zeros(inner.size + 1, dtype=np.int64)
        np.cumsum(tree.child_count[inner], out=seg_ptr[1:])
        seg = np.repeat(np.arange(inner.size), tree.child_count[inner])
        kids = tree.first_child[inner][seg] + (np.arange(seg_ptr[-1]) - seg_ptr[seg])
        centers[inner], radii[inner] = approx_balls_of_spheres(centers[kids], radii[kids], seg_ptr)
    return centers, radii


def refit_exact(tree: SphereTree, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimal balls of every node's deformed vertices: (N, 3), (N,) float64."""
    return minimal_balls(positions[tree.node_verts], tree.node_vert_ptr)
