"""Corner weight vectors of sphere-tree nodes (Kavan & Žára 2005, §4.1–4.2).

For every node of a sphere tree and every distinct joint-set J among the node's vertices,
the weights of those vertices span per-joint intervals ``<l_j, h_j>``. The refit does not
need the vertices any more, only the corners ``r_1..r_m`` of the weight polytope

    W' = {w ∈ R^n : l ≤ w ≤ h, Σ w = 1}

because every vertex weight lies in ``W' = CH(r_1..r_m)``, so the refitted spheres
``R_i = Σ_j r_ij C_j S`` enclose the deformed vertices. A corner of W' has at least n−1
coordinates at a bound (one equality plus n−1 independent active box constraints), so the
candidates are "pick a free coordinate k, put every other coordinate at l or h, solve
w_k = 1 − Σ others", kept when w_k lands inside ``[l_k, h_k]`` (the paper's brute force).

Everything is vectorized over nodes, vertices and joint-sets; the only Python loops run over
the joint-set size n (1..K) and over memory-bounding chunks.

Public API:
    * `node_corners`: per-node corner sets from vertex influences and a CSR node→vertices.
    * `box_simplex_corners`: the corners of a batch of boxes intersected with the simplex.
    * `NodeCorners`: the result of `node_corners`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["NodeCorners", "node_corners", "box_simplex_corners", "DEFAULT_TOL"]

#: Slack (in weight units) for accepting a candidate corner and for snapping it onto a bound.
#: Rounding in ``1 − Σ others`` is a few ulp (≲ 1e-15 for K ≤ 12); 1e-12 leaves a wide
#: margin so that no true corner is rejected by rounding, while a snapped corner moves by at
#: most 1e-12 in weight space, i.e. far below float32 vertex precision.
DEFAULT_TOL = 1e-12

# Elements per (boxes × candidates) work array: a few MB per temporary keeps the chunk loop
# cache-friendly (measured ~20% faster than 1 << 20) and bounds memory for K up to 12.
_DEFAULT_CHUNK = 1 << 18


@dataclass(frozen=True)
class NodeCorners:
    """Corner weight vectors of every node, as flat CSR arrays.

    Attributes:
        ptr: (N+1,) int64; node i owns corner rows ``ptr[i]:ptr[i+1]``. Rows are ordered by
            node, then by joint-set (a fixed but otherwise unspecified order of the
            distinct joint-set rows), so the corners of one (node, joint-set) are contiguous.
        joints: (R, K) int32 joint indices of each corner row, ascending, padded with -1
            (the joint-set the corner belongs to).
        weights: (R, K) float64 corner weight vector aligned with `joints`; 0 at padding,
            each row sums to 1 within rounding and lies in its interval box.
        sets_per_node: (N,) int64 number of distinct joint-sets among the node's vertices.
        set_ptr: (G+1,) int64 CSR over the R rows by (node, joint-set) group, G groups in
            total; group g belongs to node ``group_node[g]``.
        group_node: (G,) int64 node index of each (node, joint-set) group.
    """

    ptr: np.ndarray
    joints: np.ndarray
    weights: np.ndarray
    sets_per_node: np.ndarray
    set_ptr: np.ndarray
    group_node: np.ndarray

    @property
    def n_nodes(self) -> int:
        """Number of nodes N."""
        return int(self.ptr.size - 1)

    @property
    def corners_per_node(self) -> np.ndarray:
        """(N,) int64 number of corner rows of each node."""
        return np.diff(self.ptr)


@lru_cache(maxsize=None)
def _patterns(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate patterns for joint-set size n ≥ 2.

    Returns:
        free: (C,) int64 free coordinate of each candidate, C = n·2^(n−1).
        bits: (C, n) bool, True where the coordinate sits at h (False: at l); the free
            coordinate is always False.
        bitsf: (C, n) float64 copy of `bits` for matrix products.
    """
    half = 1 << (n - 1)
    m = np.arange(half, dtype=np.int64)
    other = ((m[:, None] >> np.arange(n - 1)) & 1).astype(bool)      # (half, n-1)
    free = np.repeat(np.arange(n, dtype=np.int64), half)
    bits = np.zeros((n * half, n), dtype=bool)
    for k in range(n):
        cols = np.r_[0:k, k + 1:n]
        bits[k * half:(k + 1) * half, cols] = other
    for a in (free, bits):
        a.setflags(write=False)
    bitsf = bits.astype(np.float64)
    bitsf.setflags(write=False)
    return free, bits, bitsf


