"""`doctor FILE`: what skin_collide sees in each character mesh of a file (its rig, what
moves it, how far Blender's evaluation is from the skinning model over the frames)."""
from __future__ import annotations

from . import scan_flags
from .errors import UsageError
from .frames import parse_frames
from .load import evaluation_line, print_notes, run_loaded, scene_line


def add_parser(sub) -> None:
    d = sub.add_parser("doctor", help="what skin_collide sees in each character mesh of a file")
    d.add_argument("file", help=".blend, .glb or .gltf")
    scan_flags.add(d, "--object", help=scan_flags.OBJECT_HELP + ")")
    d.add_argument("--frames", help="START:END (default: the armature's action)")
    for flag in ("--scene", "--as-rendered", *scan_flags.SEEN_FLAGS):
        scan_flags.add(d, flag)
    d.set_defaults(func=run)


def run(args) -> int:
    """Print the file, the scene and, per character mesh, its facts and deviation."""
    frames_override = parse_frames(args.frames)
    return run_loaded(args, lambda *loaded: _doctor(args, frames_override, *loaded))


def _doctor(args, frames_override, bpy, scene, meshes, notes) -> int:
    """`run` once the file is loaded and the meshes picked (in the evaluation of
    `--as-rendered`)."""
    from ..addon import doctor, extract, motion, render_differences
    print(f"file: {args.file}")
    print(scene_line(scene))
    print(evaluation_line())
    print_notes(notes)
    differs = render_differences.adaptive_note(scene, meshes) \
        if getattr(args, "as_rendered", False) else \
        render_differences.note(scene, bpy.context.view_layer, meshes)
    if differs:
        print(f"note: {differs}", flush=True)
    sel = args.selection
    try:
        rigs = motion.rigs(meshes, sel.sampled, sel.moved)
    except extract.RigError as exc:
        raise UsageError(str(exc)) from None
    for ob, rig in zip(meshes, rigs):
        try:
            rep = doctor.describe(ob, rig)
        except extract.RigError as exc:
            raise UsageError(str(exc)) from None
        arms = extract.armatures_of(ob)
        if frames_override:
            frames = list(range(frames_override[0], frames_override[1] + 1))
            label = f"frames {frames[0]}-{frames[-1]}"
        else:
            frames, label = doctor.frames_to_check(scene, arms[0] if arms else None)
        doctor.measure_deviation(scene, ob, rep, frames)
        rep = doctor.settle(ob, rep, motion.SKIN_TOLERANCE)
        print(f"mesh: {rep.name}")
        for key, value in rep.facts:
            print(f"  {key}: {value}")
        if rep.rig.surface:
            label = ("not measured: the evaluated surface is refitted from Blender's "
                     "positions, nothing skins it")
        print(f"  frames: {label}")
        print(f"max_deviation: {rep.max_deviation:.3e}")
        print(f"max_deviation_relative: {rep.max_deviation_relative:.3e}")
    return 0
