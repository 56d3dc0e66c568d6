"""How much built collision data adds to a saved .blend, and what storing costs (issue 14).

Per asset and subdivision level (Simple subdivision applied to the rest mesh before
building, `scenes.subdivide_rest_mesh`: level 1 turns MakeHuman's 26,756 triangles into
107,024), all skinned meshes of the asset are built and:

* growth of the saved, uncompressed .blend with the data in the file, against the same
  file saved without data, for this version and for the previous format (npz with every
  array, line-wrapped base64 in the Text body; rebuilt here for comparison);
* the size of the disk cache (``//skin_collide_cache/``) and of the .blend that keeps it;
* build, save and load times (load = reading the bytes and recomputing the derived parts).

With ``--arrays`` it first prints, for the first mesh, every array of a prepared object:
raw size, size compressed on its own, whether it is stored or recomputed at load, and
the cost of recomputing it.

    bash dev python -m bench storage --arrays
    bash dev python -m bench storage --assets all --levels 0 1
"""
from __future__ import annotations

import base64
import io
import lzma
import os
import tempfile

import numpy as np

from bench import registry, scenes, timing

ASSETS = ["makehuman_default.blend", "cesium_man.glb", "fox.glb", "mannequiny.glb",
          "platformer_enemy.glb", "platformer_robot.glb", "robot_expressive.glb"]


def load(asset: str, level: int) -> list:
    return scenes.load_meshes(asset, level)


def save(path: str) -> float:
    import bpy

    return timing.timed_s(bpy.ops.wm.save_as_mainfile, filepath=path, compress=False,
                          copy=True)[1]


timed = timing.timed_s


def array_table(asset: str, level: int) -> None:
    """Every array of the first mesh's prepared object: sizes and recompute costs."""
    from skin_collide.addon import extract
    from skin_collide.core import scan, welds
    from skin_collide.core.bounds import refit, refit_dqs, sphere_tree
    from skin_collide.core.methods import sphere_tree as stm
    from skin_collide.core.storage import persist

    ob = load(asset, level)[0]
    rig = extract.rig_from_object(ob)
    obj = scan.prepare(rig)
    arrays = persist.all_arrays(obj)
    stored = persist.compact(arrays)
    t = obj.data.tree
    _, t_keys = timed(welds.vertex_weld_ids, rig)
    _, t_nv = timed(sphere_tree.node_vertices, t.parent, t.leaf_tri, t.level_ptr, rig)
    fn = refit_dqs.dqs_bounds if obj.method == "sphere-tree-pv" else refit.lbs_bounds
    full_bounds, t_bounds_all = timed(fn, t, rig)
    corners = tuple(getattr(full_bounds, k) for k in stm.KEPT_BOUNDS)
    _, t_bounds = timed(lambda: fn(t, rig, corners=corners))
    _, t_tree = timed(lambda: sphere_tree.build(
        rig.rest_positions, rig.triangles, tri_polygon=rig.tri_polygon,
        poly_ptr=rig.poly_ptr, poly_verts=rig.poly_verts))
    _, t_rig = timed(extract.rig_from_object, ob)
    arrays["vertex_keys"] = obj.vertex_keys        # never stored (recomputed since format 3)
    T, B = persist.DATA + stm.TREE, persist.DATA + stm.BOUNDS
    cost = {"vertex_keys": t_keys, T + "node_vert_ptr": t_nv, T + "node_verts": t_nv}
    print(f"\n### Arrays of {asset} level {level} ({rig.n_triangles} triangles, "
          f"{t.n_nodes} spheres; build {obj.build_seconds:.2f} s)\n")
    print("| Array | dtype, shape | Raw KB | Alone, lzma KB | Kept | Recompute s |")
    print("|---|---|---|---|---|---|")
    total_raw = 0
    for k, v in sorted(arrays.items(), key=lambda kv: -kv[1].nbytes):
        if v.nbytes < 1024:
            continue
        total_raw += v.nbytes
        s = stored.get(k)
        alone = len(lzma.compress(np.ascontiguousarray(v).tobytes())) / 1024
        if s is None:
            kept = "recomputed"
            c = cost.get(k, t_bounds if k.startswith(B) else float("nan"))
            rc = f"{c:.3f}" + (" (bounds but corners)" if k.startswith(B) else "")
        else:
            kept = f"stored {s.dtype}" if s.dtype != v.dtype else "stored"
            rc = (f"{t_tree:.3f} (tree build)" if k.startswith(T)
                  else f"{t_bounds_all - t_bounds:.3f} (corner rows)" if k.startswith(B)
                  else f"{t_rig:.3f} (read the mesh)" if k.startswith("rig.") else "-")
        print(f"| {k} | {v.dtype}, {v.shape} | {v.nbytes / 1024:.0f} | {alone:.0f} | {kept} | {rc} |")
    data = persist.to_bytes(obj)
    back, t_load = timed(persist.from_bytes, data)
    print(f"\nAll arrays raw {total_raw / 2**20:.2f} MB; stored container "
          f"{len(data) / 2**20:.3f} MB (lzma), {len(persist.to_bytes(obj, 'zlib')) / 2**20:.3f} "
          f"MB (zlib); previous npz {len(old_bytes(obj)) / 2**20:.2f} MB; load (decode + "
          f"recompute) {t_load:.3f} s")