def _fix_sum(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Make rows of `w` sum to 1 while staying inside their boxes where possible.

    Snapping a corner onto a bound leaves its sum off by up to `tol`; spreading that residual
    over the coordinates in proportion to their slack keeps every coordinate in
    ``[lo, hi]`` (so weights stay ≥ 0 and the corner stays in W'). Only if the box cannot
    absorb the residual (it misses the simplex by rounding) do we divide by the sum, since the
    refit needs Σ r = 1 more than it needs the box.

    Args:
        w: (R, n) float64 corners inside their boxes.
        lo, hi: (R, n) float64 box bounds of each row.

    Returns:
        (R, n) float64 corrected corners.
    """
    e = 1.0 - w.sum(axis=1)
    slack = np.where((e > 0)[:, None], hi - w, w - lo)
    total = slack.sum(axis=1)
    need = np.abs(e)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(total > 0, np.minimum(need / total, 1.0), 0.0)
    w = w + (np.sign(e) * frac)[:, None] * slack
    short = need > total
    if short.any():
        w[short] /= w[short].sum(axis=1, keepdims=True)
    return w


def _other_sums(d: np.ndarray, k: int) -> np.ndarray:
    """(G, 2^(n−1)) for every bit pattern m over the coordinates other than k (bit i of m
    for the i-th of them, ascending): the sum of their `d` where the bit is set.

    Built by doubling, so each sum adds its terms in ascending coordinate order starting
    from 0 (the order of BLAS's blocked ``d @ bits.T``, whose small-batch paths sum in
    another order): a row's sums do not depend on the other rows of the batch, and
    chunking never changes a corner's bits."""
    G, n = d.shape
    out = np.zeros((G, 1 << (n - 1)))
    size = 1
    for j in range(n):
        if j != k:
            np.add(out[:, :size], d[:, j, None], out=out[:, size:2 * size])
            size *= 2
    return out


def box_simplex_corners(lo: np.ndarray, hi: np.ndarray, *, tol: float = DEFAULT_TOL,
                        chunk_elems: int = _DEFAULT_CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """Corners of ``{w : lo ≤ w ≤ hi, Σ w = 1}`` for a batch of boxes of one dimension n.

    A candidate whose solved coordinate misses its interval by at most `tol` is accepted and
    snapped onto the bound (so rounding never drops a true corner and coincident corners
    become bit-identical). Each returned corner appears once per box.

    Args:
        lo: (G, n) float64 lower bounds, 0 ≤ lo.
        hi: (G, n) float64 upper bounds, lo ≤ hi ≤ 1.
        tol: acceptance / snapping slack in weight units.
        chunk_elems: upper bound on G_chunk · n·2^(n−1) per work array (memory control).

    Returns:
        owner: (R,) int64 box index of each corner, non-decreasing.
        corners: (R, n) float64 corner weight vectors, inside their box, rows sum to 1
            within rounding. A box that misses the simplex by more than `tol` has no rows.
    """
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    if lo.ndim != 2 or lo.shape != hi.shape:
        raise ValueError(f"lo and hi must be (G, n) of equal shape, got {lo.shape}, {hi.shape}")
    G, n = lo.shape
    if n == 0:
        raise ValueError("joint-sets of size 0 have no weight polytope")
    if np.any(lo > hi):
        raise ValueError("lo > hi in some box")
    if n == 1:
        keep = (lo[:, 0] - tol <= 1.0) & (1.0 <= hi[:, 0] + tol)
        owner = np.flatnonzero(keep).astype(np.int64)
        return owner, np.ones((owner.size, 1))

    free, bits, bitsf = _patterns(n)
    C = free.size
    pow2 = np.left_shift(1, np.arange(n, dtype=np.int64))
    step = max(1, chunk_elems // C)
    owners, corners = [], []
    for g0 in range(0, G, step):
        l = lo[g0:g0 + step]
        h = hi[g0:g0 + step]
        d = h - l
        # An interval with l == h gives the same value for either bit: keep only bit 0 so
        # such boxes do not produce 2^(#fixed) copies of each corner.
        dup = ((d == 0).astype(np.float64) @ bitsf.T) > 0
        lk = l[:, free]
        hk = h[:, free]
        wk = 1.0 - ((l.sum(axis=1)[:, None] - lk)
                    + np.concatenate([_other_sums(d, k) for k in range(n)], axis=1))
        ok = (wk >= lk - tol) & (wk <= hk + tol) & ~dup
        gi, ci = np.nonzero(ok)
        if gi.size == 0:
            continue
        x, xl, xh = wk[gi, ci], lk[gi, ci], hk[gi, ci]
        del dup, lk, hk, wk, ok
        at_h = (np.abs(x - xh) <= tol) & (xh > xl)
        at_l = ~at_h & (np.abs(x - xl) <= tol)
        snapped = at_h | at_l
        x = np.where(at_h, xh, np.where(at_l, xl, np.clip(x, xl, xh)))
        rb = bits[ci]
        fk = free[ci]
        w = np.where(rb, h[gi], l[gi])
        w[np.arange(gi.size), fk] = x
        # A snapped corner has every coordinate at a bound, so its full bound pattern
        # identifies it exactly, and the other free indices that generate it yield the same
        # pattern. Unsnapped corners have a strictly interior coordinate and are generated
        # exactly once, so they need no deduplication.
        keep = ~snapped
        if snapped.any():
            sid = np.flatnonzero(snapped)
            sig = rb[sid] @ pow2 + at_h[sid].astype(np.int64) * pow2[fk[sid]]
            _, first = np.unique(gi[sid] * (np.int64(1) << n) + sig, return_index=True)
            keep[sid[first]] = True
        gi, w = gi[keep], w[keep]
        w = _fix_sum(w, l[gi], h[gi])
        owners.append(gi.astype(np.int64) + g0)
        corners.append(w)
    if not owners:
        return np.zeros(0, dtype=np.int64), np.zeros((0, n))
    owner = np.concatenate(owners)
    corner = np.concatenate(corners)
    # np.nonzero is row-major and np.unique only removes rows, so `owner` is already
    # grouped; a stable sort keeps that guarantee explicit at negligible cost.
    order = np.argsort(owner, kind="stable")
    return owner[order], corner[order]


#: Margin (weight units) by which a candidate's solved coordinate must lie inside its open
#: interval for `_interior_counts` to count it. It is 1000× `DEFAULT_TOL` and ~10⁶× the
#: rounding of ``1 − Σ others`` however that sum is ordered, so a counted candidate is
#: accepted and not snapped by `box_simplex_corners` (it becomes one row there).
_INTERIOR_MARGIN = 1e-9


def _interior_counts(lo: np.ndarray, hi: np.ndarray, k: int,
                     chunk_elems: int = _DEFAULT_CHUNK) -> np.ndarray:
    """Per box, how many candidates with free coordinate `k` land strictly inside
    (by `_INTERIOR_MARGIN`) their interval and are not skipped as duplicates.

    Each such candidate is an unsnapped corner that `box_simplex_corners` returns as a row
    of its own (unsnapped corners are generated exactly once), so the count is a lower
    bound on the box's corner rows, whatever the rounding of either computation.

    Args:
        lo, hi: (G, n) float64 boxes, n ≥ 2; k: the free coordinate, 0 ≤ k < n.

    Returns:
        (G,) int64 counts.
    """
    G, n = lo.shape
    free, _, bitsf = _patterns(n)
    pats = bitsf[free == k]                                       # (2^(n−1), n), bit k = 0
    step = max(1, chunk_elems // pats.shape[0])
    out = np.zeros(G, dtype=np.int64)
    for g0 in range(0, G, step):
        l = lo[g0:g0 + step]
        h = hi[g0:g0 + step]
        d = h - l
        dup = ((d == 0).astype(np.float64) @ pats.T) > 0
        wk = 1.0 - ((l.sum(axis=1) - l[:, k])[:, None] + _other_sums(d, k))
        inside = ((wk > (l[:, k] + _INTERIOR_MARGIN)[:, None])
                  & (wk < (h[:, k] - _INTERIOR_MARGIN)[:, None]) & ~dup)
        out[g0:g0 + step] = inside.sum(axis=1)
    return out


def _over_limit(lo: np.ndarray, hi: np.ndarray, group_n: np.ndarray, group_node: np.ndarray,
                N: int, entry_limit: int, chunk_elems: int) -> np.ndarray:
    """(N,) bool: nodes whose corner rows provably hold more than `entry_limit` entries.

    A group of joint-set size n contributes n entries per corner row and has at least one
    row, and at least as many as `_interior_counts` finds for any of its free coordinates
    (distinct free coordinates give distinct rows). Free coordinates are tried one at a
    time, only for groups of nodes not yet shown to be over the limit, so the few nodes
    that stay under it cost about one full enumeration more and the many over it cost a
    fraction of one."""
    found = np.zeros(group_n.size, dtype=np.int64)

    def bound():
        return np.bincount(group_node, weights=group_n * np.maximum(found, 1), minlength=N)

    over = bound() > entry_limit
    for k in range(int(group_n.max(initial=0))):
        live = np.flatnonzero((group_n > k) & ~over[group_node])
        if live.size == 0:
            break
        for n in np.unique(group_n[live]):
            sel = live[group_n[live] == n]
            n = int(n)
            found[sel] += _interior_counts(lo[sel, :n], hi[sel, :n], k, chunk_elems)
        over = bound() > entry_limit
    return over


def _joint_sets(vert_joints: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct joint-set rows, the set of each vertex, and each set's size.

    Returns:
        sets: (S, K) int32 distinct rows of `vert_joints`.
        set_id: (V,) int64 row of `sets` for each vertex.
        set_n: (S,) int64 number of valid joints in each set.
    """
    V, K = vert_joints.shape
    rows = np.ascontiguousarray(vert_joints, dtype=np.int32)
    # A void view compares whole rows as bytes, which is equivalent to row equality for
    # int32 and much faster than np.unique(axis=0).
    void = rows.view(np.dtype((np.void, 4 * K))).reshape(V)
    _, first, inv = np.unique(void, return_index=True, return_inverse=True)
    sets = rows[first]
    valid = sets >= 0
    set_n = valid.sum(axis=1).astype(np.int64)
    if K > 1:
        ok = (np.all(valid[:, :-1] | ~valid[:, 1:], axis=1)
              & np.all(~valid[:, 1:] | (sets[:, 1:] > sets[:, :-1]), axis=1))
        if not ok.all():
            bad = sets[~ok][0]
            raise ValueError("vert_joints rows must be ascending, unique and -1 padded at the "
                             f"end; offending row {bad.tolist()}")
    return sets, inv.reshape(-1).astype(np.int64), set_n


def _group_intervals(w: np.ndarray, pv: np.ndarray, starts: np.ndarray,
                     chunk_elems: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-group min/max weights of vertices `pv` grouped at `starts`.

    Args:
        w: (V, K) float64 vertex weights.
        pv: (M,) int64 vertex index per membership, grouped.
        starts: (G,) int64 first membership of each group, ascending, starts[0] == 0.
        chunk_elems: bound on gathered elements per block, chunks end at group boundaries.

    Returns:
        lo, hi: (G, K) float64.
    """
    M = pv.size
    G = starts.size
    K = w.shape[1]
    lo = np.empty((G, K))
    hi = np.empty((G, K))
    rows = max(1, chunk_elems // max(K, 1))
    cuts = np.unique(np.searchsorted(starts, np.arange(0, M, rows), side="right") - 1)
    cuts = np.append(cuts, G)
    for a, b in zip(cuts[:-1], cuts[1:]):
        s0 = starts[a]
        s1 = starts[b] if b < G else M
        blk = w[pv[s0:s1]]
        idx = starts[a:b] - s0
        lo[a:b] = np.minimum.reduceat(blk, idx, axis=0)
        hi[a:b] = np.maximum.reduceat(blk, idx, axis=0)
    return lo, hi


def node_corners(vert_joints: np.ndarray, vert_weights: np.ndarray, node_ptr: np.ndarray,
                 node_verts: np.ndarray, *, tol: float = DEFAULT_TOL,
                 chunk_elems: int = _DEFAULT_CHUNK,
                 entry_limit: int | None = None) -> NodeCorners:
    """Corner weight vectors of every node's per-joint-set weight polytopes.

    For node i and each distinct joint-set J among its vertices, the intervals
    ``l_j = min w_j``, ``h_j = max w_j`` over the node's vertices with joint-set exactly J
    define ``W' = {l ≤ w ≤ h, Σ w = 1}``; the corners of all these polytopes are returned.
    Every such vertex's weight vector lies in the convex hull of its group's corners.

    Weights are renormalized to sum 1 in float64 first, so weights that were normalized in
    float32 (as Blender stores them) still give boxes that meet the simplex.

    Args:
        vert_joints: (V, K) int32 joint indices per vertex, ascending and unique within a
            row, padded with -1 at the end. Every vertex referenced by a node needs at least
            one joint (give unweighted vertices a static pseudo-joint).
        vert_weights: (V, K) float64 weights aligned with `vert_joints`, ≥ 0, 0 at padding,
            rows summing to 1 within rounding.
        node_ptr: (N+1,) int64 CSR offsets into `node_verts`, non-decreasing, from 0.
        node_verts: (M,) int64 vertex indices of each node (duplicates are harmless; a node
            may be empty and then has no corners).
        tol: slack for accepting / snapping candidate corners, see `DEFAULT_TOL`.
        chunk_elems: memory bound (elements) for temporary work arrays.
        entry_limit: when given, nodes whose corner rows would hold more than this many
            joint entries in total (a row of joint-set size n holds n) and that a cheap
            lower bound proves so (`_over_limit`) get no groups and no rows, as if empty;
            every other node's rows are exactly those computed without the limit. The
            refit keeps only nodes under its limit, so it never enumerates the large ones.

    Returns:
        `NodeCorners` with ``ptr`` (N+1,) int64, ``joints`` (R, K) int32, ``weights``
        (R, K) float64 and per-node / per-group counts.

    Raises:
        ValueError: malformed inputs or a referenced vertex without joints.
        RuntimeError: a group ended up without corners (cannot happen for weights that sum
            to 1; guards soundness).
    """
    vert_joints = np.asarray(vert_joints)
    vert_weights = np.asarray(vert_weights, dtype=np.float64)
    node_ptr = np.asarray(node_ptr, dtype=np.int64)
    node_verts = np.asarray(node_verts, dtype=np.int64)
    counts = _checked_counts(vert_joints, vert_weights, node_ptr, node_verts)
    V, K = vert_joints.shape
    N = counts.size
    w, s = _normalized_weights(vert_joints, vert_weights)
    empty = NodeCorners(ptr=np.zeros(N + 1, dtype=np.int64),
                        joints=np.zeros((0, K), dtype=np.int32),
                        weights=np.zeros((0, K)),
                        sets_per_node=np.zeros(N, dtype=np.int64),
                        set_ptr=np.zeros(1, dtype=np.int64),
                        group_node=np.zeros(0, dtype=np.int64))
    if node_verts.size == 0 or V == 0:
        return empty

    sets, set_id, set_n = _joint_sets(vert_joints)
    _check_referenced(node_verts, set_n[set_id], s)
    order, starts, group_node, group_set = _membership_groups(counts, node_verts, set_id,
                                                              sets.shape[0])
    lo, hi = _group_intervals(w, node_verts[order], starts, chunk_elems)
    del order
    G = starts.size
    group_n = set_n[group_set]
    if entry_limit is not None:
        over = _over_limit(lo, hi, group_n, group_node, N, entry_limit, chunk_elems)
        if over.any():
            kept = np.flatnonzero(~over[group_node])
            group_node, group_set, group_n = group_node[kept], group_set[kept], group_n[kept]
            lo, hi = lo[kept], hi[kept]
            G = kept.size
            if G == 0:
                return empty
    corner_group, corner_w = _group_corners(lo, hi, group_n, K, tol, chunk_elems)
    per_group = np.bincount(corner_group, minlength=G)
    if np.any(per_group == 0):
        g = int(np.flatnonzero(per_group == 0)[0])
        raise RuntimeError(f"joint-set group {g} of node {int(group_node[g])} has no corners "
                           f"(box {lo[g].tolist()}..{hi[g].tolist()} misses the simplex)")
    set_ptr = np.concatenate(([0], np.cumsum(per_group))).astype(np.int64)
    per_node = np.bincount(group_node, weights=per_group, minlength=N).astype(np.int64)
    ptr = np.concatenate(([0], np.cumsum(per_node))).astype(np.int64)
    return NodeCorners(
        ptr=ptr,
        joints=sets[group_set[corner_group]].astype(np.int32, copy=False),
        weights=corner_w,
        sets_per_node=np.bincount(group_node, minlength=N).astype(np.int64),
        set_ptr=set_ptr,
        group_node=group_node,
    )


def _checked_counts(vert_joints: np.ndarray, vert_weights: np.ndarray, node_ptr: np.ndarray,
                    node_verts: np.ndarray) -> np.ndarray:
    """(N,) int64 vertices per node, after checking the shapes of `node_corners`' inputs,
    the CSR and the vertex indices (ValueError when malformed)."""
    if vert_joints.ndim != 2 or vert_weights.shape != vert_joints.shape:
        raise ValueError("vert_joints and vert_weights must be (V, K) of equal shape, got "
                         f"{vert_joints.shape} and {vert_weights.shape}")
    V, K = vert_joints.shape
    if node_ptr.ndim != 1 or node_ptr.size < 1 or node_ptr[0] != 0:
        raise ValueError("node_ptr must be a 1-D CSR offset array starting at 0")
    counts = np.diff(node_ptr)
    if np.any(counts < 0) or node_ptr[-1] != node_verts.size:
        raise ValueError("node_ptr must be non-decreasing and end at len(node_verts)")
    M = node_verts.size
    if M and (node_verts.min() < 0 or node_verts.max() >= V):
        raise ValueError("node_verts holds indices outside [0, V)")
    return counts


def _check_referenced(node_verts: np.ndarray, n_joints: np.ndarray, total: np.ndarray) -> None:
    """ValueError when a vertex some node references has no joint (`n_joints` (V,) int64)
    or a zero total weight (`total` (V,) float64)."""
    used = np.zeros(n_joints.size, dtype=bool)
    used[node_verts] = True
    bad = used & ((n_joints == 0) | ~(total > 0))
    if bad.any():
        raise ValueError(f"{int(bad.sum())} vertices referenced by nodes have no joint or "
                         f"zero total weight (first: vertex {int(np.flatnonzero(bad)[0])})")


def _normalized_weights(vert_joints: np.ndarray, vert_weights: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(V, K) float64 weights renormalized to sum 1 (0 at padding; nan or inf where a
    vertex's total is 0) and (V,) their totals before; ValueError for negative weights."""
    valid = vert_joints >= 0
    w = np.where(valid, vert_weights, 0.0)
    if np.any(w < 0):
        raise ValueError("negative vertex weights")
    s = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = w / s[:, None]
    return w, s


def _membership_groups(counts: np.ndarray, node_verts: np.ndarray, set_id: np.ndarray,
                       S: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The (node, vertex) memberships grouped by (node, joint-set): their order (M,) int64,
    the first membership of each of the G groups in that order (G,) int64, and each group's
    node and joint-set (G,) int64."""
    N = counts.size
    # Memberships are already ordered by node, so a stable sort only has to reorder within
    # each node's run (timsort exploits this).
    pair_node = np.repeat(np.arange(N, dtype=np.int64), counts)
    key = pair_node * S + set_id[node_verts]
    del pair_node
    order = np.argsort(key, kind="stable")
    skey = key[order]
    del key
    brk = np.flatnonzero(skey[1:] != skey[:-1]) + 1
    starts = np.concatenate(([0], brk)).astype(np.int64)
    gkey = skey[starts]
    del skey
    return order, starts, gkey // S, gkey % S


def _group_corners(lo: np.ndarray, hi: np.ndarray, group_n: np.ndarray, K: int, tol: float,
                   chunk_elems: int) -> tuple[np.ndarray, np.ndarray]:
    """The corners of every group's box {lo ≤ w ≤ hi, Σ w = 1} (`box_simplex_corners`, one
    batch per joint-set size): the group of each corner (R,) int64, ascending, and its
    weights (R, K) float64, zero-padded past the group's size."""
    cg_parts, cw_parts = [], []
    for n in np.unique(group_n):
        n = int(n)
        gsel = np.flatnonzero(group_n == n)
        owner, cw = box_simplex_corners(lo[gsel, :n], hi[gsel, :n], tol=tol,
                                        chunk_elems=chunk_elems)
        cg_parts.append(gsel[owner])
        if n < K:
            cw = np.concatenate([cw, np.zeros((cw.shape[0], K - n))], axis=1)
        cw_parts.append(cw)
    corner_group = np.concatenate(cg_parts)
    corner_w = np.concatenate(cw_parts)
    order = np.argsort(corner_group, kind="stable")
    return corner_group[order], corner_w[order]
