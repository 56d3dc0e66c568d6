"""skin_collide.testing in plain pytest with the pip bpy: rest contacts, and the README's
example kept identical to tests/blender/test_readme_example.py."""
import math
import os
import re

import pytest

pytestmark = pytest.mark.blender
bpy = pytest.importorskip("bpy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_readme_shows_the_example_test_verbatim():
    readme = open(os.path.join(ROOT, "README.md")).read()
    example = open(os.path.join(ROOT, "tests", "blender", "test_readme_example.py")).read()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert example in blocks


def test_rest_contacts_are_ignored_like_the_panel(tmp_path):
    from skin_collide.addon import demo_rig
    from skin_collide.testing import collisions

    bpy.ops.wm.read_homefile(use_empty=True)
    # overlapping in the rest pose (radius 0.25, 0.3 apart): a designed-in contact
    # in contact at rest; A bends mid-way (frames 1 and 9 are the rest pose)
    kw = dict(rings=10, segments=6, frames=9)
    a, _ = demo_rig.build_character("A", location=(-0.15, 0, 0), rotation_z=-math.pi / 2, **kw)
    b, _ = demo_rig.build_character("B", location=(0.15, 0, 0), rotation_z=math.pi / 2,
                                    swing=0.0, **kw)
    every = collisions([a, b], frames=(1, 9), self_collision=False, ignore_rest_contacts=False)
    assert [(e.start, e.end) for e in every] == [(1, 9)]
    new = collisions([a, b], frames=(1, 9), self_collision=False, ignore_rest_contacts=True)
    assert new and all(e.start > 1 and e.end < 9 for e in new)   # rest frames are clean
    bpy.ops.wm.read_homefile(use_empty=True)


def test_clearance_reports_near_episodes_and_fails_the_assertion():
    """Two still characters 0.6 apart (radius 0.25: a 0.1 gap, never touching):
    `collisions(..., clearance=D)` returns near episodes only when D reaches the gap, and
    `assert_no_collisions` fails on them."""
    from skin_collide.addon import demo_rig
    from skin_collide.core.contacts.clearance import NearEpisode
    from skin_collide.testing import assert_no_collisions, collisions

    bpy.ops.wm.read_homefile(use_empty=True)
    kw = dict(rings=10, segments=8, frames=3, swing=0.0)
    a, _ = demo_rig.build_character("A", location=(-0.3, 0, 0), **kw)
    b, _ = demo_rig.build_character("B", location=(0.3, 0, 0), **kw)
    try:
        assert collisions([a, b], frames=(1, 3), self_collision=False) == []
        assert collisions([a, b], frames=(1, 3), self_collision=False, clearance=0.05) == []
        near = collisions([a, b], frames=(1, 3), self_collision=False, clearance="15cm")
        assert near and all(isinstance(e, NearEpisode) for e in near)
        assert [(e.start, e.end) for e in near] == [(1, 3)] * len(near)
        assert all(0.05 < e.closest <= 0.15 for e in near)
        with pytest.raises(AssertionError, match="near episode"):
            assert_no_collisions([a, b], frames=(1, 3), self_collision=False, clearance=0.15)
        with pytest.raises(ValueError, match="not a distance"):
            collisions([a, b], frames=(1, 3), self_collision=False, clearance="x mm")
    finally:
        bpy.ops.wm.read_homefile(use_empty=True)
