"""Building and loading the benchmark scenes: the shared assets (``../shared/assets`` next
to the repository, or ``$SKIN_COLLIDE_SHARED/assets``), a small generated rig for smoke runs
(`SMOKE`), subdivided characters and interpenetrating copies (Kavan & Žára 2005, Table 3
setup: every triangle split into four, same shape), a shirt over a body, pose edits.
Some tests import this module alone (`scenes`, with bench/ on their path): it imports
nothing of the bench package at the top."""
from __future__ import annotations

import math
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The shared characters: SKIN_COLLIDE_ASSETS (copies another Blender reads, as the tests
#: use it), else SKIN_COLLIDE_SHARED/assets, else ../shared/assets next to the repository.
SHARED = os.environ.get("SKIN_COLLIDE_ASSETS") or os.path.join(
    os.environ.get("SKIN_COLLIDE_SHARED") or os.path.join(ROOT, "..", "shared"), "assets")

#: The asset names of the smoke runs, each saved once per process into a temporary .blend
#: (no shared asset needed): `SMOKE`, a small animated tube character (`addon.demo_rig`:
#: `Body`, bones bone_0..bone_5, frames 1-8); `SMOKE_STAR`, a torso with three limbs
#: (tests/chains_helpers.py, not animated: the sphere chains need limbs).
SMOKE = "smoke-tube.blend"
SMOKE_STAR = "smoke-star.blend"
_smoke_files: dict[str, str] = {}


def asset_path(asset: str) -> str:
    """The file of `asset`: a shared asset's name, `SMOKE`, or a path to a file."""
    if asset in (SMOKE, SMOKE_STAR):
        return smoke_file(asset)
    if os.path.isfile(asset):
        return os.path.abspath(asset)
    return os.path.join(SHARED, asset)


def require(asset: str) -> str:
    """`asset_path(asset)`, or exits saying where the shared assets are looked for."""
    path = asset_path(asset)
    if not os.path.isfile(path):
        sys.exit(f"bench needs ../shared/assets next to the repository ({SHARED}); "
                 f"no {asset} there (`--smoke` runs on a generated rig)")
    return path


def tests_module(relpath: str):
    """A helper module of the test suite (`tests/RELPATH`), imported by its file (no
    `sys.path` edit): random poses, synthetic skins."""
    import importlib.util

    name = "bench_tests_" + relpath.replace("/", "_").removesuffix(".py")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "tests", relpath))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def smoke_file(asset: str = SMOKE) -> str:
    """The .blend of a smoke asset (`SMOKE` or `SMOKE_STAR`), made once per process."""
    if asset not in _smoke_files:
        import bpy

        bpy.ops.wm.read_homefile(use_empty=True)
        if asset == SMOKE_STAR:
            tests_module("chains_helpers.py").star_character(bpy, "Body")
        else:
            from skin_collide.addon import demo_rig

            demo_rig.build_character("Body", rings=16, segments=10, frames=8, swing=2.5)
        folder = tempfile.mkdtemp(prefix="bench_smoke_")
        path = os.path.join(folder, asset)
        bpy.ops.wm.save_as_mainfile(filepath=path, copy=True)
        _smoke_files[asset] = path
    return _smoke_files[asset]


_registered: list[bool] = []


def register_addon() -> None:
    """`skin_collide.register()` once per process (the panel's operators and handlers)."""
    if not _registered:
        import skin_collide

        skin_collide.register()
        _registered.append(True)


