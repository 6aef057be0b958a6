"""Suspect events: rows of a table with start and end that statistics leave out unless
``--keep-suspect-events`` — those ending before they start, and those lasting longer than the
capture of ``ANALYSIS_DETAILS`` (the first checks of :mod:`asysstats.rulebook.quality`) — and
rows with a timestamp outside ±2^62 ns, left out always: a difference of two such times might
not fit in 64 bits (docs/decisions.md D15). Found once per report, kept in the column cache, and
left out of every table :meth:`asysstats.analysis.inputs.Inputs.table` loads, with a note per reason."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from asysstats.core.errors import AsysError
from asysstats.core.tables import EventTable
from asysstats.reading.schema import TABLES

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs

KEEP_HINT = "(use --keep-suspect-events to keep them)"
TIME_LIMIT = 1 << 62  # ns, about 146 years either side of the clock's origin
TOTAL_LIMIT = 1 << 61  # ns, 73 years: the durations of four such tables still sum in int64
TIMED_TABLES = tuple(n for n, spec in TABLES.items() if {"start", "end"} <= {c.name for c in spec.columns})


@dataclass(frozen=True)
class Suspects:
    """Rows (ascending) of one table that statistics leave out: ``backwards`` (end < start),
    ``longer`` (than the capture, None when unknown) and ``outside`` (a time past ±2^62 ns)."""

    backwards: np.ndarray
    longer: np.ndarray
    outside: np.ndarray
    capture: int | None


_SUSPECTS: "weakref.WeakKeyDictionary[Any, dict[str, Suspects]]" = weakref.WeakKeyDictionary()


def capture_length(inputs: "Inputs") -> int | None:
    """The capture's length by ``ANALYSIS_DETAILS``; None without it (or when empty)."""
    if not inputs.has("analysis"):
        return None
    lo, hi = inputs.capture_range()
    return hi - lo if hi > lo else None


def suspects(inputs: "Inputs", name: str, loaded: EventTable | None = None) -> Suspects:
    """The suspect rows of a table with start and end (cached per report, and in the column
    cache); ``loaded``, a full load of the table, saves reading its times again when it holds them."""
    cache = _SUSPECTS.setdefault(inputs.report, {})
    if name not in cache:
        capture = capture_length(inputs)

        def build() -> EventTable:
            has_times = loaded is not None and "start" in loaded and "end" in loaded
            t = loaded if loaded is not None and has_times else inputs.report.load(name, ("start", "end"))
            end_col = TABLES[name].column("end")
            ended = np.ones(t.rows, bool) if end_col.required else t["end"] != end_col.fill
            outside = beyond_limit(t["start"]) | (ended & beyond_limit(t["end"]))
            ended &= ~outside
            length = t["end"] - t["start"]  # no wrap: both lie within the limit where ended
            backwards = np.flatnonzero(ended & (length < 0))
            longer = np.flatnonzero(ended & (length > capture)) if capture is not None else backwards[:0]
            outside_rows = np.flatnonzero(outside)
            np.abs(length, out=length)
            length[~ended] = 0
            check_total(inputs, name, length)
            return EventTable({"row": np.concatenate([backwards, longer, outside_rows]),
                               "reason": np.repeat([0, 1, 2], [len(backwards), len(longer), len(outside_rows)])})

        found = inputs.report.derived(f"suspects_{name}_{capture}", ("row", "reason"), (), build)
        rows, reason = found["row"], found["reason"]
        cache[name] = Suspects(rows[reason == 0], rows[reason == 1], rows[reason == 2], capture)
    return cache[name]


def check_total(inputs: "Inputs", name: str, lengths: np.ndarray) -> None:
    """An error when the lengths of a table's events (within the time limit, as absolute values)
    total :data:`TOTAL_LIMIT` or more: no sum of them, nor of four such tables, may wrap."""
    total = float(lengths.sum(dtype=np.float64))
    if total >= TOTAL_LIMIT:
        raise AsysError(f"{inputs.path}: table {name}: its events last {total:.3g} ns in all, more than 2^61 ns "
                        "(73 years); their statistics would not fit in 64 bits")


def beyond_limit(times: np.ndarray) -> np.ndarray:
    """Where a time lies at or past ±:data:`TIME_LIMIT`."""
    return (times >= TIME_LIMIT) | (times <= -TIME_LIMIT)


def without_suspect_events(inputs: "Inputs", name: str, table: EventTable, keep: bool = False) -> EventTable:
    """``table`` (a full load of ``name``) without its suspect rows (with ``keep``, only without
    those outside the time limit); a note per reason on ``inputs.notes``."""
    if name not in TIMED_TABLES or not inputs.has(name):
        return table
    found = suspects(inputs, name, table)
    file = inputs.path.name
    reasons = [(found.outside, "with a time beyond ±2^62 ns excluded (durations would not fit in 64 bits)")]
    if not keep:
        reasons += [(found.backwards, f"with end < start excluded {KEEP_HINT}"),
                    (found.longer, f"longer than the capture ({found.capture} ns) excluded {KEEP_HINT}")]
    dropped = [rows for rows, _ in reasons if len(rows)]
    for rows, reason in reasons:
        note = f"{file}: {len(rows)} {name} rows {reason}"
        if len(rows) and note not in inputs.notes:
            inputs.notes.append(note)
    if not dropped:
        return table
    keep_rows = np.ones(table.rows, bool)
    for rows in dropped:
        keep_rows[rows] = False
    return table.take(keep_rows)
