"""Copies of one character share one build's bytes in the file (issue 43: builds shared by
a crowd). The Build operator builds copies once (`core.scan.shared_builds`); storing them,
the first copy's data Text holds the bytes as always, and each other copy's Text holds
only what it has of its own (`OWN_KEY`: `core.storage.persist.own_bytes`, its name,
armature, where the armature holds it) and names the Text whose bytes it shares
(`SHARED_KEY`, an ID pointer, with that Text's build id when shared, `SHARED_BUILD_KEY`).
A crowd of ten copies stores one build, and a file opened decodes it once.

The bytes never vanish under a copy: before a Text that holds them for copies gets new
bytes (its object rebuilt) or is removed (cleared, its object deleted), `hand_over` gives
them to the first of those copies (which keeps its own fields) and points the others to
it. A copy whose holder is gone anyway (a Text removed by hand, a file of another tool)
is rebuilt when first needed, as a missing disk cache is (`store.load`).
"""
from __future__ import annotations

from .encoding import set_bytes
from .keys import BLOB_KEY, BUILD_KEY, OWN_KEY, SHARED_BUILD_KEY, SHARED_KEY


def data_texts():
    import bpy

    return bpy.data.texts


def is_copy(text) -> bool:
    """Whether data Text `text` holds a copy's own fields (its bytes, if any, are shared
    bytes: decoded, they name another object)."""
    return text is not None and OWN_KEY in text


def share(text, holder, own: bytes) -> None:
    """Make `text` a copy's: no bytes of its own, `own` (`persist.own_bytes` of the copy as
    stored) and the bytes of `holder` (a local Text holding bytes)."""
    if BLOB_KEY in text:
        del text[BLOB_KEY]
    set_bytes(text, own, OWN_KEY)
    text[SHARED_KEY] = holder
    text[SHARED_BUILD_KEY] = str(holder[BUILD_KEY])


def unshare(text) -> None:
    """`text` gets bytes of its own (or none): it is no copy's any more."""
    for key in (SHARED_KEY, SHARED_BUILD_KEY, OWN_KEY):
        if key in text:
            del text[key]


def holder_of(text):
    """The Text whose bytes copy Text `text` decodes: itself when it holds them (an heir of
    `hand_over`), else the Text it shares, when that still holds the same build's bytes;
    None when they are gone."""
    if BLOB_KEY in text:
        return text
    holder = text.get(SHARED_KEY)
    if holder is None or BLOB_KEY not in holder or \
            str(holder.get(BUILD_KEY)) != str(text.get(SHARED_BUILD_KEY)):
        return None
    return holder


def copies_of(text, exclude=()) -> list:
    """The local copy Texts sharing the bytes `text` holds (not those in `exclude`, by full
    name), in the file's order."""
    if BLOB_KEY not in text:
        return []
    build = str(text.get(BUILD_KEY))
    return [t for t in data_texts() if t.library is None and t != text
            and t.name_full not in exclude and OWN_KEY in t and t.get(SHARED_KEY) == text
            and str(t.get(SHARED_BUILD_KEY)) == build]


def hand_over(text, exclude=()) -> None:
    """Before `text`'s bytes are replaced or `text` is removed: the copies sharing them (but
    those in `exclude`) keep them. The first takes the bytes (its own fields still apply),
    the others share its."""
    heirs = copies_of(text, exclude)
    if not heirs:
        return
    heir = heirs[0]
    set_bytes(heir, bytes(text[BLOB_KEY]))
    for key in (SHARED_KEY, SHARED_BUILD_KEY):
        del heir[key]
    for t in heirs[1:]:
        t[SHARED_KEY] = heir
        t[SHARED_BUILD_KEY] = str(heir[BUILD_KEY])
