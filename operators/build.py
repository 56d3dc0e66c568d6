"""Operators: build and clear the collision data of the characters."""
from __future__ import annotations

import os

import bpy

from ..addon import drawn, extract, motion, session, storage
from ..core import scan as core_scan
from .stepping import TimerSteps, guard_operators, object_mode_poll


def build_method(scene) -> str:
    """The method to build for: the panel's, or the default one when the panel asks for a
    method the numpy core does not answer (Blender's BVHTree rebuild, the reference)."""
    from ..core.methods import registry

    m = registry.get(scene.skin_collide.method)
    return m.id if m.in_core else registry.DEFAULT


def prepare_batch(rigs, scene) -> list:
    """Build the data of `rigs` for the scene's method (`build_method`), with the panel's
    values of the options the method declares (`properties.panel_options`: e.g. a sphere
    set's count and seed), side by side on the machine's cores (`core.scan.prepare_all`)."""
    from ..addon import properties
    from ..core.methods import registry

    method = build_method(scene)
    return core_scan.prepare_all(rigs, method,
                                 **properties.panel_options(scene, registry.get(method)))


def batch_size() -> int:
    """Rigs built per step of the Build (one per core: they build side by side, and Esc
    is read between steps)."""
    return max(1, os.cpu_count() or 1)


def build_each(context, items, build_one) -> list:
    """``build_one(k, item)`` of every item (a rig, or a batch of rigs), one after the
    other, with progress in the status bar (the synchronous path of the build operators:
    background, scripts)."""
    wm = context.window_manager
    wm.progress_begin(0, len(items))
    try:
        objects = []
        for k, item in enumerate(items):
            objects.append(build_one(k, item))
            wm.progress_update(k + 1)
        return objects
    finally:
        wm.progress_end()


class SKINCOLLIDE_OT_build(TimerSteps, bpy.types.Operator):
    """Build sphere trees for the characters (selected meshes or the chosen collection);
    they are saved with the file. Esc cancels and keeps the old data"""

    bl_idname = "skin_collide.build"
    bl_label = "Build Collision Data"
    bl_options = {"REGISTER", "UNDO"}
    cancel_message = "Build cancelled; the collision data is unchanged"

    @classmethod
    def poll(cls, context):
        return object_mode_poll(cls, context)

    def _prepare(self, context):
        sel = session.selection(context.scene, context)
        self._notes = sel.notes
        # One build per source object: the collection instances that draw it share it.
        meshes, moved, seen = [], [], set()
        for ob, why in zip(sel.meshes, sel.moved):
            src = drawn.source_of(ob)
            if src.as_pointer() not in seen:
                seen.add(src.as_pointer())
                meshes.append(src)
                moved.append(why)
        rigs = motion.rigs(meshes, sel.sampled, moved)
        # Copies of one character build once (`core.scan.shared_builds`): the rigs returned
        # are the ones to build, `_expand` gives every mesh its object.
        rigs, self._expand = core_scan.shared_builds(rigs)
        for rig in rigs:
            if rig.n_triangles == 0:
                raise extract.RigError(f"mesh '{rig.name}' has no faces to collide")
        return meshes, rigs

    def _store(self, context, meshes, objects):
        # Only now is the file changed: a failure or Esc before this point changes nothing.
        # Copies of one character (one build, `obj.data` the same) store its bytes once: the
        # first copy's Text holds them, the others their own fields (`storage.shared`).
        holders: dict[int, object] = {}
        for ob, obj in zip(meshes, objects):
            storage.save(ob, obj, holder=holders.get(id(obj.data)))
            holders.setdefault(id(obj.data), storage.text_of(ob))
        # The check every use makes (weights and rest shape against the build) is made
        # now, while building, not on the first pose update; a mesh edited while a modal
        # build ran is named here, as the overlay will name it.
        notes = [r for r in (session.per_vertex_stale_reason(ob) for ob in meshes) if r]
        s = context.scene.skin_collide
        # On the objects as stored and kept for the session (`storage.load`): what the rest
        # query builds on them (self trees) serves the live overlay's first update.
        kept = session.load_objects(meshes)
        # Side by side: the rest query needs the self trees, the overlay the rest.
        core_scan.side_by_side(storage.ready_for_self_collision, kept)
        n_rest = session.store_rest_contacts(context.scene, meshes, kept, True)
        session.forget(context.scene)
        methods = ", ".join(sorted({o.method for o in objects}))
        notes = getattr(self, "_notes", []) + notes
        self.report({"INFO"}, f"Built {len(objects)} character(s) ({methods}); "
                              f"{n_rest} contact(s) in the rest pose"
                              + "".join(f"; {n}" for n in notes))
        if s.live:
            bpy.ops.skin_collide.refresh()

    def execute(self, context):
        try:
            meshes, rigs = self._prepare(context)
        except (extract.RigError, session.SessionError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        n = batch_size()
        batches = [rigs[s:s + n] for s in range(0, len(rigs), n)]
        objects = [obj for objs in build_each(context, batches,
                                              lambda k, b: prepare_batch(b, context.scene))
                   for obj in objs]
        self._store(context, meshes, self._expand(objects))
        return {"FINISHED"}

    def invoke(self, context, event):
        if context.window is None or bpy.app.background:
            return self.execute(context)
        try:
            self._meshes, self._rigs = self._prepare(context)
        except (extract.RigError, session.SessionError) as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self._objects = []
        return self._begin_steps(context, -(-len(self._rigs) // batch_size()))

    def _step(self, context) -> bool:
        done = len(self._objects)
        self._objects += prepare_batch(self._rigs[done:done + batch_size()], context.scene)
        return len(self._objects) == len(self._rigs)

    def _finish(self, context) -> None:
        self._store(context, self._meshes, self._expand(self._objects))

    def _cancel(self, context) -> None:
        self._objects = []


class SKINCOLLIDE_OT_clear(bpy.types.Operator):
    """Remove the collision data of the characters (selected meshes or the collection)"""

    bl_idname = "skin_collide.clear"
    bl_label = "Clear Collision Data"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        return object_mode_poll(cls, context)

    def execute(self, context):
        try:
            meshes = session.chosen_meshes(context.scene, context)
        except session.SessionError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        built = [ob for ob in meshes if storage.has_data(ob) and not storage.inherited(ob)]
        assets = [ob for ob in meshes if storage.inherited(ob)]
        copies = [ob for ob in meshes if ob.skin_collide.data is not None and ob not in built
                  and ob not in assets]
        for ob in copies:                   # Shift+D copies: forget the shared pointer only
            storage.clear(ob)
        if not built and copies:
            self.report({"INFO"}, f"Cleared {len(copies)} mesh(es) that only shared another "
                                  "mesh's data")
            return {"FINISHED"}
        if not built and assets:        # linked data: this file cannot remove it
            lib = storage.text_of(assets[0]).library
            self.report({"ERROR"}, f"the collision data of '{assets[0].name_full}' was built "
                                   f"in its asset file ({lib.name}): clear it there")
            return {"CANCELLED"}
        if not built:
            self.report({"ERROR"}, "the chosen meshes have no collision data")
            return {"CANCELLED"}
        gone = {storage.uid(ob) for ob in built} - {""}
        for ob in built:
            storage.clear(ob)
        session.forget_contacts(gone)
        session.forget(context.scene)
        self.report({"INFO"}, f"Cleared the collision data of {len(built)} mesh(es)")
        return {"FINISHED"}


CLASSES = (SKINCOLLIDE_OT_build, SKINCOLLIDE_OT_clear)
guard_operators(CLASSES)
