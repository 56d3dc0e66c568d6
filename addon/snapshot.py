"""Pictures of the viewport as the artist sees it, headless: solid shading, the colliding
triangles drawn by the overlay's own code, framed on the collision.

Blender's `gpu` module raises in background mode until a GPU context exists; rendering one
tiny Workbench frame creates one (Mesa's llvmpipe without a display; needs Mesa EGL:
Debian `libegl-mesa0 libgl1-mesa-dri libgbm1`). `GPUOffScreen.draw_view3d` then draws the
real viewport, and the overlay callback is called inside the same offscreen with the same
matrices (`draw_view3d` does not call `POST_VIEW` handlers itself).
"""
from __future__ import annotations

import math
import os

import numpy as np

from . import evaluation


class GPUUnavailable(RuntimeError):
    """No GPU context can be made here (usually: Mesa's EGL libraries are missing)."""


_warm = False
# The overlay's default colour (addon/properties.py), for scenes without the add-on's settings.
DEFAULT_COLOUR = (1.0, 0.1, 0.05, 0.7)


def ensure_gpu() -> None:
    """Make `gpu` usable in background mode by rendering one 16x16 Workbench frame of a
    throw-away scene (once per process). Raises GPUUnavailable when that fails."""
    global _warm
    if _warm:
        return
    import bpy

    scene = bpy.data.scenes.new(".skin_collide_warmup")
    cam_data = bpy.data.cameras.new(".skin_collide_warmup")
    cam = bpy.data.objects.new(".skin_collide_warmup", cam_data)
    try:
        scene.collection.objects.link(cam)
        scene.camera = cam
        scene.render.engine = "BLENDER_WORKBENCH"
        scene.render.resolution_x = scene.render.resolution_y = 16
        bpy.ops.render.render(scene=scene.name)
        import gpu

        gpu.shader.from_builtin("UNIFORM_COLOR")
    except (RuntimeError, SystemError) as exc:
        raise GPUUnavailable(f"no GPU context for drawing ({str(exc).strip()}); headless "
                             "drawing needs Mesa EGL (Debian: libegl-mesa0 libgl1-mesa-dri "
                             "libgbm1)") from None
    finally:
        bpy.data.objects.remove(cam)
        bpy.data.cameras.remove(cam_data)
        bpy.data.scenes.remove(scene)
    _warm = True


def area_of_type(kind: str):
    """(window, area, WINDOW region, space) of the first area of `kind` in the headless
    window's screen; the largest other area is switched to `kind` when there is none."""
    import bpy

    window = bpy.context.window_manager.windows[0]
    areas = list(window.screen.areas)
    area = next((a for a in areas if a.type == kind), None)
    if area is None:
        area = max((a for a in areas if a.type != "VIEW_3D"), key=lambda a: a.width * a.height)
        area.type = kind
    region = next(r for r in area.regions if r.type == "WINDOW")
    return window, area, region, area.spaces.active


# -- framing (pure) ----------------------------------------------------------------------------

def look_at(center: np.ndarray, radius: float, direction: np.ndarray, aspect: float,
            fov: float = math.radians(35.0)) -> tuple[np.ndarray, np.ndarray]:
    """View and projection matrices that frame the sphere (center, radius) seen from
    `direction` (pointing from the centre towards the eye), OpenGL conventions.

    Args:
        center: (3,) float; direction: (3,) float, not vertical; aspect: width / height.
    Returns:
        view (4, 4) float64 (world -> camera, camera looks down -Z, +Z world up) and
        projection (4, 4) float64.
    """
    d = np.asarray(direction, np.float64)
    d = d / np.linalg.norm(d)
    half = fov / 2 if aspect >= 1 else math.atan(math.tan(fov / 2) * aspect)
    # tan, not sin: the sphere's silhouette may touch the border; its content (a box's
    # corners, on the sphere) rarely does.
    dist = 1.05 * radius / math.tan(half)
    eye = np.asarray(center, np.float64) + dist * d
    x = np.cross([0.0, 0.0, 1.0], d)
    x /= np.linalg.norm(x)
    y = np.cross(d, x)
    view = np.eye(4)
    view[0, :3], view[1, :3], view[2, :3] = x, y, d
    view[:3, 3] = -view[:3, :3] @ eye
    near, far = dist * 0.01, dist * 100.0
    f = 1.0 / math.tan(fov / 2)
    proj = np.zeros((4, 4))
    proj[0, 0], proj[1, 1] = f / aspect, f
    proj[2, 2], proj[2, 3] = (far + near) / (near - far), 2 * far * near / (near - far)
    proj[3, 2] = -1.0
    return view, proj


