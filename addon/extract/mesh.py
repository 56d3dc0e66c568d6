"""A mesh's arrays read from Blender with ``foreach_get``: rest positions, polygon loops
and loop triangles (the triangles Blender draws, on an own or an evaluated mesh), and the
fast topology read the per-frame check compares; and `RigError`, what every reader of a
character raises when a mesh cannot be used.
"""
from __future__ import annotations

import numpy as np

from ...core.rig import Rig


class RigError(ValueError):
    """A mesh cannot be used as a skinned character; the message says why and what to do."""


def matrix_to_np(m) -> np.ndarray:
    return np.array([list(row) for row in m], dtype=np.float64)


def read_polygons(me) -> tuple[np.ndarray, np.ndarray]:
    """Polygon loops: offsets (P + 1,) int64 and loop vertices (L,) int32, Blender's order."""
    P = len(me.polygons)
    start = np.empty(P, dtype=np.int32)
    me.polygons.foreach_get("loop_start", start)
    L = len(me.loops)
    verts = np.empty(L, dtype=np.int32)
    me.loops.foreach_get("vertex_index", verts)
    ptr = np.append(start.astype(np.int64), L)
    if P and np.any(np.diff(ptr) < 0):
        raise RigError(f"mesh '{me.name}': polygon loops are not stored in polygon order")
    return ptr, verts


def read_topology(me):
    """Rest positions (V, 3) float64, loop triangles (T, 3) int32, their polygons (T,)
    int32, and the polygon loops: poly_ptr (P + 1,) int64, poly_verts (L,) int32."""
    V = len(me.vertices)
    pos = np.empty(V * 3, dtype=np.float32)
    attr = me.attributes.get("position")
    if attr is not None:
        attr.data.foreach_get("vector", pos)
    elif V:
        me.vertices.foreach_get("co", pos)
    tris, poly = read_loop_triangles(me)
    poly_ptr, poly_verts = read_polygons(me)
    return pos.reshape(V, 3).astype(np.float64), tris, poly, poly_ptr, poly_verts


def read_loop_triangles(me) -> tuple[np.ndarray, np.ndarray]:
    """The mesh's loop triangles (T, 3) int32 and their polygons (T,) int32. On an
    evaluated mesh these are the triangles Blender draws at that frame."""
    me.calc_loop_triangles()
    T = len(me.loop_triangles)
    tris = np.empty(T * 3, dtype=np.int32)
    poly = np.empty(T, dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    me.loop_triangles.foreach_get("polygon_index", poly)
    return tris.reshape(T, 3), poly


def read_topology_arrays(me) -> tuple[np.ndarray, np.ndarray]:
    """A mesh's polygon loop starts (P,) int32 and loop vertices (L,) int32, the fast way
    (the ``.corner_vert`` attribute takes microseconds where ``loops.foreach_get`` takes a
    millisecond on 10,000 loops): what the per-frame topology check compares."""
    P = len(me.polygons)
    start = np.empty(P, dtype=np.int32)
    me.polygons.foreach_get("loop_start", start)
    L = len(me.loops)
    verts = np.empty(L, dtype=np.int32)
    attr = me.attributes.get(".corner_vert")
    if attr is not None and attr.domain == "CORNER" and attr.data_type == "INT":
        attr.data.foreach_get("value", verts)
    else:
        me.loops.foreach_get("vertex_index", verts)
    return start, verts


def same_topology(me, rig: Rig) -> bool:
    """Whether mesh `me` has `rig`'s vertices, polygons and loops, index for index."""
    if len(me.vertices) != rig.n_vertices or len(me.polygons) != rig.n_polygons \
            or len(me.loops) != rig.poly_verts.size:
        return False
    start, verts = read_topology_arrays(me)
    return bool(np.array_equal(start, rig.poly_ptr[:-1]) and np.array_equal(verts, rig.poly_verts))
