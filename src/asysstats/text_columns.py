"""Text columns of trace frames made a slice of rows at a time, as the writers read them: text
built once per distinct value, and HGTX range stacks joined by Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.engine import Gathered
from asysstats.hgtx import all_ranges
from asysstats.io.arrow import from_numpy, text
from asysstats.io.tables import EventTable

if TYPE_CHECKING:
    from asysstats.io.report import Report


def range_stacks(report: "Report", range_ids: np.ndarray | Gathered) -> "StackColumn":
    """``:6:7:8`` per range of ``range_ids``: the range ids of its push/pop stack, outermost
    first (an ancestor may lie outside the time window), as a trace column joined a slice at
    a time (:class:`StackColumn`)."""
    return StackColumn(all_ranges(report), range_ids)


class TextColumn(Gathered):
    """A text column of a frame as Arrow strings, made for a slice of rows at a time as the
    writers read a column: ``values[rows]`` of a string array (text built once per distinct
    value, no string id interned for it)."""

    __slots__ = ()

    def __getitem__(self, key: slice) -> pa.Array:
        return self.values.take(from_numpy(self.rows[key]))  # type: ignore[union-attr]

    def __array__(self, dtype: np.dtype | None = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self[:].to_pylist(), dtype=object)


class StackColumn(TextColumn):
    """A text column of range stacks, joined by Arrow (no Python string per range) for a
    slice of rows at a time, as the writers read a column: the text of every row at once
    would outweigh the rest of a trace. ``values``: the report's ranges; ``rows``: the range
    id of each row; ``parent``: each range's parent row (-1 at level 0)."""

    __slots__ = ("parent",)

    def __init__(self, ranges: EventTable, range_ids: np.ndarray | Gathered) -> None:
        super().__init__(ranges, range_ids)  # type: ignore[arg-type]
        parent = np.searchsorted(ranges["rangeId"], ranges["parentId"])
        self.parent = np.where(ranges["level"] > 0, parent, -1).astype(np.int32)

    def __getitem__(self, key: slice) -> pa.Array:
        ranges: EventTable = self.values  # type: ignore[assignment]
        row = np.searchsorted(ranges["rangeId"], self.rows[key]).astype(np.int32)
        depth = int(ranges["level"][row].max(initial=-1)) + 1
        stack = np.full((len(row), depth), -1, np.int32)  # per row its ranges, outermost first; -1 before them
        for level in reversed(range(depth)):
            stack[:, level] = row
            row = np.where(row >= 0, self.parent[np.maximum(row, 0)], -1)
        used = stack >= 0
        offsets = np.zeros(len(stack) + 1, np.int32)
        np.cumsum(np.count_nonzero(used, axis=1), out=offsets[1:])
        ids = pc.cast(from_numpy(ranges["rangeId"][stack[used]]), pa.string())
        joined = pc.binary_join(pa.ListArray.from_arrays(from_numpy(offsets), ids), text(":"))
        return pc.binary_join_element_wise(text(""), joined, text(":"))  # ":" before the first id

