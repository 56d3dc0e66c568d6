"""Prepared collision objects to bytes and back (no pickle), so that a build survives
saving and reloading the .blend without rebuilding.

The bytes are a `core.storage.blob` container (compressed, integers narrowed). What is cheap to
derive again is not stored but recomputed by `from_bytes` (measured by
`python -m bench storage`, docs/storage.md §3): the weld ids, and for the sphere-tree
methods each node's vertex set and the refit bounds but their corner rows. Their rest
spheres are stored in float32, grown so that they still contain the float64 ones
(`core.bounds.float32_rounding.spheres_float32`, docs/storage.md §2). Other methods' prepared data ("data."
arrays) is stored losslessly as it is.
"""
from __future__ import annotations

import copy
import hashlib
import io

import numpy as np

from .. import welds
from ..methods import registry
from ..rig import Rig
from ..scan import CollisionObject, renamed
from . import blob

# 4: a `core.storage.blob` container; node vertex sets and bounds (but their corner rows)
# recomputed at load; float32 rest spheres. Format 3 (npz) is still read.
# 3: a registered method's id and its prepared data ("data." arrays); weld ids recomputed.
# 2: polygon loops (Blender re-splits quads per frame), the armature's name and rest
# mesh-to-armature matrix (seams), weld ids by position and weights, float32 magnitudes in
# the bounds.
FORMAT = 4
_READABLE = (3, 4)
_RIG_ARRAYS = ("rest_positions", "triangles", "tri_polygon", "weight_ptr", "weight_bone",
               "weight_value", "bone_parents", "bone_rest", "bone_deform", "poly_ptr",
               "poly_verts", "mesh_to_armature")
#: The prefix of the method's own arrays (`Prepared.arrays()`, as `Method.compact` keeps
#: them); everything else is the rig and what the scan needs to name the object.
DATA = "data."


