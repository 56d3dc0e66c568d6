"""Timing and statistics for every scenario: timers, warm-up and repeats, medians, min and
max, ratios (per frame, then their median), Blender's own bar (`BVHTree.FromObject` rebuilt
and overlapped, measured in the same process on the same depsgraph), and the markdown rows
the scenarios print. No scenario computes its own median or builds its own timer."""
from __future__ import annotations

import contextlib
import math
import statistics
import time
from typing import Callable, Iterable


def sleep(seconds: float) -> None:
    time.sleep(seconds)


def now() -> float:
    """A start time for `ms_since`."""
    return time.perf_counter()


def ms_since(t0: float) -> float:
    """Milliseconds since `t0` (`now()`)."""
    return (time.perf_counter() - t0) * 1000.0


def seconds_since(t0: float) -> float:
    """Seconds since `t0` (`now()`)."""
    return time.perf_counter() - t0


def cpu_now() -> float:
    """The process's CPU time, for `cpu_ms_since`."""
    return time.process_time()


def cpu_ms_since(c0: float) -> float:
    return (time.process_time() - c0) * 1000.0


class Timer:
    """`with Timer() as t: ...` then `t.ms` (wall clock); `t.s` in seconds."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.ms = float("nan")
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self.t0
        self.ms = self.s * 1000.0
        return False


def timed(fn: Callable, *args, **kwargs):
    """(fn's result, its wall-clock ms)."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, (time.perf_counter() - t0) * 1000.0


def timed_s(fn: Callable, *args, **kwargs):
    """(fn's result, its wall-clock seconds)."""
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def best_of(repeat: int, fn: Callable, *args, **kwargs):
    """Calls fn `repeat` times: (last result, smallest ms)."""
    best, out = math.inf, None
    for _ in range(repeat):
        out, ms = timed(fn, *args, **kwargs)
        best = min(best, ms)
    return out, best


def median_of(repeat: int, fn: Callable, *args, warmup: int = 0, **kwargs):
    """`warmup` untimed calls, then `repeat` timed ones: (last result, median ms)."""
    for _ in range(warmup):
        fn(*args, **kwargs)
    out, ms = None, []
    for _ in range(repeat):
        out, t = timed(fn, *args, **kwargs)
        ms.append(t)
    return out, median(ms)


def median(values: Iterable[float]) -> float:
    """The median (mean of the two middle values for an even count); NaN when empty."""
    v = list(values)
    return float(statistics.median(v)) if v else float("nan")


def percentiles(values: Iterable[float], qs=(25, 75)) -> list[float]:
    """numpy's percentiles (linear interpolation) of the values."""
    import numpy as np

    return [float(x) for x in np.percentile(list(values), list(qs))]


def mean(values: Iterable[float]) -> float:
    v = list(values)
    return float(statistics.fmean(v)) if v else float("nan")


def geomean(values: Iterable[float]) -> float:
    v = list(values)
    return float(math.exp(statistics.fmean(math.log(x) for x in v))) if v else float("nan")


def ratio(num: float, den: float, floor: float = 1e-9) -> float:
    return num / max(den, floor)


def median_ratio(nums: Iterable[float], dens: Iterable[float]) -> float:
    """The median of the per-frame ratios num / den."""
    return median(n / d for n, d in zip(nums, dens))


def medians(rows: dict[str, list]) -> dict[str, float]:
    """Per key, the median of its list (NaN for an empty one)."""
    return {k: median(v) for k, v in rows.items()}


class Samples:
    """Per-frame samples by key: `add(key=value, ...)`, then medians, min, max, ratios."""

    def __init__(self, *keys: str):
        self.rows: dict[str, list] = {k: [] for k in keys}

    def add(self, /, **values) -> None:
        for k, v in values.items():
            self.rows.setdefault(k, []).append(v)

    def __getitem__(self, key: str) -> list:
        return self.rows.setdefault(key, [])

    def __len__(self) -> int:
        return max((len(v) for v in self.rows.values()), default=0)

    def last(self, key: str):
        return self.rows[key][-1]

    def median(self, key: str) -> float:
        return median(self.rows.get(key, []))

    def min(self, key: str) -> float:
        return float(min(self.rows[key]))

    def max(self, key: str) -> float:
        return float(max(self.rows[key]))

    def medians(self) -> dict[str, float]:
        return medians(self.rows)

    def ratio(self, num: str, den: str) -> float:
        """The median over frames of num / den."""
        return median_ratio(self.rows[num], self.rows[den])


def alternate(k: int, pair=(0, 1)):
    """The order of two runs on the k-th step: A then B on odd steps, B then A on even."""
    return pair if k % 2 else pair[::-1]


# Blender's bar: its BVH trees rebuilt from the evaluated objects and overlapped.

def blender_overlap(meshes, dg) -> tuple[float, int]:
    """`BVHTree.FromObject` of each evaluated mesh and the overlap of the first tree with
    the last (a self-overlap for one mesh): (ms, Blender's triangle pairs)."""
    from mathutils.bvhtree import BVHTree

    t0 = time.perf_counter()
    trees = [BVHTree.FromObject(m, dg) for m in meshes]
    n = len(trees[0].overlap(trees[-1]))
    return (time.perf_counter() - t0) * 1000.0, n


def blender_world_overlap(positions, triangle_lists) -> tuple[float, int]:
    """`BVHTree.FromPolygons` of two meshes' world positions (lists) and their overlap:
    (ms, pairs). The conversions to lists are the caller's (outside the timing)."""
    from mathutils.bvhtree import BVHTree

    t0 = time.perf_counter()
    wa = BVHTree.FromPolygons(positions[0], triangle_lists[0], all_triangles=True)
    wb = BVHTree.FromPolygons(positions[1], triangle_lists[1], all_triangles=True)
    n = len(wa.overlap(wb))
    return (time.perf_counter() - t0) * 1000.0, n


# Printing rows as the scripts always have.

def row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def print_row(*cells) -> None:
    print(row(*cells))


def print_head(*cells) -> None:
    """A markdown table's header and its rule."""
    print(row(*cells))
    print("|" + "---|" * len(cells))


def print_columns(head: list, lines, results: list[dict], ratios=()) -> None:
    """A table with one column per result: `lines` are (label, key, format) rows, `ratios`
    (label, numerator key, denominator key) rows printed as `{:.1f}x`."""
    print_head(*head)
    for label, key, fmt in lines:
        print_row(label, *[fmt.format(r[key]) for r in results])
    for label, num, den in ratios:
        print_row(label, *[f"{ratio(r[num], r[den]):.1f}x" for r in results])


@contextlib.contextmanager
def profiled(enabled: bool, lines: int = 35):
    """A cProfile over the block (when `enabled`), its cumulative stats printed after."""
    if not enabled:
        yield None
        return
    import cProfile
    import pstats

    prof = cProfile.Profile()
    try:
        yield prof
    finally:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(lines)
