"""Grouped statistics by sort (or, for few groups, a radix sort by group and a selection of each
median) + ``reduceat``.

Groups are given by one or more integer key arrays (the first is the most significant).
Statistics: count, sum, mean, median (mean of the two middle values for an even count),
min, max and the population standard deviation (divide by N). Means, medians and
deviations are floats; writers truncate them for integer columns (docs/decisions.md D1).
"""

from __future__ import annotations

import functools
from typing import Callable, Sequence

import numpy as np

from asysstats.compute.distinct import Coded, distinct, narrowed, tie_order


class Groups:
    """Rows sorted by key (then value): ``order`` permutes rows, ``bounds`` cut the groups.

    ``order`` may be computed lazily: the fast path of :func:`grouped_stats` needs only a
    sort of packed keys, and the permutation is built the first time someone asks for it.
    That path also knows each row's group (``labels``), which then needs no permutation.
    """

    def __init__(self, bounds: np.ndarray, keys: tuple[np.ndarray, ...],
                 order: np.ndarray | Callable[[], np.ndarray], labels: np.ndarray | None = None) -> None:
        self.bounds = bounds  # start offset of each group in sorted order, plus len at the end
        self.keys = keys  # one value per group for each key
        self._order = order
        self._labels = labels

    @functools.cached_property
    def order(self) -> np.ndarray:
        return self._order() if callable(self._order) else self._order

    @property
    def size(self) -> np.ndarray:
        return np.diff(self.bounds)

    @property
    def count(self) -> int:
        return len(self.bounds) - 1

    def label(self) -> np.ndarray:
        """Group number of every input row (not to be written to: it may be shared)."""
        if self._labels is not None:
            return self._labels
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
    """Group rows by ``keys``; within a group rows are sorted by ``values`` when given, else kept
    in their order (integer keys: by :func:`groups_of_ids`)."""
    keys = [np.asarray(k) for k in keys]
    n = len(keys[0]) if keys else (0 if values is None else len(values))
    if n == 0:
        return Groups(np.zeros(1, np.int64), tuple(k[:0] for k in keys), np.empty(0, np.int64))
    if values is None and keys and all(k.dtype.kind in "iu" for k in keys):
        return groups_of_ids(*dense_group_ids(keys))
    sort_keys = ([np.asarray(values)] if values is not None else []) + keys[::-1]
    order = np.lexsort(sort_keys) if sort_keys else np.arange(n)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for key in keys:
        ks = key[order]
        change[1:] |= ks[1:] != ks[:-1]
    starts = np.flatnonzero(change)
    bounds = np.append(starts, n).astype(np.int64)
    return Groups(bounds, tuple(k[order[starts]] for k in keys), order)


FEW_GROUPS = (1 << 16) - 1  # groups numbered in 16 bits, which numpy's stable sort orders by radix
SELECTION_ROWS = 64  # rows a group on average, for a selection per group to beat one sort of all
DEVIATION_ROWS = 1 << 18  # rows of :func:`squared_deviations` at a time
FEW_FLOATS = 1 << 16  # distinct floats of a key found by a binary search among them, not by sorting the rows
LARGE = 1 << 40  # groups of values this large are summarised about their minimum: float64 keeps the deviations
Key = np.ndarray | Coded  # a key column: per-row values, or coded


def dense_group_ids(keys: Sequence[Key]) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """A dense id per row (int64), numbered in the lexicographic order of the key tuples, and
    the key values of each id. A :class:`~asysstats.compute.distinct.Coded` key is used as
    coded; the others are coded one at a time, as they are folded in (several keys: in the
    narrowest integer type), so that one key's codes are in memory at once."""
    first, *rest = keys
    gid = key_coded(first, narrow=False).codes.reshape(-1)
    gid = gid.astype(np.int64, copy=bool(rest) and isinstance(first, Coded))  # the other keys fold into our own
    for key in rest:  # after each key the ids are renumbered densely, so they stay below the row count
        coded = key_coded(key, narrow=True)
        gid *= len(coded.values)
        gid += coded.codes.reshape(-1)
        del coded  # its codes go before the renumbering allocates
        gid = distinct(gid)[1]
    row = np.zeros(int(gid.max()) + 1 if len(gid) else 0, dtype=np.int64)
    row[gid] = np.arange(len(gid))  # any row of a group: all its rows hold the same keys
    return gid, tuple(key[row] if isinstance(key, Coded) else np.asarray(key)[row] for key in keys)


