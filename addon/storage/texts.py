"""Where an object's built data lives: which data Text it uses, whether it owns it, and what
is recorded on that Text besides the bytes (ids, signatures, the build's method options,
what moves a rigid prop).

Each built mesh object points (``ob.skin_collide.data``) to a hidden Text datablock
(``.skin_collide/<name>``; Blender hides dot-prefixed names in its ID menus), whose custom
properties (`keys`) hold the data or name its disk cache.

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

Linked characters and library overrides (issue 26, docs/storage.md §6). Nothing this
package writes on such an object is kept: a linked object is saved in its library, and an
override's add-on properties come back from the library on reopening. Their data is a
local Text whose owner pointer (`OWNER_ID_KEY`, an ID pointer, which may point to linked
data) is the object, found by that pointer; the signatures live on the Text too
(`SIGNATURE_KEY`, `SHAPE_KEY`). Without such a Text, a link or an override uses the data
built in the asset file itself (a linked Text owned by the linked object, or by the
override's reference), read-only, when it still fits.

Decoded objects are kept for the session in `STATE.objects` (`session_key`: by Text and
object, named by the build id); clearing or removing a Text forgets them.
"""
from __future__ import annotations

import json

from .. import identity
from ..state import STATE
from .keys import (
    BLOB_KEY,
    BUILD_KEY,
    CACHE_KEY,
    OPTIONS_KEY,
    OWNER_ID_KEY,
    OWNER_KEY,
    RIGID_KEY,
    SET_KEY,
    SHAPE_KEY,
    SIGNATURE_KEY,
    SOURCE_KEY,
    UID_KEY,
)
from .shared import hand_over


def data_texts():
    """The Text datablocks of the open file (`bpy.data.texts`)."""
    import bpy

    return bpy.data.texts


def props_of(ob):
    """The add-on's properties of `ob` (`ob.skin_collide`), None on an ID without them."""
    return getattr(ob, "skin_collide", None)


def _owned_local_text(ob):
    """The local data Text whose owner pointer is `ob`: where a linked or overridden object
    keeps data built in this file (nothing written on the object itself is kept)."""
    for t in data_texts():
        if t.library is None and UID_KEY in t and OWNER_ID_KEY in t and t[OWNER_ID_KEY] == ob:
            return t
    return None


def pointed_text(ob):
    """The data Text `ob` uses: its pointer for a local object; for a linked or overridden
    one, the local Text built for it here, else its pointer (the asset file's build)."""
    props = props_of(ob)
    if props is None:
        return None
    if identity.is_local(ob):
        return props.data
    return _owned_local_text(ob) or props.data


def text_of(ob):
    """The Text holding `ob`'s data (own or the asset's), or None."""
    text = pointed_text(ob)
    return text if text is not None and owns(ob, text) else None


def inherited(ob) -> bool:
    """Whether `ob` uses data built in its asset file (linked, read-only)."""
    text = text_of(ob)
    return text is not None and text.library is not None


def in_file(ob) -> bool:
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
        if owner is not None and pointed_text(owner) == text and in_file(owner):
            return False
        import bpy  # owner removed (or re-pointed): the only pointer left adopts

        return not any(o != ob and pointed_text(o) == text and in_file(o)
                       for o in bpy.data.objects if o.type == "MESH")
    owner = text.get(OWNER_KEY)
    if owner is None or owner == ob.name:
        return True
    import bpy

    other = bpy.data.objects.get(owner)
    if other is not None and other != ob and pointed_text(other) == text:
        return False          # the named owner still points to it: ob is a copy
    # The recorded owner was renamed or deleted: ob owns it unless another object also
    # points to it (then nobody can tell; treat both as unbuilt rather than guess).
    return not any(o != ob and pointed_text(o) == text for o in bpy.data.objects
                   if o.type == "MESH")


def has_data(ob) -> bool:
    """Whether mesh object `ob` has collision data of its own (or its asset file's)."""
    return text_of(ob) is not None


def adopt(ob) -> None:
    """Record `ob`'s current name in the Text it owns (after a rename), so that ownership
    is decided by one name lookup again instead of a scan of all objects. Linked Texts (the
    asset file's) are never written."""
    text = pointed_text(ob)
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
    props = props_of(ob)
    base = str(text.get(UID_KEY) or (props.uid if props is not None else "") or ob.name_full)
    return base if text.library is None else f"{base}@{ob.name_full}"


def text_uid(ob) -> str:
    """The uid of the Text holding `ob`'s data (shared by the objects using one asset
    file's build; `uid` tells those apart), '' when unbuilt."""
    text = text_of(ob)
    return "" if text is None else str(text.get(UID_KEY) or uid(ob))


