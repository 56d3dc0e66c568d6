"""The paper's sphere construction (Madera et al. 2015, §3): spheres inside the volume.

* Tubular regions (limbs, §3.1): a circle marches along the limb's axis, a polyline
  through the rest centroids of the triangles of the limb's main bone path (from the
  torso outwards, following the heaviest child). At each station a disk of `N_RAYS` rays
  in the plane normal to the axis is cast from the axis point against the limb's
  triangles; the disk is recentred once on the hits' centroid (the circle finds the
  cross-section's centre) and cast again. A sphere is made at the hits' centroid with the
  largest radius that stays inside the surface (the distance from the centre to the
  nearest triangle of the whole mesh: it "has the exact size as it collides with the
  surface"), and the next sphere where the axial distance reaches
  `(1 - PD) (r_last + r)` (the paper's penetration depth PD = 30 %).
* The torso (non-tubular, §3.2): the same disk marches along the torso's principal axis;
  each level gets two spheres (`N_s = 2`), one per half of the disk's hits (split by the
  torso's second principal axis). Adjustment: each half's sphere starts at its hits'
  centroid (phi_1) and is moved toward the disk centre (candidates `t` in [0, 1]), its
  radius scaled down to the distance to the surface, keeping the candidate with the
  smallest F (phi_1').

A station fails when fewer than `MIN_HIT` of its rays hit the region (the disk is
outside the limb, at a branching such as a hand with fingers, or past the limb's end), or
the centre is outside the mesh (generalized winding number below one half). A region
with no successful station keeps the slicing of `chains._slices` (its spheres then have
no inside sphere; `ChainData.region_built` says which).

F (§3.2): for a sphere (c, r) and the vertices v_i of its surrounding region,
F_i = | r - ||c - v_i|| |; `accuracy` gives the mean over the vertices, for the built
spheres and for the minimal enclosing ball of the same vertices (Welzl's phi_2 in the
paper; `core.bounds.balls.minimal_balls` here).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

N_RAYS = 80          # the paper's N_r
PD = 0.3             # the paper's penetration depth between consecutive spheres
N_STATIONS = 48      # disk positions per region (the paper's step delta = length / 48)
MIN_HIT = 0.9        # share of a station's rays that must hit the region
ADJUST_STEPS = 6     # torso adjustment: candidate positions toward the disk centre
_CHUNK = 2_000_000   # point x triangle entries per vectorized block


def _cross(a, b):
    return np.cross(a, b)


def ray_hits(o: np.ndarray, d: np.ndarray, A: np.ndarray, B: np.ndarray,
             C: np.ndarray) -> np.ndarray:
    """(R,) distance along each ray o + t d (t > 0) to the nearest triangle, inf if none
    (Möller–Trumbore, all rays x triangles at once)."""
    if A.shape[0] == 0:
        return np.full(d.shape[0], np.inf)
    e1, e2 = B - A, C - A
    pv = np.cross(d[:, None, :], e2[None])                     # (R, T, 3)
    det = np.einsum("tk,rtk->rt", e1, pv)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / det
        tv = o - A                                             # (T, 3)
        u = np.einsum("tk,rtk->rt", tv, pv) * inv
        qv = np.cross(tv, e1)                                  # (T, 3)
        v = np.einsum("rk,tk->rt", d, qv) * inv
        t = np.einsum("tk,tk->t", e2, qv)[None] * inv
        ok = (np.abs(det) > 1e-300) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 0)
    return np.where(ok, t, np.inf).min(axis=1)


def distance_to_triangles(q: np.ndarray, A: np.ndarray, B: np.ndarray,
                          C: np.ndarray, bound: float | None = None) -> np.ndarray:
    """(N,) distance from each point to the nearest of the triangles (closest point on a
    triangle by its Voronoi regions, Ericson 2005 §5.1.5), in blocks. With `bound` (known
    to be at least every answer, e.g. the distance to a point on the surface), triangles
    whose box is farther than it from every point are skipped."""
    q = np.atleast_2d(q)
    if bound is not None and A.shape[0]:
        lo = np.minimum(np.minimum(A, B), C)
        hi = np.maximum(np.maximum(A, B), C)
        g = np.maximum(np.maximum(lo - q.max(axis=0), q.min(axis=0) - hi), 0.0)
        near = (g * g).sum(axis=1) <= bound * bound * (1 + 1e-9)
        A, B, C = A[near], B[near], C[near]
    out = np.full(q.shape[0], np.inf)
    step = max(1, _CHUNK // max(A.shape[0], 1))
    ab, ac = B - A, C - A
    for s in range(0, q.shape[0], step):
        p = q[s:s + step, None, :]
        ap, bp, cp = p - A, p - B, p - C
        d1, d2 = (ab * ap).sum(-1), (ac * ap).sum(-1)
        d3, d4 = (ab * bp).sum(-1), (ac * bp).sum(-1)
        d5, d6 = (ab * cp).sum(-1), (ac * cp).sum(-1)
        va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
        with np.errstate(divide="ignore", invalid="ignore"):
            den = va + vb + vc
            v, w = vb / den, vc / den
            x = A + ab * v[..., None] + ac * w[..., None]        # interior
            wbc = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            m = (va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0)
            x = np.where(m[..., None], B + (C - B) * wbc[..., None], x)
            m = (vb <= 0) & (d2 >= 0) & (d6 <= 0)
            x = np.where(m[..., None], A + ac * (d2 / (d2 - d6))[..., None], x)
            m = (d6 >= 0) & (d5 <= d6)
            x = np.where(m[..., None], C, x)
            m = (vc <= 0) & (d1 >= 0) & (d3 <= 0)
            x = np.where(m[..., None], A + ab * (d1 / (d1 - d3))[..., None], x)
            m = (d3 >= 0) & (d4 <= d3)
            x = np.where(m[..., None], B, x)
            m = (d1 <= 0) & (d2 <= 0)
            x = np.where(m[..., None], A, x)
        dist = np.sqrt(((p - x) ** 2).sum(-1))
        out[s:s + step] = np.nanmin(np.where(np.isfinite(dist), dist, np.inf), axis=1)
    return out


def winding_numbers(q: np.ndarray, A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    """(N,) generalized winding number of the triangles about each point (Van Oosterom &
    Strackee's solid angle summed over triangles, / 4 pi); about ±1 inside a closed
    surface, 0 outside, in between near holes."""
    q = np.atleast_2d(q)
    out = np.zeros(q.shape[0])
    step = max(1, _CHUNK // max(A.shape[0], 1))
    for s in range(0, q.shape[0], step):
        p = q[s:s + step, None, :]
        a, b, c = A - p, B - p, C - p
        la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
        num = (a * np.cross(b, c)).sum(-1)
        den = la * lb * lc + (a * b).sum(-1) * lc + (b * c).sum(-1) * la + (c * a).sum(-1) * lb
        out[s:s + step] = 2.0 * np.arctan2(num, den).sum(axis=1) / (4.0 * np.pi)
    return out


def basis(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([1.0, 0, 0]) if abs(n[0]) < 0.9 else np.array([0, 1.0, 0])
    u = np.cross(n, a)
    u /= np.linalg.norm(u)
    return u, np.cross(n, u)


@dataclass
class Station:
    """A successful disk position: centre, the plane's normal, the hits (N, 3)."""

    centre: np.ndarray
    normal: np.ndarray
    hits: np.ndarray
    axial: float


def _disk(o, n, A, B, C, crossing) -> np.ndarray | None:
    """The disk's hits from o in the plane normal to n (None when too few rays hit)."""
    u, w = basis(n)
    th = 2 * np.pi * np.arange(N_RAYS) / N_RAYS
    d = np.cos(th)[:, None] * u + np.sin(th)[:, None] * w
    sel = crossing(o, n)
    t = ray_hits(o, d, A[sel], B[sel], C[sel])
    ok = np.isfinite(t)
    if ok.mean() < MIN_HIT:
        return None
    return o + d[ok] * t[ok, None]


def march(path: np.ndarray, A, B, C) -> list[Station]:
    """Stations of the disk along the polyline `path` (P, 3), P >= 2, against the
    triangles (A, B, C) of the region: each recentred once on its hits' centroid."""
    seg = np.diff(path, axis=0)
    ln = np.linalg.norm(seg, axis=1)
    keep = ln > 0
    if not keep.any():
        return []
    path = np.vstack([path[:1], path[1:][keep]])
    seg, ln = seg[keep], ln[keep]
    cum = np.concatenate([[0], np.cumsum(ln)])
    L = cum[-1]
    tri_pts = np.stack([A, B, C], axis=1)                 # (T, 3, 3)

    def crossing(o, n):
        s = (tri_pts - o) @ n
        return (s.min(axis=1) <= 0) & (s.max(axis=1) >= 0)

    out = []
    for x in (np.arange(N_STATIONS) + 0.5) / N_STATIONS * L:
        k = min(int(np.searchsorted(cum, x, side="right")) - 1, seg.shape[0] - 1)
        n = seg[k] / ln[k]
        # Smooth the normal across polyline joints (half a segment on either side).
        if k + 1 < seg.shape[0] and x > cum[k] + 0.5 * ln[k]:
            n = n + seg[k + 1] / ln[k + 1]
        elif k > 0 and x < cum[k] + 0.5 * ln[k]:
            n = n + seg[k - 1] / ln[k - 1]
        n /= np.linalg.norm(n)
        o = path[k] + seg[k] / ln[k] * (x - cum[k])
        h = _disk(o, n, A, B, C, crossing)
        if h is None:
            continue
        h2 = _disk(h.mean(axis=0), n, A, B, C, crossing)
        if h2 is None:
            continue
        out.append(Station(h2.mean(axis=0), n, h2, float(x)))
    return out


@dataclass
class Built:
    """Inside spheres of a region: centres (S, 3), radii (S,), the plane normal of each
    (S, 3), the level of each (torso: two per level), and phi_1 before the adjustment
    (torso only; equal to the sphere elsewhere)."""

    centres: np.ndarray
    radii: np.ndarray
    normals: np.ndarray
    phi1_centres: np.ndarray
    phi1_radii: np.ndarray
    level: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def tubular(path: np.ndarray, A, B, C, mesh_tris: tuple, inside) -> Built | None:
    """Spheres along a limb (None when no station succeeds)."""
    st = march(path, A, B, C)
    if not st:
        return None
    cen = np.array([s.centre for s in st])
    near = max(float(np.linalg.norm(s.hits - s.centre, axis=1).min()) for s in st)
    rad = distance_to_triangles(cen, *mesh_tris, bound=near)
    cs, rs, ns = [], [], []
    last = None
    for s, c, r in zip(st, cen, rad):
        if r <= 0:
            continue
        if (last is None or s.axial - last[0] >= (1 - PD) * (last[1] + r)) \
                and inside(c[None])[0]:
            cs.append(c)
            rs.append(r)
            ns.append(s.normal)
            last = (s.axial, r)
    if not cs:
        return None
    c, r = np.array(cs), np.array(rs)
    return Built(c, r, np.array(ns), c.copy(), r.copy(), np.arange(len(cs)))


def torso(points: np.ndarray, A, B, C, mesh_tris: tuple, inside) -> Built | None:
    """Two spheres per level along the torso's principal axis, adjusted (None when no
    level succeeds)."""
    mean = points.mean(axis=0)
    d = points - mean
    _, vec = np.linalg.eigh(d.T @ d)
    ax, side = vec[:, -1], vec[:, -2]
    t = d @ ax
    path = np.array([mean + t.min() * ax, mean + t.max() * ax])
    st = march(path, A, B, C)
    cs, rs, ns, c1s, r1s, lv = [], [], [], [], [], []
    last = None
    level = 0
    for s in st:
        sd = side - (side @ s.normal) * s.normal
        halves = (s.hits - s.centre) @ sd > 0
        if halves.all() or not halves.any():
            continue
        cand, phi1 = [], []
        for h in (False, True):
            H = s.hits[halves == h]
            q = H.mean(axis=0)
            ts = np.linspace(0.0, 1.0, ADJUST_STEPS)
            cc = q + ts[:, None] * (s.centre - q)
            near = float(np.linalg.norm(H[None] - cc[:, None], axis=2).min(axis=1).max())
            rr = distance_to_triangles(cc, *mesh_tris, bound=near)
            F = np.abs(rr[:, None] - np.linalg.norm(H[None] - cc[:, None], axis=2)).mean(axis=1)
            F[rr <= 0] = np.inf
            b = -1
            for k in np.argsort(F, kind="stable"):    # the best F whose centre is inside
                if np.isfinite(F[k]) and inside(cc[k:k + 1])[0]:
                    b = int(k)
                    break
            if b < 0:
                break
            cand.append((cc[b], rr[b]))
            ok0 = b == 0 or (rr[0] > 0 and inside(cc[:1])[0])
            phi1.append((cc[0], rr[0]) if ok0 else (cc[b], rr[b]))
        if len(cand) < 2:
            continue
        r_here = 0.5 * (cand[0][1] + cand[1][1])
        if last is not None and s.axial - last[0] < (1 - PD) * (last[1] + r_here):
            continue
        for (c, r), (c1, r1) in zip(cand, phi1):
            cs.append(c)
            rs.append(r)
            ns.append(s.normal)
            c1s.append(c1)
            r1s.append(r1)
            lv.append(level)
        last = (s.axial, r_here)
        level += 1
    if not cs:
        return None
    return Built(np.array(cs), np.array(rs), np.array(ns), np.array(c1s), np.array(r1s),
                 np.array(lv, np.int64))


def accuracy(points: np.ndarray, ptr: np.ndarray, centres: np.ndarray,
             radii: np.ndarray) -> np.ndarray:
    """(S,) the paper's F per sphere: mean over its points of | r - ||c - v|| |."""
    n = np.diff(ptr)
    seg = np.repeat(np.arange(n.size), n)
    f = np.abs(radii[seg] - np.linalg.norm(points - centres[seg], axis=1))
    s = np.zeros(n.size)
    np.add.at(s, seg, f)
    return s / np.maximum(n, 1)
