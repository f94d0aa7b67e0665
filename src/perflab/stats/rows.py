"""Samples stacked by size, so that a statistic of many samples is taken along the rows of
a few blocks: numpy's reductions along a row give what they give for the row alone, so
each sample's figures are the ones it would have had by itself."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray


def by_size(samples: Sequence[NDArray[np.float64]]) -> Iterator[tuple[list[int], NDArray[np.float64]]]:
    """(the indices of the samples of one size, their values as one row each), per size."""
    sizes = [x.size for x in samples]
    for size in sorted(set(sizes)):
        rows = [i for i, n in enumerate(sizes) if n == size]
        yield rows, (np.stack([samples[i] for i in rows]) if size else np.empty((len(rows), 0)))
