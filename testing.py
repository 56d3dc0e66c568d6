"""Collision checks for a rig's own test suite (plain pytest with the pip `bpy`).

    from skin_collide.testing import assert_no_collisions

    def test_walk_cycle_keeps_the_arms_out_of_the_body():
        assert_no_collisions("rigs/hero.blend", frames=(1, 48), objects=["Hero"])

`collisions` returns the collision episodes (runs of consecutive colliding frames per
object pair, `core.contacts.pairs.Episode`), with the same filters as the panel and
`python -m skin_collide scan`: rest-pose contacts (designed-in overlaps) ignored by default,
and an optional allow-list of reviewed polygon pairs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Sequence

from .core.contacts import pairs as contacts
from .core.contacts.pairs import Episode

__all__ = ["collisions", "assert_no_collisions", "Episode"]


def _frames(scene, frames) -> list[int]:
    if frames is None:
        return list(range(scene.frame_start, scene.frame_end + 1))
    if isinstance(frames, tuple) and len(frames) == 2:
        return list(range(int(frames[0]), int(frames[1]) + 1))
    return [int(f) for f in frames]


def collisions(path_or_objects, frames=None, self_collision: bool = True,
               ignore_rest_contacts: bool = True, objects: Sequence[str] | None = None,
               mode: str = "on-demand", allow: str | None = None,
               crossing_only: bool = False, min_length: float = 0.0,
               ignore_bones=None, ignore_groups=None, scene: str | None = None,
               clearance: float | str | None = None, as_rendered: bool = False,
               enable_autoexec: bool = False, allow_failed_drivers: bool = False,
               allow_missing: bool = False, between_frames: bool = False,
               subframes: int = 1) -> list:
    """Scan and return the collision episodes (an empty list when nothing collides), with
    `between_frames` the pass-through episodes after them, and with `clearance` the near
    episodes last.

    Args:
        path_or_objects: a .blend/.glb/.gltf path (it replaces the current scene), or a list
            of skinned mesh objects of the current scene.
        frames: ``(start, end)`` inclusive, or a list of frames; default the scene's range.
        self_collision: also check each mesh against itself.
        ignore_rest_contacts: drop the contacts present in the rest pose.
        objects: names of the meshes to check (default: every mesh the scene draws that
            Blender's evaluation moves in the frames, `addon.motion.characters`; a mesh a
            collection instance draws as ``"<instancer>/<mesh>"``).
        mode: the older spelling of the method (`core.methods.registry.MODES`:
            "on-demand", "bottom-up" or "rebuild", Blender's BVHTree).
        allow: path of a reviewed allow-list (scan JSON, exported JSON/CSV).
        crossing_only: drop touching contacts (`scan --crossing-only`).
        min_length: drop contacts whose intersection curve is shorter (scene units).
        ignore_bones: bone pairs whose contacts are fine, e.g. ``[("hand.L", "hand.R")]``.
        ignore_groups: ignore zones, ``{"Body": ["pinned"]}``: pairs with a polygon of
            that mesh inside one of its vertex groups are never reported.
        scene: the name of the scene to check (`scan --scene`), made the window's scene
            for the check, with its first view layer, and put back after; default the
            current scene (after loading a file: the one it was saved on).
        clearance: a distance D (scene units, or a string with a unit, "2mm", as `scan
            --clearance`): polygons of two different objects closer than D that do not
            intersect are near contacts too, returned as their episodes by bone pair
            (`core.contacts.clearance.NearEpisode`: objects, bones, frames, the closest
            distance and its frame) after the collision episodes. Self-clearance is not
            checked; `min_length` and `crossing_only` do not apply to near contacts.
        enable_autoexec: open the file trusted, running its registered text blocks as
            Blender does with auto-run on (`scan --enable-autoexec`).
        allow_failed_drivers: check the shot as it evaluates here even when drivers that
            move the characters fail; otherwise that is a ValueError naming them.
        allow_missing: check what loaded when linked data is missing; otherwise that is a
            ValueError naming the libraries.
        as_rendered: check the surfaces renders draw (`scan --as-rendered`: Blender's
            render-mode evaluation, `addon.evaluation`) instead of the viewport's. The
            scene's render engine, camera and frame are put back after.
        between_frames: also check every step between consecutive checked frames, each
            vertex moving on a straight line from one frame to the next (`scan
            --between-frames`): polygon pairs that touch only between two frames are
            returned as their episodes by bone pair (`core.contacts.passing.PassEpisode`:
            objects, bones, the step's frames). The last frame's step goes to the next
            frame when it is in the scene's range, as `scan` does.
        subframes: with `between_frames`, samples per frame (1 to 64, `scan --subframes`):
            the animation is evaluated at f + k/subframes, the motion linear between.
    Raises ValueError on bad input (the message says why).
    """
    rep = _scan(path_or_objects, frames, self_collision, ignore_rest_contacts, objects, mode,
                allow, crossing_only, min_length, ignore_bones, ignore_groups, scene, clearance,
                _Seen(as_rendered, enable_autoexec, allow_failed_drivers, allow_missing),
                between=(between_frames, subframes))
    return (rep.episodes() + (rep.pass_episodes() if between_frames else [])
            + (rep.near_episodes() if rep.clearance is not None else []))


@dataclass(frozen=True)
class _Seen:
    """How the check sees the shot: which evaluation (`scan --as-rendered`,
    `addon.evaluation`), and what it may trust and go on without (`scan`'s
    --enable-autoexec, --allow-failed-drivers, --allow-missing; `addon.trust`)."""

    as_rendered: bool = False
    enable_autoexec: bool = False
    allow_failed_drivers: bool = False
    allow_missing: bool = False


def _scan(path_or_objects, frames, self_collision, ignore_rest_contacts, objects, mode, allow,
          crossing_only=False, min_length=0.0, ignore_bones=None, ignore_groups=None,
          scene=None, clearance=None, seen: _Seen = _Seen(), between=(False, 1)):
    from .addon import evaluation, files, report, scenes, trust

    if isinstance(path_or_objects, (str, os.PathLike)):
        try:
            report.load_quietly(os.fspath(path_or_objects), seen.enable_autoexec)
        except files.FileError as exc:
            raise ValueError(str(exc)) from None
    try:
        chosen, layer = scenes.choose(scene)
    except scenes.SceneError as exc:
        raise ValueError(str(exc)) from None
    missing = trust.missing_data(chosen)
    if missing and not seen.allow_missing:
        raise ValueError(trust.missing_line(missing).replace("--allow-missing",
                                                             "allow_missing=True"))
    with scenes.use(chosen, layer):
        try:
            rep = evaluation.run(chosen, lambda: _scan_scene(
                path_or_objects, frames, self_collision, ignore_rest_contacts, objects, mode,
                allow, crossing_only, min_length, ignore_bones, ignore_groups, clearance, seen,
                between),
                evaluation.RENDER if seen.as_rendered else evaluation.VIEWPORT, layer)
        except evaluation.EvaluationError as exc:
            raise ValueError(str(exc)) from None
    return rep


def _check_drivers(meshes, seen: _Seen) -> None:
    """A ValueError naming the drivers that move `meshes` and failed, unless allowed."""
    from .addon import trust

    failed = [] if seen.allow_failed_drivers else trust.failed_drivers(meshes)
    if failed:
        line = trust.drivers_line(failed, seen.enable_autoexec)
        raise ValueError(line.replace("--enable-autoexec", "enable_autoexec=True")
                         .replace("--allow-failed-drivers", "allow_failed_drivers=True"))


def _scan_scene(path_or_objects, frames, self_collision, ignore_rest_contacts, objects, mode,
                allow, crossing_only, min_length, ignore_bones, ignore_groups, clearance=None,
                seen: _Seen = _Seen(), between=(False, 1)):
    """`_scan` in the context's scene (`addon.scenes.use`)."""
    import bpy

    from .addon import evaluation, motion, scanner, scenes
    from .core.contacts import filters as contact_filters
    from .core.scan import ScanSettings

    scene = bpy.context.scene
    frame_list = _frames(scene, frames)
    if not frame_list:
        raise ValueError(f"empty frame range {frames}")
    if isinstance(path_or_objects, (str, os.PathLike)):
        sel = motion.characters(scene, frame_list)
        meshes = sel.meshes
        if not meshes and objects is None:
            raise ValueError(scenes.no_character_message(scene, bpy.context.view_layer,
                                                         how="pass scene=NAME"))
    else:
        meshes = list(path_or_objects)
        sel = motion.characters(scene, frame_list, named=meshes)
    if objects is not None:
        by_name = {ob.name_full: ob for ob in meshes}     # linked ones: "Name [lib.blend]"
        missing = [n for n in objects if n not in by_name]
        if missing:
            raise ValueError(f"no character mesh named {', '.join(map(repr, missing))}")
        meshes = [by_name[n] for n in objects]
    if not meshes:
        raise ValueError("no character to check (no skinned mesh, no rigid prop)")
    _check_drivers(meshes, seen)
    flt = contact_filters.ContactFilter(
        crossing_only=bool(crossing_only), min_length=min_length,
        ignore_bones={tuple(p) for p in ignore_bones or ()},
        ignore_groups={k: set(v) for k, v in (ignore_groups or {}).items()})
    between_frames, subframes = bool(between[0]), between[1]
    settings = ScanSettings.of(mode, self_collision=self_collision,
                               clearance=_clearance(clearance, scene), contact_filter=flt,
                               allow=contacts.load_allow_list(allow) if allow else (),
                               between=between_frames, subframes=subframes)
    step_to = None
    if between_frames:
        from .core.report import chunks

        step_to = chunks.last_step_to(frame_list[-1], scene.frame_start, scene.frame_end)
    sc = scanner.Scanner(meshes, settings=settings, selection=sel)
    current = scene.frame_current
    try:
        if ignore_rest_contacts:
            sc.ignore_contacts(sc.rest_pose_contacts(scene))
        rep = sc.run(scene, frame_list, last_step_to=step_to)
        _check_drivers(meshes, seen)           # one that failed at a frame not sampled
    finally:
        evaluation.frame_set(scene, current)
    return rep


def _clearance(clearance, scene) -> float | None:
    """`clearance` in scene units: a number as it is, a string as `scan --clearance`."""
    if clearance is None or isinstance(clearance, (int, float)):
        return None if clearance is None else float(clearance)
    from .cli import scan_flags
    from .cli.errors import UsageError

    class _Args:
        pass

    args = _Args()
    args.clearance = clearance
    try:
        return scan_flags.clearance(args, scene)
    except UsageError as exc:
        raise ValueError(str(exc)) from None


def assert_no_collisions(path_or_objects, frames=None, self_collision: bool = True,
                         ignore_rest_contacts: bool = True, objects: Sequence[str] | None = None,
                         mode: str = "on-demand", allow: str | None = None,
                         crossing_only: bool = False, min_length: float = 0.0,
                         ignore_bones=None, ignore_groups=None,
                         scene: str | None = None,
                         clearance: float | str | None = None, as_rendered: bool = False,
                         enable_autoexec: bool = False, allow_failed_drivers: bool = False,
                         allow_missing: bool = False, between_frames: bool = False,
                         subframes: int = 1) -> None:
    """`collisions(...)`, raising AssertionError that says which frames, which objects and
    how many pairs when there is any collision episode, then the contact episodes by bone
    pair with their lengths (the longest crossings first, at most 10); with
    `between_frames`, also when something passes through between frames (one line each:
    "A × B, bone × bone: passes through between frames 2 and 3"); with `clearance`, also
    when there is a near episode (one line each: objects, bones, frames, closest)."""
    from .core.contacts import groups as contact_groups
    from .core.contacts import passing

    rep = _scan(path_or_objects, frames, self_collision, ignore_rest_contacts, objects, mode,
                allow, crossing_only, min_length, ignore_bones, ignore_groups, scene, clearance,
                _Seen(as_rendered, enable_autoexec, allow_failed_drivers, allow_missing),
                between=(between_frames, subframes))
    eps = rep.episodes()
    passes = rep.pass_episodes() if between_frames else []
    near = rep.near_episodes() if rep.clearance is not None else []
    if eps or near or passes:
        lines = [f"{len(eps)} collision episode(s):"] + [f"  {e.describe()}" for e in eps]
        lines.append(contact_groups.summary(rep.contact_episodes()))
        if passes:
            lines.append(passing.summary(passes))
        if near:
            from .core.contacts import clearance as near_contacts

            lines.append(near_contacts.summary(near))
        raise AssertionError("\n".join(lines))
