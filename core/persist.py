"""Prepared collision objects to bytes and back (npz, no pickle), so that a build survives
saving and reloading the .blend without rebuilding."""
from __future__ import annotations

import hashlib
import io

import numpy as np

from . import welds
from .methods import registry
from .rig import Rig
from .scan import CollisionObject

# 3: a registered method's id and its prepared data ("data." arrays); weld ids recomputed.
# 2: polygon loops (Blender re-splits quads per frame), the armature's name and rest
# mesh-to-armature matrix (seams), weld ids by position and weights, float32 magnitudes in
# the bounds.
FORMAT = 3
_RIG_ARRAYS = ("rest_positions", "triangles", "tri_polygon", "weight_ptr", "weight_bone",
               "weight_value", "bone_parents", "bone_rest", "bone_deform", "poly_ptr",
               "poly_verts", "mesh_to_armature")


def rig_signature(rig: Rig) -> str:
    """A digest of everything the collision data depends on: topology, rest positions,
    weights and bones. A different signature means the data is stale."""
    h = hashlib.sha1()
    for name in _RIG_ARRAYS:
        h.update(np.ascontiguousarray(getattr(rig, name)).tobytes())
    h.update("\0".join(rig.bone_names).encode())
    h.update(bytes([rig.preserve_volume]))
    h.update(b"\0armature\0" + rig.armature.encode())
    return h.hexdigest()


def to_bytes(obj: CollisionObject) -> bytes:
    """Serialize a prepared object (rig, method id and its prepared data) to npz bytes.
    Weld ids are recomputed at load (cheap, and derived from the rig alone)."""
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
    for k, v in obj.data.arrays().items():
        arrays[f"data.{k}"] = v
    arrays["method"] = np.array(obj.method)
    arrays["asked"] = np.array(obj.asked)
    arrays["reason"] = np.array(obj.reason)
    arrays["build_seconds"] = np.array(obj.build_seconds)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def from_bytes(data: bytes) -> CollisionObject:
    """Inverse of `to_bytes`. Raises ValueError for data of another format or of a method
    this version does not know."""
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        d = {k: z[k] for k in z.files}
    if int(d.get("format", -1)) != FORMAT:
        raise ValueError("collision data of an unknown format; rebuild it")

    def strings(key):
        return [str(s) for s in d[key].tolist()]

    rig = Rig(name=str(d["rig.name"]), bone_names=strings("rig.bone_names"),
              preserve_volume=bool(d["rig.preserve_volume"]),
              unsupported=strings("rig.unsupported"), notes=strings("rig.notes"),
              armature=str(d["rig.armature"]),
              **{n: d[f"rig.{n}"] for n in _RIG_ARRAYS})
    try:
        method = registry.get(str(d["method"]))
    except KeyError as exc:
        raise ValueError(f"collision data built by {exc.args[0]}; rebuild it") from None
    prepared = method.load({k[5:]: v for k, v in d.items() if k.startswith("data.")})
    return CollisionObject(rig.name, rig, method.id, prepared, str(d["reason"]),
                           welds.vertex_weld_ids(rig), float(d["build_seconds"]),
                           asked=str(d["asked"]))
