"""The formats of ``nsys stats`` for the rules that mirror its reports (docs/decisions.md D31):
``csv`` and ``tsv`` as NVIDIA's writer puts them (no ``Row#``, no trailing delimiter, a cell
quoted only when it holds the delimiter, a quote or a line break), and ``column``, its console
table (each heading centred over its column, numbers right-aligned, text left-aligned and cut
to 100 characters with ``…``). JSON is the asys writer's (:func:`~asysstats.writing.writers.json_parts`).

A cell is printed from its column's kind as the asys writers print it (integers bare, one
decimal, three for MB); a missing cell is empty, as NVIDIA's writers print SQL's NULL.
``--timeunit`` shows the columns in ns in another unit (:func:`in_time_unit`).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, from_texts, lines_bytes, text, to_numpy
from asysstats.compute.distinct import distinct
from asysstats.core.errors import AsysError, quoted
from asysstats.core.result import DECIMAL, FIGURE, INT, NINE_PLACES, SIX_PLACES, TEXT, Column, Result, decimal_places
from asysstats.core.strings import StringPool
from asysstats.writing.format import as_integers, decimal_text, filled, integer_text, is_missing, printable, rounded

DELIMITERS = {"csv": ",", "tsv": "\t"}
EMPTY = text("")
WIDTH_LIMIT = 100  # nsys's console columns cut a longer text to 99 characters and an ellipsis
ELLIPSIS = "\u2026"
GAP = "  "  # between the console's columns; each line begins with one space
CHUNK = 1 << 16  # rows formatted at once


def as_is(cells: pa.Array) -> pa.Array:
    return cells


def plain_cells(kind: str, values: np.ndarray | pa.Array, strings: StringPool, decimals: int,
                quote: Callable[[pa.Array], pa.Array] = as_is) -> pa.Array:
    """The text of every cell of a column; a missing cell is empty. ``quote`` is applied to text
    (each distinct string once), never to numbers, which need no quotes."""
    if kind == TEXT:
        if isinstance(values, pa.Array):
            return quote(pc.fill_null(values, EMPTY))
        ids = np.asarray(values)
        uniq, index = distinct(np.where(ids >= 0, ids, -1))
        return quote(strings.texts(uniq, "")).take(from_numpy(index))
    if kind == INT:
        ints, missing = as_integers(np.asarray(values))
        return filled(integer_text(ints), missing, EMPTY)
    places = decimal_places(kind, decimals)
    units, missing = rounded(np.asarray(values), places)
    return filled(decimal_text(units, places), missing, EMPTY)


def delimited(cells: pa.Array, delimiter: str) -> pa.Array:
    """Cells as Python's ``csv`` writer quotes them (``QUOTE_MINIMAL``): in double quotes, its
    quotes doubled, a cell holding the delimiter, a quote or a line break; others as they are."""
    special = pc.match_substring_regex(cells, f'[{delimiter}"\\r\\n]')
    if not pc.any(special).as_py():
        return cells
    doubled = pc.replace_substring(cells, '"', '""')
    return pc.if_else(special, pc.binary_join_element_wise(text('"'), doubled, text('"'), EMPTY), cells)


def chunks(result: Result) -> Iterator[slice]:
    """The rows of a result a slice of :data:`CHUNK` at a time (a trace's columns are gathered
    as they are read: a slice's cells, never the whole table's, are held at once)."""
    if result.columns:
        yield from (slice(begin, begin + CHUNK) for begin in range(0, result.rows, CHUNK))


def chunk_cells(result: Result, rows: slice, decimals: int,
                quote: Callable[[pa.Array], pa.Array] = as_is) -> list[pa.Array]:
    """The cells of every column at ``rows`` (text through ``quote``, when given)."""
    return [plain_cells(c.kind, result.frame[c.name][rows], result.strings, decimals, quote) for c in result.columns]


def delimited_parts(result: Result, fmt: str, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """``csv`` or ``tsv``: the header of the column names, then a line per row."""
    delimiter = DELIMITERS[fmt]
    names = delimited(from_texts([c.name for c in result.columns]), delimiter).to_pylist()
    yield (delimiter.join(names) + "\n").encode("utf-8")
    quote = functools.partial(delimited, delimiter=delimiter)
    for rows in chunks(result):  # numbers need no quotes; each distinct text is quoted once (5 M rows: 6.7 -> 0.3 s)
        yield lines_bytes(pc.binary_join_element_wise(*chunk_cells(result, rows, decimals, quote), text(delimiter)))


def shortened(cells: pa.Array) -> pa.Array:
    """Text cells of the console: past :data:`WIDTH_LIMIT` characters, the first 99 and ``…``."""
    lengths = pc.utf8_length(cells)  # compared in numpy: a Python int given to pc.greater imports pandas
    long = to_numpy(lengths, np.dtype(np.int64 if lengths.type == pa.int64() else np.int32)) > WIDTH_LIMIT
    if not long.any():
        return cells
    cut = pc.binary_join_element_wise(pc.utf8_slice_codeunits(cells, 0, WIDTH_LIMIT - 1), text(ELLIPSIS), EMPTY)
    return pc.if_else(from_numpy(long), cut, cells)


def centred(name: str, width: int) -> str:
    """A heading in the middle of its column, the odd space on the right (as nsys centres)."""
    left = (width - len(name)) // 2
    return " " * left + name + " " * (width - len(name) - left)


def console_cells(result: Result, rows: slice, decimals: int) -> list[pa.Array]:
    """The console's cells at ``rows``: text made printable and cut past :data:`WIDTH_LIMIT`."""
    cells = chunk_cells(result, rows, decimals)
    return [shortened(printable(cell)) if column.kind == TEXT else cell for column, cell in zip(result.columns, cells)]


