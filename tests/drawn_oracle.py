"""Blender's own answer on what it DRAWS (issue 40), read apart from the product: every mesh
instance of ``depsgraph.object_instances`` at the current frame (real objects and
collection instances alike, whatever moves them: Armature modifier or armature parent,
shape keys, Surface/Mesh Deform, Corrective Smooth, a mesh cache...), world positions as
drawn (the evaluated mesh's float32 positions read as float64, then the instance's
``matrix_world`` in float64), the evaluated loop triangles and their polygons.

The pairs are ``BVHTree.overlap`` (epsilon 0, world space) between every two instances and,
with self-collision, within each, through `test_strong_poses_blender.reference_pairs`.
Adjacency is decided per frame, in this frame's positions only: within one instance two
triangles are adjacent (dropped) when they share a vertex index or a corner at a
bit-identical world position (seam corners Blender draws together); between two instances
nothing is dropped, unless the test names them parts of one character (then corners at one
position are shared across them too). The raw, undropped overlap is kept as well.

Names, as the scan report names objects: a real object by its full name (``name_full``:
``Body [lib.blend]`` for a linked one); an instance as ``<instancer>/<mesh object>``, the
instancer the top-level object whose collection is instanced (``inst.parent``). A nested
instance (a collection instanced inside an instanced collection) is named through every
instancer, ``<outer>/<inner>/<mesh>``: ``inst.parent`` is only the outermost instancer, and
``inst.persistent_id`` lists, innermost first and padded with INT_MAX, the index of the
mesh object then of each inner instancer in its collection's ``all_objects``.

`verdict` compares a scan report's polygon pairs with the truth at one frame, by the rules
of `test_strong_poses_blender.judge` applied per polygon pair (the report's unit; `judge`
itself takes triangle pairs and would fault a reported quad of which only one triangle
meets): no pair the truth has is missed unless each of its triangle pairs is exactly
disjoint (a float32 artifact of Blender's test, `meets`); every reported pair is in
Blender's raw overlap, or one of its triangle pairs meets exactly or lies within the
judge's `TOUCH` x max(1, |coordinate|) (a distance here: growing triangles from their
centroids, `meets(..., grow=TOUCH)`, misses coplanar contacts and seam corners a few ulps
apart); and no reported pair names a mesh the test did not name as a participant.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from studio_helpers import drawn_arrays
from test_strong_poses_blender import TOUCH, meets, reference_pairs

#: The padding of ``DepsgraphObjectInstance.persistent_id`` past the instance's depth.
NO_ID = 2**31 - 1


@dataclass
class Drawn:
    """One drawn mesh instance at one frame."""
    name: str
    pos: np.ndarray          # (V, 3) float64, world
    tris: np.ndarray         # (T, 3) int64 vertex indices (loop triangles)
    poly: np.ndarray         # (T,) int64 polygon of each triangle
    is_instance: bool = False

    def triangles_of(self, polygon: int) -> np.ndarray:
        """The loop triangles of `polygon` (none for a polygon the mesh does not have)."""
        if not hasattr(self, "_order"):
            self._order = np.argsort(self.poly, kind="stable")
            self._sorted = self.poly[self._order]
        lo, hi = np.searchsorted(self._sorted, [polygon, polygon + 1])
        return self._order[lo:hi]


@dataclass
class Truth:
    """Blender's pairs at one frame between and within the participants."""
    drawn: list[Drawn]
    tri_pairs: set                       # {(i, j, a, b)}: i <= j, a < b when i == j; adjacency dropped
    raw_tri_pairs: set                   # the same, nothing dropped
    pairs: set = field(default_factory=set)       # canonical polygon pairs (`canonical`)
    raw_pairs: set = field(default_factory=set)
    by_pair: dict = field(default_factory=dict)   # polygon pair -> [(i, j, a, b)] of `tri_pairs`

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.drawn]


def canonical(a: str, pa: int, b: str, pb: int) -> tuple:
    """A polygon pair in one order: (name, polygon) pairs sorted (self pairs: pa < pb)."""
    x, y = (a, int(pa)), (b, int(pb))
    return (*x, *y) if x <= y else (*y, *x)


def instance_name(inst) -> str:
    """The name of a drawn instance, as the module docstring says."""
    if not inst.is_instance:
        return inst.object.original.name_full
    mesh = inst.instance_object.original
    top = inst.parent.original
    path = [top.name]
    ids = [int(i) for i in inst.persistent_id if int(i) != NO_ID]
    coll = top.instance_collection if top.instance_type == "COLLECTION" else None
    for idx in reversed(ids[1:]):           # outer to inner instancers below the top one
        if coll is None or idx >= len(coll.all_objects):
            break
        ob = coll.all_objects[idx]
        path.append(ob.name)
        coll = ob.instance_collection if ob.instance_type == "COLLECTION" else None
    path.append(mesh.name)
    return "/".join(path)


def _read(inst) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    ob = inst.instance_object if inst.is_instance else inst.object
    pos, tris, poly = drawn_arrays(ob.data, inst.matrix_world)
    return pos, tris.astype(np.int64), poly.astype(np.int64)


