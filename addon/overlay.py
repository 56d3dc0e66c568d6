"""Drawing: the colliding triangles in the viewport and a per-frame strip in the timeline.

Building what to draw is done by pure functions over numpy arrays (tested headless); the
draw callbacks only hand those arrays to `gpu`, which is unavailable in background mode.
"""
from __future__ import annotations

import sys

import numpy as np

from .state import STATE

#: The default near colour (`SKINCOLLIDE_PG_settings.near_color`): amber.
NEAR_COLOUR = (1.0, 0.65, 0.0, 0.6)
#: The colour of the timeline's marks of steps with pass-throughs (Between Frames): violet,
#: apart from the red colliding frames and the amber near ones.
PASS_COLOUR = (0.6, 0.3, 1.0, 0.9)
#: Height of those marks in pixels: a band just above the frames' strip.
PASS_HEIGHT = 3.0

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
                   bottom: float = 0.0, near: np.ndarray | None = None,
                   near_colour=NEAR_COLOUR) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles of the collision strip in the timeline.

    Args:
        frames: (F,) int frames; counts: (F,) int colliding pairs per frame.
        frame_to_x: maps an array of frame numbers to region x pixels.
        height: strip height in pixels; bottom: its lower edge.
        near: optional (F,) int near contacts per frame, counted only where the frame has
            no intersection (`strip_near`); those frames are drawn in `near_colour`
            (RGBA, its alpha as given), the colliding ones as without it.
    Returns:
        vertices (6K, 2) float32 (two triangles per marked frame) and colours (6K, 4)
        float32: red growing more opaque with the count, then the near frames.
    """
    keep = counts > 0
    f, n = frames[keep].astype(np.float64), counts[keep].astype(np.float64)
    near_f = np.zeros(0)
    if near is not None:
        near_f = frames[(np.asarray(near) > 0) & ~keep].astype(np.float64)
    if f.size == 0 and near_f.size == 0:
        return np.zeros((0, 2), np.float32), np.zeros((0, 4), np.float32)
    quads = _frame_quads(np.r_[f, near_f], frame_to_x, height, bottom)
    colours = np.zeros((f.size + near_f.size, 4))
    if f.size:
        alpha = 0.35 + 0.65 * np.log1p(n) / np.log1p(n.max())
        colours[:f.size] = np.stack([np.ones_like(alpha), 0.15 + 0 * alpha,
                                     0.1 + 0 * alpha, alpha], 1)
    colours[f.size:] = np.asarray(tuple(near_colour), dtype=np.float64)[:4]
    colours = np.repeat(colours[:, None], 6, axis=1)
    return quads.reshape(-1, 2).astype(np.float32), colours.reshape(-1, 4).astype(np.float32)


def _frame_quads(f: np.ndarray, frame_to_x, height: float, bottom: float) -> np.ndarray:
    """(K, 6, 2) float64: two triangles covering each frame of `f` ((K,) float64)."""
    x0 = np.asarray(frame_to_x(f - 0.5), dtype=np.float64)
    x1 = np.asarray(frame_to_x(f + 0.5), dtype=np.float64)
    y0, y1 = np.full_like(x0, bottom), np.full_like(x0, bottom + height)
    return np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1),
                     np.stack([x0, y0], 1), np.stack([x1, y1], 1), np.stack([x0, y1], 1)], 1)


def step_marks(starts: np.ndarray, ends: np.ndarray, frame_to_x, height: float,
               bottom: float = 0.0, colour=PASS_COLOUR) -> tuple[np.ndarray, np.ndarray]:
    """Rectangles of the steps with pass-throughs (Between Frames) in the timeline: each
    spans its step, from its frame to the next checked one.

    Args:
        starts, ends: (S,) the steps' first frames and ends (`strip_passes`).
        frame_to_x: maps an array of frame numbers to region x pixels.
        height: the marks' height in pixels; bottom: their lower edge.
        colour: RGBA.
    Returns:
        vertices (6S, 2) float32 (two triangles per step) and colours (6S, 4) float32.
    """
    a = np.asarray(starts, dtype=np.float64).reshape(-1)
    b = np.asarray(ends, dtype=np.float64).reshape(-1)
    if a.size == 0:
        return np.zeros((0, 2), np.float32), np.zeros((0, 4), np.float32)
    x0 = np.asarray(frame_to_x(a), dtype=np.float64)
    x1 = np.asarray(frame_to_x(b), dtype=np.float64)
    y0, y1 = np.full_like(x0, bottom), np.full_like(x0, bottom + height)
    quads = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1),
                      np.stack([x0, y0], 1), np.stack([x1, y1], 1), np.stack([x0, y1], 1)], 1)
    colours = np.broadcast_to(np.asarray(tuple(colour), np.float64)[:4], (a.size * 6, 4))
    return quads.reshape(-1, 2).astype(np.float32), colours.astype(np.float32)


# The 12 edges of a box, as pairs of corner indices (corner k: bits x, y, z of k).
_BOX_EDGES = np.array([(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7),
                       (0, 4), (1, 5), (2, 6), (3, 7)])


def box_wires(corners: np.ndarray) -> np.ndarray:
    """(n, 8, 3) box corners -> (n * 24, 3) float32 LINES vertices (12 edges each)."""
    return corners[:, _BOX_EDGES.ravel(), :].reshape(-1, 3).astype(np.float32)


def drawable_wires(d) -> np.ndarray:
    """A method's `Drawable` as LINES vertices."""
    parts = []
    if d.centers is not None and d.radii is not None and len(d.radii):
        parts.append(sphere_wires(np.asarray(d.centers), np.asarray(d.radii)))
    if d.corners is not None and len(d.corners):
        parts.append(box_wires(np.asarray(d.corners)))
    return np.concatenate(parts) if parts else np.zeros((0, 3), np.float32)


