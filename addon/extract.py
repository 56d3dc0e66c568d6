"""bpy objects -> `core.rig.Rig` / `core.rig.Pose`, and fast reads of evaluated positions.

Everything Blender-specific about reading a character lives here, so the core stays pure
numpy. Building a Rig loops over vertices once (vertex groups have no bulk accessor); the
per-frame functions use ``foreach_get`` only.

Which meshes take part is `addon.motion`'s (what Blender draws and moves); here, what
their settings say: a mesh is *skinned* by an enabled Armature modifier that names an
armature, or by armature parenting (`armature_parent`: Blender's virtual Armature
modifier, first in the stack). A mesh without an armature is a rig without bones (every
vertex on the virtual static joint) moved by its world matrix: a *rigid prop* when
something moves it as a whole (`what_moves`: a parent of any type, an enabled object
constraint, animation data on the object), refitted from Blender's positions when
something deforms it too (`deformers`: modifiers, shape keys, a deforming parent).
`character_meshes` is the settings-only choice (no frame is evaluated).

Which surface (`rig_from_object`): the mesh's own data, unless modifiers change the
topology around the Armature modifier (a Subdivision Surface after it, a Mirror before it,
Solidify, Geometry Nodes, ...): then the topology Blender draws, read from the evaluated
mesh with the armatures at Rest Position, and refitted from the evaluated positions on
every frame. Whether they change it is decided by comparing the evaluated topology with the
mesh's own, so a stack whose modifiers only deform keeps the mesh's own topology.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..core import welds
from ..core.geometry import triangulation
from ..core.rig import Pose, Rig


class RigError(ValueError):
    """A mesh cannot be used as a skinned character; the message says why and what to do."""


@dataclass
class ModifierReport:
    """How a mesh's modifier stack relates to its Armature modifier."""

    armature_modifier: object | None
    armature: object | None
    before: list[str]
    after: list[str]
    other_armatures: list[str]
    #: The armature deforms the mesh through armature parenting (``parent_type`` 'ARMATURE',
    #: "With Automatic Weights" and the like): Blender then puts a virtual Armature
    #: modifier first in the stack (vertex groups; envelopes for vertices without a
    #: deform weight), so every real modifier comes after it.
    virtual: bool = False


def armature_parent(ob):
    """The armature that deforms `ob` through armature parenting, or None."""
    p = ob.parent
    if p is not None and ob.parent_type == "ARMATURE" and p.type == "ARMATURE":
        return p
    return None


def _matrix_to_np(m) -> np.ndarray:
    return np.array([list(row) for row in m], dtype=np.float64)


def modifier_report(ob) -> ModifierReport:
    """Find the (first enabled) Armature modifier and the modifiers around it.

    Only modifiers shown in the viewport count, because that is what the evaluated mesh
    (and so the user) sees.
    """
    arm_mod = None
    before: list[str] = []
    after: list[str] = []
    others: list[str] = []
    for mod in ob.modifiers:
        if not mod.show_viewport:
            continue
        if mod.type == "ARMATURE" and mod.object is not None and arm_mod is None:
            arm_mod = mod
            continue
        if mod.type == "ARMATURE":
            others.append(mod.name)
        label = f"{mod.name} ({mod.type})"
        (before if arm_mod is None else after).append(label)
    parent = armature_parent(ob)
    if parent is not None and arm_mod is None:
        return ModifierReport(None, parent, [], before, others, virtual=True)
    if parent is not None:
        others.append(f"armature parent '{parent.name}' (a second, virtual Armature modifier)")
    return ModifierReport(arm_mod, arm_mod.object if arm_mod else None, before, after, others)


def skinned_meshes(scene) -> list:
    """Mesh objects of `scene` that an armature deforms: an enabled Armature modifier with
    an armature, or armature parenting (`armature_parent`)."""
    return [ob for ob in scene.objects
            if ob.type == "MESH" and modifier_report(ob).armature is not None]


