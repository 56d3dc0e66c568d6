"""Which evaluation a check reads: the viewport's or the render's, and the one place the
add-on asks Blender for an evaluated depsgraph or changes the frame.

*Viewport* (the default): the view layer's depsgraph, `bpy.context.evaluated_depsgraph_get()`,
and `scene.frame_set`: what the 3D View draws (modifiers' *Realtime* toggle and viewport
levels, objects' *Disable in Viewports*, Simplify's viewport values, Geometry Nodes' *Is
Viewport* true).

*Render* (`scan --as-rendered`, `testing.collisions(as_rendered=True)`): Blender's own
render-mode depsgraph (`Depsgraph.mode == 'RENDER'`: modifiers' *Render* toggle and render
levels, objects' *Disable in Renders*, Simplify's render values, *Is Viewport* false). Python
can only reach that depsgraph inside a render engine's `render(depsgraph)`, so `run`
renders the scene's view layer with this module's engine (`SkinCollideEvaluation`, which
draws nothing) and runs the whole check inside that one call; `frame_set` then re-evaluates
the render depsgraph (`RenderEngine.frame_set`). Nothing is copied from settings: Blender
decides what renders. The scene's render engine, camera, sequencer switch and frame are
restored afterwards (a temporary camera is removed), and the session's *Render Result*
kept (`_keep_render_result`).

Every evaluation of the check goes through `depsgraph`, `frame_set` and `update`, and the
settings-only readers (`addon.extract.stack`, `addon.motion`) ask `shows` and `hidden` which
toggles the current evaluation follows.
"""
from __future__ import annotations

from dataclasses import dataclass

VIEWPORT = "viewport"
RENDER = "render"
MODES = (VIEWPORT, RENDER)


class EvaluationError(RuntimeError):
    """The render-mode evaluation could not run (one line: why)."""


@dataclass
class _Render:
    """The render in progress: its engine (for `frame_set`) and its depsgraph."""

    engine: object
    depsgraph: object
    #: the scene's own render engine (replaced by this module's for the render)
    scene_engine: str = ""


#: The render-mode evaluation in progress (a stack: at most one deep in practice).
_RENDERS: list[_Render] = []


def mode() -> str:
    """The current evaluation: `RENDER` inside `run(..., RENDER)`, else `VIEWPORT`."""
    return RENDER if _RENDERS else VIEWPORT


def depsgraph():
    """The evaluated depsgraph of the current evaluation (the render's, or the context's
    view layer's, evaluated on demand)."""
    if _RENDERS:
        return _RENDERS[-1].depsgraph
    import bpy

    return bpy.context.evaluated_depsgraph_get()


def frame_set(scene, frame: int, subframe: float = 0.0) -> None:
    """Evaluate `scene` at `frame` (+ `subframe`) in the current evaluation."""
    if _RENDERS:
        _RENDERS[-1].engine.frame_set(int(frame), float(subframe))
    else:
        scene.frame_set(int(frame), subframe=float(subframe))


def update() -> None:
    """Re-evaluate what changed (an armature switched to Rest Position, an attribute added):
    the view layer's update; in render mode the render depsgraph evaluated again at its
    frame (its own update leaves the animation at the original's values)."""
    if _RENDERS:
        scene = _RENDERS[-1].depsgraph.scene        # the original scene rendered
        _RENDERS[-1].engine.frame_set(scene.frame_current, scene.frame_subframe)
    else:
        import bpy

        bpy.context.view_layer.update()


def shows(mod) -> bool:
    """Whether modifier `mod` is on in the current evaluation (*Realtime* or *Render*)."""
    return bool(mod.show_render if _RENDERS else mod.show_viewport)


def hidden(idb) -> bool:
    """Whether object or collection `idb` is disabled in the current evaluation (*Disable
    in Viewports* or *Disable in Renders*)."""
    return bool(idb.hide_render if _RENDERS else idb.hide_viewport)


def scene_engine(scene) -> str:
    """The scene's own render engine (during a render-mode check, the one it had before)."""
    if _RENDERS and _RENDERS[-1].depsgraph.scene == scene:
        return _RENDERS[-1].scene_engine
    return scene.render.engine


