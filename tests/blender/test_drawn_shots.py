"""Issue 40, "What Blender draws, whatever moves it": held-out shots where Blender's
evaluation moves meshes by other means than an Armature modifier on a real object of the
window's scene. ``scan FILE --self --json OUT`` must check every mesh instance the depsgraph
draws that the evaluation moves, with the right motion model; the truth is Blender's own
``BVHTree.overlap`` on the drawn instances (tests/drawn_oracle.py), read by the test apart
from the product, per frame.

Each shot is a small .blend written once per module; the scan runs on it in-process
(`cli.main`), then the oracle opens the same file and evaluates the same frames. On every
frame: no pair Blender finds is missing from the report (unless judged exactly disjoint),
every reported pair is in Blender's raw overlap or meets exactly or touches, no reported
pair names a mesh that is not one of the shot's participants, and ``--fail-on-collision``
exits 1 when Blender finds pairs. The panel on each shot (Build + Scan Frame Range) writes
the scan's pairs, and the live overlay shows them at every frame.

The shots: (1) two Cesium Men, subdivided once (28k triangles), deformed through legacy
armature parenting (parent_type 'ARMATURE', no modifier); (2) a shape-key animation
pressing two parts of one mesh through each other, and "lips": two coincident-at-rest,
equally weighted vertices pulled apart by a shape key; (3) a Surface Deform shirt on a
skinned body crossing another character; (4) a body under a Mesh Deform with a skinned
wire cage; (5) Cesium Man with a Corrective Smooth after the Armature (seams open); (6) a
character collection instanced by three Empties, its source drawn or excluded; (7) a
character in a second scene (``--scene``); (8) a flattened Alembic cache beside a rig.
Poses are keyed per frame: the rest pose, a moderate and a strong one (170° twists), and on
some shots a frame 1 km from the origin.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import ASSETS, REPO
from drawn_oracle import NO_ID, drawn_meshes, reported, truth, verdict
from studio_helpers import report_pairs

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("registered_addon")]
bpy = pytest.importorskip("bpy")

FAR = np.array([1000.0, -1000.0, 500.0])


# ---------------------------------------------------------------- running a shot

@dataclass
class Shot:
    """A saved shot, the scan's outcome on it, and Blender's truth on each frame."""
    name: str
    path: Path
    frames: tuple[int, int]
    participants: list[str]
    scene: str | None = None
    characters: tuple = ()
    rc: int | None = None
    out: str = field(default="", repr=False)
    err: str = field(default="", repr=False)
    doc: dict | None = field(default=None, repr=False)
    truths: dict = field(default_factory=dict, repr=False)

    def frame_list(self) -> list[int]:
        return list(range(self.frames[0], self.frames[1] + 1))

    def verdicts(self) -> dict:
        """Per frame, the report against the truth (`drawn_oracle.verdict`), once."""
        if not hasattr(self, "_verdicts"):
            assert self.doc is not None, (f"{self.name}: no report (exit {self.rc}): "
                                          f"{self.err.strip()[-800:]}")
            by_frame = report_pairs(self.doc)
            assert sorted(by_frame) == self.frame_list(), (self.name, sorted(by_frame))
            self._verdicts = {f: verdict(t, reported(by_frame[f]))
                              for f, t in self.truths.items()}
        return self._verdicts


def scan(shot: Shot) -> None:
    """``scan FILE --self --json OUT --frames A:B --fail-on-collision [--scene S]``,
    in-process; the exit code, output and report (None when none was written)."""
    from skin_collide import cli

    report = shot.path.with_suffix(".json")
    argv = ["scan", str(shot.path), "--self", "--json", str(report),
            "--frames", f"{shot.frames[0]}:{shot.frames[1]}", "--fail-on-collision"]
    if shot.scene:
        argv += ["--scene", shot.scene]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            shot.rc = cli.main(argv)
        except SystemExit as exc:           # argparse: an option it does not know
            shot.rc = exc.code
    shot.out, shot.err = out.getvalue(), err.getvalue()
    shot.doc = json.loads(report.read_text()) if report.is_file() else None


def use_scene(name: str | None):
    """The window's scene set to `name` (as a user switching scenes), returned."""
    scene = bpy.data.scenes[name] if name else bpy.context.scene
    if bpy.context.window is not None:
        bpy.context.window.scene = scene
    return scene