def what_moves(ob) -> str:
    """What moves mesh `ob` as a whole, for a mesh without an Armature modifier (a rigid
    prop), in words; "" when nothing does. In this order: its parent (any parent type),
    an enabled object constraint, animation data on the object (an action, drivers or NLA
    tracks). The module docstring states the rule."""
    parent = ob.parent
    if parent is not None:
        if ob.parent_type == "BONE" and ob.parent_bone:
            return f"bone '{ob.parent_bone}' of '{parent.name}'"
        return f"parent '{parent.name}'"
    for con in ob.constraints:
        if not con.mute and con.influence > 0.0:
            return f"constraint '{con.name}'"
    ad = ob.animation_data
    if ad is not None and (ad.action is not None or len(ad.drivers) or len(ad.nla_tracks)):
        return "its own animation"
    return ""


def is_evaluated(ob, depsgraph=None) -> bool:
    """Whether the view layer's depsgraph evaluates `ob` (default: the context's). Not
    when it is disabled in viewports or its collection is hidden or excluded: Blender then
    hands out its original mesh, the rest shape, at every frame."""
    import bpy

    dg = depsgraph or bpy.context.evaluated_depsgraph_get()
    return bool(ob.evaluated_get(dg).is_evaluated)


def not_evaluated(ob) -> str:
    """Why `ob`'s skin cannot be checked when `is_evaluated` says no."""
    return (f"'{ob.name}' is disabled in viewports, or its collection is hidden or "
            "excluded, so Blender does not pose it")


def not_evaluated_note(ob) -> str:
    return f"{not_evaluated(ob)}: skipped (enable it to check it)"


def skip_note(ob, depsgraph=None) -> str:
    """Why mesh `ob` is not a character (see `character_meshes`)."""
    if not is_evaluated(ob, depsgraph):
        return not_evaluated_note(ob)
    return _still_note(ob)


def _still_note(ob) -> str:
    return (f"'{ob.name}' is skipped: it has no Armature modifier and nothing moves it "
            "(no parent, constraint or animation)")


def character_meshes(objects) -> tuple[list, list[str]]:
    """The characters among `objects` (any objects, in their order): skinned meshes and
    rigid props (`what_moves`) that the view layer evaluates (`is_evaluated`), and one
    note per other mesh, which is skipped (it stands still: e.g. a stray Icosphere in a
    character's collection; or Blender does not pose it)."""
    import bpy

    meshes, notes = [], []
    dg = None
    for ob in objects:
        if ob.type != "MESH":
            continue
        dg = dg or bpy.context.evaluated_depsgraph_get()
        if not is_evaluated(ob, dg):
            notes.append(not_evaluated_note(ob))
        elif modifier_report(ob).armature is not None or what_moves(ob):
            meshes.append(ob)
        else:
            notes.append(_still_note(ob))
    return meshes, notes


def modifier_label(mod) -> str:
    """A modifier's type as Blender's interface names it ("Subdivision Surface")."""
    try:
        return mod.bl_rna.properties["type"].enum_items[mod.type].name
    except (KeyError, AttributeError):
        return mod.type.replace("_", " ").title()


def stack_labels(ob) -> list[str]:
    """The types of the modifiers shown in the viewport, Armature modifiers left out,
    in stack order and each once ("Mirror", "Subdivision Surface")."""
    out: list[str] = []
    for mod in ob.modifiers:
        if mod.show_viewport and mod.type != "ARMATURE":
            label = modifier_label(mod)
            if label not in out:
                out.append(label)
    return out


def plain_stack(ob) -> bool:
    """Whether the modifiers shown in the viewport are at most one Armature modifier with
    an armature: then the evaluated topology is the mesh's own on every frame (the Armature
    modifier only moves vertices), and no per-frame topology check is needed."""
    rep = modifier_report(ob)
    return not (rep.before or rep.after or rep.other_armatures)


def armatures_of(ob) -> list:
    """The armature objects that deform `ob` (its Armature modifiers') or, for a rigid
    prop, that its parent chain reaches: what Rest Position switches."""
    out = [m.object for m in ob.modifiers if m.type == "ARMATURE" and m.object is not None
           and m.object.type == "ARMATURE"]
    p = ob.parent
    while p is not None:
        if p.type == "ARMATURE" and p not in out:
            out.append(p)
        p = p.parent
    return out


@contextmanager
def rest_position(armatures) -> Iterator[None]:
    """The armatures switched to Rest Position (and the view layer evaluated) inside the
    block, switched back after. The depsgraph updates this causes are the project's own,
    not pose edits (`handlers.quiet`)."""
    import bpy

    from .state import quiet

    arms = list(dict.fromkeys(a for a in armatures if a is not None))
    saved = {a: a.data.pose_position for a in arms}
    with quiet():
        try:
            for a in arms:
                a.data.pose_position = "REST"
            bpy.context.view_layer.update()
            yield
        finally:
            for a, pos in saved.items():
                a.data.pose_position = pos
            bpy.context.view_layer.update()


