"""Settings and per-object state, stored in the .blend (PropertyGroups)."""
from __future__ import annotations

import bpy

from ..core.methods import registry

# The panel's method choice comes from the registry, like the CLI's --method choices: read
# each time, so that a method registered later (a studio's own) is offered too. Blender
# needs the items to stay referenced: they live in this list. Values are registry order,
# which keeps the built-in methods' stored values.
_METHOD_ITEMS: list[tuple[str, str, str, int]] = []


def _method_items(self, context):
    _METHOD_ITEMS[:] = [(m.id, m.label, m.description, k)
                        for k, m in enumerate(registry.methods())]
    return _METHOD_ITEMS


def method_choices() -> list[str]:
    """The ids the panel's Method menu offers now (its items are dynamic: Blender's
    `enum_items` does not list them)."""
    return [item[0] for item in _method_items(None, None)]


#: The panel property holding each build option a method may declare (`Method.options`).
OPTION_PROPS = {"count": "sphere_count", "seed": "sphere_seed"}


def panel_options(scene, method) -> dict:
    """The panel's values of the build options `method` declares (`Method.options`) that
    the panel has a setting for (`OPTION_PROPS`); the others keep their defaults."""
    props = scene.skin_collide
    return {k: getattr(props, OPTION_PROPS[k]) for k in method.options if k in OPTION_PROPS}


class SKINCOLLIDE_PG_frame_count(bpy.types.PropertyGroup):
    """Colliding pairs found at one frame by the last scan."""

    frame: bpy.props.IntProperty(name="Frame")
    pairs: bpy.props.IntProperty(name="Pairs")
    crossing: bpy.props.FloatProperty(name="Crossing Length", description="Total length "
                                      "of the frame's crossing contacts", default=0.0)
    near: bpy.props.IntProperty(name="Near Contacts", description="Near contacts of the "
                                "frame (scanned with Clearance on; 0 otherwise)", default=0)
    passes: bpy.props.IntProperty(
        name="Pass-Throughs", description="Contacts that pass through during the step from "
        "this frame to the next checked one (scanned with Between Frames on; 0 otherwise)",
        default=0)
    step_to: bpy.props.FloatProperty(
        name="Step To", description="The next checked frame, where this frame's step ends "
        "(-1: no step checked from this frame)", default=-1.0)


class SKINCOLLIDE_PG_pass(bpy.types.PropertyGroup):
    """One contact of kind "passes through" of the last scan (Between Frames): what the
    panel lists; its polygon pairs are in the scan's stored report (`report`), frame
    `frame`'s `"passes_through"` entry `index`."""

    frame: bpy.props.IntProperty(name="Frame", description="The step's first frame")
    step_to: bpy.props.FloatProperty(name="Step To", description="The step's end")
    t: bpy.props.FloatProperty(name="First Contact", description="When in the step the "
                               "contact begins (0: at its first frame, 1: at its end; a "
                               "lower bound)", min=0.0, max=1.0)
    index: bpy.props.IntProperty(name="Index", description="Its place in the frame's "
                                 "\"passes_through\" list of the stored report")
    object_a: bpy.props.StringProperty(name="Object A")
    object_b: bpy.props.StringProperty(name="Object B")
    bone_a: bpy.props.StringProperty(name="Bone A")
    bone_b: bpy.props.StringProperty(name="Bone B")
    pairs: bpy.props.IntProperty(name="Pairs", description="Its polygon pairs")


class SKINCOLLIDE_PG_object(bpy.types.PropertyGroup):
    """Per mesh object: where its built collision data lives and what it was built from."""

    data: bpy.props.PointerProperty(type=bpy.types.Text, name="Collision Data")
    signature: bpy.props.StringProperty(name="Rig Signature")
    uid: bpy.props.StringProperty(name="Identity", description="Stable id of the built "
                                  "data (kept through renames; a copy gets its own on build)")
    shape: bpy.props.StringProperty(name="Shape Signature")
    ignore_group: bpy.props.StringProperty(
        name="Ignore Zone", description="Never report pairs with a face of this mesh that "
        "has a vertex in this vertex group (an ignore zone, e.g. a pinned region)")


def _redraw(self, context):
    for window in getattr(context.window_manager, "windows", []):
        for area in window.screen.areas:
            area.tag_redraw()


def _clearance_changed(self, context):
    # Off drops the near results at once; on, or a new distance, queries the frame again
    # (`addon.clearance_settings`, which never raises into Blender's property update).
    from . import clearance_settings

    clearance_settings.settings_changed(context, self.id_data)


