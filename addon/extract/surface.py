"""Which surface a mesh is collided on (`rig_from_object`) and the per-frame check that it
still is: the mesh's own data, unless modifiers change the topology around the Armature
modifier (a Subdivision Surface after it, a Mirror before it, Solidify, Geometry Nodes,
...): then the topology Blender draws, read from the evaluated mesh with the armatures at
Rest Position (`surface_rig`), and refitted from the evaluated positions on every frame.
Whether they change it is decided by comparing the evaluated topology with the mesh's own,
so a stack whose modifiers only deform keeps the mesh's own topology.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ...core import welds
from ...core.rig import Rig
from .. import evaluation
from .mesh import RigError, read_loop_triangles, read_polygons, read_topology_arrays, same_topology
from .rig import bone_arrays, no_bones, read_weights, source_rig
from .stack import armatures_of, modifier_report, plain_stack, stack_labels


def rig_from_object(ob, depsgraph=None, moved: str = "") -> Rig:
    """The `Rig` a mesh object is collided with: its own data (`source_rig`), or, when its
    modifiers change the topology around the Armature modifier, the surface Blender draws
    (`surface_rig`). `depsgraph`: an evaluated depsgraph (default: the context's), needed
    only for a stack with modifiers besides one Armature modifier. `moved`: as for
    `source_rig`.

    Raises `RigError` as `source_rig` does, and when the evaluated topology differs between
    the rest pose and the current pose (it would differ between frames).
    """
    rig = source_rig(ob, moved)
    if plain_stack(ob):
        return rig
    if depsgraph is None:
        depsgraph = evaluation.depsgraph()
    if same_topology(ob.evaluated_get(depsgraph).data, rig):
        return rig
    return surface_rig(ob, rig, depsgraph)


def surface_rig(ob, source: Rig, depsgraph) -> Rig:
    """The rig of the surface Blender draws for `ob` (`Rig.surface`): the evaluated mesh's
    topology, its rest positions (mesh-local, the armatures at Rest Position: what decides
    welds, `core.welds`, and the shape of the tree) and its weights (modifiers such as
    Mirror and Subdivision Surface carry the vertex groups over). Bones, armature and the
    mesh-to-armature matrix are the source's; `source` also gives `unsupported` (the
    modifiers that keep the bone matrices from determining the surface).

    Raises `RigError` when the topology at Rest Position is not the one of the current
    pose (a stack whose topology follows the pose)."""
    now = ob.evaluated_get(depsgraph).data
    now_counts = (len(now.vertices), len(now.polygons), len(now.loops))
    now_start, now_verts = read_topology_arrays(now)
    with rest_position(armatures_of(ob)), _faces_tagged(ob.data) as tag:
        dg = evaluation.depsgraph()
        me = ob.evaluated_get(dg).data
        start, verts = read_topology_arrays(me)
        if (len(me.vertices), len(me.polygons), len(me.loops)) != now_counts \
                or not np.array_equal(start, now_start) or not np.array_equal(verts, now_verts):
            raise RigError(
                f"'{ob.name}': its modifiers ({', '.join(stack_labels(ob))}) give another "
                "topology in the rest pose than in the current pose: a surface whose "
                "topology follows the pose cannot be checked (one surface per object)")
        V = len(me.vertices)
        buf = np.empty(V * 3, dtype=np.float32)
        attr = me.attributes.get("position")
        if attr is not None:
            attr.data.foreach_get("vector", buf)
        else:
            me.vertices.foreach_get("co", buf)
        rest = buf.reshape(V, 3).astype(np.float64)
        tris, poly = read_loop_triangles(me)
        poly_ptr, poly_verts = read_polygons(me)
        origin = np.full(len(me.polygons), -1, dtype=np.int32)
        attr = me.attributes.get(tag) if tag else None
        if attr is not None and attr.domain == "FACE" and attr.data_type == "INT":
            attr.data.foreach_get("value", origin)
            origin[(origin < 0) | (origin >= len(ob.data.polygons))] = -1
        if source.is_rigid:
            weights = no_bones(V)
        else:
            arm_ob = modifier_report(ob).armature
            names, index, _, _, deform = bone_arrays(arm_ob)
            ptr, bone, value, _ = read_weights(ob, index, deform, me)
            weights = dict(weight_ptr=ptr, weight_bone=bone, weight_value=value,
                           bone_names=source.bone_names, bone_parents=source.bone_parents,
                           bone_rest=source.bone_rest, bone_deform=source.bone_deform)
    from ...core.storage import persist

    labels = stack_labels(ob)
    surface = f"evaluated surface: {V:,} vertices after {', '.join(labels) or 'its modifiers'}"
    rig = Rig(name=source.name, rest_positions=rest, triangles=tris, tri_polygon=poly,
              poly_ptr=poly_ptr, poly_verts=poly_verts,
              preserve_volume=source.preserve_volume,
              unsupported=[surface] + source.unsupported, notes=list(source.notes),
              armature=source.armature, mesh_to_armature=source.mesh_to_armature,
              surface=surface, source_signature=persist.rig_signature(source),
              rigid=source.rigid, face_origin=origin, **weights)
    # The two sides of a seam come out of the modifiers a few ulps apart: weld them.
    rig.rest_positions = welds.snap_seams(rig.rest_positions, *rig.padded_influences())
    return rig


@contextmanager
def rest_position(armatures) -> Iterator[None]:
    """The armatures switched to Rest Position (and the view layer evaluated) inside the
    block, switched back after. The depsgraph updates this causes are the project's own,
    not pose edits (`handlers.quiet`)."""
    from ..state import quiet

    arms = list(dict.fromkeys(a for a in armatures if a is not None))
    saved = {a: a.data.pose_position for a in arms}
    with quiet():
        try:
            for a in arms:
                a.data.pose_position = "REST"
            evaluation.update()
            yield
        finally:
            for a, pos in saved.items():
                a.data.pose_position = pos
            evaluation.update()


#: The face attribute that carries each polygon's index through the modifiers for a moment
#: at build (`surface_rig`), so that the surface's faces map back to the mesh's own.
FACE_TAG = "skin_collide_face_origin"


@contextmanager
def _faces_tagged(me) -> Iterator[str]:
    """Each polygon of mesh `me` carries its index in the integer face attribute
    `FACE_TAG` inside the block (modifiers copy or interpolate it onto the faces they make;
    Subdivision Surface, Mirror, Solidify, Triangulate and Geometry Nodes do), removed
    after. Yields the attribute's name, or "" when the mesh cannot be written (linked from
    a library) or already has an attribute of that name (then nothing is mapped)."""
    attr = None
    if me.library is None and me.attributes.get(FACE_TAG) is None:
        try:
            attr = me.attributes.new(FACE_TAG, "INT", "FACE")
        except (RuntimeError, TypeError, AttributeError):      # a mesh that cannot be written
            attr = None
    if attr is None:
        yield ""
        return
    try:
        attr.data.foreach_set("value", np.arange(len(me.polygons), dtype=np.int32))
        me.update()
        evaluation.update()
        yield FACE_TAG
    finally:
        attr = me.attributes.get(FACE_TAG)
        if attr is not None:
            me.attributes.remove(attr)
        me.update()


def own_faces(rig: Rig, polygons) -> set[int]:
    """Polygon indices of the surface `rig` describes -> those of the mesh's own data (the
    same for a rig on its own mesh; through `Rig.face_origin` for an evaluated surface,
    dropping faces of unknown origin): what Select Colliding Faces and Bake Highlight
    write on the mesh people edit."""
    polys = np.fromiter(polygons, dtype=np.int64)
    if rig.face_origin is None or not polys.size:
        return set(polys.tolist())
    origin = rig.face_origin[polys]
    return set(origin[origin >= 0].tolist())


def describe_surface(rig: Rig) -> str:
    """Which surface a rig is collided on, for people: `Rig.surface`, or "own mesh: 3,273
    vertices"."""
    return rig.surface or f"own mesh: {rig.n_vertices:,} vertices"