def framing(characters: list[np.ndarray], hits: list[np.ndarray]) -> tuple:
    """Where to look: (center, radius, direction).

    On the colliding vertices when there are any (at least 15% of the characters' size, so
    the picture shows where on the body it is), else on all the characters. Seen from the
    side of the line between the characters' centres (so the contact is not hidden behind
    one of them), from the front (-Y) and a little above.

    Args:
        characters: per object (V_i, 3) world positions; hits: per object (K_i, 3) world
            positions of the colliding triangles' vertices (may be empty).
    """
    every = np.concatenate(characters)
    lo, hi = every.min(0), every.max(0)
    body_r = 0.5 * float(np.linalg.norm(hi - lo))
    pts = [h for h in hits if len(h)]
    if pts:
        p = np.concatenate(pts)
        plo, phi = p.min(0), p.max(0)
        center, radius = (plo + phi) / 2, max(0.5 * float(np.linalg.norm(phi - plo)),
                                               0.15 * body_r)
    else:
        center, radius = (lo + hi) / 2, body_r
    centres = [c.mean(0) for c in characters]
    axis = centres[-1] - centres[0] if len(centres) > 1 else np.zeros(3)
    axis[2] = 0.0
    if np.linalg.norm(axis) < 1e-9 * max(body_r, 1e-12):
        side = np.array([0.35, -1.0, 0.0])
    else:
        side = np.array([-axis[1], axis[0], 0.0])
        side /= np.linalg.norm(side)
        if side[1] > 0 or (side[1] == 0 and side[0] < 0):
            side = -side
        side = side + 0.3 * np.array([axis[0], axis[1], 0.0]) / np.linalg.norm(axis)
    side = side / np.linalg.norm(side)
    return center, radius, side + np.array([0.0, 0.0, 0.35])


def candidate_directions(preferred: np.ndarray) -> list[np.ndarray]:
    """`preferred` first, then eight sides around the vertical at two heights (3, 8)."""
    out = [np.asarray(preferred, np.float64)]
    for up in (0.35, 1.2):
        for k in range(8):
            a = k * np.pi / 4
            out.append(np.array([np.cos(a), np.sin(a), up]))
    return out


# -- drawing -------------------------------------------------------------------------------

def render_view(scene, view: np.ndarray, proj: np.ndarray, width: int, height: int,
                draw=None) -> np.ndarray:
    """Draw the scene's viewport (solid shading) with the given matrices, then `draw()`
    in the same matrices and depth buffer.

    Returns:
        (height, width, 4) float32 RGBA, bottom row first.
    """
    import bpy
    import gpu
    from mathutils import Matrix

    ensure_gpu()
    window, area, region, space = area_of_type("VIEW_3D")
    # Solid shading; no red X axis, origin dots or orange selection outlines, which look
    # like the overlay; no bones.
    settings = [(space.shading, "type", "SOLID"), (space.overlay, "show_axis_x", False),
                (space.overlay, "show_axis_y", False),
                (space.overlay, "show_object_origins", False),
                (space.overlay, "show_outline_selected", False),
                # Bones hide the skin (imported rigs often have huge octahedral bones).
                (space.overlay, "show_bones", False)]
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in settings]
    for owner, attr, value in settings:
        setattr(owner, attr, value)
    vm, pm = Matrix(view.tolist()), Matrix(proj.tolist())
    off = gpu.types.GPUOffScreen(width, height)
    try:
        off.draw_view3d(scene, bpy.context.view_layer, space, region, vm, pm)
        with off.bind():
            if draw is not None:
                with bpy.context.temp_override(window=window, area=area, region=region):
                    gpu.matrix.load_matrix(vm)
                    gpu.matrix.load_projection_matrix(pm)
                    draw()
            fb = gpu.state.active_framebuffer_get()
            buf = fb.read_color(0, 0, width, height, 4, 0, "FLOAT")
            buf.dimensions = width * height * 4
            pixels = np.array(buf, dtype=np.float32).reshape(height, width, 4)
    finally:
        off.free()
        for owner, attr, value in saved:
            setattr(owner, attr, value)
    return pixels