def _bone_arrays(arm_ob):
    bones = arm_ob.data.bones
    names = [b.name for b in bones]
    index = {n: i for i, n in enumerate(names)}
    parents = np.array([index[b.parent.name] if b.parent else -1 for b in bones], dtype=np.int32)
    J = len(bones)
    rest = np.empty(J * 16, dtype=np.float32)
    if J:
        bones.foreach_get("matrix_local", rest)
    # foreach_get flattens matrices column by column.
    rest = rest.reshape(J, 4, 4).transpose(0, 2, 1).astype(np.float64)
    deform = np.array([b.use_deform for b in bones], dtype=bool)
    return names, index, parents, rest, deform


def read_weights(ob, bone_index: dict[str, int], deform: np.ndarray, me=None):
    """Deform-bone weights of every vertex, in Blender's per-vertex group order, of `ob`'s
    own mesh or of `me` (its evaluated mesh, whose weights index the object's groups too).

    Returns weight_ptr (V + 1,) int64, weight_bone (W,) int32, weight_value (W,) float64,
    and the number of vertex groups that name no deform bone (ignored, as Blender does).
    """
    group_to_bone = np.full(max(len(ob.vertex_groups), 1), -1, dtype=np.int64)
    ignored = 0
    for g in ob.vertex_groups:
        j = bone_index.get(g.name, -1)
        if j >= 0 and deform[j]:
            group_to_bone[g.index] = j
        else:
            ignored += 1
    me = ob.data if me is None else me
    V = len(me.vertices)
    counts = np.zeros(V, dtype=np.int64)
    groups: list[int] = []
    values: list[float] = []
    for v in me.vertices:
        n = 0
        for g in v.groups:
            groups.append(g.group)
            values.append(g.weight)
            n += 1
        counts[v.index] = n
    grp = np.asarray(groups, dtype=np.int64)
    val = np.asarray(values, dtype=np.float32).astype(np.float64)
    bone = group_to_bone[grp] if grp.size else grp
    # Blender skips groups without a deform bone and zero weights (they add nothing,
    # not even to the normalization).
    keep = (bone >= 0) & (val != 0.0) if grp.size else np.zeros(0, dtype=bool)
    vert = np.repeat(np.arange(V), counts)
    kept_counts = np.bincount(vert[keep], minlength=V)
    ptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(kept_counts, out=ptr[1:])
    return ptr, bone[keep].astype(np.int32), val[keep], ignored


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


def mesh_to_armature_at_rest(ob, arm_ob) -> np.ndarray:
    """(4, 4) float64 ``A⁻¹ M`` of mesh `ob` and armature `arm_ob`, for deciding seams.

    A mesh parented to the armature object gets ``matrix_parent_inverse @ matrix_basis``,
    which does not depend on where the armature stands (root motion, a character far from
    the origin) and is bit for bit the same for parts with the same transforms; otherwise
    the world matrices are used.
    """
    if ob.parent is arm_ob and ob.parent_type in {"OBJECT", "ARMATURE"}:
        return _matrix_to_np(ob.matrix_parent_inverse) @ _matrix_to_np(ob.matrix_basis)
    return np.linalg.solve(_matrix_to_np(arm_ob.matrix_world), _matrix_to_np(ob.matrix_world))


def _check_mesh(ob) -> None:
    if ob is None or ob.type != "MESH":
        raise RigError(f"{getattr(ob, 'name', ob)!s} is not a mesh object")
    if ob.mode == "EDIT":
        raise RigError(f"'{ob.name}' is in Edit Mode: switch to Object Mode first")
    if len(ob.data.vertices) == 0:
        raise RigError(f"mesh '{ob.name}' has no vertices")


