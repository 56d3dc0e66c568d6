"""Command line: ``python -m skin_collide doctor|scan|demo ...`` (headless; bpy imported lazily).

Exit codes: 0 success, 2 bad input (missing or unreadable file, no skinned mesh, unknown
object, empty frame range), with a one-line message on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np


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


def _load(args):
    """Open the file and pick the meshes: (bpy, scene, meshes); UsageError on bad input."""
    bpy = _import_bpy()
    from .addon import files

    try:
        files.load_file(args.file)
    except files.FileError as exc:
        raise UsageError(str(exc)) from None
    scene = bpy.context.scene
    return bpy, scene, _select_meshes(scene, args.object)


def cmd_doctor(args) -> int:
    frames_override = parse_frames(args.frames)
    bpy, scene, meshes = _load(args)
    from .addon import doctor, extract
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


def _progress(k: int, n: int, rec) -> None:
    width = 20
    done = int(width * (k + 1) / n)
    bar = "#" * done + "." * (width - done)
    print(f"[{bar}] {k + 1:>4}/{n} frame {rec.frame:>5}: {len(rec.pairs):>6} pairs "
          f"{rec.ms:8.2f} ms query ({'/'.join(sorted(set(rec.modes)))}), "
          f"{rec.eval_ms:7.1f} ms Blender evaluation", flush=True)


def cmd_scan(args) -> int:
    frames = parse_frames(args.frames)
    bpy, scene, meshes = _load(args)
    from .addon import extract, scanner
    if frames is None:
        if scene.frame_end < scene.frame_start:
            raise UsageError(f"the scene's frame range {scene.frame_start}:{scene.frame_end} is empty")
        frames = (scene.frame_start, scene.frame_end)
    if not args.self_collision and len(meshes) < 2:
        raise UsageError("only one object: pass --self for self-collision, or name two objects")
    out_dir = os.path.dirname(os.path.abspath(args.json))
    if not os.path.isdir(out_dir):
        raise UsageError(f"the folder for --json does not exist: {out_dir}")
    _check_snapshots_dir(args)
    try:
        sc = scanner.Scanner(meshes, mode=args.mode, self_collision=args.self_collision,
                             first_hit=args.first_hit)
    except extract.RigError as exc:
        raise UsageError(str(exc)) from None
    for obj in sc.objects:
        print(f"object {obj.name}: {obj.rig.n_triangles} triangles, {obj.tree.n_nodes} spheres, "
              f"built in {obj.build_seconds:.2f} s; refit: {obj.refit_method} ({obj.refit_reason})")
    frame_list = list(range(frames[0], frames[1] + 1))
    try:
        report = sc.run(scene, frame_list, progress=_progress)
    except extract.RigError as exc:
        raise UsageError(str(exc)) from None
    report.write_json(args.json)
    colliding = [r.frame for r in report.frames if r.pairs]
    ms = np.array([r.ms for r in report.frames])
    print(f"{len(colliding)} of {len(frame_list)} frames collide; query ms mean {ms.mean():.2f} "
          f"max {ms.max():.2f}; wrote {args.json}")
    _scan_snapshots(args, sc, scene, report)
    return 0


# -- snapshot (and scan --snapshots) ------------------------------------------------------------

def parse_size(text: str) -> tuple[int, int]:
    """'WxH' -> (W, H), each 16..4096 pixels."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size expects WxH in pixels, got '{text}'") from None
    if not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise UsageError(f"--size {text}: width and height must be 16-4096 pixels")
    return w, h


def _check_snapshots_dir(args) -> None:
    folder = getattr(args, "snapshots", None)
    if folder is not None and not os.path.isdir(folder):
        raise UsageError(f"the folder for --snapshots does not exist: {folder}")


def _scan_snapshots(args, sc, scene, report) -> None:
    """One viewport picture per collision episode, at its worst frame (--snapshots DIR)."""
    if getattr(args, "snapshots", None) is None:
        return
    from .addon import snapshot

    frames = [r.frame for r in report.frames]
    counts = [len(r.pairs) for r in report.frames]
    try:
        paths = snapshot.episode_snapshots(sc, scene, frames, counts, args.snapshots)
    except snapshot.GPUUnavailable as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {len(paths)} snapshot(s) to {args.snapshots}"
          + (": " + ", ".join(os.path.basename(p) for p in paths) if paths else ""))


def cmd_snapshot(args) -> int:
    size = parse_size(args.size)
    if not args.png.lower().endswith(".png"):
        raise UsageError(f"--png must name a .png file, got '{args.png}'")
    out_dir = os.path.dirname(os.path.abspath(args.png))
    if not os.path.isdir(out_dir):
        raise UsageError(f"the folder for --png does not exist: {out_dir}")
    bpy, scene, meshes = _load(args)
    from .addon import extract, scanner, snapshot
    if not args.self_collision and len(meshes) < 2:
        raise UsageError("only one object: pass --self for self-collision, or name two objects")
    try:
        sc = scanner.Scanner(meshes, self_collision=args.self_collision)
        res, _ = snapshot.frame_snapshot(sc, scene, args.frame, os.path.abspath(args.png), size)
    except extract.RigError as exc:
        raise UsageError(str(exc)) from None
    except snapshot.GPUUnavailable as exc:
        raise UsageError(str(exc)) from None
    print(f"frame {args.frame}: {res.n_pairs} colliding pair(s); wrote {args.png} "
          f"({size[0]}x{size[1]})")
    return 0


def _add_snapshot_parser(sub) -> None:
    sn = sub.add_parser("snapshot", help="picture the viewport at a frame, colliding triangles "
                        "in the overlay colour (PNG)")
    sn.add_argument("file", help=".blend, .glb or .gltf")
    sn.add_argument("--frame", type=int, required=True)
    sn.add_argument("--object", action="append", help="mesh object name (repeatable; default all)")
    sn.add_argument("--self", dest="self_collision", action="store_true",
                    help="also show each object's self-intersections")
    sn.add_argument("--png", required=True, help="output picture path")
    sn.add_argument("--size", default="640x400", help="WxH in pixels (default 640x400)")
    sn.set_defaults(func=cmd_snapshot)


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
    status = cmd_doctor(args)
    if status == 0 and args.json:
        args.mode, args.self_collision, args.first_hit = "on-demand", False, False
        status = cmd_scan(args)
    return status


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
    m.add_argument("--json", help="also scan the demo's frames and write the report here")
    m.set_defaults(func=cmd_demo)
    sc = sub.add_parser("scan", help="collide skinned meshes over a frame range, write JSON")
    sc.add_argument("file", help=".blend, .glb or .gltf")
    sc.add_argument("--object", action="append", help="mesh object name (repeatable; default all)")
    sc.add_argument("--frames", help="START:END inclusive (default: the scene's range)")
    sc.add_argument("--self", dest="self_collision", action="store_true",
                    help="also report each object's self-intersections")
    sc.add_argument("--mode", choices=("on-demand", "bottom-up", "rebuild"), default="on-demand")
    sc.add_argument("--first-hit", action="store_true",
                    help="stop each frame at the first colliding pair (yes/no per frame)")
    sc.add_argument("--json", required=True, help="output report path")
    sc.add_argument("--snapshots", metavar="DIR",
                    help="also write a viewport picture of each collision episode's worst frame")
    sc.set_defaults(func=cmd_scan)
    _add_snapshot_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"skin_collide: error: {exc}", file=sys.stderr)
        return 2
