"""Exact reference for continuous collision under linear motion, in rational arithmetic.

Independent of `core/geometry/ccd.py` (no bisection of (t, u, w) boxes, no tolerance):
every contact condition is written as polynomial sign conditions in t alone, and decided
exactly with `fractions.Fraction`: real roots isolated in [0, 1] by Sturm sequences, the
sign of another polynomial at an (irrational) root found by a gcd (a common root) or by
refining the root's interval until the other polynomial has no root in it.

* Point p in the closed triangle (a, b, c), possibly degenerate, at time t:
  ``n = (b - a) x (c - a)``; either ``n.n > 0``, ``n.(p - a) = 0`` and the three areas
  ``n.((b - a) x (p - a))``, ... are >= 0, or p lies on one of the three edges (a degenerate
  triangle is the union of its edges).
* Point p on the closed segment (a, b), possibly a point: ``(b - a) x (p - a) = 0`` and
  ``(p - a).(p - b) <= 0`` (for a = b this says p = a).
* Closed segments A, B: either ``m = dA x dB`` has ``m.m > 0``, ``r.m = 0`` (r = b0 - a0)
  and both line parameters ``(r x dB).m / m.m``, ``(r x dA).m / m.m`` lie in [0, 1], or an
  end point of one lies on the other (the only way parallel or degenerate segments meet).

Each alternative is a set {t in [0, 1]: E(t) = 0, G(t) >= 0, H(t) > 0}; its infimum, when
it is not empty, is 0, 1 or a root of one of the polynomials, so testing those and one
point between each two consecutive roots decides it, and gives the first contact time.
Slow (hundreds of queries, not millions); for tests only.
"""
from __future__ import annotations

from fractions import Fraction as Fr

# ---------------------------------------------------------------- polynomials in t
# A polynomial is a tuple of Fractions, lowest degree first, without trailing zeros
# (the zero polynomial is ()).


def _trim(p):
    p = list(p)
    while p and p[-1] == 0:
        p.pop()
    return tuple(p)


def padd(p, q):
    n = max(len(p), len(q))
    return _trim([(p[i] if i < len(p) else 0) + (q[i] if i < len(q) else 0) for i in range(n)])


def pneg(p):
    return tuple(-c for c in p)


def psub(p, q):
    return padd(p, pneg(q))


def pmul(p, q):
    if not p or not q:
        return ()
    out = [Fr(0)] * (len(p) + len(q) - 1)
    for i, a in enumerate(p):
        if a:
            for j, b in enumerate(q):
                out[i + j] += a * b
    return _trim(out)


def peval(p, x):
    acc = Fr(0)
    for c in reversed(p):
        acc = acc * x + c
    return acc


def pderiv(p):
    return _trim([i * p[i] for i in range(1, len(p))])


def pdivmod(p, q):
    """Long division by a non-zero q."""
    p = list(p)
    out = [Fr(0)] * max(len(p) - len(q) + 1, 1)
    lead = q[-1]
    while len(p) >= len(q) and p:
        k = len(p) - len(q)
        c = p[-1] / lead
        out[k] = c
        for i, b in enumerate(q):
            p[i + k] -= c * b
        p = list(_trim(p))
    return _trim(out), tuple(p)


def pmonic(p):
    return tuple(c / p[-1] for c in p) if p else ()


def pgcd(p, q):
    p, q = _trim(p), _trim(q)
    while q:
        p, q = q, pdivmod(p, q)[1]
    return pmonic(p)


def psquarefree(p):
    g = pgcd(p, pderiv(p))
    return pmonic(pdivmod(p, g)[0]) if len(g) > 1 else pmonic(p)


def deg(p):
    return len(p) - 1


def _sign(x):
    return (x > 0) - (x < 0)


class Sturm:
    """The Sturm sequence of a square-free polynomial: distinct real roots in (a, b]."""

    def __init__(self, p):
        seq = [p, pderiv(p)]
        while seq[-1]:
            r = pdivmod(seq[-2], seq[-1])[1]
            if not r:
                break
            seq.append(pneg(r))
        self.seq = [s for s in seq if s]

    def variations(self, x):
        signs = [s for s in (_sign(peval(q, x)) for q in self.seq) if s]
        return sum(1 for a, b in zip(signs, signs[1:]) if a != b)

    def count(self, a, b):
        return self.variations(a) - self.variations(b)


