"""What a mesh's settings say, without evaluating anything: its modifier stack around the
Armature modifier, which armature deforms it, what moves or deforms it otherwise, and
which meshes of a scene are characters.

Which meshes take part is `addon.motion`'s (what Blender draws and moves); here, what
their settings say: a mesh is *skinned* by an enabled Armature modifier that names an
armature, or by armature parenting (`armature_parent`: Blender's virtual Armature
modifier, first in the stack; `VirtualArmature` stands for its settings). A mesh without
an armature is a rig without bones (every vertex on the virtual static joint) moved by its
world matrix: a *rigid prop* when something moves it as a whole (`what_moves`: a parent
of any type, an enabled object constraint, animation data on the object), refitted from
Blender's positions when something deforms it too (`deformers`: modifiers, shape keys, a
deforming parent). `character_meshes` is the settings-only choice (no frame is evaluated).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import evaluation


@dataclass
class ModifierReport:
    """How a mesh's modifier stack relates to its Armature modifier."""

    armature_modifier: object | None
    armature: object | None
    before: list[str]
    after: list[str]
    other_armatures: list[str]
    #: The armature deforms the mesh through armature parenting (``parent_type`` 'ARMATURE',
    #: "With Automatic Weights" and the like): Blender then puts a virtual Armature
    #: modifier first in the stack (vertex groups; envelopes for vertices without a
    #: deform weight), so every real modifier comes after it.
    virtual: bool = False


def armature_parent(ob):
    """The armature that deforms `ob` through armature parenting, or None."""
    p = ob.parent
    if p is not None and ob.parent_type == "ARMATURE" and p.type == "ARMATURE":
        return p
    return None


def modifier_report(ob) -> ModifierReport:
    """Find the (first enabled) Armature modifier and the modifiers around it.

    Only modifiers on in the current evaluation count (shown in the viewport, or in
    renders: `addon.evaluation.shows`), because that is what the evaluated mesh (and so
    the user) sees.
    """
    arm_mod = None
    before: list[str] = []
    after: list[str] = []
    others: list[str] = []
    for mod in ob.modifiers:
        if not evaluation.shows(mod):
            continue
        if mod.type == "ARMATURE" and mod.object is not None and arm_mod is None:
            arm_mod = mod
            continue
        if mod.type == "ARMATURE":
            others.append(mod.name)
        label = f"{mod.name} ({mod.type})"
        (before if arm_mod is None else after).append(label)
    parent = armature_parent(ob)
    if parent is not None and arm_mod is None:
        return ModifierReport(None, parent, [], before, others, virtual=True)
    if parent is not None:
        others.append(f"armature parent '{parent.name}' (a second, virtual Armature modifier)")
    return ModifierReport(arm_mod, arm_mod.object if arm_mod else None, before, after, others)


def skinned_meshes(scene) -> list:
    """Mesh objects of `scene` that an armature deforms: an enabled Armature modifier with
    an armature, or armature parenting (`armature_parent`)."""
    return [ob for ob in scene.objects
            if ob.type == "MESH" and modifier_report(ob).armature is not None]


def what_moves(ob) -> str:
    """What moves mesh `ob` as a whole, for a mesh without an Armature modifier (a rigid
    prop), in words; "" when nothing does. In this order: its parent (any parent type),
    an enabled object constraint, animation data on the object (an action, drivers or NLA
    tracks). The module docstring states the rule."""
    parent = ob.parent
    if parent is not None:
        if ob.parent_type == "BONE" and ob.parent_bone:
            return f"bone '{ob.parent_bone}' of '{parent.name}'"
        return f"parent '{parent.name}'"
    for con in ob.constraints:
        if not con.mute and con.influence > 0.0:
            return f"constraint '{con.name}'"
    ad = ob.animation_data
    if ad is not None and (ad.action is not None or len(ad.drivers) or len(ad.nla_tracks)):
        return "its own animation"
    return ""


def deformers(ob) -> list[str]:
    """What may deform mesh `ob` besides an armature, in words, from its settings: its
    viewport modifiers, its shape keys, a parent that deforms it (a lattice or a curve
    with parent type Lattice/Armature: a virtual modifier). A deformation that none of
    these names (a cache, a Geometry Nodes tree reading the time) shows in its evaluated
    positions, which `addon.motion` compares between frames."""
    out = [f"{m.name} ({m.type})" for m in ob.modifiers
           if evaluation.shows(m) and m.type != "ARMATURE"]
    keys = ob.data.shape_keys
    if keys is not None and len(keys.key_blocks) > 1:
        out.append(f"{len(keys.key_blocks) - 1} shape keys")
    p = ob.parent
    if p is not None and ob.parent_type in {"ARMATURE", "LATTICE"} and p.type != "ARMATURE":
        out.append(f"its {p.type.lower()} parent '{p.name}' (a virtual modifier)")
    return out


