"""Sphere chains (Madera et al. 2015), in progress: so far the automatic decomposition of
any skeleton into a torso and limbs, and the chains that pair limbs through the torso
(`regions.py`). The method itself (spheres, per-frame bounding radii, chain overlap
tests) is not registered yet."""
