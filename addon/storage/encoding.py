"""What a stored build is made of: a `CollisionObject` encoded by `core.storage.persist` (a
compressed binary `core.storage.blob` container) into a bytes custom property, and the names in
it. Stored rigs and signatures name the object by its bare name and the armature relative
to the object (`identity.relative_name`), so the asset file's build fits its links and
overrides; loaded data is named after the object using it (`ID.name_full`, `bind`).
Files written by earlier versions (line-wrapped base64 in the Text's body) are still read
(`decode_text`).
"""
from __future__ import annotations

import base64
import copy

from ...core.scan import CollisionObject
from ...core.storage import persist
from .. import identity
from .keys import BLOB_KEY


def set_bytes(text, data: bytes, key: str = BLOB_KEY) -> None:
    """Store bytes in a custom property. Blender assigns to an EXISTING byte-string
    property as a C string (it stops at the first zero byte), so the old one is removed
    first (pip bpy 5.0.1; tests/blender/test_storage.py)."""
    if key in text:
        del text[key]
    text[key] = data


def _armature(ob):
    from .. import extract

    return extract.modifier_report(ob).armature


def stored_rig(rig, ob):
    """`rig` as stored: named by `ob`'s bare name, its armature by the name relative to
    `ob` (so that the asset file's build fits its links and overrides). A shallow copy:
    the arrays are shared, `rig` is unchanged."""
    arm = _armature(ob)
    out = copy.copy(rig)
    out.name = ob.name
    if arm is not None and arm.name_full == rig.armature:
        out.armature = identity.relative_name(arm, ob)
    return out


def as_stored(obj: CollisionObject, ob) -> CollisionObject:
    """`obj` as stored (`stored_rig`); `obj` is unchanged."""
    out = copy.copy(obj)
    out.rig = stored_rig(obj.rig, ob)
    out.name = out.rig.name
    return out


def bind(obj: CollisionObject, ob) -> CollisionObject:
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
    return persist.rig_signature(stored_rig(rig, ob))


def decode_text(ob, text, blob) -> CollisionObject:
    """The build stored in data Text `text` of `ob`: decoded from `blob`, the bytes custom
    property (`BLOB_KEY`), or from the Text's body when `blob` is None (earlier versions:
    line-wrapped base64). Raises ValueError naming `ob` when it cannot be read."""
    try:
        if blob is not None:
            data = bytes(blob)
        else:                        # earlier versions: line-wrapped base64 body
            data = base64.decodebytes(text.as_string().encode("ascii"))
        return persist.from_bytes(data)
    except Exception as exc:      # noqa: BLE001 - damaged or foreign text
        raise ValueError(f"the collision data of '{ob.name_full}' cannot be read ({exc}); "
                         "rebuild it") from None
