"""Drawing: the colliding triangles in the viewport and a per-frame strip in the timeline.

Building what to draw is done by pure functions over numpy arrays (tested headless); the
draw callbacks only hand those arrays to `gpu`, which is unavailable in background mode.
"""
from __future__ import annotations

import numpy as np

# The highlight floats this fraction of the triangle's size off the surface, so it does
# not z-fight with the mesh.
OFFSET = 0.02


def triangle_overlay(positions: np.ndarray, triangles: np.ndarray, hit: np.ndarray,
                     offset: float = OFFSET) -> np.ndarray:
    """Vertices of the highlight triangles, pushed out along their normals.

    Args:
        positions: (V, 3) float64 world positions; triangles: (T, 3) int; hit: (H,) int
            triangle indices to draw.
    Returns:
        (3H, 3) float32, three vertices per triangle (a TRIS batch).
    """
    p = positions[triangles[hit]]                                  # (H, 3, 3)
    n = np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0])
    length = np.linalg.norm(n, axis=1, keepdims=True)
    size = np.sqrt(np.maximum(length, 1e-30))                      # ~ the triangle's scale
    n = n / np.maximum(length, 1e-30)
    return (p + (offset * size * n)[:, None, :]).reshape(-1, 3).astype(np.float32)


def sphere_wires(centers: np.ndarray, radii: np.ndarray, segments: int = 24) -> np.ndarray:
    """Three great circles per sphere as line segments.

    Args:
        centers: (S, 3) float64; radii: (S,) float64.
    Returns:
        (S * 3 * segments * 2, 3) float32 (a LINES batch).
    """
    t = np.linspace(0, 2 * np.pi, segments + 1)
    c, s = np.cos(t), np.sin(t)
    z = np.zeros_like(t)
    rings = np.stack([np.stack([c, s, z], 1), np.stack([c, z, s], 1), np.stack([z, c, s], 1)])
    seg = np.stack([rings[:, :-1], rings[:, 1:]], axis=2).reshape(-1, 3)   # (3*segments*2, 3)
    out = centers[:, None, :] + radii[:, None, None] * seg[None]
    return out.reshape(-1, 3).astype(np.float32)


def timeline_strip(frames: np.ndarray, counts: np.ndarray, frame_to_x, height: float,
                   bottom: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles of the collision strip in the timeline.

    Args:
        frames: (F,) int frames; counts: (F,) int colliding pairs per frame.
        frame_to_x: maps an array of frame numbers to region x pixels.
        height: strip height in pixels; bottom: its lower edge.
    Returns:
        vertices (6K, 2) float32 (two triangles per colliding frame) and colours (6K, 4)
        float32, red growing more opaque with the count.
    """
    keep = counts > 0
    f, n = frames[keep].astype(np.float64), counts[keep].astype(np.float64)
    if f.size == 0:
        return np.zeros((0, 2), np.float32), np.zeros((0, 4), np.float32)
    x0 = np.asarray(frame_to_x(f - 0.5), dtype=np.float64)
    x1 = np.asarray(frame_to_x(f + 0.5), dtype=np.float64)
    y0, y1 = np.full_like(x0, bottom), np.full_like(x0, bottom + height)
    quads = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1),
                      np.stack([x0, y0], 1), np.stack([x1, y1], 1), np.stack([x0, y1], 1)], 1)
    alpha = 0.35 + 0.65 * np.log1p(n) / np.log1p(n.max())
    colours = np.repeat(np.stack([np.ones_like(alpha), 0.15 + 0 * alpha, 0.1 + 0 * alpha,
                                  alpha], 1)[:, None], 6, axis=1)
    return quads.reshape(-1, 2).astype(np.float32), colours.reshape(-1, 4).astype(np.float32)


def _level_wires(res, name: str, obj, pos: np.ndarray, level: int) -> np.ndarray:
    """Wireframes of one tree level's spheres at this frame: the exact balls of those
    nodes' deformed vertices, computed once per frame and level (draws repeat often)."""
    from ..core.balls import minimal_balls

    lp = obj.tree.level_ptr
    level = min(level, lp.size - 2)
    key = (name, level)
    if key not in res.spheres:
        ptr = obj.tree.node_vert_ptr[lp[level]:lp[level + 1] + 1]
        verts = obj.tree.node_verts[ptr[0]:ptr[-1]]
        c, r = minimal_balls(pos[verts], ptr - ptr[0])
        res.spheres[key] = sphere_wires(c, r)
    return res.spheres[key]


def live_batches(scene):
    """The viewport's TRIS vertices (and sphere LINES, if shown) for the scene's last result."""
    from . import session, storage

    res = session.live_result(scene)
    s = scene.skin_collide
    tris, lines = [], []
    if res is None or res.error:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)
    for name, pos, ftris, hit in zip(res.names, res.positions, res.triangles,
                                     res.hit_triangles):
        ob = scene.objects.get(name)
        if ob is None or not storage.has_data(ob):
            continue
        obj = storage.load(ob)
        if hit.size:
            # The frame's own triangles: Blender re-splits deformed quads per frame.
            tris.append(triangle_overlay(pos, ftris, hit))
        if s.show_spheres:
            lines.append(_level_wires(res, name, obj, pos, s.sphere_level))
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros((0, 3), np.float32)  # noqa: E731
    return cat(tris), cat(lines)


