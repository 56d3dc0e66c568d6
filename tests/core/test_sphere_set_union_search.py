"""The union search after the variational fit (core/methods/sphere_set/union_search.py): every
surface point S stays covered through refits, relocations and densification, the union's
outside count never rises through the moves, the result is reported in the caller's frame
(also far from the origin), and in the fit it lowers E_r against the fit without it, with
the union still covering dense independent surface samples."""
import numpy as np
import pytest

from skin_collide.core.methods.sphere_set import union_search as us
from skin_collide.core.methods.sphere_set.outside_volume import prepare_mesh
from skin_collide.core.methods.sphere_set.variational import fit
from skin_collide.core.procedural import fan_triangulate, tube_geometry

FAST = dict(n_interior=600, n_surface=200, e_r_samples=20_000, max_iterations=10,
            union_surface=2000, union_outside=20_000)


@pytest.fixture(scope="module")
def tube():
    v, faces = tube_geometry(rings=12, segments=12, length=2.0, radius=0.25)
    t, _ = fan_triangulate(faces)
    return v, t.astype(np.int64)


def covering_start(v, t, n, rng):
    """n balls along the tube's axis, grown until they hold every S point."""
    S = us.surface_points(v, t, 3000, rng)
    lo, hi = v.min(0), v.max(0)
    axis = int(np.argmax(hi - lo))
    c = np.tile(0.5 * (lo + hi), (n, 1))
    c[:, axis] = np.linspace(lo[axis], hi[axis], n)
    d = np.linalg.norm(S[:, None] - c[None], axis=2)
    r = np.zeros(n)
    np.maximum.at(r, d.argmin(1), d.min(1))
    return c, r * 1.000001, S


def state(v, t, n, seed, n_outside):
    """(rng, UnionState) over `covering_start` and n_outside outside points."""
    rng = np.random.default_rng(seed)
    c, r, S = covering_start(v, t, n, rng)
    O, _ = us.outside_points(c, r, prepare_mesh(v, t), n_outside, rng)
    return rng, us.UnionState(c, r, S, O)


def assert_matrices_exact(st):
    """The coverage matrices, updated only over each ball's slab of the sorted points,
    equal the full computation."""
    for X, inX in ((st.S, st.inS), (st.O, st.inO)):
        d = np.linalg.norm(X[:, None] - st.c[None], axis=2)
        clear = np.abs(d - st.r[None]) > 1e-9 * max(1.0, float(st.r.max()))  # off the sphere
        assert (inX[clear] == (d <= st.r[None])[clear]).all()


def test_search_keeps_s_covered_and_lowers_the_outside_count(tube):
    v, t = tube
    rng = np.random.default_rng(0)
    c, r, S = covering_start(v, t, 6, rng)
    O, _ = us.outside_points(c, r, prepare_mesh(v, t), 20_000, rng)
    c2, r2, info = us.search(c, r, S, O, attempts=12)
    assert info["end"] <= info["start"]
    assert info["end"] < info["start"], "the refits shrink an axis cover of a tube"
    d = np.linalg.norm(S[:, None] - c2[None], axis=2) - r2[None]
    assert (d.min(1) <= 1e-9).all()
    assert (r2 >= 0).all() and c2.shape == c.shape
    # The O count it reports is the union's.
    inside = (np.linalg.norm(O[:, None] - c2[None], axis=2) <= r2[None]).any(1)
    assert abs(int(inside.sum()) - info["end"]) <= 2


def test_search_far_from_the_origin_matches_the_same_search_at_home(tube):
    v, t = tube
    rng = np.random.default_rng(1)
    c, r, S = covering_start(v, t, 5, rng)
    O, _ = us.outside_points(c, r, prepare_mesh(v, t), 20_000, rng)
    far = np.array([3000.0, -2000.0, 1000.0])
    a = us.search(c, r, S, O, attempts=4)
    b = us.search(c + far, r, S + far, O + far, attempts=4)
    assert a[2]["end"] == b[2]["end"]
    assert np.allclose(a[0] + far, b[0], atol=1e-6) and np.allclose(a[1], b[1], atol=1e-6)


