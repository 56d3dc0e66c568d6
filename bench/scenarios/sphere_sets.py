"""Sphere sets (Wang et al. 2006, issue 10): relative outside volume E_r and build time of
the variational fit against the two simple baselines, at the same sphere counts.

For each asset (its largest skinned mesh, the rest mesh in mesh data coordinates: no
modifier, no object transform, as `skin_collide sphere-set` reads it) and each count N:

* builders: `variational` (`core.methods.sphere_set.variational.fit`), `top-down` (the leaves of a
  top-down minimal-ball split) and `grid` (an octree cover), `core.methods.sphere_set.baselines`;
* E_r = (volume of the union of the spheres outside the mesh) / (mesh volume), every set
  measured by the SAME estimator here (not the builder's own number):
  `union_volume.union_outside_volume_estimate` with `--samples` jittered-grid points over
  the union's box and the same seed; its standard error (a conservative bound,
  sqrt(p (1 - p) / n) * V_box / V_mesh) is printed per cell. The mesh volume is
  `outside_volume.mesh_volume` (divergence theorem);
* coverage, two checks with a relative tolerance of 1e-9 of the mesh size: every rest
  triangle has one sphere that holds its three vertices (so the triangle lies in the
  union; what the method `sphere-set` relies on), and issue 10's check on dense surface
  samples (a barycentric grid of 28 points per triangle) against the union; the table
  flags a set that fails either (the triangles left out and the worst gap), and the
  line under it counts the sets that pass.

Each fit runs in a child process (spawned, numpy only) with a time limit: at
`--time-limit` seconds the fit is asked to stop (`should_stop`, the panel's Esc) and
returns its best set so far, covered; the cell is then marked `stopped` (not a finished
fit; its E_r is printed for information only). A child that does not come back within
1.5 x the limit + 60 s is killed and the cell is `not reached`. Nothing hangs.

Results are kept in `--out-json` (read first when it exists; the cells computed now replace
theirs; written after every cell), so assets can be run in separate invocations; the table
and the plot cover every cell in the file. `--plot PNG` draws E_r against N (log2 x axis,
log10 y axis), one line per builder per asset, with the AMAA reference of issue 10 on
Cesium Man. The plot needs matplotlib, a benchmark-only dependency (the fits and tables
do not): `bash dev python -m pip install -r bench/requirements.txt` once.

    bash dev python -m bench sphere-sets --assets cesium_man.glb --counts 8 16 32 64 128 \\
        --out-json out/sphere_sets.json --plot docs/sphere_sets_er.png
    bash dev python -m bench sphere-sets --plot-only --out-json out/sphere_sets.json \\
        --plot docs/sphere_sets_er.png
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import tempfile
import time

import numpy as np

from bench import registry, scenes, timing

METHODS = ("variational", "top-down", "grid")
#: AMAA (Bradshaw's sphere-tree toolkit, medial axis, grown to bound) on Cesium Man, issue 10.
AMAA = {8: 4.0, 16: 2.0, 32: 1.1, 62: 0.70, 124: 0.47}
#: Issue 10's goal on Cesium Man: E_r at most this with N spheres.
TARGETS = {32: 0.70, 64: 0.47}
LABELS = {"cesium_man.glb": "Cesium Man", "fox.glb": "Fox",
          "makehuman_default.blend": "MakeHuman"}


# ------------------------------------------------------------------------- meshes
rest_mesh = scenes.rest_mesh
load_asset = scenes.load_rest_mesh


# ---------------------------------------------------------------------- the fits
def _fit_child(conn, method: str, v, t, count: int, seed: int, limit: float) -> None:
    """Child process: one fit, its result back through `conn`."""
    try:
        from skin_collide.core.methods.sphere_set import baselines

        t0 = timing.now()
        deadline = t0 + limit
        if method == "variational":
            from skin_collide.core.methods.sphere_set import variational

            s = variational.fit(v, t, count, seed=seed,
                                should_stop=lambda: timing.now() > deadline)
            stopped = bool(s.info.get("stopped", False))
            extra = {k: s.info.get(k) for k in ("iterations", "teleports", "sov_evaluations")}
            extra["own_er"] = float(s.relative_outside_volume)
        else:
            s = baselines.BUILDERS[method](v, t, count, seed=seed)
            stopped, extra = False, {}
        seconds = timing.seconds_since(t0)
        conn.send({"ok": True, "centers": np.asarray(s.centers, np.float64),
                   "radii": np.asarray(s.radii, np.float64), "seconds": seconds,
                   "stopped": stopped, "extra": extra})
    except BaseException as exc:  # report, never hang the parent
        conn.send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def run_fit(method: str, v, t, count: int, seed: int, limit: float) -> dict:
    """One fit in a spawned child with a soft (`should_stop`) and a hard (kill) limit."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    p = ctx.Process(target=_fit_child, args=(child, method, v, t, count, seed, limit))
    t0 = timing.now()
    p.start()
    child.close()
    hard = 1.5 * limit + 60.0
    msg = None
    if parent.poll(hard):
        try:
            msg = parent.recv()
        except EOFError:
            msg = None
    wall = timing.seconds_since(t0)
    if msg is None:
        if p.is_alive():
            p.kill()
        p.join()
        return {"status": "not reached", "wall": wall,
                "why": f"no result within {hard:.0f} s (killed)" if wall >= hard
                else f"child died (exit code {p.exitcode})"}
    p.join()
    if not msg["ok"]:
        return {"status": "error", "wall": wall, "why": msg["error"]}
    msg["status"] = "stopped" if msg["stopped"] else "done"
    return msg


