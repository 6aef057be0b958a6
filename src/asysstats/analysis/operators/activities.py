"""The PPU activities of the operator rules: kernels, memcpy and memset in one table.

Columns: ``start``, ``end``, ``deviceId``, ``correlationId``, ``pid``, ``graphNodeId``, ``kind``
(int8: 0 kernel, 1 memcpy, 2 memset), ``aid`` (the *Activity ID*: the row id in its table,
memcpy rows numbered after all kernels and memset rows after all memcpy, so that ids are
unique and do not move with ``--filter-time``) and ``raw`` (the demangled kernel name that
recognition reads; -1 for copies and sets). What only traces print, ``name`` (the display
name: a kernel in the chosen name mode, ``Memcpy HtoD (device)``, ``Memset``), ``contextId``
and ``streamId``, is made when first read, from each activity's table row
(:func:`with_shown_columns`): the summaries of 50 M activities hold 1.3 GB less.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from asysstats.analysis.activity import memcpy_name_ids
from asysstats.analysis.correlate import activity_table, correlate
from asysstats.analysis.hgtx import all_ranges, name_filter
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.names import kernel_name_ids
from asysstats.analysis.operators.common import AnalysisOptions
from asysstats.analysis.reads import PPU_KINDS
from asysstats.core.tables import EventTable, empty_table

BASE_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid", "graphNodeId")
SHOWN_COLUMNS = ("contextId", "streamId")  # read when a trace prints them
EXTRA_COLUMNS = {"kernels": ("demangledName", "mangledName"), "memcpy": ("copyKind", "dstKind"), "memset": ()}
COLUMNS = ("start", "end", "deviceId", "correlationId", "pid", "graphNodeId", "kind", "aid", "raw")
ACTIVITY_READS = {name: BASE_COLUMNS + SHOWN_COLUMNS + extra for name, extra in EXTRA_COLUMNS.items()}


def load_activities(inputs: Inputs, devices: tuple[int, ...] | None) -> EventTable:
    """Every PPU activity inside the PPU-side window on the selected devices, in one table
    (the tables it is made of are not kept)."""
    with inputs.transient():
        offset = activity_offsets(inputs)
        parts = [activity_part(inputs, kind, name, devices, offset[kind])
                 for kind, name in enumerate(PPU_KINDS) if inputs.has(name)]
        return EventTable.concat(parts) if parts else empty_table(list(COLUMNS))


def activity_offsets(inputs: Inputs) -> dict[int, int]:
    """Per kind present, the Activity IDs before its table's: the rows of the tables before it."""
    offset, total = {}, 0
    for kind, name in enumerate(PPU_KINDS):
        if inputs.has(name):
            offset[kind] = total
            total += inputs.whole(name, ("start",)).rows
    return offset


def activity_part(inputs: Inputs, kind: int, name: str, devices: tuple[int, ...] | None,
                  offset: int) -> EventTable:
    """The ``COLUMNS`` of one activity table (``offset``: the Activity IDs before it)."""
    table = activity_table(inputs, name, BASE_COLUMNS + EXTRA_COLUMNS[name], devices)
    raw = kernel_name_ids(inputs.strings, table, "demangled") if name == "kernels" else np.full(table.rows, -1)
    columns = {c: table[c] for c in COLUMNS[:6]}
    return EventTable({**columns, "kind": np.full(table.rows, kind, np.int8), "aid": table["row"] + offset,
                       "raw": np.asarray(raw, np.int64)})


def with_shown_columns(inputs: Inputs, acts: EventTable, mode: str) -> EventTable:
    """``acts`` with ``name`` (kernels in name ``mode``), ``contextId`` and ``streamId`` made
    when first read, a kind at a time from the activities' rows in their tables."""
    def made(column: str) -> Callable[[], np.ndarray]:
        return lambda: shown_column(inputs, acts, column, mode)
    return acts.with_later_columns(**{column: made(column) for column in ("name", *SHOWN_COLUMNS)})


def shown_column(inputs: Inputs, acts: EventTable, column: str, mode: str) -> np.ndarray:
    out = np.empty(acts.rows, np.int64)
    for kind, offset in activity_offsets(inputs).items():
        rows = np.flatnonzero(acts["kind"] == kind)
        table_rows = acts["aid"][rows] - offset - 1
        name = PPU_KINDS[kind]
        if column != "name":
            out[rows] = inputs.whole(name, (column,))[column][table_rows]
        elif name == "kernels":
            out[rows] = acts["raw"][rows] if mode == "demangled" else \
                kernel_name_ids(inputs.strings, inputs.whole(name, EXTRA_COLUMNS[name]).take(table_rows), mode)
        elif name == "memcpy":
            copies = inputs.whole(name, EXTRA_COLUMNS[name])
            out[rows] = memcpy_name_ids(inputs, copies["copyKind"][table_rows], copies["dstKind"][table_rows])
        else:
            out[rows] = inputs.strings.intern(["Memset"])[0]
    return out


def range_filter(inputs: Inputs, activities: EventTable, options: AnalysisOptions, graph: bool,
                 launch: np.ndarray) -> np.ndarray:
    """Mask of the activities that ``range-include`` / ``range-exclude`` keep: with an
    include list, those correlated with a range whose name matches it; never those
    correlated with a range whose name matches the exclude list (``launch``: the
    activities' launching call rows)."""
    keep = np.ones(activities.rows, dtype=bool)
    include, exclude = options.range_include, options.range_exclude
    if not (include or exclude) or activities.rows == 0:
        return keep
    ranges = all_ranges(inputs)
    if include:
        rows = np.flatnonzero(name_filter(inputs, ranges["name"], include, None))
        hit = np.zeros(activities.rows, dtype=bool)
        hit[correlate(inputs, ranges.take(rows), activities, graph, launch).activity_row] = True
        keep &= hit
    if exclude:
        rows = np.flatnonzero(~name_filter(inputs, ranges["name"], None, exclude))
        keep[correlate(inputs, ranges.take(rows), activities, graph, launch).activity_row] = False
    return keep