def oracle(shot: Shot) -> None:
    """Blender's truth on each frame of the saved shot, opened afresh."""
    bpy.ops.wm.open_mainfile(filepath=str(shot.path))
    scene = use_scene(shot.scene)
    for f in shot.frame_list():
        scene.frame_set(f)
        shot.truths[f] = truth(bpy.context.evaluated_depsgraph_get(), shot.participants,
                               True, shot.characters)


def run(shot: Shot) -> Shot:
    """Scan the saved shot, then read the truth."""
    t0 = time.perf_counter()
    scan(shot)
    t1 = time.perf_counter()
    oracle(shot)
    print(f"{shot.name}: scan exit {shot.rc} ({t1 - t0:.1f} s); Blender's pairs per frame "
          f"{ {f: len(t.pairs) for f, t in shot.truths.items()} } "
          f"({time.perf_counter() - t1:.1f} s)")
    return shot


def save(path: Path) -> None:
    """The file saved at its first frame."""
    bpy.context.scene.frame_set(bpy.context.scene.frame_start)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


@pytest.fixture(scope="module", autouse=True)
def empty_file_after():
    """The module leaves an empty file behind (it ends on the last shot opened)."""
    yield
    bpy.ops.wm.read_homefile(use_empty=True)


# ---------------------------------------------------------------- posing

def key_pose(arm, frame: int) -> None:
    """Key every pose bone's transform and the armature object's location at `frame`."""
    for pb in arm.pose.bones:
        pb.keyframe_insert("location", frame=frame)
        pb.keyframe_insert("rotation_quaternion", frame=frame)
        pb.keyframe_insert("scale", frame=frame)
    arm.keyframe_insert("location", frame=frame)


def rest_pose(arm) -> None:
    for pb in arm.pose.bones:
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion = (1.0, 0.0, 0.0, 0.0)
        pb.location = (0.0, 0.0, 0.0)
        pb.scale = (1.0, 1.0, 1.0)


def centroid(ob) -> np.ndarray:
    """The centroid of `ob`'s evaluated vertices, world space."""
    ev = ob.evaluated_get(bpy.context.evaluated_depsgraph_get())
    co = np.empty(len(ev.data.vertices) * 3, np.float32)
    ev.data.vertices.foreach_get("co", co)
    M = np.array(ev.matrix_world, dtype=np.float64)
    return co.reshape(-1, 3).astype(np.float64).mean(axis=0) @ M[:3, :3].T + M[:3, 3]


def keyed_poses(arms, frames: list[int], rng, far_frame: int | None = None,
                centre: tuple | None = None) -> None:
    """On each of `frames`, a pose keyed on every armature: the rest pose on the first
    frame, then a moderate pose (60°), then strong poses (170° twists, per-axis bone
    scale 0.6-1.5, bone translations of a quarter of the median bone length at most);
    on `far_frame` the armatures are moved by FAR. `centre` = (mesh, armature, other
    mesh): the armature is moved on each frame so that its mesh's centroid is the other
    mesh's (the two then interpenetrate whatever the pose)."""
    from blender_helpers import random_blender_pose
    from mathutils import Vector

    scene = bpy.context.scene
    base = {a.name: a.matrix_world.copy() for a in arms}
    lengths = [b.length for a in arms for b in a.data.bones]
    shift = min(0.05, 0.25 * float(np.median(lengths)))
    for a in arms:
        a.animation_data_clear()
        rest_pose(a)
    for k, f in enumerate(frames):
        scene.frame_set(f)
        for a in arms:
            a.matrix_world = base[a.name]
            if k == 0:
                rest_pose(a)
            elif k == 1:
                random_blender_pose(a, rng, max_angle=math.radians(60), scale=(1.0, 1.0),
                                    translate=0.0)
            else:
                random_blender_pose(a, rng, max_angle=math.radians(170), scale=(0.6, 1.5),
                                    translate=shift)
            if f == far_frame:
                m = a.matrix_world.copy()
                m.translation = m.translation + Vector(FAR.tolist())
                a.matrix_world = m
        bpy.context.view_layer.update()
        if centre is not None:
            ob, arm, other = centre
            m = arm.matrix_world.copy()
            m.translation = m.translation + Vector((centroid(other) - centroid(ob)).tolist())
            arm.matrix_world = m
            bpy.context.view_layer.update()
        for a in arms:
            key_pose(a, f)
    scene.frame_start, scene.frame_end = frames[0], frames[-1]


