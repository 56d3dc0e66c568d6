# A rig's collision test, as in README.md ("Checking a rig in pytest"); the README shows this
# file verbatim (tests/blender/test_testing_api.py keeps them identical).
import pytest

bpy = pytest.importorskip("bpy")     # runs where Blender's Python module is

from skin_collide.addon import demo_rig  # noqa: E402
from skin_collide.testing import assert_no_collisions, collisions  # noqa: E402


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    """Your rig's .blend; here two generated tube characters stand in for it."""
    path = tmp_path_factory.mktemp("rig") / "rig.blend"
    bpy.ops.wm.read_homefile(use_empty=True)
    demo_rig.build_character("Hero", location=(-1, 0, 0), rings=12, segments=8, frames=12)
    demo_rig.build_character("Sidekick", location=(1, 0, 0), rings=12, segments=8, frames=12)
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    return str(path)


def test_the_characters_never_touch(rig):
    assert_no_collisions(rig, frames=(1, 12), self_collision=True, ignore_rest_contacts=True)


def test_a_crossing_names_frames_objects_and_pairs(rig):
    bpy.ops.wm.open_mainfile(filepath=rig)
    bpy.data.objects["Sidekick_rig"].location.x = -0.8       # walk into the hero
    episodes = collisions([bpy.data.objects["Hero"], bpy.data.objects["Sidekick"]],
                          frames=(1, 12), ignore_rest_contacts=False)
    assert episodes and {(e.a, e.b) for e in episodes} == {("Hero", "Sidekick")}
    with pytest.raises(AssertionError, match=r"Hero x Sidekick: frames? \d+"):
        assert_no_collisions([bpy.data.objects["Hero"], bpy.data.objects["Sidekick"]],
                             frames=(1, 12), ignore_rest_contacts=False)
