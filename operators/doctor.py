"""Operator: check the active mesh the way `python -m skin_collide doctor` does."""
from __future__ import annotations

import bpy

from ..addon import doctor, extract
from .stepping import guard_operators


class SKINCOLLIDE_OT_doctor(bpy.types.Operator):
    """Check the active mesh (skinned, or a rigid prop): weights, modifiers, the surface
    checked, refit method, and how closely skin_collide's skinning reproduces Blender's at
    the current frame"""

    bl_idname = "skin_collide.doctor"
    bl_label = "Check Skinned Mesh"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, context):
        ob = context.active_object
        if ob is None or ob.type != "MESH":
            cls.poll_message_set("Select a mesh object")
            return False
        return True

    def execute(self, context):
        ob = context.active_object
        scene = context.scene
        frame = scene.frame_current
        try:
            rep = doctor.describe(ob)
            doctor.measure_deviation(scene, ob, rep, [frame])
        except extract.RigError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        facts = dict(rep.facts)
        what = f"rigid, moves with {rep.rig.rigid}" if rep.rig.is_rigid else facts["surface"]
        summary = (f"{rep.name}: {facts['vertices']} vertices, {facts['triangles']}, "
                   f"{what}, refit {facts['refit']}, "
                   f"deviation {rep.max_deviation:.2e} at frame {frame}")
        scene.skin_collide.last_report = summary
        self.report({"INFO"}, summary)
        return {"FINISHED"}


CLASSES = (SKINCOLLIDE_OT_doctor,)
guard_operators(CLASSES)
