"""Typed columnar event tables: named int64/float64 numpy columns of equal length."""

from __future__ import annotations

import threading
from typing import Callable, Iterator, Mapping, Sequence

import numpy as np

NA = np.iinfo(np.int64).min  # a missing cell of an integer column (printed "-")
_MAKING = threading.RLock()  # a later column made by one thread (making one may read another)


class EventTable(Mapping[str, np.ndarray]):
    """An immutable set of equally long numpy columns (ns timestamps, integer ids); ``later``:
    columns made on first read (:meth:`with_later_columns`)."""

    def __init__(self, columns: Mapping[str, np.ndarray],
                 later: Mapping[str, Callable[[], np.ndarray]] | None = None) -> None:
        self._columns = {name: np.asarray(values) for name, values in columns.items()}
        lengths = {len(v) for v in self._columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of unequal length: {lengths}")
        self._length = lengths.pop() if lengths else 0
        self._later = {name: make for name, make in (later or {}).items() if name not in self._columns}

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self._columns and name in self._later:
            with _MAKING:  # made once, should threads (the CSV formatters) read it at once
                if name in self._later:
                    values = np.asarray(self._later[name]())
                    if len(values) != self._length:
                        raise ValueError(f"column {name}: {len(values)} rows, not {self._length}")
                    self._columns[name] = values
                    del self._later[name]
        return self._columns[name]

    def __iter__(self) -> Iterator[str]:
        return iter([*self._columns, *self._later])

    def __len__(self) -> int:
        return len(self._columns) + len(self._later)

    def peek(self, name: str) -> np.ndarray:
        """The column, not kept when this read is what makes it: for a step that reads a later
        column once and need not hold it (the range texts operator recognition reads, 0.46 GB
        apiece at 57 M ranges)."""
        if name not in self._columns and name in self._later:
            return np.asarray(self._later[name]())
        return self._columns[name]

    def with_later_columns(self, **makers: Callable[[], np.ndarray]) -> "EventTable":
        """The table with columns each made by its function when first read (work that a
        rule which reads none of them never does)."""
        return EventTable(self._columns, {**self._later, **makers})

    @property
    def rows(self) -> int:
        return self._length

    def take(self, index: np.ndarray) -> "EventTable":
        """Rows selected by a boolean mask or an index array; the table itself (no copy of its
        columns) when a mask selects every row. Later columns stay later: made for these rows
        when first read."""
        index = np.asarray(index)
        if index.dtype == np.bool_ and index.all():
            return self
        return EventTable({name: values[index] for name, values in self._columns.items()},
                          {name: _taken(self, name, index) for name in self._later})

    def with_columns(self, **columns: np.ndarray) -> "EventTable":
        return EventTable({**self._columns, **columns}, self._later)

    @staticmethod
    def concat(parts: list["EventTable"], columns: Sequence[str] | None = None) -> "EventTable":
        """The rows of ``parts`` one after another: every column, or only ``columns`` (not copying
        the others)."""
        names = list(parts[0].keys()) if columns is None else list(columns)
        if len(parts) == 1:
            return parts[0] if columns is None else EventTable({n: parts[0][n] for n in names})
        return EventTable({n: np.concatenate([p[n] for p in parts]) for n in names})


def _taken(table: EventTable, name: str, index: np.ndarray) -> Callable[[], np.ndarray]:
    """A later column of ``table`` made for the rows ``index`` selects (and kept by ``table``)."""
    return lambda: table[name][index]


def given_once(values: np.ndarray, make: Callable[[], np.ndarray]) -> Callable[[], np.ndarray]:
    """A later column's maker that gives ``values`` on its first call, no longer holding them,
    and ``make()`` after: values at hand, that a :meth:`EventTable.peek` can let go."""
    held = [values]
    return lambda: held.pop() if held else make()


class LazyColumns(Mapping[str, np.ndarray]):
    """Columns computed each time one is read, and not kept: a derived table stored a column
    at a time (``ReportSource.derived``) never holds all of them at once."""

    def __init__(self, columns: Mapping[str, Callable[[], np.ndarray]]) -> None:
        self._columns = dict(columns)

    def __getitem__(self, name: str) -> np.ndarray:
        return self._columns[name]()

    def __iter__(self) -> Iterator[str]:
        return iter(self._columns)

    def __len__(self) -> int:
        return len(self._columns)


def empty_table(names: list[str], float_names: frozenset[str] = frozenset()) -> EventTable:
    return EventTable({n: np.empty(0, np.float64 if n in float_names else np.int64) for n in names})


def in_window(table: EventTable, window: tuple[int, int] | None) -> EventTable:
    """Rows lying entirely inside ``window`` (the rule for every event table)."""
    return table if window is None or "start" not in table else table.take(window_mask(table, window))


def window_mask(table: EventTable, window: tuple[int, int] | None) -> np.ndarray:
    """Mask of the rows of :func:`in_window` (an event without an end is a point at its start)."""
    if window is None:
        return np.ones(table.rows, dtype=bool)
    start = table["start"]
    end = np.maximum(table["end"], start) if "end" in table else start
    return (start >= window[0]) & (end <= window[1])