def deformers(ob) -> list[str]:
    """What may deform mesh `ob` besides an armature, in words, from its settings: its
    viewport modifiers, its shape keys, a parent that deforms it (a lattice or a curve
    with parent type Lattice/Armature: a virtual modifier). A deformation that none of
    these names (a cache, a Geometry Nodes tree reading the time) shows in its evaluated
    positions, which `addon.motion` compares between frames."""
    out = [f"{m.name} ({m.type})" for m in ob.modifiers
           if m.show_viewport and m.type != "ARMATURE"]
    keys = ob.data.shape_keys
    if keys is not None and len(keys.key_blocks) > 1:
        out.append(f"{len(keys.key_blocks) - 1} shape keys")
    p = ob.parent
    if p is not None and ob.parent_type in {"ARMATURE", "LATTICE"} and p.type != "ARMATURE":
        out.append(f"its {p.type.lower()} parent '{p.name}' (a virtual modifier)")
    return out


def source_rig(ob, moved: str = "") -> Rig:
    """The `Rig` of `ob`'s own mesh data (what the Armature modifier receives; for a mesh
    without an armature, its mesh moved by its world matrix), read without evaluating
    anything: the rig of a plain Armature stack, and what the staleness check compares
    for any stack.

    `moved`: for a mesh without an armature, what moves it when its settings do not say
    (`addon.motion` saw its evaluated positions change between frames).

    Raises `RigError` for a non-mesh, a mesh in Edit Mode or without vertices, and a mesh
    that is neither skinned nor moved by anything (`what_moves`, `deformers`). Anything
    that keeps `core.skinning` from reproducing Blender's result exactly goes into
    `Rig.unsupported` (such a rig is refitted bottom-up from Blender's positions).
    """
    if ob is None or ob.type != "MESH":
        raise RigError(f"{getattr(ob, 'name', ob)!s} is not a mesh object")
    report = modifier_report(ob)
    if report.armature is None:
        moved = what_moves(ob) or moved or ", ".join(deformers(ob))
    else:
        moved = ""
    if report.armature is None and not moved:
        raise RigError(f"mesh '{ob.name}' has no armature and nothing moves it "
                       "(no parent, constraint, animation, shape key or modifier): parent "
                       "it to a bone (Ctrl+P > Bone) or an object to check it as a rigid "
                       "prop, or skin it with an Armature modifier")
    _check_mesh(ob)
    if moved:
        return _rigid_rig(ob, moved)
    arm_ob = report.armature
    if arm_ob.type != "ARMATURE":
        raise RigError(f"the Armature modifier of '{ob.name}' points to '{arm_ob.name}', "
                       "which is not an armature")
    mod = report.armature_modifier
    names, index, parents, rest_mats, deform = _bone_arrays(arm_ob)
    rest, tris, poly, poly_ptr, poly_verts = read_topology(ob.data)
    ptr, bone, value, ignored = read_weights(ob, index, deform)
    if mod is None:
        mod = _VirtualArmature(bool((np.diff(ptr) == 0).any()))

    unsupported: list[str] = []
    notes: list[str] = []
    if report.before:
        unsupported.append("modifiers before the Armature modifier: " + ", ".join(report.before))
    if report.after:
        unsupported.append("modifiers after the Armature modifier: " + ", ".join(report.after))
    if report.other_armatures:
        unsupported.append("more than one Armature modifier: " + ", ".join(report.other_armatures))
    keys = ob.data.shape_keys
    if keys is not None and len(keys.key_blocks) > 1:
        unsupported.append(f"{len(keys.key_blocks) - 1} shape keys (the armature deforms the "
                           "shape-key mix, which the rest pose does not contain)")
    if not mod.use_vertex_groups:
        unsupported.append("the Armature modifier does not use vertex groups")
    if mod.use_bone_envelopes:
        unsupported.append(mod.envelope_reason if report.virtual else
                           "bone envelopes are enabled on the Armature modifier")
    if mod.vertex_group:
        unsupported.append(f"the Armature modifier is masked by vertex group '{mod.vertex_group}'")
    if mod.use_multi_modifier:
        unsupported.append("the Armature modifier uses Multi Modifier")
    used = np.zeros(len(names), dtype=bool)
    used[np.unique(bone)] = True
    bones = arm_ob.data.bones
    bbones = [b.name for b, u in zip(bones, used) if u and b.bbone_segments > 1]
    if bbones:
        unsupported.append("B-Bones with segments > 1 are not supported: " + ", ".join(bbones[:5])
                           + (" ..." if len(bbones) > 5 else ""))
    env_mult = [b.name for b, u in zip(bones, used) if u and b.use_envelope_multiply]
    if env_mult:
        unsupported.append("bones multiply vertex groups by envelopes: " + ", ".join(env_mult[:5]))
    if ignored:
        notes.append(f"{ignored} vertex groups name no deform bone and are ignored, as Blender does")
    return Rig(
        name=ob.name_full, rest_positions=rest, triangles=tris, tri_polygon=poly,
        weight_ptr=ptr, weight_bone=bone, weight_value=value, bone_names=names,
        bone_parents=parents, bone_rest=rest_mats, bone_deform=deform,
        poly_ptr=poly_ptr, poly_verts=poly_verts, preserve_volume=bool(mod.use_deform_preserve_volume),
        unsupported=unsupported, notes=notes,
        armature=arm_ob.name_full, mesh_to_armature=mesh_to_armature_at_rest(ob, arm_ob),
    )