def _level_wires(res, name: str, obj, pos: np.ndarray, level: int, k: int = -1) -> np.ndarray:
    """Wireframes of one level of the object's volumes at this frame, computed once per
    frame and level (draws repeat often): the method's own (`Method.drawable`: sphere
    sets, boxes ...) when it has them and the pose is known, else those of the method
    every object can use (`registry.any_object()`: the sphere tree's exact balls)."""
    from ..core.methods import registry
    from ..core.types import Frame

    key = (name, level)
    if key in res.spheres:
        return res.spheres[key]
    poses = getattr(res, "poses", None) or []
    pose = poses[k] if 0 <= k < len(poses) else None
    frame = Frame(pos, object_triangles(res, k, obj), pose)
    d = None
    if pose is not None:
        d = registry.get(obj.method).drawable(obj.rig, obj.data, frame, level)
    if d is None:
        anyone = registry.any_object()
        d = anyone.drawable(obj.rig, obj.data_for(anyone), frame, level)
    res.spheres[key] = drawable_wires(d)
    return res.spheres[key]


def object_triangles(res, k: int, obj) -> np.ndarray:
    """The triangles the result's hit indices refer to: the frame's own triangulation when
    the result carries it, else the rest mesh's."""
    own = getattr(res, "triangles", None)
    if own is not None and k < len(own) and own[k] is not None:
        return own[k]
    return obj.rig.triangles


def result_arrays(res, objects: dict, show_spheres: bool, level: int):
    """The TRIS vertices of the colliding triangles and the sphere LINES (if shown) of a
    result.

    Args:
        res: a `session.LiveResult`; objects: object name -> its `CollisionObject` (names
            missing from it are skipped).
    Returns:
        (3H, 3) float32 and (L, 3) float32.
    """
    tris, lines = [], []
    if res is None or res.error:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)
    for k, (name, pos, hit) in enumerate(zip(res.names, res.positions, res.hit_triangles)):
        obj = objects.get(name)
        if obj is None:
            continue
        if hit.size:
            tris.append(triangle_overlay(pos, object_triangles(res, k, obj), hit))
        if show_spheres:
            lines.append(_level_wires(res, name, obj, pos, level, k))
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros((0, 3), np.float32)  # noqa: E731
    return cat(tris), cat(lines)


