"""Bounding spheres of a skinned mesh and how they follow its pose: the rest-pose sphere
tree (`sphere_tree`, built from the minimal enclosing balls of `balls`), the weight
polytope corners of its nodes (`weight_bounds`), and the on-demand refits that bound
every pose without reading the deformed vertices, for linear blend skinning (`refit`,
with its rest data in `lbs_data` and the proven float32 margin in `float32_rounding`)
and for Preserve Volume (`refit_dqs`). The float32 AABB trees are in `core/aabb_tree/`;
the methods that animate these bounds are in `core/methods/`."""
