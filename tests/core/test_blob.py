"""The compact container (core.storage.blob), the float32 sphere policy (docs/storage.md §2) and
what persist recomputes at load instead of storing."""
import math

import numpy as np
import pytest

from skin_collide.core import procedural, scan, skinning
from skin_collide.core.bounds import refit, refit_dqs
from skin_collide.core.bounds.float32_rounding import spheres_float32
from skin_collide.core.methods import sphere_tree as stm
from skin_collide.core.storage import blob, persist


def test_round_trip_every_dtype_and_codec():
    rng = np.random.default_rng(0)
    arrays = {
        "f64": rng.normal(size=(7, 3)) * 1e3,
        "f32": rng.normal(size=5).astype(np.float32),
        "ptr": np.cumsum(rng.integers(0, 9, 200)).astype(np.int64),     # monotone: delta
        "neg": rng.integers(-300, 300, 50).astype(np.int64),
        "big": np.array([-1, 2**40], dtype=np.int64),
        "u": rng.integers(0, 60000, 10).astype(np.int32),
        "b": rng.random(9) < 0.5,
        "s": np.array(["hip", "spine_01"], dtype=str),
        "scalar": np.array(3.25),
        "word": np.array("on-demand"),
        "empty": np.zeros((0, 3), dtype=np.int32),
        "one": np.array([7], dtype=np.int64),
    }
    for codec in blob.CODECS:
        out = blob.decode(blob.encode(arrays, codec=codec))
        assert list(out) == list(arrays)
        for k, v in arrays.items():
            assert out[k].dtype == v.dtype and out[k].shape == v.shape, k
            assert np.array_equal(out[k], v), k


def test_integers_are_narrowed_and_monotone_ones_delta_coded():
    ptr = np.arange(0, 3 * 100000, 3, dtype=np.int64)
    raw = blob.encode({"p": ptr}, codec="none")
    assert len(raw) < ptr.size * 1 + 400            # one byte per value, plus the header
    assert blob.smallest_int_dtype(-1, 127) == np.int8
    assert blob.smallest_int_dtype(0, 255) == np.uint8
    assert blob.smallest_int_dtype(-1, 40000) == np.int32
    assert blob.smallest_int_dtype(0, 40000) == np.uint16


def test_rejects_what_is_not_a_container():
    good = blob.encode({"a": np.arange(3)})
    for bad in (b"", b"PK\x03\x04 npz", good[:4] + bytes([99]) + good[5:], good[:-7]):
        with pytest.raises(ValueError):
            blob.decode(bad)
    with pytest.raises(TypeError):
        blob.encode({"o": np.array([object()])})


def sphere_excess(centers, radii, points, ptr, verts):
    """Largest (|p − c| − r) in float64 over every (sphere, member point)."""
    seg = np.repeat(np.arange(radii.size), np.diff(ptr))
    d = np.linalg.norm(points[verts] - centers[seg], axis=1)
    return d - radii[seg]


@pytest.mark.parametrize("offset", [0.0, 1e3, 1e5])
def test_float32_spheres_contain_the_float64_ones(offset):
    """Random spheres, far from the origin too: every point of the float64 ball (its
    surface, sampled in all directions) lies in the float32 ball; plain rounding to nearest
    does not guarantee it (the test can fail)."""
    rng = np.random.default_rng(1)
    n = 4000
    c = rng.normal(size=(n, 3)) * 3 + offset
    r = np.abs(rng.normal(size=n)) * 10.0 ** rng.uniform(-6, 0, n)
    c32, r32 = spheres_float32(c, r)
    assert c32.dtype == np.float32 and r32.dtype == np.float32
    cc, rr = c32.astype(np.float64), r32.astype(np.float64)
    # The containment condition of two balls, |c − c'| + r ≤ r'; the float64 evaluation
    # errs by far less than the margin, so the check itself is not the judge:
    gap = rr - (np.linalg.norm(c - cc, axis=1) + r)
    assert (gap >= 0).all()
    # Points on the float64 spheres, in the worst direction (away from the new centre).
    u = c - cc
    norm = np.linalg.norm(u, axis=1, keepdims=True)
    u = np.where(norm > 0, u / np.where(norm > 0, norm, 1), [1.0, 0, 0])
    p = c + u * r[:, None]
    assert (np.linalg.norm(p - cc, axis=1) <= rr).all()
    naive_r = r.astype(np.float32).astype(np.float64)
    assert (np.linalg.norm(p - cc, axis=1) > naive_r).any()


def test_float32_spheres_refuse_what_float32_cannot_hold():
    with pytest.raises(ValueError):
        spheres_float32(np.array([[1e39, 0, 0]]), np.array([1.0]))
    with pytest.raises(ValueError):
        spheres_float32(np.array([[0.0, 0, 0]]), np.array([np.nan]))


def rigs():
    far = procedural.tube_rig(rings=12, segments=9, name="far")
    far.rest_positions = far.rest_positions + np.array([850.0, -40.0, 3.0])
    far.bone_rest = far.bone_rest.copy()
    far.bone_rest[:, :3, 3] += np.array([850.0, -40.0, 3.0])
    pv = procedural.tube_rig(rings=10, segments=8, name="pv")
    pv.preserve_volume = True
    return [procedural.tube_rig(rings=14, segments=10, name="near"), far, pv]


