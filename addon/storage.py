"""Built collision data: where it lives (in the .blend, or in a disk cache next to it).

Each built mesh object points (``ob.skin_collide.data``) to a hidden Text datablock
(``.skin_collide/<name>``; Blender hides dot-prefixed names in its ID menus). The Text's
body is one line of explanation; the `core.storage.persist` bytes (a compressed binary
`core.storage.blob` container) are either

* in the file: a bytes custom property of the Text (`BLOB_KEY`), saved with the .blend
  and restored on reload, on undo and shared (not copied) by Shift+D, or
* on disk (`scene.skin_collide.data_location == "DISK"`): ``//skin_collide_cache/
  <rig signature>.skcb`` next to the saved .blend, the Text keeping only the signature
  (`CACHE_KEY`). A cache file whose rig signature is not the one recorded (stale, foreign,
  damaged) or that is missing is never used: the data is rebuilt from the mesh the first
  time it is needed (`load`), with progress, and written again. Opening a file never
  builds (`scan_missing` only lists what will be rebuilt).

Files written by earlier versions (line-wrapped base64 in the body) are still read.
Everything else in the add-on goes through the functions of this module: it is the only
one that knows where the data lives (docs/storage.md §4).

Ownership. A pointer property is copied by Shift+D, so a duplicate points to the
original's Text. The Text records its owner as an ID pointer (`OWNER_ID_KEY`: survives
renames and save/reload, and Shift+D copies the object, not the Text, so a copy never
becomes the owner) and a stable id (`UID_KEY`, also on the object). Any other object
pointing to the Text is treated as unbuilt, and building it gives it its own Text. When
the owner was removed, the one object still pointing to the Text adopts it. (Files of
earlier versions recorded the owner's name, `OWNER_KEY`; they are still read, and the
pointer is recorded on first use.) The owner pointer is a user of the object: a deleted
or joined-away mesh lingers in `bpy.data` until `remove_orphans` (on save and load)
removes its Text, which drops it.

Staleness. Two signatures are stored at build time: the full rig signature (topology,
rest positions, weights, bones; checked on explicit actions) and a quick "state"
signature of everything else that changes the evaluated mesh: counts, vertex group names,
the modifier stack (order, types, visibility, the Armature modifier's settings), shape
keys and the armature's bones. The quick one is checked on every use, including every
frame, so it reads only names and flags (no per-vertex data).

Decoded objects are cached per session, keyed by the build id (a new one per build), so a
rebuild always replaces the cached object. A build puts its own data's stored form there
(`persist.stored_form`: what decoding the bytes it wrote gives, without decoding them), so
the first update after a Build decodes nothing; opening a file decodes the data of the
live overlay's characters in a background thread (`prefetch`).

Linked characters and library overrides (issue 26, docs/storage.md §6). Nothing this file
writes on such an object is kept: a linked object is saved in its library, and an
override's add-on properties come back from the library on reopening. Their data is a
local Text whose owner pointer (`OWNER_ID_KEY`, an ID pointer, which may point to linked
data) is the object, found by that pointer; the signatures live on the Text too
(`SIGNATURE_KEY`, `SHAPE_KEY`). Without such a Text, a link or an override uses the data
built in the asset file itself (a linked Text owned by the linked object, or by the
override's reference), read-only, when it still fits. Stored rigs and signatures name the
armature relative to the object (`identity.relative_name`), so the asset's build fits its
links; loaded data is named after the object using it (`ID.name_full`).
"""
from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..core.contacts.bones import polygon_bones
from ..core.methods import registry
from ..core.scan import CollisionObject
from ..core.scan.carry import for_object
from ..core.storage import blob as container  # (`blob` names the stored bytes below)
from ..core.storage import persist
from . import identity
from .state import STATE

