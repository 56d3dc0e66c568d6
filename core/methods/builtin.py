"""The methods that ship with skin_collide; importing this module registers them.

A new method adds one import line here (and lives in its own module or package).
"""
from . import sphere_tree  # noqa: F401  (sphere-tree, bottom-up)
from . import pv_sphere_tree  # noqa: F401  (sphere-tree-pv)
from . import box_tree  # noqa: F401  (box-tree)
from . import obb  # noqa: F401  (obb)
from . import sphere_set  # noqa: F401  (sphere-set)
from . import chains  # noqa: F401  (chains)
from . import reference  # noqa: F401  (rebuild: Blender's BVHTree, the reference)
