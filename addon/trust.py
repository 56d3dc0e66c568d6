"""Whether a headless run sees the shot as the artist does (issue 55): drivers Blender
could not evaluate, and linked data that did not load.

A studio rig may drive bones or shape keys with Python functions that a registered text
block of the file (or an add-on) puts into `bpy.app.driver_namespace`. A file opened
untrusted runs no text block, and Blender refuses every driver expression that is not a
simple one ("restricted access disallows name ..."): the bones stay where they are, and a
scan would answer for a pose the artist never sees. Blender marks such a driver invalid
(`Driver.is_valid` False) once it has failed; that flag is what `failed_drivers` reads,
after the run has evaluated frames (choosing the characters samples the range). A linked
library that is not found leaves placeholders (`Library.is_missing`, `ID.is_missing`):
the characters in it are not drawn at all (`missing_data`).

The CLI turns either into a one-line error (exit 2) unless asked to go on
(`--allow-failed-drivers`, `--allow-missing`); `--enable-autoexec` opens the file as
Blender does with auto-run on. The panel needs none of this: the artist's Blender has
already decided. docs/cli.md, "What the run sees".
"""
from __future__ import annotations

import ast
import builtins
import math
import os
from dataclasses import dataclass

from . import drawn


@dataclass(frozen=True)
class FailedDriver:
    """A driver Blender could not evaluate: the ID it drives (`owner`, full name), its
    data path with the array index, the expression, and the names it uses that Blender's
    driver namespace lacks (a function an absent add-on or an untrusted text defines)."""

    owner: str
    path: str
    expression: str
    unknown: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.owner} {self.path}"

    def to_json(self) -> list:
        return [self.owner, self.path, self.expression]


def _object_pointers(holder) -> list:
    """The objects a modifier or constraint points at (its target, cage, offset...): every
    pointer property to an Object, read from RNA so that new kinds need no list here."""
    out = []
    for prop in holder.bl_rna.properties:
        if prop.type == "POINTER" and getattr(prop.fixed_type, "identifier", "") == "Object":
            ob = getattr(holder, prop.identifier, None)
            if ob is not None:
                out.append(ob)
    for t in getattr(holder, "targets", ()) or ():      # the Armature constraint's list
        if getattr(t, "target", None) is not None:
            out.append(t.target)
    return out


def _animated(ob) -> list:
    """The IDs of object `ob` whose drivers move what it draws: the object, its data and
    the data's shape keys."""
    out = [ob]
    data = getattr(ob, "data", None)
    if data is not None:
        out.append(data)
        keys = getattr(data, "shape_keys", None)
        if keys is not None:
            out.append(keys)
    return out


def moving_ids(meshes) -> list:
    """Every ID whose drivers can move the checked meshes: each mesh, its data and shape
    keys; and, closed over, the objects that move them (parents, instancers, the objects
    their modifiers and constraints and their bones' constraints point at, armatures
    among them) and the objects their drivers read."""
    seen: dict = {}
    todo = []
    for m in meshes:
        todo.append(drawn.source_of(m))
        top = getattr(m, "top", None) if drawn.is_instance(m) else None
        if top is not None:
            todo.append(top)
    ids: dict = {}
    while todo:
        ob = todo.pop()
        if ob is None or ob.as_pointer() in seen:
            continue
        seen[ob.as_pointer()] = ob
        for idb in _animated(ob):
            ids.setdefault(idb.as_pointer(), idb)
            ad = getattr(idb, "animation_data", None)
            for fc in (ad.drivers if ad is not None else ()):
                for var in fc.driver.variables:
                    for t in var.targets:
                        if t.id is not None and getattr(t.id, "bl_rna", None) is not None \
                                and t.id.bl_rna.identifier == "Object":
                            todo.append(t.id)
        todo.append(ob.parent)
        for holder in list(getattr(ob, "modifiers", ())) + list(getattr(ob, "constraints", ())):
            todo += _object_pointers(holder)
        pose = getattr(ob, "pose", None)
        for pb in (pose.bones if pose is not None else ()):
            for c in pb.constraints:
                todo += _object_pointers(c)
    return list(ids.values())


def _known_names() -> set:
    """The names a driver expression may use without a definition of its own: Python's
    builtins, `math`, and Blender's driver namespace as it is now (an add-on's or a
    trusted text's functions in it)."""
    import bpy

    return (set(dir(builtins)) | set(dir(math)) | set(bpy.app.driver_namespace.keys())
            | {"frame", "self", "depsgraph", "bpy"})


