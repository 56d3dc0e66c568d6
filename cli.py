"""Command line: ``python -m skin_collide doctor|demo ...`` (headless; bpy imported lazily).

Exit codes: 0 success, 2 bad input (missing or unreadable file, no skinned mesh, unknown
object, empty frame range), with a one-line message on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys


class UsageError(Exception):
    """Bad input: reported as one line on stderr, exit code 2."""


def _import_bpy():
    try:
        import bpy  # noqa: F401
    except ImportError:
        raise UsageError("the 'bpy' module is not installed: run `bash dev skin_collide ...` "
                         "or `pip install bpy==5.0.1` (Python 3.11)") from None
    return bpy


def parse_frames(text: str | None) -> tuple[int, int] | None:
    """'START:END' (inclusive) -> (start, end); None stays None."""
    if text is None:
        return None
    try:
        a, b = text.split(":")
        start, end = int(a), int(b)
    except ValueError:
        raise UsageError(f"--frames expects START:END, got '{text}'") from None
    if end < start:
        raise UsageError(f"empty frame range {start}:{end}")
    return start, end


def _select_meshes(scene, names: list[str] | None):
    from .addon import extract

    meshes = extract.skinned_meshes(scene)
    if names:
        by_name = {ob.name: ob for ob in scene.objects}
        chosen = []
        for n in names:
            ob = by_name.get(n)
            if ob is None:
                raise UsageError(f"no object named '{n}' in the file")
            if ob not in meshes:
                raise UsageError(f"object '{n}' is not a mesh with an Armature modifier")
            chosen.append(ob)
        meshes = chosen
    if not meshes:
        raise UsageError("no mesh with an Armature modifier in the file")
    return meshes


def cmd_doctor(args) -> int:
    bpy = _import_bpy()
    from .addon import doctor, extract, files

    try:
        files.load_file(args.file)
    except files.FileError as exc:
        raise UsageError(str(exc)) from None
    scene = bpy.context.scene
    meshes = _select_meshes(scene, args.object)
    frames_override = parse_frames(args.frames)
    print(f"file: {args.file}")
    for ob in meshes:
        try:
            rep = doctor.describe(ob)
        except extract.RigError as exc:
            raise UsageError(str(exc)) from None
        print(f"mesh: {rep.name}")
        for key, value in rep.facts:
            print(f"  {key}: {value}")
        arm = bpy.data.objects[rep.armature]
        if frames_override:
            frames = list(range(frames_override[0], frames_override[1] + 1))
            label = f"frames {frames[0]}-{frames[-1]}"
        else:
            frames, label = doctor.frames_to_check(scene, arm)
        doctor.measure_deviation(scene, ob, rep, frames)
        print(f"  frames: {label}")
        print(f"max_deviation: {rep.max_deviation:.3e}")
        print(f"max_deviation_relative: {rep.max_deviation_relative:.3e}")
    return 0


def cmd_demo(args) -> int:
    bpy = _import_bpy()
    from .addon import demo_rig

    demo_rig.build_demo_scene(rings=args.rings, segments=args.segments,
                              frames=args.frame_count, preserve_volume=args.preserve_volume)
    out = os.path.abspath(args.out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    bpy.ops.wm.save_as_mainfile(filepath=out)
    print(f"wrote {out}: two tube characters, "
          f"{len(bpy.data.objects['Left'].data.polygons)} polygons each, frames 1-{args.frame_count}")
    args.file, args.object, args.frames = out, None, None
    return cmd_doctor(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m skin_collide",
                                description="Exact collision detection for skinned characters.")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("doctor", help="what skin_collide sees in each skinned mesh of a file")
    d.add_argument("file", help=".blend, .glb or .gltf")
    d.add_argument("--object", action="append", help="mesh object name (repeatable)")
    d.add_argument("--frames", help="START:END (default: the armature's action)")
    d.set_defaults(func=cmd_doctor)
    m = sub.add_parser("demo", help="generate two animated tube characters, save, and doctor them")
    m.add_argument("--out", default="out/demo.blend")
    m.add_argument("--rings", type=int, default=48)
    m.add_argument("--segments", type=int, default=24)
    m.add_argument("--frame-count", type=int, default=48)
    m.add_argument("--preserve-volume", action="store_true")
    m.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"skin_collide: error: {exc}", file=sys.stderr)
        return 2
