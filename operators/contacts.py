"""Operators on the frame's contacts (issue 28): frame the 3D view on one and select its
faces (the panel lists the live result's contacts; clicking one runs this). With the
panel's Clearance on, the near contacts follow the intersections (issue 42): index
`len(contacts) + k` is near contact k. A contact that passes through between frames
(the last scan's, with Between Frames, issue 57) is `passing` k of the scan's list: the
scene goes to the sub-frame of its first contact."""
from __future__ import annotations

import json
import math

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


def first_contact_time(frame: int, step_to: float, t: float) -> tuple[int, float]:
    """The scene time of a pass-through's first contact, ``frame + t * (step_to - frame)``,
    as the (whole frame, subframe in [0, 1)) `Scene.frame_set` takes."""
    at = float(frame) + float(t) * (float(step_to) - float(frame))
    whole = math.floor(at)
    return int(whole), float(at - whole)


def stored_pass(scene, k: int) -> tuple[object, dict]:
    """The last scan's pass-through k (`SKINCOLLIDE_PG_settings.passes`) and its contact
    in the stored report (its "passes_through" entry, with the polygon pairs). ValueError
    with a one-line reason when there is no such contact or the report does not hold it."""
    s = scene.skin_collide
    if not 0 <= k < len(s.passes):
        raise ValueError("no such pass-through in the last scan: scan with Between Frames")
    item = s.passes[k]
    again = "the last scan's report does not hold this pass-through: scan again"
    if s.report is None:
        raise ValueError(again)
    try:
        doc = json.loads(s.report.as_string())
    except ValueError:
        raise ValueError("the last scan's report cannot be read: scan again") from None
    frame = next((f for f in doc.get("frames", ()) if isinstance(f, dict)
                  and f.get("frame") == item.frame), None)
    found = (frame or {}).get("passes_through") or []
    c = found[item.index] if 0 <= item.index < len(found) else None
    if not isinstance(c, dict) or list(c.get("objects", ())) != [item.object_a, item.object_b] \
            or not c.get("pairs"):
        raise ValueError(again)
    return item, c


def passing_faces(c: dict) -> dict[str, set[int]]:
    """Per object name, a stored pass-through's polygons (`contact_faces` of its JSON)."""
    pairs = np.asarray(c["pairs"], dtype=np.int64).reshape(-1, 2)
    out: dict[str, set[int]] = {}
    for side, name in enumerate(c["objects"][:2]):
        out.setdefault(name, set()).update(int(p) for p in pairs[:, side].tolist())
    return out