def save_png(pixels: np.ndarray, path: str) -> None:
    """Write (H, W, 4) float RGBA (bottom row first, as read back) as an 8-bit RGB PNG."""
    import bpy

    h, w = pixels.shape[:2]
    img = bpy.data.images.new(".skin_collide_snapshot", w, h, alpha=False)
    try:
        rgba = np.clip(pixels, 0.0, 1.0).astype(np.float32).copy()
        rgba[..., 3] = 1.0
        img.pixels.foreach_set(rgba.ravel())
        img.filepath_raw = path
        img.file_format = "PNG"
        img.save()
    finally:
        bpy.data.images.remove(img)


def overlay_mask(pixels: np.ndarray, colour, over=(0.0, 1.0)) -> np.ndarray:
    """Pixels whose colour is the overlay colour blended (alpha) over some grey in `over`
    (not the orange selection outline: its green and blue differ).

    Args:
        pixels: (H, W, 4) float; colour: RGBA of the overlay.
    Returns:
        (H, W) bool.
    """
    r, g, b = pixels[..., 0], pixels[..., 1], pixels[..., 2]
    a = float(colour[3])
    lo = a * np.asarray(colour[:3]) + (1 - a) * over[0]
    hi = a * np.asarray(colour[:3]) + (1 - a) * over[1]
    tol = 0.06
    inside = np.ones(r.shape, bool)
    for ch, l, h in zip((r, g, b), lo, hi):
        inside &= (ch >= l - tol) & (ch <= h + tol)
    target = a * (colour[1] - colour[2])         # g - b of the blend, whatever the grey
    return inside & (r - np.maximum(g, b) > 0.25) & (np.abs(g - b - target) < 0.06)


def choose_view(scene, res, objects: dict, size=(640, 400), colour=None,
                focus: np.ndarray | None = None) -> tuple:
    """Where `snapshot_result` looks, and what it draws there: framed on `focus` when
    given, else on the result's largest contact's intersection curve (else on its colliding
    triangles, or on the characters); seen from the side that shows the most overlay.

    Args:
        focus: (K, 3) float world points to frame on (one contact's curve, a part of the
            body), or None.
    Returns:
        (view (4, 4), projection (4, 4), draw): `draw()` draws the overlay's triangles and
        curves in those matrices.
    """
    from . import overlay

    tris, _ = overlay.result_arrays(res, objects, False, 0)
    curves = overlay.contact_lines(res)
    hits = []
    for k, (name, pos, hit) in enumerate(zip(res.names, res.positions, res.hit_triangles)):
        tri = overlay.object_triangles(res, k, objects[name])
        hits.append(pos[np.unique(tri[hit])] if hit.size else np.zeros((0, 3)))
    crossing = [c for c in getattr(res, "contacts", None) or [] if c.segments.size]
    if focus is not None and len(focus):
        hits = [np.asarray(focus, np.float64).reshape(-1, 3)]
    elif crossing:                   # the largest contact: its curve
        hits = [max(crossing, key=lambda c: c.length).segments.reshape(-1, 3)]
    center, radius, direction = framing(list(res.positions), hits)
    w, h = size
    if colour is None:
        s = getattr(scene, "skin_collide", None)
        colour = tuple(s.overlay_color) if s is not None else DEFAULT_COLOUR
    batches = []

    def draw():
        batches[:] = [overlay.draw_arrays(tris, np.zeros((0, 3), np.float32), colour,
                                          batches[0] if batches else None),
                      overlay.draw_curves(curves, colour, batches[1] if batches else None)
                      if curves.size else None]

    if tris.size:
        # Contacts are often hidden behind a body from a fixed side: look from where the
        # most overlay pixels show (small trial pictures; the default side wins ties).
        best = -1
        sw, sh = (96, max(16, round(96 * h / w))) if w >= h else (max(16, round(96 * w / h)), 96)
        for cand in candidate_directions(direction):
            v, p = look_at(center, radius, cand, sw / sh)
            n = int(overlay_mask(render_view(scene, v, p, sw, sh, draw), colour).sum())
            if n > best:
                best, direction = n, cand
    view, proj = look_at(center, radius, direction, w / h)
    return view, proj, draw


