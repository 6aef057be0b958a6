"""Grouped statistics computed in parts: partial aggregates, their merge, and exact medians.

A part (one report) reduces its rows to partials per group: count, sum, min, max, mean and
M2, the sum of squared deviations from the group's mean. Partials of several parts merge
by group key; M2 combines with Chan et al.'s parallel formula
``M2 = sum(M2_i + n_i * (mean_i - mean)**2)``, which works on deviations (small numbers)
where a float64 sum of squares of nanosecond values would cancel away the low digits of
the variance (docs/many-reports.md).

Medians need every value of a group in one place: a part splits its rows into buckets by
a hash of the group key (:func:`group_hash`, the same in every process), bucket ``i`` of
every part goes to one reducer, and :func:`medians` sorts each bucket's groups.
"""

from __future__ import annotations

import zlib
from typing import Sequence

import numpy as np

from asysstats.compute.grouped import Key, dense_group_ids, grouped_stats

Keys = tuple[np.ndarray, ...]
Stats = dict[str, np.ndarray]
PARTIAL_FIELDS = ("count", "sum", "min", "max", "mean", "m2")
GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def partials(keys: Sequence[Key], values: np.ndarray) -> tuple[Keys, Stats, np.ndarray]:
    """Per-group partials of ``values`` grouped by ``keys``: the groups' keys, the partials
    (:data:`PARTIAL_FIELDS`) and every row's group number."""
    group, key_values = dense_group_ids(keys)
    _, stats = grouped_stats([group], values)  # one group per dense id, in order
    out = {name: stats[name] for name in PARTIAL_FIELDS[:-1]}
    out["m2"] = stats["std"] ** 2 * stats["count"]
    return key_values, out, group


def merge(keys: Sequence[np.ndarray], stacked: Stats) -> tuple[Keys, Stats, np.ndarray]:
    """Statistics per distinct key of partials stacked from several parts (a row per part
    and group): count, sum, mean, min, max and the population standard deviation; and the
    group number of each stacked row."""
    if len(stacked["count"]) == 0:
        empty = np.empty(0, np.float64)
        return tuple(k[:0] for k in keys), {"count": stacked["count"], "sum": stacked["sum"], "mean": empty,
                                            "min": stacked["min"], "max": stacked["max"], "std": empty}, \
            np.empty(0, np.int64)
    gid, key_values = dense_group_ids(keys)
    order = np.argsort(gid, kind="stable")
    starts = np.searchsorted(gid[order], np.arange(len(key_values[0])))
    count = np.add.reduceat(stacked["count"][order], starts)
    total = np.add.reduceat(stacked["sum"][order], starts)
    mean = total / count
    spread = stacked["m2"] + stacked["count"] * (stacked["mean"] - mean[gid]) ** 2
    return key_values, {"count": count, "sum": total, "mean": mean,
                        "min": np.minimum.reduceat(stacked["min"][order], starts),
                        "max": np.maximum.reduceat(stacked["max"][order], starts),
                        "std": np.sqrt(np.add.reduceat(spread[order], starts) / count)}, gid


def string_hash(texts: Sequence[str | None]) -> np.ndarray:
    """A hash of each string (CRC-32 of its UTF-8), the same in every process; 0 for None."""
    return np.array([0 if t is None else zlib.crc32(t.encode("utf-8", "surrogatepass")) + 1 for t in texts],
                    np.uint64)


def group_hash(keys: Sequence[np.ndarray]) -> np.ndarray:
    """A well-mixed 64-bit hash of each key tuple (integer columns; text hashed beforehand)."""
    mixed = np.full(len(keys[0]) if keys else 0, GOLDEN, np.uint64)
    with np.errstate(over="ignore"):
        for key in keys:
            mixed = splitmix(mixed ^ np.asarray(key).astype(np.uint64))
    return mixed


def splitmix(x: np.ndarray) -> np.ndarray:
    """The SplitMix64 finaliser (wrapping uint64 arithmetic)."""
    x = (x + GOLDEN) & np.uint64(0xFFFFFFFFFFFFFFFF)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def split_buckets(group: np.ndarray, bucket: np.ndarray, values: np.ndarray,
                  n: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Rows split by the bucket of their group (``bucket``, one per group, in ``[0, n)``):
    per bucket, its groups (indices), each row's index among them and the rows' values."""
    row_bucket = bucket[group]
    order = np.argsort(row_bucket, kind="stable")
    cuts = np.searchsorted(row_bucket[order], np.arange(n + 1))
    local = np.empty(len(bucket), np.int64)
    out = []
    for i in range(n):
        mine = np.flatnonzero(bucket == i)
        local[mine] = np.arange(len(mine))
        rows = order[cuts[i]:cuts[i + 1]]
        out.append((mine, local[group[rows]], values[rows]))
    return out


def medians(keys: Sequence[np.ndarray], group: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact median per distinct key: ``keys`` has a row per (part, group), ``group`` gives
    each value's row in it. Per group with values: the first row of ``keys`` with its key,
    and its median."""
    if len(values) == 0:
        return np.empty(0, np.int64), np.empty(0, np.float64)
    gid, _ = dense_group_ids(keys)
    first = np.unique(gid, return_index=True)[1]
    groups, stats = grouped_stats([gid[group]], values)
    return first[groups.keys[0]], stats["median"]
