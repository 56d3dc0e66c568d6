"""The sidebar panel (3D View > Sidebar > Collide)."""
from __future__ import annotations

import bpy

from ..addon import session, storage
from ..addon.state import STATE


class SKINCOLLIDE_PT_main(bpy.types.Panel):
    bl_label = "Skin Collide"
    bl_idname = "SKINCOLLIDE_PT_main"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Collide"

    def draw(self, context):
        layout = self.layout
        scene = context.scene
        s = scene.skin_collide
        col = layout.column(align=True)
        col.prop(s, "source", expand=True)
        if s.source == "COLLECTION":
            col.prop(s, "collection", text="")
        row = layout.row(align=True)
        row.operator("skin_collide.build", icon="MOD_ARMATURE")
        row.operator("skin_collide.clear", text="", icon="TRASH")
        row = layout.row(align=True)
        row.prop(s, "sphere_count")
        row.operator("skin_collide.build_sphere_set", icon="MESH_UVSPHERE")
        built = [ob for ob in scene.objects if ob.type == "MESH" and storage.has_data(ob)]
        box = layout.box()
        if built:
            for ob in built:
                reason = storage.stale_reason(ob)
                box.label(text=ob.name_full, icon="ERROR" if reason else "CHECKMARK")
                if reason:
                    box.label(text=("in Edit Mode" if ob.mode == "EDIT"
                                    else "changed since build: rebuild"))
        else:
            box.label(text="No collision data yet", icon="INFO")
        for ob in built:
            if ob.name_full in STATE.missing_data:
                box.label(text=f"{ob.name_full}: cache missing, rebuilt when first needed",
                          icon="FILE_REFRESH")
        row = layout.row(align=True)
        row.prop(s, "data_location", expand=True)
        if s.data_location == "DISK" and storage.cache_dir() is None:
            layout.label(text="Unsaved file: data stays in the file until it is saved",
                         icon="INFO")
        layout.prop(s, "self_collision")
        layout.prop(s, "method")
        layout.prop(s, "ignore_rest_contacts")
        row = layout.row(align=True)
        row.prop(s, "crossing_only")
        row.prop(s, "min_length")
        layout.prop(s, "ignore_bones")
        ob = context.active_object
        if ob is not None and ob.type == "MESH":
            layout.prop_search(ob.skin_collide, "ignore_group", ob, "vertex_groups")
        row = layout.row(align=True)
        row.operator("skin_collide.toggle_overlay", depress=s.live,
                     icon="HIDE_OFF" if s.live else "HIDE_ON",
                     text="Live Overlay: On" if s.live else "Live Overlay: Off")
        row.prop(s, "overlay_color", text="")
        row.prop(s, "show_triangles", toggle=True)
        row = layout.row(align=True)
        row.prop(s, "clearance")
        sub = row.row(align=True)
        sub.active = s.clearance
        sub.prop(s, "clearance_distance", text="")
        sub.prop(s, "near_color", text="")
        row = layout.row(align=True)
        row.prop(s, "show_spheres")
        sub = row.row()
        sub.active = s.show_spheres
        sub.prop(s, "sphere_level", text="Level")
        res = session.live_result(scene)
        if res is not None:
            if res.error:
                layout.label(text=res.error, icon="ERROR")
            else:
                count = res.count_text
                layout.label(text=f"Frame {res.frame}: {count} pairs, {res.ms:.1f} ms",
                             icon="MOD_PHYSICS" if res.n_pairs else "CHECKMARK")
                if res.n_pairs > len(res.polygon_pairs):
                    layout.label(text=f"showing the first {session.MAX_PAIRS} pairs only",
                                 icon="INFO")
                if res.warning:
                    layout.label(text=res.warning, icon="ERROR")
                _draw_clearance(layout, res, scene)
                _draw_contacts(layout, res, scene)
        _draw_passes(layout, scene)
        row = layout.row(align=True)
        row.operator("skin_collide.select_colliding", icon="RESTRICT_SELECT_OFF")
        row.operator("skin_collide.bake_highlight", text="", icon="BRUSH_DATA")
        layout.separator()
        row = layout.row(align=True)
        row.operator("skin_collide.scan", icon="TIME")
        row.prop(s, "add_markers", text="", icon="MARKER_HLT")
        row.prop(s, "strip_length", text="", icon="CURVE_PATH")
        row = layout.row(align=True)
        row.prop(s, "between_frames")
        if s.between_frames:
            row.prop(s, "subframes")
        layout.operator("skin_collide.export_report", icon="EXPORT")
        if len(s.frame_counts):
            hits = sum(1 for item in s.frame_counts if item.pairs > 0)
            skipped = sum(1 for item in s.frame_counts if item.pairs < 0)
            near = sum(1 for item in s.frame_counts if item.pairs == 0 and item.near > 0)
            steps = sum(1 for item in s.frame_counts if item.passes > 0)
            layout.label(text=f"Last scan: {hits} of {len(s.frame_counts)} frames collide"
                         + (f", {near} under the clearance" if near else "")
                         + (f", {steps} step(s) pass through" if steps else ""))
            if skipped:
                layout.label(text=f"{skipped} frame(s) not checked (bones scaled to zero)",
                             icon="ERROR")
        layout.separator()
        layout.operator("skin_collide.doctor", icon="CHECKMARK")
        if s.last_report:
            box = layout.box()
            for chunk in s.last_report.split(", "):
                box.label(text=chunk)


