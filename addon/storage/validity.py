"""Whether a stored build still fits its mesh (staleness), read from names and flags only.

Two signatures are stored at build time: the full rig signature (topology, rest
positions, weights, bones; checked on explicit actions, `addon.session`) and a quick
"state" signature of everything else that changes the evaluated mesh: counts, vertex group
names, the modifier stack (order, types, visibility, the Armature modifier's settings),
shape keys and the armature's bones. The quick one is checked on every use, including
every frame, so it reads only names and flags (no per-vertex data).
"""
from __future__ import annotations

import hashlib

from .. import identity
from .texts import built_shape, has_data, text_is_rigid

# Modifier properties that only change the user interface, never the evaluated mesh.
_UI_ONLY = {"name", "show_expanded", "is_active", "show_on_cage", "show_in_editmode",
            "is_override_data_local", "use_pin_to_last", "persistent_uid",
            "execution_time", "show_render", "use_apply_on_spline", "rna_type"}
# Modifier flags that only say where the modifier comes from (True in a link or an override
# of the asset file, False in the file that built it): recorded as the building file sees
# them, so that links reuse the asset's build and earlier signatures stay valid.
_SOURCE_FLAGS = {"is_override_data": False}


def _h(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def shape_signature(ob) -> str:
    """Vertex/polygon counts and vertex group names: cheap to read on every frame."""
    me = ob.data
    groups = "\0".join(g.name for g in ob.vertex_groups)
    return f"{len(me.vertices)}:{len(me.polygons)}:{_h(groups)}"


def _modifier_settings(mod, ob) -> str:
    """Type, visibility and the settings of one modifier of `ob` (names and flags only;
    data blocks by their name relative to `ob`, so that a link of the asset file reads as
    the asset file did)."""
    parts = [mod.type, str(mod.show_viewport)]
    for prop in mod.bl_rna.properties:
        key = prop.identifier
        if key in _UI_ONLY or prop.type in {"COLLECTION"}:
            continue
        try:
            value = _SOURCE_FLAGS[key] if key in _SOURCE_FLAGS else getattr(mod, key)
        except Exception:          # noqa: BLE001 - a property that cannot be read
            continue
        if prop.type == "POINTER":
            value = (identity.relative_name(value, ob)
                     if hasattr(value, "name_full") else None)   # data blocks only
        elif getattr(prop, "is_array", False) or getattr(prop, "array_length", 0):
            try:
                value = tuple(value)
            except TypeError:
                pass
        parts.append(f"{key}={value!r}")
    return "|".join(parts)


def state_signature(ob) -> str:
    """Everything besides per-vertex data that changes `ob`'s evaluated mesh: counts,
    vertex group names, modifiers, shape keys, the armature's bones. Names and flags only,
    so it is cheap enough for the frame handler (tens of microseconds)."""
    me = ob.data
    parts = [shape_signature(ob), f"{len(me.edges)}:{len(me.loops)}"]
    for mod in ob.modifiers:
        parts.append(_modifier_settings(mod, ob))
        if mod.type == "ARMATURE" and mod.object is not None and mod.object.type == "ARMATURE":
            bones = mod.object.data.bones
            parts.append(f"bones:{len(bones)}:{_h(chr(0).join(b.name for b in bones))}")
    keys = me.shape_keys
    if keys is not None:
        parts.append("keys:" + "\0".join(f"{k.name}:{k.mute}:{k.relative_key.name}"
                                          for k in keys.key_blocks))
    return _h("\n".join(parts))


def stale_reason(ob) -> str:
    """Why the stored data no longer fits the mesh ('' when it fits)."""
    if not has_data(ob):
        return ""
    if ob.mode == "EDIT":
        return f"'{ob.name_full}' is in Edit Mode: switch to Object Mode"
    from .. import extract

    arm = extract.modifier_report(ob).armature    # a modifier's, or armature parenting's
    if arm is None and not text_is_rigid(ob):
        return (f"'{ob.name_full}' has no armature any more (deleted, or the Armature modifier's "
                "object is empty): restore it, or rebuild")
    stored = built_shape(ob)
    if stored != state_signature(ob):
        if stored.count(":") == 2 and stored == shape_signature(ob):
            return ""                # built by an older version: only the counts are known
        return (f"'{ob.name_full}' changed since its collision data was built (vertices, faces, "
                "vertex groups, modifiers, shape keys or armature bones): rebuild")
    return ""
