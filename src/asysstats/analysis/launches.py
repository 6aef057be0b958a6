"""The API call that launched each PPU activity (same process and correlation id), and the
innermost HGTX range around that call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np

from asysstats.analysis.hgtx import all_ranges
from asysstats.analysis.reads import CALL_COLUMNS
from asysstats.compute.distinct import tie_order
from asysstats.compute.intervals import innermost_enclosing
from asysstats.compute.keys import lookup_pair
from asysstats.core.tables import EventTable, empty_table

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs



def runtime_calls(inputs: "Inputs") -> EventTable:
    """All API calls (no time window: a call is only looked up by correlation id)."""
    columns = inputs.reading("runtime", CALL_COLUMNS)
    if not inputs.has("runtime"):
        return empty_table(list(columns) + ["pid", "tid"])
    return inputs.whole("runtime", columns)


def earliest_launches(calls: Mapping[str, np.ndarray], activities: Mapping[str, np.ndarray]
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the activities a call launched and of their launch calls: the call of the
    activity's process with its correlation id, of several the earliest by start, then end (a
    graph launch's call launches many). Calls are ordered by a stable sort of their starts, which
    come in time order, and by end only where starts tie."""
    by_call = tie_order(calls["start"], lambda rows: (calls["end"][rows],))
    found = lookup_pair(calls["pid"][by_call], calls["correlationId"][by_call], activities["pid"],
                        activities["correlationId"])
    rows = np.flatnonzero((found >= 0) & (activities["correlationId"] >= 0))
    return rows, by_call[found[rows]]


def launch_rows(calls: EventTable, activities: EventTable) -> np.ndarray:
    """Row of the launching API call of each activity (same process and correlationId), or -1
    (also for correlationId 0, which marks activities no call caused)."""
    rows = lookup_pair(calls["pid"], calls["correlationId"], activities["pid"], activities["correlationId"])
    return np.where(activities["correlationId"] > 0, rows, -1)


def innermost_range_names(inputs: "Inputs", activities: EventTable) -> np.ndarray:
    """Per activity row (kernels, memcpy, memset: ``pid``, ``correlationId``), the name id
    of the innermost range (latest start, then earliest end) on the launching call's thread
    that holds the call's start; -1 when none (docs/decisions.md D10).

    Every range of the report counts (the time window selects activities, not the ranges
    around them); graph mapping does not apply."""
    out = np.full(activities.rows, -1, dtype=np.int64)
    ranges = all_ranges(inputs)
    if activities.rows == 0 or ranges.rows == 0:
        return out
    calls = runtime_calls(inputs)
    launch = launch_rows(calls, activities)
    have = np.flatnonzero(launch >= 0)
    inner = innermost_enclosing(ranges["globalTid"], ranges["start"], ranges["end"], ranges["rangeId"],
                                calls["globalTid"][launch[have]], calls["start"][launch[have]])
    found = inner >= 0
    out[have[found]] = ranges["name"][inner[found]]
    return out