def cesium_man():
    """Cesium Man loaded (an empty file first): (mesh, armature)."""
    from skin_collide.addon import files

    if ASSETS is None:
        pytest.skip("../shared/assets is not present on this machine")
    files.load_file(str(ASSETS / "cesium_man.glb"))
    return bpy.data.objects["Cesium_Man"], bpy.data.objects["Armature"]


def copy_character(ob, arm, name: str, turn: float = math.pi / 2):
    """A full copy of (mesh, armature), turned about Z (bench/scenes.py)."""
    if str(REPO / "bench") not in sys.path:
        sys.path.insert(0, str(REPO / "bench"))
    import scenes

    return scenes.duplicate_character(ob, arm, name, offset=(0.0, 0.0, 0.0), turn=turn)


def apply_modifier(ob, name: str) -> None:
    with bpy.context.temp_override(object=ob, active_object=ob):
        bpy.ops.object.modifier_apply(modifier=name)


# ---------------------------------------------------------------- the shots

FRAMES = [1, 2, 3, 4]


def new_path(factory, name: str) -> Path:
    return factory.mktemp(name) / f"{name}.blend"


def empty_file() -> None:
    bpy.ops.wm.read_homefile(use_empty=True)


def character(name: str, location=(0.0, 0.0, 0.0), rotation_z: float = 0.0, rings: int = 24,
              segments: int = 16, frames: int = 6, **kw):
    """A generated skinned tube (`demo_rig.build_character`): its bend peaks on frame 3."""
    from skin_collide.addon import demo_rig

    return demo_rig.build_character(name, location=location, rotation_z=rotation_z,
                                    rings=rings, segments=segments, frames=frames, **kw)


def merge_coincident(ob) -> None:
    """Cesium Man's glTF vertices split at UV seams (same position, same weights) merged
    back into one vertex each."""
    import bmesh

    bm = bmesh.new()
    bm.from_mesh(ob.data)
    bmesh.ops.remove_doubles(bm, verts=bm.verts, dist=1e-7)
    bm.to_mesh(ob.data)
    bm.free()


@pytest.fixture(scope="module")
def legacy_parent(tmp_path_factory) -> Shot:
    """(1) Two Cesium Men, each subdivided once (Subdivision applied: 28,032 triangles),
    deformed by legacy armature parenting: the Armature modifier removed, the mesh
    parented to its armature with parent_type 'ARMATURE' (Blender's virtual Armature
    modifier). Its seams are merged first, so that this shot is about the motion model
    only (seams: `corrective_smooth`). The copy, turned a quarter, is centred on the
    original on every frame; frame 4 is a strong pose 1 km from the origin."""
    ob, arm = cesium_man()
    merge_coincident(ob)
    ob.modifiers.remove(ob.modifiers["Armature"])
    ob.modifiers.new("Subdivision", "SUBSURF").levels = 1
    apply_modifier(ob, "Subdivision")
    ob.parent_type = "ARMATURE"
    ob.data.calc_loop_triangles()
    assert len(ob.data.loop_triangles) == 28_032 and not ob.modifiers
    ob2, arm2 = copy_character(ob, arm, "Cesium_Man.copy")
    assert ob2.parent == arm2 and ob2.parent_type == "ARMATURE"
    keyed_poses([arm, arm2], FRAMES, np.random.default_rng(40), far_frame=4,
                centre=(ob2, arm2, ob))
    path = new_path(tmp_path_factory, "legacy_parent")
    save(path)
    shot = run(Shot("legacy_parent", path, (1, 4), [ob.name, ob2.name]))
    assert np.abs(shot.truths[4].drawn[0].pos).max() > 900.0
    assert any(a != b for t in shot.truths.values() for a, _, b, _ in t.pairs)
    return shot


