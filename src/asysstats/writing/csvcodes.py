"""Columns of a result coded once for its CSV (docs/decisions.md D6): the cells of a column's
distinct values formatted once, and a code per row into them.

A column of few distinct values (string ids, small integers, a :class:`Coded` column) is
coded over all its rows; a gathered column over the values it gathers from, not a copy.
Consecutive coded columns gathered alike are combined while the combinations of their
values that occur stay few: a piece of CSV then takes one cell per row for all of them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, text
from asysstats.compute.distinct import DENSE_SPAN, Coded, dense_distinct, distinct, narrowed, sampled_values
from asysstats.core.result import INT, TEXT, Column, Gathered, Result
from asysstats.core.strings import StringPool
from asysstats.writing.format import as_integers, cells, few_values

COMMA = text(",")
FEW_SHARE = 8  # values (or combinations) are few while they are at most 1 / FEW_SHARE of the rows


class Coding(NamedTuple):
    """The CSV cells of a column's distinct values (or of columns' combinations) and a code
    per row into them; a gathered column's codes are those of the values it gathers from,
    at ``index``."""

    cells: pa.Array
    codes: np.ndarray
    index: np.ndarray | None = None  # type: ignore[assignment]  # the field shadows tuple.index, as a NamedTuple's may

    def at(self, start: int, stop: int) -> tuple[pa.Array, np.ndarray]:
        """The cells and codes of the rows ``[start, stop)``; cells more than the rows are cut
        to those they use."""
        codes = self.codes[start:stop] if self.index is None else self.codes[self.index[start:stop]]
        if len(self.cells) <= len(codes):
            return self.cells, codes
        used, codes = distinct(codes)
        return self.cells.take(from_numpy(used)), codes


class Segment(NamedTuple):
    """Consecutive columns coded together (``coding``), or one column formatted a piece at a
    time (``coding`` None)."""

    columns: tuple[Column, ...]
    coding: Coding | None


def segments(result: Result, decimals: int) -> list[Segment]:
    """The result's columns as segments: each column of few distinct values coded, and
    consecutive coded columns gathered alike combined while their combinations stay few."""
    codings = [column_coding(c.kind, result.frame[c.name], result.strings, decimals) for c in result.columns]
    found = []
    first = 0
    while first < len(codings):
        joint, last = codings[first], first + 1
        while joint is not None and last < len(codings):
            more = joined(joint, codings[last])
            if more is None:
                break
            joint, last = more, last + 1
        found.append(Segment(result.columns[first:last], joint))
        first = last
    return found


def column_coding(kind: str, column: object, strings: StringPool, decimals: int) -> Coding | None:
    """A frame column coded over all its rows where it has few distinct values; None for a
    column computed a piece at a time, Arrow text or many values (in a sample of its rows:
    a piece formats those it has)."""
    if computed(column):
        return None
    index = None
    if isinstance(column, Gathered):
        index, column = column.rows, column.values
    if isinstance(column, Coded):
        uniq, codes = column.values, column.codes
    else:
        coded = coding(kind, column) if few_sampled(column) else None
        if coded is None:
            return None
        uniq, codes = coded
    return Coding(cells(kind, uniq, strings, decimals, csv=True), narrowed(codes, len(uniq)), index)


def joined(left: Coding, right: Coding | None) -> Coding | None:
    """Two codings of rows gathered alike as one, of the combinations of their values that
    occur; None when they are not gathered alike or the combinations are not few."""
    if right is None or right.index is not left.index or len(right.codes) != len(left.codes):
        return None
    count = len(right.cells)
    bound = len(left.cells) * count  # the combinations there could be
    key = narrowed(left.codes, bound + 1) * count + right.codes  # a type that holds count too
    dense = bound <= DENSE_SPAN  # counted in a table of the combinations there could be
    uniq, codes = dense_distinct(key, bound - 1, narrow=True) if dense else distinct(key, narrow=True)
    if len(uniq) * FEW_SHARE > len(codes):
        return None
    joint = pc.binary_join_element_wise(left.cells.take(from_numpy(uniq // count)),
                                        right.cells.take(from_numpy(uniq % count)), COMMA)
    return Coding(joint, codes, left.index)


def few_sampled(values: object) -> bool:
    """Whether a sample of the rows of an integer column has few distinct values."""
    if not isinstance(values, np.ndarray) or values.ndim != 1 or values.dtype.kind not in "iu":
        return False
    sampled, rows = sampled_values(values)
    return len(sampled) * FEW_SHARE <= rows


def computed(column: object) -> bool:
    """A column whose values are computed a piece at a time (a gathered function of the rows)."""
    return isinstance(column, Gathered) and callable(column.values)


def coding(kind: str, values: np.ndarray | pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """(distinct values, each row's index) of a column formatted once per distinct value
    (string ids, -1 missing; integers of few values), else None."""
    if not isinstance(values, np.ndarray) or values.dtype.kind not in "iu" or values.ndim != 1:
        return None
    if kind == TEXT:
        uniq, codes = distinct(np.where(values >= 0, values, -1) + 1, narrow=True)  # 0: missing
        return uniq - 1, codes
    return few_values(as_integers(values)[0]) if kind == INT else None