def test_relocate_and_absorb_keep_every_point_covered(tube):
    v, t = tube
    rng, st = state(v, t, 6, 2, 10_000)
    for src, dst in ((0, 3), (5, 2), (1, 4)):
        st.relocate(src, dst)
        assert (st.covS > 0).all()
        # The counts are the matrices' sums (the incremental updates stay in step).
        assert (st.covS == st.inS.sum(1)).all() and (st.covO == st.inO.sum(1)).all()
        assert_matrices_exact(st)
    P = us.surface_points(v, t, 5000, rng)[-5000:] + 0.01  # some outside the union
    held = (np.linalg.norm(P[:, None] - st.c[None], axis=2) < st.r[None]).any(1)
    st.add_surface(P)  # S stays sorted along its long axis: P's rows are not at the end
    st.absorb(P[~held])
    assert (st.covS > 0).all()
    assert_matrices_exact(st)


def test_best_ball_holds_its_points_and_a_free_ball_gets_radius_zero(tube):
    v, t = tube
    _, st = state(v, t, 4, 3, 10_000)
    req = st.required(1)
    x, rad = st.best_ball(1, req)
    assert (np.linalg.norm(req - x, axis=1) <= rad).all()
    assert st.best_ball(1, np.zeros((0, 3)))[1] == 0.0


def test_search_refuses_a_start_that_does_not_cover(tube):
    v, t = tube
    rng = np.random.default_rng(4)
    c, r, S = covering_start(v, t, 4, rng)
    O, _ = us.outside_points(c, r, prepare_mesh(v, t), 5_000, rng)
    with pytest.raises(ValueError, match="do not cover"):
        us.search(c, 0.5 * r, S, O)


def test_fit_with_the_union_search_is_lower_and_still_covers(tube):
    v, t = tube
    off = fit(v, t, 5, seed=0, union_attempts=-1, **FAST)
    on = fit(v, t, 5, seed=0, union_attempts=10, **FAST)
    assert off.info["union_search"] == {} and on.info["union_search"]["end"] < on.info["union_search"]["start"]
    assert on.relative_outside_volume < off.relative_outside_volume
    rng = np.random.default_rng(11)
    P = us.surface_points(v, t, 100_000, rng)
    gap = (np.linalg.norm(P[:, None] - on.centers[None], axis=2) - on.radii[None]).min(1)
    assert gap.max() <= 1e-9 * np.ptp(v, axis=0).max()


def test_pair_moves_keep_s_covered_and_never_raise_the_count(tube):
    v, t = tube
    _, st = state(v, t, 6, 5, 10_000)
    st.sweep()
    kept = 0
    for i, j in ((0, 1), (1, 2), (2, 3), (3, 4), (4, 5)):
        before = st.cost()
        kept += st.pair(i, j)
        assert st.cost() <= before
        assert (st.covS > 0).all()
        assert (st.covS == st.inS.sum(1)).all() and (st.covO == st.inO.sum(1)).all()
    snap = st.snapshot()
    assert st.pair_sweep() >= 0 and (st.covS > 0).all()
    assert_matrices_exact(st)
    st.restore(snap)  # the slabs follow the restored balls
    st.sweep()
    assert_matrices_exact(st)


def test_pair_moves_the_border_a_refit_cannot(tube):
    """Two balls on a tube, the border between them far off the middle: refits leave it
    (neither ball can shrink before the other grows), the pair move re-divides."""
    v, t = tube
    rng = np.random.default_rng(6)
    S = us.surface_points(v, t, 3000, rng)
    lo, hi = v.min(0), v.max(0)
    axis = int(np.argmax(hi - lo))
    cut = lo[axis] + 0.2 * (hi[axis] - lo[axis])
    c = np.tile(0.5 * (lo + hi), (2, 1))
    r = np.zeros(2)
    for k, side in enumerate((S[:, axis] <= cut, S[:, axis] > cut)):
        c[k] = 0.5 * (S[side].min(0) + S[side].max(0))
        r[k] = np.linalg.norm(S[side] - c[k], axis=1).max() * 1.000001
    O, _ = us.outside_points(c, r, prepare_mesh(v, t), 20_000, rng)
    st = us.UnionState(c, r, S, O)
    st.sweep()
    refitted = st.cost()
    assert st.pair(0, 1)
    assert st.cost() < 0.9 * refitted
    assert (st.covS > 0).all()


