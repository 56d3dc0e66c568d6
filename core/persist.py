"""Prepared collision objects to bytes and back (no pickle), so that a build survives
saving and reloading the .blend without rebuilding.

The bytes are a `core.blob` container (compressed, integers narrowed). What is cheap to
derive again is not stored but recomputed by `from_bytes` (measured by
`bench/bench_storage.py`, docs/storage.md §3): the weld ids, and for the sphere-tree
methods each node's vertex set and the refit bounds but their corner rows. Their rest
spheres are stored in float32, grown so that they still contain the float64 ones
(`blob.spheres_float32`, docs/storage.md §2). Other methods' prepared data ("data."
arrays) is stored losslessly as it is.
"""
from __future__ import annotations

import hashlib
import io

import numpy as np

from . import blob, refit, refit_dqs, welds
from . import sphere_tree as st
from .methods import registry
from .rig import Rig
from .scan import CollisionObject

# 4: a `core.blob` container; node vertex sets and bounds (but their corner rows)
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
# Sphere-tree arrays recomputed by `from_bytes` instead of stored (docs/storage.md §3):
# the node vertex sets, and the bounds but their corner rows (most of the build's cost).
TREE = "data.tree."
BOUNDS = "data.bounds."
DERIVED = (TREE + "node_vert_ptr", TREE + "node_verts")
KEPT_BOUNDS = ("corner_ptr", "entry_ptr", "entry_slot", "entry_weight")


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
        arrays[f"data.{k}"] = v
    arrays["method"] = np.array(obj.method)
    arrays["asked"] = np.array(obj.asked)
    arrays["reason"] = np.array(obj.reason)
    arrays["build_seconds"] = np.array(obj.build_seconds)
    return arrays


def compact(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What is stored of `all_arrays`: without the derived sphere-tree arrays, with float32
    rest spheres (kept in float64 when they do not fit float32's range)."""
    kept = {BOUNDS + k for k in KEPT_BOUNDS}
    out = {k: v for k, v in arrays.items()
           if k not in DERIVED and (k in kept or not k.startswith(BOUNDS))}
    out["format"] = np.array(FORMAT)
    has_tree = TREE + "parent" in arrays
    if has_tree and any(k.startswith(BOUNDS) for k in arrays):
        out["derived.bounds"] = np.array("dqs" if BOUNDS + "q_low" in arrays else "lbs")
    if has_tree:
        try:
            out[TREE + "centers"], out[TREE + "radii"] = blob.spheres_float32(
                arrays[TREE + "centers"], arrays[TREE + "radii"])
        except ValueError:
            pass                           # beyond float32: stored exactly
    return out


def node_vertices(parent: np.ndarray, leaf_tri: np.ndarray, level_ptr: np.ndarray,
                  rig: Rig) -> tuple[np.ndarray, np.ndarray]:
    """`SphereTree.node_vert_ptr, node_verts` again from the tree's structure and the rig:
    a leaf's set is its triangle's polygon corners (`sphere_tree.polygon_vertex_sets`), an
    inner node's the union of its children's (its triangles are its leaves'), sorted.

    Args:
        parent, leaf_tri: (N,) int of the tree (breadth-first, levels contiguous);
        level_ptr: (D + 1,) int.
    Returns:
        (N + 1,) int64 CSR pointers and (M,) int64 vertex indices, as `sphere_tree.build`.
    """
    V = np.int64(rig.n_vertices)
    tv_ptr, tv = st.polygon_vertex_sets(rig.triangles, rig.tri_polygon, rig.poly_ptr,
                                        rig.poly_verts)
    level_ptr = np.asarray(level_ptr, dtype=np.int64)
    leaf_tri = np.asarray(leaf_tri, dtype=np.int64)
    parent = np.asarray(parent, dtype=np.int64)
    levels: list[tuple[np.ndarray, np.ndarray]] = [None] * (level_ptr.size - 1)
    below_ptr, below = np.zeros(1, np.int64), np.zeros(0, np.int64)   # level d + 1
    for d in range(level_ptr.size - 2, -1, -1):
        a, b = int(level_ptr[d]), int(level_ptr[d + 1])
        n = b - a
        nodes = np.arange(a, b)
        keys = []
        leaf = leaf_tri[nodes] >= 0
        if leaf.any():
            t = leaf_tri[nodes[leaf]]
            cnt = tv_ptr[t + 1] - tv_ptr[t]
            own = np.repeat(np.nonzero(leaf)[0], cnt)
            start = np.repeat(tv_ptr[t] - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt)
            keys.append(own * V + tv[start + np.arange(cnt.sum())])
        if below.size:
            # Every node of level d + 1 is a child of a node of this level.
            cnt_c = np.diff(below_ptr)
            owner = parent[b + np.repeat(np.arange(cnt_c.size), cnt_c)] - a
            keys.append(owner * V + below)
        key = np.unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(key // V, minlength=n), out=ptr[1:])
        levels[d] = (ptr, key % V)
        below_ptr, below = levels[d]
    sizes = np.concatenate([np.diff(p) for p, _ in levels])
    ptr = np.zeros(sizes.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    return ptr, np.concatenate([v for _, v in levels])


def _expand(d: dict[str, np.ndarray], rig: Rig) -> None:
    """Recompute in place what `compact` left out (format 4)."""
    if TREE + "parent" not in d:
        return
    for k in ("centers", "radii"):
        d[TREE + k] = d[TREE + k].astype(np.float64)
    if TREE + "node_verts" not in d:
        d[TREE + "node_vert_ptr"], d[TREE + "node_verts"] = node_vertices(
            d[TREE + "parent"], d[TREE + "leaf_tri"], d[TREE + "level_ptr"], rig)
    kind = str(d.pop("derived.bounds", ""))
    if kind:
        tree = st.SphereTree(**{k[len(TREE):]: v for k, v in d.items() if k.startswith(TREE)})
        fn = refit_dqs.dqs_bounds if kind == "dqs" else refit.lbs_bounds
        corners = tuple(d.pop(BOUNDS + k) for k in KEPT_BOUNDS)
        d.update({BOUNDS + k: v for k, v in fn(tree, rig, corners=corners).arrays().items()})


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
    if int(d["format"]) >= 4:
        _expand(d, rig)
    prepared = method.load({k[5:]: v for k, v in d.items() if k.startswith("data.")})
    return CollisionObject(rig.name, rig, method.id, prepared, str(d["reason"]),
                           welds.vertex_weld_ids(rig), float(d["build_seconds"]),
                           asked=str(d["asked"]))
