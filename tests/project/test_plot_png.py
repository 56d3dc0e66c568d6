"""bench/plot_png.py: the numpy rasterizer writes a valid PNG (signature, chunk CRCs,
zlib data of the right size) that shows the lines, markers and text it was asked for;
bench_sphere_sets' coverage checks on a triangle whose corners and middle are or are not
in the balls."""
import struct
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import plot_png  # noqa: E402


def _read_png(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks.append((kind, body))
        pos += 12 + n
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    w, h, depth, colour = struct.unpack(">IIBB", chunks[0][1][:10])
    assert (depth, colour) == (8, 2)
    raw = np.frombuffer(zlib.decompress(chunks[1][1]), np.uint8).reshape(h, 1 + 3 * w)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, 3)


def test_line_plot_writes_a_png_with_its_series(tmp_path):
    out = tmp_path / "p.png"
    img = plot_png.line_plot(
        [{"x": [8, 16, 32], "y": [4.0, 2.0, 1.0], "color": (200, 40, 40), "marker": "o",
          "label": "a"},
         {"x": [8, 32], "y": [3.0, 0.5], "color": (40, 90, 200), "dash": (6, 4), "marker": "^",
          "label": "b"},
         {"x": [16], "y": [1.5], "color": (0, 0, 0), "marker": "s", "line": False, "label": "c"}],
        str(out), title="T", xlabel="N", ylabel="E_r", logx=2, logy=10, size=(640, 400))
    back = _read_png(out)
    assert back.shape == (400, 640, 3) and np.array_equal(back, img)
    red = ((back[..., 0] == 200) & (back[..., 1] == 40)).sum()
    blue = ((back[..., 2] == 200) & (back[..., 1] == 90)).sum()
    assert red > 200 and blue > 100                  # both lines (and the legend) drawn
    assert (back == 0).all(-1).sum() > 500           # axes, ticks and text in black


def test_text_mask_has_ink_for_every_known_character():
    for ch in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.,:-_=+/()<>'":
        assert plot_png.text_mask(ch, 1).any(), ch
    assert plot_png.text_mask("ab", 2).shape == (18, 22)


def test_coverage_checks_on_one_triangle():
    import bench_sphere_sets as b

    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    t = np.array([[0, 1, 2]])
    corners = v.copy()
    # Balls of 0.8 at the corners hold the whole triangle together, none alone.
    assert b.union_coverage(corners, np.full(3, 0.8), v, t)[0] == 0
    assert b.coverage(corners, np.full(3, 0.8), v, t)[0] == 1
    # Balls of 0.6 leave the middle of the long edge out (0.707 from its corners).
    missed, gap = b.union_coverage(corners, np.full(3, 0.6), v, t)
    assert missed == 1 and abs(gap - (np.sqrt(0.5) - 0.6) / np.sqrt(2)) < 1e-12
    # One ball about the circumcentre holds it all.
    assert b.coverage(np.array([[0.5, 0.5, 0]]), np.array([np.sqrt(0.5) + 1e-9]), v, t)[0] == 0
