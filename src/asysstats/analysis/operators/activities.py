"""The PPU activities of the operator rules: kernels, memcpy and memset in one table.

Columns: ``start``, ``end``, ``deviceId``, ``contextId``, ``streamId``, ``correlationId``,
``pid``, ``graphNodeId``, ``kind`` (0 kernel, 1 memcpy, 2 memset), ``aid`` (the *Activity
ID*: the row id in its table, memcpy rows numbered after all kernels and memset rows after
all memcpy, so that ids are unique and do not move with ``--filter-time``), ``name`` (the
display name: a kernel in the chosen name mode, ``Memcpy HtoD (device)``, ``Memset``) and
``raw`` (the demangled kernel name that recognition reads; -1 for copies and sets).
"""

from __future__ import annotations

import numpy as np

from asysstats.analysis.activity import memcpy_name_ids
from asysstats.analysis.correlate import activity_table, correlate
from asysstats.analysis.hgtx import all_ranges, name_filter
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.names import kernel_name_ids
from asysstats.analysis.operators.common import AnalysisOptions
from asysstats.analysis.reads import PPU_KINDS
from asysstats.core.tables import EventTable, empty_table

BASE_COLUMNS = ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "graphNodeId")
EXTRA_COLUMNS = {"kernels": ("demangledName", "mangledName"), "memcpy": ("copyKind", "dstKind"), "memset": ()}
COLUMNS = ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "pid", "graphNodeId", "kind", "aid",
           "name", "raw")
ACTIVITY_READS = {name: BASE_COLUMNS + extra for name, extra in EXTRA_COLUMNS.items()}  # what load_activities reads


def load_activities(inputs: Inputs, devices: tuple[int, ...] | None, mode: str = "demangled") -> EventTable:
    """Every PPU activity inside the PPU-side window on the selected devices, in one table
    (the tables it is made of are not kept)."""
    with inputs.transient():
        parts, offset = [], 0
        for kind, name in enumerate(PPU_KINDS):
            if inputs.has(name):
                parts.append(activity_part(inputs, kind, name, devices, mode, offset))
                offset += inputs.whole(name, ("start",)).rows
        return EventTable.concat(parts) if parts else empty_table(list(COLUMNS))


def activity_part(inputs: Inputs, kind: int, name: str, devices: tuple[int, ...] | None, mode: str,
                  offset: int) -> EventTable:
    """The ``COLUMNS`` of one activity table (``offset``: the Activity IDs before it)."""
    pool = inputs.strings
    table = activity_table(inputs, name, BASE_COLUMNS + EXTRA_COLUMNS[name], devices)
    if name == "kernels":
        raw = kernel_name_ids(pool, table, "demangled")
        shown = raw if mode == "demangled" else kernel_name_ids(pool, table, mode)
    elif name == "memcpy":
        shown, raw = memcpy_name_ids(inputs, table["copyKind"], table["dstKind"]), np.full(table.rows, -1)
    else:
        shown, raw = np.full(table.rows, pool.intern(["Memset"])[0]), np.full(table.rows, -1)
    columns = {c: table[c] for c in COLUMNS[:8]}
    return EventTable({**columns, "kind": np.full(table.rows, kind, np.int64), "aid": table["row"] + offset,
                       "name": np.asarray(shown, np.int64), "raw": np.asarray(raw, np.int64)})


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
