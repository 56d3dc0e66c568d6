"""core.rig: `Rig.validate` refuses inconsistent arrays with a message naming the problem."""
import numpy as np
import pytest

from skin_collide.core import procedural
from skin_collide.core.rig import Rig


def arrays(rig: Rig) -> dict:
    return dict(name=rig.name, rest_positions=rig.rest_positions.copy(),
                triangles=rig.triangles.copy(), tri_polygon=rig.tri_polygon.copy(),
                weight_ptr=rig.weight_ptr.copy(), weight_bone=rig.weight_bone.copy(),
                weight_value=rig.weight_value.copy(), bone_names=list(rig.bone_names),
                bone_parents=rig.bone_parents.copy(), bone_rest=rig.bone_rest.copy(),
                bone_deform=rig.bone_deform.copy(), poly_ptr=rig.poly_ptr.copy(),
                poly_verts=rig.poly_verts.copy())


@pytest.fixture(scope="module")
def good():
    return arrays(procedural.tube_rig(rings=6, segments=5, n_bones=3))


def test_a_generated_rig_is_valid(good):
    Rig(**good)


def broken(good, key, fn):
    a = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in good.items()}
    a[key] = fn(a[key])
    return a


def _nan(p):
    p[3, 1] = np.nan
    return p


def _oob(t):
    t[0, 0] = 10 ** 6
    return t


def _neg_bone(b):
    b[0] = 99
    return b


@pytest.mark.parametrize("key, fn, message", [
    ("rest_positions", _nan, "NaN"),
    ("rest_positions", lambda p: p[:, :2], r"\(V, 3\)"),
    ("triangles", _oob, "triangle index out of range"),
    ("tri_polygon", lambda t: t[:-1], "one entry per triangle"),
    ("weight_ptr", lambda w: w[:-1], "weight_ptr"),
    ("weight_value", lambda w: w[:-1], "differ in length"),
    ("weight_bone", _neg_bone, "weight bone index out of range"),
    ("bone_parents", lambda b: b[:-1], "one entry per bone"),
    ("bone_deform", lambda b: b[:-1], "bone_deform"),
    ("poly_verts", lambda v: np.full_like(v, 10 ** 6), "polygon vertex index out of range"),
    ("tri_polygon", lambda t: t[::-1].copy(), "contiguous"),
])
def test_inconsistent_arrays_are_refused(good, key, fn, message):
    with pytest.raises(ValueError, match=message):
        Rig(**broken(good, key, fn))


def test_polygons_need_three_corners_and_n_minus_2_triangles(good):
    a = broken(good, "poly_ptr", lambda p: p)
    a["poly_ptr"] = a["poly_ptr"].copy()
    a["poly_ptr"][1] = 2                          # the first polygon with 2 corners
    with pytest.raises(ValueError, match="at least 3 corners|n - 2 triangles"):
        Rig(**a)