def two_tubes_pressed() -> object:
    """One mesh, no armature, no parent: two capped tubes side by side, and a shape key
    "Press" whose value (keyed 0 on frame 1 to 1 on frame 4, linear) moves the second
    tube through the first."""
    from skin_collide.core.procedural import tube_geometry

    v, f = tube_geometry(24, 16, 2.0, 0.25)
    verts = np.vstack([v + [-0.4, 0.0, 0.0], v + [0.4, 0.0, 0.0]])
    faces = f + [tuple(i + len(v) for i in face) for face in f]
    me = bpy.data.meshes.new("Press")
    me.from_pydata(verts.tolist(), [], faces)
    me.update()
    ob = bpy.data.objects.new("Press", me)
    bpy.context.scene.collection.objects.link(ob)
    ob.shape_key_add(name="Basis")
    key = ob.shape_key_add(name="Press")
    moved = verts.copy()
    moved[len(v):, 0] -= 0.85                      # the second tube into the first
    moved[len(v):, 1] += 0.1 * (moved[len(v):, 2] - 1.0)
    key.data.foreach_set("co", moved.astype(np.float32).ravel())
    for frame, value in ((1, 0.0), (4, 1.0)):
        key.value = value
        key.keyframe_insert("value", frame=frame)
    linear(ob.data.shape_keys)
    return ob


def linear(idb) -> None:
    """Every key of `idb`'s action linear."""
    ad = idb.animation_data
    bags = ([ad.action.layers[0].strips[0].channelbag(ad.action_slot)]
            if hasattr(ad.action, "layers") else [ad.action])
    for bag in bags:
        for fc in bag.fcurves:
            for kp in fc.keyframe_points:
                kp.interpolation = "LINEAR"


@pytest.fixture(scope="module")
def shape_keys(tmp_path_factory) -> Shot:
    """(2a) A shape-key animation: two parts of one mesh, which nothing else moves,
    pressed through each other by an animated shape key (self pairs)."""
    empty_file()
    ob = two_tubes_pressed()
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 4
    path = new_path(tmp_path_factory, "shape_keys")
    save(path)
    shot = run(Shot("shape_keys", path, (1, 4), [ob.name]))
    assert not shot.truths[1].pairs and shot.truths[4].pairs
    return shot


def slit(ob) -> tuple[np.ndarray, np.ndarray]:
    """The tube of `ob` split along its edges at angle 0 (the vertices at +X): each vertex
    there gets a twin at the same position with the same weights, one on each side of the
    slit (lips). Returns (the vertices on the -Y side, their twins on the +Y side), in
    the same order."""
    import bmesh

    bm = bmesh.new()
    bm.from_mesh(ob.data)
    bm.verts.ensure_lookup_table()
    on = {v.index for v in bm.verts if v.co.x > 0 and abs(v.co.y) < 1e-9}
    edges = [e for e in bm.edges if all(v.index in on for v in e.verts)
             and abs(e.verts[0].co.z - e.verts[1].co.z) > 0]
    bmesh.ops.split_edges(bm, edges=edges)
    bm.to_mesh(ob.data)
    bm.free()
    me = ob.data
    co = np.array([v.co for v in me.vertices])
    lower, upper = set(), set()
    for p in me.polygons:
        ys = co[list(p.vertices), 1]
        for vi in p.vertices:
            if co[vi, 0] > 0 and abs(co[vi, 1]) < 1e-9:
                (lower if ys.min() < -1e-9 else upper).add(vi)
    lower, upper = sorted(lower - upper), sorted(upper - lower)
    lower.sort(key=lambda i: co[i, 2])
    upper.sort(key=lambda i: co[i, 2])
    assert len(lower) == len(upper) > 0 and np.array_equal(co[lower], co[upper])
    return np.array(lower), np.array(upper)


@pytest.fixture(scope="module")
def lips(tmp_path_factory) -> Shot:
    """(2b) "Lips": a skinned tube split along one line of edges (twin vertices: same
    rest position, same weights, which the product's rest weld joins), then a shape key
    keyed from 0 (frame 1) to 1 (frame 4) swings the -Y side's lip over the +Y side's, so
    that triangles on the two sides of the slit cross. Blender draws the twins apart on
    frames 2-4: the crossings there are pairs."""
    empty_file()
    ob, arm = character("Lips", frames=6)
    lower, upper = slit(ob)
    ob.shape_key_add(name="Basis")
    key = ob.shape_key_add(name="Open")
    co = np.array([v.co for v in ob.data.vertices])
    r = np.hypot(co[lower, 0], co[lower, 1])
    ang = math.radians(32.0)
    co[lower, 0], co[lower, 1] = 1.2 * r * math.cos(ang), 1.2 * r * math.sin(ang)
    key.data.foreach_set("co", co.astype(np.float32).ravel())
    for frame, value in ((1, 0.0), (4, 1.0)):
        key.value = value
        key.keyframe_insert("value", frame=frame)
    linear(ob.data.shape_keys)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 4
    path = new_path(tmp_path_factory, "lips")
    save(path)
    shot = run(Shot("lips", path, (1, 4), [ob.name]))
    across = [p for f in (2, 3, 4) for p in shot.truths[f].pairs
              if across_slit(shot.truths[f].drawn[0], p, lower, upper)]
    assert across, "the lips never cross: the shot would prove nothing"
    return shot


