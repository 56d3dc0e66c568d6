"""Regions of a skinned mesh from its skeleton, for sphere chains (Madera et al. 2015).

The paper splits a character by hand into a torso and limbs (arms, legs), each limb a
tube along a bone chain. Here it is automatic, for any skeleton:

* each triangle belongs to the dominant bone of its polygon (`obb.build.dominant_bones`;
  the static joint J counts as torso);
* a child subtree is *heavy* when it holds at least `heavy` of the mesh's triangles;
* the torso is every bone with at least two heavy child subtrees whose own subtree holds
  at least `core` of the mesh (a branching point of the body: hips, chest; a hand, even
  with heavy fingers, is a small part of the body, so it is no branching point),
  every ancestor of one, and the root; with no branching point (a single chain), the root;
* each child subtree hanging from the torso is a limb (arms with hands and fingers, legs,
  neck with head, a tail, a 4-legged enemy's legs; MakeHuman's face bones stay in the
  head's limb).

Chains pair limbs through the torso (the paper's Table 1 pairs 4 limbs; here every
unordered pair of limbs, so any number of limbs is covered).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from ...rig import Rig
from ..obb.build import dominant_bones

HEAVY = 0.04
CORE = 0.3


@dataclass
class Regions:
    """Torso and limbs of a rig.

    Attributes:
        bone_region: (J + 1,) int32 region of each bone (0: torso, k ≥ 1: limb k; index J:
            the static joint, torso).
        tri_region: (T,) int32 region of each triangle.
        limb_root: (K,) int32 the first bone of each limb (limb k is limb_root[k - 1]'s
            subtree).
        chains: (C, 2) int32 limb pairs (a, b), a < b, joined through the torso.
    """

    bone_region: np.ndarray
    tri_region: np.ndarray
    limb_root: np.ndarray
    chains: np.ndarray

    @property
    def n_limbs(self) -> int:
        return int(self.limb_root.size)


def bone_order(parents: np.ndarray) -> np.ndarray:
    """(J,) bones ordered parents first (whatever the rig's own order)."""
    J = parents.size
    depth = np.zeros(J, np.int64)
    for j in range(J):
        p, d = parents[j], 0
        while p >= 0 and d <= J:
            p, d = parents[p], d + 1
        depth[j] = d
    return np.argsort(depth, kind="stable")


def regions(rig: Rig, heavy: float = HEAVY, core: float = CORE) -> Regions:
    """The torso, limbs and chains of `rig` (a loop over bones, once per rig)."""
    J = rig.n_bones
    parents = rig.bone_parents
    tri_bone = dominant_bones(rig)
    own = np.bincount(tri_bone, minlength=J + 1)[:J].astype(np.int64)
    order = bone_order(parents)
    sub = own.copy()
    for j in order[::-1]:
        if parents[j] >= 0:
            sub[parents[j]] += sub[j]
    total = max(int(rig.n_triangles), 1)
    children: list[list[int]] = [[] for _ in range(J)]
    for j in order:
        if parents[j] >= 0:
            children[parents[j]].append(int(j))
    torso = np.zeros(J, bool)
    torso[parents < 0] = True
    for j in range(J):
        if sub[j] >= core * total and sum(sub[c] >= heavy * total for c in children[j]) >= 2:
            p = j
            while p >= 0 and not (torso[p] and p != j):
                torso[p] = True
                p = parents[p]
    bone_region = np.zeros(J + 1, np.int32)
    roots = []
    for j in order:
        p = parents[j]
        if torso[j]:
            continue
        if p >= 0 and torso[p]:
            roots.append(int(j))
            bone_region[j] = len(roots)
        elif p >= 0:
            bone_region[j] = bone_region[p]
    # Limbs without triangles cover nothing: drop them and renumber.
    tri_region = bone_region[tri_bone]
    has = np.bincount(tri_region, minlength=len(roots) + 1) > 0
    keep = [k for k in range(1, len(roots) + 1) if has[k]]
    remap = np.zeros(len(roots) + 1, np.int32)
    remap[keep] = np.arange(1, len(keep) + 1)
    bone_region = remap[bone_region]
    limb_root = np.array([roots[k - 1] for k in keep], np.int32)
    chains = np.array(list(combinations(range(1, len(keep) + 1), 2)), np.int32).reshape(-1, 2)
    return Regions(bone_region, bone_region[tri_bone], limb_root, chains)
