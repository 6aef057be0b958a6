"""Training or inference steps (``hgtx_step_sum``): one row per HGTX range whose name matches
``range`` (PyTorch's ``ProfilerStep#N`` by default), with the step's time on the PPU.

A step's window is the one of the TensorBoard PyTorch-profiler plugin's overview, built
per thread over the matching ranges in start order:

* start = max(range start, end of the previous step's window on the thread);
* end = max(range end, end of the last PPU activity the step launched, start) — the
  launched activities are those correlated with the range (docs/decisions.md D11).

Inside the window, PPU time is assigned by priority (the plugin's): Kernel (kernels that
are not communication), then Memcpy, Memset and Communication, each the union of its
activities minus the time of the buckets before it, over the activities of the step's
process. A last ``Average`` row holds the mean of each column over the steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.correlate import Anchors, activity_table, ppu_activities, projected
from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, ROWS, Option, Options, Rule, merged_reads
from asysstats.analysis.hgtx import load_ranges
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.names import kernel_name_ids
from asysstats.analysis.reads import ACTIVITY_READS, CORRELATE_READS, HGTX_READS, KERNEL_COLUMNS
from asysstats.compute.distinct import distinct_sorted
from asysstats.compute.intervals import cumulative_cover, difference, running_max_by_segment
from asysstats.core.regexes import compile_user_regex
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame
from asysstats.core.tables import NA, EventTable
from asysstats.rulebook.time_breakdown import COMMUNICATION_OPTION, is_communication, name_matches

if TYPE_CHECKING:
    import regex

RULE_NAME = "hgtx_step_sum"
AVERAGE = "Average"
DEFAULT_STEP = compile_user_regex(r"ProfilerStep#\d+", "range")
# what a step is made of: no domain or style, nor the nesting (a cold run would compute it)
STEP_RANGE_COLUMNS = ("name", "globalTid", "pid", "tid", "start", "end")
STEP_RANGE = Option("range", "regex", "Steps are the HGTX ranges whose name this regex finds "
                    "(default: 'ProfilerStep#\\d+', PyTorch's profiler steps).", None)
BUCKETS = ("Kernel (ns)", "Memcpy (ns)", "Memset (ns)", "Communication (ns)")
READS = merged_reads(HGTX_READS, ACTIVITY_READS, {"kernels": KERNEL_COLUMNS}, CORRELATE_READS)


@dataclass(frozen=True)
class StepOptions(Options):
    rows: int | None = ROWS.field()
    range: "regex.Pattern | None" = STEP_RANGE.field()
    communication: "regex.Pattern | None" = COMMUNICATION_OPTION.field()
    device: tuple[int, ...] | None = DEVICE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()


def step_windows(ranges: EventTable, launched_end: np.ndarray, launched: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Window (start, end) of each step; ``ranges`` sorted by (thread, start). A window ends at
    the running maximum, per thread, of the range end and its launched activities' end."""
    reach = np.where(launched, np.maximum(ranges["end"], launched_end), ranges["end"])
    end = running_max_by_segment(ranges["globalTid"], reach)
    first = np.r_[True, ranges["globalTid"][1:] != ranges["globalTid"][:-1]]
    previous = np.r_[np.iinfo(np.int64).min, end[:-1]]
    return np.where(first, ranges["start"], np.maximum(ranges["start"], previous)), end


