"""Sphere chains (Madera et al. 2015) for self-collision, made exact on the pairs they
cover: automatic torso/limb regions and limb-pair chains from any skeleton
(`regions.py`), spheres on region slices with per-frame bounding radii and the chain
overlap test that skips adjacent spheres (`chains.py`). Not registered as a method yet
(the registry's methods answer pairs between objects; chains are self-collision only),
and the paper's inside-the-volume spheres (ray–disk march, torso adjustment, the F
measure, pivot polygons) are not implemented: the spheres here are bounds."""
