"""On-demand refitting for Preserve Volume (Blender's dual quaternions) and for the
paper's spherical blend skinning (Kavan, O'Sullivan & Žára 2006).

* `refit_on_demand_dqs`: a sound bound for what `core.skinning.dqs` computes (Blender's
  Preserve Volume). Derivation in docs/refit_dqs.md. In short: Blender's output at a
  vertex p equals ``vec(Σ a_k y_k q_k Q*) / |Q|²`` with ``y_k`` the bone's own image of p
  (rigid part after the scale/shear part about the vertex), ``a_k = ±w_k`` (the sign
  flips), ``Q = Σ a_k q_k``. Hence for any point c'

      |v' − c'| ≤ Σ_k w_k |y_k − c'| / |Q|,

  the numerator is the LBS-style term maximised over the node's weight polytope (corners,
  mean weight or hull, the same precomputed data as `refit.lbs_bounds`), and |Q| is bounded
  below by ``sqrt(Σ w_k²)`` (Blender's greedy sign flips guarantee it) or, when the node's
  joint quaternions fit ±-wise in a cap of half-angle θ < 45° on S³, by cos θ.
* `refit_sbs`: the paper's Algorithm 1 for `core.skinning.sbs` (QLERP about a rotation
  centre): linear part through the corners, spherical part as a cap on S³ from the
  approximate enclosing sphere of the normalized corner quaternions.

Everything is vectorized over nodes; precomputed data comes from the rest pose only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import skinning
from ..rig import Pose, Rig
from . import weight_bounds
from .balls import approx_balls_of_spheres
from .float32_rounding import float32_margin
from .lbs_data import LbsBounds, lbs_bounds
from .refit import expand_csr
from .sphere_tree import SphereTree

# Float32 rounding of Blender's Preserve Volume path (docs/refit_dqs.md §5): a relative
# term of the model's size for the dual-quaternion arithmetic in armature space, plus the
# LBS chain's margin (premat/postmat, the cancellation far from the origin; proven in
# docs/refit_bounds.md §F) scaled by the ratio of rounding steps of the DQ path to the LBS
# path. The DQ blend itself is argued, not proven (docs/refit_bounds.md, end of §F.8).
DQS_RELATIVE_MARGIN = 1e-5
DQS_STEP_FACTOR = 4.0

# A cap of half-angle θ on S³ forces Blender's greedy sign choice to be consistent only
# when any two quaternions of the cap have a positive dot product, i.e. cos 2θ > 0. The
# slack keeps that true for Blender's float32 quaternions (error ~1e-7).
CAP_COS_MIN = np.sqrt(0.5) + 1e-6
# The same consistency holds whenever every two sign-aligned quaternions of a node have a
# dot product above this (slack for float32).
PAIR_DOT_MIN = 1e-5
# Where that angle test fails, nodes with at most this many joints test every pair.
PAIR_JOINT_LIMIT = 16
# The top nodes of a big rig have many joints and twisted quaternions, where only the
# loose |Q| bounds hold. Nodes shallower than this depth also take the ball of their
# descendants at this depth (the "frontier": it covers the same vertices), whichever is
# smaller; they are refitted on every query, and the frontier is a few dozen nodes.
PROXY_DEPTH = 3


# -- Preserve Volume (Blender's dual quaternion skinning) ------------------------------------


@dataclass
class DqsBounds(LbsBounds):
    """Per-node data for the Preserve Volume refit: the LBS data (joint lists, mean weights,
    deviations, corners) plus

    Attributes:
        q_low: (N,) float64 min over the node's vertices of sqrt(Σ ω_e²)/Σ ω_e (raw group
            entries): Blender's sign flips keep |Q| at least this.
        ref_pos: (N,) int64 position (in `node_joint`) of the node's heaviest bone, the
            sign reference for its quaternions; has_static (N,) bool node holds a vertex
            Blender leaves in place (virtual joint J).
        proxy_ptr: (N + 1,) int64 CSR of proxy_node (int64): for nodes shallower than
            PROXY_DEPTH, their descendants at that depth and their shallower leaves.
        pair_ptr: (N + 1,) int64 CSR of joint pairs (positions in the node's joint list,
            pair_a < pair_b, int32) of nodes with at most PAIR_JOINT_LIMIT joints.
    """

    q_low: np.ndarray = None
    ref_pos: np.ndarray = None
    has_static: np.ndarray = None
    proxy_ptr: np.ndarray = None
    proxy_node: np.ndarray = None
    pair_ptr: np.ndarray = None
    pair_a: np.ndarray = None
    pair_b: np.ndarray = None


def dqs_bounds(tree: SphereTree, rig: Rig,
               corner_entry_limit: int | None = None, corners: tuple | None = None) -> DqsBounds:
    """Precompute the Preserve Volume bounds of every node of `tree` (at build time).
    `corners`: as `refit.lbs_bounds` (stored corner rows, not recomputed)."""
    lb = lbs_bounds(tree, rig, corners=corners) if corner_entry_limit is None else \
        lbs_bounds(tree, rig, corner_entry_limit=corner_entry_limit, corners=corners)
    # Per vertex sqrt(Σ_e ω_e²) / Σ_e ω_e over its group entries (a lower bound of |Q|, §4);
    # static vertices do not use it (1).
    V = rig.n_vertices
    vert = np.repeat(np.arange(V), np.diff(rig.weight_ptr))
    sums = np.bincount(vert, weights=rig.weight_value, minlength=V)
    sq = np.bincount(vert, weights=rig.weight_value ** 2, minlength=V)
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.where(sums > 0, np.sqrt(sq) / sums, 1.0)
    low = np.where(rig.static_vertices(), 1.0, low)
    nv = np.diff(tree.node_vert_ptr)
    q_low = np.ones(tree.n_nodes)
    full = nv > 0
    q_low[full] = np.minimum.reduceat(low[tree.node_verts], tree.node_vert_ptr[:-1][full])
    nj = np.diff(lb.joint_ptr)
    npairs = np.where(nj <= PAIR_JOINT_LIMIT, nj * (nj - 1) // 2, 0)
    pair_ptr = np.zeros(tree.n_nodes + 1, dtype=np.int64)
    np.cumsum(npairs, out=pair_ptr[1:])
    a = np.zeros(pair_ptr[-1], dtype=np.int32)
    b = np.zeros(pair_ptr[-1], dtype=np.int32)
    for n in range(2, PAIR_JOINT_LIMIT + 1):        # over joint counts, not nodes
        sel = np.nonzero(nj == n)[0]
        if sel.size:
            ia, ib = np.triu_indices(n, 1)
            idx = pair_ptr[sel][:, None] + np.arange(ia.size)[None, :]
            a[idx], b[idx] = ia[None, :], ib[None, :]
    J = rig.n_bones
    seg = np.repeat(np.arange(tree.n_nodes), nj)
    bone_w = np.where(lb.node_joint < J, lb.mean_weight, -1.0)
    top = np.full(tree.n_nodes, -np.inf)
    np.maximum.at(top, seg, bone_w)
    cand = np.flatnonzero(bone_w == top[seg])
    ref_pos = lb.joint_ptr[:-1].copy()
    ref_pos[seg[cand[::-1]]] = cand[::-1]          # the first heaviest bone wins
    has_static = np.zeros(tree.n_nodes, dtype=bool)
    has_static[seg[lb.node_joint == J]] = True
    proxy_ptr, proxy_node = _frontiers(tree, PROXY_DEPTH)
    return DqsBounds(**lb.arrays(), q_low=q_low, ref_pos=ref_pos, has_static=has_static,
                     proxy_ptr=proxy_ptr, proxy_node=proxy_node,
                     pair_ptr=pair_ptr, pair_a=a, pair_b=b)


def _frontiers(tree: SphereTree, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """For every node shallower than `depth`, its descendants at `depth` plus its leaves
    above it (together they hold exactly the node's triangles). Build time; the loop runs
    over the few top nodes only."""
    N = tree.n_nodes
    top = int(tree.level_ptr[min(depth, tree.level_ptr.size - 1)])
    lists = []
    for n in range(top):
        front, out = [n], []
        while front:
            k = front.pop()
            if tree.depth[k] >= depth or tree.first_child[k] < 0:
                out.append(k)
            else:
                front.extend(range(tree.first_child[k], tree.first_child[k] + tree.child_count[k]))
        lists.append(sorted(out) if len(out) > 1 else [])
    counts = np.zeros(N, dtype=np.int64)
    counts[:top] = [len(x) for x in lists]
    ptr = np.zeros(N + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    flat = np.array([k for x in lists for k in x], dtype=np.int64)
    return ptr, flat


@dataclass
class DqsFrame:
    """A frame's bone transforms in the form the Preserve Volume refit uses.

    Attributes:
        matrices: (J + 1, 3, 4) float64 G_k: mesh-local rest position → the bone's own
            armature-space image y_k (scale/shear about the vertex, then the bone's rigid
            dual quaternion); row J is the static joint (mesh → armature).
        sigma: (J + 1,) float64 largest singular value of each G_k's linear part.
        quats: (J + 1, 4) float64 the bones' unit rotation quaternions (row J unused).
        world: (3, 4) float64 armature → world; world_sigma its largest singular value.
        margin: float, DQS_RELATIVE_MARGIN × the model's world size.
        slope, offset: the far-from-origin part, per node ``slope · local_extent + offset``
            (`refit.float32_margin` × DQS_STEP_FACTOR), 0 until `with_float32` is called.
    """

    matrices: np.ndarray
    sigma: np.ndarray
    quats: np.ndarray
    world: np.ndarray
    world_sigma: float
    margin: float
    slope: float = 0.0
    offset: float = 0.0


def dqs_frame(pose: Pose, tree: SphereTree, bone_rest: np.ndarray) -> DqsFrame:
    """The Preserve Volume frame transforms (O(J))."""
    quat, trans, scale, _ = skinning.bone_dual_quats(bone_rest, pose.deform)
    J = quat.shape[0]
    # The rigid part x -> Rot(q) x + τ with τ = 2 vec(t q*).
    rigid = np.zeros((J, 4, 4))
    rigid[:, :3, :3] = skinning.quat_to_matrix(quat)
    qc = quat * np.array([1.0, -1.0, -1.0, -1.0])
    rigid[:, :3, 3] = 2.0 * skinning.quat_mul(trans, qc)[:, 1:]
    rigid[:, 3, 3] = 1.0
    G = np.concatenate([rigid @ scale, np.eye(4)[None]], axis=0) @ pose.mesh_to_armature()
    G = G[:, :3, :]
    sigma = np.linalg.svd(G[:, :, :3], compute_uv=False)[:, 0]
    quats = np.concatenate([quat, np.array([[1.0, 0, 0, 0]])], axis=0)
    world = pose.armature_world[:3, :]
    ws = float(np.linalg.svd(world[:, :3], compute_uv=False)[0])
    size = 2.0 * float(tree.radii[0]) * float(sigma.max()) * ws
    frame = DqsFrame(G, sigma, quats, world, ws, DQS_RELATIVE_MARGIN * size)
    return frame


def with_float32(frame: DqsFrame, pose: Pose, bounds: DqsBounds) -> DqsFrame:
    """`frame` with the far-from-origin float32 margin of `bounds`' joints filled in."""
    slope, offset = float32_margin(pose, bounds)
    frame.slope = DQS_STEP_FACTOR * slope
    frame.offset = DQS_STEP_FACTOR * offset
    return frame


def refit_on_demand_dqs(tree: SphereTree, bounds: DqsBounds, frame: DqsFrame,
                        nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Refitted world-space spheres of `nodes` under Blender's Preserve Volume.

    The radius about the LBS-style centre c' is the numerator Σ w_k |y_k − c'| maximised
    over the weight polytope (`_numerator`) over a lower bound of |Q| (`_q_lower_bound`),
    tightened by the expansion about ŵ where the signs are consistent (`_expansion`),
    then taken to world space with the float32 margins; nodes above the proxy depth also
    try the ball of their frontier (`_proxy_balls`).

    Args:
        tree: the rest-pose tree; bounds: its `DqsBounds`; frame: `dqs_frame` of the frame.
        nodes: (n,) int64 node indices.
    Returns:
        centers (n, 3) float64 and radii (n,) float64, each enclosing every deformed vertex
        of its node (docs/refit_dqs.md), float32 margin included.
    """
    if nodes.size == 0:
        return np.zeros((0, 3)), np.zeros(0)
    p = _node_joints(tree, bounds, frame, nodes)
    num = _numerator(bounds, nodes, p)
    denom, consistent, quats = _q_lower_bound(bounds, frame, nodes, p)
    radii = num / denom
    # With consistent signs the blend is smooth in the weights: expand about ŵ (§3.1).
    ok = consistent & ~bounds.has_static[nodes]
    if ok.any():
        radii = _expansion(p, quats, denom, ok, radii)
    world_centers = p.centers @ frame.world[:, :3].T + frame.world[:, 3]
    radii = (frame.world_sigma * radii + frame.margin
             + frame.slope * bounds.local_extent[nodes] + frame.offset)
    top = np.nonzero(bounds.proxy_ptr[nodes + 1] > bounds.proxy_ptr[nodes])[0]
    if top.size:
        _proxy_balls(tree, bounds, frame, nodes, top, world_centers, radii)
    return world_centers, radii


@dataclass
class _NodeJoints:
    """The (node, joint) pairs of the refitted nodes, P in all: their node segment (P,)
    and segment starts (n,) int64, joint (P,), the node's rest radius r0 (n,), ŵ_k, δ_k
    and σ_k (P,) float64, the centre c' (n, 3) = Σ ŵ_k G_k c, z_k = G_k c − c' (P, 3),
    |z_k| and e_k = |z_k| + σ_k r0 ≥ |y_k − c'| (P,)."""

    pj_seg: np.ndarray
    starts: np.ndarray
    j: np.ndarray
    r0: np.ndarray
    w_hat: np.ndarray
    delta: np.ndarray
    sig: np.ndarray
    centers: np.ndarray
    z: np.ndarray
    z_len: np.ndarray
    e: np.ndarray


def _node_joints(tree: SphereTree, bounds: DqsBounds, frame: DqsFrame,
                 nodes: np.ndarray) -> _NodeJoints:
    """The rest centre of each node moved by each of its joints, and the terms every bound
    below is made of (`_NodeJoints`)."""
    pj, pj_seg, pj_ptr = expand_csr(bounds.joint_ptr, nodes)
    starts = pj_ptr[:-1]
    j = bounds.node_joint[pj]
    G = frame.matrices[j]
    c0 = tree.centers[nodes]
    r0 = tree.radii[nodes]
    moved = np.einsum("eij,ej->ei", G[:, :, :3], c0[pj_seg]) + G[:, :, 3]
    w_hat = bounds.mean_weight[pj]
    delta = bounds.delta[pj]
    sig = frame.sigma[j]
    centers = np.add.reduceat(w_hat[:, None] * moved, starts, axis=0)
    z = moved - centers[pj_seg]
    z_len = np.sqrt(np.einsum("ei,ei->e", z, z))
    # e_k ≥ |y_k − c'| for every vertex of the node (rest sphere (c, r), |G_k (v − c)| ≤ σ_k r).
    e = z_len + sig * r0[pj_seg]
    return _NodeJoints(pj_seg, starts, j, r0, w_hat, delta, sig, centers, z, z_len, e)


def _numerator(bounds: DqsBounds, nodes: np.ndarray, p: _NodeJoints) -> np.ndarray:
    """(n,) float64 the max over each node's weight polytope of Σ w_k e_k: the smallest of
    the hull, mean-weight and (where the node has them) corner bounds."""
    starts, e, pj_seg = p.starts, p.e, p.pj_seg
    num = np.maximum.reduceat(e, starts)
    e_mean = np.add.reduceat(p.w_hat * e, starts)
    num = np.minimum(num, e_mean + np.add.reduceat(p.delta * np.abs(e - e_mean[pj_seg]), starts))
    sub = np.nonzero(bounds.corner_ptr[nodes + 1] > bounds.corner_ptr[nodes])[0]
    if sub.size:
        rows, row_seg, row_ptr = expand_csr(bounds.corner_ptr, nodes[sub])
        ents, ent_seg, ent_ptr = expand_csr(bounds.entry_ptr, rows)
        k = starts[sub][row_seg[ent_seg]] + bounds.entry_slot[ents]
        row_val = np.add.reduceat(bounds.entry_weight[ents] * e[k], ent_ptr[:-1])
        num[sub] = np.minimum(num[sub], np.maximum.reduceat(row_val, row_ptr[:-1]))
    return num


def _q_lower_bound(bounds: DqsBounds, frame: DqsFrame, nodes: np.ndarray, p: _NodeJoints
                   ) -> tuple[np.ndarray, np.ndarray, tuple]:
    """Lower bounds of |Q| (docs/refit_dqs.md §4): the sum of squares always, the cap and
    the two-angle test, then the exact pairwise test on the small nodes those could not
    settle. Returns denom (n,) float64, consistent (n,) bool (the signs provably
    consistent) and the aligned quaternions the expansion reuses: (q (P, 4), a (P,),
    |Q̂| (n,), dm (P,))."""
    J = frame.quats.shape[0] - 1
    j, starts, pj_seg = p.j, p.starts, p.pj_seg
    # Quaternions aligned to the node's heaviest bone (q and −q are the same rotation);
    # m the normalized ŵ-weighted mean of the bones.
    q = frame.quats[j]
    bone = j < J
    q_ref = frame.quats[bounds.node_joint[bounds.ref_pos[nodes]]]
    sgn = np.where(np.einsum("ei,ei->e", q, q_ref[pj_seg]) < 0, -1.0, 1.0)
    sq = sgn[:, None] * q
    a = np.where(bone, p.w_hat, 0.0) * sgn
    Qh = np.add.reduceat(a[:, None] * q, starts, axis=0)
    qh_n = np.sqrt(np.einsum("ni,ni->n", Qh, Qh))
    m = np.where(qh_n[:, None] > 1e-12, Qh / np.maximum(qh_n, 1e-300)[:, None], q_ref)
    dm = np.einsum("ei,ei->e", sq, m[pj_seg])
    # Always: |Q|² ≥ Σ w² (greedy signs), precomputed per node.
    denom = bounds.q_low[nodes].copy()
    # A cap of half-angle < 45° around m holding every ±q_k: consistent signs, |Q| ≥ cos θ.
    cap = np.minimum.reduceat(np.where(bone, np.abs(dm), 1.0), starts)
    consistent = cap > CAP_COS_MIN
    denom = np.where(consistent, np.maximum(denom, cap), denom)
    # Weaker than the cap: with ψ_k the angle between ±q_k and m, two aligned quaternions
    # are at most ψ_a + ψ_b apart, so if the two largest ψ sum to less than 90° every
    # pair has a dot ≥ μ = cos(ψ_1 + ψ_2) > 0: consistent signs, |Q|² ≥ μ + (1 − μ) Σ w²,
    # and |Q| ≥ min_k |q_k · m|.
    psi = np.where(bone, np.arccos(np.minimum(np.abs(dm), 1.0)), 0.0)
    psi1 = np.maximum.reduceat(psi, starts)
    at_max = psi == psi1[pj_seg]
    n_max = np.add.reduceat(at_max.astype(np.int64), starts)
    psi2 = np.where(n_max > 1, psi1, np.maximum.reduceat(np.where(at_max, 0.0, psi), starts))
    mu = np.cos(np.minimum(psi1 + psi2, 0.5 * np.pi))
    good = mu > PAIR_DOT_MIN
    denom = np.where(good, np.maximum(denom, np.maximum(
        np.sqrt(mu + (1.0 - mu) * bounds.q_low[nodes] ** 2), cap)), denom)
    consistent |= good
    # The exact pairwise test, on the small nodes the angle test could not settle.
    npair = bounds.pair_ptr[nodes + 1] - bounds.pair_ptr[nodes]
    test = np.nonzero((npair > 0) & ~consistent)[0]
    if test.size:
        pr, pr_seg, pr_ptr = expand_csr(bounds.pair_ptr, nodes[test])
        base = starts[test][pr_seg]
        ka, kb = base + bounds.pair_a[pr], base + bounds.pair_b[pr]
        pd = np.where(bone[ka] & bone[kb], np.einsum("ei,ei->e", sq[ka], sq[kb]), 1.0)
        mu_p = np.minimum.reduceat(pd, pr_ptr[:-1])
        ok_p = mu_p > PAIR_DOT_MIN
        gn, mu_p = test[ok_p], mu_p[ok_p]
        low = np.minimum.reduceat(np.where(bone, dm, 1.0), starts)[gn]
        denom[gn] = np.maximum(denom[gn], np.maximum(
            np.sqrt(mu_p + (1.0 - mu_p) * bounds.q_low[nodes[gn]] ** 2), low))
        consistent[gn] = True
    return denom, consistent, (q, a, qh_n, dm)


def _expansion(p: _NodeJoints, quats: tuple, denom: np.ndarray, ok: np.ndarray,
               radii: np.ndarray) -> np.ndarray:
    """(n,) float64 `radii` lowered, on the nodes `ok` (consistent signs, no static joint),
    to the first-order expansion of the blend about ŵ (docs/refit_dqs.md §3.1)."""
    q, a, qh_n, dm = quats
    z, starts, pj_seg, sig = p.z, p.starts, p.pj_seg, p.sig
    delta = p.delta
    # N = Σ a_k z_k q_k (pure z times q, written out).
    zq = np.empty((z.shape[0], 4))
    zq[:, 0] = -np.einsum("ei,ei->e", z, q[:, 1:])
    qv = q[:, 1:]
    zq[:, 1:] = q[:, :1] * z + z[:, [1, 2, 0]] * qv[:, [2, 0, 1]] - z[:, [2, 0, 1]] * qv[:, [1, 2, 0]]
    N = np.add.reduceat(a[:, None] * zq, starts, axis=0)
    n_n = np.sqrt(np.einsum("ni,ni->n", N, N))
    dQ = np.add.reduceat(delta * np.sqrt(np.maximum(2.0 - 2.0 * dm, 0.0)), starts)
    dN = np.add.reduceat(delta * p.z_len, starts)
    s_mean = np.add.reduceat(p.w_hat * sig, starts)
    s_term = np.minimum(np.maximum.reduceat(sig, starts),
                        s_mean + np.add.reduceat(delta * np.abs(sig - s_mean[pj_seg]), starts))
    D = np.maximum(denom, qh_n - dQ)
    use = ok & (qh_n > 1e-12)
    inv = 1.0 / np.where(use, qh_n, 1.0)
    tight = n_n * inv + (dN + n_n * dQ * inv + p.r0 * s_term) / D
    return np.where(use, np.minimum(radii, tight), radii)


def _proxy_balls(tree: SphereTree, bounds: DqsBounds, frame: DqsFrame, nodes: np.ndarray,
                 top: np.ndarray, world_centers: np.ndarray, radii: np.ndarray) -> None:
    """Nodes `top` (positions in `nodes`, above the proxy depth) take the ball of their
    frontier's refitted spheres where it is smaller (in place on `world_centers`, `radii`)."""
    px, _, px_ptr = expand_csr(bounds.proxy_ptr, nodes[top])
    # Proxies are at the proxy depth or leaves, so they have no proxies themselves.
    pc, pr = refit_on_demand_dqs(tree, bounds, frame, bounds.proxy_node[px])
    bc, br = approx_balls_of_spheres(pc, pr, px_ptr)
    better = br < radii[top]
    world_centers[top[better]] = bc[better]
    radii[top[better]] = br[better]


# -- spherical blend skinning (the paper's Algorithm 1) --------------------------------------


@dataclass
class SbsBounds:
    """Per-node corner data for the paper's SBS refit (all corners, no limit).

    Attributes:
        row_ptr: (N + 1,) int64 corner rows of each node; group_ptr (G + 1,) int64 rows of
            each (node, joint-set) group; group_node (G,) int64; node_group_ptr (N + 1,)
            int64 groups of each node.
        joints, weights: (R, K) the corner rows (joint-set ascending, -1 padding).
        sets: (U, K) int32 distinct joint-sets; group_set (G,) int64 index into `sets`.
    """

    row_ptr: np.ndarray
    group_ptr: np.ndarray
    group_node: np.ndarray
    node_group_ptr: np.ndarray
    joints: np.ndarray
    weights: np.ndarray
    sets: np.ndarray
    group_set: np.ndarray


def sbs_bounds(tree: SphereTree, joints: np.ndarray, weights: np.ndarray) -> SbsBounds:
    """Corners of every (node, joint-set) from padded influences (V, K)."""
    nc = weight_bounds.node_corners(joints, weights, tree.node_vert_ptr, tree.node_verts)
    first = nc.joints[nc.set_ptr[:-1]]
    sets, group_set = np.unique(first, axis=0, return_inverse=True)
    node_group_ptr = np.zeros(tree.n_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(nc.group_node, minlength=tree.n_nodes), out=node_group_ptr[1:])
    return SbsBounds(nc.ptr, nc.set_ptr, nc.group_node, node_group_ptr, nc.joints,
                     nc.weights, sets.astype(np.int32), group_set.reshape(-1))


def refit_sbs(tree: SphereTree, bounds: SbsBounds, matrices: np.ndarray,
              nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 of Kavan, O'Sullivan & Žára 2006: spheres enclosing `core.skinning.sbs`.

    Args:
        matrices: (J + 1, 4, 4) float64 skinning matrices (`Pose.skinning_matrices`).
        nodes: (n,) int64 nodes (each must have vertices).
    Returns:
        centers (n, 3), radii (n,) float64 (no float32 margin: SBS is not Blender's).
    """
    rc_all = skinning.rotation_centres(bounds.sets, matrices)
    u, _, vt = np.linalg.svd(matrices[:, :3, :3])
    quats = skinning.matrix_to_quat(u @ vt)
    groups, g_seg, g_ptr = expand_csr(bounds.node_group_ptr, nodes)
    rows, r_grp, _ = expand_csr(bounds.group_ptr, groups)
    jr = bounds.joints[rows]
    wr = bounds.weights[rows]
    safe = np.maximum(jr, 0)
    # Linear part through the corners: r_k = Σ c_ki C_ji r_c.
    rc = rc_all[bounds.group_set[groups]]                       # (g, 3)
    C = matrices[safe]
    lin = np.einsum("rk,rkij,rj->ri", wr, C[:, :, :3, :3], rc[r_grp]) \
        + np.einsum("rk,rki->ri", wr, C[:, :, :3, 3])
    # Spherical part: corner quaternions aligned like `sbs` (to the set's first joint:
    # antipodal quaternions are the same rotation), normalized.
    q = quats[safe]
    sign = np.where(np.sum(q * q[:, :1], axis=-1) < 0, -1.0, 1.0)
    qk = np.sum((wr * sign)[..., None] * q, axis=1)
    qn = np.linalg.norm(qk, axis=1)
    degenerate = qn < 1e-12
    qk = qk / np.where(degenerate, 1.0, qn)[:, None]
    # Approximate enclosing sphere E of the corner quaternions of each group (mean, max).
    gstart = np.zeros(groups.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(r_grp, minlength=groups.size), out=gstart[1:])
    cnt = np.diff(gstart)
    cE = np.add.reduceat(qk, gstart[:-1], axis=0) / cnt[:, None]
    rE = np.maximum.reduceat(np.linalg.norm(qk - cE[r_grp], axis=1), gstart[:-1])
    nE = np.linalg.norm(cE, axis=1)
    bad = np.logical_or.reduceat(degenerate, gstart[:-1]) | (nE < 1e-12)
    # E ∩ S³ lies in the half-space q·ĉ ≥ d_H; d_H ≤ 0 (possible once r_E ≥ 1) means the
    # cap may be the whole S³ and every rotation is allowed.
    with np.errstate(divide="ignore", invalid="ignore"):
        dH = (1.0 + nE * nE - rE * rE) / (2.0 * nE)
    dH = np.where(bad, -1.0, np.minimum(dH, 1.0))
    alpha = np.where(dH > 0, 2.0 * np.arccos(np.clip(dH, 0.0, 1.0)), np.pi)
    Qc = skinning.quat_to_matrix(np.where(bad[:, None], [1.0, 0, 0, 0],
                                          cE / np.maximum(nE, 1e-300)[:, None]))
    x = tree.centers[nodes][g_seg] - rc                          # p − r_c
    ax = np.einsum("gij,gj->gi", Qc, x)
    xn = np.linalg.norm(x, axis=1)
    # The rotated vectors form a cap of angle α around Qc x; its minimal ball (Lemma 5)
    # is (cos α Qc x, sin α |x|) for α ≤ π/2, else the ball (0, |x|).
    narrow = alpha <= 0.5 * np.pi
    f_c = np.where(narrow[:, None], np.cos(alpha)[:, None] * ax, 0.0)
    f_r = np.where(narrow, np.sin(alpha) * xn, xn)
    row_c = lin + f_c[r_grp]
    row_r = f_r[r_grp]
    row_node = g_seg[r_grp]
    nptr = np.zeros(nodes.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_node, minlength=nodes.size), out=nptr[1:])
    centers, radii = approx_balls_of_spheres(row_c, row_r, nptr)
    return centers, radii + tree.radii[nodes]