def load_asset(asset: str):
    """Opens `asset`; returns its largest skinned mesh (most polygons)."""
    import bpy

    from skin_collide.addon import extract, files

    files.load_file(require(asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    return max(meshes, key=lambda o: len(o.data.polygons))


def load_meshes(asset: str, level: int) -> list:
    """Every skinned mesh of `asset`, each rest mesh subdivided `level` times."""
    import bpy

    from skin_collide.addon import extract, files

    files.load_file(require(asset))
    meshes = extract.skinned_meshes(bpy.context.scene)
    for ob in meshes:
        subdivide_rest_mesh(ob, level)
    return meshes


def rest_mesh(ob) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) float64 vertices and (T, 3) int64 loop triangles of mesh object `ob`'s own
    data (rest pose, mesh data coordinates: no modifier, no object transform)."""
    me = ob.data
    co = np.empty(3 * len(me.vertices), dtype=np.float32)
    me.vertices.foreach_get("co", co)
    me.calc_loop_triangles()
    tris = np.empty(3 * len(me.loop_triangles), dtype=np.int32)
    me.loop_triangles.foreach_get("vertices", tris)
    return co.reshape(-1, 3).astype(np.float64), tris.reshape(-1, 3).astype(np.int64)


def load_rest_mesh(asset: str) -> tuple[str, np.ndarray, np.ndarray]:
    """The largest skinned mesh of `asset` as `skin_collide sphere-set` reads it: (its name,
    rest vertices, loop triangles)."""
    ob = load_asset(asset)
    v, t = rest_mesh(ob)
    return ob.name, v, t


def armature(ob):
    from skin_collide.addon import extract

    return extract.modifier_report(ob).armature


def load_one(asset: str, level: int):
    """The largest skinned mesh of `asset`, its rest mesh subdivided `level` times."""
    ob = load_asset(asset)
    subdivide_rest_mesh(ob, level)
    return ob


def load_pair(asset: str, level: int, offset, turn):
    """Two copies of `asset`'s largest skinned mesh (subdivided `level` times), the copy
    moved by `offset` and turned by `turn` radians about Z."""
    ob = load_asset(asset)
    arm = armature(ob)
    subdivide_rest_mesh(ob, level)
    ob2, _ = duplicate_character(ob, arm, f"{ob.name}_copy", offset=offset, turn=turn)
    return ob, ob2


def load_body(asset: str):
    """The largest skinned mesh of `asset` and its armature."""
    ob = load_asset(asset)
    return ob, armature(ob)


def crossing(asset: str):
    """Two copies of `asset`'s largest skinned mesh crossing: the copy turned by 90° about
    Z around the character's centre. Returns (ob, arm, copy, its armature)."""
    import bpy

    from skin_collide.addon import extract

    ob, arm = load_body(asset)
    c = extract.evaluated_positions(ob, bpy.context.evaluated_depsgraph_get()).mean(axis=0)
    d = c - np.array(arm.matrix_world.translation)
    turned = np.array([-d[1], d[0], 0.0])
    offset = tuple(float(x) for x in (d - turned) * np.array([1.0, 1.0, 0.0]))
    ob2, arm2 = duplicate_character(ob, arm, "copy", offset=offset, turn=math.pi / 2)
    return ob, arm, ob2, arm2


def states(arm, arm2, n_frames: int, n_poses: int, seed: int):
    """The states of two armatures one after the other (a generator, yielding a label):
    `n_frames` frames spread over the first action, then `n_poses` strong random poses
    (170° twists, bone scales 0.5-2; tests/blender_helpers.py)."""
    import bpy

    from skin_collide.addon import animation

    acts = animation.actions_for(arm)
    if acts:
        animation.use_action(arm, acts[0])
        frames = animation.action_frames(acts[0])
        for f in frames[:: max(1, len(frames) // max(n_frames, 1))][:n_frames]:
            bpy.context.scene.frame_set(f)
            yield f"frame {f}"
    if n_poses:
        random_blender_pose = tests_module("blender_helpers.py").random_blender_pose

        rng = np.random.default_rng(seed)
        for a in (arm, arm2):
            a.animation_data_clear()
        for k in range(n_poses):
            random_blender_pose(arm, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
            random_blender_pose(arm2, rng, max_angle=math.radians(170), scale=(0.5, 2.0))
            bpy.context.view_layer.update()
            yield f"pose {k}"


def action_frames(ob, scene=None) -> list[int]:
    """Every frame of the action of `ob`'s armature (the scene's range without one)."""
    import bpy

    from skin_collide.addon import animation

    scene = scene or bpy.context.scene
    arm = armature(ob)
    act = arm.animation_data.action if arm and arm.animation_data else None
    return animation.action_frames(act) if act else list(range(scene.frame_start,
                                                                scene.frame_end + 1))


def action_range(ob) -> tuple[int, int]:
    """First and last frame of the action of `ob`'s armature."""
    lo, hi = armature(ob).animation_data.action.frame_range
    return int(lo), int(hi)


def x_span(ob) -> float:
    """The X extent of `ob`'s rest mesh, in world units (a character's arm span)."""
    co = np.array([v.co[0] for v in ob.data.vertices])
    return float(co.max() - co.min()) * ob.matrix_world.to_scale()[0]


def select_only(meshes, active=None) -> None:
    import bpy

    for o in bpy.context.scene.objects:
        o.select_set(o in meshes)
    bpy.context.view_layer.objects.active = active or meshes[0]


def rotate(pb, angle: float) -> None:
    """Turn a pose bone by `angle` about its local X, whatever its rotation mode."""
    from mathutils import Quaternion

    q = Quaternion((1, 0, 0), angle)
    if pb.rotation_mode == "QUATERNION":
        pb.rotation_quaternion = pb.rotation_quaternion @ q
    else:
        e = pb.rotation_euler.copy()
        e.x += angle
        pb.rotation_euler = e


def edit_and_query(pb, k: int, sc, sc_carry):
    """Edit `k` of pose bone `pb` (±6° about its X, alternating), Blender's evaluation of
    it, then the full query (`sc`) and the carried one (`sc_carry`, on the same positions
    and triangles). Returns (evaluation ms, depsgraph, positions, poses, full pairs, full
    ms, carried pairs, carried ms)."""
    import bpy

    from bench import timing

    rotate(pb, math.radians(6.0) * (1 if k % 2 else -1))
    t0 = timing.now()
    dg = bpy.context.evaluated_depsgraph_get()
    dg.update()
    ev = timing.ms_since(t0)
    pos, poses = sc.evaluate(dg)
    t0 = timing.now()
    a, _, _ = sc.query(pos, poses)
    t_full = timing.ms_since(t0)
    t0 = timing.now()
    b, _, _ = sc_carry.query(pos, poses, sc.triangles)
    t_carry = timing.ms_since(t0)
    return ev, dg, pos, poses, a, t_full, b, t_carry


#: Vertex groups of the shirt's polygons (their dominant bone), by name prefix.
SHIRT_BONES = ("spine", "breast", "clavicle", "shoulder", "upperarm")


def make_shirt(ob, push: float, bones=SHIRT_BONES):
    """A copy of `ob` keeping the polygons whose dominant bone is one of `bones` (name
    prefixes), pushed out along the rest vertex normals by `push` (same armature, same
    weights)."""
    import bmesh
    import bpy

    bones = tuple(bones)
    names = {g.index: g.name for g in ob.vertex_groups}
    me = ob.data
    nv = len(me.vertices)
    torso = np.zeros(nv)
    other = np.zeros(nv)
    for v in me.vertices:
        for g in v.groups:
            if names[g.group].startswith(bones):
                torso[v.index] += g.weight
            else:
                other[v.index] += g.weight
    shirt = ob.copy()
    shirt.data = me.copy()
    shirt.name = "shirt"
    bpy.context.scene.collection.objects.link(shirt)
    bm = bmesh.new()
    bm.from_mesh(shirt.data)
    bm.verts.ensure_lookup_table()
    drop = [f for f in bm.faces
            if sum(torso[v.index] for v in f.verts) <= sum(other[v.index] for v in f.verts)]
    bmesh.ops.delete(bm, geom=drop, context="FACES_ONLY")
    bmesh.ops.delete(bm, geom=[v for v in bm.verts if not v.link_faces], context="VERTS")
    bm.normal_update()
    for v in bm.verts:
        v.co += v.normal * push
    bm.to_mesh(shirt.data)
    bm.free()
    bpy.context.view_layer.update()
    return shirt



def subdivide_rest_mesh(ob, levels: int) -> None:
    """Split every face into four, `levels` times, on the rest mesh (vertex groups are
    interpolated, the shape is unchanged: a Simple subdivision applied before the
    Armature modifier)."""
    import bpy

    if levels <= 0:
        return
    mod = ob.modifiers.new("bench_subdiv", "SUBSURF")
    mod.subdivision_type = "SIMPLE"
    mod.levels = levels
    mod.render_levels = levels
    with bpy.context.temp_override(object=ob, active_object=ob):
        bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=0)
        bpy.ops.object.modifier_apply(modifier=mod.name)


def duplicate_character(ob, arm, name: str, offset=(0.0, 0.25, 0.0), turn: float = math.pi):
    """A full copy (mesh + armature + action) turned by `turn` about Z and moved by
    `offset`, so that two characters interpenetrate."""
    import bpy

    arm2 = arm.copy()
    arm2.data = arm.data.copy()
    arm2.name = f"{name}_rig"
    bpy.context.scene.collection.objects.link(arm2)
    ob2 = ob.copy()
    ob2.data = ob.data.copy()
    ob2.name = name
    bpy.context.scene.collection.objects.link(ob2)
    ob2.parent = arm2 if ob.parent == arm else ob.parent
    for mod in ob2.modifiers:
        if mod.type == "ARMATURE" and mod.object == arm:
            mod.object = arm2
    # Through the world matrix: glTF armatures use quaternion rotation, where editing
    # rotation_euler silently does nothing (the copy would stand exactly on the original).
    from mathutils import Matrix, Vector

    loc, rot, scale = arm.matrix_world.decompose()
    arm2.matrix_world = (Matrix.Translation(loc + Vector(offset)) @ Matrix.Rotation(turn, 4, "Z")
                         @ rot.to_matrix().to_4x4() @ Matrix.Diagonal(scale).to_4x4())
    bpy.context.view_layer.update()
    return ob2, arm2


def framing_view(objects, w: int, h: int):
    """The view and projection matrices (mathutils) looking at `objects`' mesh vertices
    (world space) from the front right, for a w x h viewport (`addon.snapshot.look_at`)."""
    import numpy as np
    from mathutils import Matrix

    from skin_collide.addon import snapshot

    every = np.concatenate([np.array([o.matrix_world @ v.co for v in o.data.vertices])
                            for o in objects])
    view, proj = snapshot.look_at((every.min(0) + every.max(0)) / 2,
                                  0.5 * np.linalg.norm(np.ptp(every, 0)),
                                  np.array([0.3, -1.0, 0.35]), w / h)
    return Matrix(view.tolist()), Matrix(proj.tolist())
