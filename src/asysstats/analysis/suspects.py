"""Suspect events: rows of a table with start and end that statistics leave out unless
``--keep-suspect-events`` — those ending before they start, and those lasting longer than the
capture of ``ANALYSIS_DETAILS`` (the first two checks of :mod:`asysstats.rulebook.quality`). Found once
per report, kept in the column cache, and left out of every table ``engine.Inputs.table`` loads,
with a note per reason."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from asysstats.core.tables import EventTable
from asysstats.reading.schema import TABLES

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs

KEEP_HINT = "(use --keep-suspect-events to keep them)"
TIMED_TABLES = tuple(n for n, spec in TABLES.items() if {"start", "end"} <= {c.name for c in spec.columns})


@dataclass(frozen=True)
class Suspects:
    """Rows (ascending) of one table that statistics leave out: ``backwards`` (end < start)
    and ``longer`` (than the capture, None when unknown)."""

    backwards: np.ndarray
    longer: np.ndarray
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
            ended = True if end_col.required else t["end"] != end_col.fill
            backwards = np.flatnonzero(ended & (t["end"] < t["start"]))
            longer = np.flatnonzero(ended & (t["end"] - t["start"] > capture)) if capture is not None else backwards[:0]
            return EventTable({"row": np.concatenate([backwards, longer]),
                               "longer": np.repeat([0, 1], [len(backwards), len(longer)])})

        found = inputs.report.derived(f"suspects_{name}_{capture}", ("row", "longer"), (), build)
        is_longer = found["longer"].astype(bool)
        cache[name] = Suspects(found["row"][~is_longer], found["row"][is_longer], capture)
    return cache[name]


def without_suspect_events(inputs: "Inputs", name: str, table: EventTable) -> EventTable:
    """``table`` (a full load of ``name``) without its suspect rows; a note per reason on ``inputs.notes``."""
    if name not in TIMED_TABLES or not inputs.has(name):
        return table
    found = suspects(inputs, name, table)
    file = inputs.path.name
    reasons = ((found.backwards, "with end < start"), (found.longer, f"longer than the capture ({found.capture} ns)"))
    for rows, reason in reasons:
        note = f"{file}: {len(rows)} {name} rows {reason} excluded {KEEP_HINT}"
        if len(rows) and note not in inputs.notes:
            inputs.notes.append(note)
    if not len(found.backwards) and not len(found.longer):
        return table
    keep = np.ones(table.rows, bool)
    keep[found.backwards] = False
    keep[found.longer] = False
    return table.take(keep)
