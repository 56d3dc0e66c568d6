"""A shot whose renders draw other surfaces than its viewport (issue 55, `--as-rendered`):
the demo's two tube characters passing through each other, each with a Subdivision Surface
at viewport level 0 / render level 2 after its Armature modifier and a render-only Displace
(no texture: every vertex pushed out along its normal), the light-viewport / smooth-render
set-up. Built with the bpy module in the current session."""
from __future__ import annotations

#: the Displace's strength (scene units along the normal; no texture, mid level 0.5)
DISPLACE = 0.08


def make_render_shot(bpy, rings: int = 12, segments: int = 8, frames: int = 12,
                     camera: bool = False) -> list:
    """The two characters (Left, Right) in a fresh scene; returns their mesh objects."""
    from skin_collide.addon import demo_rig

    meshes = demo_rig.build_demo_scene(rings=rings, segments=segments, frames=frames)
    for ob in meshes:
        sub = ob.modifiers.new("Subdivision", "SUBSURF")
        sub.levels, sub.render_levels = 0, 2
        disp = ob.modifiers.new("Displace", "DISPLACE")
        disp.strength = 2.0 * DISPLACE
        disp.show_viewport, disp.show_render = False, True
    if camera:
        cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
        bpy.context.scene.collection.objects.link(cam)
        bpy.context.scene.camera = cam
    bpy.context.scene.frame_set(1)
    return list(meshes)


def save_render_shot(bpy, path, **kwargs) -> list[str]:
    """`make_render_shot` saved to `path`; the mesh names."""
    meshes = make_render_shot(bpy, **kwargs)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return [m.name for m in meshes]


def add_is_viewport_subdivision(bpy, ob, level: int = 1):
    """A Geometry Nodes modifier on `ob` (after its stack) that subdivides the mesh
    (Subdivide Mesh, `level`) only where *Is Viewport* is false: in renders."""
    ng = bpy.data.node_groups.new("Subdivide in renders", "GeometryNodeTree")
    ng.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    ng.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    n, link = ng.nodes, ng.links.new
    inp, out = n.new("NodeGroupInput"), n.new("NodeGroupOutput")
    is_viewport = n.new("GeometryNodeIsViewport")
    sub = n.new("GeometryNodeSubdivideMesh")
    sub.inputs["Level"].default_value = level
    switch = n.new("GeometryNodeSwitch")
    switch.input_type = "GEOMETRY"
    link(inp.outputs[0], sub.inputs["Mesh"])
    link(is_viewport.outputs["Is Viewport"], switch.inputs["Switch"])
    link(sub.outputs[0], switch.inputs["False"])
    link(inp.outputs[0], switch.inputs["True"])
    link(switch.outputs[0], out.inputs[0])
    mod = ob.modifiers.new("Render detail", "NODES")
    mod.node_group = ng
    return mod