TEXT_PREFIX = ".skin_collide/"
OWNER_KEY = "skin_collide_owner"        # the owner's name (earlier versions; kept as a note)
OWNER_ID_KEY = "skin_collide_owner_id"  # the owner itself (an ID pointer property)
UID_KEY = "skin_collide_uid"
BUILD_KEY = "skin_collide_build"
BLOB_KEY = "skin_collide_blob"          # the persist bytes, when kept in the file
CACHE_KEY = "skin_collide_cache"        # the rig signature, when kept on disk
METHOD_KEY = "skin_collide_method"      # the method asked at build (for a rebuild)
SET_KEY = "skin_collide_sphere_set"     # earlier versions: a sphere set's (count, seed)
OPTIONS_KEY = "skin_collide_options"    # the method's build options (JSON), for a rebuild
SIGNATURE_KEY = "skin_collide_signature"  # the rig signature at build (also on local objects)
SHAPE_KEY = "skin_collide_shape"        # the state signature at build (also on local objects)
REST_KEY = "skin_collide_rest"          # the character's rest contacts (addon/rest_contacts.py)
RIGID_KEY = "skin_collide_rigid"        # what moves a rigid prop ("" or absent: skinned)
SOURCE_KEY = "skin_collide_source"      # the signature of the mesh's own rig, when the
                                        # data is of its evaluated surface
CACHE_DIR = "//skin_collide_cache/"
CACHE_SUFFIX = ".skcb"
BODY = ("skin_collide collision data for '{}': binary, in this Text's custom property or "
        "in //skin_collide_cache/; do not edit.\n")

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


def _texts():
    import bpy

    return bpy.data.texts


def _props(ob):
    return getattr(ob, "skin_collide", None)


def _owned_local_text(ob):
    """The local data Text whose owner pointer is `ob`: where a linked or overridden object
    keeps data built in this file (nothing written on the object itself is kept)."""
    for t in _texts():
        if t.library is None and UID_KEY in t and OWNER_ID_KEY in t and t[OWNER_ID_KEY] == ob:
            return t
    return None


def _text_of(ob):
    """The data Text `ob` uses: its pointer for a local object; for a linked or overridden
    one, the local Text built for it here, else its pointer (the asset file's build)."""
    props = _props(ob)
    if props is None:
        return None
    if identity.is_local(ob):
        return props.data
    return _owned_local_text(ob) or props.data


def text_of(ob):
    """The Text holding `ob`'s data (own or the asset's), or None."""
    text = _text_of(ob)
    return text if text is not None and owns(ob, text) else None


def inherited(ob) -> bool:
    """Whether `ob` uses data built in its asset file (linked, read-only)."""
    text = text_of(ob)
    return text is not None and text.library is not None


def _linked(ob) -> bool:
    """Whether `ob` is still part of the file (in a collection), not merely kept alive by
    the owner pointer of its Text after being deleted or joined away. A placeholder of a
    linked object whose library is missing (an unmounted drive) counts: its data must
    survive until the library is back."""
    return bool(ob.users_collection) or ob.is_missing


def _inherits(ob, text) -> bool:
    """Whether linked `text` (built in an asset file) is the data of `ob`: its owner is `ob`
    itself (a link) or the library object `ob` overrides."""
    owner = text.get(OWNER_ID_KEY)
    if owner is None:
        return text.get(OWNER_KEY) == ob.name      # files of earlier versions
    if owner == ob:
        return True
    override = ob.override_library
    return override is not None and override.reference == owner


def owns(ob, text) -> bool:
    """Whether `ob` owns `text` (and not merely a copied pointer to it), or inherits it from
    its asset file."""
    if text is None:
        return False
    if text.library is not None:
        return _inherits(ob, text)
    if OWNER_ID_KEY in text:
        owner = text[OWNER_ID_KEY]
        if owner == ob:
            return True                   # cheap: every frame asks this for each mesh
        if owner is not None and _text_of(owner) == text and _linked(owner):
            return False
        import bpy  # owner removed (or re-pointed): the only pointer left adopts

        return not any(o != ob and _text_of(o) == text and _linked(o)
                       for o in bpy.data.objects if o.type == "MESH")
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
    """Whether mesh object `ob` has collision data of its own (or its asset file's)."""
    return text_of(ob) is not None


def adopt(ob) -> None:
    """Record `ob`'s current name in the Text it owns (after a rename), so that ownership
    is decided by one name lookup again instead of a scan of all objects. Linked Texts (the
    asset file's) are never written."""
    text = _text_of(ob)
    if text is not None and text.library is None and \
            (text.get(OWNER_ID_KEY) != ob or text.get(OWNER_KEY) != ob.name) and owns(ob, text):
        text[OWNER_ID_KEY] = ob
        text[OWNER_KEY] = ob.name


def uid(ob) -> str:
    """The stable identity of a built object (survives renames, saving and reloading).
    Objects sharing their asset file's data (a link and an override of one character) are
    told apart by their full names."""
    text = text_of(ob)
    if text is None:
        return ""
    props = _props(ob)
    base = str(text.get(UID_KEY) or (props.uid if props is not None else "") or ob.name_full)
    return base if text.library is None else f"{base}@{ob.name_full}"