def contact_lines(res) -> np.ndarray:
    """The intersection curves of a result's contacts (`core.contacts.groups`), as a
    LINES batch's vertices: (2S, 3) float32, two per segment."""
    found = getattr(res, "contacts", None) or [] if res is not None else []
    segs = [c.segments for c in found if c.segments.size]
    if not segs:
        return np.zeros((0, 3), np.float32)
    return np.concatenate(segs).reshape(-1, 3).astype(np.float32)


def near_arrays(res, objects: dict) -> tuple[np.ndarray, np.ndarray]:
    """What the overlay draws in the near colour for a result with Clearance on: the TRIS
    vertices of its near triangles (`LiveResult.near_triangles`, intersecting ones left
    out) and the closest segment of each near contact (`addon.clearance.near_segments`).

    Args:
        res: a `session.LiveResult`; objects: object name -> its `CollisionObject`.
    Returns:
        (3N, 3) float32 and (2S, 3) float32.
    """
    from .clearance import near_segments

    empty = np.zeros((0, 3), np.float32)
    found = getattr(res, "near_contacts", None) or [] if res is not None else []
    if not found or res.error:
        return empty, empty
    tris = []
    near = getattr(res, "near_triangles", None) or []
    for k, (name, pos) in enumerate(zip(res.names, res.positions)):
        obj = objects.get(name)
        if obj is None or k >= len(near) or not near[k].size:
            continue
        tris.append(triangle_overlay(pos, object_triangles(res, k, obj), near[k]))
    return (np.concatenate(tris) if tris else empty), near_segments(found)


#: Width of the intersection curves, in pixels.
CURVE_WIDTH = 3.0
#: Width of the near contacts' closest segments, in pixels.
NEAR_WIDTH = 2.0


class _Drawn:
    """What the viewport draws for one result: built once, reused by every redraw until
    the result or the sphere settings change (a redraw then costs only the draw calls)."""

    __slots__ = ("res", "key", "tris", "lines", "batches", "curves", "curve_batch",
                 "line_batches", "near_tris", "near_lines", "near_batches", "near_line_batch")

    def __init__(self, res, key, tris, lines, near_tris=None, near_lines=None):
        self.res, self.key, self.tris, self.lines = res, key, tris, lines
        empty = np.zeros((0, 3), np.float32)
        self.near_tris = empty if near_tris is None else near_tris     # near colour
        self.near_lines = empty if near_lines is None else near_lines  # closest segments
        self.near_batches = None
        self.near_line_batch = None
        self.batches = None          # (tris batch | None, lines batch | None, shader)
        self.curves = None           # the contacts' curves, made on first draw
        self.curve_batch = None      # (batch, shader)
        self.line_batches = None     # the sphere lines alone (Triangles off)




def _drawn_for(scene) -> _Drawn:
    from . import session, storage

    res = session.live_result(scene)
    s = scene.skin_collide
    key = (bool(s.show_spheres), int(s.sphere_level))
    d = STATE.drawn.get(scene.name_full)
    if d is not None and d.res is res and d.key == key:
        return d
    objects = {}
    if res is not None and not res.error:
        by_name = {ob.name_full: ob for ob in scene.objects}   # results use full names
        for name in res.names:
            ob = by_name.get(name)
            if ob is not None and storage.has_data(ob):
                objects[name] = storage.load(ob)
    tris, lines = result_arrays(res, objects, *key)
    STATE.build_count += 1
    d = STATE.drawn[scene.name_full] = _Drawn(res, key, tris, lines, *near_arrays(res, objects))
    return d


def live_batches(scene):
    """The viewport's TRIS vertices (and sphere LINES, if shown) for the scene's last
    result, built once per result."""
    d = _drawn_for(scene)
    return d.tris, d.lines


