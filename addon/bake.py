"""Bake the current frame's collisions into a face colour attribute, for renders.

Workbench shows it with Color > Attribute; Cycles and EEVEE through an Attribute node
named `ATTRIBUTE`. This writes mesh data, so it is an explicit action, never per frame.
"""
from __future__ import annotations

import numpy as np

ATTRIBUTE = "skin_collide_hits"
HIT = (1.0, 0.02, 0.01, 1.0)
CLEAR = (0.8, 0.8, 0.8, 1.0)


def face_colours(n_faces: int, hit_faces) -> np.ndarray:
    """(n_faces, 4) float32 colours: HIT for `hit_faces`, CLEAR elsewhere."""
    out = np.tile(np.asarray(CLEAR, np.float32), (n_faces, 1))
    idx = np.fromiter(hit_faces, dtype=np.int64)
    out[idx] = HIT
    return out


def write_attribute(ob, hit_faces) -> int:
    """Write the highlight of `hit_faces` (polygon indices) on mesh object `ob`; the
    attribute becomes the active and the render colour. Returns the number of faces.

    Stored per face corner (each face's colour on all its corners): Blender lists only
    point and corner colours as colour attributes, and Workbench shows only those.
    """
    me = ob.data
    attr = me.color_attributes.get(ATTRIBUTE)
    if attr is not None and (attr.domain != "CORNER" or attr.data_type != "FLOAT_COLOR"):
        me.color_attributes.remove(attr)
        attr = None
    if attr is None:
        attr = me.color_attributes.new(ATTRIBUTE, "FLOAT_COLOR", "CORNER")
    hits = set(hit_faces)
    loop_total = np.empty(len(me.polygons), dtype=np.int32)
    me.polygons.foreach_get("loop_total", loop_total)
    per_loop = np.repeat(face_colours(len(me.polygons), hits), loop_total, axis=0)
    attr.data.foreach_set("color", per_loop.ravel())
    index = [a.name for a in me.color_attributes].index(ATTRIBUTE)
    me.color_attributes.active_color_index = index
    me.color_attributes.render_color_index = index
    me.update()
    return len(hits)


def highlight_material(name: str = "SkinCollide Highlight"):
    """A material that shows the baked attribute (emission), made once per file."""
    import bpy

    mat = bpy.data.materials.get(name)
    if mat is not None:
        return mat
    mat = bpy.data.materials.new(name)
    if bpy.app.version < (5, 0, 0):   # always node-based from 5.0 on
        mat.use_nodes = True
    nt = mat.node_tree
    for node in list(nt.nodes):
        if node.type != "OUTPUT_MATERIAL":
            nt.nodes.remove(node)
    attr = nt.nodes.new("ShaderNodeAttribute")
    attr.attribute_name = ATTRIBUTE
    emit = nt.nodes.new("ShaderNodeEmission")
    nt.links.new(attr.outputs["Color"], emit.inputs["Color"])
    out = next(n for n in nt.nodes if n.type == "OUTPUT_MATERIAL")
    nt.links.new(emit.outputs["Emission"], out.inputs["Surface"])
    return mat


def render_preview(scene, meshes, path: str, size: tuple[int, int] = (240, 320),
                   samples: int = 4) -> np.ndarray:
    """Render the baked highlight of `meshes` headless with Cycles (CPU, no GPU libraries
    needed): an orthographic camera facing +Y, framed on the meshes, the highlight
    material on their object slots. Returns the pixels (H, W, 4) float32.

    Changes the scene (camera, engine, resolution, object materials): meant for a scratch
    scene or file, such as a pipeline check or a test.
    """
    import bpy

    dg = bpy.context.evaluated_depsgraph_get()
    from . import extract

    pts = np.concatenate([extract.evaluated_positions(ob, dg) for ob in meshes])
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    centre, extent = (lo + hi) / 2, hi - lo
    cam_data = bpy.data.cameras.new("skin_collide_preview")
    cam_data.type = "ORTHO"
    cam_data.ortho_scale = 1.05 * max(extent[0] * size[1] / size[0], extent[2])
    cam = bpy.data.objects.new("skin_collide_preview", cam_data)
    scene.collection.objects.link(cam)
    cam.location = (centre[0], lo[1] - extent[1] - 1.0, centre[2])
    cam.rotation_euler = (np.pi / 2, 0.0, 0.0)
    cam_data.clip_end = 10 * float(extent.max()) + 10
    scene.camera = cam
    mat = highlight_material()
    for ob in meshes:
        if not ob.material_slots:
            ob.data.materials.append(None)
        for slot in ob.material_slots:
            slot.link = "OBJECT"
            slot.material = mat
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.render.resolution_x, scene.render.resolution_y = size
    scene.render.resolution_percentage = 100
    # Standard view transform: AgX/Filmic would desaturate the highlight's red.
    scene.view_settings.view_transform = "Standard"
    scene.render.filepath = path
    scene.render.image_settings.file_format = "PNG"
    bpy.ops.render.render(write_still=True)
    img = bpy.data.images.load(path, check_existing=False)
    px = np.empty(size[0] * size[1] * 4, dtype=np.float32)
    img.pixels.foreach_get(px)
    bpy.data.images.remove(img)
    return px.reshape(size[1], size[0], 4)


def red_pixels(pixels: np.ndarray) -> int:
    """How many pixels show the highlight colour."""
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    return int(((r > 0.6) & (g < 0.25) & (b < 0.25)).sum())