def snapshot_result(scene, res, objects: dict, path: str | None, size=(640, 400),
                    colour=None, focus: np.ndarray | None = None) -> np.ndarray:
    """Picture of a result, framed as `choose_view` says (on `focus`, (K, 3) world points,
    when given): the viewport in solid shading plus the overlay's triangles and curves.
    Writes a PNG when `path` is given; returns the pixels ((H, W, 4) float32, bottom row
    first)."""
    view, proj, draw = choose_view(scene, res, objects, size, colour, focus)
    pixels = render_view(scene, view, proj, size[0], size[1], draw=draw)
    if path:
        save_png(pixels, path)
    return pixels


def scanner_result(scanner, scene, frame: int):
    """Evaluate `frame` (in the current `evaluation`) and collide the scanner's meshes: a
    `session.LiveResult`."""
    from .session import LiveResult

    evaluation.frame_set(scene, frame)
    positions, poses = scanner.evaluate(evaluation.depsgraph())
    pairs, ms, _ = scanner.query(positions, poses)
    from ..core.contacts import groups as contact_groups

    found = contact_groups.frame_contacts(scanner.objects, positions, scanner.triangles,
                                          scanner.keep(pairs))
    hits = [set() for _ in scanner.objects]
    for i, j, p in pairs:
        hits[i].update(p[:, 0].tolist())
        hits[j].update(p[:, 1].tolist())
    return LiveResult(frame=frame, ms=ms, names=[o.name for o in scanner.objects],
                      positions=list(positions),
                      hit_triangles=[np.array(sorted(h), dtype=np.int64) for h in hits],
                      polygon_pairs=scanner.polygon_pairs(pairs), contacts=found)


def frame_snapshot(scanner, scene, frame: int, path: str | None, size=(640, 400),
                   colour=None):
    """Collide at `frame` and picture it. Returns (result, pixels)."""
    res = scanner_result(scanner, scene, frame)
    objects = {o.name: o for o in scanner.objects}
    return res, snapshot_result(scene, res, objects, path, size, colour)


def episode_snapshots(scanner, scene, frames: list[int], out_dir: str,
                      size=(640, 400), colour=None) -> list[str]:
    """One picture per frame of `frames` (the worst frames of the scan's collision
    episodes, `core.contacts.pairs.episodes`): `<out_dir>/frame_<F>.png`. Returns the paths."""
    paths = []
    for f in sorted(set(frames)):
        path = os.path.join(out_dir, f"frame_{f:05d}.png")
        frame_snapshot(scanner, scene, f, path, size, colour)
        paths.append(path)
    return paths


def render_region(kind: str, draw, height: int | None = None) -> np.ndarray:
    """Call a `POST_PIXEL` draw callback as Blender would for the WINDOW region of an area
    of `kind` (region pixel coordinates), into an offscreen of the region's size.

    Returns:
        (height, region width, 4) float32 RGBA, bottom row first.
    """
    import bpy
    import gpu
    from mathutils import Matrix

    ensure_gpu()
    window, area, region, _ = area_of_type(kind)
    w, h = region.width, height or region.height
    ortho = np.eye(4)
    ortho[0, 0], ortho[1, 1], ortho[2, 2] = 2.0 / w, 2.0 / h, -1.0
    ortho[0, 3], ortho[1, 3] = -1.0, -1.0
    off = gpu.types.GPUOffScreen(w, h)
    try:
        with off.bind():
            fb = gpu.state.active_framebuffer_get()
            fb.clear(color=(0.0, 0.0, 0.0, 1.0))
            with bpy.context.temp_override(window=window, area=area, region=region):
                gpu.matrix.load_matrix(Matrix.Identity(4))
                gpu.matrix.load_projection_matrix(Matrix(ortho.tolist()))
                draw()
            buf = fb.read_color(0, 0, w, h, 4, 0, "FLOAT")
            buf.dimensions = w * h * 4
            pixels = np.array(buf, dtype=np.float32).reshape(h, w, 4)
    finally:
        off.free()
    return pixels