def test_best_ball_filter_gives_the_unfiltered_radius(tube):
    """The farthest-point filter is exact: the returned radius is the farthest of all the
    points from the returned centre (with the margin)."""
    v, t = tube
    _, st = state(v, t, 3, 7, 10_000)
    for i in range(3):
        req = st.required(i)
        x, rad = st.best_ball(i, req)
        far = np.linalg.norm(req - x, axis=1).max()
        assert far <= rad <= far * (1 + 1e-8)


def test_uncovered_points_are_the_gaps_deepest_first(tube):
    from skin_collide.core.methods.sphere_set.variational import cover_surface, uncovered_points
    v, t = tube
    rng = np.random.default_rng(8)
    c, r, S = covering_start(v, t, 5, rng)
    eps = 1e-4 * np.linalg.norm(np.ptp(v, axis=0))
    r, _, _ = cover_surface(c, r, v, t, eps)
    assert len(uncovered_points(c, r, v, t, eps, 1000)) == 0  # a proven cover has no gap
    r2 = r.copy()
    r2[2] *= 0.8  # open a gap around ball 2
    U = uncovered_points(c, r2, v, t, eps, 1000)
    assert 0 < len(U) <= 1000
    depth = (np.linalg.norm(U[:, None] - c[None], axis=2) - r2[None]).min(1)
    assert (depth > 0.5 * eps).all() and (np.diff(depth) <= 1e-15).all()
    # They are on the surface ball 2 held alone. A patch wholly in the gap stops splitting
    # (its corners and centroid stand for it), so the deepest is near, not at, the gap's.
    assert (np.linalg.norm(U - c[2], axis=1) <= r[2] * (1 + 1e-9)).all()
    P = us.surface_points(v, t, 200_000, rng)
    truth = (np.linalg.norm(P[:, None] - c[None], axis=2) - r2[None]).min(1).max()
    assert 0.5 * truth <= depth[0] <= truth + 1e-12


def test_search_progress_rises_from_zero_to_one_through_the_pairs(tube):
    v, t = tube
    rng = np.random.default_rng(9)
    c, r, S = covering_start(v, t, 5, rng)
    O, _ = us.outside_points(c, r, prepare_mesh(v, t), 10_000, rng)
    seen = []
    us.search(c, r, S, O, attempts=4, pair_sweeps=2, progress=seen.append)
    assert seen[-1] == 1.0 and (np.diff(seen) >= 0).all() and min(seen) >= 0.0
    assert any(0.5 <= f < 0.9 for f in seen), "the pair sweeps report progress"


def test_best_ball_probe_bounds_change_no_result(tube, monkeypatch):
    """The compass search measures all of R only for candidates whose lower bound (from
    R's farthest points) can still win: the centres and radii are those of measuring every
    candidate on all of R."""
    v, t = tube
    _, st = state(v, t, 4, 8, 20_000)
    starts = [(i, st.required(i), st.c[i] + d) for i in range(4)
              for d in (np.zeros(3), np.array([0.05, -0.03, 0.02]))]
    got = [st.best_ball(i, req, x) for i, req, x in starts]
    assert all(len(req) > 2 * us._PROBE for _, req, _ in starts)   # the bounds are used
    monkeypatch.setattr(us, "_PROBE", 10 ** 9)                     # every candidate on all of R
    for (i, req, x), (c, r) in zip(starts, got):
        c0, r0 = st.best_ball(i, req, x)
        assert np.array_equal(c, c0) and r == r0


def test_later_pair_sweeps_try_only_pairs_near_a_moved_ball(tube, monkeypatch):
    """A sweep given the balls the previous one moved tries only the pairs with a ball near
    one of them (issue 43): none when nothing moved, every pair when every ball moved."""
    v, t = tube
    _, st = state(v, t, 6, 5, 10_000)
    st.sweep()
    tried = []
    monkeypatch.setattr(st, "pair", lambda i, j, splits=5: tried.append((i, j)) or False)
    N = len(st.r)
    st.pair_sweep()
    every = list(tried)
    assert every
    tried.clear()
    assert st.pair_sweep(changed=np.zeros(N, dtype=bool)) == 0 and tried == []
    st.pair_sweep(changed=np.ones(N, dtype=bool))
    assert tried == every
    tried.clear()
    one = np.zeros(N, dtype=bool)
    one[0] = True
    st.pair_sweep(changed=one)
    near = st.near_changed(one)
    assert tried == [(i, j) for i, j in every if near[i] or near[j]] and near[0]
