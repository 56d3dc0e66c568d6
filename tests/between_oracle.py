"""An independent oracle for the check between two samples (issue 57), pure numpy: dense
sampling of the linear motion with the exact static triangle test.

Every vertex moves on the straight line from its position at one sample (t = 0) to the
next (t = 1). A triangle Blender splits differently at the two ends is checked as both
triangles over the whole step (its *versions*: the start split, then the end split where
it differs). A self pair of versions sharing a vertex key (weld id) at either end is
adjacent and left out, as the per-frame check leaves adjacent pairs out.

The oracle samples `TIMES` (dyadic, both ends included), and per version pair records
the sampled times at which the two closed triangles intersect
(`core.triangles.triangle_pairs_intersect`), only on version pairs whose swept boxes (the
box of their corners at both ends: it holds the triangle at every t) meet.

What it requires of an answer (`check_answer`), per triangle pair:

* a version pair disjoint at t = 0 and intersecting at a sampled time s touches first
  (vertex-face or edge-edge) at some time <= s: the pair is reported with t <= s;
* a version pair intersecting at t = 0 and disjoint at a sampled time s separates before
  s, and the last moment of an intersection is a vertex-face or edge-edge contact (a
  transversal crossing of an edge through a face's interior persists for a while): the
  pair is reported with t <= s;
* a version pair intersecting at every sampled time is the frame's static pair (the
  pipeline adds those of the start split at t = 0): it may be missing;
* every reported pair that sampling never saw touching comes, at some time no earlier
  than its t, within ``2 TOL M`` of touching under some version pair (M: the largest side
  of the box of the pair's corners at both ends, at least any query's extent), the
  kernel's documented tolerance (docs/ccd.md); its t is a lower bound of the first
  contact, not a time of nearness (docs/ccd.md, "What the scan reports"). The minimum
  over [t, 1] is searched on a grid, then around its best point, and allowed the
  distance's change over the last grid's spacing (v: how far a point of each triangle
  moves over the step bounds its speed).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from skin_collide.core import triangles as tri_test
from skin_collide.core.geometry import ccd
from skin_collide.core.geometry.distance import pair_distances

#: 128 steps plus both ends: multiples of 2^-7, exact in float64.
TIMES = np.arange(129) / 128.0


def versions(t0: np.ndarray, t1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(E, 3) versions: every triangle of the start split, then the end split of the
    triangles split differently; and (E,) their triangle."""
    t0 = np.asarray(t0, np.int64)
    t1 = np.asarray(t1, np.int64)
    flip = np.flatnonzero((t0 != t1).any(axis=1))
    return np.concatenate([t0, t1[flip]]), np.concatenate([np.arange(len(t0)), flip])


@dataclass
class Side:
    """One object over the step."""

    p0: np.ndarray
    p1: np.ndarray
    ext: np.ndarray
    owner: np.ndarray
    keys0: np.ndarray
    keys1: np.ndarray
    T: int

    def at(self, t: float) -> np.ndarray:
        return (1.0 - t) * self.p0 + t * self.p1


def side(p0, p1, t0, t1, keys0, keys1=None) -> Side:
    ext, owner = versions(t0, t1)
    keys1 = keys0 if keys1 is None else keys1
    return Side(np.asarray(p0, np.float64), np.asarray(p1, np.float64), ext, owner,
                np.asarray(keys0), np.asarray(keys1), len(t0))


def _share(ka: np.ndarray, kb: np.ndarray) -> np.ndarray:
    return (ka[:, :, None] == kb[:, None, :]).any(axis=(1, 2))


def _swept(s: Side) -> tuple[np.ndarray, np.ndarray]:
    c = np.concatenate([s.p0[s.ext], s.p1[s.ext]], axis=1)
    return c.min(axis=1), c.max(axis=1)


def version_pairs(a: Side, b: Side, same: bool) -> tuple[np.ndarray, np.ndarray]:
    """Version pairs (va, vb) whose swept boxes meet; for one object (`same`), of two
    different triangles (owner a < owner b) sharing no key at either end."""
    lo_a, hi_a = _swept(a)
    lo_b, hi_b = _swept(b)
    outa, outb = [], []
    for s in range(0, len(a.ext), 256):
        va = np.arange(s, min(s + 256, len(a.ext)))
        m = ((lo_a[va, None] <= hi_b[None]) & (lo_b[None] <= hi_a[va, None])).all(axis=2)
        i, j = np.nonzero(m)
        va_, vb_ = va[i], j
        if same:
            keep = a.owner[va_] < b.owner[vb_]
            va_, vb_ = va_[keep], vb_[keep]
            far = ~(_share(a.keys0[a.ext[va_]], a.keys0[a.ext[vb_]])
                    | _share(a.keys1[a.ext[va_]], a.keys1[a.ext[vb_]]))
            va_, vb_ = va_[far], vb_[far]
        outa.append(va_)
        outb.append(vb_)
    return np.concatenate(outa), np.concatenate(outb)