def drawn_meshes(depsgraph, participants=None) -> list[Drawn]:
    """The mesh instances the depsgraph draws (real objects only when ``show_self``),
    those named in `participants` when given, in the depsgraph's order. Every participant
    must be drawn, once."""
    out = []
    for inst in depsgraph.object_instances:
        ob = inst.instance_object if inst.is_instance else inst.object
        if ob is None or ob.type != "MESH":
            continue
        if not inst.is_instance and not inst.show_self:
            continue
        name = instance_name(inst)
        if participants is not None and name not in participants:
            continue
        out.append(Drawn(name, *_read(inst), is_instance=bool(inst.is_instance)))
    names = [d.name for d in out]
    assert len(set(names)) == len(names), f"two drawn instances share a name: {sorted(names)}"
    if participants is not None:
        missing = set(participants) - set(names)
        assert not missing, f"not drawn: {sorted(missing)} (drawn: {sorted(names)})"
    return out


def frame_keys(drawn: list[Drawn], characters=()) -> list[np.ndarray]:
    """Per instance, (V,) keys equal <=> same instance (or one character: `characters`
    lists groups of names) and bit-identical world position in this frame."""
    group = {d.name: k for k, d in enumerate(drawn)}
    for g, names in enumerate(characters):
        for n in names:
            group[n] = len(drawn) + g
    rows = [np.hstack([np.full((len(d.pos), 1), float(group[d.name])), d.pos]) for d in drawn]
    inv = np.unique(np.concatenate(rows), axis=0, return_inverse=True)[1].reshape(-1)
    out, s = [], 0
    for d in drawn:
        out.append(inv[s:s + len(d.pos)].astype(np.int64))
        s += len(d.pos)
    return out


def _raw_overlap(drawn: list[Drawn], self_collision: bool) -> set:
    from mathutils.bvhtree import BVHTree

    trees = [BVHTree.FromPolygons(d.pos.tolist(), d.tris.tolist(), all_triangles=True,
                                  epsilon=0.0) for d in drawn]
    out = set()
    for i in range(len(drawn)):
        for j in range(i if self_collision else i + 1, len(drawn)):
            for a, b in trees[i].overlap(trees[j]):
                if i == j:
                    if a == b:
                        continue
                    a, b = min(a, b), max(a, b)
                out.add((i, j, a, b))
    return out


def truth(depsgraph, participants, self_collision: bool = True, characters=()) -> Truth:
    """Blender's pairs at the current frame between (and, with `self_collision`, within)
    the drawn instances named in `participants`; `characters`: groups of names that are
    parts of one character (adjacency across them as within one instance)."""
    drawn = drawn_meshes(depsgraph, participants)
    keys = frame_keys(drawn, characters)
    tri = reference_pairs([d.pos for d in drawn], [d.tris for d in drawn], keys, self_collision)
    raw = _raw_overlap(drawn, self_collision)
    t = Truth(drawn, tri, raw)
    for i, j, a, b in sorted(tri):
        pa, pb = drawn[i].poly[a], drawn[j].poly[b]
        if i == j and pa == pb:
            continue
        key = canonical(drawn[i].name, pa, drawn[j].name, pb)
        t.pairs.add(key)
        t.by_pair.setdefault(key, []).append((i, j, a, b))
    for i, j, a, b in raw:
        pa, pb = drawn[i].poly[a], drawn[j].poly[b]
        if not (i == j and pa == pb):
            t.raw_pairs.add(canonical(drawn[i].name, pa, drawn[j].name, pb))
    return t


def reported(frame_pairs) -> set:
    """A report frame's pairs ``[objA, polyA, objB, polyB]`` as canonical pairs."""
    return {canonical(*p) for p in frame_pairs}


#: `verdict` stops judging a side after this many confirmed faults (the test fails anyway;
#: each judgement is exact rational arithmetic).
ENOUGH = 20


@dataclass
class Verdict:
    """One frame's comparison (polygon pairs)."""
    oracle: int                # Blender's pairs, adjacency dropped
    missing: int               # of those, not in the report
    missed: list               # missing pairs that meet exactly (at most ENOUGH listed)
    excused: int               # missing pairs judged exactly disjoint (float32 artifacts)
    unknown: list              # reported pairs naming a mesh that is not a participant
    beyond: int                # reported pairs not in Blender's raw overlap
    extra: list                # of those, neither meeting nor touching (at most ENOUGH)
    touching: int              # of those, meeting exactly or touching within TOUCH

    def text(self) -> str:
        return (f"Blender {self.oracle} pairs, {self.missing} not reported "
                f"({len(self.missed)}{'+' if len(self.missed) >= ENOUGH else ''} meet exactly, "
                f"{self.excused} judged disjoint); reported beyond Blender's overlap "
                f"{self.beyond} ({self.touching} touch, {len(self.extra)} apart), "
                f"{len(self.unknown)} name a mesh that is not a participant")


def _dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", u, v)