@dataclass
class _VirtualArmature:
    """The settings of the virtual Armature modifier armature parenting adds (Blender
    gives it the armature's deform flags, which Python cannot read: vertex groups, and
    bone envelopes for the vertices that carry no deform-bone weight). Whatever differs
    in a file shows when the build compares the skinning with Blender's positions
    (`addon.motion.verify`), which then falls back to the bottom-up refit."""

    use_envelopes: bool
    use_vertex_groups: bool = True
    vertex_group: str = ""
    use_multi_modifier: bool = False
    use_deform_preserve_volume: bool = False
    envelope_reason: str = ("vertices without a deform-bone weight, which armature "
                            "parenting may move by the bones' envelopes")

    @property
    def use_bone_envelopes(self) -> bool:
        return self.use_envelopes


def _no_bones(V: int) -> dict:
    """The bone and weight arrays of a rig without bones (every vertex static)."""
    return dict(weight_ptr=np.zeros(V + 1, np.int64), weight_bone=np.zeros(0, np.int32),
                weight_value=np.zeros(0), bone_names=[], bone_parents=np.zeros(0, np.int32),
                bone_rest=np.zeros((0, 4, 4)), bone_deform=np.zeros(0, bool))


def _rigid_rig(ob, moved: str) -> Rig:
    """A rigid prop's rig: no bones, so that every vertex is on the static joint and its
    skinning matrix is the mesh's world matrix (`rigid_pose`). Its own modifiers and shape
    keys move vertices the world matrix does not: `unsupported` (refitted bottom-up)."""
    rest, tris, poly, poly_ptr, poly_verts = read_topology(ob.data)
    unsupported = []
    deform = deformers(ob)
    if deform:
        unsupported.append("deformed without an armature: " + ", ".join(deform))
    note = (f"deformed by {', '.join(deform)}: refitted from Blender's positions" if deform
            else f"rigid: moves with {moved}, one transform per frame")
    return Rig(name=ob.name, rest_positions=rest, triangles=tris, tri_polygon=poly,
               poly_ptr=poly_ptr, poly_verts=poly_verts, unsupported=unsupported,
               notes=[note], rigid=moved, **_no_bones(rest.shape[0]))


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
        import bpy

        depsgraph = bpy.context.evaluated_depsgraph_get()
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
        import bpy

        dg = bpy.context.evaluated_depsgraph_get()
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
            weights = _no_bones(V)
        else:
            arm_ob = modifier_report(ob).armature
            names, index, _, _, deform = _bone_arrays(arm_ob)
            ptr, bone, value, _ = read_weights(ob, index, deform, me)
            weights = dict(weight_ptr=ptr, weight_bone=bone, weight_value=value,
                           bone_names=source.bone_names, bone_parents=source.bone_parents,
                           bone_rest=source.bone_rest, bone_deform=source.bone_deform)
    from ..core.storage import persist

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
    import bpy

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
        bpy.context.view_layer.update()
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


