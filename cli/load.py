"""Opening the file a command checks: bpy imported on demand, the file read, the scene of
`--scene` made the context's, and the meshes of `--object` (or every character) picked;
bad input is a `UsageError`. The console's scene and note lines too.
"""
from __future__ import annotations

from .errors import UsageError
from .frames import parse_frames


def import_bpy():
    try:
        import bpy  # noqa: F401
    except ImportError:
        raise UsageError("the 'bpy' module is not installed: run `bash dev skin_collide ...` "
                         "or `pip install bpy==5.0.1` (Python 3.11)") from None
    return bpy


def select_meshes(scene, names: list[str] | None, frames: tuple[int, int] | None = None):
    """The meshes to check (`addon.motion.Selection`): those `names` give, each by its full
    name (``Cesium_Man [char.blend]`` for a linked one, ``Crowd.001/Body`` for a mesh a
    collection instance draws) or a bare name only one drawn mesh has, or every mesh the
    scene's view layer draws that Blender's evaluation moves in `frames` (default the
    scene's range), with the notes on the meshes left out (none when names are given)."""
    from ..addon import drawn, evaluation, extract, identity, motion

    span = list(range(frames[0], frames[1] + 1)) if frames else None
    if not names:
        sel = motion.characters(scene, span)
        if not sel.meshes:
            raise UsageError("no character in the file: no drawn mesh that an armature, a "
                             "parent, a constraint, animation, a shape key, a cache or a "
                             "deforming modifier moves"
                             + ("; " + "; ".join(sel.notes) if sel.notes else ""))
        return sel
    every = drawn.drawn_meshes(evaluation.depsgraph())
    chosen = []
    for n in names:
        try:
            m = identity.find(every, n)
            ob = None if m is not None else identity.find(scene.objects, n)
        except identity.AmbiguousName as exc:
            raise UsageError(str(exc)) from None
        if m is None and ob is None:
            raise UsageError(f"no object named '{n}' in the file")
        if m is None:
            if ob.type != "MESH":
                raise UsageError(f"object '{n}' is not a mesh")
            why = motion.left_out_reason(ob, evaluation.depsgraph())
            raise UsageError(f"object '{n}' is not checked: "
                             f"{why or 'Blender does not draw it'}")
        chosen.append(m)
    sel = motion.characters(scene, span, named=chosen)
    for m in chosen:
        if m not in sel.meshes:
            note = next((x for x in sel.notes if x.startswith(f"'{m.name}'")), "")
            raise UsageError(f"object '{m.name_full}' is not a character: "
                             + (note or extract.skip_note(drawn.source_of(m))))
    sel.notes = []
    return sel


# One ExitStack per running `main` (nested for `farm-commands --run`): the scene `load`
# made the context's (`addon.scenes.use`) is left when the command ends.
SCENE_CONTEXTS: list = []


def leave_scene() -> None:
    """Leave the scene a previous `load` of this command entered (before a file is read:
    a context override must not outlive the data it points at)."""
    if SCENE_CONTEXTS:
        SCENE_CONTEXTS[-1].close()


def open_scene(args):
    """Open the file and make the scene of `--scene` (default: the saved window's) the
    context's with its view layer (`addon.scenes`): (bpy, scene, view layer); UsageError
    on bad input."""
    bpy = import_bpy()
    from ..addon import files, report, scenes

    leave_scene()
    trusted = bool(getattr(args, "enable_autoexec", False))
    try:
        report.load_quietly(args.file, trusted)
    except files.FileError as exc:
        raise UsageError(str(exc)) from None
    args.seen = {"autoexec": trusted, "failed_drivers": [], "missing": []}
    try:
        scene, layer = scenes.choose(getattr(args, "scene", None))
    except scenes.SceneError as exc:
        raise UsageError(str(exc)) from None
    use = scenes.use(scene, layer)
    if SCENE_CONTEXTS:
        SCENE_CONTEXTS[-1].enter_context(use)
    else:
        use.__enter__()         # outside `main`: for the rest of the process
    # Linked data that did not load: no verdict, before any frame (`see_missing`).
    args.seen_notes = see_missing(args, scene)
    return bpy, scene, layer


