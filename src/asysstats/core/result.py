"""A rule's output: its declared columns (a name, a kind that tells the writers how to format
it, help), the frame a compute returns, and the result the writers read.

A frame column is a numpy array (string ids for text), an Arrow string array, or a column
gathered a slice of rows at a time as it is written (:class:`Gathered`; text made per slice:
:class:`TextColumn`, :class:`StackColumn`). Rules never format; the writers format every
cell from its column's kind."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, from_texts, quoted, text, text_offsets
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable

if TYPE_CHECKING:
    from asysstats.compute.distinct import Coded

INT = "int"          # ns, bytes, counts, ids; floats are truncated toward zero
PERCENT = "percent"  # one decimal (the --format ratio unit changes the decimals)
RATIO = "ratio"      # one decimal
DECIMAL = "decimal"  # a measured value, one decimal
FIGURE = "figure"    # a modelled or derived figure (GFLOPs, TFLOP/s, TB/s), three decimals
SIX_PLACES = "six_places"    # six decimals: a time in ms to the ns (--timeunit)
NINE_PLACES = "nine_places"  # nine decimals: a time in s to the ns
TEXT = "text"        # quoted; string ids are resolved through the report's string pool
# Comparison cells (docs/decisions.md D5): an (n, 2) array of base and target values, each side
# formatted with the inner kind and joined as "base / target"; a missing side prints "-".
PAIR_INT = "pair_int"
PAIR_PERCENT = "pair_percent"
PAIR_FIGURE = "pair_figure"
PAIR_TEXT = "pair_text"  # text values (str or None), never string ids: the sides have different pools
PAIR_INNER = {PAIR_INT: INT, PAIR_PERCENT: PERCENT, PAIR_FIGURE: FIGURE, PAIR_TEXT: TEXT}
COLUMN_KINDS = (INT, PERCENT, RATIO, DECIMAL, FIGURE, SIX_PLACES, NINE_PLACES, TEXT) + tuple(PAIR_INNER)
PLACES = {FIGURE: 3, SIX_PLACES: 6, NINE_PLACES: 9}  # the decimals of kinds printed with more than one
# The tool whose output a rule mirrors (docs/decisions.md D31): the asys reference's formats, or
# ``nsys stats``'s (CSV, TSV, JSON and console columns as NVIDIA writes them, asysstats.writing.nsys).
ASYS, NSYS_STATS = "asys", "nsys"
MIRRORS = (ASYS, NSYS_STATS)


def decimal_places(kind: str, percent_places: int) -> int:
    """The printed decimals of a numeric kind other than INT (percentages: as asked)."""
    return percent_places if kind == PERCENT else PLACES.get(kind, 1)

# A computed table before it is shaped into a result: column name -> numpy array (or an Arrow
# string array, or a column gathered a slice at a time: asysstats.core.result.Gathered).
Frame = dict[str, Any]


@dataclass(frozen=True)
class Column:
    name: str
    kind: str
    help: str

    def __post_init__(self) -> None:
        if self.kind not in COLUMN_KINDS:
            raise ValueError(f"column {self.name}: unknown kind {self.kind}")


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
    label: str | None = None  # the column naming the rows of the XLSX chart (None: the first text column)
    numbered: bool = True  # CSV and console tables begin with Row# (not where the reference's example has none)
    mirrors: str = ASYS  # whose formats the writers follow: ASYS or NSYS_STATS

    @property
    def rows(self) -> int:
        return len(next(iter(self.frame.values()))) if self.frame else 0

    def head(self, count: int) -> "Result":
        """The first ``count`` rows (the console's brief summary of the default set)."""
        return replace(self, frame={name: values[:count] for name, values in self.frame.items()})


class TextColumn(Gathered):
    """A text column of a frame as Arrow strings, made for a slice of rows at a time as the
    writers read a column: ``values[rows]`` of a string array (text built once per distinct
    value, no string id interned for it)."""

    __slots__ = ()

    def __getitem__(self, key: slice) -> pa.Array:
        return self.values.take(from_numpy(self.rows[key]))  # type: ignore[union-attr]

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self[:].to_pylist(), dtype=object)

    def csv_cells(self, key: slice) -> pa.Array:
        """The CSV cells of a slice of rows (docs/decisions.md D6): the distinct values quoted as
        they are taken, one pass over the text."""
        return quoted(self[key])


class StackColumn(TextColumn):
    """A text column of range stacks for a slice of rows at a time, as the writers read a
    column (the text of every row at once would outweigh the rest of a trace): ``:<id>`` of
    each range made once, and a slice's stacks one ``take`` of them, its rows' ranges and
    their ancestors in order, whose text is the stacks' text. ``values``: the report's
    ranges; ``rows``: the range id of each row."""

    __slots__ = ("row_of", "parent", "parts")

    def __init__(self, ranges: EventTable, range_ids: np.ndarray | Gathered) -> None:
        super().__init__(ranges, range_ids)  # type: ignore[arg-type]
        ids = ranges["rangeId"]
        self.row_of = np.zeros(int(ids.max(initial=0)) + 1, np.int32)  # each range id's row
        self.row_of[ids] = np.arange(len(ids), dtype=np.int32)
        nested = (ranges["level"] > 0) & (ranges["parentId"] >= 0)
        self.parent = np.full(len(ids), -1, np.int32)
        self.parent[nested] = self.row_of[ranges["parentId"][nested]]
        ids_text = pc.cast(from_numpy(ids), pa.string())
        self.parts = pa.concat_arrays([pc.binary_join_element_wise(text(""), ids_text, text(":")),
                                       from_texts(['"'])])  # ``:<id>`` per range, then '"'; read by formatting threads

    def __getitem__(self, key: slice) -> pa.Array:
        return self.stacks(key, quote=False)

    def csv_cells(self, key: slice) -> pa.Array:
        return self.stacks(key, quote=True)  # range ids hold no quote

    def stacks(self, key: slice, quote: bool) -> pa.Array:
        """The stacks of a slice of rows, each in double quotes with ``quote``."""
        ranges: EventTable = self.values  # type: ignore[assignment]
        row = self.row_of[self.rows[key]]
        depth = int(ranges["level"][row].max(initial=-1)) + 1
        stack = np.full((len(row), depth + 2 * quote), -1, np.int32)  # per row its parts; -1 before its ranges
        for level in reversed(range(quote, depth + quote)):
            stack[:, level] = row
            row = np.where(row >= 0, self.parent[np.maximum(row, 0)], -1)
        if quote:
            stack[:, [0, -1]] = len(ranges["rangeId"])
        used = stack >= 0
        taken = self.parts.take(from_numpy(stack[used]))
        ends = np.zeros(len(stack) + 1, np.int64)
        np.cumsum(np.count_nonzero(used, axis=1), out=ends[1:])
        offsets = text_offsets(taken)[ends]
        return pa.Array.from_buffers(pa.string(), len(stack), [None, pa.py_buffer(offsets), taken.buffers()[2]])
