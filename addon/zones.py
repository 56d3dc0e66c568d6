"""Ignore zones (issue 28): the polygons of a mesh inside one of its vertex groups, whose
pairs are never reported (`core.contacts.filters.drop_zone_pairs`). Read once per scan."""
from __future__ import annotations

import numpy as np

from .state import STATE


def group_polygons(ob, rig, group_names) -> np.ndarray:
    """(P,) bool: the rig's polygons with a vertex in one of `group_names` (weight > 0).
    ValueError (one line) for a group the object does not have, or for a mesh checked on
    an evaluated surface (its polygons are not the mesh's own)."""
    names = sorted(group_names)
    missing = [g for g in names if g not in ob.vertex_groups]
    if missing:
        have = ", ".join(sorted(g.name for g in ob.vertex_groups)[:12]) or "none"
        raise ValueError(f"'{ob.name_full}' has no vertex group '{missing[0]}' "
                         f"(its groups: {have})")
    if rig.surface:
        raise ValueError(f"'{ob.name_full}' is checked on its evaluated surface "
                         f"({rig.surface}): ignore zones need the mesh's own polygons")
    idx = {ob.vertex_groups[g].index for g in names}
    inside = np.zeros(rig.n_vertices, dtype=bool)
    for v in ob.data.vertices:          # once per scan
        for g in v.groups:
            if g.group in idx and g.weight > 0.0:
                inside[v.index] = True
                break
    per_loop = inside[rig.poly_verts]
    counts = np.diff(rig.poly_ptr)
    if not per_loop.size:
        return np.zeros(rig.n_polygons, dtype=bool)
    return np.add.reduceat(per_loop.astype(np.int64), rig.poly_ptr[:-1]) * (counts > 0) > 0


def zone_masks(meshes, objects, ignore_groups: dict) -> dict:
    """Per object index, the (P,) bool polygons inside its ignore zones, from
    ``{object name: {group, ...}}``. ValueError (one line) for an object not scanned."""
    out = {}
    by_name = {}
    for k, ob in enumerate(meshes):
        by_name[ob.name_full] = k
        by_name.setdefault(ob.name, k)
    for name, groups in ignore_groups.items():
        if not groups:
            continue
        k = by_name.get(name)
        if k is None:
            raise ValueError(f"--ignore-group: '{name}' is not a scanned object (scanned: "
                             + ", ".join(ob.name_full for ob in meshes) + ")")
        out[k] = group_polygons(meshes[k], objects[k].rig, groups)
    return out




def cached_zone_masks(meshes, objects, groups: dict, changed=lambda me: True) -> dict:
    """`zone_masks` for the live pipeline (every frame change): each mesh's mask is read
    once and kept until `changed(mesh)` says its data changed. ValueError (one line) as
    `zone_masks`."""
    out = {}
    for k, (ob, obj) in enumerate(zip(meshes, objects)):
        g = groups.get(ob.name_full)
        if not g:
            continue
        me = ob.data
        key = (me.as_pointer(), ob.name_full, tuple(sorted(g)), len(me.vertices),
               len(me.polygons))
        mask = STATE.zone_masks.get(key)
        if mask is None or changed(me):
            if len(STATE.zone_masks) > 64:
                STATE.zone_masks.clear()
            mask = STATE.zone_masks[key] = group_polygons(ob, obj.rig, g)
        out[k] = mask
    return out
