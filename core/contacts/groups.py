"""Contacts: a frame's colliding pairs grouped where the skin crosses (issue 28). Pure numpy.

A frame's polygon pairs, per object pair (A, B) (A = B for self-collision), are grouped
into **contacts**: the connected components of the graph on polygons where

* each pair joins its two polygons, and
* two polygons of one object that collide within that object pair and share a vertex are
  joined; "the same vertex" is the same index, or the same rest position (bit for bit)
  with the same normalized weights: the weld ids of `core.welds`
  (`CollisionObject.vertex_keys`), the rule that decides adjacency.

So a frame's contacts partition its pairs. Each contact carries:

* ``pairs``: its polygon pairs, [polygon of A, polygon of B];
* ``length``: the total length of its intersection curve, the sum over its triangle pairs
  (the triangles Blender draws at the frame) of their crossing segments
  (`core.geometry.segments`), float64, in scene units;
* ``kind``: ``"crossing"`` when ``length`` > `KIND_RELATIVE` × the frame's size (the
  largest side of the meshes' world bounding boxes, each mesh's own box), else
  ``"touching"``;
* ``bones``: per side, the deform bone with the largest summed (normalized) weight over
  that side's polygons' vertices, each vertex counted once (None for a rigid prop, which
  has no bones; ties go to the lower bone index). For a self-contact the pair's polygon
  whose own dominant bone (largest summed weight over its vertices) has the lower index
  goes to side A, and each side's bone is chosen among its polygons' own dominant bones,
  so each named bone carries the largest summed weight on some polygon of the contact;
* ``center``: a point on the curve (the midpoint of its longest segment; for a touching
  contact a point where it touches, or between two coplanar triangles);
* ``segments``: the curve itself, its segments of non-zero length (p0, p1).

Everything is whole-array work over the pairs already found; the only Python loops are
over object pairs, over the contacts made (one object each) and over the rounds of the
component labelling (logarithmic). While posing, the caller's memo keeps each object
pair's last grouping, and only the contacts a change of pairs can touch are grouped again
(docs/exactness.md, "Grouping only what changed").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import numpy as np

from ..geometry.segments import pair_segments
from . import pairs as core_contacts

#: A contact is a crossing when its length exceeds this × the frame's size.
KIND_RELATIVE = 1e-9

#: Segments listed per frame in a report (the longest contacts' first); the lengths and
#: the counts stay exact.
SEGMENTS_PER_FRAME = 2000


@dataclass
class Contact:
    """One contact of a frame (see the module docstring)."""

    a: str
    b: str
    pairs: np.ndarray                       # (N, 2) int polygon pairs, [A side, B side]
    length: float
    kind: str
    bones: tuple
    center: np.ndarray                      # (3,)
    segments: np.ndarray = field(default_factory=lambda: np.zeros((0, 6)))  # (S, 6)

    def summary_json(self) -> dict:
        """What episodes read: objects, bones, length, kind."""
        return {"objects": [self.a, self.b], "bones": list(self.bones),
                "length": float(self.length), "kind": self.kind}

    def to_json(self, max_segments: int | None = None) -> dict:
        seg = self.segments if max_segments is None else self.segments[:max(0, max_segments)]
        out = {"objects": [self.a, self.b], "pairs": self.pairs.tolist(),
               "length": float(self.length), "kind": self.kind,
               "bones": list(self.bones), "center": [float(x) for x in self.center],
               "segments": np.round(seg, 9).tolist()}
        if seg.shape[0] < self.segments.shape[0]:
            out["segments_total"] = int(self.segments.shape[0])
        return out


def components(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n,) component label (the smallest node of its component) of each node of the
    graph with edges (u[k], v[k]): hooking roots to the smaller root, then pointer
    jumping, until every edge lies within one tree."""
    parent = np.arange(n, dtype=np.int64)
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    while u.size:
        pu, pv = parent[u], parent[v]
        diff = pu != pv
        if not diff.any():
            break
        pu, pv = pu[diff], pv[diff]
        np.minimum.at(parent, np.maximum(pu, pv), np.minimum(pu, pv))
        while True:
            pp = parent[parent]
            if np.array_equal(pp, parent):
                break
            parent = pp
        u, v = u[diff], v[diff]
    return parent


