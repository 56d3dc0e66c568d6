"""Built collision data, kept in the .blend.

Each built mesh object points (``ob.skin_collide.data``) to a Text datablock holding its
`core.persist` bytes as base64: it is saved with the file and comes back on reload without
a rebuild. Decoded objects are cached per session, keyed by the rig signature they were
built from.
A cheap "shape" signature (vertex and polygon counts, vertex group names) is checked on
every use; the full rig signature on explicit actions.
"""
from __future__ import annotations

import base64
import hashlib

from ..core import persist
from ..core.scan import CollisionObject

TEXT_PREFIX = ".skin_collide/"
_cache: dict[str, tuple[str, CollisionObject]] = {}


def shape_signature(ob) -> str:
    """Vertex/polygon counts and vertex group names: cheap to read on every frame."""
    me = ob.data
    groups = "\0".join(g.name for g in ob.vertex_groups)
    return f"{len(me.vertices)}:{len(me.polygons)}:{hashlib.sha1(groups.encode()).hexdigest()[:12]}"


def save(ob, obj: CollisionObject) -> None:
    """Store `obj` for mesh object `ob` (replacing earlier data)."""
    import bpy

    props = ob.skin_collide
    text = props.data
    if text is None:
        text = bpy.data.texts.new(TEXT_PREFIX + ob.name)
    # Line-wrapped base64: Blender's text editor is very slow with one huge line.
    payload = base64.encodebytes(persist.to_bytes(obj)).decode("ascii")
    text.from_string(payload)
    props.data = text
    props.signature = persist.rig_signature(obj.rig)
    props.shape = shape_signature(ob)


def has_data(ob) -> bool:
    return getattr(ob, "skin_collide", None) is not None and ob.skin_collide.data is not None


def load(ob) -> CollisionObject | None:
    """The stored data of `ob`, or None when there is none."""
    if not has_data(ob):
        return None
    text = ob.skin_collide.data
    # The rig signature names what the data was built from, so it identifies the data
    # without reading the (megabytes of) text on every frame and redraw.
    key = ob.skin_collide.signature
    hit = _cache.get(text.name_full)
    if hit is not None and hit[0] == key:
        return hit[1]
    obj = persist.from_bytes(base64.decodebytes(text.as_string().encode("ascii")))
    _cache[text.name_full] = (key, obj)
    return obj


def stale_reason(ob) -> str:
    """Why the stored data no longer fits the mesh ('' when it fits)."""
    if not has_data(ob):
        return ""
    if ob.skin_collide.shape != shape_signature(ob):
        return (f"'{ob.name}' changed (vertices, faces or vertex groups) since its collision "
                "data was built: rebuild")
    return ""


def clear(ob) -> None:
    import bpy

    props = ob.skin_collide
    text = props.data
    props.data = None
    props.signature = ""
    props.shape = ""
    if text is not None:
        _cache.pop(text.name_full, None)
        bpy.data.texts.remove(text)
