"""A small line-plot rasterizer and PNG writer in numpy + zlib (the project has no
matplotlib): axes with linear or logarithmic scales, ticks, grid, a legend, dashed lines,
markers and a 5x7 bitmap font of our own.

    line_plot([{"x": [...], "y": [...], "color": (r, g, b), "dash": (on, off) or None,
                "marker": "o" | "s" | "^" | "x" | None, "label": "...",
                "line": True (False: markers only)}, ...],
              "out.png", title=..., xlabel=..., ylabel=..., logx=2, logy=10)
"""
from __future__ import annotations

import math
import struct
import zlib

import numpy as np

# 5 columns x 9 rows per glyph (rows 7-8: descenders); 'X' = ink. Unknown characters
# draw as a box.
_GLYPHS = {
    "A": ".XXX.|X...X|X...X|XXXXX|X...X|X...X|X...X",
    "B": "XXXX.|X...X|X...X|XXXX.|X...X|X...X|XXXX.",
    "C": ".XXX.|X...X|X....|X....|X....|X...X|.XXX.",
    "D": "XXXX.|X...X|X...X|X...X|X...X|X...X|XXXX.",
    "E": "XXXXX|X....|X....|XXXX.|X....|X....|XXXXX",
    "F": "XXXXX|X....|X....|XXXX.|X....|X....|X....",
    "G": ".XXX.|X...X|X....|X.XXX|X...X|X...X|.XXXX",
    "H": "X...X|X...X|X...X|XXXXX|X...X|X...X|X...X",
    "I": ".XXX.|..X..|..X..|..X..|..X..|..X..|.XXX.",
    "J": "..XXX|...X.|...X.|...X.|...X.|X..X.|.XX..",
    "K": "X...X|X..X.|X.X..|XX...|X.X..|X..X.|X...X",
    "L": "X....|X....|X....|X....|X....|X....|XXXXX",
    "M": "X...X|XX.XX|X.X.X|X.X.X|X...X|X...X|X...X",
    "N": "X...X|X...X|XX..X|X.X.X|X..XX|X...X|X...X",
    "O": ".XXX.|X...X|X...X|X...X|X...X|X...X|.XXX.",
    "P": "XXXX.|X...X|X...X|XXXX.|X....|X....|X....",
    "Q": ".XXX.|X...X|X...X|X...X|X.X.X|X..X.|.XX.X",
    "R": "XXXX.|X...X|X...X|XXXX.|X.X..|X..X.|X...X",
    "S": ".XXXX|X....|X....|.XXX.|....X|....X|XXXX.",
    "T": "XXXXX|..X..|..X..|..X..|..X..|..X..|..X..",
    "U": "X...X|X...X|X...X|X...X|X...X|X...X|.XXX.",
    "V": "X...X|X...X|X...X|X...X|X...X|.X.X.|..X..",
    "W": "X...X|X...X|X...X|X.X.X|X.X.X|X.X.X|.X.X.",
    "X": "X...X|X...X|.X.X.|..X..|.X.X.|X...X|X...X",
    "Y": "X...X|X...X|.X.X.|..X..|..X..|..X..|..X..",
    "Z": "XXXXX|....X|...X.|..X..|.X...|X....|XXXXX",
    "a": ".....|.....|.XXX.|....X|.XXXX|X...X|.XXXX",
    "b": "X....|X....|XXXX.|X...X|X...X|X...X|XXXX.",
    "c": ".....|.....|.XXX.|X....|X....|X...X|.XXX.",
    "d": "....X|....X|.XXXX|X...X|X...X|X...X|.XXXX",
    "e": ".....|.....|.XXX.|X...X|XXXXX|X....|.XXX.",
    "f": "..XX.|.X...|XXXX.|.X...|.X...|.X...|.X...",
    "g": ".....|.....|.XXXX|X...X|X...X|X...X|.XXXX|....X|.XXX.",
    "h": "X....|X....|XXXX.|X...X|X...X|X...X|X...X",
    "i": "..X..|.....|.XX..|..X..|..X..|..X..|.XXX.",
    "j": "...X.|.....|..XX.|...X.|...X.|...X.|...X.|X..X.|.XX..",
    "k": "X....|X....|X..X.|X.X..|XX...|X.X..|X..X.",
    "l": ".XX..|..X..|..X..|..X..|..X..|..X..|.XXX.",
    "m": ".....|.....|XX.X.|X.X.X|X.X.X|X.X.X|X.X.X",
    "n": ".....|.....|XXXX.|X...X|X...X|X...X|X...X",
    "o": ".....|.....|.XXX.|X...X|X...X|X...X|.XXX.",
    "p": ".....|.....|XXXX.|X...X|X...X|X...X|XXXX.|X....|X....",
    "q": ".....|.....|.XXXX|X...X|X...X|X...X|.XXXX|....X|....X",
    "r": ".....|.....|X.XX.|XX..X|X....|X....|X....",
    "s": ".....|.....|.XXXX|X....|.XXX.|....X|XXXX.",
    "t": ".X...|.X...|XXXX.|.X...|.X...|.X..X|..XX.",
    "u": ".....|.....|X...X|X...X|X...X|X..XX|.XX.X",
    "v": ".....|.....|X...X|X...X|X...X|.X.X.|..X..",
    "w": ".....|.....|X...X|X...X|X.X.X|X.X.X|.X.X.",
    "x": ".....|.....|X...X|.X.X.|..X..|.X.X.|X...X",
    "y": ".....|.....|X...X|X...X|X...X|X...X|.XXXX|....X|.XXX.",
    "z": ".....|.....|XXXXX|...X.|..X..|.X...|XXXXX",
    "0": ".XXX.|X...X|X..XX|X.X.X|XX..X|X...X|.XXX.",
    "1": "..X..|.XX..|..X..|..X..|..X..|..X..|.XXX.",
    "2": ".XXX.|X...X|....X|...X.|..X..|.X...|XXXXX",
    "3": "XXXXX|...X.|..X..|...X.|....X|X...X|.XXX.",
    "4": "...X.|..XX.|.X.X.|X..X.|XXXXX|...X.|...X.",
    "5": "XXXXX|X....|XXXX.|....X|....X|X...X|.XXX.",
    "6": "..XX.|.X...|X....|XXXX.|X...X|X...X|.XXX.",
    "7": "XXXXX|....X|...X.|..X..|.X...|.X...|.X...",
    "8": ".XXX.|X...X|X...X|.XXX.|X...X|X...X|.XXX.",
    "9": ".XXX.|X...X|X...X|.XXXX|....X|...X.|.XX..",
    " ": ".....|.....|.....|.....|.....|.....|.....",
    ".": ".....|.....|.....|.....|.....|.XX..|.XX..",
    ",": ".....|.....|.....|.....|.XX..|..X..|.X...",
    ":": ".....|.XX..|.XX..|.....|.XX..|.XX..|.....",
    "-": ".....|.....|.....|XXXXX|.....|.....|.....",
    "_": ".....|.....|.....|.....|.....|.....|.....|XXXXX",
    "=": ".....|.....|XXXXX|.....|XXXXX|.....|.....",
    "+": ".....|..X..|..X..|XXXXX|..X..|..X..|.....",
    "/": "....X|....X|...X.|..X..|.X...|X....|X....",
    "(": "...X.|..X..|.X...|.X...|.X...|..X..|...X.",
    ")": ".X...|..X..|...X.|...X.|...X.|..X..|.X...",
    "<": "...X.|..X..|.X...|X....|.X...|..X..|...X.",
    ">": ".X...|..X..|...X.|....X|...X.|..X..|.X...",
    "'": "..X..|..X..|.X...|.....|.....|.....|.....",
}
_BOX = "XXXXX|X...X|X...X|X...X|X...X|X...X|XXXXX"
GLYPH_W, GLYPH_H, ADVANCE = 5, 9, 6


