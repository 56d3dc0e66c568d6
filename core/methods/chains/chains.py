"""Sphere chains for self-collision (after Madera et al. 2015), made exact.

Rest (`build`): the torso/limb regions of `regions.regions`; each region is cut into
slices along its principal axis (limbs: one slice per bone of the limb, at most
`MAX_SLICES`; the torso: two spheres per level, split by its second axis, as in the
paper), and each slice keeps its surrounding region: the triangles whose rest centroid
falls in it. Chains join two limbs through the torso (limb a tip → root, the torso's
spheres, limb b root → tip), for every pair of limbs.

Per frame (`frame_spheres`): the paper's spheres lie inside the volume and bound nothing;
here each sphere's centre is the mean of its region's evaluated vertices and its radius
the largest distance to them, so it encloses its triangles (O(V), vectorized).

Query (`self_pairs`): along each chain, sphere pairs that are not the same or adjacent on
the chain (the paper's rule) and overlap give candidate regions; their triangles go
through the AABB grid (`core.query.sweep.grid_pairs`), the caller's adjacency filter and
the exact test. Exact contract: every intersecting pair of triangles whose spheres are
non-adjacent on some chain ("covered pairs"), and nothing else. `uncovered` lists the
triangles of regions on no chain (a rig with one limb has no chain).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...query import sweep
from ...rig import Rig
from ...sphere_tree import polygon_vertex_sets
from .regions import Regions, regions

MAX_SLICES = 6
TRI_PAD = 2.0 ** -20


@dataclass
class ChainData:
    """Prepared chains. S spheres, C chains.

    Attributes:
        tri_sphere: (T,) int32 the sphere of each triangle.
        sphere_vert_ptr: (S + 1,) int64, sphere_verts: (Σ,) int64 vertices per sphere.
        chain_ptr: (C + 1,) int64, chain_spheres: sphere sequence of each chain.
        covered: (S, S) bool: may a pair of these spheres be reported (non-adjacent on
            some chain; symmetric).
        uncovered: (U,) int64 triangles on no chain.
    """

    tri_sphere: np.ndarray
    sphere_vert_ptr: np.ndarray
    sphere_verts: np.ndarray
    chain_ptr: np.ndarray
    chain_spheres: np.ndarray
    covered: np.ndarray
    uncovered: np.ndarray
    regions: Regions

    @property
    def n_spheres(self) -> int:
        return int(self.sphere_vert_ptr.size - 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """What is stored (`Prepared`); `core.methods.chains.from_arrays` reads it back."""
        from . import to_arrays

        return to_arrays(self)

    @property
    def sphere_hierarchy(self):
        """A `Hierarchy` whose node k is sphere k holding its triangles (for
        `sweep.leaf_entries`); made once."""
        h = getattr(self, "_sphere_h", None)
        if h is None:
            from ..base import Hierarchy

            order = np.argsort(self.tri_sphere, kind="stable")
            tptr = np.searchsorted(self.tri_sphere[order], np.arange(self.n_spheres + 1))
            S = self.n_spheres
            h = Hierarchy(np.full(S, -1, np.int32), np.zeros(S, np.int32),
                          tptr.astype(np.int64), order.astype(np.int64))
            self._sphere_h = h
        return h


def _slices(points: np.ndarray, n: int, split: bool) -> tuple[np.ndarray, np.ndarray]:
    """Slice index (ordered along the principal axis) of each point, and the position of
    each slice along the axis; with `split`, two halves per slice (second axis)."""
    mean = points.mean(axis=0)
    d = points - mean
    _, vec = np.linalg.eigh(d.T @ d)
    t = d @ vec[:, -1]
    lo, hi = t.min(), t.max()
    k = np.minimum(((t - lo) / max(hi - lo, 1e-300) * n).astype(np.int64), n - 1)
    if split:
        k = 2 * k + (d @ vec[:, -2] > 0)
    return k, mean + np.outer((np.arange(n) + 0.5) / n * (hi - lo) + lo, vec[:, -1])


def build(rig: Rig) -> ChainData:
    """Spheres and chains of `rig` at rest (a loop over regions, once per rig)."""
    reg = regions(rig)
    cent = rig.rest_positions[rig.triangles].mean(axis=1)
    tri_sphere = np.full(rig.n_triangles, -1, np.int64)
    order_of: dict[int, list[int]] = {}
    torso_c = cent[reg.tri_region == 0].mean(axis=0) if (reg.tri_region == 0).any() \
        else cent.mean(axis=0)
    s = 0
    for r in range(reg.n_limbs + 1):
        tris = np.nonzero(reg.tri_region == r)[0]
        if tris.size == 0:
            order_of[r] = []
            continue
        if r == 0:
            n = MAX_SLICES
        else:
            n = int(np.clip((reg.bone_region[:-1] == r).sum(), 1, MAX_SLICES))
        n = max(1, min(n, tris.size // 4 or 1))
        k, pos = _slices(cent[tris], n, split=(r == 0))
        used, local = np.unique(k, return_inverse=True)
        if r > 0:
            # Order limb slices from the torso outwards.
            near = np.linalg.norm(pos[0] - torso_c) <= np.linalg.norm(pos[-1] - torso_c)
            rank = used if near else (n - 1 - used)
            perm = np.argsort(rank, kind="stable")
            remap = np.empty_like(perm)
            remap[perm] = np.arange(perm.size)
            local = remap[local]
        tri_sphere[tris] = s + local
        order_of[r] = list(range(s, s + used.size))
        s += used.size
    S = s
    # Vertices per sphere: every corner of each triangle's polygon, since Blender re-splits
    # deformed quads per frame (a triangle may use the quad's other corner).
    vptr, v = polygon_vertex_sets(rig.triangles, rig.tri_polygon, rig.poly_ptr, rig.poly_verts)
    v_s = np.repeat(tri_sphere, np.diff(vptr))
    key = np.unique(v_s * rig.n_vertices + v)
    sv_s, sv = key // rig.n_vertices, key % rig.n_vertices
    ptr = np.zeros(S + 1, np.int64)
    np.cumsum(np.bincount(sv_s, minlength=S), out=ptr[1:])
    chains, covered = [], np.zeros((S, S), bool)
    for a, b in reg.chains.tolist():
        seq = order_of[a][::-1] + order_of[0] + order_of[b]
        chains.append(seq)
        idx = np.array(seq)
        i, j = np.triu_indices(idx.size, 2)
        covered[idx[i], idx[j]] = covered[idx[j], idx[i]] = True
    on_chain = np.zeros(S, bool)
    for c in chains:
        on_chain[c] = True
    cptr = np.zeros(len(chains) + 1, np.int64)
    np.cumsum([len(c) for c in chains], out=cptr[1:])
    return ChainData(tri_sphere.astype(np.int32), ptr, sv, cptr,
                     np.array([x for c in chains for x in c], np.int64), covered,
                     np.nonzero(~on_chain[tri_sphere])[0], reg)


def frame_spheres(data: ChainData, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sphere: centre (S, 3) = mean of its evaluated vertices, radius (S,) = their
    largest distance to it (encloses the sphere's triangles)."""
    ptr = data.sphere_vert_ptr
    p = positions[data.sphere_verts]
    n = np.diff(ptr)
    c = np.add.reduceat(p, ptr[:-1], axis=0) / n[:, None]
    seg = np.repeat(np.arange(n.size), n)
    r = np.maximum.reduceat(np.linalg.norm(p - c[seg], axis=1), ptr[:-1])
    return c, r