def _unknown_names(expression: str, variables: set, known: set) -> tuple[str, ...]:
    """The names `expression` reads that neither its variables nor `known` define (a
    syntax error: none; Blender's message says more)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        return ()
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return tuple(sorted(names - variables - known))


def failed_drivers(meshes) -> list[FailedDriver]:
    """The drivers of `moving_ids(meshes)` that Blender could not evaluate (after at least
    one evaluation of the frame; Blender keeps the mark until the driver is edited)."""
    known = _known_names()
    out = []
    for idb in moving_ids(meshes):
        ad = getattr(idb, "animation_data", None)
        for fc in (ad.drivers if ad is not None else ()):
            drv = fc.driver
            if drv.is_valid:
                continue
            path = fc.data_path + (f"[{fc.array_index}]" if fc.array_index or _is_array(
                idb, fc.data_path) else "")
            expr = drv.expression if drv.type == "SCRIPTED" else drv.type.lower()
            variables = {v.name for v in drv.variables}
            unknown = _unknown_names(expr, variables, known) if drv.type == "SCRIPTED" else ()
            out.append(FailedDriver(idb.name_full, path, expr, unknown))
    return sorted(out, key=lambda d: d.owner)     # by owner, each in Blender's order


def _is_array(idb, data_path: str) -> bool:
    """Whether `data_path` of `idb` is an array property (its index is then shown)."""
    try:
        value = idb.path_resolve(data_path)
    except (ValueError, AttributeError, TypeError):
        return False
    return hasattr(value, "__len__") and not isinstance(value, str)


def drivers_line(failed: list[FailedDriver], trusted: bool) -> str:
    """The one line a run that met failed drivers stops with: the first five, a count, and
    what would make them work."""
    import bpy

    shown = "; ".join(f"{d.describe()} ({d.expression})" for d in failed[:5])
    more = f" and {len(failed) - 5} more" if len(failed) > 5 else ""
    unknown = sorted({n for d in failed for n in d.unknown})
    fixes = []
    if not trusted and (bpy.app.autoexec_fail or unknown):
        fixes.append("the file's scripts did not run (not trusted): pass --enable-autoexec "
                     "to run them as Blender does with auto-run on")
        # A name no registered text of the file mentions: trusting will not define it.
        texts = [t.as_string() for t in bpy.data.texts if t.use_module]
        unknown = [n for n in unknown if not any(n in t for t in texts)]
    if unknown:
        fixes.append(f"no add-on or script here defines "
                     f"{', '.join(repr(n) for n in unknown[:5])}: enable the add-on that does")
    fix = "; ".join(fixes) or "fix them in the file"
    return (f"{len(failed)} driver(s) Blender could not evaluate move the characters: "
            f"{shown}{more}; {fix}, or pass --allow-failed-drivers to check the shot as it "
            "evaluates here")


@dataclass(frozen=True)
class MissingData:
    """Linked data that did not load: the library's path as the file stores it (absolute
    in `resolved`), and the objects missing from it (full names)."""

    library: str
    resolved: str
    objects: tuple[str, ...]

    def describe(self) -> str:
        what = ", ".join(self.objects[:5]) + (f" and {len(self.objects) - 5} more"
                                               if len(self.objects) > 5 else "")
        return f"{self.resolved}" + (f" ({what})" if what else "")

    def to_json(self) -> dict:
        return {"library": self.library, "path": self.resolved, "objects": list(self.objects)}


def _library_missing(lib) -> bool:
    """Whether Blender could not load library `lib` (`Library.is_missing` where the
    release has it, else its file is not there)."""
    import bpy

    flag = getattr(lib, "is_missing", None)
    if flag is not None:
        return bool(flag)
    return not os.path.isfile(bpy.path.abspath(lib.filepath, library=lib.library))


def missing_data(scene) -> list[MissingData]:
    """The linked libraries that did not load and the linked objects the scene uses that
    are missing (placeholders), per library: the objects of the scene and of the
    collections it instances, nested."""
    import bpy

    used: dict = {}
    gone: list = []
    todo = list(scene.objects)
    seen_coll: set = set()
    while todo:
        ob = todo.pop()
        if ob.as_pointer() in used:
            continue
        used[ob.as_pointer()] = ob
        coll = ob.instance_collection if ob.instance_type == "COLLECTION" else None
        if coll is not None and coll.as_pointer() not in seen_coll:
            seen_coll.add(coll.as_pointer())
            if coll.is_missing and coll.library is not None:
                gone.append((coll.library, f"collection {coll.name_full} (instanced by "
                                           f"{ob.name_full})"))
            todo += list(coll.all_objects)
    per_lib: dict = {}
    for lib, what in gone:
        per_lib.setdefault(lib.as_pointer(), (lib, []))[1].append(what)
    for ob in used.values():
        data = getattr(ob, "data", None)
        if (ob.is_missing or (data is not None and data.is_missing)) and ob.library is not None:
            per_lib.setdefault(ob.library.as_pointer(), (ob.library, []))[1].append(ob.name_full)
    for lib in bpy.data.libraries:
        if _library_missing(lib):
            per_lib.setdefault(lib.as_pointer(), (lib, []))
    out = []
    for lib, objects in per_lib.values():
        if not objects and not _library_missing(lib):
            continue
        out.append(MissingData(lib.filepath, bpy.path.abspath(lib.filepath, library=lib.library),
                               tuple(sorted(objects))))
    return sorted(out, key=lambda m: m.resolved)


def missing_line(missing: list[MissingData]) -> str:
    """The one line a run with missing linked data stops with."""
    shown = "; ".join(m.describe() for m in missing[:3])
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return (f"linked data did not load, so the shot cannot be checked as it renders: "
            f"{shown}{more}; make the library reachable at that path (or remap it in the "
            "file), or pass --allow-missing to check what loaded")


def in_session(scene, meshes) -> dict:
    """How this Blender session sees the shot, for the panel's reports (the same fields as
    a headless scan's, `core.report.model.ScanReport.seen`): whether it runs the files'
    scripts (the Auto Run preference), the failed drivers that move `meshes` (checked as
    evaluated: the artist sees them so) and the linked data missing. Nothing is refused:
    in the panel the artist's Blender has decided."""
    import bpy

    return {"autoexec": bool(bpy.context.preferences.filepaths.use_scripts_auto_execute),
            "failed_drivers": [d.to_json() for d in failed_drivers(meshes)],
            "missing": [m.to_json() for m in missing_data(scene)]}