def built_signature(ob) -> str:
    """The rig signature recorded when `ob`'s data was built ('' when unbuilt)."""
    text = text_of(ob)
    if text is None:
        return ""
    return str(text.get(SIGNATURE_KEY) or _props(ob).signature)


def _built_shape(ob) -> str:
    """The state signature recorded when `ob`'s data was built."""
    text = text_of(ob)
    return "" if text is None else str(text.get(SHAPE_KEY) or _props(ob).shape)


def _armature(ob):
    from . import extract

    return extract.modifier_report(ob).armature


def _stored_rig(rig, ob):
    """`rig` as stored: named by `ob`'s bare name, its armature by the name relative to
    `ob` (so that the asset file's build fits its links and overrides). A shallow copy:
    the arrays are shared, `rig` is unchanged."""
    arm = _armature(ob)
    out = copy.copy(rig)
    out.name = ob.name
    if arm is not None and arm.name_full == rig.armature:
        out.armature = identity.relative_name(arm, ob)
    return out


def _stored(obj: CollisionObject, ob) -> CollisionObject:
    """`obj` as stored (`_stored_rig`); `obj` is unchanged."""
    out = copy.copy(obj)
    out.rig = _stored_rig(obj.rig, ob)
    out.name = out.rig.name
    return out


def _bind(obj: CollisionObject, ob) -> CollisionObject:
    """Loaded `obj` (owned by the caller) named after the object using it (its full name)
    and with that object's armature by full name: the identities of this session, which
    results, reports and seams between characters use."""
    obj.name = obj.rig.name = ob.name_full
    arm = _armature(ob)
    if arm is not None and identity.relative_name(arm, ob) == obj.rig.armature:
        obj.rig.armature = arm.name_full
    return obj


def rig_signature(ob, rig) -> str:
    """The signature of `rig` (read from `ob` now) in the form recorded at build."""
    return persist.rig_signature(_stored_rig(rig, ob))


def cache_dir(blend_path: str | None = None) -> str | None:
    """Absolute path of the disk cache folder next to `blend_path` (default: the open
    .blend), or None when the file was never saved (``//`` needs a saved file)."""
    import bpy

    blend_path = bpy.data.filepath if blend_path is None else blend_path
    if not blend_path:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(blend_path)), "skin_collide_cache")


def cache_path(signature: str, blend_path: str | None = None) -> str | None:
    """Where the disk cache of data with rig signature `signature` lives (None: unsaved)."""
    folder = cache_dir(blend_path)
    return None if folder is None else os.path.join(folder, signature + CACHE_SUFFIX)


def location(ob) -> str:
    """Where `ob`'s data is: "FILE", "DISK" or "" (none)."""
    text = text_of(ob)
    if text is None:
        return ""
    return "DISK" if text.get(CACHE_KEY) and text.get(BLOB_KEY) is None else "FILE"


def _want_disk(ob, blend_path: str | None = None) -> bool:
    import bpy

    scenes = list(ob.users_scene) or [bpy.context.scene]
    return (any(getattr(s.skin_collide, "data_location", "FILE") == "DISK" for s in scenes)
            and cache_dir(blend_path) is not None)


def _set_bytes(text, data: bytes, key: str = BLOB_KEY) -> None:
    """Store bytes in a custom property. Blender assigns to an EXISTING byte-string
    property as a C string (it stops at the first zero byte), so the old one is removed
    first (pip bpy 5.0.1; tests/blender/test_storage.py)."""
    if key in text:
        del text[key]
    text[key] = data


def text_uid(ob) -> str:
    """The uid of the Text holding `ob`'s data (shared by the objects using one asset
    file's build; `uid` tells those apart), '' when unbuilt."""
    text = text_of(ob)
    return "" if text is None else str(text.get(UID_KEY) or uid(ob))


def rest_contacts_of(ob) -> dict[str, np.ndarray]:
    """The rest contacts stored with `ob`'s data: partner key -> (K, 2) int64 triangle
    pairs (this character's, the partner's). The key is `text_uid(ob)` for contacts with
    itself, else the partner's `uid`. Empty when none are stored or they cannot be read."""
    text = text_of(ob)
    raw = None if text is None else text.get(REST_KEY)
    if raw is None:
        return {}
    try:
        arrays = container.decode(bytes(raw))
    except ValueError:
        return {}
    return {k: v.astype(np.int64).reshape(-1, 2) for k, v in arrays.items()}


