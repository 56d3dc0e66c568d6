"""Operators: the live overlay, and selecting the colliding faces of the active mesh."""
from __future__ import annotations

import bpy
import numpy as np

from ..addon import session, storage


def _built_meshes(scene):
    return session.built(scene, [ob for ob in scene.objects
                                 if ob.type == "MESH" and storage.has_data(ob)])


def _query_now(op, context):
    """Collide the built characters at the current frame; on a problem, report it on
    `op` and return None."""
    scene = context.scene
    try:
        return session.query(scene, context.evaluated_depsgraph_get(), _built_meshes(scene))
    except session.SessionError as exc:
        op.report({"ERROR"}, str(exc))
        return None


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
        self.report({"INFO"}, f"Frame {res.frame}: {res.n_pairs} colliding pair(s), {res.ms:.1f} ms")
        return {"FINISHED"}


class SKINCOLLIDE_OT_toggle_overlay(bpy.types.Operator):
    """Turn the live collision overlay on or off (checks every frame change)"""

    bl_idname = "skin_collide.toggle_overlay"
    bl_label = "Live Overlay"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
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
        # Edit Mode evaluates to an edit-mesh wrapper: query from Object Mode.
        if mode == "EDIT":
            bpy.ops.object.mode_set(mode="OBJECT")
        res = _query_now(self, context)
        if res is None:
            if mode == "EDIT":
                bpy.ops.object.mode_set(mode="EDIT")
            return {"CANCELLED"}
        polys = {pa for a, pa, b, pb in res.polygon_pairs if a == ob.name}
        polys |= {pb for a, pa, b, pb in res.polygon_pairs if b == ob.name}
        me = ob.data
        sel = np.zeros(len(me.polygons), dtype=bool)
        sel[list(polys)] = True
        # Vertices and edges follow the faces, or Edit Mode would re-derive the faces.
        loop_start = np.zeros(len(me.polygons), dtype=np.int32)
        loop_total = np.zeros(len(me.polygons), dtype=np.int32)
        me.polygons.foreach_get("loop_start", loop_start)
        me.polygons.foreach_get("loop_total", loop_total)
        loop_vert = np.zeros(len(me.loops), dtype=np.int32)
        loop_edge = np.zeros(len(me.loops), dtype=np.int32)
        me.loops.foreach_get("vertex_index", loop_vert)
        me.loops.foreach_get("edge_index", loop_edge)
        loop_sel = np.repeat(sel, loop_total)
        vsel = np.zeros(len(me.vertices), dtype=bool)
        vsel[loop_vert[loop_sel]] = True
        esel = np.zeros(len(me.edges), dtype=bool)
        esel[loop_edge[loop_sel]] = True
        me.vertices.foreach_set("select", vsel)
        me.edges.foreach_set("select", esel)
        me.polygons.foreach_set("select", sel)
        if mode == "EDIT":
            context.tool_settings.mesh_select_mode = (False, False, True)
            bpy.ops.object.mode_set(mode="EDIT")
        elif mode == "WEIGHT_PAINT":
            me.use_paint_mask = True
        me.update()
        self.report({"INFO"}, f"Selected {len(polys)} colliding face(s) of '{ob.name}'")
        return {"FINISHED"}


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
        res = _query_now(self, context)
        if res is None:
            return {"CANCELLED"}
        total = 0
        for ob in (scene.objects[name] for name in res.names):
            faces = {pa for a, pa, b, pb in res.polygon_pairs if a == ob.name}
            faces |= {pb for a, pa, b, pb in res.polygon_pairs if b == ob.name}
            total += bake.write_attribute(ob, faces)
        self.report({"INFO"}, f"Baked {total} colliding face(s) at frame {res.frame} into "
                              f"'{bake.ATTRIBUTE}'")
        return {"FINISHED"}


CLASSES = CLASSES + (SKINCOLLIDE_OT_bake_highlight,)
