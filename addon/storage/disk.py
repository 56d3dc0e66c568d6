"""The disk cache of built data (``scene.skin_collide.data_location == "DISK"``):
``//skin_collide_cache/<rig signature>.skcb`` next to the saved .blend, the data Text
keeping only the signature (`CACHE_KEY`). A cache file whose rig signature is not the one
recorded (stale, foreign, damaged) or that is missing is never used: the data is rebuilt
from the mesh the first time it is needed (`store.load`), with progress, and written
again. Opening a file never builds (`scan_missing` only lists what will be rebuilt);
saving moves each build to where its scene wants it (`relocate`).
"""
from __future__ import annotations

import os
import uuid

from ...core.scan import CollisionObject
from ...core.storage import persist
from ..state import STATE
from .encoding import as_stored, set_bytes
from .keys import BLOB_KEY, BUILD_KEY, CACHE_KEY, CACHE_SUFFIX, OWN_KEY
from .shared import hand_over, holder_of, unshare
from .texts import has_data, signature_of_text, text_of


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


def wants_disk(ob, blend_path: str | None = None) -> bool:
    import bpy

    scenes = list(ob.users_scene) or [bpy.context.scene]
    return (any(getattr(s.skin_collide, "data_location", "FILE") == "DISK" for s in scenes)
            and cache_dir(blend_path) is not None)


def home_file(text) -> str | None:
    """The .blend next to which `text`'s disk cache lives: its library's for the asset
    file's data, None (the open file) for data of this file."""
    if text.library is None:
        return None
    import bpy

    return bpy.path.abspath(text.library.filepath, library=text.library.library)


def write_cache(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex[:8]}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)             # readers never see half a file


def read_cache(ob, text) -> CollisionObject | None:
    """The disk cache of `ob`, or None when it is missing, stale, foreign or damaged."""
    signature = str(text.get(CACHE_KEY) or "")
    path = cache_path(signature, home_file(text)) if signature else None
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


def needs_rebuild(ob) -> bool:
    """Whether `ob` is built but its data must be rebuilt before use (disk cache missing,
    stale or foreign; or the file is unsaved). Cheap: no decoding."""
    text = text_of(ob)
    if text is not None and OWN_KEY in text:
        return holder_of(text) is None      # a copy whose shared bytes are gone
    if text is None or text.get(BLOB_KEY) is not None:
        return False
    if not text.get(CACHE_KEY):
        return False               # earlier versions' base64 body (or damaged: `load` says)
    hit = STATE.objects.get((text.name_full, ob.as_pointer()))
    if hit is not None and hit[0] == str(text.get(BUILD_KEY)):
        return False
    path = cache_path(str(text[CACHE_KEY]), home_file(text))
    return path is None or not os.path.isfile(path)


def scan_missing() -> set[str]:
    """After a file is opened: note the meshes whose data will be rebuilt when first
    needed (nothing is built or read here, so opening never blocks)."""
    import bpy

    STATE.missing_data.clear()
    for ob in bpy.data.objects:
        if ob.type == "MESH" and has_data(ob) and needs_rebuild(ob):
            STATE.missing_data.add(ob.name_full)
    return STATE.missing_data


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
        if wants_disk(ob, blend_path) and OWN_KEY in text:
            # A copy sharing another's bytes (or holding them for copies): its own whole
            # build goes to its own cache file; the bytes it held stay with the copies.
            holder = holder_of(text)
            obj = None if holder is None else \
                persist.with_own(persist.from_bytes(bytes(holder[BLOB_KEY])), text[OWN_KEY])
            if obj is not None:
                signature = signature_of_text(ob, text)
                write_cache(cache_path(signature, blend_path),
                            persist.to_bytes(as_stored(obj, ob)))
                hand_over(text)
                if BLOB_KEY in text:
                    del text[BLOB_KEY]
                unshare(text)
                text[CACHE_KEY] = signature
                moved += 1
        elif wants_disk(ob, blend_path) and blob is not None:
            hand_over(text)           # the copies sharing its bytes keep them in the file
            signature = signature_of_text(ob, text)
            write_cache(cache_path(signature, blend_path), bytes(blob))
            del text[BLOB_KEY]
            text[CACHE_KEY] = signature
            moved += 1
        elif not wants_disk(ob, blend_path) and blob is None and text.get(CACHE_KEY):
            obj = read_cache(ob, text)
            if obj is not None:
                set_bytes(text, persist.to_bytes(obj))
                del text[CACHE_KEY]
                moved += 1
    return moved