def key_coded(key: Key, narrow: bool) -> Coded:
    """A key column as coded (integers by :meth:`Coded.of`, with ``narrow`` codes when asked;
    floats of at most :data:`FEW_FLOATS` distinct values by a binary search among them, which
    numpy finds by hashing: 5.4 M values of 29 distinct 1.1 -> 0.2 s against an argsort; other
    values by :func:`numpy.unique`). NaNs are one value, and -0.0 is 0.0, as ``np.unique`` has them."""
    if isinstance(key, Coded):
        return key
    values = np.asarray(key)
    if values.dtype.kind in "iu":
        return Coded.of(values, narrow)
    if values.dtype.kind == "f":
        uniq = np.unique(values)
        if len(uniq) <= FEW_FLOATS:
            codes = np.searchsorted(uniq, values)
            return Coded(uniq, narrowed(codes, len(uniq)) if narrow else codes)
    return Coded(*np.unique(values, return_inverse=True))


def grouped_stats(keys: Sequence[Key], values: np.ndarray) -> tuple[Groups, dict[str, np.ndarray]]:
    """Count, sum, mean, median, min, max and population stddev of ``values`` per group.

    Integer values take a fast path. Few groups (:data:`FEW_GROUPS`, each of
    :data:`SELECTION_ROWS` rows or more on average): the rows are put in group order by a radix
    sort of their 16-bit group numbers and each median is selected (``partition``), linear where a
    sort is not (5.6 M API calls in 14 groups: 0.33 -> 0.16 s). Otherwise (group, value) is packed
    into one int64 and sorted by timsort (several times faster than ``lexsort``, and than quicksort
    on rows in time order). Other values are lexsorted."""
    values = np.asarray(values)
    if len(values) and values.dtype.kind in "iu" and keys \
            and all(isinstance(k, Coded) or np.asarray(k).dtype.kind in "iu" for k in keys):
        gid, key_values = dense_group_ids(keys)
        values = values.astype(np.int64, copy=False)
        count = len(key_values[0])
        if count <= FEW_GROUPS and len(values) >= SELECTION_ROWS * count:
            by_group = groups_of_ids(gid, key_values)
            bounds, grouped = by_group.bounds, values[by_group.order]
            del by_group  # its order goes before the statistics' temporaries
            stats = stats_of_ordered(bounds, grouped, each_sorted=False)
            order = functools.partial(np.lexsort, (values, gid))  # by value within a group, when asked
            return Groups(bounds, key_values, order, gid), stats
        low, high = int(values.min()), int(values.max())
        group_bits = max(count, 1).bit_length()
        if 0 <= low and high.bit_length() + group_bits < 63:
            low = 0  # packed as they are: one pass less
        shift = max(high - low, 1).bit_length()
        if shift + group_bits < 63:
            ordered = np.left_shift(gid, shift)
            ordered += values - low if low else values
            ordered.sort(kind="stable")  # in place: each large temporary costs its page faults
            bounds = np.searchsorted(ordered, np.arange(count + 1, dtype=np.int64) << shift)
            ordered &= (1 << shift) - 1
            stats = offset(stats_of_ordered(bounds, ordered), low) if low else stats_of_ordered(bounds, ordered)
            return Groups(bounds, key_values, functools.partial(packed_order, gid, values, shift), gid), stats
    groups = group_by([k.rows() if isinstance(k, Coded) else k for k in keys], values)
    return groups, stats_of_sorted(groups, values)