def across_slit(d, pair, lower, upper) -> bool:
    """Whether the two polygons of a self `pair` hold twins: a vertex of the -Y lip and
    the +Y vertex at its rest position (adjacent by the rest weld, apart in the frame)."""
    _, pa, _, pb = pair
    va = set(d.tris[d.triangles_of(pa)].ravel().tolist())
    vb = set(d.tris[d.triangles_of(pb)].ravel().tolist())
    return any((lo in va and up in vb) or (lo in vb and up in va)
               for lo, up in zip(lower.tolist(), upper.tolist()))


@pytest.fixture(scope="module")
def surface_deform(tmp_path_factory) -> Shot:
    """(3) A "shirt": a copy of a skinned body's mesh, 15% wider and 3% longer, with no
    armature and no parent, bound to the body by a Surface Deform modifier in the rest
    pose; the body bends into another character, so the shirt crosses it."""
    empty_file()
    body, _ = character("Body", location=(-0.3, 0.0, 0.0), rotation_z=-math.pi / 2)
    character("Other", location=(0.3, 0.0, 0.0), rotation_z=math.pi / 2)
    bpy.context.scene.frame_set(1)
    bpy.context.view_layer.update()
    me = body.data.copy()
    me.name = "Shirt"
    co = np.array([v.co for v in me.vertices])
    co[:, :2] *= 1.15
    co[:, 2] = 1.0 + 1.03 * (co[:, 2] - 1.0)      # its caps beyond the body's
    me.vertices.foreach_set("co", co.astype(np.float32).ravel())
    me.update()
    shirt = bpy.data.objects.new("Shirt", me)
    bpy.context.scene.collection.objects.link(shirt)
    shirt.matrix_world = body.matrix_world
    mod = shirt.modifiers.new("SurfaceDeform", "SURFACE_DEFORM")
    mod.target = body
    bpy.context.view_layer.update()
    with bpy.context.temp_override(object=shirt, active_object=shirt):
        assert bpy.ops.object.surfacedeform_bind(modifier=mod.name) == {"FINISHED"}
    bpy.context.evaluated_depsgraph_get()          # the bind happens in the evaluation
    assert mod.is_bound
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 4
    path = new_path(tmp_path_factory, "surface_deform")
    save(path)
    shot = run(Shot("surface_deform", path, (1, 4), ["Body", "Shirt", "Other"]))
    assert any(p[0] == "Other" and p[2] == "Shirt" for t in shot.truths.values()
               for p in t.pairs)
    return shot


@pytest.fixture(scope="module")
def mesh_deform(tmp_path_factory) -> Shot:
    """(4) A body (no armature, no parent) deformed by a Mesh Deform modifier whose cage
    is a coarse skinned tube drawn as a wire, in keyed strong poses: the body's self pairs
    must be found, and no pair may name the cage."""
    from skin_collide.core.procedural import tube_geometry

    empty_file()
    cage, arm = character("Cage", rings=8, segments=8, radius=0.42)
    cage.display_type = "WIRE"
    v, f = tube_geometry(32, 16, 1.8, 0.22)
    me = bpy.data.meshes.new("Body")
    me.from_pydata((v + [0.0, 0.0, 0.1]).tolist(), [], f)
    me.update()
    body = bpy.data.objects.new("Body", me)
    bpy.context.scene.collection.objects.link(body)
    mod = body.modifiers.new("MeshDeform", "MESH_DEFORM")
    mod.object = cage
    mod.precision = 4
    keyed_poses([arm], FRAMES, np.random.default_rng(4))
    bpy.context.scene.frame_set(1)
    with bpy.context.temp_override(object=body, active_object=body):
        assert bpy.ops.object.meshdeform_bind(modifier=mod.name) == {"FINISHED"}
    bpy.context.evaluated_depsgraph_get()
    assert mod.is_bound
    path = new_path(tmp_path_factory, "mesh_deform")
    save(path)
    shot = run(Shot("mesh_deform", path, (1, 4), ["Body"]))
    assert any(t.pairs for t in shot.truths.values())
    return shot


