"""core.storage.persist: prepared objects survive the round trip through bytes, for every method
of the registry; other formats and unknown methods are refused with a clear message."""
import io

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.methods import registry
from skin_collide.core.storage import blob, persist


@pytest.fixture(scope="module")
def rig():
    return procedural.tube_rig(rings=10, segments=8, n_bones=4)


def same_arrays(a: dict, b: dict) -> None:
    """Equal, but the rest spheres: stored in float32, each containing the built one
    (docs/storage.md §2)."""
    assert a.keys() == b.keys()
    for k in a:
        if k in ("tree.centers", "tree.radii"):
            continue
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    if "tree.radii" in a:
        shift = np.linalg.norm(a["tree.centers"] - b["tree.centers"], axis=1)
        assert (a["tree.radii"] + shift <= b["tree.radii"]).all()
        np.testing.assert_allclose(b["tree.radii"], a["tree.radii"], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("method", registry.ids())
def test_round_trip_keeps_everything(rig, method, cheap_union_search):
    obj = scan.prepare(rig, method)
    back = persist.from_bytes(persist.to_bytes(obj))
    assert (back.name, back.method, back.asked, back.reason) == \
        (obj.name, obj.method, obj.asked, obj.reason)
    assert back.build_seconds == pytest.approx(obj.build_seconds)
    same_arrays(obj.data.arrays(), back.data.arrays())
    np.testing.assert_array_equal(back.vertex_keys, obj.vertex_keys)
    assert persist.rig_signature(back.rig) == persist.rig_signature(obj.rig)
    assert back.rig.bone_names == obj.rig.bone_names
    # The stored form a build keeps for the session is bit for bit what the bytes decode
    # to: every array with its dtype (spheres rounded as stored), the weld ids.
    kept = persist.stored_form(obj)
    for x, y in ((persist.all_arrays(kept), persist.all_arrays(back)),
                 (kept.data.arrays(), back.data.arrays())):
        assert x.keys() == y.keys()
        for k in x:
            assert np.asarray(x[k]).dtype == np.asarray(y[k]).dtype, k
            np.testing.assert_array_equal(x[k], y[k], err_msg=k)
    np.testing.assert_array_equal(kept.vertex_keys, back.vertex_keys)
    assert (kept.name, kept.method, kept.asked, kept.reason, kept.build_seconds) == \
        (back.name, back.method, back.asked, back.reason, back.build_seconds)


def test_loaded_object_answers_like_the_built_one(rig):
    obj = scan.prepare(rig)
    back = persist.from_bytes(persist.to_bytes(obj))
    rng = np.random.default_rng(3)
    for _ in range(3):
        pa, pb = procedural.random_pose(rig, rng), procedural.random_pose(rig, rng)
        pos = [skinning.lbs_rig(rig, pa), skinning.lbs_rig(rig, pb)]
        r1 = scan.query_frame([obj, obj], pos, [pa, pb], self_collision=True)
        r2 = scan.query_frame([back, back], pos, [pa, pb], self_collision=True)
        assert scan.polygon_pairs([obj, obj], r1) == scan.polygon_pairs([back, back], r2)
        assert r1.modes == r2.modes == ["sphere-tree", "sphere-tree"]


def test_preserve_volume_rig_round_trips_its_method(rig):
    pv = procedural.tube_rig(rings=10, segments=8, n_bones=4)
    pv.preserve_volume = True
    obj = scan.prepare(pv)
    assert obj.method == "sphere-tree-pv" and "Preserve Volume" in obj.reason
    back = persist.from_bytes(persist.to_bytes(obj))
    assert back.method == "sphere-tree-pv"
    assert type(back.data.bounds) is type(obj.data.bounds)


def test_signature_changes_with_weights_and_topology(rig):
    base = persist.rig_signature(rig)
    other = procedural.tube_rig(rings=10, segments=8, n_bones=4)
    assert persist.rig_signature(other) == base
    other.weight_value = other.weight_value * 0.5
    assert persist.rig_signature(other) != base


def test_other_format_and_unknown_method_are_refused(rig):
    obj = scan.prepare(rig)
    d = blob.decode(persist.to_bytes(obj))
    for key, value, message in (("format", np.array(persist.FORMAT + 1), "unknown format"),
                                ("method", np.array("no-such-method"), "no-such-method")):
        bad = dict(d)
        bad[key] = value
        with pytest.raises(ValueError, match=message):
            persist.from_bytes(blob.encode(bad))
        buf = io.BytesIO()                 # the previous container (npz) too
        np.savez_compressed(buf, **bad)
        with pytest.raises(ValueError, match=message):
            persist.from_bytes(buf.getvalue())


def test_a_copy_stores_only_what_it_has_of_its_own(rig):
    """Copies of one build (`scan.prepare_shared`) store their own rig fields alone
    (`own_bytes`); `with_own` on the decoded shared bytes gives each copy's object as
    decoding its whole build would, sharing the decoded data."""
    import dataclasses

    copy_rig = dataclasses.replace(
        rig, name="Copy", armature="Armature.copy",
        mesh_to_armature=np.diag([1.0, 1.0, 1.0, 1.0]) + np.eye(4, k=3) * 0.0,
        notes=["a copy's note"], rigid="")
    copy_rig.mesh_to_armature[0, 3] = 2.5          # its armature holds it elsewhere
    first, second = scan.prepare_shared([rig, copy_rig], "sphere-tree")
    assert second.data is first.data
    base = persist.from_bytes(persist.to_bytes(first))
    own = persist.own_bytes(second)
    assert len(own) < 2000 < len(persist.to_bytes(second))
    got = persist.with_own(base, own)
    whole = persist.from_bytes(persist.to_bytes(second))
    assert got.data is base.data and got.tree_source is base
    assert (got.name, got.rig.name, got.rig.armature, got.rig.notes, got.method, got.asked) == \
        (whole.name, whole.rig.name, whole.rig.armature, whole.rig.notes, whole.method,
         whole.asked)
    for k, v in persist.all_arrays(whole).items():
        np.testing.assert_array_equal(persist.all_arrays(got)[k], v, err_msg=k)
    # The weld ids are the base's (as `scan.renamed` shares them): the same partition of
    # the vertices, numbered in the base's armature space.
    n = np.unique(np.stack([got.vertex_keys, whole.vertex_keys], 1), axis=0).shape[0]
    assert n == np.unique(got.vertex_keys).size == np.unique(whole.vertex_keys).size
    assert persist.rig_signature(got.rig) == persist.rig_signature(second.rig) != \
        persist.rig_signature(first.rig)
    # The decoded base is never changed by its copies.
    assert base.rig.name == rig.name and base.rig.mesh_to_armature[0, 3] == \
        rig.mesh_to_armature[0, 3]
    with pytest.raises(ValueError, match="rebuild"):
        persist.with_own(base, b"not a container")
