"""Variational sphere sets (Wang et al. 2006): a set of spheres whose union bounds a mesh,
fitted to leave little volume outside it. `SphereSet` is the shared result type of every
set builder (the variational fit and the simple baselines); the collision method that
animates a set with the skeleton lives in `core.methods.sphere_set`."""
from .types import SphereSet

__all__ = ["SphereSet"]