def set_rest_contacts(ob, by_partner: dict[str, np.ndarray]) -> None:
    """Store `ob`'s rest contacts (see `rest_contacts_of`) with its own local data, as
    compact binary: hundreds of thousands of contacts (two coincident characters) would
    make a Text body slow to write and to show."""
    text = text_of(ob)
    if text is None or text.library is not None:
        raise ValueError(f"'{ob.name_full}' has no collision data of this file to store "
                         "rest contacts with: build it")
    arrays = {k: np.asarray(v, np.int64).reshape(-1, 2) for k, v in by_partner.items()
              if len(v)}
    if arrays:
        _set_bytes(text, container.encode(arrays, codec="zlib"), REST_KEY)
    elif REST_KEY in text:
        del text[REST_KEY]


def drop_rest_partners(keys: set[str]) -> int:
    """Remove the rest contacts with partners `keys` from every local data Text (rebuilt or
    cleared characters). Returns how many Texts changed."""
    changed = 0
    for text in _texts():
        if text.library is not None or REST_KEY not in text:
            continue
        try:
            arrays = container.decode(bytes(text[REST_KEY]))
        except ValueError:
            continue
        kept = {k: v for k, v in arrays.items() if k not in keys}
        if len(kept) != len(arrays):
            if kept:
                _set_bytes(text, container.encode(kept, codec="zlib"), REST_KEY)
            else:
                del text[REST_KEY]
            changed += 1
    return changed


def _write_cache(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)             # readers never see half a file


def relocate(blend_path: str | None = None) -> int:
    """Before saving to `blend_path`: move each object's data to where its scene wants it
    (into the disk cache next to `blend_path`, or back into the file). Data whose cache is
    missing stays missing (rebuilt when needed). Returns how many moved."""
    import bpy

    moved = 0
    for ob in bpy.data.objects:
        text = text_of(ob) if ob.type == "MESH" else None
        if text is None or text.library is not None:
            continue                  # the asset file's build stays where its file has it
        blob = text.get(BLOB_KEY)
        if _want_disk(ob, blend_path) and blob is not None:
            signature = signature_of_text(ob, text)
            _write_cache(cache_path(signature, blend_path), bytes(blob))
            del text[BLOB_KEY]
            text[CACHE_KEY] = signature
            moved += 1
        elif not _want_disk(ob, blend_path) and blob is None and text.get(CACHE_KEY):
            obj = _read_cache(ob, text)
            if obj is not None:
                _set_bytes(text, persist.to_bytes(obj))
                del text[CACHE_KEY]
                moved += 1
    return moved


def save(ob, obj: CollisionObject) -> None:
    """Store `obj` for mesh object `ob` (replacing earlier data of its own; a copied
    pointer to another object's data, or the asset file's data, is replaced by a new local
    Text), in the file or in the disk cache as the scene says."""
    text = text_of(ob)
    if text is not None and text.library is not None:
        text = None                   # the asset file's data: linked, never written here
    if text is None:
        text = _texts().new(TEXT_PREFIX + ob.name)
        text[UID_KEY] = uuid.uuid4().hex
    stored = _stored(obj, ob)
    data = persist.to_bytes(stored)
    signature = persist.rig_signature(stored.rig)
    if _want_disk(ob):
        _write_cache(cache_path(signature), data)
        if BLOB_KEY in text:
            del text[BLOB_KEY]
        text[CACHE_KEY] = signature
    else:
        _set_bytes(text, data)
        if CACHE_KEY in text:
            del text[CACHE_KEY]
    text.from_string(BODY.format(ob.name))
    text[METHOD_KEY] = str(obj.asked)
    text[RIGID_KEY] = obj.rig.rigid
    if obj.rig.source_signature:
        text[SOURCE_KEY] = obj.rig.source_signature
    elif SOURCE_KEY in text:
        del text[SOURCE_KEY]
    options = registry.get(obj.method).built_options(obj.data)
    if options:
        text[OPTIONS_KEY] = json.dumps(options, sort_keys=True)
    elif OPTIONS_KEY in text:
        del text[OPTIONS_KEY]
    if SET_KEY in text:                  # what earlier versions stored for sphere sets
        del text[SET_KEY]
    text[OWNER_KEY] = ob.name
    text[OWNER_ID_KEY] = ob
    text[BUILD_KEY] = uuid.uuid4().hex
    text[SIGNATURE_KEY] = signature
    text[SHAPE_KEY] = state_signature(ob)
    if identity.is_local(ob):        # also on the object, as earlier versions read it
        props = ob.skin_collide
        props.data = text
        props.uid = str(text[UID_KEY])
        props.signature = signature
        props.shape = text[SHAPE_KEY]
    _forget_cached(text)
    # The session's decoded object is the stored form (what `load` would decode from the
    # bytes just written), made without the codec: the first use after a build neither
    # decodes megabytes nor builds again what the build already made on it (self trees).
    cache_key, key = _session_key(ob, text)
    STATE.objects[cache_key] = (key, _bind(persist.stored_form(stored), ob))
    STATE.missing_data.discard(ob.name_full)