def column_parts(result: Result, decimals: int = 1) -> Iterator[bytes | memoryview]:
    """nsys's console table: a heading line, a line of dashes, then the rows; every line begins
    with a space, columns are two spaces apart and trailing spaces are dropped (nsys 2024). The
    widths come from a first pass over the rows, the lines from a second."""
    widths = [len(column.name) for column in result.columns]
    for rows in chunks(result):
        for index, cell in enumerate(console_cells(result, rows, decimals)):
            widths[index] = max(widths[index], (pc.max(pc.utf8_length(cell)).as_py() or 0) if len(cell) else 0)
    heading = " " + GAP.join(centred(c.name, w) for c, w in zip(result.columns, widths))
    dashes = " " + GAP.join("-" * w for w in widths)
    yield f"{heading.rstrip()}\n{dashes}\n".encode("utf-8")
    for rows in chunks(result):
        padded = [(pc.utf8_rpad if column.kind == TEXT else pc.utf8_lpad)(cell, width)
                  for column, cell, width in zip(result.columns, console_cells(result, rows, decimals), widths)]
        lines = pc.binary_join_element_wise(text(" "), pc.binary_join_element_wise(*padded, text(GAP)), EMPTY)
        yield lines_bytes(pc.utf8_rtrim_whitespace(lines))


# nsys's --timeunit: its unit names, each taken by any prefix that names no other unit
# ("us", "milli", "sec"); the heading's unit, the divisor of ns and the printed kind that keeps
# the nanoseconds (docs/decisions.md D37).
TIME_UNIT_NAMES = {"nsec": "nsec", "nanoseconds": "nsec", "usec": "usec", "microseconds": "usec", "msec": "msec",
                   "milliseconds": "msec", "seconds": "seconds"}
TIME_UNITS = {"usec": ("us", 10 ** 3, FIGURE), "msec": ("ms", 10 ** 6, SIX_PLACES),
              "seconds": ("s", 10 ** 9, NINE_PLACES)}
NANOSECONDS = " (ns)"


def time_unit(text: str) -> str:
    """The unit ``--timeunit`` names (``nsec``, ``usec``, ``msec``, ``seconds``), as nsys matches
    prefixes; an error naming the units when ``text`` names none or several."""
    named = {unit for name, unit in TIME_UNIT_NAMES.items() if name.startswith(text.strip().lower())}
    if len(named) != 1 or not text.strip():
        raise AsysError(f"--timeunit {quoted(text)}: expected one of {', '.join(TIME_UNIT_NAMES)} (or a prefix "
                        "naming only one)")
    return named.pop()


class InUnit:
    """A column of nanoseconds read in another unit, a slice at a time as the writers read."""

    __slots__ = ("values", "divisor")

    def __init__(self, values: object, divisor: int) -> None:
        self.values, self.divisor = values, divisor

    def __len__(self) -> int:
        return len(self.values)  # type: ignore[arg-type]

    def __getitem__(self, key: slice) -> np.ndarray:
        values = np.asarray(self.values[key])  # type: ignore[index]
        return np.where(is_missing(values), np.nan, values.astype(np.float64) / self.divisor)  # NA stays missing

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        values = self[:]
        return values if dtype is None else values.astype(dtype, copy=False)


def in_time_unit(result: Result, unit: str) -> Result:
    """``result`` with its columns in ns (``... (ns)``, integers or decimals) in ``unit``:
    renamed (``Avg (us)``), divided, printed to the nanosecond."""
    if unit not in TIME_UNITS:
        return result
    heading, divisor, kind = TIME_UNITS[unit]
    columns, frame = [], dict(result.frame)
    for column in result.columns:
        if column.name.endswith(NANOSECONDS) and column.kind in (INT, DECIMAL):
            name = f"{column.name[:-len(NANOSECONDS)]} ({heading})"
            frame[name] = InUnit(frame.pop(column.name), divisor)
            column = Column(name, kind, column.help.replace("(ns)", f"({heading})"))
        columns.append(column)
    return replace(result, columns=tuple(columns), frame=frame, share=result.share and result.share.replace(
        NANOSECONDS, f" ({heading})"))
