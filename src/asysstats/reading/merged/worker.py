"""What runs where a report lives: open it once, describe it, load projected columns.

These functions run on the worker that owns a report (a Dask worker, or the CLI process
itself). An opened report stays open in that worker's process (:data:`_OPEN`), so its
in-memory tables and its columnar cache are reused by every rule of the run. A load
returns only the requested columns, already placed in the merged set
(:mod:`asysstats.reading.merged.identity`); text travels dictionary-encoded (codes per row, each
distinct string once) and is re-interned by value where the parts are concatenated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, Union

import numpy as np

from asysstats.compute.distinct import distinct
from asysstats.reading.merged.identity import Placement, place
from asysstats.reading.opening import open_report
from asysstats.reading.schema import TABLES

if TYPE_CHECKING:
    from asysstats.reading.protocol import ReportSource

ACTIVITY_TABLES = ("kernels", "memcpy", "memset")
Text = tuple[np.ndarray, list]  # per-row codes (-1: missing) into a list of distinct strings
Part = dict[str, Union[np.ndarray, Text]]

_OPEN: dict[tuple[str, bool], ReportSource] = {}
# (merged set, path) -> the report as a part (asysstats.api.merging.parts)
VIEWS: dict[tuple[str, str], ReportSource] = {}


@dataclass(frozen=True)
class ReportInfo:
    """What the driver needs to know of a report before loading anything from it."""

    path: str
    dialect: str
    physical: dict[str, tuple[str, ...]]  # logical table -> physical tables present
    device_span: int  # 1 + the highest device id (device table, else the activities)
    capture_start: int | None  # ANALYSIS_DETAILS.startTime
    capture_stop: int | None
    utc_start: int | None  # TARGET_INFO_SESSION_START_TIME.utcEpochNs


def visible(paths: Sequence[str]) -> list[bool]:
    """Which of ``paths`` this worker can read."""
    return [os.path.isfile(p) for p in paths]


def opened(path: str, cache: bool) -> ReportSource:
    key = (path, cache)
    if key not in _OPEN:
        _OPEN[key] = open_report(path, cache=cache)
    return _OPEN[key]


def describe(path: str, cache: bool) -> ReportInfo:
    """Open the report (every failure to open is raised here) and read its small tables."""
    report = opened(path, cache)
    physical = {name: tuple(report.physical_tables(name)) for name in TABLES if report.has(name)}
    analysis = report.load("analysis") if "analysis" in physical else None
    session = report.load("session_start") if "session_start" in physical else None
    ranged = analysis if analysis is not None and analysis.rows > 0 else None
    return ReportInfo(path, report.dialect, physical, device_span(report, physical),
                      int(ranged["startTime"][0]) if ranged is not None else None,
                      int(ranged["stopTime"][0]) if ranged is not None else None,
                      int(session["utcEpochNs"][0]) if session is not None and session.rows else None)


def device_span(report, physical: dict) -> int:
    if "devices" in physical:
        ids = report.load("devices", ("id",))["id"]
    else:
        ids = np.concatenate([report.load(t, ("deviceId",))["deviceId"] for t in ACTIVITY_TABLES if t in physical]
                             or [np.empty(0, np.int64)])
    return int(ids.max()) + 1 if len(ids) and ids.max() >= 0 else 0


def load_part(path: str, cache: bool, logical: str, columns: tuple[str, ...], at: Placement) -> Part | None:
    """The report's table with ``columns`` (and derived pid/tid), placed; None when absent."""
    report = opened(path, cache)
    if not report.has(logical):
        return None
    table = report.load(logical, columns)
    spec = TABLES[logical]
    kinds = {c.name: c.kind for c in spec.columns}
    where = Path(path).name
    return {name: encode_text(report.strings, values) if kinds.get(name) in ("text", "strid")
            else place(logical, name, values, at, where) for name, values in table.items()}


def latest(path: str, cache: bool, logical: str, columns: tuple[str, ...], at: Placement) -> int | None:
    """The latest start or end of the report's table, placed (None when absent or empty).
    It reads ``columns`` (with start and end): the projection a rule reads next, which the
    report then holds."""
    report = opened(path, cache)
    table = report.load(logical, columns) if report.has(logical) else None
    if table is None or table.rows == 0:
        return None
    return int(max(place(logical, c, table[c], at, Path(path).name).max() for c in ("start", "end")))


def encode_text(strings, ids: np.ndarray) -> Text:
    """Per-row codes into the distinct strings of ``ids`` (-1 stays missing)."""
    codes = np.full(len(ids), -1, np.int64)
    valid = ids >= 0
    if not valid.any():
        return codes, []
    uniq, inverse = distinct(ids[valid])
    codes[valid] = inverse
    return codes, strings.lookup(uniq).tolist()


def take_text(text: Text, rows: np.ndarray) -> Text:
    """The ``rows`` of encoded text, with only the strings they use."""
    codes, values = text
    picked = codes[rows]
    valid = picked >= 0
    used, inverse = distinct(picked[valid])
    out = np.full(len(picked), -1, np.int64)
    out[valid] = inverse
    return out, [values[u] for u in used.tolist()]


def close(path: str, cache: bool) -> None:
    for key in [k for k in VIEWS if k[1] == path]:
        del VIEWS[key]
    report = _OPEN.pop((path, cache), None)
    if report is not None:
        report.close()
