"""Whether the meshes a viewport-mode check reads draw otherwise in renders, from their
settings: the note a scan (and doctor) prints without `--as-rendered`.

A checked mesh draws otherwise in renders when a modifier is on in one and off in the other
(*Realtime* / *Render*), a Subdivision Surface or Multiresolution has other levels there
(Simplify's *Max Subdivision* applied: viewport and render values), a Geometry Nodes tree
reads *Is Viewport*, or the object (or every collection holding it) is disabled in renders;
and a mesh the viewport does not draw but renders do, which something moves, would be a
character there. This only decides whether to say so: the render-mode check itself
(`addon.evaluation`) reads Blender's render-mode depsgraph, not these settings.
"""
from __future__ import annotations

from . import drawn, extract, motion

#: Modifiers with viewport and render subdivision levels.
_LEVELS = {"SUBSURF", "MULTIRES"}


def _is_viewport_tree(tree, seen=None) -> bool:
    """Whether node tree `tree` (or a group inside it) has an *Is Viewport* node."""
    seen = set() if seen is None else seen
    if tree is None or tree.as_pointer() in seen:
        return False
    seen.add(tree.as_pointer())
    for node in tree.nodes:
        if node.bl_idname == "GeometryNodeIsViewport":
            return True
        if getattr(node, "node_tree", None) is not None and _is_viewport_tree(node.node_tree, seen):
            return True
    return False


def _levels(mod, scene) -> tuple[int, int]:
    """(viewport, render) levels of a subdividing modifier, Simplify applied."""
    view, render = int(mod.levels), int(mod.render_levels)
    r = scene.render
    if r.use_simplify:
        view = min(view, int(r.simplify_subdivision))
        render = min(render, int(r.simplify_subdivision_render))
    return view, render


def _render_off(ob, view_layer) -> bool:
    """Whether renders leave `ob` out: disabled in renders, or every collection of the view
    layer holding it excluded or disabled in renders."""
    if ob.hide_render:
        return True
    holding = []

    def walk(lc, off):
        off = off or lc.exclude or lc.collection.hide_render
        if ob.name_full in lc.collection.objects:
            holding.append(off)
        for child in lc.children:
            walk(child, off)

    walk(view_layer.layer_collection, False)
    return bool(holding) and all(holding)


def mesh_differences(ob, scene, view_layer) -> list[str]:
    """What draws otherwise in renders for checked mesh `ob` (an object or a
    `drawn.Instance`), in words; empty when nothing does."""
    src = drawn.source_of(ob)
    out = []
    if _render_off(src, view_layer):
        out.append("disabled in renders")
    for mod in src.modifiers:
        label = f"{mod.name} ({extract.modifier_label(mod)})"
        if mod.show_viewport != mod.show_render:
            out.append(f"{label} {'render' if mod.show_render else 'viewport'} only")
            continue
        if not mod.show_render:
            continue
        if mod.type in _LEVELS:
            view, render = _levels(mod, scene)
            if view != render:
                out.append(f"{label} level {view} in the viewport, {render} in renders")
        elif mod.type == "NODES" and _is_viewport_tree(getattr(mod, "node_group", None)):
            out.append(f"{label} reads Is Viewport")
    return out


def render_only_characters(scene, view_layer, meshes) -> list[str]:
    """Mesh objects of `scene` the viewport does not draw but renders do, which something
    moves (they would be characters of a render-mode check)."""
    checked = {drawn.source_of(m).as_pointer() for m in meshes}
    out = []
    for ob in scene.objects:
        if ob.type != "MESH" or ob.as_pointer() in checked:
            continue
        viewport_off = ob.hide_viewport or not ob.visible_get(view_layer=view_layer)
        if viewport_off and not _render_off(ob, view_layer) and motion.settings_that_move(ob):
            out.append(ob.name_full)
    return out


def adaptive_note(scene, meshes) -> str | None:
    """With Cycles as the scene's engine, the checked meshes whose Subdivision Surface
    Cycles dices adaptively at render time (*Adaptive Subdivision*): that geometry is made
    by the renderer, in no depsgraph; the render-mode check reads the modifier's render
    level. None when there is none."""
    from . import evaluation

    if evaluation.scene_engine(scene) != "CYCLES":
        return None
    names = [m.name for m in meshes if _adaptive(drawn.source_of(m))]
    if not names:
        return None
    return (f"{', '.join(names)}: Cycles dices the Subdivision Surface adaptively at render "
            "time (Adaptive Subdivision), geometry no depsgraph holds: this check reads the "
            "modifier's render level")


def note(scene, view_layer, meshes) -> str | None:
    """The one line saying which checked meshes draw otherwise in renders (and which
    meshes renders alone draw), and the flag that checks what renders draw; None when
    nothing differs."""
    parts = []
    for m in meshes:
        diff = mesh_differences(m, scene, view_layer)
        if diff:
            parts.append(f"{m.name}: {', '.join(diff)}")
    only = render_only_characters(scene, view_layer, meshes)
    if only:
        parts.append(f"{', '.join(only)}: drawn only in renders")
    if not parts:
        return None
    return (f"renders draw otherwise ({'; '.join(parts)}): this check reads the surfaces "
            "the viewport draws; --as-rendered checks those renders draw")


def _adaptive(ob) -> bool:
    """Whether Cycles dices `ob`'s last Subdivision Surface adaptively: the modifier's own
    switch (Blender 4.5 and later), or the object's Cycles setting on a release that keeps
    it there (4.2: `ob.cycles.use_adaptive_subdivision`, on the last Subdivision)."""
    subsurf = [mod for mod in ob.modifiers if mod.type == "SUBSURF" and mod.show_render]
    if not subsurf:
        return False
    if any(getattr(mod, "use_adaptive_subdivision", False) for mod in subsurf):
        return True
    cycles = getattr(ob, "cycles", None)
    return bool(getattr(cycles, "use_adaptive_subdivision", False))
