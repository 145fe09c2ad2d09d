"""The in-place row moves of the kernel solver's row cache (``compact_rows`` narrows
rows, ``spread_rows`` widens them, both inside one flat buffer): equal to the same moves
through a copy, on random layouts where sources and destinations overlap."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn_safescreen.problems._box_qp_fast import compact_rows, spread_rows


def _layout(rng):
    capacity, width = int(rng.integers(1, 14)), int(rng.integers(1, 14))
    buffer = rng.standard_normal(capacity * width + int(rng.integers(0, 40)))
    n_rows = int(rng.integers(0, capacity + 1))
    src = np.sort(rng.choice(capacity, n_rows, replace=False)).astype(np.int64)
    return buffer, capacity, width, src


@pytest.mark.parametrize("seed", range(100))
def test_compact_rows_equals_a_gather_through_a_copy(seed):
    rng = np.random.default_rng(seed)
    buffer, capacity, width, src = _layout(rng)
    cols = np.sort(rng.choice(width, int(rng.integers(1, width + 1)), replace=False))
    cols = cols.astype(np.int64)
    expected = buffer[:capacity * width].reshape(capacity, width)[np.ix_(src, cols)]
    compact_rows(buffer, src, width, cols)
    assert np.array_equal(buffer[:expected.size].reshape(expected.shape), expected)


@pytest.mark.parametrize("seed", range(100))
def test_spread_rows_equals_a_move_through_a_copy(seed):
    rng = np.random.default_rng(seed)
    buffer, capacity, width, src = _layout(rng)
    wider = width + int(rng.integers(0, 8))
    if src.size and (src.size - 1) * wider + width > buffer.size:
        wider = width  # the destination must fit in the buffer
    expected = buffer[:capacity * width].reshape(capacity, width)[src].copy()
    spread_rows(buffer, src, width, wider)
    for k in range(src.size):
        assert np.array_equal(buffer[k * wider:k * wider + width], expected[k])


def test_row_moves_refuse_what_they_cannot_do_in_place():
    buffer = np.zeros(20)
    with pytest.raises(ValueError, match="increase strictly"):
        compact_rows(buffer, np.array([2, 1]), 5, np.arange(3))
    with pytest.raises(ValueError, match="increase strictly"):
        compact_rows(buffer, np.array([0, 1]), 5, np.array([3, 3]))
    with pytest.raises(ValueError, match="increase strictly"):
        spread_rows(buffer, np.array([1, 1]), 5, 6)
    with pytest.raises(ValueError, match="narrow"):
        spread_rows(buffer, np.array([0, 1]), 5, 4)
    with pytest.raises(IndexError):
        spread_rows(buffer, np.array([0, 3]), 5, 16)
    with pytest.raises(IndexError):
        compact_rows(buffer, np.array([0, 4]), 5, np.arange(3))