@pytest.fixture(scope="module")
def corrective_smooth(tmp_path_factory) -> Shot:
    """(5) Cesium Man with a Corrective Smooth after its Armature modifier, in keyed
    poses: the smoothing moves the two sides of each glTF seam differently, so seam
    corners Blender draws together at rest open in a pose (adjacency is decided per
    frame); self pairs across them must be found."""
    ob, arm = cesium_man()
    ob.modifiers.new("CorrectiveSmooth", "CORRECTIVE_SMOOTH")
    keyed_poses([arm], FRAMES, np.random.default_rng(5))
    path = new_path(tmp_path_factory, "corrective_smooth")
    save(path)
    shot = run(Shot("corrective_smooth", path, (1, 4), [ob.name]))
    assert any(t.pairs for t in shot.truths.values())
    return shot


def instanced(exclude: bool, origin) -> list[str]:
    """A character collection "Char" (Body and its rig) instanced by three Empties
    around `origin`, each turned; the source collection drawn at the world origin or
    excluded from the view layer. Returns the participants."""
    from mathutils import Vector

    empty_file()
    scene = bpy.context.scene
    coll = bpy.data.collections.new("Char")
    scene.collection.children.link(coll)
    body, arm = character("Body")
    for ob in (body, arm):
        scene.collection.objects.unlink(ob)
        coll.objects.link(ob)
    names = []
    for dx, dy, turn in ((0.0, 0.0, 0.0), (0.3, 0.0, 0.5 * math.pi), (0.0, 0.3, math.pi)):
        e = bpy.data.objects.new("Empty", None)
        scene.collection.objects.link(e)
        e.instance_type = "COLLECTION"
        e.instance_collection = coll
        e.location = Vector(origin) + Vector((dx, dy, 0.0))
        e.rotation_euler = (0.0, 0.0, turn)
        names.append(f"{e.name}/Body")
    assert names == ["Empty/Body", "Empty.001/Body", "Empty.002/Body"]
    if exclude:
        bpy.context.view_layer.layer_collection.children["Char"].exclude = True
    else:
        names.append("Body")
    scene.frame_start, scene.frame_end = 1, 4
    return names


@pytest.fixture(scope="module")
def instances_drawn(tmp_path_factory) -> Shot:
    """(6a) Three collection instances of a character overlapping 2 m from its source,
    which is drawn too."""
    names = instanced(False, (2.0, 0.0, 0.0))
    path = new_path(tmp_path_factory, "instances_drawn")
    save(path)
    shot = run(Shot("instances_drawn", path, (1, 4), names))
    assert any(p[0] != p[2] for t in shot.truths.values() for p in t.pairs)
    return shot


@pytest.fixture(scope="module")
def instances_excluded(tmp_path_factory) -> Shot:
    """(6b) The same instances 1 km from the origin, the source collection excluded from
    the view layer (only the instances are drawn)."""
    names = instanced(True, tuple(FAR.tolist()))
    path = new_path(tmp_path_factory, "instances_excluded")
    save(path)
    shot = run(Shot("instances_excluded", path, (1, 4), names))
    assert any(p[0] != p[2] for t in shot.truths.values() for p in t.pairs)
    assert np.abs(shot.truths[1].drawn[0].pos).max() > 900.0
    return shot


@pytest.fixture(scope="module")
def second_scene(tmp_path_factory) -> Shot:
    """(7) Two characters crossing in a second scene, "Scene.001"; the window shows the
    first, empty scene. ``scan --scene Scene.001`` checks them."""
    empty_file()
    first = bpy.context.scene
    other = bpy.data.scenes.new("Scene.001")
    assert other.name == "Scene.001"
    use_scene(other.name)
    character("Left", location=(-0.3, 0.0, 0.0), rotation_z=-math.pi / 2)
    character("Right", location=(0.3, 0.0, 0.0), rotation_z=math.pi / 2)
    other.frame_start, other.frame_end = 1, 4
    use_scene(first.name)
    assert not first.objects
    path = new_path(tmp_path_factory, "second_scene")
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    shot = run(Shot("second_scene", path, (1, 4), ["Left", "Right"], scene="Scene.001"))
    assert any(p[0] != p[2] for t in shot.truths.values() for p in t.pairs)
    return shot