def evaluated_face_points(ob, depsgraph, polys) -> np.ndarray:
    """(P, 3) float64 world corners of faces `polys` of `ob` as evaluated now: faces of the
    surface checked, the evaluated mesh's (those past its faces are left out)."""
    ev = ob.evaluated_get(depsgraph)
    me = ev.data
    if not polys or not len(me.polygons):
        return np.zeros((0, 3))
    start = np.zeros(len(me.polygons), np.int32)
    total = np.zeros(len(me.polygons), np.int32)
    me.polygons.foreach_get("loop_start", start)
    me.polygons.foreach_get("loop_total", total)
    loop_vert = np.zeros(len(me.loops), np.int32)
    me.loops.foreach_get("vertex_index", loop_vert)
    co = np.zeros(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", co)
    idx = np.fromiter(polys, np.int64, len(polys))
    idx = idx[(idx >= 0) & (idx < len(me.polygons))]
    loops = np.concatenate([np.arange(a, a + n) for a, n in zip(start[idx], total[idx])]) \
        if idx.size else np.zeros(0, np.int64)
    pts = co.reshape(-1, 3).astype(np.float64)[np.unique(loop_vert[loops])]
    m = np.array(ev.matrix_world, dtype=np.float64)
    return pts @ m[:3, :3].T + m[:3, 3]


def points_view(pts: np.ndarray) -> tuple[np.ndarray, float]:
    """Where the 3D view looks to have (P, 3) points all in view: their box's centre and
    a view distance."""
    centre = 0.5 * (pts.min(0) + pts.max(0))
    radius = float(np.linalg.norm(pts - centre, axis=1).max())
    return centre, max(3.0 * radius, 0.05)


def _look_at(context, centre, distance: float) -> None:
    for area in (context.screen.areas if context.screen else []):
        if area.type == "VIEW_3D":
            r3d = area.spaces.active.region_3d
            r3d.view_location = tuple(centre)
            r3d.view_distance = distance
            area.tag_redraw()


def _select_contact_faces(scene, faces: dict) -> int:
    """Select the faces of each object of `faces` (name -> polygons); how many."""
    from . import live

    by_name = {identity.name(ob): ob for ob in scene.objects if ob.type == "MESH"}
    selected = 0
    for name, polys in faces.items():
        ob = by_name.get(name)
        if ob is None or identity.linked_mesh_reason(ob):
            continue
        own = live._own_faces(ob, polys)
        live.select_faces(ob.data, own)
        selected += len(own)
    return selected


class SKINCOLLIDE_OT_frame_contact(bpy.types.Operator):
    """Frame the 3D view on this contact and select its faces (a contact that passes
    through between frames: go to the sub-frame of its first contact)"""

    bl_idname = "skin_collide.frame_contact"
    bl_label = "Frame Contact"
    bl_options = {"REGISTER", "UNDO"}

    index: bpy.props.IntProperty(name="Contact", default=0, min=0)
    passing: bpy.props.IntProperty(
        name="Pass-Through", description="The last scan's contact that passes through "
        "between frames (its place in the panel's list); -1: the frame's contact `index`",
        default=-1, min=-1)

    def execute(self, context):
        # The mode first: entering Edit Mode may already have dropped the live result
        # (the overlay does not query meshes being edited), and the mode is what the user
        # has to change before any contact can be framed.
        if context.mode != "OBJECT":
            self.report({"ERROR"}, "Frame Contact selects faces in Object Mode")
            return {"CANCELLED"}
        if self.passing >= 0:
            return self._frame_passing(context)
        scene = context.scene
        res = session.live_result(scene)
        found = listed_contacts(res)
        if not 0 <= self.index < len(found):
            self.report({"ERROR"}, "no such contact at this frame: refresh the overlay")
            return {"CANCELLED"}
        c = found[self.index]
        selected = _select_contact_faces(scene, contact_faces(c))
        near = c.kind == "near"
        centre, distance = near_view(c, _near_face_points(res, scene, c)) if near else \
            contact_view(c)
        _look_at(context, centre, distance)
        bones = " × ".join(b or "-" for b in c.bones)
        what = c.kind
        if near:
            from ..addon.clearance import distance_text

            what = f"near, {distance_text(scene, c.min_distance)} apart"
        self.report({"INFO"}, f"{bones}: {what}, {len(c.pairs)} pairs; selected "
                              f"{selected} face(s)")
        return {"FINISHED"}

    def _frame_passing(self, context):
        """Frame Contact on the last scan's pass-through `self.passing`: the scene at the
        sub-frame of its first contact, the view on its faces there, the faces selected."""
        scene = context.scene
        try:
            item, c = stored_pass(scene, self.passing)
        except ValueError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        faces = passing_faces(c)
        by_name = {identity.name(ob): ob for ob in scene.objects if ob.type == "MESH"}
        if not any(name in by_name for name in faces):
            self.report({"ERROR"}, f"'{item.object_a}' and '{item.object_b}' are not in the "
                        "scene any more: scan again")
            return {"CANCELLED"}
        t = c.get("t")          # the report's double, else the panel list's float
        whole, sub = first_contact_time(item.frame, item.step_to,
                                        float(t) if isinstance(t, (int, float)) else item.t)
        scene.frame_set(whole, subframe=sub)
        selected = _select_contact_faces(scene, faces)
        dg = context.evaluated_depsgraph_get()
        pts = [evaluated_face_points(by_name[name], dg, polys)
               for name, polys in faces.items() if name in by_name]
        pts = np.concatenate(pts) if pts else np.zeros((0, 3))
        centre, distance = points_view(pts) if len(pts) else \
            (np.asarray(c.get("center", (0.0, 0.0, 0.0)), np.float64), 0.5)
        _look_at(context, centre, distance)
        bones = " × ".join(b or "-" for b in c.get("bones", ()))
        self.report({"INFO"}, f"{bones}: passes through between {item.frame} and "
                              f"{frame_text(item.step_to)}, first contact at frame "
                              f"{whole + sub:.3f}; {len(c['pairs'])} pairs; selected "
                              f"{selected} face(s)")
        return {"FINISHED"}


def frame_text(x: float) -> str:
    """A step's end for people: "3" for a whole frame, else "2.5"."""
    return str(int(x)) if float(x) == int(x) else f"{x:g}"


CLASSES = (SKINCOLLIDE_OT_frame_contact,)
guard_operators(CLASSES)