def test_preserve_volume_bounds_come_back_and_refits_enclose():
    obj = scan.prepare(rigs()[2])
    assert obj.method == "sphere-tree-pv"
    back = persist.from_bytes(persist.to_bytes(obj))
    assert type(back.data.bounds) is type(obj.data.bounds)
    for k, v in obj.data.bounds.arrays().items():
        assert np.array_equal(v, getattr(back.data.bounds, k)), k
    rig, tree = back.rig, back.data.tree
    nodes = np.arange(tree.n_nodes)
    seg = np.repeat(nodes, np.diff(tree.node_vert_ptr))
    rng = np.random.default_rng(3)
    for k in range(10):
        pose = procedural.random_pose(rig, rng, max_angle=math.radians(170),
                                      scale_range=(0.5, 2.0), uniform_scale=bool(k % 2))
        P = skinning.dqs_rig(rig, pose)
        fr = refit_dqs.dqs_frame(pose, tree, rig.bone_rest)
        c, r = refit_dqs.refit_on_demand_dqs(tree, back.data.bounds, fr, nodes)
        d = np.linalg.norm(P[tree.node_verts] - c[seg], axis=1)
        assert (d - r[seg]).max() <= -0.5 * fr.margin


@pytest.fixture(scope="module", params=[0, 1], ids=["near", "far"])
def built(request):
    rig = rigs()[request.param]
    obj = scan.prepare(rig)
    return obj, persist.from_bytes(persist.to_bytes(obj))


def test_loaded_spheres_enclose_the_exact_rest_geometry(built):
    obj, back = built
    t = back.data.tree
    assert t.centers.dtype == np.float64 and t.radii.dtype == np.float64
    ex = sphere_excess(t.centers, t.radii, obj.rig.rest_positions, t.node_vert_ptr,
                       t.node_verts)
    assert ex.max() <= 0.0
    # Rounding the centres without growing the radii breaks enclosure somewhere (leaf
    # minimal balls touch their vertices): the growth is needed.
    c32 = obj.data.tree.centers.astype(np.float32).astype(np.float64)
    r32 = obj.data.tree.radii.astype(np.float32).astype(np.float64)
    assert sphere_excess(c32, r32, obj.rig.rest_positions, t.node_vert_ptr,
                         t.node_verts).max() > 0


def test_recomputed_parts_equal_the_built_ones(built):
    obj, back = built
    for k in ("node_vert_ptr", "node_verts", "first_child", "child_count", "parent",
              "depth", "leaf_tri", "level_ptr"):
        assert np.array_equal(getattr(obj.data.tree, k), getattr(back.data.tree, k)), k
    assert np.array_equal(obj.vertex_keys, back.vertex_keys)
    assert type(back.data.bounds) is type(obj.data.bounds)
    for k, v in obj.data.bounds.arrays().items():
        assert np.array_equal(v, getattr(back.data.bounds, k)), k
    for name in persist._RIG_ARRAYS:
        assert np.array_equal(getattr(obj.rig, name), getattr(back.rig, name)), name
    assert persist.rig_signature(back.rig) == persist.rig_signature(obj.rig)
    stored = persist.compact(persist.all_arrays(obj))
    D = persist.DATA
    assert not {D + k for k in stm.DERIVED} & set(stored)
    assert {k for k in stored if k.startswith(D + stm.BOUNDS)} == {
        D + stm.BOUNDS + k for k in stm.KEPT_BOUNDS}
    assert stored[D + stm.TREE + "centers"].dtype == np.float32


def test_refits_from_loaded_data_enclose_deformed_vertices(built):
    obj, back = built
    rig, tree, bounds = back.rig, back.data.tree, back.data.bounds
    rng = np.random.default_rng(7)
    nodes = np.arange(tree.n_nodes)
    seg = np.repeat(nodes, np.diff(tree.node_vert_ptr))
    for k in range(12):
        pose = procedural.random_pose(rig, rng, max_angle=math.radians(170),
                                      scale_range=(0.5, 2.0), uniform_scale=bool(k % 2),
                                      translate=0.1 * (k % 3))
        P = skinning.lbs_rig(rig, pose)
        fr = refit.frame_transforms(pose, tree)
        c, r = refit.refit_on_demand(tree, bounds, fr, nodes)
        d = np.linalg.norm(P[tree.node_verts] - c[seg], axis=1)
        slope, offset = fr.float32_margin(bounds)
        assert (d - r[seg]).max() <= -0.5 * offset


def test_earlier_npz_format_still_reads():
    import io

    obj = scan.prepare(procedural.tube_rig(rings=6, segments=5))
    arrays = persist.all_arrays(obj)
    arrays["format"] = np.array(3)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    back = persist.from_bytes(buf.getvalue())
    assert np.array_equal(back.data.tree.radii, obj.data.tree.radii)
    with pytest.raises(ValueError):
        persist.from_bytes(b"not collision data")
