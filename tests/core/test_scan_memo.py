"""core.scan.memo: a frame is answered from memory only when its inputs are bit for bit
those of the frame answered before; the memo keeps at most its budget, oldest out first."""
import numpy as np

from skin_collide.core.scan.memo import FrameMemo, same_bits


def inputs(seed: int, n: int = 50):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, 3))], [rng.integers(0, n, size=(2 * n, 3)).astype(np.int32)]


def test_only_bit_identical_inputs_hit():
    memo = FrameMemo("key")
    pos, tris = inputs(0)
    assert memo.get(5, pos, tris) is None
    memo.put(5, pos, tris, "answer")
    assert memo.get(5, [pos[0].copy()], [tris[0].copy()]) == "answer"
    other, _ = inputs(9)
    assert memo.get(6, other, tris) is None                    # another frame, moved
    assert memo.get(6, pos, tris) == "answer"                  # held: the last frame's
    moved = pos[0].copy()
    moved[7, 1] = np.nextafter(moved[7, 1], np.inf)            # one ulp
    assert memo.get(5, [moved], tris) is None
    resplit = tris[0].copy()
    resplit[3] = resplit[3, ::-1]                              # a quad split the other way
    assert memo.get(5, pos, [resplit]) is None
    assert memo.get(5, pos + pos, tris + tris) is None         # another set of objects
    assert (memo.hits, memo.misses) == (2, 5)


def test_signed_zeros_and_dtypes_are_told_apart():
    a = np.zeros((4, 3))
    b = a.copy()
    b[2, 0] = -0.0
    assert np.array_equal(a, b) and not same_bits([a], [b])
    assert not same_bits([a], [a.astype(np.float32)])
    assert same_bits([a], [a.copy()])


def test_a_frame_answered_again_replaces_its_answer():
    memo = FrameMemo("key")
    pos, tris = inputs(1)
    memo.put(3, pos, tris, "first")
    other, _ = inputs(2)
    memo.put(3, other, tris, "edited")                         # the pose edited at frame 3
    assert memo.get(3, pos, tris) is None and memo.get(3, other, tris) == "edited"
    assert len(memo) == 1


def test_the_budget_keeps_the_latest_frames():
    pos, tris = inputs(3)
    size = pos[0].nbytes + tris[0].nbytes
    memo = FrameMemo("key", budget=3 * size)
    for f in range(5):
        memo.put(f, pos, tris, f)
    assert len(memo) == 3 and 0 not in memo._frames and memo.get(4, pos, tris) == 4
    memo.get(2, pos, tris)                                     # used: kept the longest
    memo.put(5, pos, tris, 5)
    assert memo.get(2, pos, tris) == 2 and 3 not in memo._frames
    tiny = FrameMemo("key", budget=size - 1)
    tiny.put(0, pos, tris, 0)                                  # larger than the budget
    assert len(tiny) == 0


def test_a_scan_keeps_its_last_frame_only():
    pos, tris = inputs(4)
    memo = FrameMemo(None, frames=1)
    memo.put(1, pos, tris, 1)
    other, _ = inputs(5)
    memo.put(2, other, tris, 2)
    assert len(memo) == 1 and memo.get(3, other, tris) == 2     # frame 3 holds frame 2's pose
    assert memo.get(1, pos, tris) is None
