"""A mesh the view layer does not evaluate (disabled in viewports, or its collection
hidden or excluded) is not posed by Blender: its evaluated mesh is its rest mesh at every
frame. It is never checked as if posed: choosing characters skips it with a note (Build,
the command line), and Scan Frame Range leaves hidden characters out and names them."""
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
    sel = cli._select_meshes(bpy.context.scene, None)
    why = ("it is disabled in viewports" if how == "disabled"
           else "its collection is excluded or disabled in this view layer")
    assert sel.meshes == [a]
    assert sel.notes == [f"'{b.name_full}' is not checked: {why} (Blender does not draw it)"]
    with pytest.raises(cli.UsageError, match=f"is not checked: {why}"):
        cli._select_meshes(bpy.context.scene, [b.name])


def test_scan_frame_range_leaves_hidden_characters_out_and_names_them(demo, capfd):
    """Scan Frame Range checks the characters the viewport shows (as the overlay and
    Refresh do): one disabled in viewports is left out and named in the result; with
    every one hidden it stops with one line and keeps the last report. The scanner itself
    never checks a mesh Blender does not pose."""
    import json

    from skin_collide.addon import scanner
    a, b = demo
    b.hide_viewport = True
    capfd.readouterr()
    assert bpy.ops.skin_collide.scan(use_scene_range=False, frame_start=1,
                                     frame_end=3) == {"FINISHED"}
    report = bpy.context.scene.skin_collide.report
    doc = json.loads(report.as_string())
    assert doc["objects"] == [a.name] and len(doc["frames"]) == 3
    out = capfd.readouterr()
    said = [line for line in (out.out + out.err).splitlines() if "frames collide" in line]
    assert said and said[-1].startswith("Warning")          # Blender prints reports headless
    assert said[-1].endswith(f"; hidden, not scanned: '{b.name}'")
    a.hide_set(True)
    text = report.as_string()
    with pytest.raises(RuntimeError, match="every built character is hidden: show one to scan it"):
        bpy.ops.skin_collide.scan(use_scene_range=False, frame_start=1, frame_end=3)
    assert bpy.context.scene.skin_collide.report.as_string() == text
    sc = scanner.Scanner([a, b])
    with pytest.raises(Exception, match="does not pose it"):
        sc.evaluate(bpy.context.evaluated_depsgraph_get())
    b.hide_viewport = False
    sc.evaluate(bpy.context.evaluated_depsgraph_get())