def _glyph(ch: str) -> np.ndarray:
    rows = _GLYPHS.get(ch, _BOX).split("|")
    rows += ["....."] * (GLYPH_H - len(rows))
    return np.array([[c == "X" for c in r] for r in rows], dtype=bool)


def text_mask(s: str, scale: int = 2) -> np.ndarray:
    """(h, w) bool ink of string `s` at an integer `scale`."""
    if not s:
        return np.zeros((GLYPH_H * scale, 0), dtype=bool)
    m = np.zeros((GLYPH_H, ADVANCE * len(s) - 1), dtype=bool)
    for i, ch in enumerate(s):  # loop over characters
        m[:, i * ADVANCE:i * ADVANCE + GLYPH_W] = _glyph(ch)
    return np.kron(m, np.ones((scale, scale), dtype=bool))


class Canvas:
    """An RGB image (H, W, 3) uint8 with drawing helpers; (x, y) in pixels, y down."""

    def __init__(self, width: int, height: int, background=(255, 255, 255)):
        self.img = np.empty((height, width, 3), dtype=np.uint8)
        self.img[:] = background
        self.w, self.h = width, height

    def _plot(self, x: np.ndarray, y: np.ndarray, color) -> None:
        x = np.rint(x).astype(np.int64)
        y = np.rint(y).astype(np.int64)
        ok = (x >= 0) & (x < self.w) & (y >= 0) & (y < self.h)
        self.img[y[ok], x[ok]] = color

    def rect(self, x0, y0, x1, y1, color) -> None:
        """Filled axis-aligned rectangle (inclusive pixel bounds)."""
        x0, x1 = sorted((int(round(x0)), int(round(x1))))
        y0, y1 = sorted((int(round(y0)), int(round(y1))))
        self.img[max(y0, 0):max(min(y1 + 1, self.h), 0), max(x0, 0):max(min(x1 + 1, self.w), 0)] = color

    def disc(self, cx, cy, r, color) -> None:
        k = int(math.ceil(r))
        dy, dx = np.mgrid[-k:k + 1, -k:k + 1]
        m = dx * dx + dy * dy <= r * r + 0.25
        self._plot(cx + dx[m], cy + dy[m], color)

    def line(self, x0, y0, x1, y1, color, width: float = 1.0, dash=None, phase: float = 0.0
             ) -> float:
        """A line of `width` pixels, dashed with (on, off) pixel lengths from `phase`.
        Returns the phase at the end (to continue a dash pattern along a polyline)."""
        L = math.hypot(x1 - x0, y1 - y0)
        n = max(2, int(math.ceil(L * 2)) + 1)
        t = np.linspace(0.0, 1.0, n)
        s = phase + t * L
        if dash is not None:
            keep = np.mod(s, dash[0] + dash[1]) < dash[0]
            t = t[keep]
        px, py = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
        r = width / 2.0
        if r <= 0.5:
            self._plot(px, py, color)
        else:
            k = int(math.ceil(r))
            dy, dx = np.mgrid[-k:k + 1, -k:k + 1]
            m = dx * dx + dy * dy <= r * r
            ox, oy = dx[m], dy[m]
            self._plot((px[:, None] + ox[None]).ravel(), (py[:, None] + oy[None]).ravel(), color)
        return phase + L

    def polyline(self, xs, ys, color, width=2.0, dash=None) -> None:
        phase = 0.0
        for i in range(len(xs) - 1):  # loop over segments
            phase = self.line(xs[i], ys[i], xs[i + 1], ys[i + 1], color, width, dash, phase)

    def marker(self, x, y, kind: str | None, color, size: float = 5.0) -> None:
        if kind is None:
            return
        if kind == "o":
            self.disc(x, y, size, color)
        elif kind == "s":
            self.rect(x - size + 1, y - size + 1, x + size - 1, y + size - 1, color)
        elif kind == "^":
            k = int(math.ceil(size * 1.2))
            dy, dx = np.mgrid[-k:k + 1, -k:k + 1]
            # Upward triangle: apex at (0, -k), base at y = +0.8k.
            m = (dy <= 0.8 * k) & (np.abs(dx) <= (dy + k) * 0.6)
            self._plot(x + dx[m], y + dy[m], color)
        elif kind == "x":
            self.line(x - size, y - size, x + size, y + size, color, 2.0)
            self.line(x - size, y + size, x + size, y - size, color, 2.0)

    def text(self, x, y, s: str, color=(0, 0, 0), scale: int = 2, anchor: str = "lt",
             vertical: bool = False) -> tuple[int, int]:
        """Draw `s` with its anchor point at (x, y): anchor[0] in l/c/r (horizontal),
        anchor[1] in t/m/b (vertical). `vertical` reads bottom to top. Returns (w, h)."""
        m = text_mask(s, scale)
        if vertical:
            m = np.rot90(m)
        h, w = m.shape
        x0 = x - {"l": 0, "c": w / 2, "r": w}[anchor[0]]
        y0 = y - {"t": 0, "m": h / 2, "b": h}[anchor[1]]
        yy, xx = np.nonzero(m)
        self._plot(x0 + xx, y0 + yy, color)
        return w, h