def signature_of_text(ob, text) -> str:
    """The rig signature recorded in `text` (on the object, for earlier versions' files)."""
    return str(text.get(SIGNATURE_KEY) or _props(ob).signature)


def _forget_cached(text) -> None:
    for key in [k for k in STATE.objects if k[0] == text.name_full]:
        del STATE.objects[key]


def _read_cache(ob, text) -> CollisionObject | None:
    """The disk cache of `ob`, or None when it is missing, stale, foreign or damaged."""
    signature = str(text.get(CACHE_KEY) or "")
    path = cache_path(signature, _home_file(text)) if signature else None
    if path is None or not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            obj = persist.from_bytes(f.read())
    except (OSError, ValueError):
        return None
    # The file name is only a key: the content must be the data of this very rig.
    if persist.rig_signature(obj.rig) != signature or signature != signature_of_text(ob, text):
        return None
    return obj


def rebuild(ob) -> CollisionObject:
    """Build `ob`'s data again from the mesh (its cache was missing or stale), with
    progress, and store it where the scene says. Raises `extract.RigError` when the mesh
    cannot be read."""
    import bpy

    from ..core import scan as core_scan
    from . import extract

    wm = bpy.context.window_manager
    wm.progress_begin(0, 2)
    try:
        text = text_of(ob)
        rig = extract.rig_from_object(ob, moved=stored_moved(ob))
        wm.progress_update(1)
        asked = str(text.get(METHOD_KEY) or registry.DEFAULT)
        try:
            obj = core_scan.prepare(rig, asked, **stored_options(text))   # the same options
        except (KeyError, TypeError):     # a method (or option) this version does not have
            obj = core_scan.prepare(rig)
        wm.progress_update(2)
    finally:
        wm.progress_end()
    print(f"skin_collide: rebuilt the collision data of '{ob.name_full}' "
          f"({obj.build_seconds:.1f} s; its cache was missing or stale)")
    save(ob, obj)
    return obj


def stored_options(text) -> dict:
    """The build options stored with the data (`Method.built_options`), {} without."""
    raw = text.get(OPTIONS_KEY)
    if raw:
        try:
            return dict(json.loads(str(raw)))
        except (ValueError, TypeError):
            return {}
    legacy = text.get(SET_KEY)          # earlier versions: a sphere set's (count, seed)
    if legacy is not None and len(legacy) == 2:
        return {"count": int(legacy[0]), "seed": int(legacy[1])}
    return {}


def source_signature(ob) -> str:
    """The signature of the rig of `ob`'s own mesh data when it was built
    (`core.storage.persist.source_signature`): what `addon.session` compares with the mesh now.
    For data of an evaluated surface it is kept apart (`SOURCE_KEY`), so that checking it
    needs no evaluation and no decoding."""
    text = text_of(ob)
    if text is not None and text.get(SOURCE_KEY):
        return str(text[SOURCE_KEY])
    return built_signature(ob)


def needs_rebuild(ob) -> bool:
    """Whether `ob` is built but its data must be rebuilt before use (disk cache missing,
    stale or foreign; or the file is unsaved). Cheap: no decoding."""
    text = text_of(ob)
    if text is None or text.get(BLOB_KEY) is not None:
        return False
    if not text.get(CACHE_KEY):
        return False               # earlier versions' base64 body (or damaged: `load` says)
    hit = STATE.objects.get((text.name_full, ob.as_pointer()))
    if hit is not None and hit[0] == str(text.get(BUILD_KEY)):
        return False
    path = cache_path(str(text[CACHE_KEY]), _home_file(text))
    return path is None or not os.path.isfile(path)