def render_engine_class():
    """The render engine class of `run` (registered on first use)."""
    import bpy

    cls = getattr(bpy.types, "SKIN_COLLIDE_RENDER_EVALUATION", None)
    if cls is not None:
        return cls

    class SkinCollideEvaluation(bpy.types.RenderEngine):
        """Draws nothing: runs the check `run` hands it inside its `render` call, where the
        render-mode depsgraph exists."""

        bl_idname = "SKIN_COLLIDE_RENDER_EVALUATION"
        bl_label = "skin_collide evaluation"
        bl_use_postprocess = False
        bl_use_preview = False

        #: (the check to run, its outcome) of the `run` in progress
        job: dict | None = None

        def render(self, depsgraph):
            job = type(self).job
            if job is None or "result" in job or "error" in job:
                return          # another view layer, or no check asked
            if depsgraph.view_layer.name != job["layer"]:
                return
            _RENDERS.append(_Render(self, depsgraph, job["scene_engine"]))
            try:
                job["result"] = job["body"]()
            except BaseException as exc:        # handed back to `run`'s caller
                job["error"] = exc
            finally:
                _RENDERS.pop()

    SkinCollideEvaluation.__name__ = "SKIN_COLLIDE_RENDER_EVALUATION"
    bpy.utils.register_class(SkinCollideEvaluation)
    return SkinCollideEvaluation


#: The render slot of an existing *Render Result* a render-mode check renders its empty
#: picture into (the artist's own renders stay in theirs).
SLOT = "skin_collide evaluation"


def _keep_render_result():
    """Keep the session's *Render Result* as it is across the render-mode evaluation's
    render: with none yet, the one the render makes is removed after; with one, the render
    goes into its own slot (`SLOT`, added once) and the active slot is put back. Returns
    the function that restores it."""
    import bpy

    before = [im for im in bpy.data.images if im.type == "RENDER_RESULT"]
    if not before:
        def restore():
            for im in [im for im in bpy.data.images if im.type == "RENDER_RESULT"]:
                bpy.data.images.remove(im)
        return restore
    slots = before[0].render_slots
    saved = slots.active_index
    names = [sl.name for sl in slots]
    if SLOT not in names:
        slots.new(name=SLOT)
        names = [sl.name for sl in slots]
    slots.active_index = names.index(SLOT)

    def restore():
        slots.active_index = saved
    return restore


def run(scene, body, evaluation: str = VIEWPORT, view_layer=None):
    """`body()` in `evaluation` (`VIEWPORT`: called as it is; `RENDER`: inside a render of
    `scene`'s `view_layer`, default the context's), its result returned and its exception
    raised. Raises `EvaluationError` when the render cannot run."""
    if evaluation not in MODES:
        raise EvaluationError(f"no evaluation '{evaluation}' (one of {', '.join(MODES)})")
    if _RENDERS:
        if evaluation == VIEWPORT:
            raise EvaluationError("a viewport check cannot run inside a render-mode one")
        if _RENDERS[-1].depsgraph.scene != scene:
            raise EvaluationError("a render-mode check is already running on another scene")
        return body()
    if evaluation == VIEWPORT:
        return body()
    import bpy

    # The view layer `addon.scenes.view_layer_for` gives (not imported: scenes reads motion).
    layer = view_layer or (bpy.context.view_layer if bpy.context.scene == scene
                           and bpy.context.view_layer is not None else scene.view_layers[0])
    engine = render_engine_class()
    render = scene.render
    job = {"body": body, "layer": layer.name, "scene_engine": render.engine}
    saved = (render.engine, scene.camera, render.use_sequencer, scene.frame_current,
             scene.frame_subframe)
    camera = None
    engine.job = job
    try:
        if scene.camera is None:
            # A render needs a camera; the meshes it evaluates do not depend on it.
            camera = bpy.data.objects.new("skin_collide evaluation camera",
                                          bpy.data.cameras.new("skin_collide evaluation camera"))
            scene.collection.objects.link(camera)
            scene.camera = camera
        render.engine = engine.bl_idname
        # The sequencer's strips would be rendered instead of the scene.
        render.use_sequencer = False
        results = _keep_render_result()
        try:
            bpy.ops.render.render(scene=scene.name, layer=layer.name)
        except RuntimeError as exc:
            text = str(exc).strip().splitlines()
            raise EvaluationError(
                f"the render-mode evaluation of scene '{scene.name_full}' could not run: "
                f"{text[-1] if text else 'Blender refused to render'}") from None
        finally:
            results()
    finally:
        engine.job = None
        render.engine, render.use_sequencer = saved[0], saved[2]
        if camera is not None:
            scene.camera = saved[1]
            data = camera.data
            bpy.data.objects.remove(camera)
            bpy.data.cameras.remove(data)
        scene.frame_set(saved[3], subframe=saved[4])
    if "error" in job:
        raise job["error"]
    if "result" not in job:
        raise EvaluationError(
            f"the render-mode evaluation of scene '{scene.name_full}' did not run: Blender "
            f"rendered no view layer '{layer.name}' (is it disabled for rendering?)")
    return job["result"]
