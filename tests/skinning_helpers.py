"""Small hand-built rigs shared by tests."""
import math

import numpy as np

from skin_collide.core.rig import Pose, Rig


def two_bone_rig(angle: float, n: int = 24):
    """A ring of vertices around Z, each weighted 50/50 between two bones; bone 1 is
    rotated by `angle` about Z relative to bone 0 (identity)."""
    a = np.linspace(0, 2 * math.pi, n, endpoint=False)
    rest = np.stack([np.cos(a), np.sin(a), np.linspace(-0.5, 0.5, n)], 1)
    ptr = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    bone = np.tile(np.array([0, 1], np.int32), n)
    val = np.full(2 * n, 0.5)
    rig = Rig("ring", rest, np.zeros((0, 3), np.int32), np.zeros(0, np.int32), ptr, bone, val,
              ["a", "b"], np.array([-1, 0], np.int32), np.repeat(np.eye(4)[None], 2, 0),
              np.ones(2, bool))
    rot = np.eye(4)
    c, s = math.cos(angle), math.sin(angle)
    rot[:2, :2] = [[c, -s], [s, c]]
    return rig, Pose(np.stack([np.eye(4), rot]), np.eye(4), np.eye(4))
