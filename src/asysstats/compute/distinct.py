"""Distinct values of integer columns (string ids above all) and the rows coded by them; the
order of rows by a key of mostly distinct values, equal ones ordered by more keys.

Report string ids are dense from 0 and derived string ids (:mod:`asysstats.core.strings`) dense
from ``DERIVED_BASE``: both are counted in a presence table, in time linear in the rows,
instead of sorted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

DERIVED_BASE = 1 << 40  # the first id of a derived string
DENSE_SPAN = 1 << 27  # value ranges up to this size are counted in a table, not sorted (docs/performance.md)
SAMPLE_ROWS, FEW_SAMPLED = 4096, 64  # scattered values are looked up among a sample's when it has this few


def distinct(ids: np.ndarray, narrow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of an int array (sorted) and each row's index into them (``narrow``:
    in the narrowest integer type that holds them, :func:`code_type`; int64 otherwise).

    Values in a dense range (report string ids, and derived ids, which start at
    ``DERIVED_BASE``) are counted in a table, in time linear in the rows; a few scattered
    values found in a sample of the rows (:func:`sampled_distinct`); others are sorted."""
    ids = np.asarray(ids, dtype=np.int64)
    if len(ids) == 0:
        return ids[:0], np.empty(0, np.int64)
    low, high = int(ids.min()), int(ids.max())
    span = min(DENSE_SPAN, 4 * len(ids) + 4096)  # a table much larger than the rows costs more than a sort
    if 0 <= low and high < span:  # string ids: a table from 0 (no shifted copy of the rows)
        return dense_distinct(ids, high, narrow)
    if high - low < span:
        uniq, index = dense_distinct(ids - low, high - low, narrow)
        return uniq + low, index
    if low >= 0 and high >= DERIVED_BASE:  # report ids and derived ids: fold the gap between them
        derived = ids >= DERIVED_BASE
        first_derived = int(ids[derived].min())
        below = int(ids[~derived].max()) + 1 if not derived.all() else 0
        if below + high - first_derived < span:
            shift = first_derived - below
            uniq, index = dense_distinct(ids - derived * shift, below + high - first_derived, narrow)
            return uniq + (uniq >= below) * shift, index
    uniq, index = sampled_distinct(ids) or distinct_by_sort(ids)
    return uniq, narrowed(index, len(uniq)) if narrow else index


def distinct_by_sort(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ids, return_inverse=True)`` by timsort: columns of times come nearly in order
    (ends of ranges in start order), and timsort merges their runs where numpy's quicksort does
    not (5.7 M range ends: 0.74 -> 0.26 s; random values 10 % slower)."""
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    new = np.empty(len(ordered), bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    index = np.empty(len(ids), np.int64)
    index[order] = np.cumsum(new) - 1
    return ordered[new], index


def sampled_distinct(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``distinct`` of scattered values that are few (thread ids): the distinct values of a
    sample of the rows, with those of the rows the sample missed (a thread of a few events),
    each row found by a binary search; None when they are more than ``FEW_SAMPLED``."""
    uniq, _ = sampled_values(ids)
    while len(uniq) <= FEW_SAMPLED:
        index = np.searchsorted(uniq, ids)
        np.minimum(index, len(uniq) - 1, out=index)
        missed = np.empty(0, np.int64)
        for start in range(0, len(ids), SAMPLE_ROWS * 16):  # checked a range of rows at a time: no copy of them all
            stop = start + SAMPLE_ROWS * 16
            wrong = uniq[index[start:stop]] != ids[start:stop]
            if wrong.any():
                missed = distinct_sorted(np.sort(np.concatenate([missed, ids[start:stop][wrong]])))
                if len(uniq) + len(missed) > FEW_SAMPLED:
                    return None
        if len(missed) == 0:
            return uniq, index
        uniq = np.sort(np.concatenate([uniq, missed]))  # then every row is among them: one more pass
    return None


