"""The numpy side of rigs on an evaluated surface (issue 26 item 8): their seams are welded
within a tolerance relative to the surface's size (`core.welds.snap_seams`), and the new
fields of a `Rig` survive storage without changing the signature of rigs that do not use
them (data built by earlier versions stays fresh)."""
from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np

from skin_collide.core import procedural, scan, welds
from skin_collide.core.storage import persist


def test_snap_seams_welds_near_coincident_vertices_with_equal_weights():
    rng = np.random.default_rng(1)
    base = rng.uniform(-1.0, 1.0, size=(200, 3))
    # Every vertex twice (the two sides of a seam), the copy a few float32 ulps away.
    jitter = rng.integers(-40, 41, size=base.shape) * np.spacing(np.float32(1.0))
    pos = np.concatenate([base, base + jitter])
    joints = np.tile(rng.integers(0, 5, size=(200, 2)), (2, 1))
    weights = np.tile(rng.uniform(0, 1, size=(200, 2)), (2, 1))
    weights[250] += 0.25                           # one copy weighted differently
    out = welds.snap_seams(pos, joints, weights)
    same = np.all(out[:200] == out[200:], axis=1)
    assert same.sum() == 199 and not same[50]
    assert np.array_equal(out[:200], base)         # moved onto the lowest index
    assert np.array_equal(out[250], pos[250])


def test_snap_seams_keeps_vertices_apart_beyond_the_tolerance():
    pos = np.array([[0.0, 0.0, 0.0], [2e-5, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0 + 4e-6]])
    joints = np.zeros((4, 1), np.int32)
    weights = np.ones((4, 1))
    out = welds.snap_seams(pos, joints, weights)        # tolerance 1e-5 × 1.0
    assert not np.array_equal(out[0], out[1])
    assert np.array_equal(out[2], out[3])
    # Chains of near vertices form one group.
    chain = np.array([[0.0, 0, 0], [8e-6, 0, 0], [1.6e-5, 0, 0], [1.0, 0, 0]])
    out = welds.snap_seams(chain, np.zeros((4, 1), np.int32), np.ones((4, 1)))
    assert np.array_equal(out[:3], np.zeros((3, 3)))


def _old_signature(rig) -> str:
    """`persist.rig_signature` as earlier versions computed it."""
    h = hashlib.sha1()
    for name in persist._RIG_ARRAYS:
        h.update(np.ascontiguousarray(getattr(rig, name)).tobytes())
    h.update("\0".join(rig.bone_names).encode())
    h.update(bytes([rig.preserve_volume]))
    h.update(b"\0armature\0" + rig.armature.encode())
    return h.hexdigest()


def test_surface_fields_survive_storage_and_leave_old_signatures_alone():
    rig = procedural.tube_rig(rings=6, segments=5, n_bones=3)
    assert persist.rig_signature(rig) == _old_signature(rig)
    assert persist.source_signature(rig) == persist.rig_signature(rig)
    surf = replace(rig, surface="evaluated surface: 35 vertices after Mirror",
                   source_signature="abc", rigid="",
                   face_origin=np.arange(rig.n_polygons, dtype=np.int32) % 3 - 1)
    assert persist.rig_signature(surf) != persist.rig_signature(rig)
    assert persist.source_signature(surf) == "abc"
    back = persist.from_bytes(persist.to_bytes(scan.prepare(surf))).rig
    assert back.surface == surf.surface and back.source_signature == "abc"
    assert np.array_equal(back.face_origin, surf.face_origin)
    assert persist.rig_signature(back) == persist.rig_signature(surf)
    plain = persist.from_bytes(persist.to_bytes(scan.prepare(rig))).rig
    assert plain.surface == "" and plain.face_origin is None and plain.rigid == ""