def is_evaluated(ob, depsgraph=None) -> bool:
    """Whether the view layer's depsgraph evaluates `ob` (default: the context's). Not
    when it is disabled in viewports or its collection is hidden or excluded: Blender then
    hands out its original mesh, the rest shape, at every frame."""
    dg = depsgraph or evaluation.depsgraph()
    return bool(ob.evaluated_get(dg).is_evaluated)


def not_evaluated(ob) -> str:
    """Why `ob`'s skin cannot be checked when `is_evaluated` says no."""
    where = "renders" if evaluation.mode() == evaluation.RENDER else "viewports"
    return (f"'{ob.name}' is disabled in {where}, or its collection is hidden or "
            "excluded, so Blender does not pose it")


def not_evaluated_note(ob) -> str:
    return f"{not_evaluated(ob)}: skipped (enable it to check it)"


def skip_note(ob, depsgraph=None) -> str:
    """Why mesh `ob` is not a character (see `character_meshes`)."""
    if not is_evaluated(ob, depsgraph):
        return not_evaluated_note(ob)
    return _still_note(ob)


def _still_note(ob) -> str:
    return (f"'{ob.name}' is skipped: it has no Armature modifier and nothing moves it "
            "(no parent, constraint or animation)")


def character_meshes(objects) -> tuple[list, list[str]]:
    """The characters among `objects` (any objects, in their order): skinned meshes and
    rigid props (`what_moves`) that the view layer evaluates (`is_evaluated`), and one
    note per other mesh, which is skipped (it stands still: e.g. a stray Icosphere in a
    character's collection; or Blender does not pose it)."""
    meshes, notes = [], []
    dg = None
    for ob in objects:
        if ob.type != "MESH":
            continue
        dg = dg or evaluation.depsgraph()
        if not is_evaluated(ob, dg):
            notes.append(not_evaluated_note(ob))
        elif modifier_report(ob).armature is not None or what_moves(ob):
            meshes.append(ob)
        else:
            notes.append(_still_note(ob))
    return meshes, notes


def modifier_label(mod) -> str:
    """A modifier's type as Blender's interface names it ("Subdivision Surface")."""
    try:
        return mod.bl_rna.properties["type"].enum_items[mod.type].name
    except (KeyError, AttributeError):
        return mod.type.replace("_", " ").title()


def stack_labels(ob) -> list[str]:
    """The types of the modifiers shown in the viewport, Armature modifiers left out,
    in stack order and each once ("Mirror", "Subdivision Surface")."""
    out: list[str] = []
    for mod in ob.modifiers:
        if evaluation.shows(mod) and mod.type != "ARMATURE":
            label = modifier_label(mod)
            if label not in out:
                out.append(label)
    return out


def plain_stack(ob) -> bool:
    """Whether the modifiers shown in the viewport are at most one Armature modifier with
    an armature: then the evaluated topology is the mesh's own on every frame (the Armature
    modifier only moves vertices), and no per-frame topology check is needed."""
    rep = modifier_report(ob)
    return not (rep.before or rep.after or rep.other_armatures)


def armatures_of(ob) -> list:
    """The armature objects that deform `ob` (its Armature modifiers') or, for a rigid
    prop, that its parent chain reaches: what Rest Position switches."""
    out = [m.object for m in ob.modifiers if m.type == "ARMATURE" and m.object is not None
           and m.object.type == "ARMATURE"]
    p = ob.parent
    while p is not None:
        if p.type == "ARMATURE" and p not in out:
            out.append(p)
        p = p.parent
    return out


@dataclass
class VirtualArmature:
    """The settings of the virtual Armature modifier armature parenting adds (Blender
    gives it the armature's deform flags, which Python cannot read: vertex groups, and
    bone envelopes for the vertices that carry no deform-bone weight). Whatever differs
    in a file shows when the build compares the skinning with Blender's positions
    (`addon.motion.verify`), which then falls back to the bottom-up refit."""

    use_envelopes: bool
    use_vertex_groups: bool = True
    vertex_group: str = ""
    use_multi_modifier: bool = False
    use_deform_preserve_volume: bool = False
    envelope_reason: str = ("vertices without a deform-bone weight, which armature "
                            "parenting may move by the bones' envelopes")

    @property
    def use_bone_envelopes(self) -> bool:
        return self.use_envelopes
