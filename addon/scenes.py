"""Which scene a headless check runs on (`scan --scene NAME`, `testing.collisions(scene=...)`).

A .blend may hold several scenes (a layout scene and the shots, a lighting scene linking
the characters); without a choice the checks take the scene of the saved window, which is
`bpy.context.scene` after loading. The chosen scene must become *the context's* scene, not
only the one passed around: `bpy.context.evaluated_depsgraph_get()` (which every
evaluation of the add-on reads, and which decides which objects Blender poses) follows the
context. Where a window exists (the pip bpy has one, even headless) the scene and view
layer are set on it, as the scene selector at the top of Blender's window does; with no
window, `Context.temp_override(scene=..., view_layer=...)` gives the same context for the
block. Either way `bpy.context.scene`, `bpy.context.view_layer`,
`evaluated_depsgraph_get()` and `scene.frame_set` act on the chosen scene.

The view layer: the window's own when it belongs to the chosen scene (the scene the file
was saved on), else the scene's first one.
"""
from __future__ import annotations

import contextlib


class SceneError(ValueError):
    """No such scene (the one-line message lists the file's scenes)."""


def _quoted(names) -> str:
    return ", ".join(repr(n) for n in names)


def scene_names() -> list[str]:
    """The file's scenes by full name (a linked scene: ``Shot [lib.blend]``), in Blender's
    order."""
    import bpy

    return [s.name_full for s in bpy.data.scenes]


def find(name: str):
    """The scene called `name`: its full name, or a bare name only one scene has.
    SceneError (one line listing the scenes) when there is none or several."""
    import bpy

    scenes = list(bpy.data.scenes)
    for s in scenes:
        if s.name_full == name:
            return s
    same = [s for s in scenes if s.name == name]
    if len(same) == 1:
        return same[0]
    if same:
        raise SceneError(f"several scenes are named '{name}': {_quoted(s.name_full for s in same)}"
                         " (give the full name)")
    raise SceneError(f"no scene named '{name}' in the file; its scenes: {_quoted(scene_names())}")


def current():
    """(scene, view layer) of the context: the saved window's after loading a file."""
    import bpy

    return bpy.context.scene, bpy.context.view_layer


def view_layer_for(scene):
    """The view layer a check of `scene` uses: the context's when it is one of `scene`'s,
    else the scene's first."""
    import bpy

    layer = bpy.context.view_layer
    if layer is not None and bpy.context.scene == scene:
        return layer
    return scene.view_layers[0]


def choose(name: str | None):
    """(scene, view layer) for `name` (None: the context's scene); SceneError for an
    unknown name."""
    if name is None:
        scene, layer = current()
        return scene, (layer if layer is not None else scene.view_layers[0])
    scene = find(name)
    return scene, view_layer_for(scene)


@contextlib.contextmanager
def use(scene, view_layer=None, restore: bool = True):
    """Make `scene` (and `view_layer`, default `view_layer_for(scene)`) the context's for
    the block: set on the window where there is one (put back after the block when
    `restore`), else a `temp_override`. Yields (scene, view layer)."""
    import bpy

    layer = view_layer if view_layer is not None else view_layer_for(scene)
    window = bpy.context.window
    if window is None:
        with bpy.context.temp_override(scene=scene, view_layer=layer):
            yield scene, layer
        return
    before = (window.scene, window.view_layer)
    _set_window(window, scene, layer)
    try:
        yield scene, layer
    finally:
        if restore:
            try:
                _set_window(window, *before)
            except ReferenceError:      # a file was loaded in the block: nothing to restore
                pass


def _set_window(window, scene, layer) -> None:
    if window.scene != scene:
        window.scene = scene
    if window.view_layer != layer:
        window.view_layer = layer


def with_characters(skip=None) -> list[str]:
    """The full names of the scenes (other than `skip`) with a character
    (`addon.motion.characters` over the scene's range), each judged in its own context
    (its first view layer): which objects Blender draws and moves depends on the scene
    evaluated."""
    import bpy

    from . import motion

    out = []
    for s in list(bpy.data.scenes):
        if s == skip:
            continue
        with use(s, s.view_layers[0]):
            if motion.characters(s).meshes:
                out.append(s.name_full)
    return out


def characters_hint(scene, how: str = "pass --scene NAME") -> str:
    """Which scenes other than `scene` have characters, and `how` to choose one of them:
    the end of the error for a scene without any."""
    others = with_characters(skip=scene)
    if not others:
        return "no other scene of the file has a character"
    many = len(others) > 1
    return (f"the scene{'s' if many else ''} {_quoted(others)} "
            f"{'have' if many else 'has'} characters: {how}")


def no_character_message(scene, view_layer, how: str = "pass --scene NAME") -> str:
    """Why a scene with no character cannot be checked, and which scenes have one."""
    return (f"no character in scene '{scene.name_full}' (view layer '{view_layer.name}'): no "
            "drawn mesh that an armature, a parent, a constraint, animation, a shape key, a "
            f"cache or a deforming modifier moves; {characters_hint(scene, how)}")