def write_png(path: str, img: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 RGB image as a PNG (8-bit, filter 0, zlib level 9)."""
    img = np.ascontiguousarray(img, dtype=np.uint8)
    h, w, _ = img.shape
    raw = np.zeros((h, 1 + 3 * w), dtype=np.uint8)
    raw[:, 1:] = img.reshape(h, 3 * w)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n"
           + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw.tobytes(), 9))
           + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(png)


def _ticks(lo: float, hi: float, log_base: int | None) -> list[float]:
    if log_base == 2:
        return [2.0 ** k for k in range(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)
                if lo <= 2.0 ** k <= hi]
    if log_base == 10:
        out = []
        for d in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
            for m in (1, 2, 5):
                v = m * 10.0 ** d
                if lo <= v <= hi:
                    out.append(v)
        return out
    step = 10.0 ** math.floor(math.log10((hi - lo) / 4))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (m * step) <= 6:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return list(np.arange(first, hi + 1e-9 * step, step))


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1 and abs(v - round(v)) < 1e-9:
        return str(int(round(v)))
    return f"{v:.3g}"


def line_plot(series: list[dict], path: str, title: str = "", xlabel: str = "",
              ylabel: str = "", logx: int | None = None, logy: int | None = None,
              size: tuple[int, int] = (1160, 620)) -> np.ndarray:
    """Draw the series and write the PNG to `path`; returns the image."""
    W, H = size
    cv = Canvas(W, H)
    legend_w = 380
    left, right, top, bottom = 90, W - legend_w, 50, H - 70
    xs = np.concatenate([np.asarray(s["x"], float) for s in series])
    ys = np.concatenate([np.asarray(s["y"], float) for s in series])

    def span(v, log):
        lo, hi = float(v.min()), float(v.max())
        if log:
            return lo / 1.25, hi * 1.25
        pad = 0.05 * (hi - lo or 1.0)
        return lo - pad, hi + pad

    xlo, xhi = span(xs, logx)
    ylo, yhi = span(ys, logy)

    def tx(v):
        v = np.asarray(v, float)
        if logx:
            return left + (np.log(v) - math.log(xlo)) / (math.log(xhi) - math.log(xlo)) * (right - left)
        return left + (v - xlo) / (xhi - xlo) * (right - left)

    def ty(v):
        v = np.asarray(v, float)
        if logy:
            return bottom - (np.log(v) - math.log(ylo)) / (math.log(yhi) - math.log(ylo)) * (bottom - top)
        return bottom - (v - ylo) / (yhi - ylo) * (bottom - top)

    grid, ink = (225, 225, 225), (0, 0, 0)
    for v in _ticks(xlo, xhi, logx):
        x = float(tx(v))
        cv.line(x, top, x, bottom, grid)
        cv.line(x, bottom, x, bottom + 6, ink)
        cv.text(x, bottom + 10, _fmt(v), anchor="ct")
    for v in _ticks(ylo, yhi, logy):
        y = float(ty(v))
        cv.line(left, y, right, y, grid)
        cv.line(left - 6, y, left, y, ink)
        cv.text(left - 10, y, _fmt(v), anchor="rm")
    cv.line(left, top, left, bottom, ink, 1)
    cv.line(left, bottom, right, bottom, ink, 1)
    cv.line(right, top, right, bottom, ink, 1)
    cv.line(left, top, right, top, ink, 1)
    if title:
        cv.text((left + right) / 2, 14, title, anchor="ct")
    if xlabel:
        cv.text((left + right) / 2, H - 14, xlabel, anchor="cb")
    if ylabel:
        cv.text(16, (top + bottom) / 2, ylabel, anchor="lm", vertical=True)
    for s in series:
        px, py = tx(s["x"]), ty(s["y"])
        if s.get("line", True):
            cv.polyline(px, py, s["color"], 2.0, s.get("dash"))
        for x, y in zip(px, py):
            cv.marker(x, y, s.get("marker"), s["color"])
    # Legend: a line sample with the marker, then the label.
    lx, ly = right + 16, top + 4
    for s in series:
        if s.get("line", True):
            cv.line(lx, ly + 8, lx + 40, ly + 8, s["color"], 2.0, s.get("dash"))
        cv.marker(lx + 20, ly + 8, s.get("marker"), s["color"], 4.0)
        cv.text(lx + 50, ly + 8, s.get("label", ""), anchor="lm")
        ly += 26
    write_png(path, cv.img)
    return cv.img
