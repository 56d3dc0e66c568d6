"""Sphere chains for self-collision (after Madera et al. 2015), made exact.

Rest (`build`): the torso/limb regions of `regions.regions`; in each region the paper's
spheres inside the volume (`march`: limbs by a circle / ray-disk march along the limb's
axis, the torso by two spheres per disk level with the adjustment step), each holding its
surrounding region (the triangles whose rest centroid is nearest its centre, §5.1), and
`n_pivots` pivot polygons per sphere. A region where the march finds no successful
station (enough ray hits, a centre inside the mesh) is cut
into slices along its principal axis instead (limbs: one slice per bone, at most
`MAX_SLICES`; the torso: two halves per level); `construction="slices"` slices every
region (the construction before the march). Chains join two limbs through the torso
(limb a tip → root, the torso's spheres, limb b root → tip), for every pair of limbs.

Per frame (`frame_spheres`): the centre is the mean of the pivot polygons' evaluated
centroids (the paper's update); the radius is the largest distance from it to the
sphere's evaluated vertices, so the sphere encloses its triangles (O(V), vectorized). The
paper's radius (the mean distance to the pivots) is not a bound: docs/sphere_chains.md.

Query (`self_pairs`): along each chain, sphere pairs that are not the same or adjacent on
the chain (the paper's rule) and overlap give candidate regions; their triangles go
through the AABB grid (`core.hierarchy.sweep.grid_pairs`), the caller's adjacency filter and
the exact test. Exact contract: every intersecting pair of triangles whose spheres are
non-adjacent on some chain ("covered pairs"), and nothing else. `uncovered` lists the
triangles of regions on no chain (a rig with one limb has no chain).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np

from ...bounds.sphere_tree import polygon_vertex_sets
from ...cache import derived
from ...hierarchy import sweep
from ...rig import Rig
from ...types import Hierarchy
from ..obb.build import dominant_bones
from . import march
from .march import basis
from .regions import Regions, bone_order, regions

MAX_SLICES = 6
N_PIVOTS = 4
_ULP = 1.0 + 8.0 * np.finfo(np.float64).eps
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
        pivot_ptr: (S + 1,) int64, pivot_verts: (M,) int64, pivot_weight: (M,) float64:
            the vertices of each sphere's pivot polygons, weighted so that their weighted
            sum is the mean of the pivot polygons' centroids (the centre per frame).
        rest_center: (S, 3), rest_radius: (S,) the inside spheres of the construction
            (radius NaN for a sliced region's spheres, which have none).
        region_built: (K + 1,) int8 per region: 1 by the paper's march, 0 by slices.
    """

    tri_sphere: np.ndarray
    sphere_vert_ptr: np.ndarray
    sphere_verts: np.ndarray
    chain_ptr: np.ndarray
    chain_spheres: np.ndarray
    covered: np.ndarray
    uncovered: np.ndarray
    regions: Regions
    pivot_ptr: np.ndarray
    pivot_verts: np.ndarray
    pivot_weight: np.ndarray
    rest_center: np.ndarray
    rest_radius: np.ndarray
    region_built: np.ndarray

    @property
    def n_spheres(self) -> int:
        return int(self.sphere_vert_ptr.size - 1)

    def arrays(self) -> dict[str, np.ndarray]:
        """What is stored (`Prepared`); `from_arrays` reads it back."""
        return to_arrays(self)

    @property
    def sphere_hierarchy(self):
        """A `Hierarchy` whose node k is sphere k holding its triangles (for
        `sweep.leaf_entries`); made once."""
        def make() -> Hierarchy:
            order = np.argsort(self.tri_sphere, kind="stable")
            tptr = np.searchsorted(self.tri_sphere[order], np.arange(self.n_spheres + 1))
            S = self.n_spheres
            return Hierarchy(np.full(S, -1, np.int32), np.zeros(S, np.int32),
                             tptr.astype(np.int64), order.astype(np.int64))

        return derived(self, "sphere_hierarchy", make)