def chain_pairs(data: ChainData) -> tuple[np.ndarray, np.ndarray]:
    """The paper's M1 sphere pairs: along each chain, every pair not the same or adjacent
    (pairs shared by several chains repeat). (P,), (P,) int64, i < j in chain order."""
    out_i, out_j = [], []
    for k in range(data.chain_ptr.size - 1):
        seq = data.chain_spheres[data.chain_ptr[k]:data.chain_ptr[k + 1]]
        a, b = np.triu_indices(seq.size, 2)
        out_i.append(seq[a])
        out_j.append(seq[b])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_j)


def self_pairs(data: ChainData, positions: np.ndarray, triangles: np.ndarray,
               triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray],
               mode: str = "M2") -> tuple[np.ndarray, dict]:
    """The covered intersecting triangle pairs (K, 2) int64 (smaller index first) and
    statistics (sphere tests, overlapping sphere pairs, triangle tests).

    `mode`: "M1" tests the sphere pairs chain by chain (the paper's method with chains,
    shared pairs tested once per chain), "M2" each covered sphere pair once. Same result.
    `triangle_test` must drop adjacent pairs (as for the traversal)."""
    c, r = frame_spheres(data, positions)
    if mode == "M1":
        i, j = chain_pairs(data)
    else:
        i, j = np.nonzero(np.triu(data.covered))
    d = c[i] - c[j]
    ok = np.einsum("ij,ij->i", d, d) <= (r[i] + r[j]) ** 2
    i, j = i[ok], j[ok]
    tested = int(ok.size)
    if mode == "M1" and i.size:
        u = np.unique(np.sort(np.stack([i, j], 1), axis=1), axis=0)
        i, j = u[:, 0], u[:, 1]
    stats = {"sphere_tests": tested, "overlapping": int(ok.sum()), "triangle_tests": 0}
    if i.size == 0:
        return np.zeros((0, 2), np.int64), stats
    pa, pb = _grid(data, positions, triangles, i, j)
    stats["triangle_tests"] = int(pa.size)
    hit = triangle_test(pa, pb) if pa.size else np.zeros(0, bool)
    pairs = np.sort(np.stack([pa[hit], pb[hit]], axis=1), axis=1)
    return np.unique(pairs, axis=0) if pairs.size else pairs, stats


