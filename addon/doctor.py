"""What skin_collide sees in a skinned mesh, and how closely core.skinning matches Blender."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..core import skinning
from ..core.methods import registry
from ..core.rig import Rig
from . import animation, evaluation, extract


@dataclass
class MeshReport:
    name: str
    armature: str
    rig: Rig
    facts: list[tuple[str, str]] = field(default_factory=list)
    frames_label: str = ""
    max_deviation: float = float("nan")
    max_deviation_relative: float = float("nan")


def model_text(rig: Rig) -> str:
    """The motion model a rig is collided with, and why, for people."""
    if rig.unsupported:
        return "bottom-up from Blender's evaluated positions: " + "; ".join(rig.unsupported)
    if rig.is_rigid:
        return f"rigid transform: the rest mesh moved by its world matrix ({rig.rigid})"
    how = "dual-quaternion" if rig.preserve_volume else "linear blend"
    return f"skinning ({how}): the evaluated mesh is the armature's skinning of the rest mesh"


def describe(ob, rig: Rig | None = None) -> MeshReport:
    """Static facts about a character mesh: skinned, or a rigid prop (raises
    extract.RigError when it is neither). The counts are those of the surface checked
    (`extract.rig_from_object`: the evaluated one when modifiers change the topology).
    `rig`: the rig as a scan reads it (`addon.motion.checked_rig`: its model verified on
    sampled frames), default read here from the settings."""
    rig = extract.rig_from_object(ob) if rig is None else rig
    rep = extract.modifier_report(ob)
    counts = rig.influence_counts()
    sums = rig.weight_sums()
    weighted = counts > 0
    sizes = np.diff(rig.poly_ptr)
    used = np.zeros(rig.n_bones, bool)
    used[np.unique(rig.weight_bone)] = True
    keys = ob.data.shape_keys
    n_keys = len(keys.key_blocks) - 1 if keys is not None and len(keys.key_blocks) else 0
    chosen, passed_over = registry.resolve(registry.DEFAULT, rig)
    off = np.abs(sums[weighted] - 1.0) > 1e-3
    arm = rep.armature
    r = MeshReport(ob.name_full, arm.name_full if arm is not None else "", rig)
    facts = [("armature", arm.name_full if arm is not None else "none (a rigid prop)")]
    if rig.is_rigid:
        facts.append(("rigid", f"moves with {rig.rigid}, one transform per frame"))
    facts += [
        ("surface", extract.describe_surface(rig)),
        ("vertices", str(rig.n_vertices)),
        ("triangles", f"{rig.n_triangles} (polygons {rig.n_polygons}, n-gons {int((sizes > 4).sum())})"),
    ]
    if not rig.is_rigid:
        bbones = [b.name for b in arm.data.bones if b.bbone_segments > 1]
        facts += [
            ("bones", f"{rig.n_bones} (deform {int(rig.bone_deform.sum())}, weighting this mesh {int(used.sum())})"),
            ("max_influences", str(int(counts.max()) if counts.size else 0)),
            ("weight_sums", (f"min {sums[weighted].min():.4f} max {sums[weighted].max():.4f}, "
                             f"{int(off.sum())} off by >1e-3 (Blender normalizes them), "
                             f"{int((~weighted).sum())} unweighted (left in place)")
             if weighted.any() else "no vertex carries a deform-bone weight"),
            ("preserve_volume", "on" if rig.preserve_volume else "off"),
        ]
    facts += [("shape_keys", str(n_keys))]
    if not rig.is_rigid:
        facts += [("modifiers_before", ", ".join(rep.before) or "none"),
                  ("modifiers_after", ", ".join(rep.after) or "none"),
                  ("bbones", ", ".join(bbones) if bbones else "none")]
    else:
        facts += [("modifiers", ", ".join(rep.before) or "none")]
    facts += [
        ("model", model_text(rig)),
        ("unsupported", "; ".join(rig.unsupported) or "none"),
        ("refit", f"{chosen.id}: {chosen.label}"
                  + (f" (instead of {'; '.join(passed_over)})" if passed_over else "")),
    ]
    r.facts = facts
    for note in rig.notes:
        r.facts.append(("note", note))
    return r


def measure_deviation(scene, ob, report: MeshReport, frames: list[int]) -> None:
    """Max |core.skinning − Blender's evaluated mesh| over `frames`, absolute (scene units)
    and relative to the evaluated mesh's bounding-box size (a rigid prop: its rest mesh
    moved by its world matrix). Not measured (NaN) on an evaluated surface: it is refitted
    from Blender's positions, and nothing skins it."""
    if report.rig.surface:
        report.max_deviation = report.max_deviation_relative = float("nan")
        return
    worst = worst_rel = 0.0
    for f in frames:
        evaluation.frame_set(scene, f)
        dg = evaluation.depsgraph()
        ref = extract.evaluated_positions(ob, dg)
        if ref.shape[0] != report.rig.n_vertices:
            report.max_deviation = float("inf")
            report.max_deviation_relative = float("inf")
            return
        pose = extract.rigid_pose(ob, dg) if report.rig.is_rigid else \
            extract.pose_from_object(ob, dg)
        ours = skinning.skin_rig(report.rig, pose)
        dev = float(np.abs(ours - ref).max()) if ref.size else 0.0
        size = float(np.ptp(ref, axis=0).max()) if ref.size else 1.0
        worst = max(worst, dev)
        worst_rel = max(worst_rel, dev / max(size, 1e-12))
    report.max_deviation = worst
    report.max_deviation_relative = worst_rel


def settle(ob, report: MeshReport, tolerance: float) -> MeshReport:
    """The report again, its rig refitted bottom-up, when `measure_deviation` found the
    model off by more than `tolerance` of the mesh's size on a frame the build did not
    sample: the facts never say "unsupported: none" beside a large deviation."""
    rel = report.max_deviation_relative
    if report.rig.unsupported or not rel > tolerance:
        return report
    report.rig.unsupported.append(
        f"the model is off by {report.max_deviation:.3g} ({rel:.1%} of the mesh's size) on "
        "the frames measured")
    out = describe(ob, report.rig)
    out.max_deviation, out.max_deviation_relative = report.max_deviation, rel
    return out


def frames_to_check(scene, arm_ob) -> tuple[list[int], str]:
    """The frames of the armature's assigned action, else the scene's frame range (also
    without an armature: a rigid prop moved by no armature)."""
    ad = arm_ob.animation_data if arm_ob is not None else None
    act = ad.action if ad is not None else None
    if act is not None:
        frames = animation.action_frames(act)
        return frames, f"action '{act.name}' frames {frames[0]}-{frames[-1]}"
    frames = list(range(scene.frame_start, scene.frame_end + 1))
    return frames, f"scene frames {scene.frame_start}-{scene.frame_end} (no action)"