def pose_from_object(ob, depsgraph, built_rest: tuple[np.ndarray, np.ndarray] | None = None
                     ) -> Pose:
    """The current frame's `Pose` of mesh object `ob` (world space, evaluated).

    `built_rest`: (rest, inverse), (J, 4, 4) float64 each: the bones' rest matrices the
    data was built with (`Rig.bone_rest`) and their inverses, kept by the caller. The
    current rest matrices are still read (a cheap copy) and must equal them bit for bit,
    else RigError: an edited rest skeleton makes built data stale. Only the inversion is
    saved. A rigid rig's pose is `rigid_pose`."""
    arm_ob = modifier_report(ob).armature
    if arm_ob is None:
        raise RigError(f"mesh '{ob.name}' has no Armature modifier with an armature object")
    arm_eval = arm_ob.evaluated_get(depsgraph)
    ob_eval = ob.evaluated_get(depsgraph)
    pbones = arm_eval.pose.bones
    J = len(pbones)
    pose_mats = np.empty(J * 16, dtype=np.float32)
    if J:
        pbones.foreach_get("matrix", pose_mats)
    pose_mats = pose_mats.reshape(J, 4, 4).transpose(0, 2, 1).astype(np.float64)
    rest = np.empty(J * 16, dtype=np.float32)
    if J:
        arm_eval.data.bones.foreach_get("matrix_local", rest)
    rest = rest.reshape(J, 4, 4).transpose(0, 2, 1).astype(np.float64)
    if built_rest is not None:
        if built_rest[0].shape != rest.shape or not np.array_equal(built_rest[0], rest):
            raise RigError(f"the rest pose of '{arm_ob.name}' changed since the collision data "
                           f"of '{ob.name}' was built: rebuild")
        rest_inverse = built_rest[1]
    else:
        rest_inverse = np.linalg.inv(rest)
    deform = pose_mats @ rest_inverse
    arm_world = _matrix_to_np(arm_eval.matrix_world)
    correction = getattr(ob, "correction", None)
    if correction is not None:
        # A collection instance (`addon.drawn.Instance`): the same skinning, drawn at the
        # instance's matrix, as if its armature stood there too.
        arm_world = correction(depsgraph) @ arm_world
    return Pose(deform, arm_world, _matrix_to_np(ob_eval.matrix_world))


def rigid_pose(ob, depsgraph) -> Pose:
    """The current frame's `Pose` of a rigid prop: no bones, an identity armature matrix
    and the evaluated world matrix, so that the static joint's skinning matrix
    ``A · I · A⁻¹ · M`` is M exactly (`Pose.skinning_matrices`): wherever its parent (a
    bone, an object, a constraint, its animation) puts it."""
    M = _matrix_to_np(ob.evaluated_get(depsgraph).matrix_world)
    return Pose(np.zeros((0, 4, 4)), np.eye(4), M)


def evaluated_positions(ob, depsgraph, world: bool = True) -> np.ndarray:
    """Positions of the evaluated mesh: (V, 3) float64, world space unless `world` is False.

    Reads the position attribute with ``foreach_get`` (about 50x faster than
    ``vertices.foreach_get('co')``).
    """
    ob_eval = ob.evaluated_get(depsgraph)
    me = ob_eval.data
    V = len(me.vertices)
    buf = np.empty(V * 3, dtype=np.float32)
    attr = me.attributes.get("position")
    if attr is not None:
        attr.data.foreach_get("vector", buf)
    else:  # edit-mesh wrappers expose no attribute
        me.vertices.foreach_get("co", buf)
    pos = buf.reshape(V, 3).astype(np.float64)
    if world:
        M = _matrix_to_np(ob_eval.matrix_world)
        pos = pos @ M[:3, :3].T + M[:3, 3]
    return pos


def evaluated_frame(ob, depsgraph, rig: Rig) -> tuple[np.ndarray, np.ndarray]:
    """The frame's world positions (V, 3) float64 and the triangles Blender draws (T, 3)
    int32, in the order of `rig.triangles`.

    Quads are re-split with Blender's own rule on the mesh-local float32 positions (the
    space and precision Blender decides in), so no extra read is needed; meshes with
    n-gons read the evaluated loop triangles instead (polyfill also changes per frame).
    """
    ob_eval = ob.evaluated_get(depsgraph)
    local = evaluated_positions(ob, depsgraph, world=False)
    M = _matrix_to_np(ob_eval.matrix_world)
    world = local @ M[:3, :3].T + M[:3, 3]
    if triangulation.quads_of(rig).has_ngons:
        tris, _ = read_loop_triangles(ob_eval.data)
        if tris.shape != rig.triangles.shape:
            raise RigError(f"'{ob.name}' evaluates to {tris.shape[0]} triangles but was built "
                           f"with {rig.n_triangles}: its topology changed; rebuild")
    else:
        tris = triangulation.frame_triangles(rig, local)
    return world, tris
