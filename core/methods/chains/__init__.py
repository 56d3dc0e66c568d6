"""Sphere chains (Madera et al. 2015) as the collision method `chains`, made exact.

Rest (`chains.build`): automatic torso/limb regions and limb-pair chains from any
skeleton (`regions.py`); the paper's spheres inside the volume (`march.py`: a circle /
ray-disk march along each limb's axis, two spheres per torso level with the adjustment
step; a region where the march fails is cut into slices), each holding the triangles
nearest its centre, and 4 pivot polygons per sphere.
Per frame (`chains.frame_spheres`): each sphere's centre is the mean of its pivot
polygons' evaluated centroids (the paper's update) and its radius the largest distance
to its evaluated vertices (not the paper's mean pivot distance, which bounds nothing), so
it bounds its triangles for any deformation (positions only).

* Self-collision (`ChainsMethod.self_pairs`, the method's self hook): the paper's chain
  test (sphere pairs non-adjacent on some chain, M2) on the pairs the chains cover, and
  the exact AABB self tree (`core.aabb_tree`) on the pairs they do not cover (within
  one sphere, between adjacent spheres, with a triangle on no chain). The answer is every
  intersecting non-adjacent pair; the per-object `uncovered` entry of the scan's JSON
  (`coverage`) says what the paper's method alone leaves out. Measured choice:
  docs/sphere_chains.md.
* Between objects (`volumes`): a two-level hierarchy, the root over one leaf per sphere
  holding its triangles, so the generic traversal and the exact test apply unchanged.

Rigs with fewer than two limbs have no chain; rigs whose deformation the vertex groups
do not describe (shape keys, envelopes, other modifiers: `Rig.unsupported`) would get
regions that follow nothing. Both go to `fallback`.
"""
from __future__ import annotations

import numpy as np

from ... import aabb_tree, welds
from ... import triangles as tri_test
from ...cache import derived
from ...rig import Rig
from ..base import Drawable, Frame, Hierarchy, Method, Volumes
from . import chains
from .chains import ChainData, build, from_arrays

#: Said in the JSON's `uncovered` entry of every chains object.
NOT_TESTED_BY_PAPER = (
    "the paper's chain test does not test pairs within one sphere, pairs between spheres "
    "adjacent on every chain holding both, nor the triangles listed here (on no chain); "
    "skin_collide decides those pairs with the exact self tree, so every intersecting "
    "pair is reported")