class Root:
    """A real root of the square-free ``p``: exact (``lo == hi``) or the only root of p in
    the open interval (lo, hi), where p does not vanish at lo nor hi."""

    def __init__(self, p, lo, hi):
        self.p, self.lo, self.hi = p, Fr(lo), Fr(hi)

    def exact(self):
        return self.lo == self.hi

    def bisect(self):
        m = (self.lo + self.hi) / 2
        pm = peval(self.p, m)
        if pm == 0:
            self.lo = self.hi = m
        elif _sign(pm) == _sign(peval(self.p, self.lo)):
            self.lo = m
        else:
            self.hi = m

    def refine(self, width):
        while not self.exact() and self.hi - self.lo > width:
            self.bisect()
        return self

    def sign_of(self, q):
        """The sign of q at this root, exactly."""
        if not q:
            return 0
        if self.exact():
            return _sign(peval(q, self.lo))
        g = pgcd(self.p, q)
        if deg(g) > 0 and Sturm(psquarefree(g)).count(self.lo, self.hi) > 0:
            return 0                     # the root is a root of g, hence of q
        qs = Sturm(psquarefree(q))
        while True:
            if self.exact():
                return _sign(peval(q, self.lo))
            ql, qh = peval(q, self.lo), peval(q, self.hi)
            if ql != 0 and qh != 0 and qs.count(self.lo, self.hi) == 0:
                return _sign(ql)
            self.bisect()


def roots01(p):
    """The distinct real roots of p (not zero) in [0, 1], increasing, as `Root`s."""
    p = psquarefree(p)
    out = []
    if deg(p) <= 0:
        return out
    if peval(p, Fr(0)) == 0:
        out.append(Root(p, 0, 0))
    end = [Root(p, 1, 1)] if peval(p, Fr(1)) == 0 else []
    # Deflate the end points so that the open interval (0, 1) has non-root ends.
    q = p
    for r in (Fr(0), Fr(1)):
        if peval(q, r) == 0:
            q = pdivmod(q, (-r, Fr(1)))[0]
    if deg(q) > 0:
        st = Sturm(q)

        def iso(lo, hi):
            k = st.count(lo, hi)
            if k == 0:
                return []
            if k == 1:
                return [Root(q, lo, hi)]
            m = (lo + hi) / 2
            if peval(q, m) == 0:
                return iso(lo, m) + [Root(q, m, m)] + iso(m, hi)
            return iso(lo, m) + iso(m, hi)

        out += iso(Fr(0), Fr(1))
    return out + end


def first_time(eqs, ges, gts):
    """The infimum of {t in [0, 1]: all eqs = 0, ges >= 0, gts > 0} as a `Root` (or a
    Fraction's Root), or None when the set is empty."""
    eqs = [e for e in eqs if e]
    ges = [g for g in ges if g]
    if any(not h for h in gts):
        return None                       # 0 > 0 never holds
    if eqs:
        g = eqs[0]
        for e in eqs[1:]:
            g = pgcd(g, e)
        if deg(g) <= 0:
            return None
        for r in roots01(g):
            if all(r.sign_of(x) >= 0 for x in ges) and all(r.sign_of(x) > 0 for x in gts):
                return r
        return None
    # No equation: the sign pattern is constant on each open gap between consecutive
    # roots of the others (and 0, 1), so test each root and one point in each gap, in
    # increasing order; the first that holds is the infimum (a gap's: its left end).
    prod = (Fr(1),)
    for x in ges + gts:
        prod = pmul(prod, x)
    rs = roots01(prod) if deg(prod) > 0 else []
    inner = [r for r in rs if not (r.exact() and r.lo in (0, 1))]
    pts = [Root((Fr(0), Fr(1)), 0, 0)] + inner + [Root((-Fr(1), Fr(1)), 1, 1)]

    def holds_at(x):
        return all(peval(g, x) >= 0 for g in ges) and all(peval(h, x) > 0 for h in gts)

    def holds_root(r):
        return all(r.sign_of(g) >= 0 for g in ges) and all(r.sign_of(h) > 0 for h in gts)

    if holds_root(pts[0]):
        return pts[0]
    for left, right in zip(pts, pts[1:]):
        if holds_at(_between(left, right)):
            return left
        if holds_root(right):
            return right
    return None


def _between(a, b):
    """A rational strictly between the roots a < b (refining their intervals)."""
    while a.hi >= b.lo:
        if not a.exact() and (b.exact() or a.hi - a.lo >= b.hi - b.lo):
            a.bisect()
        else:
            b.bisect()
    return (a.hi + b.lo) / 2


# ---------------------------------------------------------------- vectors of polynomials

def lerp(x0, x1):
    """The moving point x0 + t (x1 - x0) as 3 polynomials."""
    return tuple(_trim((Fr(a), Fr(b) - Fr(a))) for a, b in zip(x0, x1))


def vsub(a, b):
    return tuple(psub(x, y) for x, y in zip(a, b))


def vdot(a, b):
    out = ()
    for x, y in zip(a, b):
        out = padd(out, pmul(x, y))
    return out


def vcross(a, b):
    return (psub(pmul(a[1], b[2]), pmul(a[2], b[1])),
            psub(pmul(a[2], b[0]), pmul(a[0], b[2])),
            psub(pmul(a[0], b[1]), pmul(a[1], b[0])))


