"""`snapshot FILE --frame F --png OUT`: a viewport picture of one frame, the colliding
triangles in the overlay colour; and `scan --snapshots DIR`, one picture per collision
episode at its worst frame."""
from __future__ import annotations

import os

from . import scan_flags
from .errors import UsageError
from .load import evaluation_line, print_notes, run_loaded, scene_line


def add_parser(sub) -> None:
    sn = sub.add_parser("snapshot", help="picture the viewport at a frame, colliding triangles "
                        "in the overlay colour (PNG)")
    sn.add_argument("file", help=".blend, .glb or .gltf")
    sn.add_argument("--frame", type=int, required=True)
    scan_flags.add(sn, "--object", help=scan_flags.OBJECT_HELP + "; default all)")
    scan_flags.add(sn, "--scene")
    scan_flags.add(sn, "--self", help="also show each object's self-intersections")
    scan_flags.add(sn, "--as-rendered", help="collide the surfaces renders draw (render-mode "
                   "evaluation); the shaded picture is the viewport's")
    for flag in scan_flags.SEEN_FLAGS:
        scan_flags.add(sn, flag)
    sn.add_argument("--png", required=True, help="output picture path")
    sn.add_argument("--size", default="640x400", help="WxH in pixels (default 640x400)")
    sn.set_defaults(func=run)


def parse_size(text: str) -> tuple[int, int]:
    """'WxH' -> (W, H), each 16..4096 pixels."""
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size expects WxH in pixels, got '{text}'") from None
    if not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise UsageError(f"--size {text}: width and height must be 16-4096 pixels")
    return w, h


def scan_snapshots(args, sc, scene, report) -> None:
    """One viewport picture per collision episode, at its worst frame (--snapshots DIR)."""
    if getattr(args, "snapshots", None) is None:
        return
    from ..addon import snapshot

    worst = [e.worst_frame for e in report.episodes()]
    try:
        paths = snapshot.episode_snapshots(sc, scene, worst, args.snapshots)
    except snapshot.GPUUnavailable as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {len(paths)} snapshot(s) to {args.snapshots}"
          + (": " + ", ".join(os.path.basename(p) for p in paths) if paths else ""))


def run(args) -> int:
    """Picture the viewport at `--frame`, the colliding triangles in the overlay colour."""
    size = parse_size(args.size)
    if not args.png.lower().endswith(".png"):
        raise UsageError(f"--png must name a .png file, got '{args.png}'")
    from ..core.report import writing as core_report

    try:
        core_report.check_output_path(args.png, "--png")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    from ..addon import extract, snapshot

    def collide(bpy, scene, meshes, notes):
        # In the evaluation of --as-rendered; the picture is drawn after it.
        from ..addon import scanner

        print_notes(notes)
        if not args.self_collision and len(meshes) < 2:
            raise UsageError("only one object: pass --self for self-collision, or name two "
                             "objects")
        try:
            sc = scanner.Scanner(meshes, self_collision=args.self_collision)
            res = snapshot.scanner_result(sc, scene, args.frame)
        except extract.RigError as exc:
            raise UsageError(str(exc)) from None
        return scene, res, {o.name: o for o in sc.objects}, evaluation_line()

    scene, res, objects, line = run_loaded(args, collide)
    try:
        scene.frame_set(args.frame)
        snapshot.snapshot_result(scene, res, objects, os.path.abspath(args.png), size)
    except snapshot.GPUUnavailable as exc:
        raise UsageError(str(exc)) from None
    print(scene_line(scene))
    print(f"frame {args.frame}: {res.n_pairs} colliding pair(s); wrote {args.png} "
          f"({size[0]}x{size[1]})")
    print(line)
    return 0
