"""Collision episodes from per-frame pair counts (pure)."""
from skin_collide.core.episodes import episodes, worst_frames


def test_runs_of_consecutive_colliding_frames():
    frames = [1, 2, 3, 4, 5, 6, 7, 8, 10, 11]
    counts = [0, 3, 5, 0, 1, 0, 2, 4, 7, 1]
    runs = episodes(frames, counts)
    # 8 and 10 are both colliding but 9 was not scanned: a gap ends the run.
    assert runs == [(2, 3), (5, 5), (7, 8), (10, 11)]
    assert worst_frames(runs, frames, counts) == [3, 5, 8, 10]


def test_unordered_input_ties_and_nothing():
    assert episodes([3, 1, 2], [4, 4, 0]) == [(1, 1), (3, 3)]
    assert worst_frames([(1, 3)], [3, 1, 2], [4, 4, 4]) == [1]
    assert episodes([1, 2], [0, 0]) == [] and episodes([], []) == []