def old_bytes(obj) -> bytes:
    """The previous format (3): npz of every array (weld ids recomputed)."""
    from skin_collide.core.storage import persist

    arrays = persist.all_arrays(obj)
    arrays["format"] = np.array(3)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def growth(asset: str, level: int, folder: str) -> dict:
    import bpy

    from skin_collide.addon import extract, storage
    from skin_collide.addon.state import STATE
    from skin_collide.core import scan
    from skin_collide.core.storage import persist

    meshes = load(asset, level)
    scene = bpy.context.scene
    bare = os.path.join(folder, "bare.blend")
    t_save_bare = save(bare)
    objects, t_build = timed(lambda: [scan.prepare(extract.rig_from_object(ob)) for ob in meshes])
    datas, t_encode = timed(lambda: [persist.to_bytes(o) for o in objects])
    scene.skin_collide.data_location = "FILE"
    for ob, o in zip(meshes, objects):
        storage.save(ob, o)
    in_file = os.path.join(folder, "in_file.blend")
    t_save = save(in_file)
    # Disk cache: save_pre moves the data out next to the file.
    scene.skin_collide.data_location = "DISK"
    lean = os.path.join(folder, "lean.blend")
    bpy.ops.wm.save_as_mainfile(filepath=lean, compress=False)
    cache = os.path.join(folder, "skin_collide_cache")
    cache_bytes = sum(os.path.getsize(os.path.join(cache, f)) for f in os.listdir(cache))
    # Previous format, for comparison.
    for ob, o in zip(meshes, objects):
        text = ob.skin_collide.data
        for key in (storage.BLOB_KEY, storage.CACHE_KEY):
            if key in text:
                del text[key]
        text.from_string(base64.encodebytes(old_bytes(o)).decode("ascii"))
    old = os.path.join(folder, "old.blend")
    save(old)
    # Load: open the file with the data in it, then read every mesh's data.
    STATE.objects.clear()
    _, t_open = timed(bpy.ops.wm.open_mainfile, filepath=in_file)
    _, t_load = timed(lambda: [storage.load(ob) for ob in extract.skinned_meshes(bpy.context.scene)])
    size = os.path.getsize
    return {"meshes": len(meshes), "tris": sum(o.rig.n_triangles for o in objects),
            "bytes": sum(len(d) for d in datas),
            "growth": size(in_file) - size(bare), "old": size(old) - size(bare),
            "lean": size(lean) - size(bare), "cache": cache_bytes, "build": t_build,
            "encode": t_encode, "save": t_save, "save_bare": t_save_bare,
            "open": t_open, "load": t_load}


def options(p) -> None:
    p.add_argument("--assets", nargs="+", default=["makehuman_default.blend"],
                   help="asset file names in ../shared/assets, or 'all'")
    p.add_argument("--levels", nargs="+", type=int, default=[0, 1])
    p.add_argument("--arrays", action="store_true",
                   help="print the per-array table (of the first asset)")


def run(args) -> int:
    for asset in ASSETS if args.assets == ["all"] else args.assets:
        scenes.require(asset)
    scenes.register_addon()
    if args.arrays:
        for level in args.levels:
            array_table(args.assets[0] if args.assets != ["all"] else ASSETS[0], level)
        return 0
    assets = ASSETS if args.assets == ["all"] else args.assets
    print("\n| Asset | Level | Meshes | Triangles | Data MB | .blend growth MB | Previous "
          "format MB | With disk cache: .blend MB + cache MB | Build s | Encode s | Save s "
          "(without data) | Open s | Load s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    mb = 2.0 ** -20
    for asset in assets:
        for level in args.levels:
            with tempfile.TemporaryDirectory() as folder:
                r = growth(asset, level, folder)
            print(f"| {asset} | {level} | {r['meshes']} | {r['tris']} | {r['bytes'] * mb:.2f} | "
                  f"**{r['growth'] * mb:.2f}** | {r['old'] * mb:.2f} | {r['lean'] * mb:.2f} + "
                  f"{r['cache'] * mb:.2f} | {r['build']:.2f} | {r['encode']:.2f} | "
                  f"{r['save']:.2f} ({r['save_bare']:.2f}) | {r['open']:.2f} | "
                  f"{r['load']:.2f} |", flush=True)
    return 0


registry.register("storage", "what built collision data adds to a saved .blend, and what "
                  "storing and loading cost (issue 14); --arrays: per array", options, run,
                  smoke={"assets": [scenes.SMOKE], "levels": [0]}, doc=__doc__)