def _slices(points: np.ndarray, n: int, split: bool
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slice index (ordered along the principal axis) of each point, the position of
    each slice along the axis, and the axis; with `split`, two halves per slice (second
    axis)."""
    mean = points.mean(axis=0)
    d = points - mean
    _, vec = np.linalg.eigh(d.T @ d)
    t = d @ vec[:, -1]
    lo, hi = t.min(), t.max()
    k = np.minimum(((t - lo) / max(hi - lo, 1e-300) * n).astype(np.int64), n - 1)
    if split:
        k = 2 * k + (d @ vec[:, -2] > 0)
    return k, mean + np.outer((np.arange(n) + 0.5) / n * (hi - lo) + lo, vec[:, -1]), vec[:, -1]


def _limb_path(rig: Rig, reg: Regions, tri_bone: np.ndarray, cent: np.ndarray,
               r: int) -> np.ndarray:
    """The limb's axis: rest centroids of the triangles of each bone on its main path
    (from the limb's root bone outwards, at each bone the child whose subtree holds the
    most triangles), extended at both ends to the limb's extent, (P, 3); fewer than two
    points: the principal axis of the limb's triangle centroids, from the end nearer the
    torso."""
    J = rig.n_bones
    parents = rig.bone_parents
    own = np.bincount(tri_bone, minlength=J + 1)[:J].astype(np.int64)
    sub = own.copy()
    for j in bone_order(parents)[::-1]:
        if parents[j] >= 0:
            sub[parents[j]] += sub[j]
    pts = []
    j = int(reg.limb_root[r - 1])
    while j >= 0:
        if own[j]:
            pts.append(cent[tri_bone == j].mean(axis=0))
        kids = np.nonzero(parents == j)[0]
        kids = kids[sub[kids] > 0]
        j = int(kids[np.argmax(sub[kids])]) if kids.size else -1
    c = cent[reg.tri_region == r]
    if len(pts) >= 2:
        # Extend both ends to the limb's extent along the end segments, so the march
        # reaches the limb's tip (a head, a hand, a foot) and its root.
        path = np.array(pts)
        for end, nxt in ((0, 1), (-1, -2)):
            d = path[end] - path[nxt]
            d /= max(np.linalg.norm(d), 1e-300)
            reach = float(((c - path[end]) @ d).max())
            if reach > 0:
                path = np.vstack([path[:1] + reach * d, path]) if end == 0 else \
                    np.vstack([path, path[-1:] + reach * d])
        return path
    mean = c.mean(axis=0)
    d = c - mean
    _, vec = np.linalg.eigh(d.T @ d)
    t = d @ vec[:, -1]
    ends = np.array([mean + t.min() * vec[:, -1], mean + t.max() * vec[:, -1]])
    torso = cent[reg.tri_region == 0]
    tc = torso.mean(axis=0) if torso.size else cent.mean(axis=0)
    if np.linalg.norm(ends[1] - tc) < np.linalg.norm(ends[0] - tc):
        ends = ends[::-1]
    return ends


def _pivots(rig: Rig, tri_sphere: np.ndarray, centre: np.ndarray, normal: np.ndarray,
            n_pivots: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pivot polygons of each sphere (the paper's §5.1, Figure 9): `n_pivots` polygons of
    its surrounding region spread around it in the plane of its disk: for the direction
    at angle 2 pi k / n_pivots, the polygon whose rest centroid lies farthest along it and
    nearest the plane. Returns CSR (S + 1,) int64, vertices (M,) int64 and weights (M,)
    float64 with sum_v w_v P[v] = the mean of the pivot polygons' centroids; and, per pivot
    polygon, its sphere (G,) and its run in the vertices (G + 1,) (for measurements)."""
    S = centre.shape[0]
    vptr, pv = polygon_vertex_sets(rig.triangles, rig.tri_polygon, rig.poly_ptr,
                                   rig.poly_verts)
    cnt = np.diff(vptr)
    owner = np.repeat(np.arange(cnt.size), cnt)
    pc = np.zeros((cnt.size, 3))
    np.add.at(pc, owner, rig.rest_positions[pv])
    pc /= cnt[:, None]
    poly = rig.tri_polygon if rig.tri_polygon is not None else np.arange(cnt.size)
    ptr, verts, wts, groups = [0], [], [], []
    for s in range(S):
        tris = np.nonzero(tri_sphere == s)[0]
        rel = pc[tris] - centre[s]
        n = normal[s]
        u, w = basis(n)
        chosen: list[int] = []
        for k in range(n_pivots):
            a = 2 * np.pi * k / n_pivots
            d = np.cos(a) * u + np.sin(a) * w
            t = int(tris[np.argmax(rel @ d - 2.0 * np.abs(rel @ n))])
            if all(poly[t] != poly[c] for c in chosen):
                chosen.append(t)
        for t in chosen:
            vs = pv[vptr[t]:vptr[t + 1]]
            verts.append(vs)
            wts.append(np.full(vs.size, 1.0 / (len(chosen) * vs.size)))
            groups.append(s)
        ptr.append(ptr[-1] + sum(pv[vptr[t]:vptr[t + 1]].size for t in chosen))
    sizes = np.array([v.size for v in verts], np.int64)
    polys = (np.array(groups, np.int64), np.concatenate([[0], np.cumsum(sizes)]))
    return (np.array(ptr, np.int64), np.concatenate(verts).astype(np.int64),
            np.concatenate(wts)), polys


def build(rig: Rig, n_pivots: int = N_PIVOTS, construction: str = "paper") -> ChainData:
    """Spheres and chains of `rig` at rest (a loop over regions, once per rig).

    `construction`: "paper" (the circle / ray-disk march with spheres inside the volume,
    `march`; a region where it fails keeps the slices) or "slices" (every region cut into
    slices along its principal axis). `n_pivots`: pivot polygons per sphere (the paper
    uses 4) whose centroids' mean is the sphere's centre per frame."""
    reg = regions(rig)
    sp = _region_spheres(rig, reg, construction)
    S, tri_sphere = sp.count, sp.tri_sphere
    ptr, sv = _sphere_vertices(rig, tri_sphere, S)
    chains, covered = _chains(reg, sp.order_of, S)
    on_chain = np.zeros(S, bool)
    for c in chains:
        on_chain[c] = True
    cptr = np.zeros(len(chains) + 1, np.int64)
    np.cumsum([len(c) for c in chains], out=cptr[1:])
    rest_c, rest_r = np.array(sp.centres).reshape(S, 3), np.array(sp.radii, float)
    piv, polys = _pivots(rig, tri_sphere, rest_c, np.array(sp.normals).reshape(S, 3), n_pivots)
    data = ChainData(tri_sphere.astype(np.int32), ptr, sv, cptr,
                     np.array([x for c in chains for x in c], np.int64), covered,
                     np.nonzero(~on_chain[tri_sphere])[0], reg, *piv, rest_c, rest_r,
                     sp.built_by)
    # Not stored (measurements only): phi_1 before the torso's adjustment, and the pivot
    # polygons (sphere, run in pivot_verts).
    data.phi1 = (np.array(sp.phi1_c).reshape(S, 3), np.array(sp.phi1_r, float))
    data.pivot_polygons = polys
    return data


@dataclass
class _Spheres:
    """The rest spheres of every region, numbered region by region (limb slices from the
    torso outwards): the sphere of each triangle (T,) int64, each region's spheres in
    order, which regions the march built (n_limbs + 1,) int8, and per sphere its centre,
    radius (nan for a slice), disk normal and phi_1 centre and radius, as lists."""

    tri_sphere: np.ndarray
    order_of: dict[int, list[int]]
    built_by: np.ndarray
    centres: list = field(default_factory=list)
    radii: list = field(default_factory=list)
    normals: list = field(default_factory=list)
    phi1_c: list = field(default_factory=list)
    phi1_r: list = field(default_factory=list)
    count: int = 0


def _region_spheres(rig: Rig, reg: Regions, construction: str) -> _Spheres:
    """Each region's spheres: the march's (`construction` "paper") where it succeeds,
    else slices along the region's principal axis (`_add_slices`)."""
    V, T = rig.rest_positions, rig.triangles
    A, B, C = V[T[:, 0]], V[T[:, 1]], V[T[:, 2]]
    cent = (A + B + C) / 3.0
    tri_bone = dominant_bones(rig)
    mesh = (A, B, C)

    def inside(q):
        return np.abs(march.winding_numbers(q, A, B, C)) > 0.5

    sp = _Spheres(np.full(rig.n_triangles, -1, np.int64), {},
                  np.zeros(reg.n_limbs + 1, np.int8))
    torso_c = cent[reg.tri_region == 0].mean(axis=0) if (reg.tri_region == 0).any() \
        else cent.mean(axis=0)
    s = 0
    for r in range(reg.n_limbs + 1):
        tris = np.nonzero(reg.tri_region == r)[0]
        if tris.size == 0:
            sp.order_of[r] = []
            continue
        got = None
        if construction == "paper":
            if r == 0:
                got = march.torso(V[np.unique(T[tris])], A[tris], B[tris], C[tris], mesh, inside)
            else:
                path = _limb_path(rig, reg, tri_bone, cent, r)
                got = march.tubular(path, A[tris], B[tris], C[tris], mesh, inside)
        if got is not None:
            # The surrounding region of a sphere: the triangles nearest its centre (§5.1).
            d2 = ((cent[tris, None, :] - got.centres[None]) ** 2).sum(axis=2)
            near = np.argmin(d2, axis=1)
            used, local = np.unique(near, return_inverse=True)
            sp.built_by[r] = 1
            sp.centres += list(got.centres[used])
            sp.radii += list(got.radii[used])
            sp.normals += list(got.normals[used])
            sp.phi1_c += list(got.phi1_centres[used])
            sp.phi1_r += list(got.phi1_radii[used])
        else:
            used, local = _add_slices(sp, reg, cent, tris, r, torso_c)
        sp.tri_sphere[tris] = s + local
        sp.order_of[r] = list(range(s, s + used.size))
        s += used.size
    sp.count = s
    return sp


def _add_slices(sp: _Spheres, reg: Regions, cent: np.ndarray, tris: np.ndarray, r: int,
                torso_c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Region `r` (triangles `tris`, rest centroids `cent` (T, 3)) cut into slices along its
    principal axis (limbs: one per bone, at most `MAX_SLICES`, ordered from the torso
    `torso_c` outwards; the torso: two halves per level), each slice a sphere appended to
    `sp` without an inside sphere. Returns the slices used and each triangle's slice among
    them."""
    n = MAX_SLICES if r == 0 else int(np.clip((reg.bone_region[:-1] == r).sum(), 1,
                                              MAX_SLICES))
    n = max(1, min(n, tris.size // 4 or 1))
    k, pos, axis = _slices(cent[tris], n, split=(r == 0))
    used, local = np.unique(k, return_inverse=True)
    if r > 0:
        # Order limb slices from the torso outwards.
        near = np.linalg.norm(pos[0] - torso_c) <= np.linalg.norm(pos[-1] - torso_c)
        rank = used if near else (n - 1 - used)
        perm = np.argsort(rank, kind="stable")
        remap = np.empty_like(perm)
        remap[perm] = np.arange(perm.size)
        local = remap[local]
        used = used[perm]
    for q in range(used.size):
        c = cent[tris[local == q]].mean(axis=0)
        sp.centres.append(c)
        sp.radii.append(np.nan)          # no inside sphere: the region is sliced
        sp.normals.append(axis)
        sp.phi1_c.append(c)
        sp.phi1_r.append(np.nan)
    return used, local


def _sphere_vertices(rig: Rig, tri_sphere: np.ndarray, S: int) -> tuple[np.ndarray, np.ndarray]:
    """Vertices per sphere as a CSR (S + 1,) int64 over vertex indices (ascending per
    sphere): every corner of each triangle's polygon, since Blender re-splits deformed
    quads per frame (a triangle may use the quad's other corner)."""
    vptr, v = polygon_vertex_sets(rig.triangles, rig.tri_polygon, rig.poly_ptr, rig.poly_verts)
    v_s = np.repeat(tri_sphere, np.diff(vptr))
    key = np.unique(v_s * rig.n_vertices + v)
    sv_s, sv = key // rig.n_vertices, key % rig.n_vertices
    ptr = np.zeros(S + 1, np.int64)
    np.cumsum(np.bincount(sv_s, minlength=S), out=ptr[1:])
    return ptr, sv


def _chains(reg: Regions, order_of: dict[int, list[int]], S: int
            ) -> tuple[list[list[int]], np.ndarray]:
    """The chain of each limb pair (limb a tip → root, the torso's spheres, limb b root →
    tip) as sphere lists, and the covered pairs (S, S) bool: two spheres at least two
    apart on some chain."""
    chains, covered = [], np.zeros((S, S), bool)
    for a, b in reg.chains.tolist():
        seq = order_of[a][::-1] + order_of[0] + order_of[b]
        chains.append(seq)
        idx = np.array(seq)
        i, j = np.triu_indices(idx.size, 2)
        covered[idx[i], idx[j]] = covered[idx[j], idx[i]] = True
    return chains, covered


def frame_spheres(data: ChainData, positions: np.ndarray,
                  centre: str = "pivots") -> tuple[np.ndarray, np.ndarray]:
    """Per sphere: centre (S, 3) and radius (S,) at this frame.

    The centre is the mean of the evaluated centroids of the sphere's pivot polygons (the
    paper's update, `centre="pivots"`) or the mean of all its vertices (`"mean"`, the rule
    before pivots). The radius is NOT the paper's (the mean distance to the pivots bounds
    nothing, docs/sphere_chains.md) but the largest distance from that centre to the
    sphere's evaluated vertices, so the sphere encloses its triangles whatever the
    deformation (positions only)."""
    ptr = data.sphere_vert_ptr
    p = positions[data.sphere_verts]
    n = np.diff(ptr)
    if centre == "pivots":
        c = np.add.reduceat(positions[data.pivot_verts] * data.pivot_weight[:, None],
                            data.pivot_ptr[:-1], axis=0)
    else:
        c = np.add.reduceat(p, ptr[:-1], axis=0) / n[:, None]
    seg = np.repeat(np.arange(n.size), n)
    d = p - c[seg]
    # Each difference p - c is correctly rounded (relative error <= 2^-53 of |p - c|), the
    # square, sum and root add a few more relative ulps: 8 ulps cover them.
    r = np.sqrt(np.maximum.reduceat(np.einsum("ij,ij->i", d, d), ptr[:-1])) * _ULP
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


def to_arrays(data: ChainData) -> dict[str, np.ndarray]:
    out = {f.name: getattr(data, f.name) for f in fields(ChainData) if f.name != "regions"}
    for f in fields(Regions):
        out[f"regions.{f.name}"] = getattr(data.regions, f.name)
    return out


def from_arrays(d: dict[str, np.ndarray]) -> ChainData:
    reg = Regions(**{f.name: np.asarray(d[f"regions.{f.name}"]) for f in fields(Regions)})
    kw = {f.name: np.asarray(d[f.name]) for f in fields(ChainData)
          if f.name != "regions" and f.name in d}
    if "pivot_ptr" not in kw:
        # Data stored before pivots: every vertex of a sphere is a pivot (centre = mean).
        ptr = kw["sphere_vert_ptr"]
        n = np.diff(ptr)
        S = n.size
        kw.update(pivot_ptr=ptr, pivot_verts=kw["sphere_verts"],
                  pivot_weight=np.repeat(1.0 / np.maximum(n, 1), n),
                  rest_center=np.zeros((S, 3)), rest_radius=np.full(S, np.nan),
                  region_built=np.zeros(reg.n_limbs + 1, np.int8))
    return ChainData(regions=reg, **kw)
