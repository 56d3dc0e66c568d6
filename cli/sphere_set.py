"""`sphere-set FILE --object NAME --count N --json OUT`: a variational sphere set (Wang et
al. 2006) fitted to one mesh's rest pose, written as JSON in mesh data coordinates."""
from __future__ import annotations

import time

import numpy as np

from .errors import UsageError
from .load import import_bpy
from .outputs import write_output


def add_parser(sub) -> None:
    from ..core.methods.sphere_set.method import SphereSetMethod

    # The command that fits the sphere-set method's data is named after the method.
    ss = sub.add_parser(SphereSetMethod.id, help="fit a variational sphere set (Wang et al. 2006) "
                        "to one mesh's rest pose; JSON in mesh data coordinates")
    ss.add_argument("file", help=".blend, .glb or .gltf")
    ss.add_argument("--object", required=True, help="the mesh object's name")
    ss.add_argument("--count", type=int, required=True, metavar="N", help="number of spheres")
    ss.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default 0)")
    ss.add_argument("--json", required=True, metavar="OUT",
                    help="write {centers, radii, outside_volume, mesh_volume} here (atomically)")
    ss.set_defaults(func=run)


def _rest_mesh(scene, name: str):
    """(vertices (V, 3) float64, triangles (T, 3) int64) of mesh object `name`'s own data
    (rest pose, mesh-local coordinates: no modifier, no object transform)."""
    from ..addon import identity

    try:
        ob = identity.find(scene.objects, name)
    except identity.AmbiguousName as exc:
        raise UsageError(str(exc)) from None
    if ob is None:
        raise UsageError(f"no object named '{name}' in the file")
    if ob.type != "MESH":
        raise UsageError(f"object '{name}' is a {ob.type.lower()}, not a mesh")
    me = ob.data
    V = len(me.vertices)
    co = np.empty(3 * V, dtype=np.float32)
    me.vertices.foreach_get("co", co)
    me.calc_loop_triangles()
    T = len(me.loop_triangles)
    if T == 0:
        raise UsageError(f"mesh '{name}' has no faces")
    tris = np.empty(3 * T, dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(-1, 3).astype(np.float64), tris.reshape(-1, 3).astype(np.int64)


def run(args) -> int:
    """Fit a variational sphere set to one mesh's rest pose and write it as JSON."""
    import json

    from ..core.methods.sphere_set import baselines
    from ..core.methods.sphere_set import method as ss
    from ..core.report import writing as core_report

    if args.count < 1:
        raise UsageError(f"--count must be at least 1, got {args.count}")
    try:
        out = core_report.check_output_path(args.json, "--json")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    bpy = import_bpy()
    from ..addon import files, report

    try:
        report.load_quietly(args.file)
    except files.FileError as exc:
        raise UsageError(str(exc)) from None
    vertices, triangles = _rest_mesh(bpy.context.scene, args.object)
    if not ss.variational_available():
        raise UsageError("the variational sphere-set fit (core/methods/sphere_set/variational.py) is "
                         "not in this version of skin_collide")
    t0 = time.perf_counter()
    s = ss.fit_set(vertices, triangles, args.count, seed=args.seed, builder="variational")
    seconds = time.perf_counter() - t0
    if not (np.isfinite(s.outside_volume) and np.isfinite(s.mesh_volume)):
        baselines.measure_set(s, vertices, triangles, seed=args.seed)
    doc = {"centers": np.asarray(s.centers, np.float64).tolist(),
           "radii": np.asarray(s.radii, np.float64).tolist(),
           "outside_volume": float(s.outside_volume), "mesh_volume": float(s.mesh_volume)}
    write_output(out, json.dumps(doc, allow_nan=False), "the sphere set")
    e_r = s.outside_volume / s.mesh_volume if s.mesh_volume else float("nan")
    print(f"sphere set of '{args.object}': {s.count} spheres over {triangles.shape[0]} "
          f"triangles, outside volume {s.outside_volume:.6g} (E_r {e_r:.3f}), "
          f"mesh volume {s.mesh_volume:.6g}")
    print(f"build time: {seconds:.2f} s")
    print(f"wrote {out}")
    return 0
