"""A rule's result: its declared columns and their values, as the writers read them.

A column is a numpy array (string ids for text), an Arrow string array, or a
:class:`Gathered` column taken from other values a slice of rows at a time when written."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from asysstats.core.columns import Column, Frame
from asysstats.core.strings import StringPool

if TYPE_CHECKING:
    from asysstats.compute.distinct import Coded


class Gathered:
    """A frame column ``values[rows]``, or ``values(rows)`` for a function of row indices (a
    column derived per row, such as end - start), gathered only when read, a slice at a time:
    a trace keeps one index, not a permuted copy per column."""

    __slots__ = ("values", "rows")

    def __init__(self, values: np.ndarray | Coded | Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> None:
        self.values, self.rows = values, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key: slice) -> np.ndarray:
        rows = self.rows[key]
        return self.values(rows) if callable(self.values) else self.values[rows]

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        values = self[:]
        return values if dtype is None else values.astype(dtype, copy=False)


@dataclass
class Result:
    """A computed rule table: declared columns (after ``column=``) and their values."""

    name: str  # the rule's
    title: str
    share: str | None  # the column of the XLSX pie chart
    columns: tuple[Column, ...]
    frame: Frame
    strings: StringPool
    notes: tuple[str, ...] = ()  # one-line data-quality notes of the run (events left out, ...)

    @property
    def rows(self) -> int:
        return len(next(iter(self.frame.values()))) if self.frame else 0