#: Contacts listed in the panel (the longest first).
CONTACTS_LISTED = 8


def _draw_clearance(layout, res, scene) -> None:
    """With Clearance on: how many near contacts the frame has, within which distance,
    or why there can be none (`LiveResult.clearance_note`)."""
    from ..addon.clearance import distance_text

    if res.clearance_note:
        layout.label(text=res.clearance_note, icon="INFO")
    elif res.clearance is not None:
        n = len(res.near_contacts)
        layout.label(text=f"{n} near contact(s) within {distance_text(scene, res.clearance)}",
                     icon="DRIVER_DISTANCE" if n else "CHECKMARK")


def _draw_contacts(layout, res, scene=None) -> None:
    """The frame's contacts, the longest first: bones, length, kind; then its near
    contacts (Clearance on), the closest first, with their distance in scene units. A
    click frames the view on one and selects its faces (`skin_collide.frame_contact`,
    whose index counts the near contacts after the intersections)."""
    from ..core.contacts.episodes import length_text

    found = getattr(res, "contacts", None) or []
    near = getattr(res, "near_contacts", None) or []
    if not found and not near:
        return
    col = layout.column(align=True)
    order = sorted(range(len(found)), key=lambda k: -found[k].length)
    for k in order[:CONTACTS_LISTED]:
        c = found[k]
        what = f"{length_text(c.length)} crossing" if c.kind == "crossing" else "touching"
        op = col.operator("skin_collide.frame_contact",
                          text=f"{c.bones[0] or c.a} × {c.bones[1] or c.b}: {what}",
                          icon="VIEWZOOM" if c.kind == "crossing" else "DOT")
        op.index = k
    if len(found) > CONTACTS_LISTED:
        col.label(text=f"and {len(found) - CONTACTS_LISTED} more contacts")
    if near:
        _draw_near(col, near, len(found), scene if scene is not None else bpy.context.scene)


def _draw_passes(layout, scene) -> None:
    """The last scan's contacts that pass through during the step from the current frame
    (Between Frames; the timeline strip marks those steps): bones and the step. A click
    goes to the sub-frame of first contact and selects the faces
    (`skin_collide.frame_contact` with `passing`, its place in the scan's list)."""
    import numpy as np

    from ..operators.contacts import frame_text

    s = scene.skin_collide
    n = len(s.passes)
    if not n:
        return
    frames, ends = np.zeros(n, np.int32), np.zeros(n, np.float32)
    s.passes.foreach_get("frame", frames)
    s.passes.foreach_get("step_to", ends)
    f = scene.frame_current
    here = np.flatnonzero((frames <= f) & (f < ends)).tolist()
    if not here:
        return
    col = layout.column(align=True)
    for k in here[:CONTACTS_LISTED]:
        p = s.passes[k]
        op = col.operator("skin_collide.frame_contact",
                          text=f"{p.bone_a or p.object_a} × {p.bone_b or p.object_b}: "
                               f"passes through between {p.frame} and {frame_text(p.step_to)}",
                          icon="FRAME_NEXT")
        op.passing = k
    if len(here) > CONTACTS_LISTED:
        col.label(text=f"and {len(here) - CONTACTS_LISTED} more pass-throughs")


def _draw_near(col, near: list, first_index: int, scene) -> None:
    """The near contacts, the closest first: bones and distance (scene units)."""
    from ..addon.clearance import distance_text

    order = sorted(range(len(near)), key=lambda k: near[k].min_distance)
    for k in order[:CONTACTS_LISTED]:
        c = near[k]
        op = col.operator("skin_collide.frame_contact",
                          text=f"{c.bones[0] or c.a} × {c.bones[1] or c.b}: "
                               f"{distance_text(scene, c.min_distance)} apart",
                          icon="DRIVER_DISTANCE")
        op.index = first_index + k
    if len(near) > CONTACTS_LISTED:
        col.label(text=f"and {len(near) - CONTACTS_LISTED} more near contacts")


CLASSES = (SKINCOLLIDE_PT_main,)