def pick(args, scene, layer) -> tuple[list, list[str]]:
    """The meshes of `--object` (or every character) in the current evaluation, and the
    notes on the meshes skipped, on missing data allowed and on failed drivers allowed
    (`args.selection` is set); UsageError on bad input, and on drivers that fail unless
    allowed (`see_drivers`)."""
    from ..addon import scenes

    try:
        args.selection = select_meshes(scene, args.object,
                                       parse_frames(getattr(args, "frames", None)))
    except UsageError as exc:
        if args.object:
            raise
        # No character: say in which scene, and which scenes have some.
        text, prefix = str(exc), "no character in the file"
        if text.startswith(prefix):
            text = f"no character in scene '{scene.name_full}' (view layer '{layer.name}')" \
                + text[len(prefix):]
        raise UsageError(f"{text}; {scenes.characters_hint(scene)}") from None
    meshes = args.selection.meshes
    return meshes, (getattr(args, "seen_notes", []) + args.selection.notes
                    + see_drivers(args, meshes))


def see_missing(args, scene) -> list[str]:
    """Linked data that did not load (`addon.trust.missing_data`): a one-line error (exit
    2, before any frame) unless `--allow-missing`; then a note each, and the report's
    "missing" (`args.seen`)."""
    from ..addon import trust

    missing = trust.missing_data(scene)
    if not missing:
        return []
    if not getattr(args, "allow_missing", False):
        raise UsageError(trust.missing_line(missing))
    args.seen["missing"] = [m.to_json() for m in missing]
    return [f"linked data missing, not checked (--allow-missing): {m.describe()}"
            for m in missing]


def see_drivers(args, meshes) -> list[str]:
    """Drivers Blender could not evaluate that move the characters (`addon.trust`; the
    characters' choice evaluated frames of the range): a one-line error (exit 2, before
    any frame is checked) unless `--allow-failed-drivers`; then one note, and the
    report's "failed_drivers" (`args.seen`)."""
    from ..addon import trust

    failed = trust.failed_drivers(meshes)
    if not failed:
        return []
    if not getattr(args, "allow_failed_drivers", False):
        raise UsageError(trust.drivers_line(failed, args.seen["autoexec"]))
    args.seen["failed_drivers"] = [d.to_json() for d in failed]
    shown = "; ".join(d.describe() for d in failed[:5])
    return [f"{len(failed)} driver(s) failed, checked as evaluated here "
            f"(--allow-failed-drivers): {shown}" + (" ..." if len(failed) > 5 else "")]


def load(args):
    """Open the file (`open_scene`) and pick the meshes (`pick`) in the current
    evaluation: (bpy, scene, meshes, notes on the meshes skipped); UsageError on bad
    input."""
    bpy, scene, layer = open_scene(args)
    meshes, notes = pick(args, scene, layer)
    return bpy, scene, meshes, notes


def evaluation_of(args) -> str:
    """The evaluation the command checks: "render" with `--as-rendered`, else "viewport"
    (`addon.evaluation`)."""
    from ..addon import evaluation

    return evaluation.RENDER if getattr(args, "as_rendered", False) else evaluation.VIEWPORT


def run_loaded(args, body):
    """Open the file, then pick the meshes and call `body(bpy, scene, meshes, notes)` in
    the evaluation of `--as-rendered` (`addon.evaluation.run`: with it, the picking and the
    whole check run inside one render-mode evaluation); body's result. UsageError on bad
    input, and when the render-mode evaluation cannot run."""
    bpy, scene, layer = open_scene(args)
    from ..addon import evaluation

    def inside():
        meshes, notes = pick(args, scene, layer)
        return body(bpy, scene, meshes, notes)

    try:
        return evaluation.run(scene, inside, evaluation_of(args), layer)
    except evaluation.EvaluationError as exc:
        raise UsageError(str(exc)) from None


def scene_line(scene) -> str:
    """The console header's scene line: the scene checked and its view layer (the
    context's, set by `load`)."""
    import bpy

    return f"scene: {scene.name_full} (view layer {bpy.context.view_layer.name})"


#: The console header's evaluation line, per evaluation (a report's "evaluation").
EVALUATION_LINES = {"viewport": "evaluation: viewport (the surfaces the viewport draws)",
                    "render": "evaluation: render (the surfaces renders draw: --as-rendered)"}


def evaluation_line() -> str:
    """The console header's evaluation line: which surfaces the command checks."""
    from ..addon import evaluation

    return EVALUATION_LINES[evaluation.mode()]


def print_notes(notes: list[str]) -> None:
    """One `note:` line per mesh skipped (`select_meshes`)."""
    for note in notes:
        print(f"note: {note}", flush=True)
