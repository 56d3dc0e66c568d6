"""Seams: which vertices of different objects are one vertex (parts of one character on
one armature), and welds a frame pulls apart. `seam_ids` is decided once per object set;
`frame_seams` is the stage of one frame (`core.scan.frame`) that says where seams hold
between the candidate object pairs and gives every vertex its frame key; `parted_self_pairs`
tests, exactly, the self pairs that meet only at welds parted this frame. Soundness:
docs/exactness.md (welds) and `core.welds`."""
from __future__ import annotations

import numpy as np

from .. import triangles as tri_test
from .. import welds
from ..cache import Recent
from ..rig import Pose, Rig
from ..types import FrameInputs, FrameSeams
from .objects import CollisionObject

# Seam ids of the last few object sets (the entries keep the objects alive, so that their
# ids cannot be reused): a scan queries the same set frame after frame.
_SEAM_IDS = Recent(8)


def seam_ids(objects: list[CollisionObject]) -> list[np.ndarray | None]:
    """Per object, (V,) int64 vertex ids shared across the set (`welds.global_weld_ids`),
    or None for an object whose armature no other object of the set shares (it has no
    seams). Computed once per set and cached; the per-frame seam test is an index compare.
    """
    return _SEAM_IDS.get(tuple(id(o) for o in objects), lambda: _seam_ids(objects),
                         keep=tuple(objects))


def _seam_ids(objects: list[CollisionObject]) -> list[np.ndarray | None]:
    names = [o.rig.armature for o in objects]
    shared = [bool(n) and names.count(n) > 1 for n in names]
    ids: list[np.ndarray | None] = [None] * len(objects)
    group = [i for i, s in enumerate(shared) if s]
    if group:
        for i, g in zip(group, welds.global_weld_ids([objects[i].rig for i in group])):
            ids[i] = g
    return ids


def seams_apply(a: CollisionObject, b: CollisionObject, pose_a: Pose | None,
                pose_b: Pose | None) -> bool:
    """Whether seams between `a` and `b` hold this frame: the same armature, and (when the
    poses are known) the same armature transform and bone matrices, bit for bit. A cheap
    guard, per object pair, against two copies that only share a name."""
    if not a.rig.armature or a.rig.armature != b.rig.armature:
        return False
    if pose_a is None or pose_b is None:
        return True
    return bool(np.array_equal(pose_a.deform, pose_b.deform)
                and np.array_equal(pose_a.armature_world, pose_b.armature_world))


def seam_pairs(ids_a: np.ndarray, tri_a: np.ndarray, ta: np.ndarray,
               ids_b: np.ndarray, tri_b: np.ndarray, tb: np.ndarray) -> np.ndarray:
    """(K,) bool: triangle ta[k] of mesh A and tb[k] of mesh B share a seam vertex (equal
    global ids, `seam_ids`)."""
    a = ids_a[tri_a[ta]]
    b = ids_b[tri_b[tb]]
    return np.any(a[:, :, None] == b[:, None, :], axis=(1, 2))


def weld_tolerance(rig: Rig) -> float | None:
    """How welds are judged per frame for `rig` (`welds.frame_weld_ids`' `rel_tol`):

    * None, never: under skinning and rigid motion welded vertices never part (the
      on-demand refit's premise; they may differ in the last float32 bits where their
      groups are listed in another order, which is not a parting);
    * 0, at the same position bit for bit: a rig refitted from Blender's positions on its
      own mesh (`Rig.unsupported`: Corrective Smooth, shape keys, caches ...);
    * `welds.SEAM_TOLERANCE` of the welded vertices' extent: an evaluated surface, whose
      seams come out of the modifiers a few ulps apart and were welded so at build
      (`welds.snap_seams`)."""
    if not rig.unsupported:
        return None
    return welds.SEAM_TOLERANCE if rig.surface else 0.0


def frame_keys(obj: CollisionObject, positions: np.ndarray) -> np.ndarray | None:
    """`obj`'s weld ids at this frame (`welds.frame_weld_ids`, judged as `weld_tolerance`
    says): None while every weld holds, else (V,) int64 ids with the parted welds split.
    `positions`: (V, 3) float64."""
    tol = weld_tolerance(obj.rig)
    if tol is None:
        return None
    if obj.shared_vertices is None:
        obj.shared_vertices = welds.shared_vertices(obj.vertex_keys)
    return welds.frame_weld_ids(obj.vertex_keys, positions, *obj.shared_vertices, rel_tol=tol)


def parted_self_pairs(obj: CollisionObject, positions: np.ndarray, tris: np.ndarray
                      ) -> np.ndarray:
    """Intersecting triangle pairs of `obj` that meet only at welds parted this frame
    (`welds.parted_pairs`): the self queries skip every pair adjacent by the build's weld
    ids, so these are tested here, exactly. A few hundred pairs at most on a character
    whose seams a Corrective Smooth opens; none (and a compare of the welded vertices'
    positions) when every weld holds. Returns (K, 2) int64."""
    keys = frame_keys(obj, positions)
    if keys is None:
        return np.zeros((0, 2), np.int64)
    cand = welds.parted_pairs(tris, obj.vertex_keys, keys)
    if not cand.size:
        return cand
    hit = tri_test.triangle_pairs_intersect(positions, tris, cand[:, 0], positions, tris,
                                            cand[:, 1])
    return cand[hit]


# `welds.shared_vertices` of the last few concatenated seam ids (by the seam list's identity,
# which `seam_ids` caches per object set): a sort of every vertex, once per set.
_SEAM_VERTICES = Recent(8)


def _seam_vertices(seams: list, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _SEAM_VERTICES.get((id(seams), G.shape), lambda: welds.shared_vertices(G),
                              keep=(seams,))


def _seams_hold(objects, poses, seams, i: int, j: int) -> bool:
    return (seams[i] is not None and seams[j] is not None
            and seams_apply(objects[i], objects[j], poses[i], poses[j]))


def frame_seams(objects: list[CollisionObject], inputs: FrameInputs,
                candidates: np.ndarray) -> FrameSeams:
    """The seam stage of one frame: for the candidate object pairs ((M, 2) int64), where
    seams hold (`seams_apply`), and the frame's global vertex keys (`FrameSeams.G`).

    A seam holds only while its vertices are drawn at one position this frame
    (`welds.frame_weld_ids`, judged as `weld_tolerance` says: a Corrective Smooth on the
    parts can part it; skinning cannot)."""
    n = len(objects)
    seams = seam_ids(objects)
    hold = np.zeros((n, n), dtype=bool)
    for i, j in candidates.tolist():        # a loop over object pairs, never triangles
        if seams[i] is not None and seams[j] is not None:
            hold[i, j] = _seams_hold(objects, inputs.poses, seams, i, j)
    G = None
    if hold.any():
        G = np.concatenate([np.asarray(s, dtype=np.int64) if s is not None
                            else -(np.arange(p.shape[0], dtype=np.int64) + o + 1)
                            for s, p, o in zip(seams, inputs.positions, inputs.v_off[:-1])])
        tols = [weld_tolerance(o.rig) for o, s_ in zip(objects, seams) if s_ is not None]
        tols = [t for t in tols if t is not None]
        if tols:
            parted = welds.frame_weld_ids(G, inputs.P, *_seam_vertices(seams, G),
                                          rel_tol=max(tols))
            G = G if parted is None else parted
    return FrameSeams(seams, hold, G)