# -- draw callbacks (thin: gpu is unavailable in background mode) ---------------------------

_handles: dict[str, object] = {}


def _draw_view3d():
    import bpy
    import gpu
    from gpu_extras.batch import batch_for_shader

    scene = bpy.context.scene
    if scene is None or not scene.skin_collide.live:
        return
    tris, lines = live_batches(scene)
    colour = tuple(scene.skin_collide.overlay_color)
    shader = gpu.shader.from_builtin("UNIFORM_COLOR")
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("LESS_EQUAL")
    if tris.size:
        shader.uniform_float("color", colour)
        batch_for_shader(shader, "TRIS", {"pos": tris}).draw(shader)
    if lines.size:
        shader.uniform_float("color", (colour[0], colour[1], colour[2], 0.35))
        batch_for_shader(shader, "LINES", {"pos": lines}).draw(shader)
    gpu.state.depth_test_set("NONE")
    gpu.state.blend_set("NONE")


def _draw_timeline():
    import bpy
    import gpu
    from gpu_extras.batch import batch_for_shader

    scene = bpy.context.scene
    region = bpy.context.region
    if scene is None or region is None or not len(scene.skin_collide.frame_counts):
        return
    fc = scene.skin_collide.frame_counts
    frames = np.array([item.frame for item in fc])
    counts = np.array([item.pairs for item in fc])
    v2d = region.view2d
    to_x = np.vectorize(lambda f: v2d.view_to_region(float(f), 0.0, clip=False)[0])
    verts, colours = timeline_strip(frames, counts, to_x, height=6.0, bottom=2.0)
    if not verts.size:
        return
    shader = gpu.shader.from_builtin("SMOOTH_COLOR")
    gpu.state.blend_set("ALPHA")
    batch_for_shader(shader, "TRIS", {"pos": verts, "color": colours}).draw(shader)
    gpu.state.blend_set("NONE")


def enable_drawing() -> None:
    """Add the draw handlers (no-op in background mode, where gpu drawing does not exist)."""
    import bpy

    if bpy.app.background or _handles:
        return
    _handles["view3d"] = bpy.types.SpaceView3D.draw_handler_add(
        _draw_view3d, (), "WINDOW", "POST_VIEW")
    _handles["timeline"] = bpy.types.SpaceDopeSheetEditor.draw_handler_add(
        _draw_timeline, (), "WINDOW", "POST_PIXEL")


def disable_drawing() -> None:
    import bpy

    if "view3d" in _handles:
        bpy.types.SpaceView3D.draw_handler_remove(_handles.pop("view3d"), "WINDOW")
    if "timeline" in _handles:
        bpy.types.SpaceDopeSheetEditor.draw_handler_remove(_handles.pop("timeline"), "WINDOW")