def sampled_values(values: np.ndarray, rows: int = SAMPLE_ROWS) -> tuple[np.ndarray, int]:
    """The distinct values (ascending) of a sample of about ``rows`` rows spread over a column,
    and the sample's size: a column of many distinct values is told without counting them all."""
    sample = np.sort(values[::max(1, len(values) // rows)])
    return distinct_sorted(sample), len(sample)


def distinct_sorted(sorted_values: np.ndarray) -> np.ndarray:
    """The distinct values of an already sorted array (``np.unique`` without its sort)."""
    keep = np.ones(len(sorted_values), dtype=bool)
    keep[1:] = sorted_values[1:] != sorted_values[:-1]
    return sorted_values[keep]


def dense_distinct(values: np.ndarray, high: int, narrow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``distinct`` of values in ``[0, high]`` by a presence table."""
    present = np.zeros(high + 1, dtype=np.bool_)
    present[values] = True
    uniq = np.flatnonzero(present)
    del present
    # zeroed pages are mapped lazily: only those written cost; narrow slots, fewer of them
    slot: np.ndarray = np.zeros(high + 1, dtype=code_type(len(uniq)))
    slot[uniq] = np.arange(len(uniq))
    codes = slot[values]
    return uniq, codes if narrow else codes.astype(np.int64)


def code_type(count: int) -> type:
    """The narrowest integer type of codes into ``count`` values."""
    return next((t for t in (np.uint8, np.uint16, np.int32) if count <= np.iinfo(t).max + 1), np.int64)


def narrowed(codes: np.ndarray, count: int) -> np.ndarray:
    """Codes into ``count`` values in the narrowest integer type that holds them."""
    return codes.astype(code_type(count), copy=False)


def tie_order(primary: np.ndarray, ties: Callable[[np.ndarray], tuple[np.ndarray, ...]]) -> np.ndarray:
    """``np.lexsort(ties(all rows) + (primary,))`` for a primary key of mostly distinct values
    (start times): a stable sort by it, then a ``lexsort`` of the rows whose primary keys are
    equal alone, by ``ties(rows)`` (keys least significant first, computed for those rows)."""
    order = np.argsort(primary, kind="stable")
    ordered = primary[order]
    equal = ordered[1:] == ordered[:-1]
    del ordered
    if not equal.any():
        return order
    tied = np.flatnonzero(np.concatenate([equal, [False]]) | np.concatenate([[False], equal]))
    rows = order[tied]
    order[tied] = rows[np.lexsort(ties(rows) + (primary[rows],))]
    return order


@dataclass(frozen=True)
class Coded:
    """An integer column as a code per row into ``values`` (distinct, ascending): the result
    of :func:`distinct`, kept so that grouping by the column need not find it again."""

    values: np.ndarray
    codes: np.ndarray

    @classmethod
    def of(cls, ids: np.ndarray, narrow: bool = False) -> "Coded":
        """An integer column coded (``narrow``: codes as :func:`distinct` narrows them)."""
        return cls(*distinct(ids, narrow))

    def rows(self) -> np.ndarray:
        """The value of every row."""
        return self.values[self.codes]

    def mapped(self, values: np.ndarray) -> "Coded":
        """Each distinct value replaced by one of ``values`` (several may be equal), coded again
        (the codes as narrow as :func:`narrowed` makes them)."""
        uniq, index = distinct(values)
        return Coded(uniq, narrowed(index, len(uniq))[self.codes])

    def narrow(self) -> "Coded":
        """The codes in the narrowest integer type that holds them (:func:`narrowed`)."""
        return Coded(self.values, narrowed(self.codes, len(self.values)))

    def __getitem__(self, index: np.ndarray | slice) -> np.ndarray:
        """The values of the rows ``index`` selects (a :class:`~asysstats.analysis.inputs.Gathered` column may be coded)."""
        return self.values[self.codes[index]]

    def take(self, index: np.ndarray) -> "Coded":
        """The rows ``index`` selects (the values they use, coded again)."""
        used, codes = distinct(self.codes[index])
        return Coded(self.values[used], codes)
