"""HGTX ranges projected onto the PPU: ``hgtx_ppu_proj_sum`` and ``hgtx_ppu_proj_trace``.

A range's projection runs from the start of its first correlated PPU activity (kernel,
memcpy, memset) to the end of its last; its PPU active time is the union of those
activities. Ranges with no correlated activity have no projection and no row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.correlate import Anchors, Projection, ppu_activities, projected
from asysstats.analysis.declarations import (
    DEVICE,
    NO_GRAPH_MAPPING,
    RANGE_EXCLUDE,
    RANGE_INCLUDE,
    RANGE_MODE,
    ROWS,
    Options,
    Rule,
    merged_reads,
)
from asysstats.analysis.hgtx import load_ranges, name_filter, range_stacks
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import ACTIVITY_READS, CORRELATE_READS, HGTX_READS
from asysstats.compute.grouped import grouped_stats, share_percent
from asysstats.compute.intervals import covered_length_by_group
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame, Gathered
from asysstats.core.tables import EventTable
from asysstats.writing.format import rounded

if TYPE_CHECKING:
    import regex

RANGE_CELLS = ("rangeId", "name", "style", "globalTid", "pid", "tid", "start", "end", "level", "parentId",
               "children")
SUM_RANGE_CELLS = ("name", "style", "start", "end", "level", "children")  # what the summary prints of a range
READS = merged_reads(HGTX_READS, ACTIVITY_READS, CORRELATE_READS)


@dataclass(frozen=True)
class TraceOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()


@dataclass(frozen=True)
class SumOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_mode: str = RANGE_MODE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()


def projected_ranges(inputs: Inputs, options: TraceOptions, columns: tuple[str, ...] = RANGE_CELLS
                     ) -> tuple[EventTable, Projection, int]:
    """The ``columns`` of the selected ranges that have a projection, their projections, and
    the span of the activities, first start to last end (0 without activities)."""
    inputs.require("kernels", "memcpy", "memset")
    ranges = load_ranges(inputs, RANGE_CELLS)
    ranges = ranges.take(name_filter(inputs, ranges["name"], options.range_include, options.range_exclude))
    with inputs.transient():  # the activity and call tables: what the projection needs is copied out
        activities = ppu_activities(inputs, options.device)
        anchors = Anchors(inputs, activities, not options.no_graph_mapping)
        activities = EventTable({column: activities[column] for column in ("start", "end")})
    span = 0 if activities.rows == 0 else \
        int(np.maximum(activities["end"], activities["start"]).max() - activities["start"].min())
    proj = projected(anchors, ranges, activities)
    del anchors, activities
    keep = proj.count > 0
    return EventTable({column: ranges[column] for column in columns}).take(keep), \
        Projection(*(getattr(proj, f)[keep] for f in ("count", "start", "end", "active"))), span


def analysis_length(inputs: Inputs, span: int, mode: str) -> int:
    """Length of the PPU-side analysis range: ``span``, first to last activity, or the full range."""
    if mode == "full":
        lo, hi = inputs.full_range()
        return hi - lo
    return span


def proj_sum(inputs: Inputs, options: SumOptions) -> Frame:
    ranges, proj, span = projected_ranges(inputs, options.like(TraceOptions), SUM_RANGE_CELLS)
    groups, stats = grouped_stats([ranges["name"], ranges["style"]], proj.end - proj.start)
    label = groups.label()
    active = covered_length_by_group(label, proj.start, proj.end, groups.count)
    in_use = share_percent(active, analysis_length(inputs, span, options.range_mode))

    def mean(values: np.ndarray) -> np.ndarray:
        return np.bincount(label, weights=values, minlength=groups.count) / np.maximum(stats["count"], 1)

    ops = np.bincount(label, weights=proj.count, minlength=groups.count).astype(np.int64)
    range_time = np.bincount(label, weights=ranges["end"] - ranges["start"], minlength=groups.count)
    name, style = groups.keys
    printed, _ = rounded(in_use, 1)  # ranges whose printed In-Use ties go by name ascending (the reference)
    order = np.lexsort((inputs.strings.sort_rank(style), inputs.strings.sort_rank(name), -printed))
    frame = {
        "Range": name, "Style": style, "In-Use (%)": in_use, "Proj Active Time (ns)": active,
        "Total Proj Time (ns)": stats["sum"], "Total Range Time (ns)": range_time.astype(np.int64),
        "Range Instances": stats["count"], "Proj Avg (ns)": stats["mean"], "Proj Med (ns)": stats["median"],
        "Proj Min (ns)": stats["min"], "Proj Max (ns)": stats["max"], "Proj StdDev (ns)": stats["std"],
        "Total PPU Ops": ops, "Avg PPU Ops": mean(proj.count), "Avg Range Lvl": mean(ranges["level"]),
        "Avg Num Child": mean(ranges["children"]),
    }
    return {k: v[order] for k, v in frame.items()}


SUM_COLUMNS = (
    Column("Range", TEXT, "Name of the HGTX range"),
    Column("Style", TEXT, "Range style; Start/End or Push/Pop"),
    Column("In-Use (%)", PERCENT, "Percentage of projected active time to the analysis time range"),
    Column("Proj Active Time (ns)", INT, "Total projected time of this range name, overlaps counted once"),
    Column("Total Proj Time (ns)", INT, "Total projected time of all instances of this range name"),
    Column("Total Range Time (ns)", INT, "Total original HGTX range time of all instances of this range name"),
    Column("Range Instances", INT, "Number of instances of this range"),
    Column("Proj Avg (ns)", INT, "Average projected time for this range"),
    Column("Proj Med (ns)", INT, "Median projected time for this range"),
    Column("Proj Min (ns)", INT, "Minimum projected time for this range"),
    Column("Proj Max (ns)", INT, "Maximum projected time for this range"),
    Column("Proj StdDev (ns)", INT, "Standard deviation of projected times for this range"),
    Column("Total PPU Ops", INT, "Total number of PPU operations"),
    Column("Avg PPU Ops", INT, "Average number of PPU operations"),
    Column("Avg Range Lvl", INT, "Average range stack depth"),
    Column("Avg Num Child", INT, "Average number of child ranges"),
)

PROJ_SUM = Rule(
    name="hgtx_ppu_proj_sum",
    title="HGTX to PPU Projection Summary",
    help="HGTX ranges projected onto the PPU (first to last correlated kernel, memcpy or memset), "
         "per range name and style. 'Proj Active Time' is the union of the projections; 'In-Use' "
         "is it over the analysis range (range-mode). Sorted by In-Use descending, then name.",
    columns=SUM_COLUMNS,
    compute=proj_sum,
    reads=READS,
    options=SumOptions,
    share="Proj Active Time (ns)",
)


def proj_trace(inputs: Inputs, options: TraceOptions) -> Frame:
    ranges, proj, _ = projected_ranges(inputs, options)
    order = np.lexsort((ranges["rangeId"], ranges["level"], ranges["start"], proj.start))
    frame = {name: Gathered(values, order) for name, values in (
        ("Name", ranges["name"]), ("Projected Start (ns)", proj.start),
        ("Projected Duration (ns)", proj.end - proj.start), ("PPU Active Time (ns)", proj.active),
        ("Orig Start (ns)", ranges["start"]),
        ("Orig Duration (ns)", ranges["end"] - ranges["start"]), ("Style", ranges["style"]), ("PID", ranges["pid"]),
        ("TID", ranges["tid"]), ("NumPPUOps", proj.count), ("Lvl", ranges["level"]), ("NumChild", ranges["children"]),
        ("RangeId", ranges["rangeId"]), ("ParentId", ranges["parentId"]))}
    return frame | {"RangeStack": range_stacks(inputs, frame["RangeId"])}


TRACE_COLUMNS = (
    Column("Name", TEXT, "Name of the HGTX range"),
    Column("Projected Start (ns)", INT, "Projected range start timestamp"),
    Column("Projected Duration (ns)", INT, "Projected range duration"),
    Column("PPU Active Time (ns)", INT, "Total PPU active time of this range, overlaps counted once"),
    Column("Orig Start (ns)", INT, "Original HGTX range start timestamp"),
    Column("Orig Duration (ns)", INT, "Original HGTX range duration"),
    Column("Style", TEXT, "Range style; Start/End or Push/Pop"),
    Column("PID", INT, "Process identifier"),
    Column("TID", INT, "Thread identifier"),
    Column("NumPPUOps", INT, "Number of enclosed PPU operations"),
    Column("Lvl", INT, "Stack level, starts at 0"),
    Column("NumChild", INT, "Number of child ranges"),
    Column("RangeId", INT, "Arbitrary ID for the range"),
    Column("ParentId", INT, "Range ID of the enclosing range"),
    Column("RangeStack", TEXT, "Range IDs that make up the push/pop stack"),
)

PROJ_TRACE = Rule(
    name="hgtx_ppu_proj_trace",
    title="HGTX to PPU Projection Trace",
    help="Each HGTX range projected onto the PPU (first to last correlated kernel, memcpy or memset), "
         "with its PPU active time and stack state, in order of projected start.",
    columns=TRACE_COLUMNS,
    compute=proj_trace,
    reads=READS,
    options=TraceOptions,
)

RULES = [PROJ_SUM, PROJ_TRACE]