def _intersect(pa, ext_a, va, pb, ext_b, vb) -> np.ndarray:
    """(K,) bool: the versions intersect at these positions (box filter, then exact)."""
    out = np.zeros(len(va), bool)
    if not len(va):
        return out
    ca, cb = pa[ext_a[va]], pb[ext_b[vb]]
    pad = 1e-9 * (1.0 + np.abs(ca).max())
    near = ((ca.min(axis=1) <= cb.max(axis=1) + pad)
            & (cb.min(axis=1) <= ca.max(axis=1) + pad)).all(axis=1)
    k = np.flatnonzero(near)
    if k.size:
        out[k] = tri_test.triangle_pairs_intersect(pa, ext_a, va[k], pb, ext_b, vb[k])
    return out


@dataclass
class Sampled:
    """The sampled contacts of one object pair (i, j): per version pair (va, vb), the
    (K, len(TIMES)) bool matrix of the sampled times at which it intersects; and per
    triangle pair (ta, tb) its requirement (`required`)."""

    i: int
    j: int
    a: Side
    b: Side
    va: np.ndarray
    vb: np.ndarray
    hits: np.ndarray
    required: dict = field(default_factory=dict)
    static: set = field(default_factory=set)
    touching: set = field(default_factory=set)

    def key(self, va: int, vb: int) -> tuple[int, int]:
        ta, tb = int(self.a.owner[va]), int(self.b.owner[vb])
        return (min(ta, tb), max(ta, tb)) if self.i == self.j else (ta, tb)


def sample(i: int, j: int, a: Side, b: Side, times: np.ndarray = TIMES) -> Sampled:
    """Sample the object pair (i, j) (i == j: self, with `a` is `b`)."""
    same = i == j
    va, vb = version_pairs(a, b, same)
    hits = np.zeros((len(va), len(times)), bool)
    for k, t in enumerate(times):
        hits[:, k] = _intersect(a.at(t), a.ext, va, b.at(t), b.ext, vb)
    out = Sampled(i, j, a, b, va, vb, hits)
    for r in np.flatnonzero(hits.any(axis=1)):
        h = hits[r]
        if not h[0]:
            need = times[np.argmax(h)]                       # first contact <= it
        elif not h.all():
            need = times[np.argmax(~h)]                      # separates before it
        else:
            need = None                                      # static throughout
            out.static.add(out.key(va[r], vb[r]))
        key = out.key(va[r], vb[r])
        out.touching.add(key)
        if need is not None:
            out.required[key] = min(out.required.get(key, np.inf), float(need))
    return out


def frame_pairs(s: Sampled, end: int = 0) -> set:
    """The triangle pairs whose start-split (end = 0) or end-split (end = -1) triangles
    intersect at that end: what the frame reports there (before filters)."""
    col = s.hits[:, end]
    if end == 0:
        use = (s.va < s.a.T) & (s.vb < s.b.T)
    else:
        # The end split: a triangle's second version where it has one, else its first.
        use = _is_end_version(s.a, s.va) & _is_end_version(s.b, s.vb)
    return {s.key(x, y) for x, y in zip(s.va[col & use].tolist(), s.vb[col & use].tolist())}


def _is_end_version(sd: Side, v: np.ndarray) -> np.ndarray:
    has_second = np.zeros(sd.T, bool)
    has_second[sd.owner[sd.T:]] = True
    return (v >= sd.T) | ~has_second[sd.owner[v]]


