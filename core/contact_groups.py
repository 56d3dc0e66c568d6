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
over object pairs and over the rounds of the component labelling (logarithmic).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import numpy as np

from . import contacts as core_contacts
from .geometry.segments import pair_segments

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


def _polygon_bones(rig) -> np.ndarray:
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
            gets that call's contacts again; any other is computed and remembered. The
            contacts are a function of exactly these inputs and of the two objects
            (compared by identity: an object's rig and keys never change), so the answer
            is the same as without the memo.

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
            first = len(out)
            p0, p1, ln = _segments_reusing(positions, triangles, i, j, tp, coords, last)
        base = int(max(pa.max(), pb.max())) + 1
        upp, inv = np.unique(pa * base + pb, return_inverse=True)
        inv = inv.reshape(-1)
        ua, ub = upp // base, upp % base                      # sorted polygon pairs
        # Nodes: polygons of A, then (between two objects) polygons of B.
        off = 0 if same else ri.n_polygons
        nodes, node_inv = np.unique(np.concatenate([ua, ub + off]), return_inverse=True)
        na, nb = node_inv[:ua.size], node_inv[ua.size:]
        eu, ev = [na], [nb]
        sides = [(ri, objects[i].vertex_keys, nodes[nodes < ri.n_polygons], 0)] if same else \
            [(ri, objects[i].vertex_keys, nodes[nodes < off], 0),
             (rj, objects[j].vertex_keys, nodes[nodes >= off] - off, off)]
        for rig, keys, polys, o in sides:
            rowpos, loop = _expand(rig.poly_ptr, polys)
            k = keys[rig.poly_verts[loop]]
            node = np.searchsorted(nodes, polys[rowpos] + o)
            order = np.lexsort((node, k))
            k, node = k[order], node[order]
            link = (k[1:] == k[:-1]) & (node[1:] != node[:-1])
            eu.append(node[:-1][link])
            ev.append(node[1:][link])
        lab = components(nodes.size, np.concatenate(eu), np.concatenate(ev))
        root = lab[na]                                        # per polygon pair
        # Contacts numbered by their first polygon pair.
        _, first_idx, cid = np.unique(root, return_index=True, return_inverse=True)
        rank = np.empty(first_idx.size, dtype=np.int64)
        rank[np.argsort(first_idx, kind="stable")] = np.arange(first_idx.size)
        cid = rank[cid.reshape(-1)]
        C = first_idx.size
        # Sides of each polygon pair (self: by the polygons' own dominant bones).
        sa, sb = ua.copy(), ub.copy()
        allowed_a = allowed_b = None
        if same and ri.n_bones:
            dom = _polygon_bones(ri)
            da, db = dom[ua], dom[ub]
            flip = db < da
            sa, sb = np.where(flip, ub, ua), np.where(flip, ua, ub)
            allowed_a = np.zeros((C, ri.n_bones), dtype=bool)
            allowed_b = np.zeros((C, ri.n_bones), dtype=bool)
            allowed_a[cid, np.where(flip, db, da)] = True
            allowed_b[cid, np.where(flip, da, db)] = True
        bones_a = _argmax_bones(ri, _bone_sums(ri, cid, sa, C), allowed_a)
        bones_b = _argmax_bones(rj, _bone_sums(rj, cid, sb, C), allowed_b)
        tcid = cid[inv]                                       # per triangle pair
        length = np.bincount(tcid, weights=ln, minlength=C)
        # The centre: the midpoint of each contact's longest segment.
        order = np.lexsort((ln, tcid))
        last = order[np.r_[np.flatnonzero(np.diff(tcid[order])), tcid.size - 1]]
        center = 0.5 * (p0[last] + p1[last])
        # Pairs and segments grouped by contact (in pair order within each).
        porder = np.argsort(cid, kind="stable")
        pstart = np.searchsorted(cid[porder], np.arange(C + 1))
        nz = np.flatnonzero(ln > 0)
        nz = nz[np.argsort(tcid[nz], kind="stable")]
        sstart = np.searchsorted(tcid[nz], np.arange(C + 1))
        segs = np.concatenate([p0[nz], p1[nz]], axis=1)
        pairs = np.stack([sa, sb], axis=1)[porder]
        limit = KIND_RELATIVE * size
        for c in range(C):
            out.append(Contact(names[i], names[j], pairs[pstart[c]:pstart[c + 1]],
                               float(length[c]),
                               "crossing" if length[c] > limit else "touching",
                               (bones_a[c], bones_b[c]), center[c],
                               segs[sstart[c]:sstart[c + 1]]))
        if memo is not None:
            memo[(id(objects[i]), id(objects[j]))] = _Memo(objects[i], objects[j], size, tp,
                                                           coords, (p0, p1, ln), out[first:])
    return out


class _Memo(NamedTuple):
    """What `frame_contacts` remembers of one object pair (objects a, b): the frame size,
    the counted (K, 2) triangle pairs, their (K, 18) vertex coordinates, their segments
    (p0 (K, 3), p1 (K, 3), length (K,)) and the contacts made from them."""

    a: object
    b: object
    size: float
    tp: np.ndarray
    coords: np.ndarray
    segments: tuple
    contacts: list


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