def _home_file(text) -> str | None:
    """The .blend next to which `text`'s disk cache lives: its library's for the asset
    file's data, None (the open file) for data of this file."""
    if text.library is None:
        return None
    import bpy

    return bpy.path.abspath(text.library.filepath, library=text.library.library)


def scan_missing() -> set[str]:
    """After a file is opened: note the meshes whose data will be rebuilt when first
    needed (nothing is built or read here, so opening never blocks)."""
    import bpy

    STATE.missing_data.clear()
    for ob in bpy.data.objects:
        if ob.type == "MESH" and has_data(ob) and needs_rebuild(ob):
            STATE.missing_data.add(ob.name_full)
    return STATE.missing_data


def _session_key(ob, text) -> tuple[tuple, str]:
    """Where `ob`'s decoded data is kept for the session (`STATE.objects`: Text full name
    and object pointer, as a link and an override of one asset may share a Text), and the
    build id that names the data (every build gets a new one)."""
    return (text.name_full, ob.as_pointer()), str(text.get(BUILD_KEY)
                                                  or signature_of_text(ob, text))


_PREFETCH: ThreadPoolExecutor | None = None


def prefetch(scenes) -> int:
    """After a file is opened: decode, in a background thread, the data stored in the file
    of the built meshes of `scenes` whose live overlay is on (what their first frame
    change would decode), with their self trees when the scene checks self-collision, so
    that the first update does not wait for it. `load` takes the result (or waits for a
    decoding still running). Only numpy and lzma run in the thread; the bytes are read
    here. Data in the disk cache or to rebuild is left to `load`. Returns how many."""
    global _PREFETCH
    STATE.prefetched.clear()
    jobs = {}
    for scene in scenes:
        settings = getattr(scene, "skin_collide", None)
        if settings is None or not settings.live:
            continue
        for ob in scene.objects:
            text = text_of(ob) if ob.type == "MESH" else None
            if text is None or text.get(BLOB_KEY) is None:
                continue
            cache_key, key = _session_key(ob, text)
            if cache_key in jobs or STATE.objects.get(cache_key, (None,))[0] == key:
                continue
            jobs[cache_key] = (key, bytes(text[BLOB_KEY]), settings.self_collision)
    if jobs and _PREFETCH is None:
        _PREFETCH = ThreadPoolExecutor(1, thread_name_prefix="skin_collide_prefetch")
    for cache_key, (key, data, self_tree) in jobs.items():
        STATE.prefetched[cache_key] = (key, _PREFETCH.submit(_decode, data, self_tree))
    return len(jobs)


def _decode(data: bytes, self_tree: bool) -> CollisionObject:
    obj = persist.from_bytes(data)
    if self_tree:
        ready_for_self_collision(obj)
    return obj


def ready_for_self_collision(obj: CollisionObject) -> None:
    """Make now what the first self query and the first self contact of `obj` would make
    (kept on it): its self tree, and each polygon's dominant bone (which tells a self
    contact's sides apart). Numpy only: safe on a worker thread."""
    for_object(obj)
    polygon_bones(obj.rig)


def stop_prefetch() -> None:
    """Forget the background decodings (unregistering): running ones finish unused."""
    global _PREFETCH
    STATE.prefetched.clear()
    if _PREFETCH is not None:
        _PREFETCH.shutdown(wait=False, cancel_futures=True)
        _PREFETCH = None


def _prefetched(cache_key, key: str) -> CollisionObject | None:
    """The object `prefetch` decoded for `cache_key` at build id `key` (waiting for it if
    still running), or None: none, another build's, or its decoding failed (then `load`
    decodes on this thread and reports the error as always)."""
    job = STATE.prefetched.pop(cache_key, None)
    if job is None or job[0] != key:
        return None
    try:
        return job[1].result()
    except Exception:  # noqa: BLE001 - decoded again by the caller, which reports it
        return None


