"""Text columns of trace frames made a slice of rows at a time, as the writers read them: text
built once per distinct value, and HGTX range stacks laid out by one Arrow ``take``; each
gives its CSV cells too (:meth:`TextColumn.csv_cells`), quoted as they are made."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.compute.arrow import from_numpy, from_texts, text, text_offsets
from asysstats.core.result import Gathered
from asysstats.core.tables import EventTable
from asysstats.writing.format import quoted


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