def live_near_batches(scene):
    """The viewport's near-colour TRIS vertices and closest-segment LINES vertices for the
    scene's last result (Clearance on), built once per result."""
    d = _drawn_for(scene)
    return d.near_tris, d.near_lines


def forget_drawn() -> None:
    STATE.drawn.clear()


# -- draw callbacks (thin: gpu is unavailable in background mode until a GPU context
#    exists; see addon/snapshot.py) -----------------------------------------------------------

_handles: dict[str, object] = {}


def _guarded(name: str):
    """Catch a draw callback's exception: report it once on stderr, draw nothing."""
    import functools

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            try:
                return fn(*args)
            except Exception as exc:  # noqa: BLE001 - a draw callback must never raise
                msg = f"{type(exc).__name__}: {exc}".splitlines()[0]
                if STATE.draw_errors.get(name) != msg:
                    STATE.draw_errors[name] = msg
                    print(f"skin_collide: the {name} overlay failed and draws nothing: {msg}",
                          file=sys.stderr)
                return None
        return wrapper
    return deco


def draw_arrays(tris: np.ndarray, lines: np.ndarray, colour, batches=None):
    """Draw highlight triangles (and sphere lines) in the current 3D matrices, depth-tested.

    `batches` (from an earlier call's return value) are reused when given. Returns the
    batches, for reuse.
    """
    import gpu
    from gpu_extras.batch import batch_for_shader

    if batches is None:
        shader = gpu.shader.from_builtin("UNIFORM_COLOR")
        batches = (batch_for_shader(shader, "TRIS", {"pos": tris}) if tris.size else None,
                   batch_for_shader(shader, "LINES", {"pos": lines}) if lines.size else None,
                   shader)
    tb, lb, shader = batches
    colour = tuple(colour)
    gpu.state.blend_set("ALPHA")
    gpu.state.depth_test_set("LESS_EQUAL")
    if tb is not None:
        shader.uniform_float("color", colour)
        tb.draw(shader)
    if lb is not None:
        shader.uniform_float("color", (colour[0], colour[1], colour[2], 0.35))
        lb.draw(shader)
    gpu.state.depth_test_set("NONE")
    gpu.state.blend_set("NONE")
    return batches


@_guarded("3D View")
def _draw_view3d():
    import bpy

    scene = bpy.context.scene
    if scene is None or not scene.skin_collide.live:
        return
    d = _drawn_for(scene)
    s = scene.skin_collide
    if s.show_triangles and (d.tris.size or d.lines.size):
        d.batches = draw_arrays(d.tris, d.lines, s.overlay_color, d.batches)
    elif not s.show_triangles and d.lines.size:
        d.line_batches = draw_arrays(np.zeros((0, 3), np.float32), d.lines, s.overlay_color,
                                     d.line_batches)
    if s.show_triangles and d.near_tris.size:
        d.near_batches = draw_arrays(d.near_tris, np.zeros((0, 3), np.float32), s.near_color,
                                     d.near_batches)
    if d.near_lines.size:
        d.near_line_batch = draw_curves(d.near_lines, s.near_color, d.near_line_batch,
                                        width=NEAR_WIDTH)
    if d.curves is None:
        d.curves = contact_lines(d.res) if d.res is not None and not d.res.error else \
            np.zeros((0, 3), np.float32)
    if d.curves.size:
        d.curve_batch = draw_curves(d.curves, scene.skin_collide.overlay_color, d.curve_batch)


def draw_curves(curves: np.ndarray, colour, batch=None, width: float = CURVE_WIDTH):
    """Draw intersection curves as thick opaque lines in the overlay colour, on top of
    everything (visible through the mesh, like a cutting line). Returns the batch and
    shader, for reuse."""
    import gpu
    from gpu_extras.batch import batch_for_shader

    if batch is None:
        shader = gpu.shader.from_builtin("POLYLINE_UNIFORM_COLOR")
        batch = (batch_for_shader(shader, "LINES", {"pos": curves}), shader)
    b, shader = batch
    vp = gpu.state.viewport_get()
    shader.uniform_float("viewportSize", (float(vp[2]), float(vp[3])))
    shader.uniform_float("lineWidth", float(width))
    shader.uniform_float("color", (colour[0], colour[1], colour[2], 1.0))
    gpu.state.depth_test_set("NONE")
    b.draw(shader)
    return batch


