"""Operators on the frame's contacts (issue 28): frame the 3D view on one and select its
faces (the panel lists the live result's contacts; clicking one runs this). With the
panel's Clearance on, the near contacts follow the intersections (issue 42): index
`len(contacts) + k` is near contact k."""
from __future__ import annotations

import bpy
import numpy as np

from ..addon import identity, session
from .stepping import guard_operators


def contact_view(contact) -> tuple[np.ndarray, float]:
    """Where the 3D view looks to frame a contact: its centre and a view distance that
    shows its whole curve (or its neighbourhood, for a touching contact)."""
    pts = contact.segments.reshape(-1, 3) if contact.segments.size else \
        np.asarray(contact.center, dtype=np.float64).reshape(1, 3)
    centre = 0.5 * (pts.min(0) + pts.max(0))
    radius = float(np.linalg.norm(pts - centre, axis=1).max()) if len(pts) else 0.0
    return centre, max(3.0 * radius, 0.05)


def near_view(contact, face_points: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """Where the 3D view looks to frame a near contact: its closest segment and, when
    given, the (P, 3) float64 corners of its faces, all in view."""
    pts = np.asarray(contact.points, dtype=np.float64).reshape(-1, 3)
    if face_points is not None and len(face_points):
        pts = np.concatenate([pts, np.asarray(face_points, dtype=np.float64).reshape(-1, 3)])
    centre = 0.5 * (pts.min(0) + pts.max(0))
    radius = float(np.linalg.norm(pts - centre, axis=1).max())
    return centre, max(3.0 * radius, 0.05)


def listed_contacts(res) -> list:
    """The contacts Frame Contact's index refers to: the intersections, then the near
    contacts (Clearance on)."""
    if res is None:
        return []
    return list(getattr(res, "contacts", None) or []) + \
        list(getattr(res, "near_contacts", None) or [])


def _near_face_points(res, scene, contact) -> np.ndarray:
    """(P, 3) float64 the frame's corners of the near contact's faces, on both sides."""
    from ..addon import overlay, storage

    by_name = {ob.name_full: ob for ob in scene.objects}
    pts = []
    for side, name in enumerate((contact.a, contact.b)):
        ob = by_name.get(name)
        if ob is None or name not in res.names or not storage.has_data(ob):
            continue
        k = res.names.index(name)
        obj = storage.load(ob)
        tris = overlay.object_triangles(res, k, obj)
        mask = np.isin(obj.rig.tri_polygon, contact.pairs[:, side])
        pts.append(res.positions[k][tris[mask]].reshape(-1, 3))
    return np.concatenate(pts) if pts else np.zeros((0, 3))


def contact_faces(contact) -> dict[str, set[int]]:
    """Per object name, the contact's polygons on it (both sides of a self-contact)."""
    out: dict[str, set[int]] = {}
    for side, name in enumerate((contact.a, contact.b)):
        out.setdefault(name, set()).update(int(p) for p in contact.pairs[:, side].tolist())
    return out


class SKINCOLLIDE_OT_frame_contact(bpy.types.Operator):
    """Frame the 3D view on this contact and select its faces"""

    bl_idname = "skin_collide.frame_contact"
    bl_label = "Frame Contact"
    bl_options = {"REGISTER", "UNDO"}

    index: bpy.props.IntProperty(name="Contact", default=0, min=0)

    def execute(self, context):
        from . import live

        # The mode first: entering Edit Mode may already have dropped the live result
        # (the overlay does not query meshes being edited), and the mode is what the user
        # has to change before any contact can be framed.
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Frame Contact selects faces in Object Mode")
            return {"CANCELLED"}
        scene = context.scene
        res = session.live_result(scene)
        found = listed_contacts(res)
        if not 0 <= self.index < len(found):
            self.report({"ERROR"}, "no such contact at this frame: refresh the overlay")
            return {"CANCELLED"}
        c = found[self.index]
        by_name = {identity.name(ob): ob for ob in scene.objects if ob.type == "MESH"}
        selected = 0
        for name, polys in contact_faces(c).items():
            ob = by_name.get(name)
            if ob is None or identity.linked_mesh_reason(ob):
                continue
            faces = live._own_faces(ob, polys)
            live.select_faces(ob.data, faces)
            selected += len(faces)
        near = c.kind == "near"
        centre, distance = near_view(c, _near_face_points(res, scene, c)) if near else \
            contact_view(c)
        for area in (context.screen.areas if context.screen else []):
            if area.type == "VIEW_3D":
                r3d = area.spaces.active.region_3d
                r3d.view_location = tuple(centre)
                r3d.view_distance = distance
                area.tag_redraw()
        bones = " × ".join(b or "-" for b in c.bones)
        what = c.kind
        if near:
            from ..addon.clearance import distance_text

            what = f"near, {distance_text(scene, c.min_distance)} apart"
        self.report({"INFO"}, f"{bones}: {what}, {len(c.pairs)} pairs; selected "
                              f"{selected} face(s)")
        return {"FINISHED"}


CLASSES = (SKINCOLLIDE_OT_frame_contact,)
guard_operators(CLASSES)
