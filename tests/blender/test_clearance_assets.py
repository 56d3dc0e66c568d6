"""Clearance on a real character (issue 42): Cesium Man and a turned copy of it crossing
(`test_obb_assets._crossing`), at animation frames and in random strong poses, against
the independent brute force of tests/core/test_clearance_stage.py (Ericson's closest
points over every triangle pair whose boxes are within D: a box gap lower-bounds the
distance). Needs ../shared/assets."""
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ASSET_FILES

pytestmark = [pytest.mark.asset, pytest.mark.blender]
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))


def _brute_near(pa, ta, pb, tb, d):
    """{(ta, tb): distance} of every triangle pair within d + a hair (intersecting ones
    too, excluded by the caller), by box gap then the exact brute force."""
    from test_clearance_stage import brute_pair_distances

    ca, cb = pa[ta], pb[tb]
    lo_a, hi_a, lo_b, hi_b = ca.min(1), ca.max(1), cb.min(1), cb.max(1)
    out = {}
    for s in range(0, ta.shape[0], 256):
        g = np.maximum(lo_b[None] - hi_a[s:s + 256, None], lo_a[s:s + 256, None] - hi_b[None])
        gap = np.linalg.norm(np.maximum(g, 0.0), axis=2)
        i, j = np.nonzero(gap <= d * (1 + 1e-9))
        D = brute_pair_distances(pa, ta, s + i, pb, tb, j)
        keep = D <= d * (1 + 1e-6)
        out.update(zip(zip((s + i[keep]).tolist(), j[keep].tolist()), D[keep].tolist()))
    return out


def test_clearance_on_crossing_cesium_men_equals_brute_force(bpy_module, assets_dir):
    from test_obb_assets import _crossing, _states

    from skin_collide.addon import scanner
    from skin_collide.core.triangles import triangle_pairs_intersect

    if "cesium_man.glb" not in ASSET_FILES:
        pytest.skip("cesium_man.glb missing")
    bpy = bpy_module
    ob, arm, ob2, arm2 = _crossing(bpy, assets_dir, "cesium_man.glb")
    sc = scanner.Scanner([ob, ob2], clearance=0.0)
    checked = 0
    for _ in _states(bpy, arm, arm2, np.random.default_rng(42)):
        positions, poses = sc.evaluate(bpy.context.evaluated_depsgraph_get())
        size = max(float(np.ptp(p, axis=0).max()) for p in positions)
        d = 0.01 * size
        sc.clearance = d
        sc.query(positions, poses)
        got = {(i, j): r for i, j, r in sc.near}
        pa, pb = positions
        ta, tb = (t.astype(np.int64) for t in sc.triangles)
        brute = _brute_near(pa, ta, pb, tb, d)
        keys = np.array(sorted(brute), dtype=np.int64).reshape(-1, 2)
        hit = triangle_pairs_intersect(pa, ta, keys[:, 0], pb, tb, keys[:, 1]) \
            if keys.size else np.zeros(0, bool)
        tol = 1e-9 * size
        maybe = {tuple(k) for k, h in zip(keys.tolist(), hit) if not h}
        must = {k for k in maybe if brute[k] <= d - tol}
        r = got.get((0, 1))
        pairs = set() if r is None else {tuple(p) for p in r.pairs.tolist()}
        assert must <= pairs and pairs <= maybe
        if r is not None:
            want = np.array([brute[tuple(p)] for p in r.pairs.tolist()])
            assert np.abs(r.dist - want).max() <= tol
            checked += len(pairs)
    assert checked > 0
