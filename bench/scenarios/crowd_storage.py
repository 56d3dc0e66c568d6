"""A crowd of copies of one character in the .blend (issue 43: builds shared by a crowd).

N copies of one character (`scenes.duplicate_character`: mesh data, armature and action
copied, each copy moved along X), all built with the panel's Build, the data in the file.
Two ways, in one process, on the same scene:

* *shared*: as the add-on stores them: the first copy's Text holds the bytes, every other
  copy's only its own fields (`addon.storage.shared`);
* *one per copy*: every copy stores its whole build (the add-on before, forced here by
  storing without the holder).

Per way: Build (the operator: one build for all copies, then storing), the growth of the
saved uncompressed .blend against the same scene saved without data, and the first load
of every copy after reopening the file (`storage.load`: decoding, the derived parts).

    bash dev python -m bench crowd-storage --copies 5
    bash dev python -m bench crowd-storage --copies 5 --level 1
"""
from __future__ import annotations

import os
import tempfile

from bench import registry, scenes, timing


def crowd(asset: str, level: int, copies: int, folder: str) -> str:
    """The crowd scene saved without data; returns its path."""
    import bpy

    meshes = scenes.load_meshes(asset, level)
    ob = max(meshes, key=lambda o: len(o.data.polygons))
    for other in meshes:
        if other != ob:
            bpy.data.objects.remove(other)
    arm = scenes.armature(ob)
    for k in range(1, copies):
        scenes.duplicate_character(ob, arm, f"{ob.name}.{k}", offset=(1.5 * k, 0.0, 0.0),
                                   turn=0.0)
    path = os.path.join(folder, "crowd.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path, compress=False)
    return path


def one_way(path: str, shared: bool, folder: str) -> dict:
    import bpy

    from skin_collide.addon import extract, storage
    from skin_collide.addon.state import STATE

    bpy.ops.wm.open_mainfile(filepath=path)
    meshes = extract.skinned_meshes(bpy.context.scene)
    for ob in bpy.context.scene.objects:
        ob.select_set(ob in meshes)
    bpy.context.view_layer.objects.active = meshes[0]
    real = storage.save
    if not shared:
        storage.save = lambda ob, obj, holder=None: real(ob, obj)
    try:
        status, build = timing.timed_s(bpy.ops.skin_collide.build)
        assert status == {"FINISHED"}
    finally:
        storage.save = real
    out = os.path.join(folder, f"built_{'shared' if shared else 'each'}.blend")
    bpy.ops.wm.save_as_mainfile(filepath=out, compress=False, copy=True)
    bpy.ops.wm.open_mainfile(filepath=out)
    STATE.objects.clear()
    STATE.shared_bases.clear()
    meshes = extract.skinned_meshes(bpy.context.scene)
    loaded, loading = timing.timed_s(lambda: [storage.load(ob) for ob in meshes])
    assert all(x is not None for x in loaded)
    holders = sum(storage.BLOB_KEY in storage.text_of(ob) for ob in meshes)
    return {"build": build, "growth": os.path.getsize(out) - os.path.getsize(path),
            "load": loading, "holders": holders, "copies": len(meshes)}


def options(p) -> None:
    p.add_argument("--asset", default="makehuman_default.blend")
    p.add_argument("--level", type=int, default=0)
    p.add_argument("--copies", type=int, default=5)


def run(args) -> int:
    scenes.require(args.asset)
    scenes.register_addon()
    with tempfile.TemporaryDirectory() as folder:
        path = crowd(args.asset, args.level, args.copies, folder)
        rows = [("one per copy", one_way(path, False, folder)),
                ("shared", one_way(path, True, folder))]
    print(f"\n{args.copies} copies of {args.asset} level {args.level}, data in the file")
    print("| | Texts with bytes | Build s | .blend growth MB | first load of all copies s |")
    print("|---|---|---|---|---|")
    for name, r in rows:
        print(f"| {name} | {r['holders']} of {r['copies']} | {r['build']:.2f} | "
              f"{r['growth'] / 1e6:.2f} | {r['load']:.2f} |")
    return 0


registry.register("crowd-storage", "copies of one character in the .blend: one stored build "
                  "shared by the copies against one per copy (issue 43)", options, run,
                  smoke={"asset": scenes.SMOKE, "copies": 2}, doc=__doc__)
