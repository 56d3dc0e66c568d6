"""Built collision data, kept in the .blend.

Each built mesh object points (``ob.skin_collide.data``) to a Text datablock holding its
`core.persist` bytes as base64: it is saved with the file and comes back on reload without
a rebuild. Everything else in the add-on goes through the functions of this module, so the
storage can change (issue 14) without touching the callers.

Ownership. A pointer property is copied by Shift+D, so a duplicate points to the
original's Text. The Text records its owner (`OWNER_KEY`, the object's name, refreshed
on every build and rename fix-up) and a stable id (`UID_KEY`, also on the object): the
object named by the Text owns it; any other object pointing to it is treated as unbuilt,
and building it gives it its own Text. A renamed original is still the owner when no
object of the recorded name points to the Text.

Staleness. Two signatures are stored at build time: the full rig signature (topology,
rest positions, weights, bones; checked on explicit actions) and a quick "state"
signature of everything else that changes the evaluated mesh: counts, vertex group names,
the modifier stack (order, types, visibility, the Armature modifier's settings), shape
keys and the armature's bones. The quick one is checked on every use, including every
frame, so it reads only names and flags (no per-vertex data).

Decoded objects are cached per session, keyed by the build id (a new one per build), so a
rebuild always replaces the cached object.
"""
from __future__ import annotations

import base64
import hashlib
import uuid

from ..core import persist
from ..core.scan import CollisionObject

TEXT_PREFIX = ".skin_collide/"
OWNER_KEY = "skin_collide_owner"
UID_KEY = "skin_collide_uid"
BUILD_KEY = "skin_collide_build"
_cache: dict[str, tuple[str, CollisionObject]] = {}

# Modifier properties that only change the user interface, never the evaluated mesh.
_UI_ONLY = {"name", "show_expanded", "is_active", "show_on_cage", "show_in_editmode",
            "is_override_data_local", "use_pin_to_last", "persistent_uid",
            "execution_time", "show_render", "use_apply_on_spline", "rna_type"}


