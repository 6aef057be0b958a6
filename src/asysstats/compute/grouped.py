"""Grouped statistics by sort + ``reduceat``.

Groups are given by one or more integer key arrays (the first is the most significant).
Statistics: count, sum, mean, median (mean of the two middle values for an even count),
min, max and the population standard deviation (divide by N). Means, medians and
deviations are floats; writers truncate them for integer columns (conventions 1-3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Groups:
    """Rows sorted by key (then value): ``order`` permutes rows, ``bounds`` cut the groups."""

    order: np.ndarray
    bounds: np.ndarray  # start offset of each group in sorted order, plus len at the end
    keys: tuple[np.ndarray, ...]  # one value per group for each key

    @property
    def size(self) -> np.ndarray:
        return np.diff(self.bounds)

    @property
    def count(self) -> int:
        return len(self.bounds) - 1

    def label(self) -> np.ndarray:
        """Group number of every input row."""
        labels = np.empty(len(self.order), dtype=np.int64)
        labels[self.order] = np.repeat(np.arange(self.count), self.size)
        return labels

    def reduce(self, ufunc: np.ufunc, values: np.ndarray) -> np.ndarray:
        """Apply ``ufunc.reduceat`` to ``values`` (input row order) per group."""
        if self.count == 0:
            return np.empty(0, dtype=np.asarray(values).dtype)
        return ufunc.reduceat(np.asarray(values)[self.order], self.bounds[:-1])

    def first(self, values: np.ndarray) -> np.ndarray:
        """The value of the first row (in sorted order) of each group."""
        return np.asarray(values)[self.order[self.bounds[:-1]]]


def group_by(keys: Sequence[np.ndarray], values: np.ndarray | None = None) -> Groups:
    """Group rows by ``keys``; within a group rows are sorted by ``values`` when given."""
    keys = [np.asarray(k) for k in keys]
    n = len(keys[0]) if keys else (0 if values is None else len(values))
    if n == 0:
        return Groups(np.empty(0, np.int64), np.zeros(1, np.int64), tuple(k[:0] for k in keys))
    sort_keys = ([np.asarray(values)] if values is not None else []) + keys[::-1]
    order = np.lexsort(sort_keys) if sort_keys else np.arange(n)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for key in keys:
        ks = key[order]
        change[1:] |= ks[1:] != ks[:-1]
    starts = np.flatnonzero(change)
    bounds = np.append(starts, n).astype(np.int64)
    return Groups(order, bounds, tuple(k[order[starts]] for k in keys))


def grouped_stats(keys: Sequence[np.ndarray], values: np.ndarray) -> tuple[Groups, dict[str, np.ndarray]]:
    """Count, sum, mean, median, min, max and population stddev of ``values`` per group."""
    values = np.asarray(values)
    groups = group_by(keys, values)
    return groups, stats_of_sorted(groups, values)


def stats_of_sorted(groups: Groups, values: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics per group for ``groups`` built with ``values`` as the in-group sort key."""
    size = groups.size
    if groups.count == 0:
        empty_f = np.empty(0, dtype=np.float64)
        return {"count": size, "sum": np.empty(0, values.dtype), "mean": empty_f, "median": empty_f,
                "min": np.empty(0, values.dtype), "max": np.empty(0, values.dtype), "std": empty_f}
    ordered = values[groups.order]
    lo = groups.bounds[:-1]
    hi = groups.bounds[1:] - 1
    total = np.add.reduceat(ordered, lo)
    mean = total / size
    mid_lo = lo + (size - 1) // 2
    mid_hi = lo + size // 2
    median = (ordered[mid_lo].astype(np.float64) + ordered[mid_hi].astype(np.float64)) / 2.0
    deviation = ordered - np.repeat(mean, size)
    std = np.sqrt(np.add.reduceat(deviation * deviation, lo) / size)
    return {"count": size, "sum": total, "mean": mean, "median": median,
            "min": ordered[lo], "max": ordered[hi], "std": std}


def percentile_sorted(groups: Groups, values: np.ndarray, q: float) -> np.ndarray:
    """Nearest-rank ``q`` percentile (0 < q <= 100) per group: the smallest value with at
    least q% of the group's values at or below it."""
    if groups.count == 0:
        return np.empty(0, dtype=np.asarray(values).dtype)
    ordered = np.asarray(values)[groups.order]
    rank = np.ceil(groups.size * (q / 100.0)).astype(np.int64)
    return ordered[groups.bounds[:-1] + np.maximum(rank, 1) - 1]


def share_percent(part: np.ndarray, total: float) -> np.ndarray:
    """``100 * part / total``; NaN (printed as ``-``) when the total is 0."""
    part = np.asarray(part, dtype=np.float64)
    if total == 0:
        return np.full(part.shape, np.nan)
    return part * 100.0 / total