class SKINCOLLIDE_PG_settings(bpy.types.PropertyGroup):
    """Scene-wide settings of skin_collide."""

    source: bpy.props.EnumProperty(
        name="Characters", description="Which meshes take part",
        items=[("SELECTED", "Selected", "The selected skinned meshes"),
               ("COLLECTION", "Collection", "The skinned meshes of a collection")],
        default="SELECTED")
    collection: bpy.props.PointerProperty(type=bpy.types.Collection, name="Collection")
    self_collision: bpy.props.BoolProperty(
        name="Self-Collision", description="Also report where a mesh passes through itself",
        default=False)
    method: bpy.props.EnumProperty(
        name="Method", description="The collision method (a rig it cannot bound exactly "
        "gets its fallback: the scan says which was used)",
        items=_method_items, default=registry.ids().index(registry.DEFAULT))
    ignore_rest_contacts: bpy.props.BoolProperty(
        name="Ignore Rest Contacts",
        description="Ignore contacts already present in the rest pose (designed-in overlaps "
                    "such as segmented mannequins or clothing layers)",
        default=False)
    show_triangles: bpy.props.BoolProperty(
        name="Triangles", description="Also draw the colliding triangles (the intersection "
        "curves are always drawn)", default=True, update=_redraw)
    strip_length: bpy.props.BoolProperty(
        name="Strip by Length", description="The timeline strip shows the total crossing "
        "length per frame (touching-only frames vanish) instead of the pair count",
        default=False, update=_redraw)
    ignore_bones: bpy.props.StringProperty(
        name="Ignore Bones", description="Bone pairs whose contacts are fine, e.g. "
        "\"hand.L, hand.R; foot.L, foot.R\" (pairs separated by ';', bones by ',')")
    crossing_only: bpy.props.BoolProperty(
        name="Crossing Only",
        description="Report only contacts where the skin crosses: drop touching ones "
                    "(coplanar faces, faces resting on each other)",
        default=False)
    min_length: bpy.props.FloatProperty(
        name="Min Length", description="Drop contacts whose intersection curve is shorter "
        "than this", default=0.0, min=0.0, subtype="DISTANCE", unit="LENGTH")
    overlay_color: bpy.props.FloatVectorProperty(
        name="Overlay Color", subtype="COLOR", size=4, min=0.0, max=1.0,
        default=(1.0, 0.1, 0.05, 0.7), update=_redraw)
    clearance: bpy.props.BoolProperty(
        name="Clearance", description="Also find where two different characters come "
        "within the distance without touching (near contacts, drawn in the near colour). "
        "Self-clearance is not computed: only pairs of two different objects",
        default=False, update=_clearance_changed)
    clearance_distance: bpy.props.FloatProperty(
        name="Clearance Distance", description="Faces of two different characters closer "
        "than this (and not intersecting) are near contacts. Self-clearance is not "
        "computed", default=0.01, min=0.0, soft_max=0.5, subtype="DISTANCE", unit="LENGTH",
        precision=4, update=_clearance_changed)
    near_color: bpy.props.FloatVectorProperty(
        name="Near Color", description="Colour of the near faces and closest segments",
        subtype="COLOR", size=4, min=0.0, max=1.0, default=(1.0, 0.65, 0.0, 0.6),
        update=_redraw)
    sphere_count: bpy.props.IntProperty(
        name="Spheres", description="Spheres per character for Build Sphere Set (a "
        "variational sphere set, Wang et al. 2006)", min=1, soft_max=512, default=64)
    sphere_seed: bpy.props.IntProperty(
        name="Seed", description="Random seed of the sphere-set fit (the same seed gives "
        "the same set)", min=0, default=0)
    show_spheres: bpy.props.BoolProperty(name="Show Spheres", default=False, update=_redraw)
    sphere_level: bpy.props.IntProperty(name="Sphere Level", min=0, default=3, update=_redraw)
    live: bpy.props.BoolProperty(name="Live Overlay", default=False)
    live_pairs: bpy.props.IntProperty(
        name="Live Pairs", description="Colliding polygon pairs found by the last live update "
        "(frame change or pose edit)", default=0, min=0)
    data_location: bpy.props.EnumProperty(
        name="Data Location",
        description="Where built collision data is kept",
        items=[("FILE", "In the File", "Inside the .blend (compressed, about 1 MB for 27k "
                "triangles): one file to share, nothing to lose"),
               ("DISK", "Disk Cache", "In //skin_collide_cache/ next to the saved .blend, "
                "keyed by the rig: lean scene files; a missing or stale cache is rebuilt "
                "when first needed. Needs a saved file")],
        default="FILE")
    add_markers: bpy.props.BoolProperty(
        name="Markers", description="Place a timeline marker at the first frame of each "
        "collision episode when scanning", default=False)
    between_frames: bpy.props.BoolProperty(
        name="Between Frames", description="Scan Frame Range also checks the motion from "
        "each frame to the next (the skin moving in straight lines between them) and "
        "lists what passes through between frames without touching at either. Slower; "
        "not with First Hit", default=False)
    subframes: bpy.props.IntProperty(
        name="Subframes", description="With Between Frames: samples of the animation per "
        "frame (the motion is taken as straight lines between samples); more for fast "
        "action", default=1, min=1, max=64, soft_max=8)
    frame_counts: bpy.props.CollectionProperty(type=SKINCOLLIDE_PG_frame_count)
    passes: bpy.props.CollectionProperty(type=SKINCOLLIDE_PG_pass, name="Pass-Throughs",
                                         description="The last scan's contacts that pass "
                                         "through between frames (Between Frames)")
    report: bpy.props.PointerProperty(type=bpy.types.Text, name="Last Scan Report")
    # Earlier versions kept rest contacts per scene; now each character's data keeps its
    # own (addon/rest_contacts.py). Still read, and pruned as characters are rebuilt.
    rest_contacts: bpy.props.PointerProperty(type=bpy.types.Text, name="Rest Contacts "
                                             "(earlier versions)")
    last_report: bpy.props.StringProperty(
        name="Last Report", description="The last doctor summary of the active mesh", default="")


CLASSES = (SKINCOLLIDE_PG_frame_count, SKINCOLLIDE_PG_pass, SKINCOLLIDE_PG_object,
           SKINCOLLIDE_PG_settings)


def register() -> None:
    bpy.types.Scene.skin_collide = bpy.props.PointerProperty(type=SKINCOLLIDE_PG_settings)
    bpy.types.Object.skin_collide = bpy.props.PointerProperty(type=SKINCOLLIDE_PG_object)


def unregister() -> None:
    """Remove the properties; those already removed are skipped. With the pip bpy,
    unregistering runs twice for an add-on a script enabled: at exit
    (`skin_collide._unregister_at_exit`), then in Blender's own disable."""
    for owner in (bpy.types.Object, bpy.types.Scene):
        if hasattr(owner, "skin_collide"):
            del owner.skin_collide
