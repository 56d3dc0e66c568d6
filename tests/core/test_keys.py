"""core.keys: the radix order of bounded integer keys equals numpy's stable argsort."""
import numpy as np
import pytest

from skin_collide.core import keys


@pytest.mark.parametrize("top", [1, 2, 255, 256, 257, 65535, 65536, 65537, 1 << 24,
                                 1 << 33, 1 << 47, 1 << 48, 1 << 50])
@pytest.mark.parametrize("n", [0, 1, 100, 5000, 40000])
def test_argsort_keys_is_the_stable_argsort(top, n):
    rng = np.random.default_rng(top % 1000 + n)
    k = rng.integers(0, top, n)
    assert np.array_equal(keys.argsort_keys(k, top), np.argsort(k, kind="stable"))


def test_argsort_keys_keeps_ties_in_order_across_digits():
    # Many equal keys whose digits differ only above the first 16 bits: a pass that were
    # not stable, or digits taken from the wrong bits, would reorder them.
    rng = np.random.default_rng(3)
    k = (rng.integers(0, 4, 30000) << 20) | rng.integers(0, 3, 30000)
    order = keys.argsort_keys(k, 1 << 22)
    assert np.array_equal(order, np.argsort(k, kind="stable"))
    assert np.all(np.diff(k[order]) >= 0)


def test_argsort_keys_takes_int32_keys():
    k = np.random.default_rng(5).integers(0, 1 << 30, 10000).astype(np.int32)
    assert np.array_equal(keys.argsort_keys(k, 1 << 30), np.argsort(k, kind="stable"))


@pytest.mark.parametrize("top", [1, 2, 1000, 65536, 1 << 20, 1 << 40])
@pytest.mark.parametrize("n", [0, 1, 50, 5000, 200000])
def test_unique_keys_is_np_unique(top, n):
    # Both branches: the mark (possible keys few) and numpy's sort (many).
    rng = np.random.default_rng(top % 997 + n)
    k = rng.integers(0, top, n)
    got = keys.unique_keys(k, top)
    assert got.dtype == np.int64 and np.array_equal(got, np.unique(k))


def test_unique_keys_takes_int32_and_duplicates():
    k = np.array([5, 3, 5, 0, 3, 9], np.int32)
    assert keys.unique_keys(k, 10).tolist() == [0, 3, 5, 9]
    assert keys.unique_keys(k, 1 << 40).tolist() == [0, 3, 5, 9]