def _segment_distance(p1, q1, p2, q2) -> np.ndarray:
    """(K,) distances between the segments p1q1 and p2q2 ((K, 3) each; a segment may be a
    point), float64, by their closest points (the clamped line parameters)."""
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f, c, b = _dot(d1, d1), _dot(d2, d2), _dot(d2, r), _dot(d1, r), _dot(d1, d2)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = a * e - b * b
        s = np.where(den > 0.0, np.clip((b * f - c * e) / den, 0.0, 1.0), 0.0)
        t = (b * s + f) / e
        s = np.where(t < 0.0, np.clip(-c / a, 0.0, 1.0),
                     np.where(t > 1.0, np.clip((b - c) / a, 0.0, 1.0), s))
        t = np.clip(t, 0.0, 1.0)
        s = np.where(a == 0.0, 0.0, np.where(e == 0.0, np.clip(-c / a, 0.0, 1.0), s))
        t = np.where(e == 0.0, 0.0, np.where(a == 0.0, np.clip(f / e, 0.0, 1.0), t))
    return np.linalg.norm(p1 + s[:, None] * d1 - (p2 + t[:, None] * d2), axis=1)


def _point_triangle_distance(p, T) -> np.ndarray:
    """(K,) distances from the points p (K, 3) to the triangles T (K, 3, 3), float64: to
    the plane where p projects inside the triangle, else to its edges."""
    a, b, c = T[:, 0], T[:, 1], T[:, 2]
    n = np.cross(b - a, c - a)
    nn = _dot(n, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = _dot(p - a, n) / nn
    q = p - h[:, None] * n
    inside = nn > 0.0
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= _dot(np.cross(v - u, q - u), n) >= 0.0
    edges = np.minimum.reduce([_segment_distance(p, p, u, v) for u, v in ((a, b), (b, c), (c, a))])
    plane = np.abs(h) * np.sqrt(nn)
    return np.where(inside, np.minimum(plane, edges), edges)


def distance(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(K,) distances between DISJOINT triangles A[k], B[k] ((K, 3, 3) each), float64:
    the least of the corners' distances to the other triangle and of the edges' distances
    to the other's edges (for crossing triangles the value means nothing)."""
    out = [_point_triangle_distance(A[:, k], B) for k in range(3)]
    out += [_point_triangle_distance(B[:, k], A) for k in range(3)]
    out += [_segment_distance(A[:, i], A[:, (i + 1) % 3], B[:, j], B[:, (j + 1) % 3])
            for i in range(3) for j in range(3)]
    return np.minimum.reduce(out)


def touch_tolerance(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """(K,) the judge's touch tolerance of each pair: `TOUCH` x max(1, |coordinate|)."""
    return TOUCH * np.maximum(1.0, np.maximum(np.abs(A).max(axis=(1, 2)),
                                              np.abs(B).max(axis=(1, 2))))


def touch(A: np.ndarray, B: np.ndarray) -> bool:
    """Triangles A, B (3, 3) meet exactly, or lie within the touch tolerance of each other
    (the judge's `TOUCH`, as a distance: growing each triangle from its centroid,
    `meets(..., grow=TOUCH)`, misses coplanar pairs and seam corners a few ulps apart)."""
    return bool(distance(A[None], B[None])[0] <= touch_tolerance(A[None], B[None])[0]
                or meets(A, B))


def verdict(t: Truth, ours: set) -> Verdict:
    """The scan's canonical pairs `ours` against the truth `t` at one frame."""
    index = {d.name: k for k, d in enumerate(t.drawn)}

    def tri(i, a):
        return t.drawn[i].pos[t.drawn[i].tris[a]]

    missing = sorted(t.pairs - ours)
    missed, excused = [], 0
    for key in missing:
        if any(meets(tri(i, a), tri(j, b)) for i, j, a, b in t.by_pair[key]):
            missed.append(key)
            if len(missed) >= ENOUGH:
                break
        else:
            excused += 1
    beyond = sorted(ours - t.raw_pairs)
    unknown = [k for k in beyond if k[0] not in index or k[2] not in index]
    known = [k for k in beyond if k[0] in index and k[2] in index]
    # Every triangle pair of each reported polygon pair: first the distances, at once.
    owner, A, B = [], [], []
    for n, (na, pa, nb, pb) in enumerate(known):
        i, j = index[na], index[nb]
        for a in t.drawn[i].triangles_of(pa):
            for b in t.drawn[j].triangles_of(pb):
                owner.append(n)
                A.append(tri(i, a))
                B.append(tri(j, b))
    near = np.zeros(len(known), bool)
    if owner:
        A, B, owner = np.array(A), np.array(B), np.array(owner)
        close = distance(A, B) <= touch_tolerance(A, B)
        near[owner[close]] = True
    extra, touching = [], int(near.sum())
    for n in np.flatnonzero(~near):
        rows = np.flatnonzero(owner == n) if len(owner) else []
        if any(meets(A[r], B[r]) for r in rows):
            touching += 1
        else:
            extra.append(known[n])
            if len(extra) >= ENOUGH:
                break
    return Verdict(len(t.pairs), len(missing), missed, excused, unknown, len(beyond), extra,
                   touching)
