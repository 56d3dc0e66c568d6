"""A mesh the view layer does not evaluate (disabled in viewports, or its collection
hidden or excluded) is not posed by Blender: its evaluated mesh is its rest mesh at every
frame. It is never checked as if posed: choosing characters skips it with a note (Build,
the command line), a scan of a built one stops with one line, and the scene is left as
it was."""
import pytest

pytestmark = [pytest.mark.blender, pytest.mark.usefixtures("registered_addon")]
bpy = pytest.importorskip("bpy")


@pytest.fixture
def demo(demo_pair):
    assert bpy.ops.skin_collide.build() == {"FINISHED"}
    return demo_pair


def hide_in_collection(ob):
    coll = bpy.data.collections.new("Hidden")
    bpy.context.scene.collection.children.link(coll)
    coll.objects.link(ob)
    bpy.context.scene.collection.objects.unlink(ob)
    return coll


@pytest.mark.parametrize("how", ["disabled", "collection hidden", "collection excluded"])
def test_a_mesh_blender_does_not_pose_is_skipped_with_a_note(demo, how):
    from skin_collide import cli
    from skin_collide.addon import extract

    a, b = demo
    if how == "disabled":
        b.hide_viewport = True
    else:
        coll = hide_in_collection(b)
        if how == "collection hidden":
            coll.hide_viewport = True
        else:
            bpy.context.view_layer.layer_collection.children["Hidden"].exclude = True
    assert not extract.is_evaluated(b) and extract.is_evaluated(a)
    meshes, notes = extract.character_meshes(bpy.context.scene.objects)
    assert meshes == [a]
    assert notes == [f"'{b.name}' is disabled in viewports, or its collection is hidden or "
                     "excluded, so Blender does not pose it: skipped (enable it to check it)"]
    chosen, cli_notes = cli._select_meshes(bpy.context.scene, None)
    assert chosen == [a] and cli_notes == notes
    with pytest.raises(cli.UsageError, match="does not pose it"):
        cli._select_meshes(bpy.context.scene, [b.name])


def test_scanning_a_built_mesh_blender_does_not_pose_stops_with_one_line(demo):
    from skin_collide.addon import scanner

    a, b = demo
    b.hide_viewport = True
    report_before = bpy.context.scene.skin_collide.report
    with pytest.raises(RuntimeError, match=f"'{b.name}' is disabled in viewports.*enable it, "
                                           "or leave it out"):
        bpy.ops.skin_collide.scan(use_scene_range=False, frame_start=1, frame_end=3)
    assert bpy.context.scene.skin_collide.report == report_before
    sc = scanner.Scanner([a, b])
    with pytest.raises(Exception, match="does not pose it"):
        sc.evaluate(bpy.context.evaluated_depsgraph_get())
    b.hide_viewport = False
    sc.evaluate(bpy.context.evaluated_depsgraph_get())
