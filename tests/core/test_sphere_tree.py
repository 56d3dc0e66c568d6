"""Sphere-tree construction on the rest pose (core only)."""
import numpy as np
import pytest

from skin_collide.core import procedural
from skin_collide.core.bounds import sphere_tree
from skin_collide.core.bounds.balls import minimal_ball


@pytest.fixture(scope="module")
def rig():
    return procedural.tube_rig(rings=30, segments=16, n_bones=5)


@pytest.fixture(scope="module")
def tree(rig):
    return sphere_tree.build(rig.rest_positions, rig.triangles)


def test_every_triangle_in_exactly_one_leaf(rig, tree):
    leaves = tree.leaf_tri[tree.leaf_tri >= 0]
    assert np.array_equal(np.sort(leaves), np.arange(rig.n_triangles))
    assert np.array_equal(tree.leaf_tri >= 0, tree.first_child < 0)


def test_nodes_are_minimal_balls_of_their_vertices(rig, tree):
    seg = np.repeat(np.arange(tree.n_nodes), np.diff(tree.node_vert_ptr))
    d = np.linalg.norm(rig.rest_positions[tree.node_verts] - tree.centers[seg], axis=1)
    assert (d <= tree.radii[seg]).all()
    rng = np.random.default_rng(0)
    for n in rng.choice(tree.n_nodes, 40, replace=False):
        pts = rig.rest_positions[tree.node_verts[tree.node_vert_ptr[n]:tree.node_vert_ptr[n + 1]]]
        _, r = minimal_ball(pts)
        assert tree.radii[n] == pytest.approx(r, rel=1e-9, abs=1e-12)


def test_node_vertices_are_those_of_its_leaves(rig, tree):
    # Walk down from a few nodes and collect the leaf triangles' vertices.
    for n in (0, 1, tree.n_nodes // 2):
        stack, verts = [n], set()
        while stack:
            k = stack.pop()
            if tree.first_child[k] < 0:
                verts.update(rig.triangles[tree.leaf_tri[k]].tolist())
            else:
                stack.extend(range(tree.first_child[k], tree.first_child[k] + tree.child_count[k]))
        got = tree.node_verts[tree.node_vert_ptr[n]:tree.node_vert_ptr[n + 1]]
        assert set(got.tolist()) == verts


def test_breadth_first_layout_with_contiguous_children(tree):
    assert tree.parent[0] == -1 and tree.depth[0] == 0
    assert (np.diff(tree.depth) >= 0).all()
    inner = np.nonzero(tree.first_child >= 0)[0]
    for n in inner:
        kids = np.arange(tree.first_child[n], tree.first_child[n] + tree.child_count[n])
        assert (tree.parent[kids] == n).all()
        assert (tree.depth[kids] == tree.depth[n] + 1).all()
    assert tree.child_count.sum() == tree.n_nodes - 1
    for d in range(tree.level_ptr.size - 1):
        assert (tree.depth[tree.level_ptr[d]:tree.level_ptr[d + 1]] == d).all()


def test_collapse_rule(rig):
    binary = sphere_tree.build(rig.rest_positions, rig.triangles, collapse_c=1.0)
    inner = binary.first_child >= 0
    assert (binary.child_count[inner] == 2).all()
    assert binary.n_nodes == 2 * rig.n_triangles - 1
    collapsed = sphere_tree.build(rig.rest_positions, rig.triangles, collapse_c=0.6)
    assert collapsed.n_nodes < binary.n_nodes
    # After collapsing, no inner node is larger than C times its parent.
    inner_c = np.nonzero((collapsed.first_child >= 0) & (collapsed.parent >= 0))[0]
    assert (collapsed.radii[inner_c] <= 0.6 * collapsed.radii[collapsed.parent[inner_c]] + 1e-12).all()
    assert collapsed.child_count.max() > 2


def test_degenerate_inputs():
    one = sphere_tree.build(np.eye(3), np.array([[0, 1, 2]]))
    assert one.n_nodes == 1 and one.leaf_tri[0] == 0
    # Identical triangles (coincident centroids) still split into single-triangle leaves.
    pos = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    t = sphere_tree.build(pos, np.repeat([[0, 1, 2]], 7, axis=0))
    assert np.array_equal(np.sort(t.leaf_tri[t.leaf_tri >= 0]), np.arange(7))
    with pytest.raises(ValueError):
        sphere_tree.build(pos, np.zeros((0, 3), int))
