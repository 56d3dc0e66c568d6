"""Float32 boxes of the exact AABB trees (`core.aabb_tree`), rounded outward so that
they enclose the float64 triangles (docs/self_collision.md): per triangle, and per level of
a tree. Shared by the tree's build (which picks each seed pair's separating column at
rest) and its queries.
"""
from __future__ import annotations

import numpy as np

from ..cache import derived
from .self_tree import SelfTree

INF32 = np.float32(np.inf)
#: A box row is 8 float32 in two 16-byte halves, [lo_x, lo_y, lo_z, -inf, -hi_x, -hi_y,
#: -hi_z, -inf]: exchanging lo and -hi (the other side of a test) moves whole halves,
#: a copy of 16-byte parts (`swap_halves`). The columns of the lows and negated highs:
LO = np.array([0, 1, 2])
NEG_HI = np.array([4, 5, 6])
#: The six box faces (the columns that are not pads).
FACES = np.array([0, 1, 2, 4, 5, 6])
#: Column k of a row faces column SWAP[k] of another: lo_a against -hi_b.
SWAP = np.array([4, 5, 6, 7, 0, 1, 2, 3])


def outward_f32(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) float32 arrays with lo <= x <= hi elementwise (x float64, finite).

    Casting rounds to nearest (error at most half a float32 spacing); one step of
    `np.nextafter` away from the cast value is at least that half spacing (proof in
    docs/self_collision.md), so the bounds hold for every finite x that fits float32.
    """
    x32 = x.astype(np.float32)
    return _step_f32(x32, down=True), _step_f32(x32, down=False)


def _step_f32(y: np.ndarray, down: bool) -> np.ndarray:
    """``np.nextafter(y, -inf if down else +inf)`` for a float32 array, bit for bit, by
    integer steps on the bit patterns (libm's nextafter, one call per element, was most
    of a frame's vertex rows). A finite float32 is sign and magnitude: one step away from
    zero adds 1 to its bits read as int32, one step towards zero subtracts 1 (an int32
    holding a negative float is negative, so ``i >> 31`` is -1 there, 0 elsewhere). The
    zeros step across the sign, and non-finite values take `np.nextafter` itself."""
    i = y.view(np.int32)
    sign = i >> 31                                   # 0 (y >= +0) or -1 (y <= -0)
    step = 2 * sign + 1                              # +1 or -1: one step up
    out = (i - step if down else i + step).view(np.float32)
    zero = y == 0
    if zero.any():                                   # +0 down and -0 up cross the sign
        out[zero] = np.nextafter(y[zero], -INF32 if down else INF32)
    if not np.isfinite(y).all():
        bad = ~np.isfinite(y)
        out[bad] = np.nextafter(y[bad], -INF32 if down else INF32)
    return out


#: One box row (8 float32) as a single element, so that rows are gathered and scattered
#: with 1-D indices (several times faster than row indexing of a 2-D array).
ROW = np.dtype((np.void, 32))


def as_rows(x: np.ndarray) -> np.ndarray:
    """A C-contiguous (n, 8) float32 array as (n,) `ROW` elements (a view)."""
    return x.view(ROW).ravel()


def swap_halves(x: np.ndarray) -> np.ndarray:
    """(n, 8) float32 rows with lo and -hi exchanged (``x[:, SWAP]``, bit for bit), from a
    C-contiguous (n, 8) float32 array: one gather of 16-byte parts (0.09 ms for 65k rows;
    a gather of columns took 0.29)."""
    return np.take(x.view(np.complex128), _BACK, axis=1).view(np.float32)


_BACK = np.array([1, 0])


def triangle_boxes(positions: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(T, 8) float32 rows [lo, -inf, -hi, -inf] enclosing each triangle's float64
    vertices (positions (V, 3) float64, tris (T, 3) int)."""
    # Per vertex its own row, then per triangle the min of its three vertices' rows:
    # one gather of 3T rows, first vertices first, so that the two mins run over
    # contiguous (T, 8) blocks (a min over rows strided by three is eight times slower).
    idx = np.asarray(tris, np.intp).T.ravel()
    return min_of_three(vertex_rows(positions), idx)


def vertex_rows(positions: np.ndarray, pad: float = 0.0) -> np.ndarray:
    """(V, 8) float32 rows [lo, -inf, -hi, -inf] of each float64 vertex (V, 3), or, with
    `pad` > 0, of the vertex's box inflated by `pad`: lo rounded outward from the float64
    ``x - pad``, hi from ``x + pad``. Rounding to nearest and outward are monotone, so the
    min (max) of a triangle's three rows is bit for bit its float64 box's lo - pad
    (hi + pad) rounded outward: what `core.query.near_pairs`'s candidates need
    (docs/clearance.md, "Candidates")."""
    if pad:
        lo_v, hi_v = outward_f32(positions - pad)[0], outward_f32(positions + pad)[1]
    else:
        lo_v, hi_v = outward_f32(positions)
    v = np.empty((lo_v.shape[0], 8), np.float32)
    v[:, 0:3] = lo_v
    np.negative(hi_v, out=v[:, 4:7])
    v[:, 3::4] = -INF32
    return v


# A row of 8 comparison bytes reads as one uint64 that equals _ALL iff all 8 hold.
_ALL = np.uint64(0x0101010101010101)


def boxes_overlap(xa: np.ndarray, xb_swapped: np.ndarray) -> np.ndarray:
    """(...,) bool from (..., 8) float32 rows [lo, pad, -hi, pad] and swapped rows: every
    ``lo_a - hi_b <= 0`` and ``lo_b - hi_a <= 0`` (a float32 sum's sign is exact; the pads
    are -inf in both, so their sums are -inf <= 0). The same test serves any rows of
    lows and negated highs in two 16-byte halves (`slabs`)."""
    return _no_positive(xa + xb_swapped)


def _no_positive(s: np.ndarray) -> np.ndarray:
    """(...,) bool: every entry of the (..., 8) float32 sums is <= 0 (the boxes overlap)."""
    return (s <= 0).view(np.uint64)[..., 0] == _ALL


def min_of_three(v: np.ndarray, idx: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """(n, 8) float32: row k the min of rows ``idx[k]``, ``idx[n + k]``, ``idx[2n + k]`` of
    v (V, 8) (idx (3n,) intp), written into `out` when given."""
    g = np.take(as_rows(v), idx).view(np.float32).reshape(3, -1, 8)
    out = np.minimum(g[0], g[1], out=out)
    np.minimum(out, g[2], out=out)
    return out


def stacked_boxes(tree: SelfTree, tri_box: np.ndarray) -> np.ndarray:
    """(2**(H+1), 8) float32 rows of every level in one array, in heap order: node k of
    level l is row ``2**l + k`` (row 0 is unused), so a level is the contiguous slice
    ``[2**l, 2**(l+1))`` and one pass can test node pairs of every level
    (`query._seed_pass`). `tri_box` (T, 8) are the triangles' rows, [lo, -inf, -hi,
    -inf] or their swapped form [-hi, -inf, lo, -inf] (either: empty slots are +inf in
    the six face columns, and each level is the min of its children, which commutes
    with swapping columns). The min of two rows is exact, so parents enclose children."""
    S = tree.n_slots
    out = np.empty((2 * S, 8), np.float32)
    leaf = as_rows(out[S:])
    leaf[tree.tri_slot] = as_rows(np.ascontiguousarray(tri_box))
    return _fill_levels(tree, out)


def frame_stack(tree: SelfTree, positions: np.ndarray, tris: np.ndarray,
                pad: float = 0.0) -> np.ndarray:
    """`stacked_boxes(tree, triangle_boxes(positions, tris))`, bit for bit, made in slot
    order: each leaf row is the min of its triangle's three vertex rows, gathered by slot
    (`slot_corners`) and written in place (a scatter of the triangles' rows into their
    slots cost as much as the whole gather). positions (V, 3) float64, tris (T, 3) intp,
    or (T, k) the corners of a tree of faces (`core.query.near_faces`: a leaf's box
    holds its k corners). `pad` >= 0: the boxes inflated by it (`vertex_rows`)."""
    S = tree.n_slots
    out = np.empty((2 * S, 8), np.float32)
    tris = np.asarray(tris, np.intp)
    k = tris.shape[1]
    idx = np.take(tris.ravel(), slot_corners(tree, k))
    v = vertex_rows(positions, pad)
    leaf = min_of_three(v, idx[:3 * S], out=out[S:])
    for c in range(3, k):                   # a face's further corners
        np.minimum(leaf, np.take(as_rows(v), idx[c * S:(c + 1) * S]).view(np.float32)
                   .reshape(-1, 8), out=leaf)
    return _fill_levels(tree, out)


def _fill_levels(tree: SelfTree, out: np.ndarray) -> np.ndarray:
    """Empty slots and row 0 set to `_EMPTY_ROW`, then every level above the leaves as the
    min of its two children (`out` (2S, 8) float32, leaves filled)."""
    out[0] = _EMPTY_ROW
    if tree.n_triangles < tree.n_slots:
        as_rows(out[tree.n_slots:])[empty_slots(tree)] = as_rows(_EMPTY_ROW[None])[0]
    # A level's rows are the min of its children's, left and right children interleaved.
    # numpy runs a min over every other row 8 floats at a time; on the large levels the
    # two children are first copied apart (one transposing copy of 32-byte rows) so that
    # the min runs over two contiguous blocks (MakeHuman 27k, all levels: 0.24 -> 0.15 ms).
    split = np.empty((tree.n_slots, 8), np.float32)
    for level in range(tree.height - 1, -1, -1):
        n = 1 << level
        child = out[2 * n:4 * n]
        if n >= _SPLIT_ROWS:
            apart = split[:2 * n]
            as_rows(apart).reshape(2, n)[...] = as_rows(child).reshape(n, 2).T
            np.minimum(apart[:n], apart[n:], out=out[n:2 * n])
        else:
            np.minimum(child[0::2], child[1::2], out=out[n:2 * n])
    return out


#: Levels of at least this many rows are refitted from their children copied apart.
_SPLIT_ROWS = 128


def slot_corners(tree: SelfTree, k: int = 3) -> np.ndarray:
    """(k S,) intp flat indices into a (T, k) corner array: corner c of the leaf in slot
    s at ``c S + s`` (an empty slot takes leaf 0's, overwritten by `_fill_levels`). Made
    once per k, kept on the tree."""
    def make() -> np.ndarray:
        t = np.maximum(tree.slot_tri, 0)
        return (k * t[None, :] + np.arange(k)[:, None]).ravel()

    return derived(tree, f"slot_corners_{k}", make)


#: The row of an empty slot: never overlaps (+inf plus anything not -inf is +inf > 0).
_EMPTY_ROW = np.array([np.inf] * 3 + [-np.inf] + [np.inf] * 3 + [-np.inf], np.float32)


def empty_slots(tree: SelfTree) -> np.ndarray:
    """(S - T,) intp the leaf slots that hold no triangle (made once, kept on the tree)."""
    return derived(tree, "empty_slots", lambda: np.flatnonzero(tree.slot_tri < 0))


def level_boxes(tree: SelfTree, tri_box: np.ndarray) -> list[np.ndarray]:
    """Per level 0..H, (2**l, 8) float32 rows [lo, -inf, -hi, -inf] (empty = +inf in the
    six face columns): views of `stacked_boxes`."""
    return levels_of(tree, stacked_boxes(tree, tri_box))


def levels_of(tree: SelfTree, X: np.ndarray) -> list[np.ndarray]:
    """The levels 0..H of a stacked array X (2**(H+1), 8) (`stacked_boxes`,
    `frame_stack`) as views: level l is rows ``[2**l, 2**(l+1))``."""
    return [X[1 << level:2 << level] for level in range(tree.height + 1)]
