"""The sidebar panel (3D View > Sidebar > Collide)."""
from __future__ import annotations

import bpy


class SKINCOLLIDE_PT_main(bpy.types.Panel):
    bl_label = "Skin Collide"
    bl_idname = "SKINCOLLIDE_PT_main"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Collide"

    def draw(self, context):
        layout = self.layout
        layout.operator("skin_collide.doctor", icon="CHECKMARK")
        report = context.scene.skin_collide.last_report
        if report:
            box = layout.box()
            for chunk in report.split(", "):
                box.label(text=chunk)


CLASSES = (SKINCOLLIDE_PT_main,)