def group_heads(gid: np.ndarray, count: int, keys: Sequence[np.ndarray]) -> np.ndarray:
    """Per group of dense ids ``gid`` (below ``count``), the row that comes first in the order of
    the integer ``keys`` (most significant first), then of rows: the first row of each group in
    ``np.lexsort((*reversed(keys), gid))``, found by a minimum per group and key instead of a
    sort (6 M rows in 200 K groups, by start: 0.72 -> 0.04 s)."""
    rows = np.arange(len(gid))
    group = np.asarray(gid)
    for key in keys:
        values = np.asarray(key)[rows] if len(rows) < len(gid) else np.asarray(key)
        least = np.full(count, np.iinfo(values.dtype).max, dtype=values.dtype)
        np.minimum.at(least, group, values)
        tied = values == least[group]
        rows, group = rows[tied], group[tied]
    first = np.full(count, len(gid), dtype=np.int64)
    np.minimum.at(first, group, rows)
    return first


def id_order(gid: np.ndarray, count: int) -> np.ndarray:
    """The rows by dense id ``gid`` (below ``count``), stably. Ids below :data:`FEW_GROUPS` are
    sorted as 16-bit numbers, which numpy's stable sort does by radix: 5.6 M rows in random order,
    32 groups of two keys, 0.6-0.9 s by ``lexsort``, 0.11 s with the ids made."""
    return np.argsort(gid.astype(np.uint16) if count <= FEW_GROUPS else gid, kind="stable")


