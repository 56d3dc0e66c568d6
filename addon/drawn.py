"""What the depsgraph draws: the mesh instances of a scene's view layer.

The surfaces checked are those Blender draws, `depsgraph.object_instances`: the real mesh
objects it shows, and the meshes that collection instances draw (an Empty instancing a
character's collection, nested ones too, linked duplicates), each at its own matrix. What
Blender does not draw is not checked (`left_out` says why a deformed mesh is not: hidden,
excluded, disabled in viewports); meshes displayed as Wire or Bounds (Mesh Deform cages,
helpers) are drawn but left out unless asked for by name (`--object`).

A mesh drawn by an instance takes part as an `Instance`: its source object drawn at the
instance's matrix, named ``<instancer>/<mesh object>`` (``<outer>/<inner>/<mesh>`` when
nested). It answers what the pipeline asks of a mesh object (modifiers, data, evaluation)
with its source's answers, except its name and its evaluated world matrix, which is the
instance's at the frame the depsgraph last drew (`refresh`). The source's evaluated mesh is
the instance's: Blender evaluates an instanced object once and draws it at every instance.
"""
from __future__ import annotations

import numpy as np

from .state import STATE

#: `DepsgraphObjectInstance.persistent_id` pads unused levels with this value.
_NO_LEVEL = 2**31 - 1


class EvaluatedInstance:
    """The evaluated source object, drawn at the instance's world matrix."""

    def __init__(self, evaluated, matrix):
        self._evaluated = evaluated
        self.matrix_world = matrix

    def __getattr__(self, attr):
        return getattr(self._evaluated, attr)


class Instance:
    """A mesh drawn through an instance: `source` (the original mesh object) drawn by the
    instancer `top` (the outermost), found among the depsgraph's instances by `pid`
    (`persistent_id`, one index per nesting level). `name` and `name_full` are the path of
    names, ``Crowd.001/Body``."""

    def __init__(self, source, name: str, top, pid: tuple[int, ...]):
        self.source = source
        self.name = self.name_full = name
        self.top = top
        self.pid = pid

    def __getattr__(self, attr):
        # Only called for what the instance does not define: the source's answer.
        return getattr(self.source, attr)

    def __repr__(self) -> str:
        return f"<Instance {self.name!r} of {self.source.name_full!r}>"

    @property
    def key(self) -> tuple[int, tuple[int, ...]]:
        return (self.top.as_pointer(), self.pid)

    def matrix(self, depsgraph):
        """The instance's world matrix as the depsgraph draws it now (a `mathutils.Matrix`)."""
        m = STATE.instance_matrices.get(self.key)
        if m is None:
            refresh(depsgraph)
            m = STATE.instance_matrices.get(self.key)
        if m is None:
            from .extract import RigError

            raise RigError(f"'{self.name}' is no longer drawn (its instancer "
                           f"'{self.top.name_full}' no longer instances "
                           f"'{self.source.name_full}'): rebuild")
        return m

    def evaluated_get(self, depsgraph):
        return EvaluatedInstance(self.source.evaluated_get(depsgraph), self.matrix(depsgraph))

    def correction(self, depsgraph) -> np.ndarray:
        """(4, 4) float64 ``W · M⁻¹``: from where the source object is to where the instance
        draws it (W the instance's matrix, M the source's evaluated world matrix). The
        instance's armature stands at ``correction · A`` (`extract.pose_from_object`)."""
        W = np.array(self.matrix(depsgraph), dtype=np.float64)
        M = np.array(self.source.evaluated_get(depsgraph).matrix_world, dtype=np.float64)
        return W @ np.linalg.inv(M)


def is_instance(ob) -> bool:
    return isinstance(ob, Instance)


def source_of(ob):
    """The object whose data a participant reads (its own, or an instance's source)."""
    return ob.source if isinstance(ob, Instance) else ob


def refresh(depsgraph) -> None:
    """Read every instance's world matrix from `depsgraph` (once per evaluated frame, by
    `Scanner.evaluate`; a matrix not read yet is read on first use)."""
    out = {}
    for inst in depsgraph.object_instances:
        if inst.is_instance and inst.parent is not None:
            pid = tuple(int(x) for x in inst.persistent_id if x != _NO_LEVEL)
            out[(inst.parent.original.as_pointer(), pid)] = inst.matrix_world.copy()
    STATE.instance_matrices = out


def _path(top, pid: tuple[int, ...], source) -> list[str] | None:
    """The names from the outermost instancer down to `source`, following the collection
    instances `pid` indexes (innermost level first, as Blender writes it; each level
    indexes the instanced collection's objects, in the order `Collection.all_objects`
    lists them, hidden ones included); None when the levels do not lead to `source`
    (instancing by vertices, faces, particles or Geometry Nodes)."""
    names = [top.name]
    cur = top
    pid = tuple(reversed(pid))
    for level, idx in enumerate(pid):
        coll = getattr(cur, "instance_collection", None)
        if cur.instance_type != "COLLECTION" or coll is None:
            return None
        objs = coll.all_objects
        if idx >= len(objs):
            return None
        cur = objs[idx]
        if level < len(pid) - 1:
            names.append(cur.name)
    return names + [source.name] if cur == source else None


def drawn_meshes(depsgraph) -> list:
    """Every mesh the depsgraph draws, in its order: original mesh objects (those it shows
    themselves) and `Instance`s. Also refreshes the instance matrices (`refresh`)."""
    out: list = []
    matrices = {}
    names: dict[str, int] = {}
    for inst in depsgraph.object_instances:
        if inst.is_instance:
            ob = inst.instance_object
            if ob is None or ob.type != "MESH" or inst.parent is None:
                continue
            top = inst.parent.original
            src = ob.original
            pid = tuple(int(x) for x in inst.persistent_id if x != _NO_LEVEL)
            matrices[(top.as_pointer(), pid)] = inst.matrix_world.copy()
            path = _path(top, pid, src)
            name = "/".join(path) if path else f"{top.name}/{src.name}#{'.'.join(map(str, pid))}"
            if name in names:           # two routes to one name: tell them apart
                names[name] += 1
                name = f"{name}#{names[name]}"
            else:
                names[name] = 0
            out.append(Instance(src, name, top, pid))
        else:
            ob = inst.object
            if ob is not None and ob.type == "MESH" and inst.show_self:
                out.append(ob.original)
    STATE.instance_matrices = matrices
    return out