class ChainVolumes(Volumes):
    """Node 0: the root (a sphere around every leaf sphere); nodes 1..S: sphere k - 1 of
    the chains, a leaf holding its triangles. All computed on the first `ensure` (O(V))."""

    kind = "sphere"

    def __init__(self, data: ChainData, frame: Frame, method_id: str | None = None):
        super().__init__(hierarchy(data), method_id)
        self.data = data
        self.frame = frame
        self.c: np.ndarray | None = None
        self.r: np.ndarray | None = None

    def ensure(self, nodes: np.ndarray) -> None:
        if self.c is not None:
            return
        c, r = chains.frame_spheres(self.data, self.frame.positions)
        root = c.mean(axis=0)
        rr = float((np.linalg.norm(c - root, axis=1) + r).max(initial=0.0))
        # Grown by a relative ulp margin: the leaf spheres bound their vertices exactly in
        # float64; the root only needs to bound the leaves.
        self.c = np.vstack([root[None], c])
        self.r = np.concatenate([[rr * (1 + 1e-12)], r])
        self.refitted = int(self.r.size)

    def size(self, nodes: np.ndarray) -> np.ndarray:
        self.ensure(nodes)
        return self.r[nodes]

    def spheres(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.c[nodes], self.r[nodes]


def self_tree(rig: Rig, data: ChainData, vertex_keys: np.ndarray):
    """The rig's exact AABB self tree (built on first use, kept with the data; not stored)."""
    return derived(data, "self_tree",
                   lambda: aabb_tree.build(rig.rest_positions, rig.triangles, vertex_keys))


def hierarchy(data: ChainData) -> Hierarchy:
    """Root, then one leaf per sphere with its triangles (made once per data)."""
    def make() -> Hierarchy:
        sh = data.sphere_hierarchy
        S = data.n_spheres
        first = np.full(S + 1, -1, np.int32)
        count = np.zeros(S + 1, np.int32)
        first[0], count[0] = 1, S
        ptr = np.concatenate([[0], sh.leaf_ptr]).astype(np.int64)
        return Hierarchy(first, count, ptr, sh.leaf_tris)

    return derived(data, "two_level", make)


class ChainsMethod(Method):
    id = "chains"
    label = "Sphere chains (Madera et al. 2015)"
    description = ("Spheres on torso/limb slices, chains through the torso for every limb "
                   "pair; self pairs the chains skip are tested too (exact)")
    fallback = "sphere-tree"

    def supports(self, rig: Rig) -> str | None:
        if rig.n_triangles == 0:
            return "no triangles"
        if rig.unsupported:
            return ("regions come from the vertex groups, which do not describe this "
                    "deformation: " + "; ".join(rig.unsupported))
        limbs = self.prepare(rig).regions.n_limbs
        if limbs < 2:
            return (f"{limbs} limb{'s' if limbs != 1 else ''} found in the skeleton: a chain "
                    "joins two limbs through the torso, so there is none")
        return None

    def prepare(self, rig: Rig) -> ChainData:
        return derived(rig, "chains_data", lambda: build(rig))   # supports(), then prepare()

    def summary(self, prepared: ChainData) -> str:
        return f"{prepared.n_spheres} spheres in chains"

    def load(self, arrays: dict[str, np.ndarray]) -> ChainData:
        return from_arrays(arrays)

    def volumes(self, rig: Rig, prepared: ChainData, frame: Frame) -> ChainVolumes:
        return ChainVolumes(prepared, frame, self.id)

    def self_pairs(self, rig: Rig, prepared: ChainData, frame: Frame,
                   vertex_keys: np.ndarray, stats=None) -> np.ndarray:
        """The chains' covered pairs (the paper's test, M2), and the exact AABB self tree
        (`core.aabb_tree`) for the pairs they do not cover; adjacent pairs (sharing a
        weld id in the frame's triangles) dropped as everywhere. The self tree is the
        cheaper way to the skipped pairs: 2-20x cheaper than the chains' own grid on them
        (`chains.complement_pairs`) on Fox, Cesium Man and MakeHuman
        (docs/sphere_chains.md)."""
        P, tris = frame.positions, frame.triangles
        keys = vertex_keys[tris]

        def test(ta, tb):
            far = ~welds.adjacent_pairs(keys, ta, tb)
            hit = np.zeros(ta.size, bool)
            idx = np.nonzero(far)[0]
            hit[idx] = tri_test.triangle_pairs_intersect(P, tris, ta[idx], P, tris, tb[idx])
            return hit

        cov, st1 = chains.self_pairs(prepared, P, tris, test)
        tree = self_tree(rig, prepared, vertex_keys)
        counts: dict = {}
        ref = aabb_tree.self_pairs(tree, P, tris, tree.weld_ids, stats=counts)
        s = prepared.tri_sphere
        rest = ref[~prepared.covered[s[ref[:, 0]], s[ref[:, 1]]]]
        if stats is not None:
            stats.triangle_tests += st1["triangle_tests"] + counts.get("triangle_tests", 0)
            stats.extra.update(chain_sphere_tests=st1["sphere_tests"],
                               chain_pairs=int(cov.shape[0]), uncovered_pairs=int(rest.shape[0]))
        pairs = np.concatenate([cov, rest])
        return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]

    def coverage(self, rig: Rig, prepared: ChainData) -> dict:
        """What the chains alone do not cover, for the scan's JSON (`uncovered`)."""
        tris = np.asarray(prepared.uncovered, np.int64)
        polys = np.unique(rig.tri_polygon[tris]) if tris.size else np.zeros(0, np.int64)
        S = prepared.n_spheres
        skipped = int(np.triu(~prepared.covered).sum())     # sphere pairs i <= j
        return {"triangles": int(tris.size), "triangle_indices": tris.tolist(),
                "polygons": int(polys.size), "polygon_indices": polys.tolist(),
                "spheres": S, "sphere_pairs": S * (S + 1) // 2,
                "sphere_pairs_not_tested_by_chains": skipped,
                "note": NOT_TESTED_BY_PAPER}

    def drawable(self, rig: Rig, prepared: ChainData, frame: Frame, level: int) -> Drawable:
        """The chain spheres at this frame (level 0: the root sphere; otherwise the leaf
        spheres, one per slice)."""
        v = ChainVolumes(prepared, frame)
        v.ensure(np.zeros(0, np.int64))
        nodes = np.zeros(1, np.int64) if level <= 0 else np.arange(1, v.r.size)
        c, r = v.spheres(nodes)
        return Drawable(centers=c.copy(), radii=r.copy())