def load(ob) -> CollisionObject | None:
    """The stored data of `ob`, or None when there is none. Data whose disk cache is
    missing, stale or foreign is rebuilt here (the first time it is needed)."""
    text = text_of(ob)
    if text is None:
        return None
    # The build id names the data without reading the (megabytes of) bytes on every frame
    # and redraw.
    cache_key, key = _session_key(ob, text)
    hit = STATE.objects.get(cache_key)
    if hit is not None and hit[0] == key:
        return _bind(hit[1], ob)          # cheap; follows a rename
    blob = text.get(BLOB_KEY)
    obj = _prefetched(cache_key, key) if blob is not None else None
    if obj is None and blob is None and text.get(CACHE_KEY):
        obj = _read_cache(ob, text)
        if obj is None:
            obj = rebuild(ob)
            text = text_of(ob)            # a new local Text when the asset's cache was gone
            cache_key, key = _session_key(ob, text)
    elif obj is None:
        try:
            if blob is not None:
                data = bytes(blob)
            else:                        # earlier versions: line-wrapped base64 body
                data = base64.decodebytes(text.as_string().encode("ascii"))
            obj = persist.from_bytes(data)
        except Exception as exc:      # noqa: BLE001 - damaged or foreign text
            raise ValueError(f"the collision data of '{ob.name_full}' cannot be read ({exc}); "
                             "rebuild it") from None
    STATE.objects[cache_key] = (key, _bind(obj, ob))
    STATE.missing_data.discard(ob.name_full)
    return obj


def stale_reason(ob) -> str:
    """Why the stored data no longer fits the mesh ('' when it fits)."""
    if not has_data(ob):
        return ""
    if ob.mode == "EDIT":
        return f"'{ob.name_full}' is in Edit Mode: switch to Object Mode"
    from . import extract

    arm = extract.modifier_report(ob).armature    # a modifier's, or armature parenting's
    if arm is None and not text_is_rigid(ob):
        return (f"'{ob.name_full}' has no armature any more (deleted, or the Armature modifier's "
                "object is empty): restore it, or rebuild")
    stored = _built_shape(ob)
    if stored != state_signature(ob):
        if stored.count(":") == 2 and stored == shape_signature(ob):
            return ""                # built by an older version: only the counts are known
        return (f"'{ob.name_full}' changed since its collision data was built (vertices, faces, "
                "vertex groups, modifiers, shape keys or armature bones): rebuild")
    return ""


def stored_moved(ob) -> str:
    """What moved `ob` when it was built without an armature (`Rig.rigid`, stored), for
    reading its rig again the same way (`extract.source_rig`'s `moved`); "" otherwise."""
    text = text_of(ob)
    return str(text.get(RIGID_KEY) or "") if text is not None else ""


def text_is_rigid(ob) -> bool:
    """Whether `ob`'s data is of a rigid prop (no armature to lose), without decoding."""
    text = text_of(ob)
    return text is not None and bool(text.get(RIGID_KEY))


def clear(ob) -> None:
    """Forget `ob`'s data; remove the Text only when `ob` owns it (the asset file's data,
    linked, stays: clearing a link or an override only drops what was built here)."""
    text = _text_of(ob)
    mine = text is not None and text.library is None and owns(ob, text)
    if identity.is_local(ob):
        props = ob.skin_collide
        props.data = None
        props.signature = ""
        props.shape = ""
    if mine:
        _forget_cached(text)
        _texts().remove(text)


def remove_orphans() -> int:
    """Remove the data Texts that no object points to any more (deleted or joined-away
    meshes). A Text that some object still points to is kept, even when its ownership is
    ambiguous. Returns how many were removed."""
    import bpy

    # (a placeholder of missing linked data is no mesh: its type is unknown until then)
    used = {t.name_full for ob in bpy.data.objects
            if (ob.type == "MESH" or ob.is_missing) and _linked(ob)
            for t in (_text_of(ob),) if t is not None}
    gone = [t for t in bpy.data.texts if t.library is None and t.get(UID_KEY) is not None
            and t.name_full not in used]
    for t in gone:
        _forget_cached(t)
        bpy.data.texts.remove(t)
    # A kept Text whose owner was deleted (kept alive only by this pointer): hand it to the
    # one object still pointing to it, or forget the pointer, so the deleted object is not
    # saved with the file.
    for t in bpy.data.texts:
        owner = t.get(OWNER_ID_KEY) if t.library is None and UID_KEY in t else None
        if owner is None or _linked(owner):
            continue
        heirs = [o for o in bpy.data.objects if o.type == "MESH" and _linked(o)
                 and _text_of(o) == t]
        if len(heirs) == 1:
            t[OWNER_ID_KEY] = heirs[0]
            t[OWNER_KEY] = heirs[0].name
        else:
            del t[OWNER_ID_KEY]
    return len(gone)
