"""Rig and Pose: the plain-array description of a skinned mesh that the whole core works on.

A `Rig` is everything that is constant while the animation plays (rest positions, topology,
weights, bones); a `Pose` is what changes per frame (bone deform matrices and the two object
transforms). Both are plain numpy containers, so the core never needs Blender.

Coordinate conventions follow Blender's Armature modifier exactly:

* ``rest_positions`` are in the *mesh object's local space*: the coordinates the Armature
  modifier receives as input.
* ``Pose.deform`` are the per-bone *armature-space* deform matrices that Blender calls
  ``chan_mat``: ``pose_bone.matrix @ bone.matrix_local.inverted()``.
* The modifier moves a vertex into armature space with ``A⁻¹ M`` (A = armature world matrix,
  M = mesh world matrix), blends there, and maps back. Composing with M to reach world space
  gives the per-bone *skinning matrix* ``C_j = A · deform_j · A⁻¹ · M`` acting on local rest
  positions, which is what the sphere-tree refit needs (`Pose.skinning_matrices`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .cache import Recent, derived

#: Blender leaves a vertex undeformed when its summed bone weight is not above this
#: (``contrib > 0.0001f`` in the Armature modifier).
CONTRIB_EPSILON = 1e-4


@dataclass
class Rig:
    """A skinned triangle mesh in its rest pose.

    Attributes:
        name: the mesh object's name.
        rest_positions: (V, 3) float64, mesh-local rest coordinates.
        triangles: (T, 3) int32 vertex indices of the loop triangles.
        tri_polygon: (T,) int32, the polygon each triangle came from (Blender's own index).
        weight_ptr: (V + 1,) int64 CSR offsets into the weight arrays.
        weight_bone: (W,) int32 bone index of each influence, in the order Blender stores
            the vertex's groups (that order decides sign flips in dual-quaternion blending).
        weight_value: (W,) float64 raw weights (not normalized), only for deform bones,
            zero weights dropped.
        bone_names: J names.
        bone_parents: (J,) int32 parent bone index, -1 for roots.
        bone_rest: (J, 4, 4) float64 rest matrices in armature space (``bone.matrix_local``).
        bone_deform: (J,) bool, ``bone.use_deform``.
        poly_ptr: (P + 1,) int64 CSR offsets of each polygon's loops (corners).
        poly_verts: (L,) int32 the vertex of each loop, in Blender's loop order. The
            triangles of polygon p are contiguous and number (corners − 2); a quad's split
            is re-decided per frame (`core.geometry.triangulation`). When not given, the
            triangles are taken as fans of their polygons (`triangulation.fan_polygons`).
        preserve_volume: the Armature modifier's "Preserve Volume" (dual quaternions).
        unsupported: human-readable reasons why Blender's result cannot be reproduced from
            the rig alone (B-Bones, envelopes, shape keys, other deforming modifiers ...).
            Empty when `core.skinning` reproduces the evaluated mesh.
        notes: facts worth telling the user that do not block anything.
        armature: the armature object's name ("" when unknown: then no vertex of this mesh
            is ever welded to another mesh's, see `core.welds`).
        mesh_to_armature: (4, 4) float64 ``A⁻¹ M`` at build (mesh-local to armature space);
            with `armature` it decides seams between meshes (`core.welds`). Identity when
            not given.
        surface: which surface the arrays describe, for people: "" for the mesh's own
            (its data, what the Armature modifier receives), or, when modifiers change the
            topology around the Armature modifier (a Subdivision Surface after it, a Mirror
            before it), "evaluated surface: 15,900 vertices after Subdivision Surface":
            the topology Blender draws, rest positions and weights read from the evaluated
            mesh with the armatures at Rest Position. Such a rig is refitted from the
            evaluated positions (its `unsupported` says why the bone matrices do not
            determine it).
        face_origin: for a rig on an evaluated surface, (P,) int32 the polygon of the
            mesh's own data each of its polygons comes from (-1: not known), for selecting
            and baking on the mesh people edit; None otherwise.
        source_signature: for a rig on an evaluated surface, `core.storage.persist.rig_signature`
            of the rig of the mesh's own data, which the staleness check can recompute
            without evaluating anything ("" otherwise: the rig's own signature).
        rigid: for a mesh without an Armature modifier that moves as a whole (a prop
            parented to a bone or an object): what moves it, e.g. "bone 'Head' of
            'Armature'"; "" for a skinned mesh. A rigid rig has no bones: every vertex is
            on the virtual static joint, whose skinning matrix is the mesh's world matrix
            (`Pose.skinning_matrices` with an identity armature matrix), so the on-demand
            refit moves its spheres with one transform per frame.
    """

    name: str
    rest_positions: np.ndarray
    triangles: np.ndarray
    tri_polygon: np.ndarray
    weight_ptr: np.ndarray
    weight_bone: np.ndarray
    weight_value: np.ndarray
    bone_names: list[str]
    bone_parents: np.ndarray
    bone_rest: np.ndarray
    bone_deform: np.ndarray
    poly_ptr: np.ndarray | None = None
    poly_verts: np.ndarray | None = None
    preserve_volume: bool = False
    unsupported: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    armature: str = ""
    mesh_to_armature: np.ndarray | None = None
    surface: str = ""
    source_signature: str = ""
    rigid: str = ""
    face_origin: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.rest_positions = np.ascontiguousarray(self.rest_positions, dtype=np.float64)
        self.triangles = np.ascontiguousarray(self.triangles, dtype=np.int32).reshape(-1, 3)
        self.tri_polygon = np.ascontiguousarray(self.tri_polygon, dtype=np.int32)
        self.weight_ptr = np.ascontiguousarray(self.weight_ptr, dtype=np.int64)
        self.weight_bone = np.ascontiguousarray(self.weight_bone, dtype=np.int32)
        self.weight_value = np.ascontiguousarray(self.weight_value, dtype=np.float64)
        self.bone_parents = np.ascontiguousarray(self.bone_parents, dtype=np.int32)
        self.bone_rest = np.ascontiguousarray(self.bone_rest, dtype=np.float64).reshape(-1, 4, 4)
        self.bone_deform = np.ascontiguousarray(self.bone_deform, dtype=bool)
        if self.poly_ptr is None or self.poly_verts is None:
            from .geometry.triangulation import fan_polygons
            self.poly_ptr, self.poly_verts = fan_polygons(self.triangles, self.tri_polygon)
        self.poly_ptr = np.ascontiguousarray(self.poly_ptr, dtype=np.int64)
        self.poly_verts = np.ascontiguousarray(self.poly_verts, dtype=np.int32)
        m = np.eye(4) if self.mesh_to_armature is None else self.mesh_to_armature
        self.mesh_to_armature = np.ascontiguousarray(m, dtype=np.float64).reshape(4, 4)
        self.armature = str(self.armature)
        self.surface, self.rigid = str(self.surface), str(self.rigid)
        self.source_signature = str(self.source_signature)
        if self.face_origin is not None:
            self.face_origin = np.ascontiguousarray(self.face_origin, dtype=np.int32)
        self.validate()

    @property
    def n_vertices(self) -> int:
        return int(self.rest_positions.shape[0])

    @property
    def n_triangles(self) -> int:
        return int(self.triangles.shape[0])

    @property
    def n_polygons(self) -> int:
        return int(self.poly_ptr.shape[0]) - 1

    @property
    def n_bones(self) -> int:
        return len(self.bone_names)

    @property
    def is_rigid(self) -> bool:
        """A mesh that moves as a whole (no Armature modifier): see `rigid`."""
        return bool(self.rigid)

    def validate(self) -> None:
        """Raise ValueError with a clear message when the arrays are inconsistent."""
        V = self.rest_positions.shape[0]
        J = len(self.bone_names)
        if self.rest_positions.ndim != 2 or self.rest_positions.shape[1] != 3:
            raise ValueError(f"{self.name}: rest_positions must be (V, 3)")
        if not np.all(np.isfinite(self.rest_positions)):
            raise ValueError(f"{self.name}: rest positions contain NaN or infinity")
        if self.triangles.size and (self.triangles.min() < 0 or self.triangles.max() >= V):
            raise ValueError(f"{self.name}: triangle index out of range")
        if self.tri_polygon.shape[0] != self.triangles.shape[0]:
            raise ValueError(f"{self.name}: tri_polygon must have one entry per triangle")
        P = self.poly_ptr.shape[0] - 1
        if self.poly_ptr.ndim != 1 or P < 0 or self.poly_ptr[0] != 0 \
                or self.poly_ptr[-1] != self.poly_verts.size:
            raise ValueError(f"{self.name}: poly_ptr must be (P + 1,) CSR offsets from 0")
        sizes = np.diff(self.poly_ptr)
        if np.any(sizes < 3):
            raise ValueError(f"{self.name}: every polygon needs at least 3 corners")
        if self.poly_verts.size and (self.poly_verts.min() < 0 or self.poly_verts.max() >= V):
            raise ValueError(f"{self.name}: polygon vertex index out of range")
        if int((sizes - 2).sum()) != self.triangles.shape[0]:
            raise ValueError(f"{self.name}: polygons of n corners must have n - 2 triangles each")
        if self.tri_polygon.size and (np.any(np.diff(self.tri_polygon) < 0)
                                      or self.tri_polygon[0] < 0 or self.tri_polygon[-1] >= P
                                      or np.any(np.bincount(self.tri_polygon, minlength=P)
                                                != sizes - 2)):
            raise ValueError(f"{self.name}: the triangles of each polygon must be contiguous, "
                             "in polygon order")
        if self.weight_ptr.shape != (V + 1,) or self.weight_ptr[0] != 0:
            raise ValueError(f"{self.name}: weight_ptr must be (V + 1,) CSR offsets from 0")
        if np.any(np.diff(self.weight_ptr) < 0) or self.weight_ptr[-1] != self.weight_bone.size:
            raise ValueError(f"{self.name}: weight_ptr is not a valid CSR offset array")
        if self.weight_bone.size != self.weight_value.size:
            raise ValueError(f"{self.name}: weight_bone and weight_value differ in length")
        if self.weight_bone.size and (self.weight_bone.min() < 0 or self.weight_bone.max() >= J):
            raise ValueError(f"{self.name}: weight bone index out of range")
        if self.bone_parents.shape != (J,) or self.bone_rest.shape != (J, 4, 4):
            raise ValueError(f"{self.name}: bone arrays must have one entry per bone")
        if self.bone_deform.shape != (J,):
            raise ValueError(f"{self.name}: bone_deform must be (J,)")
        if self.face_origin is not None and self.face_origin.shape != (P,):
            raise ValueError(f"{self.name}: face_origin must have one entry per polygon")
        if not np.all(np.isfinite(self.mesh_to_armature)):
            raise ValueError(f"{self.name}: mesh_to_armature contains NaN or infinity")

    # -- derived, constant data ---------------------------------------------------------

    def rest_armature_positions(self) -> np.ndarray:
        """(V, 3) float64 rest positions in armature space, ``A⁻¹ M p`` at build."""
        return transform_points(self.mesh_to_armature, self.rest_positions)

    def influence_counts(self) -> np.ndarray:
        """(V,) int64 number of nonzero deform-bone influences per vertex."""
        return np.diff(self.weight_ptr)

    def weight_sums(self) -> np.ndarray:
        """(V,) float64 raw weight sum per vertex (Blender's ``contrib``)."""
        vert = np.repeat(np.arange(self.n_vertices), self.influence_counts())
        return np.bincount(vert, weights=self.weight_value, minlength=self.n_vertices)

    def static_vertices(self) -> np.ndarray:
        """(V,) bool, vertices the Armature modifier leaves in place (contrib ≤ 1e-4)."""
        return self.weight_sums() <= CONTRIB_EPSILON

    def padded_influences(self) -> tuple[np.ndarray, np.ndarray]:
        """Normalized influences as padded arrays, the form the bounds and LBS use.

        Vertices that Blender leaves in place get a single influence on the virtual
        "static" joint with index J (its deform matrix is the identity, see
        `Pose.deform_with_static`), so every vertex is a convex combination of joints.

        Returns:
            joints: (V, K) int32, ascending per row, padded with -1.
            weights: (V, K) float64, rows sum to 1, 0 at padding.
        """
        V, J = self.n_vertices, self.n_bones
        counts = self.influence_counts()
        static = self.static_vertices()
        K = max(1, int(counts.max()) if counts.size else 1)
        vert = np.repeat(np.arange(V), counts)
        sums = self.weight_sums()
        # Several groups can name the same bone only through duplicates Blender also sums;
        # merge them so joint-sets are sets.
        key = vert.astype(np.int64) * (J + 1) + self.weight_bone
        uniq, inv = np.unique(key, return_inverse=True)
        merged_w = np.bincount(inv, weights=self.weight_value)
        u_vert = (uniq // (J + 1)).astype(np.int64)
        u_bone = (uniq % (J + 1)).astype(np.int32)
        keep = ~static[u_vert]
        u_vert, u_bone, merged_w = u_vert[keep], u_bone[keep], merged_w[keep]
        u_w = merged_w / sums[u_vert]
        # np.unique sorted by (vertex, bone): the slot of each entry is its rank in the vertex.
        starts = np.searchsorted(u_vert, np.arange(V))
        slot = np.arange(u_vert.size) - starts[u_vert]
        joints = np.full((V, K), -1, dtype=np.int32)
        weights = np.zeros((V, K), dtype=np.float64)
        joints[u_vert, slot] = u_bone
        weights[u_vert, slot] = u_w
        joints[static, 0] = J
        weights[static, 0] = 1.0
        return joints, weights


#: `Pose.mesh_to_armature` of the last few (armature, mesh) world matrices.
_MESH_TO_ARMATURE = Recent(32)


@dataclass
class Pose:
    """One frame's deformation state.

    Attributes:
        deform: (J, 4, 4) float64 armature-space deform matrices (Blender's ``chan_mat``).
        armature_world: (4, 4) float64 world matrix of the armature object.
        mesh_world: (4, 4) float64 world matrix of the mesh object.
    """

    deform: np.ndarray
    armature_world: np.ndarray
    mesh_world: np.ndarray

    def __post_init__(self) -> None:
        self.deform = np.ascontiguousarray(self.deform, dtype=np.float64).reshape(-1, 4, 4)
        self.armature_world = np.asarray(self.armature_world, dtype=np.float64).reshape(4, 4)
        self.mesh_world = np.asarray(self.mesh_world, dtype=np.float64).reshape(4, 4)

    def mesh_to_armature(self) -> np.ndarray:
        """(4, 4) float64 ``A⁻¹ M``: mesh-local to armature space (memoized on the two
        matrices' exact bytes: they rarely change between frames, and a LAPACK solve of a
        4×4 is slow and jittery on a loaded machine)."""
        def make() -> np.ndarray:
            out = np.linalg.solve(self.armature_world, self.mesh_world)
            out.flags.writeable = False
            return out

        return _MESH_TO_ARMATURE.get(self.armature_world.tobytes() + self.mesh_world.tobytes(),
                                     make)

    def deform_with_static(self) -> np.ndarray:
        """(J + 1, 4, 4) float64: `deform` plus the identity for the virtual static joint."""
        return np.concatenate([self.deform, np.eye(4)[None]], axis=0)

    def skinning_matrices(self) -> np.ndarray:
        """(J + 1, 4, 4) float64 ``C_j = A · deform_j · A⁻¹ · M`` (index J: static joint).

        ``C_j`` maps mesh-local rest positions to world space, so LBS in world space is
        ``Σ_j w_j C_j v``.
        """
        A = self.armature_world
        return A @ self.deform_with_static() @ self.mesh_to_armature()


def rest_pose(rig: Rig, armature_world: np.ndarray | None = None,
              mesh_world: np.ndarray | None = None) -> Pose:
    """The Pose in which every bone is at rest (all deform matrices identity)."""
    eye = np.eye(4)
    return Pose(np.broadcast_to(eye, (rig.n_bones, 4, 4)).copy(),
                eye if armature_world is None else armature_world,
                eye if mesh_world is None else mesh_world)


def transform_points(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Apply a (4, 4) affine matrix to (N, 3) points; returns (N, 3) float64."""
    return points @ matrix[:3, :3].T + matrix[:3, 3]


def bone_rest_inverse(rig: Rig) -> np.ndarray:
    """(J, 4, 4) float64 the inverses of the bones' rest matrices (made once per rig)."""
    return derived(rig, "bone_rest_inverse", lambda: np.linalg.inv(rig.bone_rest))