def _expand(ptr: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR rows `items`: (row position, index into the CSR's values) for each value."""
    start = ptr[items]
    count = ptr[items + 1] - start
    rowpos = np.repeat(np.arange(items.size), count)
    first = np.cumsum(count) - count
    return rowpos, np.repeat(start, count) + (np.arange(rowpos.size) - first[rowpos])


def _normalized_weights(rig) -> np.ndarray:
    """(W,) each influence's weight over its vertex's total (cached on the rig)."""
    w = getattr(rig, "_contact_weights", None)
    if w is None:
        per_infl = np.repeat(_vertex_totals(rig), np.diff(rig.weight_ptr))
        w = rig.weight_value / np.where(per_infl > 0, per_infl, 1.0)
        rig._contact_weights = w
    return w


def _vertex_totals(rig) -> np.ndarray:
    V = rig.n_vertices
    vert = np.repeat(np.arange(V), np.diff(rig.weight_ptr))
    return np.bincount(vert, weights=rig.weight_value, minlength=V)


def _bone_sums(rig, groups: np.ndarray, polys: np.ndarray, n_groups: int) -> np.ndarray:
    """(n_groups, J) summed normalized weights per group over the vertices of its
    polygons, each vertex counted once per group."""
    J = rig.n_bones
    out = np.zeros((n_groups, max(J, 1)))
    if not polys.size or J == 0:
        return out
    rowpos, loop = _expand(rig.poly_ptr, polys.astype(np.int64))
    g = groups[rowpos]
    verts = rig.poly_verts[loop].astype(np.int64)
    key = np.unique(g * rig.n_vertices + verts)
    g, verts = key // rig.n_vertices, key % rig.n_vertices
    rowpos, infl = _expand(rig.weight_ptr, verts)
    w = _normalized_weights(rig)[infl]
    flat = g[rowpos] * J + rig.weight_bone[infl].astype(np.int64)
    out.reshape(-1)[:] = np.bincount(flat, weights=w, minlength=n_groups * J)
    return out


def polygon_bones(rig) -> np.ndarray:
    """(P,) int64 each polygon's dominant bone: the argmax of `_bone_sums` with the
    polygon as its own group (the same sums, added in the same order, the lowest bone
    among equal sums; bone 0 when no weight is positive). A property of the rig, made
    once and cached on it: a self contact's two sides are told apart by it every frame."""
    dom = getattr(rig, "_contact_polygon_bones", None)
    if dom is not None:
        return dom
    P, V, J = rig.n_polygons, rig.n_vertices, rig.n_bones
    dom = np.zeros(P, dtype=np.int64)
    if J and P:
        rowpos, loop = _expand(rig.poly_ptr, np.arange(P, dtype=np.int64))
        key = np.unique(rowpos * V + rig.poly_verts[loop].astype(np.int64))
        g, verts = key // V, key % V
        rowpos, infl = _expand(rig.weight_ptr, verts)
        code = g[rowpos] * J + rig.weight_bone[infl].astype(np.int64)
        # One sum per (polygon, bone) present, in the order `_bone_sums` adds them.
        cells, inv = np.unique(code, return_inverse=True)
        sums = np.bincount(inv.reshape(-1), weights=_normalized_weights(rig)[infl],
                           minlength=cells.size)
        poly, bone = cells // J, cells % J
        order = np.lexsort((bone, -sums, poly))           # per polygon: largest, then lowest
        first = order[np.r_[True, poly[order][1:] != poly[order][:-1]]]
        best = first[sums[first] > 0]
        dom[poly[best]] = bone[best]
    rig._contact_polygon_bones = dom
    return dom


def _argmax_bones(rig, sums: np.ndarray, allowed: np.ndarray | None = None) -> list:
    if rig.n_bones == 0:
        return [None] * sums.shape[0]
    s = sums if allowed is None else np.where(allowed, sums, -1.0)
    best = np.argmax(s, axis=1)
    names = rig.bone_names
    return [names[b] if s[k, b] > 0 else None for k, b in enumerate(best.tolist())]


def frame_size(positions: Sequence[np.ndarray]) -> float:
    """The largest side of the meshes' world bounding boxes (each mesh's own box)."""
    # Column by column: numpy's axis-0 reduction of a (V, 3) array is ~15x slower.
    sides = [max(float(p[:, k].max() - p[:, k].min()) for k in range(3))
             for p in positions if len(p)]
    return max(sides) if sides else 0.0


def _reported_rows(reported, names, i: int, j: int) -> np.ndarray | None:
    if reported is None:
        return None
    a, b = names[i], names[j]
    rows = [(p[1], p[3]) if (p[0], p[2]) == (a, b) else (p[3], p[1])
            for p in reported if {p[0], p[2]} == {a, b} and (a != b or p[0] == p[2])]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def frame_contacts(objects: Sequence, positions: Sequence[np.ndarray],
                   triangles: Sequence[np.ndarray], tri_pairs, reported=None,
                   size: float | None = None, memo: dict | None = None) -> list[Contact]:
    """The contacts of a frame.

    Args:
        objects: the frame's `core.scan.CollisionObject`s (name, rig, vertex_keys).
        positions, triangles: per object, the frame's world positions and triangles.
        tri_pairs: [(i, j, (K, 2) int triangle pairs)], the frame's kept pairs (self pairs
            as (min, max)).
        reported: the frame's reported polygon pairs, named ``(A, poly, B, poly)`` (after
            the allow-list, the first hit): only triangle pairs of these polygon pairs
            count. None: every pair of `tri_pairs` (a polygon never pairs with itself).
        size: the frame's size for `kind` (default `frame_size(positions)`).
        memo: optional dict kept by the caller between frames (the live overlay while the
            artist poses): an object pair whose counted triangle pairs, their vertices'
            coordinates (bit for bit) and the frame's size are those of the last call
            gets that call's contacts again. Any other reuses the segments of its pairs
            whose coordinates are unchanged and groups again only the last contacts that
            the change of its pairs can touch (`_group`), and is remembered. Segments are
            a function of the pairs' coordinates, the grouping (which pairs make which
            contact, and its bones) of the pairs and the two objects (compared by
            identity: an object's rig and keys never change), so the answer is the same
            as without the memo.

    Returns:
        The contacts, per object pair in the order of `tri_pairs`, each object pair's by
        their first polygon pair.
    """
    if size is None:
        size = frame_size(positions)
    names = [o.name for o in objects]
    out: list[Contact] = []
    for i, j, tp in tri_pairs:
        tp = np.asarray(tp, dtype=np.int64).reshape(-1, 2)
        if not tp.size:
            continue
        ri, rj = objects[i].rig, objects[j].rig
        same = i == j
        pa = ri.tri_polygon[tp[:, 0]].astype(np.int64)
        pb = rj.tri_polygon[tp[:, 1]].astype(np.int64)
        if same:
            pa, pb = np.minimum(pa, pb), np.maximum(pa, pb)
        keep = pa != pb if same else np.ones(pa.size, dtype=bool)
        rep = _reported_rows(reported, names, i, j)
        if rep is not None:
            if same:
                rep = np.sort(rep, axis=1)
            keep &= core_contacts.rows_in(np.stack([pa, pb], 1), rep)
        if not keep.any():
            continue
        tp, pa, pb = tp[keep], pa[keep], pb[keep]
        last = None
        if memo is None:
            p0, p1, ln = pair_segments(positions[i], triangles[i], positions[j], triangles[j], tp)
        else:
            coords = np.concatenate([
                np.take(positions[i], np.take(triangles[i], tp[:, 0], axis=0), axis=0),
                np.take(positions[j], np.take(triangles[j], tp[:, 1], axis=0), axis=0)],
                axis=1).reshape(-1, 18)
            last = memo.get((id(objects[i]), id(objects[j])))
            if last is not None and not (last.a is objects[i] and last.b is objects[j]):
                last = None
            if (last is not None and last.size == size and np.array_equal(last.tp, tp)
                    and np.array_equal(last.coords, coords)):
                out.extend(last.contacts)
                continue
            p0, p1, ln = _segments_reusing(positions, triangles, i, j, tp, coords, last)
        # Which pairs make which contact, and their bones, follow from the counted pairs
        # alone: only what their change touches is grouped again.
        grouping = _group(objects[i], objects[j], same, tp, pa, pb,
                          last.grouping if last is not None else None)
        found = _contacts_of(names[i], names[j], grouping, p0, p1, ln, size)
        out.extend(found)
        if memo is not None:
            memo[(id(objects[i]), id(objects[j]))] = _Memo(objects[i], objects[j], size, tp,
                                                           coords, (p0, p1, ln), grouping, found)
    return out


class _Memo(NamedTuple):
    """What `frame_contacts` remembers of one object pair (objects a, b): the frame size,
    the counted (K, 2) triangle pairs, their (K, 18) vertex coordinates, their segments
    (p0 (K, 3), p1 (K, 3), length (K,)), their grouping and the contacts made from them."""

    a: object
    b: object
    size: float
    tp: np.ndarray
    coords: np.ndarray
    segments: tuple
    grouping: _Grouping
    contacts: list


class _Grouping(NamedTuple):
    """One object pair's counted triangle pairs grouped into contacts: everything of a
    frame's contacts that depends on the pairs alone, not on where the triangles are.
    Contacts are numbered 0..C-1 by their first polygon pair."""

    tcid: np.ndarray       # (K,) int64 each triangle pair's contact
    pairs: np.ndarray      # (N, 2) int64 the polygon pairs [A side, B side], by contact
    pstart: np.ndarray     # (C + 1,) int64 contact c's polygon pairs: pairs[pstart[c]:pstart[c+1]]
    bones: list            # (C,) per contact (bone of A, bone of B), names or None
    codes: np.ndarray      # (N,) int64 the polygon pairs (a * base + b), sorted
    pcid: np.ndarray       # (N,) int64 the contact of each of `codes`
    keys: tuple            # per side (A; B between two objects): (E,) vertex keys of the
                           # polygons in the pairs, and (E,) the contact of each


def _code_base(oa, ob) -> int:
    """The base of an object pair's polygon pair codes (a * base + b): fixed per pair, so
    that codes compare between frames."""
    return max(oa.rig.n_polygons, ob.rig.n_polygons, 1)


def _group(oa, ob, same: bool, tp: np.ndarray, pa: np.ndarray, pb: np.ndarray,
           last: _Grouping | None = None) -> _Grouping:
    """The contacts of one object pair (objects `oa`, `ob`; `same`: self-collision) as
    groups: (K, 2) counted triangle pairs `tp` and their (K,) int64 polygons `pa`, `pb`
    ((min, max) for a self pair).

    With `last`, the grouping of the same object pair at the last update, only what the
    change of polygon pairs can touch is grouped again: the pairs of each last contact
    that lost a pair or that holds a vertex key of a polygon of a new pair, and the new
    pairs. Every other contact is a component of the new graph as it was of the old one
    (its pairs are all there, and no link leaves it: a link to a polygon of another old
    contact would have joined the two before, one to a new pair's polygon marks it), so
    it is kept with its bones (docs/exactness.md, "Grouping only what changed")."""
    base = _code_base(oa, ob)
    codes, inv = np.unique(pa * base + pb, return_inverse=True)
    inv = inv.reshape(-1)
    n_sides = 1 if same else 2
    if last is None or not last.codes.size:
        redo = np.ones(codes.size, dtype=bool)
        label = np.zeros(codes.size, dtype=np.int64)
        n_old = 0
        key_parts = [[] for _ in range(n_sides)]
    else:
        at, found, dirty = _changed(oa, ob, same, codes, base, last)
        n_old = dirty.size
        label = np.where(found, last.pcid[at], -1)
        redo = ~found | dirty[np.maximum(label, 0)]
        key_parts = [[(k[~dirty[c]], c[~dirty[c]])] for k, c in last.keys]
    # The pairs to group again: components, then their bones.
    ua, ub = codes[redo] // base, codes[redo] % base
    sub, n_sub, sub_keys = _components_of(oa, ob, same, ua, ub)
    label[redo] = n_old + sub
    for parts, (k, c) in zip(key_parts, sub_keys):
        parts.append((k, n_old + c))
    bones_sub = _bones(oa, ob, same, ua, ub, sub, n_sub)
    bones_all = (list(last.bones) if n_old else []) + bones_sub
    # Contacts numbered by their first polygon pair.
    uniq, first_idx, cid = np.unique(label, return_index=True, return_inverse=True)
    rank = np.empty(first_idx.size, dtype=np.int64)
    rank[np.argsort(first_idx, kind="stable")] = np.arange(first_idx.size)
    cid = rank[cid.reshape(-1)]
    renum = np.full(n_old + n_sub, -1, dtype=np.int64)
    renum[uniq] = rank
    bones = [None] * uniq.size
    for old, r in zip(uniq.tolist(), rank.tolist()):
        bones[r] = bones_all[old]
    sa, sb = codes // base, codes % base
    if same and oa.rig.n_bones:
        sa, sb = _self_sides(oa, sa, sb)
    porder = np.argsort(cid, kind="stable")
    pstart = np.searchsorted(cid[porder], np.arange(uniq.size + 1))
    pairs = np.stack([sa, sb], axis=1)[porder]
    keys = tuple((np.concatenate([k for k, _ in parts]),
                  renum[np.concatenate([c for _, c in parts])]) for parts in key_parts)
    return _Grouping(cid[inv], pairs, pstart, bones, codes, cid, keys)


def _changed(oa, ob, same: bool, codes: np.ndarray, base: int, last: _Grouping
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """How the (N,) sorted polygon pair `codes` differ from those of grouping `last`: for
    each code its position in `last.codes` (`at`, meaningful where `found`), and (C,) bool
    the last contacts that lost a pair or hold a vertex key of a new pair's polygon."""
    at = np.minimum(np.searchsorted(last.codes, codes), last.codes.size - 1)
    found = last.codes[at] == codes
    kept_old = np.zeros(last.codes.size, dtype=bool)
    kept_old[at[found]] = True
    dirty = np.zeros(last.pstart.size - 1, dtype=bool)
    dirty[last.pcid[~kept_old]] = True                       # lost a pair
    new = codes[~found]
    ends = [(oa, np.concatenate([new // base, new % base]))] if same else \
        [(oa, new // base), (ob, new % base)]
    for (obj, polys), (k_old, c_old) in zip(ends, last.keys):
        if polys.size:                                       # holds a new pair's key
            nk = np.unique(_polygon_keys(obj, polys)[0])
            at_k = np.minimum(np.searchsorted(nk, k_old), nk.size - 1)
            dirty[c_old[nk[at_k] == k_old]] = True
    return at, found, dirty


def _polygon_keys(obj, polys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vertex keys of polygons `polys` ((n,) int64) of `obj`, and for each its
    position in `polys`."""
    rig = obj.rig
    rowpos, loop = _expand(rig.poly_ptr, polys)
    return obj.vertex_keys[rig.poly_verts[loop]], rowpos


def _components_of(oa, ob, same: bool, ua: np.ndarray, ub: np.ndarray
                   ) -> tuple[np.ndarray, int, list]:
    """The contacts of polygon pairs (ua[k], ub[k]) ((N,) int64, distinct) by themselves:
    (N,) int64 each pair's contact 0..n-1 (in no particular order), n, and per side the
    (vertex keys, contact) of the side's polygons."""
    if not ua.size:
        return np.zeros(0, np.int64), 0, [(np.zeros(0, np.int64), np.zeros(0, np.int64))
                                          for _ in range(1 if same else 2)]
    # Nodes: polygons of A, then (between two objects) polygons of B.
    off = 0 if same else oa.rig.n_polygons
    nodes, node_inv = np.unique(np.concatenate([ua, ub + off]), return_inverse=True)
    na, nb = node_inv[:ua.size], node_inv[ua.size:]
    eu, ev, side_keys = [na], [nb], []
    sides = [(oa, nodes[nodes < oa.rig.n_polygons], 0)] if same else \
        [(oa, nodes[nodes < off], 0), (ob, nodes[nodes >= off] - off, off)]
    for obj, polys, o in sides:
        k, rowpos = _polygon_keys(obj, polys)
        node = np.searchsorted(nodes, polys[rowpos] + o)
        side_keys.append((k, node))
        order = np.lexsort((node, k))
        k, node = k[order], node[order]
        link = (k[1:] == k[:-1]) & (node[1:] != node[:-1])
        eu.append(node[:-1][link])
        ev.append(node[1:][link])
    lab = components(nodes.size, np.concatenate(eu), np.concatenate(ev))
    roots, dense = np.unique(lab, return_inverse=True)
    dense = dense.reshape(-1)
    return dense[na], roots.size, [(k, dense[node]) for k, node in side_keys]


def _self_sides(oa, pa: np.ndarray, pb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A self pair's polygons as (side A, side B): side A has the polygon whose own
    dominant bone has the lower index (ties: the lower polygon, `pa` <= `pb`)."""
    dom = polygon_bones(oa.rig)
    flip = dom[pb] < dom[pa]
    return np.where(flip, pb, pa), np.where(flip, pa, pb)


def _bones(oa, ob, same: bool, ua: np.ndarray, ub: np.ndarray, cid: np.ndarray,
           C: int) -> list:
    """The (bone of A, bone of B) of each of the C contacts of polygon pairs (ua, ub)
    (`cid`: each pair's contact); a self pair's sides by `_self_sides`."""
    ri, rj = oa.rig, ob.rig
    sa, sb = ua, ub
    allowed_a = allowed_b = None
    if same and ri.n_bones:
        sa, sb = _self_sides(oa, ua, ub)
        dom = polygon_bones(ri)
        allowed_a = np.zeros((C, ri.n_bones), dtype=bool)
        allowed_b = np.zeros((C, ri.n_bones), dtype=bool)
        allowed_a[cid, dom[sa]] = True
        allowed_b[cid, dom[sb]] = True
    bones_a = _argmax_bones(ri, _bone_sums(ri, cid, sa, C), allowed_a)
    bones_b = _argmax_bones(rj, _bone_sums(rj, cid, sb, C), allowed_b)
    return list(zip(bones_a, bones_b))


def _contacts_of(name_a: str, name_b: str, g: _Grouping, p0: np.ndarray, p1: np.ndarray,
                 ln: np.ndarray, size: float) -> list[Contact]:
    """The contacts of grouping `g` with its triangle pairs' crossing segments (p0, p1
    (K, 3) float64, lengths ln (K,)) at a frame of size `size`."""
    tcid = g.tcid
    C = g.pstart.size - 1
    length = np.bincount(tcid, weights=ln, minlength=C)
    # The centre: the midpoint of each contact's longest segment.
    order = np.lexsort((ln, tcid))
    last = order[np.r_[np.flatnonzero(np.diff(tcid[order])), tcid.size - 1]]
    center = 0.5 * (p0[last] + p1[last])
    # Segments grouped by contact (in pair order within each).
    nz = np.flatnonzero(ln > 0)
    nz = nz[np.argsort(tcid[nz], kind="stable")]
    sstart = np.searchsorted(tcid[nz], np.arange(C + 1))
    segs = np.concatenate([p0[nz], p1[nz]], axis=1)
    limit = KIND_RELATIVE * size
    return [Contact(name_a, name_b, g.pairs[g.pstart[c]:g.pstart[c + 1]], float(length[c]),
                    "crossing" if length[c] > limit else "touching", g.bones[c], center[c],
                    segs[sstart[c]:sstart[c + 1]])
            for c in range(C)]


def _segments_reusing(positions, triangles, i: int, j: int, tp: np.ndarray, coords: np.ndarray,
                      last: _Memo | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`pair_segments` of the (K, 2) triangle pairs `tp` of objects i, j, taking those of
    the pairs that `last` (the memo of the same objects) has with the same 18 vertex
    coordinates ((K, 18) `coords`, bit for bit): the same inputs, the same segment."""
    K = tp.shape[0]
    reuse = np.zeros(K, dtype=bool)
    src = np.zeros(K, dtype=np.intp)
    if last is not None and last.tp.size:
        old_tp, old_coords = last.tp, last.coords
        base = int(max(old_tp[:, 1].max(), tp[:, 1].max())) + 1
        old_code = old_tp[:, 0] * base + old_tp[:, 1]
        order = np.argsort(old_code, kind="stable")
        code = tp[:, 0] * base + tp[:, 1]
        at = np.minimum(np.searchsorted(old_code[order], code), order.size - 1)
        src = order[at]
        reuse = old_code[src] == code
        reuse[reuse] = (old_coords[src[reuse]] == coords[reuse]).all(axis=1)
    p0 = np.empty((K, 3))
    p1 = np.empty((K, 3))
    ln = np.empty(K)
    if reuse.any():
        q0, q1, qn = last.segments
        p0[reuse], p1[reuse], ln[reuse] = q0[src[reuse]], q1[src[reuse]], qn[src[reuse]]
    new = ~reuse
    if new.any():
        p0[new], p1[new], ln[new] = pair_segments(positions[i], triangles[i], positions[j],
                                                  triangles[j], tp[new])
    return p0, p1, ln


def to_json(found: Sequence[Contact], max_segments: int = SEGMENTS_PER_FRAME) -> list[dict]:
    """A frame's contacts for the report: segments listed up to `max_segments` for the
    frame, longest contacts first (`segments_total` on a contact whose list is cut)."""
    room = {}
    left = max_segments
    for k in sorted(range(len(found)), key=lambda k: -found[k].length):
        room[k] = left
        left = max(0, left - found[k].segments.shape[0])
    return [c.to_json(room[k]) for k, c in enumerate(found)]


# --- Episodes by bone pair --------------------------------------------------------------

def length_text(x: float) -> str:
    """A length in scene units as people read it (scene units taken as metres)."""
    x = float(x)
    if x == 0.0:
        return "0"
    if x >= 1.0:
        return f"{x:.2f} m"
    if x >= 0.01:
        return f"{x * 100:.1f} cm"
    if x >= 1e-5:
        return f"{x * 1000:.2f} mm"
    return f"{x:.2e}"


@dataclass
class ContactEpisode:
    """A run of consecutive scanned frames in which objects `a`, `b` have a contact
    between bones `bone_a`, `bone_b` (for a self-contact the bone pair in name order).
    `worst_frame` has the longest total crossing (`worst_length`, scene units); `kind` is
    "crossing" when some frame's contact crosses, else "touching"."""

    a: str
    b: str
    bone_a: str | None
    bone_b: str | None
    start: int
    end: int
    worst_frame: int
    worst_length: float
    frames: int
    kind: str

    def to_json(self) -> dict:
        return {"objects": [self.a, self.b], "bones": [self.bone_a, self.bone_b],
                "start": self.start, "end": self.end, "worst_frame": self.worst_frame,
                "worst_length": self.worst_length, "frames": self.frames, "kind": self.kind}

    def describe(self) -> str:
        who = f"{self.a} (self)" if self.a == self.b else f"{self.a} x {self.b}"
        bones = f"{self.bone_a or '-'} × {self.bone_b or '-'}"
        span = f"frame {self.start}" if self.start == self.end else \
            f"frames {self.start}–{self.end}"
        what = f"{length_text(self.worst_length)} of crossing" if self.kind == "crossing" \
            else "touching"
        return f"{who}, {bones}: {span}, worst frame {self.worst_frame}, {what}"


def _episode_key(c: dict) -> tuple:
    a, b = c["objects"]
    ba, bb = c["bones"]
    if (a, b) != tuple(sorted((a, b))):
        a, b, ba, bb = b, a, bb, ba
    if a == b and str(ba) > str(bb):
        ba, bb = bb, ba
    return a, b, ba, bb


def contact_episodes(frames: Sequence[tuple[int, Sequence[dict]]]) -> list[ContactEpisode]:
    """Episodes by bone pair from ``[(frame, contacts as in the report), ...]`` in scan
    order: per (objects, bones), runs of consecutive scanned frames with such a contact."""
    open_: dict[tuple, ContactEpisode] = {}
    done: list[ContactEpisode] = []
    for frame, found in frames:
        totals: dict[tuple, list] = {}
        for c in found:
            t = totals.setdefault(_episode_key(c), [0.0, False])
            t[0] += float(c["length"])
            t[1] |= c["kind"] == "crossing"
        for key in [k for k in open_ if k not in totals]:
            done.append(open_.pop(key))
        for key, (ln, crossing) in totals.items():
            ep = open_.get(key)
            kind = "crossing" if crossing else "touching"
            if ep is None:
                open_[key] = ContactEpisode(*key, frame, frame, frame, ln, 1, kind)
            else:
                ep.end, ep.frames = frame, ep.frames + 1
                if crossing:
                    ep.kind = "crossing"
                if ln > ep.worst_length:
                    ep.worst_frame, ep.worst_length = frame, ln
    done.extend(open_.values())
    done.sort(key=lambda e: (e.start, e.a, e.b, str(e.bone_a), str(e.bone_b)))
    return done


def episodes_of_report(frames: Sequence[dict]) -> list[ContactEpisode]:
    """`contact_episodes` of a report's frames (those that carry contacts)."""
    return contact_episodes([(f["frame"], f["contacts"]) for f in frames
                             if "not_checked" not in f and "contacts" in f])


def summary(eps: Sequence[ContactEpisode], limit: int = 10) -> str:
    """Lines naming the contact episodes (the longest crossings first, `limit` of them,
    then how many more): bounded for the console and JUnit."""
    if not eps:
        return "no contacts"
    top = sorted(eps, key=lambda e: (-(e.kind == "crossing"), -e.worst_length, e.start))
    lines = [f"{len(eps)} contact episode(s) by bone pair:"]
    lines += ["  " + e.describe() for e in top[:limit]]
    if len(eps) > limit:
        lines.append(f"  and {len(eps) - limit} more")
    return "\n".join(lines)


SEGMENTS_LIMIT_TEXT = (f"segments are listed up to {SEGMENTS_PER_FRAME} per frame, longest "
                       "contacts first (segments_total on a contact whose list is cut); "
                       "lengths and pairs are exact")


CSV_COLUMNS = ("frame", "object_a", "object_b", "bone_a", "bone_b", "kind", "length",
               "pairs", "center_x", "center_y", "center_z")


def contacts_csv(report: dict) -> str:
    """A report's contacts as CSV text, one row per contact of every frame (`CSV_COLUMNS`;
    `pairs` is the contact's pair count). Frames without contacts (older reports, frames
    not checked) give no rows."""
    import csv
    import io

    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for fr in report.get("frames", []):
        for c in fr.get("contacts", []):
            n = len(c["pairs"]) if "pairs" in c else c.get("n_pairs", 0)
            w.writerow([fr["frame"], *c["objects"], *("" if b is None else b for b in c["bones"]),
                        c["kind"], repr(float(c["length"])), n, *map(repr, c["center"])])
    return out.getvalue()