def built_signature(ob) -> str:
    """The rig signature recorded when `ob`'s data was built ('' when unbuilt)."""
    text = text_of(ob)
    if text is None:
        return ""
    return str(text.get(SIGNATURE_KEY) or props_of(ob).signature)


def built_shape(ob) -> str:
    """The state signature recorded when `ob`'s data was built."""
    text = text_of(ob)
    return "" if text is None else str(text.get(SHAPE_KEY) or props_of(ob).shape)


def signature_of_text(ob, text) -> str:
    """The rig signature recorded in `text` (on the object, for earlier versions' files)."""
    return str(text.get(SIGNATURE_KEY) or props_of(ob).signature)


def source_signature(ob) -> str:
    """The signature of the rig of `ob`'s own mesh data when it was built
    (`core.storage.persist.source_signature`): what `addon.session` compares with the mesh now.
    For data of an evaluated surface it is kept apart (`SOURCE_KEY`), so that checking it
    needs no evaluation and no decoding."""
    text = text_of(ob)
    if text is not None and text.get(SOURCE_KEY):
        return str(text[SOURCE_KEY])
    return built_signature(ob)


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


def stored_moved(ob) -> str:
    """What moved `ob` when it was built without an armature (`Rig.rigid`, stored), for
    reading its rig again the same way (`extract.source_rig`'s `moved`); "" otherwise."""
    text = text_of(ob)
    return str(text.get(RIGID_KEY) or "") if text is not None else ""


def text_is_rigid(ob) -> bool:
    """Whether `ob`'s data is of a rigid prop (no armature to lose), without decoding."""
    text = text_of(ob)
    return text is not None and bool(text.get(RIGID_KEY))


def location(ob) -> str:
    """Where `ob`'s data is: "FILE", "DISK" or "" (none)."""
    text = text_of(ob)
    if text is None:
        return ""
    return "DISK" if text.get(CACHE_KEY) and text.get(BLOB_KEY) is None else "FILE"


def session_key(ob, text) -> tuple[tuple, str]:
    """Where `ob`'s decoded data is kept for the session (`STATE.objects`: Text full name
    and object pointer, as a link and an override of one asset may share a Text), and the
    build id that names the data (every build gets a new one)."""
    return (text.name_full, ob.as_pointer()), str(text.get(BUILD_KEY)
                                                  or signature_of_text(ob, text))


def forget_session(text) -> None:
    for key in [k for k in STATE.objects if k[0] == text.name_full]:
        del STATE.objects[key]
    STATE.shared_bases.pop(text.name_full, None)


def clear(ob) -> None:
    """Forget `ob`'s data; remove the Text only when `ob` owns it (the asset file's data,
    linked, stays: clearing a link or an override only drops what was built here)."""
    text = pointed_text(ob)
    mine = text is not None and text.library is None and owns(ob, text)
    if identity.is_local(ob):
        props = ob.skin_collide
        props.data = None
        props.signature = ""
        props.shape = ""
    if mine:
        hand_over(text)                  # the copies sharing its bytes keep them
        forget_session(text)
        data_texts().remove(text)


def remove_orphans() -> int:
    """Remove the data Texts that no object points to any more (deleted or joined-away
    meshes). A Text that some object still points to is kept, even when its ownership is
    ambiguous. Returns how many were removed."""
    import bpy

    # (a placeholder of missing linked data is no mesh: its type is unknown until then)
    used = {t.name_full for ob in bpy.data.objects
            if (ob.type == "MESH" or ob.is_missing) and in_file(ob)
            for t in (pointed_text(ob),) if t is not None}
    gone = [t for t in bpy.data.texts if t.library is None and t.get(UID_KEY) is not None
            and t.name_full not in used]
    names = {t.name_full for t in gone}
    for t in gone:
        hand_over(t, exclude=names)      # the copies still used keep the bytes they share
        forget_session(t)
        bpy.data.texts.remove(t)
    # A kept Text whose owner was deleted (kept alive only by this pointer): hand it to the
    # one object still pointing to it, or forget the pointer, so the deleted object is not
    # saved with the file.
    for t in bpy.data.texts:
        owner = t.get(OWNER_ID_KEY) if t.library is None and UID_KEY in t else None
        if owner is None or in_file(owner):
            continue
        heirs = [o for o in bpy.data.objects if o.type == "MESH" and in_file(o)
                 and pointed_text(o) == t]
        if len(heirs) == 1:
            t[OWNER_ID_KEY] = heirs[0]
            t[OWNER_KEY] = heirs[0].name
        else:
            del t[OWNER_ID_KEY]
    return len(gone)
