"""Issue 29: carried self pairs through the live path with TWO characters, self-collision on.

While the artist poses, each character's self pairs are carried over from its last
complete answer and only its moved triangles are re-checked
(`core.scan.carry.object_self_pairs`, given the scene's `Carried` by the pose handler's
`session.query(..., carry=True)`). Here the edits go through the real handlers (pose a
bone, `view_layer.update()`, the depsgraph handler runs the live update) and switch from
one character to the other, undo pose edits, edit weights (then rebuild, as the panel
asks), hide, unlink and delete a character between updates. After EVERY update the live
answer (its triangle pairs, polygon pairs, count and coloured triangles: both characters'
self pairs and the pairs between them) must equal a fresh full query of the same
depsgraph by a scanner built anew from the meshes as they are then (no kept answer).

Each test also checks that it exercised the carry: updates where an unmoved character
carried its whole answer, and updates where a posed one carried part of it.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from skin_collide.addon.state import STATE

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")


@pytest.fixture(scope="module", autouse=True)
def addon(registered_addon):
    """Every test here runs with the add-on registered."""


def armature_of(ob):
    return next(m.object for m in ob.modifiers if m.type == "ARMATURE")


class Recorder:
    """What the live updates computed, without changing it: the pipeline's outcome (the
    kept triangle pairs) of each `Scanner.current`, and per self query of a character
    whether it carried (how many triangles moved, how many kept pairs it carried)."""

    def __init__(self, monkeypatch):
        from skin_collide.addon import scanner
        from skin_collide.core import aabb_tree as self_collision
        from skin_collide.core import scan as core_scan

        self.outcomes = []
        self.self_queries = []
        self._moved = None
        real_current = scanner.Scanner.current
        real_object_self_pairs = core_scan.within.object_self_pairs
        real_self_pairs = self_collision.self_pairs

        def current(sc, scene, depsgraph, *args, **kw):
            out = real_current(sc, scene, depsgraph, *args, **kw)
            self.outcomes.append((sc, out))
            return out

        def self_pairs(*args, **kw):
            if kw.get("moved") is not None:
                self._moved = np.array(kw["moved"], dtype=bool)
            return real_self_pairs(*args, **kw)

        def object_self_pairs(obj, *args, **kw):
            carried = kw.get("carried")
            last = carried.frame(obj) if carried is not None else None
            self._moved = None
            pairs = real_object_self_pairs(obj, *args, **kw)
            if carried is not None:
                moved = self._moved
                if moved is None:
                    self.self_queries.append((obj.name, "full", -1, 0))
                else:
                    prev = last.pairs
                    carried = int(np.count_nonzero(~(moved[prev[:, 0]] | moved[prev[:, 1]])))
                    self.self_queries.append((obj.name, "carry", int(moved.sum()), carried))
            return pairs

        monkeypatch.setattr(scanner.Scanner, "current", current)
        monkeypatch.setattr(core_scan.within, "object_self_pairs", object_self_pairs)
        monkeypatch.setattr(self_collision, "self_pairs", self_pairs)

    def start(self):
        self.outcomes.clear()
        self.self_queries.clear()


def named_pairs(sc, kept) -> dict:
    """Kept triangle pairs by (object name, object name): sets of (t, u)."""
    names = [o.name for o in sc.objects]
    out = {}
    for i, j, p in kept:
        out.setdefault((names[i], names[j]), set()).update(map(tuple, p.tolist()))
    return out


class Live:
    """The scene's live overlay driven through the handlers, checked against a fresh full
    query after every update."""

    def __init__(self, recorder):
        self.rec = recorder
        self.scene = bpy.context.scene
        self.kinds = set()          # (name, name) object pairs that had pairs
        self.carried_whole = 0      # unmoved characters whose whole answer was carried
        self.carried_part = 0       # posed characters that carried some of their pairs
        self.updates = 0
        self.history = []           # per update: the live answer (to compare after undo)
        self.last = None            # the last live query: (scanner, outcome, LiveResult)

    def update(self, label: str, expect_error: str = "") -> dict:
        """Run the live update of the edits made since the last one (the depsgraph
        handler, as posing does) and compare its answer with a fresh full query."""
        from skin_collide.addon import scanner, session

        self.rec.start()
        memo = STATE.frame_memos.get(self.scene.name_full)
        hits = memo.hits if memo is not None else 0
        bpy.context.view_layer.update()
        live = session.live_result(self.scene)
        assert live is not None, label
        if expect_error:
            assert expect_error in live.error, (label, live.error)
            return {}
        assert live.error == "" and not live.not_checked, (label, live.error)
        assert not (live.more_than or live.dense), label     # complete answers only
        assert len(self.rec.outcomes) <= 1, (label, "one live query per update")
        if self.rec.outcomes:
            self.last = self.rec.outcomes[0] + (live,)
        else:               # nothing the live path follows changed: the answer stands
            assert self.last[2] is live, label
        sc, out, _ = self.last
        assert sc.settings.carry and sc.state.carried is not None, label     # it carries
        got = named_pairs(sc, out.tri_pairs)
        queries = list(self.rec.self_queries)
        memo = STATE.frame_memos.get(self.scene.name_full)
        remembered = memo is not None and memo.hits > hits
        if remembered:      # inputs of a frame answered before (core.scan.FrameMemo)
            assert queries == [], (label, queries)
        elif self.rec.outcomes:
            assert sorted(q[0] for q in queries) == sorted(live.names), (label, queries)
        # The fresh full query: data built anew from the meshes as they are now, the same
        # depsgraph, no kept answer.
        fresh = scanner.Scanner(sc.meshes, method=self.scene.skin_collide.method,
                                self_collision=True)
        ref = fresh.current(self.scene, bpy.context.evaluated_depsgraph_get())
        want = named_pairs(fresh, ref.tri_pairs)
        for a, b in zip(out.positions, ref.positions):
            assert np.array_equal(a, b), label                 # the same evaluated pose
        assert got == want, (label, {k: (len(got.get(k, ())), len(want.get(k, ())))
                                     for k in set(got) | set(want)})
        assert set(live.polygon_pairs) == set(ref.record.pairs), label
        assert live.n_pairs == len(ref.record.pairs), label
        for name, hits in zip(live.names, live.hit_triangles):    # the overlay's triangles
            ids = [q[side] for (x, y), p in want.items() for q in p
                   for side, n in ((0, x), (1, y)) if n == name]
            assert np.array_equal(hits, np.unique(np.array(ids, dtype=np.int64))), (label, name)
        self.kinds.update(k for k, p in got.items() if p)
        for _name, kind, n_moved, carried in queries:
            if kind == "carry" and carried:
                if n_moved == 0:
                    self.carried_whole += 1
                else:
                    self.carried_part += 1
        self.updates += 1
        self.history.append(got)
        return got


@pytest.fixture
def two_live(monkeypatch):
    """Two tube characters facing each other (Left, Right) close enough to overlap, so
    that pairs between them come and go as they bend; self-collision on, built with
    the panel's Build, animation removed (the poses are the test's), live overlay on,
    throttle off. Yields (Live, Left mesh, Right mesh)."""
    from blender_helpers import selected_demo

    from skin_collide.addon import handlers

    a, b = selected_demo(bpy, rings=24, segments=12)
    armature_of(b).location.x = -0.05         # the tubes stand 0.4 apart: they overlap
    for ob in (a, b):
        armature_of(ob).animation_data_clear()
        for pb in armature_of(ob).pose.bones:
            pb.rotation_mode = "XYZ"
    scene = bpy.context.scene
    scene.skin_collide.self_collision = True
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    saved = handlers.THROTTLE
    handlers.THROTTLE = 0.0
    rec = Recorder(monkeypatch)
    assert bpy.ops.skin_collide.toggle_overlay() == {"FINISHED"}
    yield Live(rec), a, b
    handlers.THROTTLE = saved
    STATE.pending = ""
    bpy.ops.wm.read_homefile(use_empty=True)


#: Per bone (root first), the bend of `fold` in degrees: a sharp crease at the third
#: joint (self pairs that editing the outer bones leaves alone), the outer bones curled
#: back onto the chain (self pairs with the tip).
FOLD = (0.0, -40.0, -130.0, -30.0, -60.0, -70.0)


def fold(arm, sideways: float = 0.4) -> None:
    """Fold the chain onto itself (self pairs) and towards the other character (pairs
    between them)."""
    for k, pb in enumerate(arm.pose.bones):
        pb.rotation_euler = (math.radians(FOLD[k]), sideways if k == 1 else 0.0, 0.0)


def select_only(ob) -> None:
    for o in bpy.context.scene.objects:
        o.select_set(o == ob)
    bpy.context.view_layer.objects.active = ob


def test_switching_characters_undo_weights_hide_and_delete(two_live):
    live, a, b = two_live
    arm_a, arm_b = armature_of(a), armature_of(b)
    bones_a, bones_b = list(arm_a.pose.bones), list(arm_b.pose.bones)

    # Pose A (the active character) so that it folds into itself and reaches B.
    select_only(arm_a)
    fold(arm_a)
    live.update("A folded")
    bones_a[-1].rotation_euler.x = math.radians(-80)          # A's last bone: carries
    live.update("A last bone")
    # Switch to B: pose it (A is unmoved: its whole answer is carried).
    select_only(arm_b)
    fold(arm_b)
    live.update("B folded")
    bones_b[-1].rotation_euler.x = math.radians(-60)
    live.update("B last bone")
    # Back to A; then undo that edit (the previous rotation restored).
    select_only(arm_a)
    before = tuple(bones_a[4].rotation_euler)
    answer_before = live.history[-1]
    bones_a[4].rotation_euler.x = math.radians(-95)
    bones_a[4].rotation_euler.z = math.radians(20)
    live.update("A bone 4")
    bones_a[4].rotation_euler = before
    got = live.update("A bone 4 undone")
    assert got == answer_before                                 # the same pose, the same answer
    # B again, twice, then undo both at once.
    before_b = [tuple(pb.rotation_euler) for pb in bones_b]
    answer_before = live.history[-1]
    bones_b[3].rotation_euler.x = math.radians(-100)
    live.update("B bone 3")
    bones_b[5].scale = (1.4, 0.7, 1.2)
    live.update("B bone 5 scaled")
    for pb, r in zip(bones_b, before_b):
        pb.rotation_euler = r
    bones_b[5].scale = (1.0, 1.0, 1.0)
    got = live.update("B undone")
    assert got == answer_before

    # Change A's weights between edits: the handler marks the mesh changed, the live update
    # asks for a rebuild; restoring the weights makes the data fit again (A's kept answer
    # survived the refused update: the same positions, carried).
    group = a.vertex_groups["bone_5"]
    tip = [v.index for v in a.data.vertices
           if any(g.group == group.index and g.weight > 0.5 for g in v.groups)][:30]
    old = {v: group.weight(v) for v in tip}
    group.add(tip, 0.2, "REPLACE")
    live.update("A weights painted", expect_error="rebuild")
    assert a.data.as_pointer() in STATE.changed_meshes
    for v, w in old.items():
        group.add([v], w, "REPLACE")
    live.update("A weights restored")
    # Paint them again and rebuild A alone (the panel's Build; it refreshes the overlay):
    # A starts afresh, B keeps its data; the next edits carry again.
    group.add(tip, 0.2, "REPLACE")
    live.update("A weights painted again", expect_error="rebuild")
    select_only(a)
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    select_only(arm_a)
    bones_a[-1].rotation_euler.x = math.radians(-70)
    live.update("A after rebuild")
    bones_a[-1].rotation_euler.x = math.radians(-85)
    live.update("A edited after rebuild")
    select_only(arm_b)
    bones_b[-1].rotation_euler.x = math.radians(-75)
    live.update("B after A's rebuild")

    # Hide A in the viewport (Blender then hands out its rest mesh), edit it while hidden,
    # show it again.
    a.hide_viewport = True
    live.update("A hidden")
    bones_a[-2].rotation_euler.x = math.radians(-60)
    live.update("A edited while hidden")
    a.hide_viewport = False
    live.update("A shown")
    a.hide_set(True)                                         # the eye: still evaluated
    bones_a[-1].rotation_euler.x = math.radians(-90)
    live.update("A hidden (eye), edited")
    a.hide_set(False)
    live.update("A visible")

    # Unlink B from the scene, pose both, link it back (B's kept answer is from before).
    coll = live.scene.collection
    coll.objects.unlink(b)
    live.update("B unlinked")
    bones_b[-1].rotation_euler.x = math.radians(-65)
    bones_a[-1].rotation_euler.x = math.radians(-75)
    live.update("both edited, B out")
    coll.objects.link(b)
    live.update("B linked again")
    bones_b[-1].rotation_euler.x = math.radians(-55)
    live.update("B edited after relink")
    # Delete A: B goes on alone, carrying.
    bpy.data.objects.remove(a)
    live.update("A deleted")
    bones_b[-2].rotation_euler.x = math.radians(-80)
    live.update("B edited alone")

    assert {("Left", "Left"), ("Right", "Right"), ("Left", "Right")} <= live.kinds
    assert live.carried_whole >= 5 and live.carried_part >= 5, \
        (live.carried_whole, live.carried_part)


def random_bone_edit(pb, rng) -> None:
    """A strong edit of one bone: up to 170 degrees about a random axis, per-axis scale
    0.5-2."""
    pb.rotation_mode = "QUATERNION"
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    ang = rng.uniform(-math.radians(170), math.radians(170))
    pb.rotation_quaternion = (math.cos(ang / 2), *(math.sin(ang / 2) * axis))
    pb.scale = tuple(rng.uniform(0.5, 2.0, size=3))


def pose_of(arm) -> list:
    return [(pb.rotation_mode, tuple(pb.rotation_quaternion), tuple(pb.rotation_euler),
             tuple(pb.scale)) for pb in arm.pose.bones]


def set_pose(arm, pose) -> None:
    for pb, (mode, q, e, s) in zip(arm.pose.bones, pose):
        pb.rotation_mode = mode
        pb.rotation_quaternion, pb.rotation_euler, pb.scale = q, e, s


@pytest.mark.parametrize("seed", [0, 1])
def test_random_strong_edits_switching_characters(two_live, seed):
    """Seeded random edits: each step poses one bone of one character (the active one
    switches at random), strongly (170 degree twists, scaled bones), or undoes the last
    edit of a character, or edits both; the live answer equals the fresh full query after
    every update."""
    live, a, b = two_live
    rng = np.random.default_rng(1000 + seed)
    arms = [armature_of(a), armature_of(b)]
    for arm in arms:
        fold(arm)
    live.update("folded")
    undo = [[], []]
    for step in range(24):
        kind = rng.choice(["edit", "edit", "edit", "undo", "both"])
        who = int(rng.integers(2))
        if kind == "undo" and undo[who]:
            set_pose(arms[who], undo[who].pop())
        else:
            for k in ([0, 1] if kind == "both" else [who]):
                undo[k].append(pose_of(arms[k]))
                select_only(arms[k])
                # Mostly the outer bones (few triangles move: the carry), sometimes any.
                lo = 3 if rng.random() < 0.75 else 0
                random_bone_edit(arms[k].pose.bones[int(rng.integers(lo, 6))], rng)
        live.update(f"seed {seed} step {step} {kind} {who}")
    assert ("Left", "Left") in live.kinds and ("Right", "Right") in live.kinds
    assert ("Left", "Right") in live.kinds
    assert live.carried_whole >= 3 and live.carried_part >= 3, \
        (live.carried_whole, live.carried_part)