def _h(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def shape_signature(ob) -> str:
    """Vertex/polygon counts and vertex group names: cheap to read on every frame."""
    me = ob.data
    groups = "\0".join(g.name for g in ob.vertex_groups)
    return f"{len(me.vertices)}:{len(me.polygons)}:{_h(groups)}"


def _modifier_settings(mod) -> str:
    """Type, visibility and the settings of one modifier (names and flags only)."""
    parts = [mod.type, str(mod.show_viewport)]
    for prop in mod.bl_rna.properties:
        key = prop.identifier
        if key in _UI_ONLY or prop.type in {"COLLECTION"}:
            continue
        try:
            value = getattr(mod, key)
        except Exception:          # noqa: BLE001 - a property that cannot be read
            continue
        if prop.type == "POINTER":
            value = getattr(value, "name_full", None) if value is not None else None
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
        parts.append(_modifier_settings(mod))
        if mod.type == "ARMATURE" and mod.object is not None and mod.object.type == "ARMATURE":
            bones = mod.object.data.bones
            parts.append(f"bones:{len(bones)}:{_h(chr(0).join(b.name for b in bones))}")
    keys = me.shape_keys
    if keys is not None:
        parts.append("keys:" + "\0".join(f"{k.name}:{k.mute}:{k.relative_key.name}"
                                          for k in keys.key_blocks))
    return _h("\n".join(parts))


def _texts():
    import bpy

    return bpy.data.texts


def _text_of(ob):
    props = getattr(ob, "skin_collide", None)
    return None if props is None else props.data


def owns(ob, text) -> bool:
    """Whether `ob` owns `text` (and not merely a copied pointer to it)."""
    if text is None:
        return False
    owner = text.get(OWNER_KEY)
    if owner is None or owner == ob.name:
        return True
    import bpy

    other = bpy.data.objects.get(owner)
    if other is not None and other != ob and _text_of(other) == text:
        return False          # the named owner still points to it: ob is a copy
    # The recorded owner was renamed or deleted: ob owns it unless another object also
    # points to it (then nobody can tell; treat both as unbuilt rather than guess).
    return not any(o != ob and _text_of(o) == text for o in bpy.data.objects
                   if o.type == "MESH")


def has_data(ob) -> bool:
    """Whether mesh object `ob` has collision data of its own."""
    text = _text_of(ob)
    return text is not None and owns(ob, text)


def adopt(ob) -> None:
    """Record `ob`'s current name in the Text it owns (after a rename), so that ownership
    is decided by one name lookup again instead of a scan of all objects."""
    text = _text_of(ob)
    if text is not None and text.get(OWNER_KEY) != ob.name and owns(ob, text):
        text[OWNER_KEY] = ob.name


def uid(ob) -> str:
    """The stable identity of a built object (survives renames, saving and reloading)."""
    text = _text_of(ob)
    if text is not None and owns(ob, text):
        return str(text.get(UID_KEY) or ob.skin_collide.uid or ob.name)
    return ""


def save(ob, obj: CollisionObject) -> None:
    """Store `obj` for mesh object `ob` (replacing earlier data of its own; a copied
    pointer to another object's data is replaced by a new Text)."""
    props = ob.skin_collide
    text = props.data
    if text is not None and not owns(ob, text):
        text = None
    if text is None:
        text = _texts().new(TEXT_PREFIX + ob.name)
        text[UID_KEY] = uuid.uuid4().hex
    # Line-wrapped base64: Blender's text editor is very slow with one huge line.
    payload = base64.encodebytes(persist.to_bytes(obj)).decode("ascii")
    text.from_string(payload)
    text[OWNER_KEY] = ob.name
    text[BUILD_KEY] = uuid.uuid4().hex
    props.data = text
    props.uid = str(text[UID_KEY])
    props.signature = persist.rig_signature(obj.rig)
    props.shape = state_signature(ob)
    _cache.pop(text.name_full, None)


def load(ob) -> CollisionObject | None:
    """The stored data of `ob`, or None when there is none."""
    if not has_data(ob):
        return None
    text = ob.skin_collide.data
    # The build id names the data without reading the (megabytes of) text on every frame
    # and redraw; every build gets a new one.
    key = str(text.get(BUILD_KEY) or ob.skin_collide.signature)
    hit = _cache.get(text.name_full)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        obj = persist.from_bytes(base64.decodebytes(text.as_string().encode("ascii")))
    except Exception as exc:      # noqa: BLE001 - damaged or foreign text
        raise ValueError(f"the collision data of '{ob.name}' cannot be read ({exc}); "
                         "rebuild") from None
    _cache[text.name_full] = (key, obj)
    return obj


def stale_reason(ob) -> str:
    """Why the stored data no longer fits the mesh ('' when it fits)."""
    if not has_data(ob):
        return ""
    if ob.mode == "EDIT":
        return f"'{ob.name}' is in Edit Mode: switch to Object Mode"
    arm = next((m.object for m in ob.modifiers if m.type == "ARMATURE" and m.show_viewport),
               None)
    if arm is None:
        return (f"'{ob.name}' has no armature any more (deleted, or the Armature modifier's "
                "object is empty): restore it, or rebuild")
    stored = ob.skin_collide.shape
    if stored != state_signature(ob):
        if stored.count(":") == 2 and stored == shape_signature(ob):
            return ""                # built by an older version: only the counts are known
        return (f"'{ob.name}' changed since its collision data was built (vertices, faces, "
                "vertex groups, modifiers, shape keys or armature bones): rebuild")
    return ""


def clear(ob) -> None:
    """Forget `ob`'s data; remove the Text only when `ob` owns it."""
    props = ob.skin_collide
    text = props.data
    mine = text is not None and owns(ob, text)
    props.data = None
    props.signature = ""
    props.shape = ""
    if mine:
        _cache.pop(text.name_full, None)
        _texts().remove(text)


def remove_orphans() -> int:
    """Remove the data Texts that no object points to any more (deleted or joined-away
    meshes). A Text that some object still points to is kept, even when its ownership is
    ambiguous. Returns how many were removed."""
    import bpy

    used = {t.name_full for ob in bpy.data.objects if ob.type == "MESH" and ob.users
            for t in (_text_of(ob),) if t is not None}
    gone = [t for t in bpy.data.texts if t.get(UID_KEY) is not None and t.name_full not in used]
    for t in gone:
        _cache.pop(t.name_full, None)
        bpy.data.texts.remove(t)
    return len(gone)