def rig_signature(rig: Rig) -> str:
    """A digest of everything the collision data depends on: topology, rest positions,
    weights and bones. A different signature means the data is stale."""
    h = hashlib.sha1()
    for name in _RIG_ARRAYS:
        h.update(np.ascontiguousarray(getattr(rig, name)).tobytes())
    h.update("\0".join(rig.bone_names).encode())
    h.update(bytes([rig.preserve_volume]))
    h.update(b"\0armature\0" + rig.armature.encode())
    # Only when set, so that the signatures of rigs on their own mesh stay what earlier
    # versions stored (their data is not stale). A rig on an evaluated surface includes
    # its source's signature: two stacks over one mesh (Subdivision levels 1 and 2) are
    # different data, and a disk cache of one is never taken for the other.
    for key in ("surface", "source_signature", "rigid"):
        value = getattr(rig, key)
        if value:
            h.update(b"\0" + key.encode() + b"\0" + value.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def source_signature(rig: Rig) -> str:
    """The signature of the rig of the mesh's own data (what `addon.extract.source_rig`
    reads without evaluating anything): `Rig.source_signature` for a rig on an evaluated
    surface, else the rig's own signature. The staleness check compares it."""
    return rig.source_signature or rig_signature(rig)


def to_bytes(obj: CollisionObject, codec: str = "lzma") -> bytes:
    """Serialize a prepared object (rig, method id and its prepared data) to bytes.
    Weld ids and the cheap parts of sphere trees are recomputed at load."""
    return blob.encode(compact(all_arrays(obj)), codec=codec)


def all_arrays(obj: CollisionObject) -> dict[str, np.ndarray]:
    """Every array of a prepared object by its storage name (before `compact`)."""
    arrays: dict[str, np.ndarray] = {"format": np.array(FORMAT)}
    rig = obj.rig
    for name in _RIG_ARRAYS:
        arrays[f"rig.{name}"] = getattr(rig, name)
    arrays["rig.name"] = np.array(rig.name)
    arrays["rig.bone_names"] = np.array(rig.bone_names, dtype=str)
    arrays["rig.preserve_volume"] = np.array(rig.preserve_volume)
    arrays["rig.unsupported"] = np.array(rig.unsupported, dtype=str)
    arrays["rig.notes"] = np.array(rig.notes, dtype=str)
    arrays["rig.armature"] = np.array(rig.armature)
    for key in ("surface", "source_signature", "rigid"):
        if getattr(rig, key):                   # absent: "" (and data of earlier versions)
            arrays[f"rig.{key}"] = np.array(getattr(rig, key))
    if rig.face_origin is not None:
        arrays["rig.face_origin"] = rig.face_origin
    for k, v in obj.data.arrays().items():
        arrays[DATA + k] = v
    arrays["method"] = np.array(obj.method)
    arrays["asked"] = np.array(obj.asked)
    arrays["reason"] = np.array(obj.reason)
    arrays["build_seconds"] = np.array(obj.build_seconds)
    return arrays


def compact(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What is stored of `all_arrays`: the rig and the method's choice of its data
    (`Method.compact`: e.g. sphere trees leave out what is cheap to derive again)."""
    method = registry.get(str(arrays["method"]))
    own = method.compact({k[len(DATA):]: v for k, v in arrays.items() if k.startswith(DATA)})
    out = {k: v for k, v in arrays.items() if not k.startswith(DATA)}
    out.update({DATA + k: v for k, v in own.items()})
    out["format"] = np.array(FORMAT)
    return out


def from_bytes(data: bytes) -> CollisionObject:
    """Inverse of `to_bytes` (also reads format 3, npz). Raises ValueError for data of
    another format, damaged data or data of a method this version does not know."""
    data = bytes(data)
    if blob.is_blob(data):
        d = blob.decode(data)
    else:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as z:
                d = {k: z[k] for k in z.files}
        except Exception as exc:           # noqa: BLE001 - not npz either
            raise ValueError(f"unreadable collision data ({exc}); rebuild it") from None
    if int(d.get("format", -1)) not in _READABLE:
        raise ValueError("collision data of an unknown format; rebuild it")
    return from_arrays(d)


#: What a copy of a character may have of its own among `all_arrays` (its name, its
#: armature's, where the armature holds the mesh, notes, what moves a prop, the surface's
#: description): everything else is fixed by `core.scan.build_key`, which copies share,
#: so copies built as one (`core.scan.prepare_shared`) store the rest once (`own_bytes`,
#: `with_own`; docs/storage.md, "Copies of one character").
OWN_KEYS = ("rig.name", "rig.armature", "rig.mesh_to_armature", "rig.notes", "rig.surface",
            "rig.source_signature", "rig.rigid", "reason", "build_seconds", "asked")


def own_bytes(obj: CollisionObject) -> bytes:
    """The arrays of `obj` (as stored) that a copy of the same build may differ in
    (`OWN_KEYS`), as a small `core.storage.blob` container: a few hundred bytes."""
    arrays = all_arrays(obj)
    own = {k: arrays[k] for k in OWN_KEYS if k in arrays}
    own["format"] = np.array(FORMAT)
    return blob.encode(own, codec="zlib")


def with_own(base: CollisionObject, own: bytes) -> CollisionObject:
    """The object of a copy: the data, weld ids and self tree of `base` (the object decoded
    from the bytes the copies share, never changed here) and its own rig fields from
    `own` (`own_bytes` of the copy). Raises ValueError for damaged bytes."""
    try:
        d = blob.decode(bytes(own))
    except Exception as exc:              # noqa: BLE001 - damaged bytes
        raise ValueError(f"unreadable collision data ({exc}); rebuild it") from None
    if int(d.get("format", -1)) not in _READABLE:
        raise ValueError("collision data of an unknown format; rebuild it")
    rig = copy.copy(base.rig)
    rig.name = str(d["rig.name"])
    rig.armature = str(d["rig.armature"])
    rig.mesh_to_armature = np.asarray(d["rig.mesh_to_armature"], np.float64)
    rig.notes = [str(s) for s in d["rig.notes"].tolist()]
    for key in ("surface", "source_signature", "rigid"):
        setattr(rig, key, str(d[f"rig.{key}"]) if f"rig.{key}" in d else "")
    out = renamed(base, rig)
    out.reason, out.asked = str(d["reason"]), str(d["asked"])
    out.build_seconds = float(d["build_seconds"])
    return out


def stored_form(obj: CollisionObject) -> CollisionObject:
    """What ``from_bytes(to_bytes(obj))`` returns, without encoding and decoding: the codec
    is lossless (`core.storage.blob`), so the stored form is `compact` then `from_arrays` (the
    method's choice of what to keep, e.g. float32 spheres, and what it derives again). The
    arrays may be shared with `obj`'s."""
    return from_arrays(compact(all_arrays(obj)))


def from_arrays(d: dict[str, np.ndarray]) -> CollisionObject:
    """The object of decoded storage arrays `d` (`compact`'s keys, a readable format)."""

    def strings(key):
        return [str(s) for s in d[key].tolist()]

    rig = Rig(name=str(d["rig.name"]), bone_names=strings("rig.bone_names"),
              preserve_volume=bool(d["rig.preserve_volume"]),
              unsupported=strings("rig.unsupported"), notes=strings("rig.notes"),
              armature=str(d["rig.armature"]),
              **{k: str(d[f"rig.{k}"]) for k in ("surface", "source_signature", "rigid")
                 if f"rig.{k}" in d},
              face_origin=d.get("rig.face_origin"),
              **{n: d[f"rig.{n}"] for n in _RIG_ARRAYS})
    try:
        method = registry.get(str(d["method"]))
    except KeyError as exc:
        raise ValueError(f"collision data built by {exc.args[0]}; rebuild it") from None
    own = {k[len(DATA):]: v for k, v in d.items() if k.startswith(DATA)}
    prepared = method.load(method.expand(own, rig))
    return CollisionObject(rig.name, rig, method.id, prepared, str(d["reason"]),
                           welds.vertex_weld_ids(rig), float(d["build_seconds"]),
                           asked=str(d["asked"]))