def bucket_segments(activities: EventTable, communication: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Disjoint segments of each bucket of :data:`BUCKETS`, minus the buckets before it."""
    kind = activities["kind"]
    masks = [(kind == 0) & ~communication, kind == 1, kind == 2, (kind == 0) & communication]
    start, end = activities["start"], activities["end"]
    out, higher = [], np.zeros(len(kind), dtype=bool)
    for mask in masks:
        out.append(difference(start[mask], end[mask], start[higher], end[higher]))
        higher |= mask
    return out


def communication_mask(inputs: Inputs, activities: EventTable, options: StepOptions) -> np.ndarray:
    """Which rows of ``ppu_activities`` are communication kernels (its kernels come first, in
    the order of :func:`activity_table`)."""
    out = np.zeros(activities.rows, dtype=bool)
    if inputs.has("kernels"):
        kernels = activity_table(inputs, "kernels", KERNEL_COLUMNS, options.device)
        assert kernels.rows == np.count_nonzero(activities["kind"] == 0)
        names = kernel_name_ids(inputs.strings, kernels, "demangled")
        out[:kernels.rows] = is_communication(inputs.strings, names, options.communication, RULE_NAME)
    return out


def step_sum(inputs: Inputs, options: StepOptions) -> Frame:
    ranges = load_ranges(inputs, STEP_RANGE_COLUMNS)
    pattern = options.range or DEFAULT_STEP
    ranges = ranges.take(name_matches(inputs.strings, ranges["name"], pattern, f"rule '{RULE_NAME}': option 'range'"))
    ranges = ranges.take(np.lexsort((ranges["end"], ranges["start"], ranges["globalTid"])))
    activities = ppu_activities(inputs, options.device)
    communication = communication_mask(inputs, activities, options)
    proj = projected(Anchors(inputs, activities, not options.no_graph_mapping), ranges, activities)
    start, end = step_windows(ranges, proj.end, proj.count > 0)
    times = np.zeros((len(BUCKETS), ranges.rows), np.int64)
    for pid in distinct_sorted(np.sort(ranges["pid"])):
        steps, mine = ranges["pid"] == pid, activities["pid"] == pid
        for b, (seg_start, seg_end) in enumerate(bucket_segments(activities.take(mine), communication[mine])):
            times[b, steps] = cumulative_cover(seg_start, seg_end, end[steps]) - \
                cumulative_cover(seg_start, seg_end, start[steps])
    order = np.lexsort((ranges["tid"], ranges["pid"], start))
    step_time = end - start
    frame = {"Step": ranges["name"], "PID": ranges["pid"], "TID": ranges["tid"], "Start (ns)": start,
             "Step Time (ns)": step_time, "Range Time (ns)": ranges["end"] - ranges["start"], "PPU Ops": proj.count,
             **dict(zip(BUCKETS, times, strict=True)), "PPU Busy (%)": busy_percent(times.sum(axis=0), step_time)}
    frame = {name: values[order] for name, values in frame.items()}
    return with_average(inputs, frame) if ranges.rows else frame


def busy_percent(busy: np.ndarray, length: np.ndarray) -> np.ndarray:
    """``100 * busy / length`` per step; NaN (printed ``-``) for an empty step."""
    return np.divide(busy * 100.0, length, out=np.full(len(busy), np.nan), where=length > 0)


def with_average(inputs: Inputs, frame: Frame) -> Frame:
    """``frame`` plus the ``Average`` row: the mean of each time and count column (no PID, TID or
    start) and the busy share of the mean step."""
    out = {"Step": np.append(frame["Step"], inputs.strings.intern([AVERAGE]))}
    for name in ("PID", "TID", "Start (ns)"):
        out[name] = np.append(frame[name], NA)
    for name in ("Step Time (ns)", "Range Time (ns)", "PPU Ops") + BUCKETS:
        out[name] = np.append(frame[name].astype(np.float64), frame[name].mean())
    busy = sum(frame[name].sum() for name in BUCKETS)
    total = np.array([frame["Step Time (ns)"].sum()])
    out["PPU Busy (%)"] = np.append(frame["PPU Busy (%)"], busy_percent(np.array([busy], np.float64), total))
    return out


COLUMNS = (
    Column("Step", TEXT, "Name of the step's HGTX range, or 'Average' for the mean over the steps"),
    Column("PID", INT, "Process of the range"),
    Column("TID", INT, "Thread of the range"),
    Column("Start (ns)", INT, "Start of the step: the range's start, or the end of the previous step on the thread "
                              "when that is later"),
    Column("Step Time (ns)", INT, "Length of the step: to the later of the range's end and the end of the last PPU "
                                  "activity it launched"),
    Column("Range Time (ns)", INT, "Duration of the range itself (CPU side)"),
    Column("PPU Ops", INT, "Number of PPU activities launched inside the range (correlated with it)"),
    Column("Kernel (ns)", INT, "Time in the step covered by kernels that are not communication"),
    Column("Memcpy (ns)", INT, "Time in the step covered by memcpy and by no such kernel"),
    Column("Memset (ns)", INT, "Time in the step covered by memset and by none of the above"),
    Column("Communication (ns)", INT, "Time in the step covered by communication kernels and by none of the above"),
    Column("PPU Busy (%)", PERCENT, "Time covered by any PPU activity as a percentage of 'Step Time'"),
)

STEP_SUM = Rule(
    name=RULE_NAME,
    title="HGTX Step Summary",
    help="One row per HGTX range whose name matches 'range' (PyTorch's ProfilerStep#N by default), in start order, "
         "then an 'Average' row. A step starts at its range's start (or the end of the previous step on the same "
         "thread, when later) and ends at the later of the range's end and the end of the last PPU activity "
         "launched inside the range. PPU time inside the step is assigned by priority: kernels, memcpy, memset, "
         "then communication kernels ('communication' regex), each without the time of those before it.",
    columns=COLUMNS,
    compute=step_sum,
    reads=READS,
    requires=("hgtx",),
    options=StepOptions,
)

RULES = [STEP_SUM]