def id_time_order(gid: np.ndarray, count: int, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``np.lexsort((end, start, gid))`` for dense ids ``gid`` below ``count``: the rows by
    (start, end) (:func:`tie_order`, a stable sort of rows mostly in time order already), then
    stably by id (:func:`id_order`). 5.6 M activities of 4 streams: 0.20 -> 0.10 s."""
    by_time = tie_order(start, lambda rows: (end[rows],))
    return by_time[id_order(gid[by_time], count)]


def groups_of_ids(gid: np.ndarray, key_values: tuple[np.ndarray, ...]) -> Groups:
    """The groups of dense ids ``gid``, rows in their order within a group."""
    count = len(key_values[0])
    bounds = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(gid, minlength=count), out=bounds[1:])
    return Groups(bounds, key_values, id_order(gid, count))  # the ids are not kept: ``label`` makes them again


def packed_order(gid: np.ndarray, values: np.ndarray, shift: int) -> np.ndarray:
    """Rows ordered by group, then value (the permutation the packed sort applied)."""
    return np.argsort(np.left_shift(gid, shift) + (values - values.min()), kind="stable")


def stats_of_sorted(groups: Groups, values: np.ndarray) -> dict[str, np.ndarray]:
    """Statistics per group for ``groups`` built with ``values`` as the in-group sort key."""
    if groups.count == 0:
        return stats_of_ordered(groups.bounds, np.asarray(values)[:0])
    return stats_of_ordered(groups.bounds, np.asarray(values)[groups.order])


def stats_of_ordered(bounds: np.ndarray, ordered: np.ndarray, each_sorted: bool = True) -> dict[str, np.ndarray]:
    """Statistics of consecutive groups ``ordered[bounds[i]:bounds[i+1]]``, each sorted unless
    ``each_sorted`` is false (then the extremes are reduced and the medians selected, a group at a
    time). ``ordered`` is the caller's scratch: the squared deviations are written over it."""
    size = np.diff(bounds)
    if len(size) == 0:
        empty_f = np.empty(0, dtype=np.float64)
        return {"count": size, "sum": ordered[:0], "mean": empty_f, "median": empty_f,
                "min": ordered[:0], "max": ordered[:0], "std": empty_f}
    lo = bounds[:-1]
    hi = bounds[1:] - 1
    low = ordered[lo] if each_sorted else np.minimum.reduceat(ordered, lo)
    if np.abs(low).max() >= LARGE:  # timestamps: statistics of each group less its minimum
        return offset(stats_of_ordered(bounds, ordered - np.repeat(low, size), each_sorted), low)
    high = ordered[hi] if each_sorted else np.maximum.reduceat(ordered, lo)
    total = np.add.reduceat(ordered, lo)
    mean = total / size
    lower, upper = lo + (size - 1) // 2, lo + size // 2  # the two middle rows (one for an odd size)
    if not each_sorted:
        for start, stop in zip(lo.tolist(), bounds[1:].tolist()):  # a loop over the few groups
            ordered[start:stop].partition([(stop - start - 1) // 2, (stop - start) // 2])
    median = (ordered[lower].astype(np.float64) + ordered[upper].astype(np.float64)) / 2.0
    std = np.sqrt(np.add.reduceat(squared_deviations(ordered, mean, bounds), lo) / size)
    return {"count": size, "sum": total, "mean": mean, "median": median, "min": low, "max": high, "std": std}


def squared_deviations(ordered: np.ndarray, mean: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``(value - mean of its group) ** 2`` per row of :func:`stats_of_ordered`'s groups, float64,
    written over ``ordered`` when its values are 8 bytes. The mean of each row is made for
    ``DEVIATION_ROWS`` rows at a time: no fresh array of a mean per row, whose pages cost."""
    out = ordered.view(np.float64) if ordered.dtype.itemsize == 8 else np.empty(len(ordered))
    for start in range(0, len(ordered), DEVIATION_ROWS):
        stop = min(start + DEVIATION_ROWS, len(ordered))
        first, last = np.searchsorted(bounds, start, "right") - 1, np.searchsorted(bounds, stop, "left")
        rows = np.minimum(bounds[first + 1:last + 1], stop) - np.maximum(bounds[first:last], start)
        np.subtract(ordered[start:stop], np.repeat(mean[first:last], rows), out=out[start:stop])
    return np.square(out, out=out)


def offset(stats: dict[str, np.ndarray], base: int | np.ndarray) -> dict[str, np.ndarray]:
    """The statistics of values ``base`` (per group, or one for all) higher."""
    shifted = {name: stats[name] + base for name in ("mean", "median", "min", "max")}
    return {**stats, **shifted, "sum": stats["sum"] + base * stats["count"]}


def sample_deviation(stats: dict[str, np.ndarray]) -> np.ndarray:
    """The sample standard deviation (divide by N - 1) of each group of :func:`grouped_stats`
    (or of merged partials), from its population deviation; 0.0 for a group of one value, as
    NVIDIA's ``stdev`` prints it (docs/decisions.md D31)."""
    count = np.asarray(stats["count"], dtype=np.float64)
    scale = np.sqrt(np.divide(count, count - 1, out=np.zeros_like(count), where=count > 1))
    return np.asarray(stats["std"], dtype=np.float64) * scale


def percentile_sorted(groups: Groups, values: np.ndarray, q: float) -> np.ndarray:
    """Nearest-rank ``q`` percentile (0 < q <= 100) per group: the smallest value with at
    least q% of the group's values at or below it."""
    if groups.count == 0:
        return np.empty(0, dtype=np.asarray(values).dtype)
    ordered = np.asarray(values)[groups.order]
    rank = np.ceil(groups.size * (q / 100.0)).astype(np.int64)
    return ordered[groups.bounds[:-1] + np.maximum(rank, 1) - 1]


def share_percent(part: np.ndarray | float, total: float) -> np.ndarray:
    """``100 * part / total``; NaN (printed as ``-``) when the total is 0."""
    part = np.asarray(part, dtype=np.float64)
    if total == 0:
        return np.full(part.shape, np.nan)
    return part * 100.0 / total