def _on_segment(p, a, b):
    """(eqs, ges, gts) of: p on the closed segment a b."""
    return list(vcross(vsub(b, a), vsub(p, a))), [pneg(vdot(vsub(p, a), vsub(p, b)))], []


def _in_face(p, a, b, c):
    n = vcross(vsub(b, a), vsub(c, a))
    ges = [vdot(n, vcross(vsub(b, a), vsub(p, a))), vdot(n, vcross(vsub(c, b), vsub(p, b))),
           vdot(n, vcross(vsub(a, c), vsub(p, c)))]
    return [vdot(n, vsub(p, a))], ges, [vdot(n, n)]


def _segments_cross(a0, a1, b0, b1):
    da, db, r = vsub(a1, a0), vsub(b1, b0), vsub(b0, a0)
    m = vcross(da, db)
    mm = vdot(m, m)
    s = vdot(vcross(r, db), m)
    u = vdot(vcross(r, da), m)
    return [vdot(r, m)], [s, psub(mm, s), u, psub(mm, u)], [mm]


def _earliest(systems):
    best = None
    for eqs, ges, gts in systems:
        r = first_time(eqs, ges, gts)
        if r is not None:
            r.refine(Fr(1, 2 ** 60))
            if best is None or r.hi < best.hi:
                best = r
    return best


def vertex_face_first(x0, x1):
    """The first contact time of the (4, 3) vertex-face query as a `Root` (its interval
    [lo, hi] holds it), or None. Inputs: nested sequences of floats or Fractions."""
    p, a, b, c = (lerp(x0[i], x1[i]) for i in range(4))
    return _earliest([_in_face(p, a, b, c), _on_segment(p, a, b), _on_segment(p, b, c),
                      _on_segment(p, c, a)])


def edge_edge_first(x0, x1):
    """The first contact time of the (4, 3) edge-edge query, or None."""
    a0, a1, b0, b1 = (lerp(x0[i], x1[i]) for i in range(4))
    return _earliest([_segments_cross(a0, a1, b0, b1), _on_segment(a0, b0, b1),
                      _on_segment(a1, b0, b1), _on_segment(b0, a0, a1), _on_segment(b1, a0, a1)])


# ---------------------------------------------------------------- exact distances at a time

def _at(x0, x1, t):
    t = Fr(t)
    return [tuple(Fr(a) + t * (Fr(b) - Fr(a)) for a, b in zip(x0[i], x1[i])) for i in range(4)]


def _d(a, b):
    return tuple(x - y for x, y in zip(a, b))


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def point_segment_d2(p, a, b):
    d = _d(b, a)
    dd = _dot(d, d)
    s = Fr(0) if dd == 0 else min(Fr(1), max(Fr(0), _dot(_d(p, a), d) / dd))
    x = tuple(ai + s * di for ai, di in zip(a, d))
    return _dot(_d(p, x), _d(p, x))


def point_triangle_d2(p, a, b, c):
    best = min(point_segment_d2(p, a, b), point_segment_d2(p, b, c), point_segment_d2(p, c, a))
    n = _cross(_d(b, a), _d(c, a))
    nn = _dot(n, n)
    if nn:
        inside = (_dot(n, _cross(_d(b, a), _d(p, a))) >= 0 and _dot(n, _cross(_d(c, b), _d(p, b))) >= 0
                  and _dot(n, _cross(_d(a, c), _d(p, c))) >= 0)
        if inside:
            best = min(best, _dot(n, _d(p, a)) ** 2 / nn)
    return best


def segment_segment_d2(a0, a1, b0, b1):
    best = min(point_segment_d2(a0, b0, b1), point_segment_d2(a1, b0, b1),
               point_segment_d2(b0, a0, a1), point_segment_d2(b1, a0, a1))
    da, db, r0 = _d(a1, a0), _d(b1, b0), _d(a0, b0)
    m = _cross(da, db)
    mm = _dot(m, m)
    if mm:
        # Normal equations of |r0 + s da - u db|^2; determinant -mm.
        a, b, c = _dot(da, da), _dot(da, db), _dot(db, db)
        e, f = -_dot(da, r0), -_dot(db, r0)
        det = -a * c + b * b
        s = (e * -c - (-b) * f) / det
        u = (a * f - b * e) / det
        if 0 <= s <= 1 and 0 <= u <= 1:
            x = tuple(r + s * p - u * q for r, p, q in zip(r0, da, db))
            best = min(best, _dot(x, x))
    return best


def vertex_face_d2(x0, x1, t):
    """Exact squared distance of the vertex-face query at the rational time t."""
    return point_triangle_d2(*_at(x0, x1, t))


def edge_edge_d2(x0, x1, t):
    """Exact squared distance of the edge-edge query at the rational time t."""
    return segment_segment_d2(*_at(x0, x1, t))