def distance_at(a: Side, b: Side, va: np.ndarray, vb: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(K,) the distance of version pairs (va[k], vb[k]) at times t[k] (0 where they
    intersect)."""
    d = np.empty(len(va))
    for k in range(len(va)):                        # few pairs: reported-only checks
        pa, pb = a.at(t[k]), b.at(t[k])
        ia, ib = np.array([va[k]]), np.array([vb[k]])
        if tri_test.triangle_pairs_intersect(pa, a.ext, ia, pb, b.ext, ib)[0]:
            d[k] = 0.0
        else:
            d[k] = pair_distances(pa, a.ext, ia, pb, b.ext, ib).dist[0]
    return d


def nearest_after(a: Side, b: Side, va: np.ndarray, vb: np.ndarray, t: float,
                  n: int = 65) -> tuple[np.ndarray, np.ndarray]:
    """Per version pair, the least distance found over [t, 1] (n times, then n more
    around the best one), and how much the true least can be below it (the distance moves
    at most v per unit time, v as in `allowed_distance`, so half the last spacing times
    v)."""
    times = np.linspace(t, 1.0, n)
    d = np.stack([distance_at(a, b, va, vb, np.full(len(va), x)) for x in times], axis=1)
    best = times[np.argmin(d, axis=1)]
    h = (1.0 - t) / (n - 1)
    fine = np.stack([np.clip(best + (k / (n - 1) - 0.5) * 2 * h, t, 1.0)
                     for k in range(n)], axis=1)
    d2 = np.stack([distance_at(a, b, va, vb, fine[:, k]) for k in range(n)], axis=1)
    move = lambda sd, v: np.linalg.norm(sd.p1[sd.ext[v]] - sd.p0[sd.ext[v]], axis=2).max(axis=1)
    v = move(a, va) + move(b, vb)
    return np.minimum(d.min(axis=1), d2.min(axis=1)), v * (2 * h / (n - 1)) / 2


def allowed_distance(a: Side, b: Side, va: np.ndarray, vb: np.ndarray) -> np.ndarray:
    """(K,) the documented bound ``2 TOL M`` (module docstring), plus 1e-12 M for the
    distance's own rounding and the positions' interpolation."""
    c = np.concatenate([a.p0[a.ext[va]], a.p1[a.ext[va]], b.p0[b.ext[vb]], b.p1[b.ext[vb]]],
                       axis=1)                                               # (K, 12, 3)
    M = (c.max(axis=1) - c.min(axis=1)).max(axis=1)
    return 2.0 * ccd.TOL * M + 1e-12 * M


def all_version_pairs(s: Sampled, ta: int, tb: int) -> tuple[np.ndarray, np.ndarray]:
    """Every version pair of triangle pair (ta, tb) (self: either order), not adjacent."""
    ra = np.flatnonzero(s.a.owner == ta)
    rb = np.flatnonzero(s.b.owner == tb)
    va, vb = np.repeat(ra, len(rb)), np.tile(rb, len(ra))
    if s.i == s.j:
        far = ~(_share(s.a.keys0[s.a.ext[va]], s.a.keys0[s.a.ext[vb]])
                | _share(s.a.keys1[s.a.ext[va]], s.a.keys1[s.a.ext[vb]]))
        va, vb = va[far], vb[far]
    return va, vb


@dataclass
class Verdict:
    """What `check_answer` found, for the assertions and their messages."""

    missing: list = field(default_factory=list)        # (key, required, exact first)
    late: list = field(default_factory=list)           # (key, t, required, exact first)
    far: list = field(default_factory=list)            # (key, t, distance, allowed)
    bad_t: list = field(default_factory=list)
    unsampled: int = 0                                  # reported, never seen touching
    undecided: list = field(default_factory=list)       # (key, t, distance): far, undecided
    grazing: int = 0                                    # sampled within the static test's
                                                        # tolerance only (check_answer)
    reported: int = 0
    passing: int = 0                                    # reported, touching at neither end

    def ok(self) -> bool:
        return not (self.missing or self.late or self.far or self.bad_t)

    def __str__(self) -> str:
        return (f"missing {self.missing[:5]} ({len(self.missing)}), late {self.late[:5]} "
                f"({len(self.late)}), far {self.far[:5]} ({len(self.far)}), "
                f"bad t {self.bad_t[:5]}")


def check_answer(s: Sampled, pairs: np.ndarray, t: np.ndarray) -> Verdict:
    """Check step_pairs' answer for the object pair of `s`: (K, 2) triangle pairs and
    their (K,) times (module docstring).

    The static test counts triangles within its own rounding tolerance (~1e-12 of their
    size) as touching, so a pair that only grazes (an edge sliding 1e-16 above another in
    one plane) can be sampled as touching without ever touching exactly. A sampled pair
    reported late or missing is therefore confirmed with the exact rational reference
    (tests/ccd_reference.py) before it counts: late when its exact first vertex-face or
    edge-edge contact comes before the reported time, missing when it has one at all;
    the others are counted in ``grazing``."""
    out = Verdict()
    got = {(int(x), int(y)): float(tt) for (x, y), tt in zip(np.asarray(pairs).tolist(),
                                                            np.asarray(t).tolist())}
    out.reported = len(got)
    for key, need in sorted(s.required.items()):
        if key in got and got[key] <= need:
            continue
        first = exact_first(s, *key)
        if first is None or (key in got and got[key] <= first.hi):
            out.grazing += 1
        elif key not in got:
            out.missing.append((key, need, float(first.lo)))
        else:
            out.late.append((key, got[key], need, float(first.lo)))
    ends = frame_pairs(s, 0) | frame_pairs(s, -1)
    for key, tt in got.items():
        if not (np.isfinite(tt) and 0.0 <= tt <= 1.0):
            out.bad_t.append((key, tt))
            continue
        out.unsampled += key not in s.touching
        out.passing += key not in ends
        va, vb = all_version_pairs(s, *key)
        if not len(va):
            out.far.append((key, tt, np.inf, 0.0))
            continue
        if key in s.touching:
            continue            # touches at a sampled time, no earlier than t (above)
        d, slack = nearest_after(s.a, s.b, va, vb, tt)
        lim = allowed_distance(s.a, s.b, va, vb) + slack
        if not (d <= lim).any():
            if _undecided_at(s, va, vb, 1.0):
                out.undecided.append((key, tt, float(d.min())))
            else:
                out.far.append((key, tt, float(d.min()), float(lim[np.argmin(d)])))
    return out


def _undecided_at(s: Sampled, va: np.ndarray, vb: np.ndarray, t: float) -> bool:
    """Whether some primitive query of the version pairs is a hit the kernel did not
    decide (its work budget ran out: `ccd.CCDResult.decided` False, which docs/ccd.md
    allows to answer True at the earliest live box) at a time <= t: the documented
    tolerance holds for decided hits only."""
    for x, y in zip(va.tolist(), vb.tolist()):
        A, B = s.a.ext[x], s.b.ext[y]
        qs = {ccd.VERTEX_FACE: [], ccd.EDGE_EDGE: []}
        for (p0, p1, X), (r0, r1, Y) in (((s.a.p0, s.a.p1, A), (s.b.p0, s.b.p1, B)),
                                         ((s.b.p0, s.b.p1, B), (s.a.p0, s.a.p1, A))):
            for c in X:
                qs[ccd.VERTEX_FACE].append((np.array([p0[c], *r0[Y]]), np.array([p1[c], *r1[Y]])))
        for i, j in ((0, 1), (1, 2), (2, 0)):
            for k, m in ((0, 1), (1, 2), (2, 0)):
                e, f = sorted((A[i], A[j])), sorted((B[k], B[m]))
                qs[ccd.EDGE_EDGE].append((np.array([s.a.p0[e[0]], s.a.p0[e[1]], s.b.p0[f[0]], s.b.p0[f[1]]]),
                                          np.array([s.a.p1[e[0]], s.a.p1[e[1]], s.b.p1[f[0]], s.b.p1[f[1]]])))
        for kind, q in qs.items():
            r = ccd.ccd(kind, np.array([a for a, _ in q]), np.array([b for _, b in q]),
                        first_contact=True)
            if (r.hit & ~r.decided & (r.t <= t)).any():
                return True
    return False


def exact_first(s: Sampled, ta: int, tb: int):
    """The exact first vertex-face (both ways) or edge-edge contact over the step of the
    triangle pair's non-adjacent version pairs (a `ccd_reference.Root`), or None."""
    best = None
    va, vb = all_version_pairs(s, ta, tb)
    for x, y in zip(va.tolist(), vb.tolist()):
        r = exact_first_contact(s.a.p0, s.a.p1, s.a.ext[x], s.b.p0, s.b.p1, s.b.ext[y])
        if r is not None and (best is None or r.hi < best.hi):
            best = r
    return best


def exact_first_contact(a0, a1, tri_a, b0, b1, tri_b):
    """The exact first vertex-face (both ways) or edge-edge contact of two triangles
    moving linearly (a0 -> a1, b0 -> b1: (V, 3) positions; tri_a, tri_b: 3 vertex ids),
    as a `ccd_reference.Root` (refined to 2^-60), or None. Slow: a few pairs only."""
    import ccd_reference as ref

    def fl(rows):
        return [tuple(float(c) for c in p) for p in rows]

    qs = []
    for (pa0, pa1, ta), (pb0, pb1, tb) in (((a0, a1, tri_a), (b0, b1, tri_b)),
                                           ((b0, b1, tri_b), (a0, a1, tri_a))):
        for c in ta:
            qs.append((ref.vertex_face_first, [pa0[c], *pb0[tb]], [pa1[c], *pb1[tb]]))
    for i, j in ((0, 1), (1, 2), (2, 0)):
        for k, m in ((0, 1), (1, 2), (2, 0)):
            qs.append((ref.edge_edge_first,
                       [a0[tri_a[i]], a0[tri_a[j]], b0[tri_b[k]], b0[tri_b[m]]],
                       [a1[tri_a[i]], a1[tri_a[j]], b1[tri_b[k]], b1[tri_b[m]]]))
    best = None
    for fn, x0, x1 in qs:
        r = fn(fl(x0), fl(x1))
        if r is not None and (best is None or r.hi < best.hi):
            best = r
    return best
