"""On every shared asset, over every frame of every action, core.skinning reproduces
Blender's evaluated meshes within 1e-5 of the model's size, with Preserve Volume off (as
shipped) and switched on."""
import numpy as np
import pytest
from conftest import ASSET_FILES

pytestmark = [pytest.mark.asset, pytest.mark.blender]
TOL = 1e-5


def _frames(action, stride):
    from skin_collide.addon import animation

    frames = animation.action_frames(action)
    return frames[::stride] if stride > 1 else frames


@pytest.mark.parametrize("asset", ASSET_FILES or ["(none)"])
def test_every_action_every_frame(bpy_module, assets_dir, asset):
    from skin_collide.addon import animation, extract, files
    from skin_collide.core import skinning

    bpy = bpy_module
    files.load_file(str(assets_dir / asset))
    scene = bpy.context.scene
    meshes = extract.skinned_meshes(scene)
    assert meshes, f"{asset}: no skinned mesh found"
    rigs = {ob.name: extract.rig_from_object(ob) for ob in meshes}
    for rig in rigs.values():
        assert rig.unsupported == [], rig.unsupported
    arm = extract.modifier_report(meshes[0]).armature
    actions = animation.actions_for(arm)
    assert actions, f"{asset}: no action"
    checked = 0
    worst = {False: 0.0, True: 0.0}
    for act in actions:
        animation.use_action(arm, act)
        for f in _frames(act, 1):
            scene.frame_set(f)
            for pv in (False, True):
                for ob in meshes:
                    for mod in ob.modifiers:
                        if mod.type == "ARMATURE":
                            mod.use_deform_preserve_volume = pv
                if pv:
                    bpy.context.view_layer.update()
                dg = bpy.context.evaluated_depsgraph_get()
                for ob in meshes:
                    rig = rigs[ob.name]
                    rig.preserve_volume = pv
                    ref = extract.evaluated_positions(ob, dg)
                    ours = skinning.skin_rig(rig, extract.pose_from_object(ob, dg))
                    dev = np.abs(ours - ref).max() / np.ptp(ref, axis=0).max()
                    worst[pv] = max(worst[pv], dev)
                    checked += 1
            for ob in meshes:
                for mod in ob.modifiers:
                    if mod.type == "ARMATURE":
                        mod.use_deform_preserve_volume = False
    print(f"{asset}: {len(actions)} actions, {checked} mesh-frames, worst LBS {worst[False]:.2e}, "
          f"DQS {worst[True]:.2e}")
    assert worst[False] < TOL and worst[True] < TOL