# ------------------------------------------------------------------- measuring
def coverage(centers, radii, v, t, rel_tol: float = 1e-9) -> tuple[int, float]:
    """(triangles with no sphere holding all three vertices, worst gap relative to the
    mesh size). A triangle lies in a ball iff its three corners do."""
    size = float(np.linalg.norm(v.max(0) - v.min(0)))
    tol = rel_tol * size
    best = np.full(len(t), np.inf)
    step = max(1, (1 << 22) // max(1, len(radii)))
    for s in range(0, len(t), step):  # loop over memory chunks
        p = v[t[s:s + step]]                                            # (k, 3, 3)
        d = np.linalg.norm(p[:, :, None, :] - centers[None, None], axis=-1).max(1)  # (k, N)
        best[s:s + step] = (d - radii[None]).min(1)
    missed = int(np.count_nonzero(best > tol))
    return missed, float(max(best.max(), 0.0) / size)


def union_coverage(centers, radii, v, t, k: int = 6, rel_tol: float = 1e-9) -> tuple[int, float]:
    """Issue 10's check on dense surface samples: (triangles with a sample outside the
    union of the balls, worst distance of a sample outside relative to the mesh size). The
    samples of each triangle are its barycentric grid of step 1/k ((k+1)(k+2)/2 points:
    corners, edges and inside)."""
    size = float(np.linalg.norm(v.max(0) - v.min(0)))
    i, j = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
    keep = i + j <= k
    bary = np.stack([i[keep], j[keep], k - i[keep] - j[keep]], 1) / k       # (S, 3)
    worst = np.full(len(t), -np.inf)
    step = max(1, (1 << 21) // max(1, len(radii) * len(bary)))
    for s in range(0, len(t), step):  # loop over memory chunks
        p = np.einsum("sk,tkd->tsd", bary, v[t[s:s + step]])                # (m, S, 3)
        d = np.linalg.norm(p[:, :, None, :] - centers[None, None], axis=-1) - radii
        worst[s:s + step] = d.min(2).max(1)          # the sample farthest outside every ball
    missed = int(np.count_nonzero(worst > rel_tol * size))
    return missed, float(max(worst.max(), 0.0) / size)


def measure(centers, radii, v, t, samples: int, seed: int, mesh, vol: float) -> dict:
    from skin_collide.core.methods.sphere_set import union_volume

    t0 = timing.now()
    out, err = union_volume.union_outside_volume_estimate(centers, radii, v, t,
                                                          n_samples=samples, seed=seed,
                                                          mesh=mesh)
    missed, gap = coverage(centers, radii, v, t)
    u_missed, u_gap = union_coverage(centers, radii, v, t)
    return {"e_r": out / vol, "e_r_stderr": err / vol, "uncovered": missed, "gap": gap,
            "union_uncovered": u_missed, "union_gap": u_gap,
            "centers": np.asarray(centers).tolist(), "radii": np.asarray(radii).tolist(),
            "measure_s": timing.seconds_since(t0)}


# ------------------------------------------------------------------------ output
def variational_version() -> str:
    """The last commit of the fit's modules (core/methods/sphere_set/variational.py with its
    phases seeding.py, flood_fill.py, clustering.py, cover.py, and union_search.py),
    '+modified' when the working copy differs from it (others may be editing them)."""
    import subprocess

    root = scenes.ROOT
    paths = [os.path.join("core", "methods", "sphere_set", f)
             for f in ("variational.py", "seeding.py", "flood_fill.py", "clustering.py", "cover.py",
                       "union_search.py")]
    try:
        h = subprocess.run(["git", "log", "-1", "--format=%h", "--", *paths], cwd=root,
                           capture_output=True, text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", *paths], cwd=root,
                               timeout=30).returncode != 0
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (h or "uncommitted") + ("+modified" if dirty else "")


def cell_text(c: dict | None) -> str:
    if c is None:
        return "–"
    if c["status"] in ("not reached", "error"):
        return f"not reached ({c['why']})"
    sec = c["seconds"]
    txt = f"{c['e_r']:.3f} ± {c['e_r_stderr']:.3f}, " + (f"{sec:.1f} s" if sec >= 10 else f"{sec:.2f} s")
    if c["status"] == "stopped":
        txt += f" (stopped at the {c['limit']:.0f} s limit)"
    if c.get("union_uncovered"):
        txt += (f", {c['union_uncovered']} triangles NOT inside the union (gap "
                f"{c['union_gap']:.1e} of the mesh size)")
    elif c["uncovered"]:
        txt += (f", {c['uncovered']} triangles in no one sphere"
                + (" (all inside the union)" if "union_uncovered" in c
                   else " (union not checked)"))
    return txt


def table(results: dict) -> str:
    cells = results["cells"]
    assets = [a for a in LABELS if any(c["asset"] == a for c in cells)] + sorted(
        {c["asset"] for c in cells} - set(LABELS))
    lines = []
    for a in assets:
        mine = [c for c in cells if c["asset"] == a]
        meta = results["assets"][a]
        counts = sorted({c["count"] for c in mine})
        versions = sorted({c.get("variational_version", "not recorded") for c in mine
                           if c["method"] == "variational"})
        lines.append(f"**{LABELS.get(a, a)}** (`{meta['object']}`, {meta['triangles']} "
                     f"triangles, mesh volume {meta['volume']:.4g}): E_r ± standard error, "
                     f"build time" + (f" (variational.py at {', '.join(versions)})"
                                      if versions else ""))
        lines.append("")
        lines.append("| N | " + " | ".join(m for m in METHODS
                                            if any(c["method"] == m for c in mine)) + " |")
        ms = [m for m in METHODS if any(c["method"] == m for c in mine)]
        lines.append("|---|" + "---|" * len(ms))
        for n in counts:
            row = []
            for m in ms:
                c = next((c for c in mine if c["method"] == m and c["count"] == n), None)
                row.append(cell_text(c))
            lines.append(f"| {n} | " + " | ".join(row) + " |")
        measured = [c for c in mine if "uncovered" in c]
        bad = [c for c in measured if c["uncovered"]]
        lines.append("")
        lines.append(f"Coverage: {len(measured) - len(bad)} of {len(measured)} sets hold every "
                     f"rest triangle in one sphere (its three vertices)"
                     + (", not: " + ", ".join(f"{c['method']} N={c['count']} ({c['uncovered']})"
                                              for c in bad) if bad else "") + ".")
        um = [c for c in measured if "union_uncovered" in c]
        ubad = [c for c in um if c["union_uncovered"]]
        if um:
            lines.append(f"Union on dense surface samples (28 per triangle): {len(um) - len(ubad)} "
                         f"of {len(um)} sets hold every rest triangle"
                         + (", NOT: " + ", ".join(f"{c['method']} N={c['count']} "
                                                  f"({c['union_uncovered']})" for c in ubad)
                            if ubad else "") + ".")
        lines.append("")
    return "\n".join(lines)


def compact_table(results: dict) -> str:
    """One table, every asset: E_r (build seconds) per builder; `*` marks a stopped fit,
    `n/r` one not reached, `!` a set that misses part of a triangle."""
    cells = results["cells"]
    assets = [a for a in LABELS if any(c["asset"] == a for c in cells)]
    cols = [(a, m) for a in assets for m in METHODS
            if any(c["asset"] == a and c["method"] == m for c in cells)]
    head = "| N | " + " | ".join(f"{LABELS[a]} {m}" for a, m in cols) + " |"
    out = [head, "|---|" + "---|" * len(cols)]
    for n in sorted({c["count"] for c in cells}):
        row = []
        for a, m in cols:
            c = next((c for c in cells if (c["asset"], c["method"], c["count"]) == (a, m, n)),
                     None)
            if c is None:
                row.append("–")
            elif c["status"] not in ("done", "stopped"):
                row.append("n/r")
            else:
                sec = c["seconds"]
                t = f"{sec:.0f} s" if sec >= 10 else (f"{sec:.1f} s" if sec >= 0.1 else
                                                       f"{sec * 1000:.0f} ms")
                flag = ("*" if c["status"] == "stopped" else "") + (
                    "!" if c.get("union_uncovered", c.get("uncovered")) else "")
                row.append(f"{c['e_r']:.2f}{flag} ({t})")
        out.append(f"| {n} | " + " | ".join(row) + " |")
    return "\n".join(out)


#: Line styles of the plot: colour per builder, dash and marker per asset.
COLORS = {"variational": "#c82828", "top-down": "#285ac8", "grid": "#1e963c"}
DASHES = {"cesium_man.glb": "-", "fox.glb": "--", "makehuman_default.blend": ":"}
MARKERS = {"cesium_man.glb": "o", "fox.glb": "s", "makehuman_default.blend": "^"}


def plot_series(results: dict) -> list[dict]:
    """What the plot draws: one series per builder per asset (finished fits with E_r > 0,
    sorted by N), then on Cesium Man the AMAA reference and the goal of issue 10. Each a
    dict of x, y, label, color, linestyle (None: markers only) and marker."""
    series = []
    cells = results["cells"]
    for a in LABELS:
        for m in METHODS:
            pts = sorted((c["count"], c["e_r"]) for c in cells
                         if c["asset"] == a and c["method"] == m and c["status"] == "done"
                         and c["e_r"] > 0)
            if pts:
                series.append({"x": [p[0] for p in pts], "y": [p[1] for p in pts],
                               "color": COLORS[m], "linestyle": DASHES[a], "marker": MARKERS[a],
                               "label": f"{LABELS[a]} {m}"})
    if any(c["asset"] == "cesium_man.glb" for c in cells):
        series.append({"x": list(AMAA), "y": list(AMAA.values()), "color": "#787878",
                       "linestyle": (0, (1, 1.5)), "marker": "x",
                       "label": "Cesium Man AMAA (issue 10)"})
        series.append({"x": list(TARGETS), "y": list(TARGETS.values()), "color": "black",
                       "linestyle": None, "marker": "s", "label": "Cesium Man goal (issue 10)"})
    return series


def plot(results: dict, path: str) -> None:
    """Draw E_r against N (log2 x, log10 y) into the PNG `path` with matplotlib's Agg
    backend (no display). matplotlib is imported here only: the fits and tables run
    without it (`bash dev python -m pip install -r bench/requirements.txt` adds it)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

    fig = Figure(figsize=(11.6, 6.2), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for s in plot_series(results):
        if s["linestyle"] is None:   # the goal: hollow squares over the lines, not hiding them
            ax.plot(s["x"], s["y"], color=s["color"], marker=s["marker"], label=s["label"],
                    linestyle="none", markersize=10, markerfacecolor="none",
                    markeredgewidth=1.8, zorder=3)
        else:
            ax.plot(s["x"], s["y"], color=s["color"], marker=s["marker"], label=s["label"],
                    linestyle=s["linestyle"], linewidth=1.8, markersize=6)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=10)
    ax.xaxis.set_major_locator(LogLocator(base=2))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_locator(NullLocator())
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.grid(True, color="#e1e1e1", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.set_title("Sphere sets: E_r against N")
    ax.set_xlabel("spheres N")
    ax.set_ylabel("E_r = outside / mesh volume")
    fig.legend(loc="outside right upper", frameon=False)
    # No "Software" stamp (it names matplotlib's version): redrawing unchanged results with
    # the same matplotlib gives the same bytes.
    fig.savefig(path, metadata={"Software": None}, pil_kwargs={"optimize": True})


# -------------------------------------------------------------------------- main
def options(ap) -> None:
    ap.add_argument("--assets", nargs="+", default=list(LABELS))
    ap.add_argument("--counts", nargs="+", type=int, default=[8, 16, 32, 64, 128])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--samples", type=int, default=1_000_000,
                    help="points of the E_r estimator (the same for every set)")
    ap.add_argument("--time-limit", type=float, default=900.0,
                    help="seconds per fit before it is asked to stop")
    ap.add_argument("--out-json", default=os.path.join("out", "sphere_sets.json"))
    ap.add_argument("--plot", default=None,
                    help="write the E_r plot to this PNG (needs matplotlib: bench/requirements.txt)")
    ap.add_argument("--plot-only", action="store_true",
                    help="no fits: table and plot from --out-json")


def run(a) -> int:
    if a.plot:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:   # say so before hours of fits
            raise SystemExit("--plot needs matplotlib: bash dev python -m pip install -r "
                             "bench/requirements.txt")
    if a.smoke:                 # never into out/: a file of its own, gone afterwards
        a.out_json = os.path.join(tempfile.mkdtemp(prefix="bench_smoke_"), "sphere_sets.json")
    if not a.plot_only:
        for asset in a.assets:
            scenes.require(asset)

    results = {"cells": [], "assets": {}}
    if os.path.exists(a.out_json):
        with open(a.out_json) as f:
            results = json.load(f)

    def save():
        os.makedirs(os.path.dirname(os.path.abspath(a.out_json)), exist_ok=True)
        tmp = a.out_json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(results, f, indent=1)
        os.replace(tmp, a.out_json)

    if not a.plot_only:
        from skin_collide.core.methods.sphere_set import outside_volume as ov

        version = variational_version()
        load = os.getloadavg()
        print(f"# {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load average "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, E_r estimator: "
              f"union_outside_volume_estimate, {a.samples} samples, seed {a.seed}; variational.py at "
              f"{version}", flush=True)
        for asset in a.assets:
            name, v, t = load_asset(asset)
            vol = ov.mesh_volume(v, t)
            mesh = ov.prepare_mesh(v, t)
            results["assets"][asset] = {"object": name, "vertices": len(v), "triangles": len(t),
                                        "volume": vol}
            print(f"## {asset}: '{name}', {len(v)} vertices, {len(t)} triangles, "
                  f"mesh volume {vol:.6g}", flush=True)
            for n in a.counts:
                for m in a.methods:
                    # Each fit imports the module afresh in its child: note its version now.
                    version = variational_version() if m == "variational" else None
                    r = run_fit(m, v, t, n, a.seed, a.time_limit)
                    cell = {"asset": asset, "method": m, "count": n, "seed": a.seed,
                            "status": r["status"], "limit": a.time_limit,
                            "samples": a.samples, "load": os.getloadavg()[0],
                            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
                    if version is not None:
                        cell["variational_version"] = version
                    if r["status"] in ("done", "stopped"):
                        c, rad = r["centers"], r["radii"]
                        cell.update(seconds=r["seconds"], spheres=int(len(rad)),
                                    **r["extra"], **measure(c, rad, v, t, a.samples, a.seed,
                                                            mesh, vol))
                    else:
                        cell.update(why=r["why"], seconds=r["wall"])
                    results["cells"] = [x for x in results["cells"]
                                        if (x["asset"], x["method"], x["count"])
                                        != (asset, m, n)] + [cell]
                    save()
                    print(f"{asset} N={n} {m}: {cell_text(cell)}"
                          + (f" [variational.py {version}]" if version else ""), flush=True)
    print()
    print(table(results))
    print(compact_table(results))
    print()
    cm = [c for c in results["cells"] if c["asset"] == "cesium_man.glb"
          and c["method"] == "variational"]
    for n, goal in TARGETS.items():
        c = next((c for c in cm if c["count"] == n), None)
        if c is not None and c["status"] == "done":
            ok = c["e_r"] <= goal and not c.get("union_uncovered", c["uncovered"])
            print(f"Cesium Man, {n} spheres: E_r {c['e_r']:.3f} against the goal {goal}: "
                  f"{'reached' if ok else 'NOT reached'}")
        elif c is not None:
            print(f"Cesium Man, {n} spheres: {cell_text(c)}: goal {goal} not reached")
    if a.plot:
        plot(results, a.plot)
        print(f"wrote {a.plot}")
    return 0


registry.register("sphere-sets", "sphere sets (Wang et al. 2006, issue 10): E_r and build time "
                  "of the variational fit against the baselines, table and plot", options, run,
                  smoke={"assets": [scenes.SMOKE], "counts": [4], "samples": 2000,
                         "time_limit": 20.0}, doc=__doc__)
