"""The bones a contact names (`core.contacts.groups`): per side, the deform bone with the
largest summed normalized weight over the side's polygons' vertices, each vertex counted
once (`_bone_sums`, `_bones`); each polygon's own dominant bone (`polygon_bones`, cached
on the rig), which tells a self contact's two sides apart (`_self_sides`). Pure numpy.
"""
from __future__ import annotations

import numpy as np

from ..cache import derived
from ..keys import unique_keys


def _expand(ptr: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR rows `items`: (row position, index into the CSR's values) for each value."""
    start = ptr[items]
    count = ptr[items + 1] - start
    rowpos = np.repeat(np.arange(items.size), count)
    first = np.cumsum(count) - count
    return rowpos, np.repeat(start, count) + (np.arange(rowpos.size) - first[rowpos])


def _normalized_weights(rig) -> np.ndarray:
    """(W,) each influence's weight over its vertex's total (cached on the rig)."""
    def make() -> np.ndarray:
        per_infl = np.repeat(_vertex_totals(rig), np.diff(rig.weight_ptr))
        return rig.weight_value / np.where(per_infl > 0, per_infl, 1.0)

    return derived(rig, "contact_weights", make)


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
    # Each (group, polygon) once: a polygon is in many pairs of its contact, and the
    # (group, vertex) keys below are made unique anyway, so the sums are the same.
    P = rig.n_polygons
    gp = unique_keys(groups.astype(np.int64) * P + polys.astype(np.int64), n_groups * P)
    groups, polys = gp // P, gp % P
    rowpos, loop = _expand(rig.poly_ptr, polys)
    g = groups[rowpos]
    verts = rig.poly_verts[loop].astype(np.int64)
    key = unique_keys(g * rig.n_vertices + verts, n_groups * rig.n_vertices)
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
    return derived(rig, "polygon_bones", lambda: _polygon_bones(rig))


def _polygon_bones(rig) -> np.ndarray:
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
    return dom


def _argmax_bones(rig, sums: np.ndarray, allowed: np.ndarray | None = None) -> list:
    if rig.n_bones == 0:
        return [None] * sums.shape[0]
    s = sums if allowed is None else np.where(allowed, sums, -1.0)
    best = np.argmax(s, axis=1)
    names = rig.bone_names
    return [names[b] if s[k, b] > 0 else None for k, b in enumerate(best.tolist())]


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
