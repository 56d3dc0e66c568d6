"""Operators: the live overlay, and selecting the colliding faces of the active mesh."""
from __future__ import annotations

import bpy
import numpy as np

from ..addon import extract, identity, session, storage
from .stepping import guard_operators


def _built_meshes_or_none(op, scene):
    """The built meshes the viewport draws (`session.shown_built`), or None after
    reporting why there are none usable."""
    try:
        return session.shown_built(scene)
    except session.SessionError as exc:
        op.report({"ERROR"}, str(exc))
        return None


def _query_now(op, context):
    """Collide the built characters at the current frame; on a problem, report it on
    `op` and return None."""
    scene = context.scene
    try:
        res = session.query(scene, context.evaluated_depsgraph_get(), session.shown_built(scene))
    except (session.SessionError, extract.RigError, ValueError) as exc:
        op.report({"ERROR"}, str(exc))
        return None
    if res.warning:
        op.report({"WARNING"}, res.warning)
    if res.clearance_note:          # Clearance on with one character: say why nothing near
        op.report({"WARNING"}, res.clearance_note)
    return res


def _own_faces(ob, polys) -> set[int]:
    """The colliding faces of the surface checked, as faces of `ob`'s own mesh (those of
    an evaluated surface mapped back through the modifiers, `extract.own_faces`)."""
    obj = storage.load(ob)
    return extract.own_faces(obj.rig, polys) if obj is not None else set(polys)


def _any_built_poll(cls, context) -> bool:
    scene = context.scene
    if scene is None:
        return False
    if not any(ob.type == "MESH" and storage.has_data(ob) for ob in scene.objects):
        cls.poll_message_set("Build the collision data first")
        return False
    return True


class SKINCOLLIDE_OT_refresh(bpy.types.Operator):
    """Collide the built characters at the current frame"""

    bl_idname = "skin_collide.refresh"
    bl_label = "Check This Frame"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        return _any_built_poll(cls, context)

    def execute(self, context):
        res = _query_now(self, context)
        if res is None:
            return {"CANCELLED"}
        count = res.count_text
        near = f", {len(res.near_contacts)} near contact(s)" if res.clearance is not None else ""
        self.report({"INFO"}, f"Frame {res.frame}: {count} colliding pair(s){near}, "
                              f"{res.ms:.1f} ms")
        return {"FINISHED"}


class SKINCOLLIDE_OT_toggle_overlay(bpy.types.Operator):
    """Turn the live collision overlay on or off (checks every frame change)"""

    bl_idname = "skin_collide.toggle_overlay"
    bl_label = "Live Overlay"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        scene = context.scene
        if scene is not None and scene.skin_collide.live:
            return True                     # turning off must always be possible
        return _any_built_poll(cls, context)

    def execute(self, context):
        scene = context.scene
        s = scene.skin_collide
        if s.live:
            s.live = False
            session.forget(scene)
            self.report({"INFO"}, "Live overlay off")
            return {"FINISHED"}
        if _query_now(self, context) is None:
            return {"CANCELLED"}
        s.live = True
        self.report({"INFO"}, "Live overlay on")
        return {"FINISHED"}


class SKINCOLLIDE_OT_select_colliding(bpy.types.Operator):
    """Select the faces of the active mesh that collide at this frame (for fixing
    weights in Edit Mode or Weight Paint with the face mask)"""

    bl_idname = "skin_collide.select_colliding"
    bl_label = "Select Colliding Faces"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        if ob is None or ob.type != "MESH":
            cls.poll_message_set("Make a mesh active")
            return False
        if not storage.has_data(ob):
            cls.poll_message_set("Build the collision data of the active mesh first")
            return False
        return True

    def execute(self, context):
        ob = context.active_object
        mode = ob.mode
        if mode not in {"OBJECT", "EDIT", "WEIGHT_PAINT"}:
            self.report({"ERROR"}, "Select Colliding Faces works in Object, Edit or Weight "
                                   "Paint mode")
            return {"CANCELLED"}
        linked = identity.linked_mesh_reason(ob)
        if linked:              # a selection there would be lost on saving: say so instead
            self.report({"ERROR"}, linked)
            return {"CANCELLED"}
        # Edit Mode evaluates to an edit-mesh wrapper: query from Object Mode.
        if mode == "EDIT":
            bpy.ops.object.mode_set(mode="OBJECT")
        try:
            res = _query_now(self, context)
            if res is None:
                return {"CANCELLED"}
            polys = _own_faces(ob, own_faces(res, ob))
            if mode == "EDIT":
                select_faces_edit_mode(context, ob, polys)
            else:
                select_faces(ob.data, polys)
        finally:
            if mode == "EDIT" and ob.mode != "EDIT":
                bpy.ops.object.mode_set(mode="EDIT")
        capped = " (capped)" if res.n_pairs > len(res.polygon_pairs) else ""
        hint = ""
        if mode == "WEIGHT_PAINT" and not ob.data.use_paint_mask:
            # Not switched on here: toggling the mask from a script crashes bpy 5.0.1 on
            # script-made meshes when leaving Weight Paint.
            hint = "; turn on the Face Selection Mask to paint only them"
        self.report({"INFO"}, f"Selected {len(polys)} colliding face(s) of '{ob.name_full}'"
                              f"{capped}{hint}")
        return {"FINISHED"}



