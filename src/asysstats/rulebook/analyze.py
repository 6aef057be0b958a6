"""The ``asys analyze`` expert rules over PPU activity (kernels, memcpy, memset):
``ppu_gaps`` (long idle gaps) and ``ppu_time_util`` (chunks of low time utilisation).

Both work per process and device on the activities' ``[start, end)`` intervals. A
zero-length activity covers no time (``ppu_time_util`` ignores it) but is an activity: it
splits a ``ppu_gaps`` gap. Groups are looped over; events never are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from asysstats.analysis.declarations import RANGE_MODE, Option, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.compute.grouped import group_by
from asysstats.compute.intervals import busy_per_window, gaps
from asysstats.core.integers import INT64_MAX
from asysstats.core.result import INT, PERCENT, Column, Frame
from asysstats.core.tables import NA, EventTable

ACTIVITY_KINDS = ("kernels", "memcpy", "memset")
ROWS_50 = Option("rows", "int", "Maximum number of rows to print.", 50, minimum=1)
GAP = Option("gap", "decimal", "Report idle gaps longer than this many milliseconds (fractions too: 0.5).", 500,
             minimum=0, maximum=INT64_MAX // 1_000_000)  # in ns, an int64
THRESHOLD = Option("threshold", "int", "Report chunks whose utilisation is under this percentage.", 50, minimum=0)
CHUNKS = Option("chunks", "int", "Number of equal chunks the time range is cut into.", 100, minimum=1,
                maximum=1_000_000)  # each chunk is a few numbers in memory and may be a row
MERGE_PIDS = Option("merge-process-id", "flag", "Merge the processes of each device into one timeline.", False)
PID = Column("PID", INT, "Process identifier")
DEVICE_ID = Column("Device ID", INT, "PPU device identifier")
ACTIVITY_COLUMNS = ("start", "end", "deviceId", "globalPid")
READS = {kind: ACTIVITY_COLUMNS for kind in ACTIVITY_KINDS}


@dataclass(frozen=True)
class GapsOptions(Options):
    rows: int = ROWS_50.field()
    gap: Fraction = GAP.field()


@dataclass(frozen=True)
class TimeUtilOptions(Options):
    rows: int = ROWS_50.field()
    threshold: int = THRESHOLD.field()
    chunks: int = CHUNKS.field()
    range_mode: str = RANGE_MODE.field()
    merge_process_id: bool = MERGE_PIDS.field()


def activity_groups(inputs: Inputs, merge_processes: bool = False, zero_length: bool = False,
                    columns: tuple[str, ...] = ACTIVITY_COLUMNS, within: tuple[int, int] | None = None):
    """PPU activities of all kinds (the zero-length ones only with ``zero_length``; with
    ``within``, only those starting at or after its first time and ending at or before its
    second), with ``columns``, and their groups by (process, device)."""
    parts = [inputs.table(kind, columns) for kind in ACTIVITY_KINDS]
    activities = EventTable.concat(parts)
    length = activities["end"] - activities["start"]
    keep = length >= 0 if zero_length else length > 0
    if within is not None:
        keep &= (activities["start"] >= within[0]) & (activities["end"] <= within[1])
    activities = activities.take(keep)
    pids = np.full(activities.rows, NA, np.int64) if merge_processes else activities["pid"]
    return activities, group_by([pids, activities["deviceId"]])


def group_rows(groups, g: int) -> np.ndarray:
    return groups.order[groups.bounds[g]:groups.bounds[g + 1]]


GAP_COLUMNS = (
    Column("Duration (ns)", INT, "Length of the idle gap"),
    Column("Start (ns)", INT, "Start of the idle gap (end of the preceding activity)"),
    PID, DEVICE_ID,
)


def ppu_gaps(inputs: Inputs, options: GapsOptions) -> Frame:
    activities, groups = activity_groups(inputs, zero_length=True)
    longer_than = math.floor(options.gap * 1_000_000)  # an integer length is longer than x when longer than floor(x)
    found = []
    for g in range(groups.count):
        rows = group_rows(groups, g)
        lo, hi = gaps(activities["start"][rows], activities["end"][rows])
        keep = hi - lo > longer_than
        found.append((hi[keep] - lo[keep], lo[keep], np.full(keep.sum(), g)))
    duration, start, group = (np.concatenate(c) for c in zip(*found)) if found else (np.empty(0, np.int64),) * 3
    pid, device = groups.keys[0][group], groups.keys[1][group]
    order = np.lexsort((device, pid, start, -duration))
    return {"Duration (ns)": duration[order], "Start (ns)": start[order], "PID": pid[order], "Device ID": device[order]}


def chunk_edges(lo: int, hi: int, chunks: int) -> np.ndarray:
    """``chunks + 1`` integer edges cutting ``[lo, hi]`` into equal chunks (lengths differ by <= 1 ns)."""
    i = np.arange(chunks + 1, dtype=np.int64)
    length = hi - lo
    return lo + (length // chunks) * i + ((length % chunks) * i) // chunks


def low_runs(busy: np.ndarray, length: np.ndarray, threshold: float) -> tuple[np.ndarray, ...]:
    """Runs of adjacent chunks under ``threshold`` percent: (first chunk, busy time, length) per run."""
    valid = length > 0
    low = valid & (busy * 100.0 < threshold * np.where(valid, length, 1))
    starts = low & ~np.concatenate([[False], low[:-1]])
    run = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    busy_sum = np.bincount(run[low], weights=busy[low], minlength=len(first))
    length_sum = np.bincount(run[low], weights=length[low], minlength=len(first))
    return first, busy_sum, length_sum


UTIL_COLUMNS = (
    Column("In-Use (%)", PERCENT, "Time utilisation of the chunk (merged adjacent chunks: time-weighted)"),
    Column("Duration (ns)", INT, "Length of the chunk (or of the merged chunks)"),
    Column("Start (ns)", INT, "Start of the chunk"),
    Column("PID", INT, "Process identifier ('-' with merge-process-id)"), DEVICE_ID,
)


def ppu_time_util(inputs: Inputs, options: TimeUtilOptions) -> Frame:
    activities, groups = activity_groups(inputs, options.merge_process_id)
    full = inputs.full_range() if options.range_mode == "full" else None
    cells: list[tuple[np.ndarray, ...]] = []
    for g in range(groups.count):
        rows = group_rows(groups, g)
        starts, ends = activities["start"][rows], activities["end"][rows]
        lo, hi = full if full is not None else (int(starts.min()), int(ends.max()))
        if hi <= lo:
            continue
        edges = chunk_edges(lo, hi, options.chunks)
        first, busy, length = low_runs(busy_per_window(starts, ends, edges), np.diff(edges), options.threshold)
        cells.append((busy * 100.0 / length, length.astype(np.int64), edges[first], np.full(len(first), g)))
    in_use, duration, start, group = (np.concatenate(c) for c in zip(*cells)) if cells else (
        np.empty(0), np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64))
    pid, device = groups.keys[0][group], groups.keys[1][group]
    order = np.lexsort((device, pid, start, in_use))
    return {"In-Use (%)": in_use[order], "Duration (ns)": duration[order], "Start (ns)": start[order],
            "PID": pid[order], "Device ID": device[order]}


PPU_GAPS = Rule(
    name="ppu_gaps",
    title="PPU Gaps",
    help="Idle gaps longer than 'gap' milliseconds between the PPU activities (kernels, memcpy, memset) of "
         "each process on each device, within its first to last activity; longest first.",
    columns=GAP_COLUMNS,
    compute=ppu_gaps,
    reads=READS,
    options=GapsOptions,
    requires=ACTIVITY_KINDS,
    command="analyze",
)

PPU_TIME_UTIL = Rule(
    name="ppu_time_util",
    title="PPU Time Utilization",
    help="The time range of each process on each device ('range-mode') is cut into 'chunks' equal chunks; "
         "a chunk's utilisation is the time covered by PPU activity over its length. Chunks under "
         "'threshold' percent are reported, adjacent ones merged, in ascending order of utilisation.",
    columns=UTIL_COLUMNS,
    compute=ppu_time_util,
    reads=READS,
    options=TimeUtilOptions,
    requires=ACTIVITY_KINDS,
    command="analyze",
)

RULES = [PPU_GAPS, PPU_TIME_UTIL]
