"""Samples stacked by size, so that a statistic of many samples is taken along the rows of
a few blocks: numpy's reductions along a row give what they give for the row alone, so
each sample's figures are the ones it would have had by itself."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

#: Values a block holds at most: a few of its temporaries (8 bytes a value) stay in the CPU's
#: cache, where a million-value block would make each one a fresh 8 MB allocation.
BLOCK_VALUES = 2**15


def by_size(samples: Sequence[NDArray[np.float64]]) -> Iterator[tuple[list[int], NDArray[np.float64]]]:
    """(the indices of some samples of one size, their values as one row each): every sample
    once, in blocks of one size holding at most BLOCK_VALUES values (or one sample)."""
    sizes = [x.size for x in samples]
    for size in sorted(set(sizes)):
        rows = [i for i, n in enumerate(sizes) if n == size]
        step = max(1, BLOCK_VALUES // max(size, 1))
        for start in range(0, len(rows), step):
            chosen = rows[start:start + step]
            # one copy of the row's values, not a view of each sample stacked (np.stack: 3x the time)
            yield chosen, np.concatenate([samples[i] for i in chosen]).reshape(len(chosen), size)


def median_rows(block: NDArray[np.float64]) -> NDArray[np.float64]:
    """np.median along the rows of ``block``, the same figures (the mean of the middle one or
    two order statistics; NaN for a row holding a NaN or none), without np.median's import
    of numpy.ma (about 30 ms of a command's start-up)."""
    rows, n = block.shape
    if n == 0:
        return np.full(rows, math.nan)
    low, high = (n - 1) // 2, n // 2
    middle = np.partition(block, [low, high], axis=1)[:, low:high + 1].mean(axis=1)
    found: NDArray[np.float64] = np.where(np.isnan(block).any(axis=1), math.nan, middle)
    return found
