"""Prepared collision objects to bytes and back (npz, no pickle), so that a build survives
saving and reloading the .blend without rebuilding."""
from __future__ import annotations

import hashlib
import io

import numpy as np

from .refit import LbsBounds
from .refit_dqs import DqsBounds
from .rig import Rig
from .scan import CollisionObject
from .sphere_tree import SphereTree

# 2: polygon loops (Blender re-splits quads per frame), the armature's name and rest
# mesh-to-armature matrix (seams), weld ids by position and weights, float32 magnitudes in
# the bounds.
FORMAT = 2
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
    """Serialize a prepared object (rig, tree, bounds, adjacency keys) to npz bytes."""
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
    for k, v in obj.tree.arrays().items():
        arrays[f"tree.{k}"] = v
    if obj.bounds is not None:
        for k, v in obj.bounds.arrays().items():
            arrays[f"bounds.{k}"] = v
    arrays["vertex_keys"] = obj.vertex_keys
    arrays["refit_method"] = np.array(obj.refit_method)
    arrays["refit_reason"] = np.array(obj.refit_reason)
    arrays["build_seconds"] = np.array(obj.build_seconds)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def from_bytes(data: bytes) -> CollisionObject:
    """Inverse of `to_bytes`. Raises ValueError for data of another format."""
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
    tree = SphereTree(**{k[5:]: v for k, v in d.items() if k.startswith("tree.")})
    b = {k[7:]: v for k, v in d.items() if k.startswith("bounds.")}
    bounds = (DqsBounds(**b) if "q_low" in b else LbsBounds(**b)) if b else None
    return CollisionObject(rig.name, rig, tree, bounds, str(d["refit_method"]),
                           str(d["refit_reason"]), d["vertex_keys"].astype(np.int64),
                           float(d["build_seconds"]))