def check_topology(ob, me, rig: Rig, frame: int) -> None:
    """Raise `RigError` when `ob`'s evaluated mesh `me` at `frame` is not the topology
    `rig` was built on. A plain Armature stack is checked by its vertex count (the Armature
    modifier never changes the topology); any other stack index for index (loop starts and
    loop vertices, microseconds: `read_topology_arrays`), since its modifiers could change
    the faces while keeping the counts."""
    counts = (len(me.vertices), len(me.polygons), len(me.loops))
    built = (rig.n_vertices, rig.n_polygons, int(rig.poly_verts.size))
    plain = plain_stack(ob) and not rig.surface
    if counts[0] == built[0] and (plain or same_topology(me, rig)):
        return
    if plain:
        raise RigError(f"'{ob.name}' evaluates to {counts[0]:,} vertices at frame {frame} "
                       f"but was built with {built[0]:,}: its topology changed; rebuild")
    if counts[:2] != built[:2]:
        what = (f"give {counts[0]:,} vertices and {counts[1]:,} faces where its collision "
                f"data has {built[0]:,} and {built[1]:,}")
    else:
        what = (f"join its {counts[0]:,} vertices into other faces than its collision "
                "data has")
    stack = ", ".join(stack_labels(ob)) or "none"
    if rig.surface:
        raise RigError(
            f"'{ob.name}' at frame {frame}: its modifiers ({stack}) {what} (built on "
            "another frame): a topology that changes between frames cannot be checked; "
            "keep it fixed (no animated levels or ratios), or rebuild if the modifiers "
            "were edited")
    raise RigError(
        f"'{ob.name}' at frame {frame}: its modifiers ({stack}) {what}: rebuild (the "
        "surface Blender draws is then checked); a topology that changes between frames "
        "cannot be checked")


def check_rig_matches(ob, rig: Rig) -> None:
    """The armature the modifier uses now must have the bones the data was built with
    (RigError otherwise: the data would silently describe another skeleton). A rigid
    prop must still be one: no Armature modifier."""
    arm = modifier_report(ob).armature
    if rig.is_rigid:
        if arm is not None:
            raise RigError(f"'{ob.name}' was built as a rigid prop but has an Armature "
                                   "modifier now: rebuild")
        return
    if arm is None:
        raise RigError(f"'{ob.name_full}' has no Armature modifier with an armature "
                               "object any more: restore it, or rebuild")
    if arm.type != "ARMATURE":
        raise RigError(f"the Armature modifier of '{ob.name_full}' points to "
                               f"'{arm.name_full}', which is not an armature")
    bones = arm.data.bones
    names = rig.bone_names
    # `keys()` lists the names in C, in the collection's order (a Python loop over the
    # bones cost 0.13 ms a frame on MakeHuman's 163).
    if len(bones) != len(names) or bones.keys() != list(names):
        raise RigError(f"the armature of '{ob.name_full}' ('{arm.name_full}', {len(bones)} "
                               f"bones) is not the one it was built with ({len(names)} "
                               "bones): rebuild")