def own_faces(res, ob) -> set[int]:
    """The colliding polygons of `ob` in a live result: those of the pairs naming it by its
    full name (another object may share its bare name)."""
    name = identity.name(ob)
    return ({pa for a, pa, b, pb in res.polygon_pairs if a == name}
            | {pb for a, pa, b, pb in res.polygon_pairs if b == name})


def select_faces(me, polys) -> None:
    """Select exactly the faces `polys` of mesh `me` (Object or Weight Paint mode), with
    their vertices; edges are derived by Blender's own flush in `Mesh.update`.

    Never writes the edges' select flags: `edges.foreach_set("select", ...)` crashes bpy
    5.0.1 on script-made and some loaded meshes; faces and vertices are safe.
    """
    sel = np.zeros(len(me.polygons), dtype=bool)
    idx = np.fromiter(polys, dtype=np.int64, count=len(polys))
    sel[idx] = True
    loop_total = np.zeros(len(me.polygons), dtype=np.int32)
    me.polygons.foreach_get("loop_total", loop_total)
    loop_vert = np.zeros(len(me.loops), dtype=np.int32)
    me.loops.foreach_get("vertex_index", loop_vert)
    vsel = np.zeros(len(me.vertices), dtype=bool)
    vsel[loop_vert[np.repeat(sel, loop_total)]] = True
    me.vertices.foreach_set("select", vsel)
    me.polygons.foreach_set("select", sel)
    me.update()


def select_faces_edit_mode(context, ob, polys) -> None:
    """Enter Edit Mode on `ob` and select exactly the faces `polys` through bmesh, the way
    Blender's face select does (flushing to edges and vertices)."""
    import bmesh

    bpy.ops.object.mode_set(mode="EDIT")
    context.tool_settings.mesh_select_mode = (False, False, True)
    me = ob.data
    bpy.ops.mesh.select_all(action="DESELECT")
    bm = bmesh.from_edit_mesh(me)
    bm.faces.ensure_lookup_table()
    n = len(bm.faces)
    for i in sorted(polys):
        if 0 <= i < n:
            bm.faces[i].select_set(True)
    bm.select_mode = {"FACE"}
    bm.select_flush_mode()
    bmesh.update_edit_mesh(me, loop_triangles=False, destructive=False)


CLASSES = (SKINCOLLIDE_OT_refresh, SKINCOLLIDE_OT_toggle_overlay, SKINCOLLIDE_OT_select_colliding)


class SKINCOLLIDE_OT_bake_highlight(bpy.types.Operator):
    """Write this frame's colliding faces into the colour attribute 'skin_collide_hits'
    of the built meshes (red), for Workbench or Cycles renders"""

    bl_idname = "skin_collide.bake_highlight"
    bl_label = "Bake Highlight"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return _any_built_poll(cls, context)

    def execute(self, context):
        from ..addon import bake

        scene = context.scene
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Switch to Object Mode to bake")
            return {"CANCELLED"}
        targets = _built_meshes_or_none(self, scene)
        if targets is None:
            return {"CANCELLED"}
        writable = [ob for ob in targets if not identity.linked_mesh_reason(ob)]
        if not writable:        # nothing can be kept: refuse, changing nothing
            self.report({"ERROR"}, identity.linked_mesh_reason(targets[0]))
            return {"CANCELLED"}
        res = _query_now(self, context)
        if res is None:
            return {"CANCELLED"}
        total = sum(bake.write_attribute(ob, _own_faces(ob, own_faces(res, ob))) for ob in writable)
        text = f"Baked {total} colliding face(s) at frame {res.frame} into '{bake.ATTRIBUTE}'"
        skipped = [ob for ob in targets if ob not in writable]
        if skipped:             # one line: what was baked, and what could not be
            more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
            text += f"; not baked: {identity.linked_mesh_reason(skipped[0])}{more}"
        self.report({"WARNING" if skipped else "INFO"}, text)
        return {"FINISHED"}


CLASSES = CLASSES + (SKINCOLLIDE_OT_bake_highlight,)
guard_operators(CLASSES)