@pytest.fixture(scope="module")
def alembic(tmp_path_factory) -> Shot:
    """(8) A character's posed animation exported to Alembic (flattened), the character
    then deleted and the cache imported back (a mesh with a MeshSequenceCache modifier,
    no armature) beside a live rigged character it crosses."""
    if not (bpy.app.build_options.alembic and hasattr(bpy.ops.wm, "alembic_export")
            and hasattr(bpy.ops.wm, "alembic_import")):
        pytest.skip("this bpy has no Alembic")
    empty_file()
    scene = bpy.context.scene
    cached, rig = character("Cached", location=(-0.45, 0.0, 0.0), rotation_z=-math.pi / 2)
    character("Live", location=(0.45, 0.0, 0.0), rotation_z=math.pi / 2)
    keyed_poses([rig], FRAMES, np.random.default_rng(8))
    folder = tmp_path_factory.mktemp("alembic")
    abc = folder / "cached.abc"
    for ob in scene.objects:
        ob.select_set(ob == cached)
    bpy.context.view_layer.objects.active = cached
    assert bpy.ops.wm.alembic_export(filepath=str(abc), start=1, end=4, selected=True,
                                     flatten=True, as_background_job=False) == {"FINISHED"}
    bpy.data.objects.remove(cached)
    bpy.data.objects.remove(rig)
    before = set(bpy.data.objects)
    assert bpy.ops.wm.alembic_import(filepath=str(abc), as_background_job=False) == {"FINISHED"}
    new = [ob for ob in bpy.data.objects if ob not in before and ob.type == "MESH"]
    assert len(new) == 1 and new[0].modifiers[0].type == "MESH_SEQUENCE_CACHE", new
    scene.frame_start, scene.frame_end = 1, 4
    path = folder / "alembic.blend"
    save(path)
    shot = run(Shot("alembic", path, (1, 4), [new[0].name, "Live"]))
    assert any(p[0] != p[2] for t in shot.truths.values() for p in t.pairs)
    return shot


SHOTS = [
    pytest.param("legacy_parent", marks=pytest.mark.asset),
    "shape_keys",
    "lips",
    "surface_deform",
    "mesh_deform",
    pytest.param("corrective_smooth", marks=pytest.mark.asset),
    "instances_drawn",
    "instances_excluded",
    "second_scene",
    "alembic",
]


@pytest.fixture
def shot(request) -> Shot:
    return request.getfixturevalue(request.param)


# ---------------------------------------------------------------- the tests

@pytest.mark.parametrize("shot", SHOTS, indirect=True)
def test_no_pair_blender_finds_is_missed(shot):
    assert sum(len(t.pairs) for t in shot.truths.values()) > 0, "the shot proves nothing"
    lines, bad = [], False
    for f, v in shot.verdicts().items():
        lines.append(f"frame {f}: {v.text()}")
        bad |= bool(v.missed)
    print(f"{shot.name}:\n  " + "\n  ".join(lines))
    assert not bad, f"{shot.name}: pairs missed\n  " + "\n  ".join(lines)


@pytest.mark.parametrize("shot", SHOTS, indirect=True)
def test_every_reported_pair_is_blenders_or_exact(shot):
    lines, bad = [], False
    for f, v in shot.verdicts().items():
        lines.append(f"frame {f}: {v.text()}; e.g. {(v.unknown + v.extra)[:3]}")
        bad |= bool(v.unknown or v.extra)
    assert not bad, f"{shot.name}: pairs Blender does not draw meeting\n  " + "\n  ".join(lines)


@pytest.mark.parametrize("shot", SHOTS, indirect=True)
def test_fail_on_collision_exits_1(shot):
    assert any(t.pairs for t in shot.truths.values())
    assert shot.rc == 1, (f"{shot.name}: exit {shot.rc} though Blender finds pairs; "
                          f"{shot.err.strip()[-800:]}")


