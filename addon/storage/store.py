"""Saving and loading a build: `save` writes an object's `CollisionObject` in the file or in
the disk cache as the scene says, `load` gives it back (decoded once per build and kept for
the session), `rebuild` makes it again from the mesh when its disk cache is gone. In the
file, the bytes are a bytes custom property of the data Text (`BLOB_KEY`), saved with the
.blend and restored on reload, on undo and shared (not copied) by Shift+D; on disk, see
`disk`.

Decoded objects are cached per session, keyed by the build id (a new one per build), so a
rebuild always replaces the cached object. A build puts its own data's stored form there
(`persist.stored_form`: what decoding the bytes it wrote gives, without decoding them), so
the first update after a Build decodes nothing; opening a file decodes the data of the
live overlay's characters in a background thread (`background.prefetch`).
"""
from __future__ import annotations

import json
import uuid

from ...core.methods import registry
from ...core.scan import CollisionObject
from ...core.storage import persist
from .. import identity
from ..state import STATE
from . import shared
from .background import take_prefetched
from .disk import cache_path, read_cache, wants_disk, write_cache
from .encoding import as_stored, bind, decode_text, set_bytes
from .keys import (
    BLOB_KEY,
    BODY,
    BUILD_KEY,
    CACHE_KEY,
    METHOD_KEY,
    OPTIONS_KEY,
    OWN_KEY,
    OWNER_ID_KEY,
    OWNER_KEY,
    RIGID_KEY,
    SET_KEY,
    SHAPE_KEY,
    SIGNATURE_KEY,
    SOURCE_KEY,
    TEXT_PREFIX,
    UID_KEY,
)
from .texts import data_texts, forget_session, session_key, stored_moved, stored_options, text_of
from .validity import state_signature


def save(ob, obj: CollisionObject, holder=None) -> None:
    """Store `obj` for mesh object `ob` (replacing earlier data of its own; a copied
    pointer to another object's data, or the asset file's data, is replaced by a new local
    Text), in the file or in the disk cache as the scene says.

    `holder`: the data Text of a copy of the same build stored just before (the Build
    operator's copies of one character, `obj.data` the same): in the file, `ob`'s Text
    then shares its bytes and holds only `ob`'s own fields (`shared`)."""
    text = text_of(ob)
    if text is not None and text.library is not None:
        text = None                   # the asset file's data: linked, never written here
    if text is None:
        text = data_texts().new(TEXT_PREFIX + ob.name)
        text[UID_KEY] = uuid.uuid4().hex
    shared.hand_over(text)            # bytes it holds for copies stay theirs
    stored = as_stored(obj, ob)
    signature = persist.rig_signature(stored.rig)
    copy_of = None
    if wants_disk(ob):
        write_cache(cache_path(signature), persist.to_bytes(stored))
        if BLOB_KEY in text:
            del text[BLOB_KEY]
        shared.unshare(text)
        text[CACHE_KEY] = signature
    else:
        if (holder is not None and holder != text and holder.library is None
                and BLOB_KEY in holder and not shared.is_copy(holder)):
            copy_of = holder
            shared.share(text, holder, persist.own_bytes(stored))
        else:
            set_bytes(text, persist.to_bytes(stored))
            shared.unshare(text)
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
    forget_session(text)
    # The session's decoded object is the stored form (what `load` would decode from the
    # bytes just written), made without the codec: the first use after a build neither
    # decodes megabytes nor builds again what the build already made on it (self trees).
    cache_key, key = session_key(ob, text)
    if copy_of is None:
        kept = persist.stored_form(stored)
        if BLOB_KEY in text:
            STATE.shared_bases[text.name_full] = (str(text[BUILD_KEY]), kept)
    else:
        kept = persist.with_own(_shared_base(copy_of), text[OWN_KEY])
    STATE.objects[cache_key] = (key, bind(kept, ob))
    STATE.missing_data.discard(ob.name_full)


def _shared_base(holder) -> CollisionObject:
    """The object decoded from the bytes `holder` holds, once per session and build (a
    copy's own fields go on a copy of it: `persist.with_own` never changes it)."""
    build = str(holder.get(BUILD_KEY))
    hit = STATE.shared_bases.get(holder.name_full)
    if hit is not None and hit[0] == build:
        return hit[1]
    # Decoded in the background for the holder's own object (`prefetch`), or here.
    ahead = [k for k in STATE.prefetched if k[0] == holder.name_full]
    base = take_prefetched(ahead[0], build) if ahead else None
    if base is None:
        base = persist.from_bytes(bytes(holder[BLOB_KEY]))
    STATE.shared_bases[holder.name_full] = (build, base)
    return base


def _load_copy(ob, text) -> CollisionObject:
    """A copy's data: its own fields on the bytes it shares; rebuilt when those are gone
    (as a missing disk cache is). Raises ValueError naming `ob` when they cannot be read."""
    holder = shared.holder_of(text)
    if holder is None:
        return rebuild(ob)
    try:
        return persist.with_own(_shared_base(holder), text[OWN_KEY])
    except ValueError as exc:
        raise ValueError(f"the collision data of '{ob.name_full}' cannot be read ({exc})"
                         ) from None


def load(ob) -> CollisionObject | None:
    """The stored data of `ob`, or None when there is none. Data whose disk cache is
    missing, stale or foreign is rebuilt here (the first time it is needed)."""
    text = text_of(ob)
    if text is None:
        return None
    # The build id names the data without reading the (megabytes of) bytes on every frame
    # and redraw.
    cache_key, key = session_key(ob, text)
    hit = STATE.objects.get(cache_key)
    if hit is not None and hit[0] == key:
        return bind(hit[1], ob)          # cheap; follows a rename
    if shared.is_copy(text):
        obj = _load_copy(ob, text)
        text = text_of(ob)                # a new local Text when it was rebuilt
        cache_key, key = session_key(ob, text)
        STATE.objects[cache_key] = (key, bind(obj, ob))
        STATE.missing_data.discard(ob.name_full)
        return obj
    blob = text.get(BLOB_KEY)
    obj = None
    if blob is not None:
        # Decoded already for the copies sharing these bytes, or in the background.
        hit = STATE.shared_bases.get(text.name_full)
        obj = hit[1] if hit is not None and hit[0] == str(text.get(BUILD_KEY)) else \
            take_prefetched(cache_key, key)
    if obj is None and blob is None and text.get(CACHE_KEY):
        obj = read_cache(ob, text)
        if obj is None:
            obj = rebuild(ob)
            text = text_of(ob)            # a new local Text when the asset's cache was gone
            cache_key, key = session_key(ob, text)
    elif obj is None:
        obj = decode_text(ob, text, blob)
    if blob is not None:
        # The copies sharing these bytes take their own fields on this object.
        STATE.shared_bases[text.name_full] = (str(text.get(BUILD_KEY)), obj)
    STATE.objects[cache_key] = (key, bind(obj, ob))
    STATE.missing_data.discard(ob.name_full)
    return obj


def rebuild(ob) -> CollisionObject:
    """Build `ob`'s data again from the mesh (its cache was missing or stale), with
    progress, and store it where the scene says. Raises `extract.RigError` when the mesh
    cannot be read."""
    import bpy

    from ...core import scan as core_scan
    from .. import extract

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
