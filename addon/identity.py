"""Which object is which in a studio's files (issue 26).

A shot file holds local objects, objects linked from asset files and library overrides of
them, and their bare names collide: linking a character and also overriding it gives
``Cesium_Man [char.blend]`` and ``Cesium_Man``. Results, reports, selections and the
command line therefore name an object by Blender's full name (`ID.name_full`: the name,
plus the library's file name for linked data), never by its bare name.

An asset built in its own file and linked into a shot sees its armature renamed the same
way (``Armature`` there, ``Armature [char.blend]`` here), so signatures of what the data
was built from name other data blocks relative to the object (`relative_name`).
"""
from __future__ import annotations


class AmbiguousName(LookupError):
    """A bare name that several objects share (the message lists them)."""


def name(ob) -> str:
    """The object's identity in results and reports: its full name."""
    return ob.name_full


def is_local(idb) -> bool:
    """Whether `idb`'s own properties are saved with this file: not linked (saved in its
    library) and not a library override (its add-on properties, which are not
    overridable, come back from the library when the file is reopened)."""
    return idb.library is None and idb.override_library is None


def source_library(idb):
    """The library `idb` comes from: its own for linked data, its reference's for a library
    override, None for local data."""
    if idb.library is not None:
        return idb.library
    override = idb.override_library
    if override is not None and override.reference is not None:
        return source_library(override.reference)
    return None


def relative_name(idb, owner) -> str:
    """`idb`'s name as seen from `owner`: the bare name when both come from the same file
    (as they did where the asset was built), else the full name."""
    same = _same_library(source_library(idb), source_library(owner))
    return idb.name if same else idb.name_full


def _same_library(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a == b


def find(objects, wanted: str):
    """The object of `objects` called `wanted`: its full name, or a bare name that only one
    of them has. None when there is none; `AmbiguousName` when several share the bare name
    (one line listing their full names)."""
    objects = list(objects)
    exact = [ob for ob in objects if ob.name_full == wanted]
    if exact:
        return exact[0]
    bare = [ob for ob in objects if ob.name == wanted]
    if len(bare) > 1:
        names = ", ".join(f"'{ob.name_full}'" for ob in sorted(bare, key=lambda o: o.name_full))
        raise AmbiguousName(f"the name '{wanted}' is ambiguous: {len(bare)} objects have it "
                            f"({names}); give the full name")
    return bare[0] if bare else None


def linked_mesh_reason(ob) -> str:
    """Why the faces of `ob`'s mesh cannot be selected or baked ('' when they can): linked
    mesh data is not saved with this file, and a library override of a mesh keeps neither
    attributes nor selection when the file is reopened."""
    me = ob.data
    lib = source_library(me)
    if lib is None:
        return ""
    return (f"the mesh data of '{ob.name_full}' is linked from {lib.name}: make it local to "
            "select or bake its faces (a library override of it keeps neither)")
