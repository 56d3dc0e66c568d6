"""Variational sphere sets (Wang et al. 2006, section 5): Lloyd-style clustering of interior
and surface sample points, where a point joins the cluster whose sphere's outside volume
grows least, and each cluster's sphere minimizes its outside volume (SOV) over its centre
while bounding the cluster. Teleportation moves the most redundant sphere to split the worst
one. A final pass (`cover_surface`) grows spheres until the union provably contains every
triangle (adaptive patches with a known covering radius, each held at that depth).

`fit` reads as its phases, each in its own function or module:

1. the clustering units and the first centres (`seeding`);
2. the variational rounds, assignment then per-cluster fit (`clustering.Solver`), with
   teleports when they stall (`_variational_rounds`, `_teleport`);
3. the first proven cover (`cover.cover_surface`);
4. the union search on the union's own outside volume (`_union_search`, `union_search`)
   and its cover, or else the polish on the cover's patches (`_polish`);
5. the union's outside volume, measured.

Everything runs on numpy arrays; Python loops run over iterations, flood-fill waves, search
steps and memory chunks, never over points, triangles or spheres.
Simplifications against the paper are listed in docs/sphere_sets.md.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import union_search
from .clustering import Solver, Stopped
from .cover import cover_surface, far_corner, uncovered_points
from .outside_volume import mesh_volume, prepare_mesh
from .seeding import kmeans_init, nearest, sample_units
from .types import SphereSet
from .union_volume import union_outside_volume_estimate

__all__ = ["fit", "cover_surface", "uncovered_points"]


# -------------------------------------------------------------------------------- fit
def fit(vertices: np.ndarray, triangles: np.ndarray, count: int, seed: int = 0,
        progress: Callable[[float], None] | None = None,
        should_stop: Callable[[], bool] | None = None, *,
        n_interior: int = 4000, n_surface: int = 1000, max_iterations: int = 40,
        max_teleports: int = 60, max_failed_teleports: int = 6, teleport_rounds: int = 2,
        teleport_source: str = "overlap", table_size: int = 24, with_vertices: bool = True,
        cover_eps: float = 1e-4, polish_rounds: int = 3, with_midpoints: bool = False,
        search_steps: int = 40, tolerance: float = 5e-3,
        e_r_samples: int = 100_000, union_attempts: int = 300, union_surface: int | None = None,
        union_outside: int | None = None, union_failed: int = 40,
        union_densify: int = 4, union_gaps: int = 5000, union_pairs: int = 3) -> SphereSet:
    """Fit `count` spheres whose union bounds the mesh, minimizing outside volume.

    Args:
        vertices: (V, 3) float64 rest positions (mesh data coordinates).
        triangles: (T, 3) int triangle corners.
        count: number of spheres N >= 1.
        seed: everything random (surface samples, seeding, overlap estimates, the E_r
            estimator) derives from it: the same seed gives the same set.
        progress: called with a fraction in [0, 1] now and then.
        should_stop: polled between steps; when it returns True the best set so far is
            covered and returned with info["stopped"] = True.
        n_interior, n_surface: interior grid points and area-weighted surface samples
            (the clustering units, with the vertices; see with_vertices).
        max_iterations: assignment/fit rounds, teleport evaluations included.
        max_teleports, max_failed_teleports: teleport budget; the fit ends once this many
            teleports in a row fail to lower the error.
        teleport_rounds: assignment/fit rounds run before judging a teleport.
        teleport_source: "overlap" (default): the paper's largest overlap ratio; "removal":
            the ball whose deletion raises Σ SOV least by the tables (measured worse).
        with_vertices: the mesh vertices are clustering units too.
        with_midpoints: the edge midpoints and triangle centroids too (the paper's).
        cover_eps: covering radius of the cover pass's leaf samples, relative to the
            diagonal of the mesh's box (`cover_surface`): every leaf sample is held at
            depth at least its covering radius (<= eps), so every surface point is inside.
        polish_rounds: rounds refitting each ball on the cover's patches assigned to it
            (kept while Σ SOV falls).
        table_size: radii in each cluster's SOV-versus-radius table.
        search_steps: compass-search steps per fit.
        tolerance: relative error decrease below which a round counts as stalled.
        e_r_samples: stratified samples of the final union outside volume.
        union_attempts: relocation attempts of the union search (`union_search.search`,
            run after the first cover); -1 turns the search off (then the polish runs).
        union_surface: random surface points the search keeps covered (with every vertex,
            edge midpoint and centroid); 10 000 per ball, in 20 000 .. 300 000 by default.
        union_outside: outside points standing for the union's outside volume (default
            about 4000 per ball, clipped to 20 000 .. 300 000 and 600 per triangle).
        union_failed: relocations failing in a row that end them.
        union_pairs: pair sweeps after the relocations.
        union_densify, union_gaps: rounds that add the deepest `union_gaps` surface points
            outside the union (`uncovered_points`) to the search.

    Returns:
        SphereSet with centres (N, 3), radii (N,), outside_volume (union outside the mesh),
        mesh_volume, build_seconds and info: "triangle_sphere" (T,) int64 (the ball reaching
        deepest past each triangle's centroid: a grouping for the collision method, NOT a
        ball containing the triangle; the union contains every triangle), "iterations",
        "teleports", "sum_sov" (the paper's error, overlaps counted twice),
        "outside_volume_stderr", "samples", "stopped", "cover" (the cover pass's patch
        counts and eps, absolute), "polish_rounds".
    """
    t_start = time.perf_counter()
    v, t = _checked_mesh(vertices, triangles, count)
    rng = np.random.default_rng(seed)
    report = progress if progress is not None else (lambda x: None)
    report(0.0)
    mesh = prepare_mesh(v, t)
    vol = mesh_volume(v, t)
    corners, spacing = sample_units(mesh, vol, n_interior, n_surface, rng, with_vertices,
                                    with_midpoints)
    count = int(count)
    solver = Solver(mesh, corners, spacing, table_size, should_stop)
    rounds = _variational_rounds(
        solver, count, rng, report, max_iterations=max_iterations, max_teleports=max_teleports,
        max_failed_teleports=max_failed_teleports, teleport_rounds=teleport_rounds,
        teleport_source=teleport_source, search_steps=search_steps, tolerance=tolerance)
    err, centres, radii, sov, _ = rounds.best
    report(0.92)
    eps = max(cover_eps * float(np.linalg.norm(v.max(0) - v.min(0))), 1e-12)
    cov = _Covered(centres, *cover_surface(centres, radii, v, t, eps, priority=sov))
    stopped, union_info, polished = rounds.stopped, {}, 0
    if not stopped and union_attempts >= 0 and count > 1:
        cov, union_info, stopped = _union_search(
            solver, cov, v, t, eps, rng, report, surface=union_surface, outside=union_outside,
            attempts=union_attempts, failed=union_failed, densify=union_densify,
            gaps=union_gaps, pairs=union_pairs)
    if not stopped and polish_rounds > 0 and not union_info:
        cov, polished, stopped = _polish(solver, cov, v, t, eps, polish_rounds, search_steps)
    report(0.95)
    out, stderr = union_outside_volume_estimate(cov.centres, cov.radii, v, t,
                                                n_samples=e_r_samples, seed=seed, mesh=mesh)
    report(1.0)
    info = {"triangle_sphere": cov.tri_sphere, "iterations": rounds.iterations,
            "teleports": rounds.teleports, "sum_sov": err, "sum_sov_history": rounds.history,
            "outside_volume_stderr": stderr, "samples": int(len(solver.pts)),
            "sample_spacing": spacing, "sov_evaluations": solver.sov_calls, "stopped": stopped,
            "cover": {k: val for k, val in cov.stats.items() if not k.startswith("_")},
            "polish_rounds": polished, "union_search": union_info}
    return SphereSet(centers=cov.centres, radii=cov.radii, outside_volume=out, mesh_volume=vol,
                     build_seconds=time.perf_counter() - t_start, info=info)


def _checked_mesh(vertices: np.ndarray, triangles: np.ndarray, count: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The mesh as (V, 3) float64 and (T, 3) int64 arrays; ValueError for a count below 1
    or a mesh without triangles."""
    if count < 1:
        raise ValueError("count must be at least 1")
    v = np.asarray(vertices, dtype=np.float64).reshape(-1, 3)
    t = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if len(t) == 0:
        raise ValueError("the mesh has no triangles")
    return v, t


# ------------------------------------------------------------------ variational rounds
@dataclass
class _Rounds:
    """What the variational rounds leave: `best` = (Σ SOV, centres (N, 3), radii (N,),
    sov (N,), labels (n,)) of the best round, the rounds and teleports counted, Σ SOV after
    every evaluated round, and whether should_stop ended them."""

    best: tuple
    iterations: int
    teleports: int
    history: list[float]
    stopped: bool


def _round(solver: Solver, centres: np.ndarray, reach: np.ndarray, search_steps: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One variational round: assignment from `centres` (SOV tables up to `reach` (N,)),
    then each cluster's sphere fitted. Returns (labels (n,), centres, radii, sov)."""
    lab = solver.assign(centres, reach)
    c2, r2, s2 = solver.fit(centres, lab, search_steps)
    return lab, c2, r2, s2


def _variational_rounds(solver: Solver, count: int, rng: np.random.Generator,
                        report: Callable[[float], None], *, max_iterations: int,
                        max_teleports: int, max_failed_teleports: int, teleport_rounds: int,
                        teleport_source: str, search_steps: int, tolerance: float) -> _Rounds:
    """The paper's iterations from the k-means start: rounds while Σ SOV falls by more than
    `tolerance`, a teleport (`_teleport`) whenever they stall, until `max_iterations`
    rounds or the teleport budget is spent. Esc (`Stopped`) ends them with the best set so
    far (the L2 clusters as they are if no round finished)."""
    spacing = solver.s
    pts = solver.pts
    stopped = False
    iterations = teleports = 0
    history: list[float] = []

    centres = kmeans_init(pts, count, rng)
    labels = nearest(pts, centres)
    reach = solver.cluster_radius(centres, np.arange(count), labels)
    best = None  # (error, centres, radii, sov, labels)

    try:
        labels, centres, radii, sov = _round(solver, centres, 1.5 * reach + 2 * spacing,
                                             search_steps)
        iterations = 1
        best = (float(sov.sum()), centres, radii, sov, labels)
        history.append(best[0])
        failed = 0
        while iterations < max_iterations:
            report(min(0.9, iterations / max_iterations))
            err, c0, r0, s0, l0 = best
            lab, c1, r1, s1 = _round(solver, c0, 1.5 * r0 + 2 * spacing, search_steps)
            iterations += 1
            e1 = float(s1.sum())
            history.append(e1)
            if e1 < err * (1 - tolerance):
                best = (e1, c1, r1, s1, lab)
                failed = 0
                continue
            if e1 < err:
                best = (e1, c1, r1, s1, lab)
            # Stalled: teleport the most redundant sphere to split the worst one.
            if teleports >= max_teleports or failed >= max_failed_teleports:
                break
            tried = _teleport(solver, best, failed, rng, teleport_source, teleport_rounds,
                              search_steps)
            if tried is None:
                failed += 1
                continue
            iterations += teleport_rounds
            history.append(tried[0])
            if tried[0] < best[0]:
                best = tried
                teleports += 1
                failed = 0
            else:
                failed += 1
    except Stopped:
        stopped = True
        if best is None:  # stopped before the first round: the L2 clusters as they are
            radii = solver.cluster_radius(centres, np.arange(count), labels)
            best = (float("nan"), centres, radii, np.full(count, np.nan), labels)
    return _Rounds(best, iterations, teleports, history, stopped)


def _teleport(solver: Solver, best: tuple, failed: int, rng: np.random.Generator,
              source: str, teleport_rounds: int, search_steps: int) -> tuple | None:
    """Move one sphere of `best` (as in `_Rounds.best`) to split another and let the pair
    settle for `teleport_rounds` rounds. The source is the most redundant sphere
    (`source` "overlap", the paper's) or the one whose removal costs least ("removal"); the
    destination the one with the largest SOV. After `failed` failures in a row the retries
    walk the (source, destination) ranks. Returns the settled set as (Σ SOV, centres,
    radii, sov, labels), or None when the pair cannot split (nothing evaluated)."""
    spacing = solver.s
    count = len(best[1])
    err, c0, r0, s0, l0 = best
    if source == "overlap":  # the paper's: the most redundant ball
        src_order = np.argsort(-solver.overlap_ratio(c0, r0, rng), kind="stable")
    else:  # the ball whose deletion costs least, by the SOV tables
        rc = solver.removal_cost(c0, r0, s0, l0, 1.5 * r0 + 2 * spacing)
        src_order = np.argsort(rc, kind="stable")
    dst_order = np.argsort(-s0, kind="stable")
    # Retries walk the (source, destination) ranks: (0, 0), (0, 1), (1, 0), (1, 1),
    # (2, 0), ... (a failure often comes from a destination that splits badly).
    src = int(src_order[min(failed // 2, count - 1)])
    dsts = [int(d) for d in dst_order if d != src]
    dst = dsts[min(failed % 2, len(dsts) - 1)] if dsts else src
    if src == dst or np.count_nonzero(l0 == dst) < 2:
        return None
    pa, pb = solver.split_centres(l0, dst)
    ct = c0.copy()
    rt = 1.5 * r0 + 2 * spacing
    ct[dst], ct[src] = pa, pb
    rt[dst] = rt[src] = 0.75 * r0[dst] + 2 * spacing
    # The split spheres need a couple of rounds to settle before being judged.
    lab, c2, r2, s2 = _round(solver, ct, rt, search_steps)
    for _ in range(teleport_rounds - 1):
        lab, c2, r2, s2 = _round(solver, c2, 1.5 * r2 + 2 * spacing, search_steps)
    return float(s2.sum()), c2, r2, s2, lab


# --------------------------------------------------------------- after the rounds
@dataclass
class _Covered:
    """Balls with their proven cover (`cover_surface`): centres (N, 3), radii (N,) grown
    to cover the surface, the triangle → ball grouping (T,) int64 and the cover's stats
    (with its final patches under "_patches", dropped from the result)."""

    centres: np.ndarray
    radii: np.ndarray
    tri_sphere: np.ndarray
    stats: dict


def _union_search(solver: Solver, cov: _Covered, vertices: np.ndarray, triangles: np.ndarray,
                  eps: float, rng: np.random.Generator, report: Callable[[float], None], *,
                  surface: int | None, outside: int | None, attempts: int, failed: int,
                  densify: int, gaps: int, pairs: int) -> tuple[_Covered, dict, bool]:
    """The union search (`union_search.search`, options as `fit`'s union_*) from the
    covered set, then the proven cover of its result. The variational error counts
    overlaps twice and binds each ball to interior points; E_r is the union's, with the
    surface covered. Returns the covered set, the search's info and whether Esc stopped
    it (then `cov` unchanged and no info)."""
    v, t = vertices, triangles
    count = len(cov.centres)
    centres, radii = cov.centres, cov.radii
    report(0.93)
    # Dense surface points, because every gap between them that the search leaves open,
    # the final cover must grow into (on Cesium Man at N = 32, closing the gaps raised the
    # search's outside count by 9 % with 20 000 points and by 1.6 % with 300 000).
    n_surf = surface if surface is not None else int(np.clip(10_000 * count, 20_000, 300_000))
    S = union_search.surface_points(v, t, n_surf, rng)
    # About 4000 outside points per ball (the proxy's resolution per ball; each compass
    # step costs the points near one ball), at most 600 per triangle (a small mesh does
    # not need the resolution, and the search's time grows with the points per ball).
    n_out = outside if outside is not None else int(
        np.clip(min(4000 * count, 600 * len(t)), 20_000, 300_000))
    O, _ = union_search.outside_points(centres, radii, solver.mesh, n_out, rng)

    def gaps_of(c: np.ndarray, r: np.ndarray) -> np.ndarray:
        return uncovered_points(c, r, v, t, eps, gaps)

    try:
        c2, r2, info = union_search.search(
            centres, radii, S, O, attempts=attempts, max_failed=min(failed, 3 * count),
            densify=gaps_of, densify_rounds=densify, pair_sweeps=pairs,
            check=solver.check_stop, progress=lambda f: report(0.93 + 0.04 * f))
    except Stopped:
        return cov, {}, True
    return _Covered(c2, *cover_surface(c2, r2, v, t, eps, priority=r2)), info, False


def _polish(solver: Solver, cov: _Covered, vertices: np.ndarray, triangles: np.ndarray,
            eps: float, rounds: int, search_steps: int) -> tuple[_Covered, int, bool]:
    """Polish for the cover itself: each ball now only has to hold the cover's patches
    assigned to it (corner sets; no interior samples), so refit its centre by the same
    pattern search on those, cover again (which shrinks), and keep the result while Σ SOV
    falls. Returns the kept set, the rounds kept and whether Esc stopped it."""
    v, t = vertices, triangles
    count = len(cov.centres)
    old = float(solver.sov(cov.centres, cov.radii).sum())
    polished = 0
    try:
        for _ in range(rounds):  # loop over rounds
            F = cov.stats["_patches"]
            lab = np.empty(len(F), dtype=np.int64)
            step = max(1, (1 << 20) // count)
            for s0 in range(0, len(F), step):  # loop over memory chunks
                lab[s0:s0 + step] = (far_corner(F[s0:s0 + step], cov.centres)
                                     - cov.radii[None]).argmin(1)
            tsolver = Solver(solver.mesh, F, solver.s, solver.table_size, solver.should_stop)
            c2, r2, s2 = tsolver.fit(cov.centres, lab, search_steps)
            solver.sov_calls += tsolver.sov_calls
            r2, ts2, st2 = cover_surface(c2, r2, v, t, eps, priority=s2)
            new = float(solver.sov(c2, r2).sum())
            if new >= old:
                break
            cov, old = _Covered(c2, r2, ts2, st2), new
            polished += 1
    except Stopped:
        return cov, polished, True
    return cov, polished, False