def test_the_oracle_names_nested_instances_through_every_instancer():
    """The facts of Blender's instances the oracle's names rest on (and a scan naming
    nested instances ``<outer>/<inner>/<mesh>`` needs): for an Empty "Out" instancing a
    collection that holds an Empty "In" instancing another collection, ``inst.parent`` is
    the OUTER instancer only, ``persistent_id`` lists indices in the collections'
    ``all_objects`` innermost first (the mesh's, then In's; the rest INT_MAX; all zeros
    for a real object), and ``matrix_world`` is the whole chain."""
    from mathutils import Matrix

    empty_file()
    scene = bpy.context.scene

    def triangle(name, coll, hide=False):
        me = bpy.data.meshes.new(name)
        me.from_pydata([(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)], [], [(0, 1, 2)])
        ob = bpy.data.objects.new(name, me)
        coll.objects.link(ob)
        ob.hide_viewport = hide
        return ob

    inner, outer = bpy.data.collections.new("Inner"), bpy.data.collections.new("Outer")
    sub = bpy.data.collections.new("InnerSub")
    for c in (inner, outer):
        scene.collection.children.link(c)
    inner.children.link(sub)
    triangle("Hidden", inner, hide=True)                 # counted in all_objects, not drawn
    triangle("Tri", inner)
    triangle("SubTri", sub)
    triangle("Prop", outer)
    e_in = bpy.data.objects.new("In", None)
    outer.objects.link(e_in)
    e_in.instance_type, e_in.instance_collection = "COLLECTION", inner
    e_in.location = (0.0, 2.0, 0.0)
    e_out = bpy.data.objects.new("Out", None)
    scene.collection.objects.link(e_out)
    e_out.instance_type, e_out.instance_collection = "COLLECTION", outer
    e_out.location, e_out.scale = (10.0, 0.0, 0.0), (2.0, 2.0, 2.0)
    for name in ("Inner", "Outer"):
        bpy.context.view_layer.layer_collection.children[name].exclude = True
    dg = bpy.context.evaluated_depsgraph_get()
    facts = {}
    for inst in dg.object_instances:
        ob = inst.instance_object if inst.is_instance else inst.object
        facts[ob.name] = (inst.is_instance, inst.parent.original.name if inst.parent else None,
                          [int(i) for i in inst.persistent_id if int(i) != NO_ID],
                          Matrix(inst.matrix_world))
    assert facts["Out"][:3] == (False, None, [0] * 8)
    assert facts["In"][:3] == (True, "Out", [1])                  # Outer: Prop, In
    assert facts["Tri"][:3] == (True, "Out", [1, 1])              # Inner: Hidden, Tri, SubTri
    assert facts["SubTri"][:3] == (True, "Out", [2, 1])
    assert "Hidden" not in facts
    chain = e_out.matrix_world @ e_in.matrix_basis
    assert np.allclose(np.array(facts["Tri"][3]), np.array(chain))
    drawn = {d.name: d for d in drawn_meshes(dg)}
    assert sorted(drawn) == ["Out/In/SubTri", "Out/In/Tri", "Out/Prop"]
    assert np.allclose(drawn["Out/In/Tri"].pos[1], [10.0 + 2.0, 4.0, 0.0])
    # The product names them the same way, through every instancer (addon.drawn).
    from skin_collide.addon import drawn as product

    names = sorted(m.name for m in product.drawn_meshes(dg) if product.is_instance(m))
    assert names == ["Out/In/SubTri", "Out/In/Tri", "Out/Prop"]


@pytest.mark.parametrize("shot", SHOTS, indirect=True)
def test_the_panel_and_the_live_overlay_answer_as_the_scan(shot):
    """The panel on the same shot (its scene chosen as a user does, every visible object
    selected, self-collision on, rest contacts kept): Build + Scan Frame Range reports the
    scan's objects and pairs, and Refresh shows the scan's pairs at every frame."""
    from skin_collide.addon import session

    bpy.ops.wm.open_mainfile(filepath=str(shot.path))
    scene = use_scene(shot.scene)
    s = scene.skin_collide
    s.self_collision, s.ignore_rest_contacts = True, False
    scene.frame_start, scene.frame_end = shot.frames
    visible = [ob for ob in scene.objects if ob.visible_get()]
    for ob in visible:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = visible[0]
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    assert bpy.ops.skin_collide.scan() == {"FINISHED"}
    ui = json.loads(s.report.as_string())
    want = report_pairs(shot.doc)
    assert ui["objects"] == shot.doc["objects"], shot.name
    assert report_pairs(ui) == want, shot.name
    for f in shot.frame_list():
        scene.frame_set(f)
        assert bpy.ops.skin_collide.refresh() == {"FINISHED"}
        live = session.live_result(scene)
        assert not live.error and not live.more_than, (shot.name, f, live.error)
        assert set(map(tuple, live.polygon_pairs)) == want[f], (shot.name, f)
