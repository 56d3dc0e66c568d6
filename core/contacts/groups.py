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

The parts are modules of this package: the record and its JSON and CSV (`contact`), the
curve's measures (`curves`), the bones (`bones`), episodes by bone pair (`episodes`); this
module groups the pairs (`frame_contacts`) and re-exports the names callers reach through
it. Everything is whole-array work over the pairs already found; the only Python loops are
over object pairs, over the contacts made (one object each) and over the rounds of the
component labelling (logarithmic). While posing, the caller's memo keeps each object
pair's last grouping, and only the contacts a change of pairs can touch are grouped again
(docs/exactness.md, "Grouping only what changed").
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..geometry.segments import pair_segments
from . import pairs as core_contacts

# Re-exported for the callers that reach them through this module (the report model and
# writers, the command line, the add-on, tests).
from .bones import _bone_sums, _bones, _expand, _self_sides, polygon_bones  # noqa: F401
from .contact import (  # noqa: F401
    CSV_COLUMNS,
    SEGMENTS_LIMIT_TEXT,
    SEGMENTS_PER_FRAME,
    Contact,
    contacts_csv,
    to_json,
)
from .curves import KIND_RELATIVE, _contacts_of, frame_size  # noqa: F401
from .episodes import (  # noqa: F401
    ContactEpisode,
    _episode_key,
    contact_episodes,
    episodes_of_report,
    length_text,
    summary,
)


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
    # The nodes are the polygons present, sorted, and each pair's two nodes: what
    # np.unique(..., return_inverse=True) gives, from a mark per polygon (the polygons
    # are bounded, the pairs many: no sort).
    mark = np.zeros(off + (oa.rig.n_polygons if same else ob.rig.n_polygons), dtype=bool)
    mark[ua] = True
    mark[ub + off] = True
    nodes = np.flatnonzero(mark)
    rank = np.cumsum(mark) - 1
    na, nb = rank[ua], rank[ub + off]
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