def strip_arrays(scene) -> tuple[np.ndarray, np.ndarray]:
    """Frames and pair counts of the last scan, (F,) int each; with *Strip by Length*,
    the frames' total crossing lengths instead ((F,) float32)."""
    fc = scene.skin_collide.frame_counts
    frames, counts = _per_frame(fc, "frame", "pairs")
    if getattr(scene.skin_collide, "strip_length", False):
        return frames, _per_frame(fc, "crossing", dtype=np.float32)[0]
    return frames, counts


def _per_frame(fc, *fields: str, dtype=np.int32) -> list[np.ndarray]:
    """The scan's per-frame values `fields` of the collection `fc`, (F,) `dtype` each."""
    out = [np.zeros(len(fc), dtype) for _ in fields]
    if len(fc):
        for name, arr in zip(fields, out):
            fc.foreach_get(name, arr)
    return out


def strip_near(scene) -> np.ndarray:
    """(F,) int32, per frame of the last scan (`strip_arrays`' order): its near contacts
    (scanned with Clearance on) where the frame has no intersection, else 0 (a colliding
    or unchecked frame is marked as such, not as near)."""
    near, pairs = _per_frame(scene.skin_collide.frame_counts, "near", "pairs")
    near[pairs != 0] = 0
    return near


def strip_passes(scene) -> tuple[np.ndarray, np.ndarray]:
    """The last scan's steps with pass-throughs (scanned with Between Frames): their first
    frames and ends, (S,) float64 each, in frame order; empty otherwise."""
    fc = scene.skin_collide.frame_counts
    frames, passes = _per_frame(fc, "frame", "passes")
    step_to = _per_frame(fc, "step_to", dtype=np.float32)[0].astype(np.float64)
    frames = frames.astype(np.float64)
    keep = (passes > 0) & (step_to > frames)
    return frames[keep], step_to[keep]


@_guarded("timeline")
def _draw_timeline():
    import bpy
    import gpu
    from gpu_extras.batch import batch_for_shader

    scene = bpy.context.scene
    region = bpy.context.region
    if scene is None or region is None or not len(scene.skin_collide.frame_counts):
        return
    frames, counts = strip_arrays(scene)
    v2d = region.view2d
    # view -> region x is affine: two points give it for every frame at once.
    x0 = v2d.view_to_region(0.0, 0.0, clip=False)[0]
    x1 = v2d.view_to_region(1000.0, 0.0, clip=False)[0]
    scale = (x1 - x0) / 1000.0
    verts, colours = timeline_strip(frames, counts, lambda f: x0 + scale * f,
                                    height=6.0, bottom=2.0, near=strip_near(scene),
                                    near_colour=scene.skin_collide.near_color)
    starts, ends = strip_passes(scene)
    if starts.size:
        pv, pc = step_marks(starts, ends, lambda f: x0 + scale * f, PASS_HEIGHT, bottom=9.0)
        verts, colours = np.concatenate([verts, pv]), np.concatenate([colours, pc])
    if not verts.size:
        return
    shader = gpu.shader.from_builtin("SMOOTH_COLOR")
    gpu.state.blend_set("ALPHA")
    batch_for_shader(shader, "TRIS", {"pos": verts, "color": colours}).draw(shader)
    gpu.state.blend_set("NONE")


def enable_drawing() -> None:
    """Add the draw handlers (no-op in background mode, where Blender never draws regions;
    the tests and `addon/snapshot.py` call the callbacks themselves)."""
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
    STATE.drawn.clear()
    STATE.draw_errors.clear()
