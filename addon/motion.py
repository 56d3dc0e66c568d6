"""Which drawn meshes move in the checked frames, and the motion model of each, decided
from what Blender evaluates, not from a list of object settings.

*Who takes part* (`characters`): every mesh the depsgraph draws (`addon.drawn`) that
Blender's evaluation moves or deforms in the checked frames: an armature deforms it (an
Armature modifier, or armature parenting and its virtual modifier); a parent, a constraint
or animation moves it (its own, or its instancer's); an animated or driven shape key, a
cache (MeshSequenceCache) or a modifier that follows another object (Surface Deform, Mesh
Deform, Lattice, Shrinkwrap, ...) can deform it; or its evaluated world positions differ
between frames sampled over the scene's range (`SAMPLES` of them, the ends included, and
the ends of the checked frames: every chunk of one shot samples the same frames but
those), which catches what no setting names (a Geometry Nodes tree reading the time).
Every other mesh is still at those frames and skipped, with a note.

*The model* (`checked_rig`): the on-demand refit only where the evaluated mesh is the
armature's skinning of the rest mesh (`Rig.unsupported` empty); the rigid transform only
where it is the rest mesh moved by the world matrix; every other mesh is refitted bottom-up
from Blender's evaluated positions, which is exact for any deformation. The chosen model is
verified on the rest pose and the sampled frames (`verify`): when Blender's positions do
not match it, the rig falls back to the bottom-up refit and says why.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..core import skinning
from ..core.rig import Rig
from . import drawn, evaluation, extract

#: How many frames of the range are sampled (spread evenly, both ends included).
SAMPLES = 5

#: The skinning model holds when it reproduces Blender's positions to this fraction of the
#: mesh's size (Blender deforms in float32: its rounding is about 1e-7 of the size; a
#: wrong model is off by a visible fraction, 0.4 on legacy-parented Cesium Man).
SKIN_TOLERANCE = 1e-5

#: Modifier types whose result depends on the frame or on other objects by their nature.
_FOLLOWING = {"MESH_SEQUENCE_CACHE", "SURFACE_DEFORM", "MESH_DEFORM", "LATTICE", "SHRINKWRAP",
              "CAST", "CURVE", "HOOK", "DATA_TRANSFER", "WARP", "MESH_CACHE", "OCEAN",
              "WAVE", "DYNAMIC_PAINT", "CLOTH", "SOFT_BODY", "COLLISION", "EXPLODE",
              "PARTICLE_INSTANCE", "NODES"}


def sample_frames(frames: list[int]) -> list[int]:
    """Up to `SAMPLES` frames of `frames`, spread evenly, the first and last included."""
    fr = sorted(set(int(f) for f in frames))
    if len(fr) <= SAMPLES:
        return fr
    idx = np.unique(np.round(np.linspace(0, len(fr) - 1, SAMPLES)).astype(int))
    return [fr[i] for i in idx]


@dataclass
class Sampled:
    """Blender's evaluation of the drawn meshes at a few frames.

    Attributes:
        frames: the frames sampled.
        world: per participant (by `_key`), per frame, its (V, 3) float64 world positions
            (None where the vertex count changed).
        local: per source object (by pointer), per frame, its (V, 3) float64 mesh-local
            evaluated positions (Blender's float32 values).
        poses: per skinned source object, per frame, its `Pose` (None where not skinned).
    """

    frames: list[int]
    world: dict = field(default_factory=dict)
    local: dict = field(default_factory=dict)
    poses: dict = field(default_factory=dict)


def _key(ob):
    return ob.key if drawn.is_instance(ob) else ob.as_pointer()


def sample(scene, meshes: list, frames: list[int]) -> Sampled:
    """Evaluate `scene` at each of `frames` (then back at its current frame) and read every
    mesh of `meshes` (objects or `drawn.Instance`s), in the current `evaluation`. The frame
    changes are the project's own (`state.quiet`), not pose edits."""
    from .state import quiet

    out = Sampled(list(frames))
    current = scene.frame_current, scene.frame_subframe
    sources = {}
    for ob in meshes:
        sources.setdefault(drawn.source_of(ob).as_pointer(), drawn.source_of(ob))
    with quiet():
        try:
            for f in frames:
                evaluation.frame_set(scene, f)
                dg = evaluation.depsgraph()
                drawn.refresh(dg)
                for ptr, src in sources.items():
                    out.local.setdefault(ptr, []).append(
                        extract.evaluated_positions(src, dg, world=False))
                    pose = None
                    if extract.modifier_report(src).armature is not None:
                        try:
                            pose = extract.pose_from_object(src, dg)
                        except extract.RigError:
                            pose = None
                    out.poses.setdefault(ptr, []).append(pose)
                for ob in meshes:
                    local = out.local[drawn.source_of(ob).as_pointer()][-1]
                    M = np.array(ob.evaluated_get(dg).matrix_world, dtype=np.float64)
                    out.world.setdefault(_key(ob), []).append(local @ M[:3, :3].T + M[:3, 3])
        finally:
            evaluation.frame_set(scene, current[0], current[1])
            drawn.refresh(evaluation.depsgraph())
    return out


def _animated(idb) -> bool:
    ad = getattr(idb, "animation_data", None)
    return ad is not None and (ad.action is not None or len(ad.drivers) > 0
                               or len(ad.nla_tracks) > 0)


def settings_that_move(ob) -> str:
    """What in `ob`'s settings (or its instancer's) moves or deforms it between frames, in
    words; "" when nothing does. Its evaluated positions may still move (`takes_part`)."""
    src = drawn.source_of(ob)
    rep = extract.modifier_report(src)
    if rep.armature is not None:
        how = "armature parenting" if rep.virtual else "Armature modifier"
        return f"armature '{rep.armature.name}' ({how})"
    moved = extract.what_moves(src)
    if moved:
        return moved
    keys = src.data.shape_keys
    if keys is not None and len(keys.key_blocks) > 1 and _animated(keys):
        return "animated shape keys"
    for m in src.modifiers:
        if evaluation.shows(m) and m.type in _FOLLOWING:
            return f"modifier '{m.name}' ({extract.modifier_label(m)})"
    if drawn.is_instance(ob):
        moved = extract.what_moves(ob.top)
        if moved:
            return f"its instancer '{ob.top.name}' ({moved})"
    return ""


def positions_change(ob, sampled: Sampled) -> int | None:
    """The first sampled frame at which `ob`'s world positions differ from the first
    sampled frame's, or None."""
    seq = sampled.world.get(_key(ob), [])
    for f, pos in zip(sampled.frames[1:], seq[1:]):
        if pos.shape != seq[0].shape or not np.array_equal(pos, seq[0]):
            return f
    return None


def takes_part(ob, sampled: Sampled | None) -> str:
    """What moves drawn mesh `ob` in the checked frames, in words ("" when it is still
    there): `settings_that_move`, or the sampled evaluation."""
    why = settings_that_move(ob)
    if why or sampled is None:
        return why
    f = positions_change(ob, sampled)
    if f is not None:
        return (f"its evaluated positions change between frames {sampled.frames[0]} and "
                f"{f}")
    return ""


def verify(ob, rig: Rig, sampled: Sampled | None) -> str | None:
    """Why `rig`'s motion model does not reproduce Blender's positions of `ob` at the
    sampled frames (None when it does, or when nothing is to verify: a rig refitted
    bottom-up from Blender's positions, `Rig.unsupported`, is exact for any deformation).

    A rigid rig must be the mesh's own positions at every frame (only its world matrix
    moves); a skinned rig must be `core.skinning`'s result within `SKIN_TOLERANCE` of the
    mesh's size."""
    if sampled is None or rig.unsupported:
        return None
    src = drawn.source_of(ob)
    ptr = src.as_pointer()
    for k, f in enumerate(sampled.frames):
        local = sampled.local[ptr][k]
        if local.shape != rig.rest_positions.shape:
            return f"Blender draws {local.shape[0]:,} vertices at frame {f}, not {rig.n_vertices:,}"
        if rig.is_rigid:
            if not np.array_equal(local, rig.rest_positions):
                dev = float(np.abs(local - rig.rest_positions).max())
                return (f"its evaluated mesh is not its rest mesh at frame {f} (off by "
                        f"{dev:.3g}): something deforms it")
            continue
        pose = sampled.poses[ptr][k]
        if pose is None:
            return f"its armature's pose could not be read at frame {f}"
        M = pose.mesh_world
        ours = skinning.skin_rig(rig, pose)
        theirs = local @ M[:3, :3].T + M[:3, 3]
        dev = float(np.abs(ours - theirs).max()) if ours.size else 0.0
        # Blender deforms in the mesh's space, in float32: its size there (and its
        # distance from the mesh origin), scaled to world space.
        extent = float(max(np.ptp(local, axis=0).max(), np.abs(local).max())) if local.size else 0.0
        scale = extent * float(np.linalg.svd(M[:3, :3], compute_uv=False).max())
        if not dev <= SKIN_TOLERANCE * scale:
            return (f"the armature's skinning differs from Blender's positions by "
                    f"{dev:.3g} ({dev / max(scale, 1e-30):.1%} of its size) at frame {f}")
    return None


def checked_rig(ob, sampled: Sampled | None, moved: str = "") -> Rig:
    """`extract.rig_from_object` of `ob`, with its model verified (`verify`): when Blender's
    positions do not match the model, the rig is refitted bottom-up, and its `unsupported`
    and notes say why."""
    rig = extract.rig_from_object(ob, moved=moved)
    why = verify(ob, rig, sampled)
    if why:
        model = "rigid transform" if rig.is_rigid else "skinning"
        rig.unsupported.append(f"the {model} model does not hold: {why}")
        rig.notes.append(f"refitted from Blender's positions: {why}")
    return rig


@dataclass
class Selection:
    """The meshes a scan checks, what moves each, and the notes on those left out."""

    meshes: list
    moved: list[str]
    notes: list[str]
    sampled: Sampled | None

    def why(self, ob) -> str:
        """What moves `ob` ("" when it is not among the meshes)."""
        for m, why in zip(self.meshes, self.moved):
            if m is ob or (not drawn.is_instance(m) and m == ob):
                return why
        return ""


def _layer_collections(lc, off: bool = False):
    """(layer collection, excluded or disabled here or above) of a view layer's tree."""
    off = off or lc.exclude or evaluation.hidden(lc.collection)
    yield lc, off
    for child in lc.children:
        yield from _layer_collections(child, off)


def left_out_reason(ob, depsgraph) -> str:
    """Why Blender does not draw mesh object `ob` (for the notes), "" when it does."""
    import bpy

    if evaluation.hidden(ob):
        return ("it is disabled in renders" if evaluation.mode() == evaluation.RENDER
                else "it is disabled in viewports")
    holding = [off for lc, off in _layer_collections(bpy.context.view_layer.layer_collection)
               if ob.name_full in {o.name_full for o in lc.collection.objects}]
    if (holding and all(holding)) or not ob.evaluated_get(depsgraph).is_evaluated:
        return "its collection is excluded or disabled in this view layer"
    if evaluation.mode() == evaluation.VIEWPORT and ob.hide_get():
        return "it is hidden"
    return ""


def is_helper(ob) -> bool:
    """Displayed as Wire or Bounds: a Mesh Deform cage, a helper; drawn but not a surface
    anyone looks at, so left out unless named (`--object`). Renders ignore the display
    type (they draw every mesh they evaluate as a surface): no helper in render mode."""
    if evaluation.mode() == evaluation.RENDER:
        return False
    return drawn.source_of(ob).display_type in {"WIRE", "BOUNDS"}


def characters(scene, frames: list[int] | None = None, chosen=None,
               named: list | None = None) -> Selection:
    """The drawn meshes that take part in `frames` (default the scene's range).

    Args:
        chosen: original objects to choose among (the panel's selection or collection):
            a drawn mesh takes part when it, or the instancer that draws it, is chosen.
            None: the whole view layer.
        named: drawn meshes asked for by name (`--object`): they take part whatever they
            display as, if anything moves them.
    Returns:
        a `Selection`; the notes name every mesh left out that something could move
        (not drawn, a helper, still in these frames) with the reason.
    """
    if frames is None:
        frames = list(range(scene.frame_start, scene.frame_end + 1))
    dg = evaluation.depsgraph()
    every = drawn.drawn_meshes(dg)
    pool = chosen if chosen is not None else scene.objects
    if named is not None:
        candidates = list(named)
    else:
        # Real objects in the order of `pool` (the scene's, or the choice's), then the
        # instances in the depsgraph's order.
        order = {ob.as_pointer(): k for k, ob in enumerate(pool)}
        real = sorted((m for m in every if not drawn.is_instance(m)
                       and m.as_pointer() in order), key=lambda m: order[m.as_pointer()])
        inst = [m for m in every if drawn.is_instance(m)
                and (chosen is None or m.source.as_pointer() in order
                     or m.top.as_pointer() in order)]
        candidates = real + inst
    notes: list[str] = []
    shown = []
    for m in candidates:
        if named is None and is_helper(m):
            if settings_that_move(m):
                notes.append(f"'{m.name}' is displayed as {drawn.source_of(m).display_type.title()} "
                             "(a cage or a helper): skipped (name it with --object to check it)")
            continue
        shown.append(m)
    # The scene's range is sampled whatever part of it is checked, so that the chunks of
    # one shot (`scan --jobs`, farm tasks) choose the same meshes and models; the checked
    # range's ends are added.
    span = sorted(set(sample_frames(range(scene.frame_start, scene.frame_end + 1)))
                  | {min(frames), max(frames)})
    sampled = sample(scene, shown, span) if shown else None
    meshes, moved = [], []
    for m in shown:
        why = takes_part(m, sampled)
        if why:
            meshes.append(m)
            moved.append(why)
        else:
            notes.append(f"'{m.name}' is skipped: nothing moves it in frames "
                         f"{min(frames)}-{max(frames)} (no armature, parent, constraint, "
                         "animation, shape key, cache or deforming modifier; the same "
                         f"evaluated positions at frames {', '.join(map(str, sampled.frames))})")
    drawn_ptrs = {m.as_pointer() for m in every if not drawn.is_instance(m)}
    if named is None:
        for ob in pool:
            if ob.type != "MESH" or ob.as_pointer() in drawn_ptrs:
                continue
            if settings_that_move(ob):
                why = left_out_reason(ob, dg) or "Blender does not draw it"
                drawn_by = sorted({m.top.name for m in every
                                   if drawn.is_instance(m) and m.source == ob})
                also = (f"; the instances {', '.join(drawn_by)} draw it and are checked"
                        if drawn_by else "")
                notes.append(f"'{ob.name_full}' is not checked: {why} (Blender does not "
                             f"draw it){also}")
    return Selection(meshes, moved, notes, sampled)


def rigs(meshes: list, sampled: Sampled | None, moved: list[str]) -> list[Rig]:
    """`checked_rig` of each mesh, read and verified once per source object: the instances
    of one mesh get copies of its rig under their own names (`moved`: per mesh, what
    moves it, `takes_part`)."""
    by_source: dict[int, Rig] = {}
    out = []
    for ob, why in zip(meshes, moved):
        ptr = drawn.source_of(ob).as_pointer()
        rig = by_source.get(ptr)
        if rig is None:
            rig = by_source[ptr] = checked_rig(ob, sampled, why)
            out.append(rig)
        else:
            out.append(dataclasses.replace(rig, name=ob.name if rig.is_rigid else ob.name_full))
    return out
