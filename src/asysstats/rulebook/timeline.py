"""PPU timeline figures per device (``hggc_ppu_timeline_sum``): span, kernel busy time,
launch gaps and the overlap of kernel-launch API calls with kernel execution.

The figures are those of the usual hand-written Nsight summary scripts: kernel busy time
is the SUM of kernel durations (concurrent kernels can push it past 100 % of the span),
and a launch gap is ``max(0, start - end of the previous kernel in start order)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.analysis.declarations import DEVICE, ROWS, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import earliest_launches
from asysstats.compute.distinct import distinct_sorted
from asysstats.compute.grouped import share_percent
from asysstats.compute.intervals import Intervals, segments_length, segments_overlap, start_order_gaps, union
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame
from asysstats.core.tables import NA, EventTable
from asysstats.rulebook.kernels import on_devices

ALL = "All"
ACTIVITY_COLUMNS = ("start", "end", "deviceId")
CALL_COLUMNS = ("start", "end", "globalTid", "correlationId")
KERNEL_READ = ACTIVITY_COLUMNS + ("correlationId", "globalPid")
READS = {"kernels": KERNEL_READ, "memcpy": ACTIVITY_COLUMNS, "memset": ACTIVITY_COLUMNS, "runtime": CALL_COLUMNS}


@dataclass(frozen=True)
class TimelineOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()


def launch_calls(kernels: EventTable, runtime: EventTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, kernel device) of the API call that launched each kernel: the call
    ``hggc_kern_exec_trace`` lists (:func:`earliest_launches`)."""
    launched, calls = earliest_launches(runtime, kernels)  # rows: only the columns used are gathered
    return runtime["start"][calls], runtime["end"][calls], kernels["deviceId"][launched]


def figures(activity: Intervals, kernels: Intervals, api: Intervals) -> dict[str, int | float]:
    """One output row (without the device label), by column, from the intervals of one device set."""
    span = int(activity[1].max() - activity[0].min())
    kernel_time = int((kernels[1] - kernels[0]).sum())
    gaps = start_order_gaps(*kernels)
    positive = gaps[gaps > 0]
    api_segments = union(*api)  # once for its length and for its overlap with the kernels
    api_union = segments_length(*api_segments)
    overlap = segments_overlap(*api_segments, *union(*kernels))
    return {"Span (ns)": span, "Operations": len(activity[0]), "Kernels": len(kernels[0]),
            "Kernel Time (ns)": kernel_time, "Kernel Busy (%)": float(share_percent(kernel_time, span)),
            "Gap Count": len(positive), "Gap Total (ns)": int(positive.sum()),
            "Gap Avg (ns)": positive.mean() if len(positive) else np.nan,
            "Gap Max (ns)": int(positive.max()) if len(positive) else NA,
            "Launch API Union (ns)": api_union, "Launch API Overlap (ns)": overlap,
            "Launch API Overlap (%)": float(share_percent(overlap, api_union))}


def timeline_sum(inputs: Inputs, options: TimelineOptions) -> Frame:
    devices = options.device
    kernels = on_devices(inputs.table("kernels", KERNEL_READ), devices)
    activities = [kernels] + [on_devices(inputs.table(name, ACTIVITY_COLUMNS), devices) for name in ("memcpy", "memset")]
    start, end, device = (np.concatenate([t[c] for t in activities]) for c in ACTIVITY_COLUMNS)
    runtime = inputs.table("runtime", CALL_COLUMNS)
    api_start, api_end, api_device = launch_calls(kernels, runtime)
    labels = [ALL] if len(start) else []
    rows = [figures((start, end), (kernels["start"], kernels["end"]), (api_start, api_end))] if labels else []
    for dev in distinct_sorted(np.sort(device)):
        on, k, a = device == dev, kernels["deviceId"] == dev, api_device == dev
        labels.append(str(dev))
        rows.append(figures((start[on], end[on]), (kernels["start"][k], kernels["end"][k]),
                            (api_start[a], api_end[a])))
    frame = {"Device": np.array(labels, dtype=object)}
    for column in COLUMNS[1:]:
        kind = np.float64 if column.kind == PERCENT or column.name == "Gap Avg (ns)" else np.int64
        frame[column.name] = np.array([row[column.name] for row in rows], dtype=kind)
    return frame


COLUMNS = (
    Column("Device", TEXT, "PPU device id, or 'All' for all selected devices together"),
    Column("Span (ns)", INT, "Time from the first start to the last end of any kernel, memcpy or memset"),
    Column("Operations", INT, "Number of kernels, memcpy and memset operations"),
    Column("Kernels", INT, "Number of kernel executions"),
    Column("Kernel Time (ns)", INT, "Sum of kernel durations (concurrent kernels all count)"),
    Column("Kernel Busy (%)", PERCENT, "'Kernel Time' as a percentage of 'Span'"),
    Column("Gap Count", INT, "Number of positive gaps between consecutive kernels in start order"),
    Column("Gap Total (ns)", INT, "Sum of the positive gaps"),
    Column("Gap Avg (ns)", INT, "Average positive gap"),
    Column("Gap Max (ns)", INT, "Largest positive gap"),
    Column("Launch API Union (ns)", INT, "Time covered by the API calls that launched the kernels"),
    Column("Launch API Overlap (ns)", INT, "Part of 'Launch API Union' during which a kernel executes"),
    Column("Launch API Overlap (%)", PERCENT, "'Launch API Overlap' as a percentage of 'Launch API Union'"),
)

TIMELINE_SUM = Rule(
    name="hggc_ppu_timeline_sum",
    title="HGGC PPU Timeline Summary",
    help="One row for all selected devices together ('All'), then one per device: the span from the "
         "first to the last kernel, memcpy or memset; kernel count and summed kernel time, as a "
         "percentage of the span; the positive gaps max(0, start - end of the previous kernel in "
         "start order); and the union of the kernel-launch API calls (runtime calls with the "
         "correlation id of a kernel) with the part of it that overlaps kernel execution. "
         "Undefined averages and percentages print '-'.",
    columns=COLUMNS,
    compute=timeline_sum,
    reads=READS,
    requires=("kernels", "memcpy", "memset"),
    options=TimelineOptions,
)

RULES = [TIMELINE_SUM]