def _grid(data: ChainData, positions: np.ndarray, triangles: np.ndarray, i: np.ndarray,
          j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The triangle pairs (one of sphere i[k], one of sphere j[k]) whose padded AABBs
    overlap, by one uniform grid over all the sphere pairs (`sweep.grid_pairs`). For
    i[k] == j[k] both orders and (t, t) come out; the caller keeps t < u."""
    pad = TRI_PAD * max(1.0, float(np.abs(positions).max()))
    lo, hi = sweep.triangle_boxes(positions, triangles, pad)
    h = data.sphere_hierarchy
    ga, ta = sweep.leaf_entries(h, i)
    gb, tb = sweep.leaf_entries(h, j)
    return sweep.grid_pairs(ga, ta, lo, hi, gb, tb, lo, hi)


def complement_pairs(data: ChainData, positions: np.ndarray, triangles: np.ndarray,
                     triangle_test: Callable[[np.ndarray, np.ndarray], np.ndarray]
                     ) -> tuple[np.ndarray, dict]:
    """The intersecting pairs the chains do not cover (K, 2) int64 (smaller index first):
    pairs within one sphere, between spheres adjacent on every chain holding both, and
    with a triangle on no chain. The same sphere test, grid and exact test as
    `self_pairs`, on the sphere pairs (i <= j) that are not `covered`; with `self_pairs`
    it gives every intersecting non-adjacent pair (the two sets are disjoint)."""
    c, r = frame_spheres(data, positions)
    i, j = np.nonzero(np.triu(~data.covered))
    d = c[i] - c[j]
    ok = np.einsum("ij,ij->i", d, d) <= (r[i] + r[j]) ** 2
    stats = {"sphere_tests": int(ok.size), "overlapping": int(ok.sum()), "triangle_tests": 0}
    i, j = i[ok], j[ok]
    if i.size == 0:
        return np.zeros((0, 2), np.int64), stats
    pa, pb = _grid(data, positions, triangles, i, j)
    keep = data.tri_sphere[pa] != data.tri_sphere[pb]
    keep |= pa < pb                            # one sphere with itself: each pair once
    pa, pb = pa[keep], pb[keep]
    stats["triangle_tests"] = int(pa.size)
    hit = triangle_test(pa, pb) if pa.size else np.zeros(0, bool)
    pairs = np.sort(np.stack([pa[hit], pb[hit]], axis=1), axis=1)
    return np.unique(pairs, axis=0) if pairs.size else pairs, stats
