"""PCCL desynchronisation (``pccl_desync_trace``, ``pccl_desync_summary``).

A communication is a connected set of chained-overlapping PCCL kernels of one name,
across all devices and processes (docs/decisions.md D21). Its duration runs from the first
start to the last end; its overlap is the time all of its kernels run at once,
``max(0, min(end) - max(start))``; its desync rate is ``(duration - overlap) / duration``.
Zero-length kernels never run and are ignored. With ``hgtx-name`` the range prefix of a
PCCL annotation drops its per-rank fields (``r:``, ``b:``), so that the ranks of one
communication share its name (a per-rank prefix would make every kernel a communication).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from asysstats.analysis.declarations import Option, Rule, merged_reads, name_mode
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.names import demangle, prefixed_ids
from asysstats.analysis.pccl import without_rank_fields
from asysstats.analysis.reads import KERNEL_COLUMNS, KERNEL_NAME_READS
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import group_by, grouped_stats, percentile_sorted, share_percent
from asysstats.compute.intervals import overlap_components
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame
from asysstats.core.strings import StringPool
from asysstats.core.tables import EventTable
from asysstats.rulebook.kernels import KernelOptions, kernel_names, on_devices

PCCL_KERNEL = re.compile(r"\s*(?:void\s+)?(?:pccl|nccl)", re.IGNORECASE)
READS = merged_reads({"kernels": KERNEL_COLUMNS}, KERNEL_NAME_READS)


def pccl_mask(pool: StringPool, kernels: EventTable) -> np.ndarray:
    """PCCL kernels: the (demangled) name starts, after an optional ``void ``, with
    ``pccl`` or ``nccl``, in any case (docs/decisions.md D21)."""
    ids = np.where(kernels["demangledName"] >= 0, kernels["demangledName"], kernels["mangledName"])
    out = np.zeros(len(ids), dtype=bool)
    valid = ids >= 0
    if valid.any():
        uniq, slot = distinct(ids[valid])
        flags = np.array([PCCL_KERNEL.match(demangle(t or "")) is not None for t in pool.lookup(uniq)], dtype=bool)
        out[valid] = flags[slot]
    return out


def communication_names(inputs: Inputs, kernels: EventTable, options: KernelOptions) -> np.ndarray:
    """Per kernel the name its communication is formed and shown by: the kernel name in the
    name mode, with ``hgtx-name`` prefixed by the innermost range without per-rank fields."""
    names = kernel_names(inputs, kernels, name_mode(options))
    if not options.hgtx_name:
        return names
    from asysstats.analysis.launches import innermost_range_names  # HGTX ranges: the runs with hgtx-name only

    ranges = inputs.strings.map_distinct(innermost_range_names(inputs, kernels), without_rank_fields)
    return prefixed_ids(inputs.strings, ranges, names)


def communications(inputs: Inputs, options: KernelOptions) -> EventTable:
    """One row per communication: start, end, overlap, rate (%), kernel statistics, name
    and the kernel that starts last (ties: higher device, then higher correlation id)."""
    kernels = on_devices(inputs.table("kernels", KERNEL_COLUMNS), options.device)
    kernels = kernels.take(pccl_mask(inputs.strings, kernels) & (kernels["end"] > kernels["start"]))
    names = communication_names(inputs, kernels, options)
    start, end = kernels["start"], kernels["end"]
    comp = overlap_components(names, start, end)
    groups = group_by([comp])
    by_start = np.lexsort((kernels["correlationId"], kernels["deviceId"], start, comp))
    last = by_start[np.r_[comp[by_start][1:] != comp[by_start][:-1], True]] if len(comp) else by_start
    first_start, last_end = groups.reduce(np.minimum, start), groups.reduce(np.maximum, end)
    overlap = np.maximum(groups.reduce(np.minimum, end) - start[last], 0)
    duration = last_end - first_start
    span = end - start
    return EventTable({
        "start": first_start, "duration": duration, "overlap": overlap,
        "rate": 100.0 * (duration - overlap) / np.maximum(duration, 1),
        "last_pid": kernels["pid"][last], "last_device": kernels["deviceId"][last],
        "last_kernel": kernels["correlationId"][last],
        "max": groups.reduce(np.maximum, span), "min": groups.reduce(np.minimum, span),
        "avg": groups.reduce(np.add, span) / np.maximum(groups.size, 1), "count": groups.size,
        "name": groups.first(names),
    })


TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Start time of the PCCL communication"),
    Column("Duration (ns)", INT, "Elapsed duration of the PCCL communication (first start to last end)"),
    Column("Overlap (ns)", INT, "Time during which all PCCL kernels of the communication run"),
    Column("Desync Rate (%)", PERCENT, "Desynchronisation rate: (duration - overlap) / duration"),
    Column("Last Process", INT, "Process ID of the kernel that starts last"),
    Column("Last Device", INT, "Device ID of the kernel that starts last"),
    Column("Last Kernel", INT, "Correlation id of the kernel that starts last"),
    Column("Max Duration (ns)", INT, "The longest kernel duration in this PCCL communication"),
    Column("Min Duration (ns)", INT, "The shortest kernel duration in this PCCL communication"),
    Column("Avg Duration (ns)", INT, "The average kernel duration in this PCCL communication"),
    Column("Instances", INT, "Number of kernels in this PCCL communication"),
    Column("Kernel Name", TEXT, "Name of the PCCL kernel"),
)
TRACE_FIELDS = {"Start (ns)": "start", "Duration (ns)": "duration", "Overlap (ns)": "overlap",
                "Desync Rate (%)": "rate", "Last Process": "last_pid", "Last Device": "last_device",
                "Last Kernel": "last_kernel", "Max Duration (ns)": "max", "Min Duration (ns)": "min",
                "Avg Duration (ns)": "avg", "Instances": "count", "Kernel Name": "name"}  # column -> field


def desync_trace(inputs: Inputs, options: KernelOptions) -> Frame:
    comms = communications(inputs, options)
    order = np.lexsort((comms["start"], inputs.strings.sort_rank(comms["name"]), -comms["rate"]))
    return {column: comms[field][order] for column, field in TRACE_FIELDS.items()}


SUMMARY_COLUMNS = (
    Column("Time (%)", PERCENT, "Percentage of 'Total Duration'"),
    Column("Count", INT, "Number of communications for this PCCL kernel"),
    Column("Desync Avg (%)", PERCENT, "Average desynchronisation rate of this PCCL kernel"),
    Column("Desync Med (%)", PERCENT, "Median desynchronisation rate of this PCCL kernel"),
    Column("Desync P90 (%)", PERCENT, "90th percentile (nearest rank) of the desynchronisation rate (with p90)"),
    Column("Desync Min (%)", PERCENT, "Minimum desynchronisation rate of this PCCL kernel"),
    Column("Desync Max (%)", PERCENT, "Maximum desynchronisation rate of this PCCL kernel"),
    Column("Desync StdDev (%)", PERCENT, "Population standard deviation of the desynchronisation rate"),
    Column("Total Duration (ns)", INT, "Total elapsed duration of all communications for this PCCL kernel"),
    Column("Total Overlap (ns)", INT, "Total overlap duration of all communications for this PCCL kernel"),
    Column("Kernel Name", TEXT, "Name of the PCCL kernel"),
)


P90 = Option("p90", "flag", "Add the column 'Desync P90 (%)' after 'Desync Med (%)' (not in the reference's table).",
             False)


@dataclass(frozen=True)
class SummaryOptions(KernelOptions):
    p90: bool = P90.field()


def desync_summary(inputs: Inputs, options: KernelOptions) -> Frame:
    comms = communications(inputs, options)
    groups, stats = grouped_stats([comms["name"]], comms["rate"])
    p90 = percentile_sorted(groups, comms["rate"], 90)
    total = groups.reduce(np.add, comms["duration"])
    order = np.lexsort((inputs.strings.sort_rank(groups.keys[0]), -total))
    values = {"Time (%)": share_percent(total, float(total.sum())), "Count": stats["count"],
              "Desync Avg (%)": stats["mean"], "Desync Med (%)": stats["median"], "Desync P90 (%)": p90,
              "Desync Min (%)": stats["min"], "Desync Max (%)": stats["max"], "Desync StdDev (%)": stats["std"],
              "Total Duration (ns)": total, "Total Overlap (ns)": groups.reduce(np.add, comms["overlap"]),
              "Kernel Name": groups.keys[0]}
    return {column: v[order] for column, v in values.items()}


COMMON_HELP = ("PCCL kernels (names starting with pccl or nccl) of one name whose executions overlap, "
               "chained, across all devices form a communication; its desync rate is "
               "(duration - overlap) / duration, where overlap is the time all its kernels run at once. ")

DESYNC_TRACE = Rule(
    name="pccl_desync_trace",
    title="PCCL Desynchronization Trace",
    help=COMMON_HELP + "One row per communication, in descending order of desync rate; 'Last Kernel' is "
                       "the correlation id of the kernel that starts last.",
    columns=TRACE_COLUMNS,
    compute=desync_trace,
    reads=READS,
    options=KernelOptions,
)

DESYNC_SUMMARY = Rule(
    name="pccl_desync_summary",
    title="PCCL Desynchronization Summary",
    help=COMMON_HELP + "Statistics of the communications per kernel name, in descending order of total "
                       "duration; 'Time (%)' is the share of the total duration of all listed communications.",
    columns=SUMMARY_COLUMNS,
    compute=desync_summary,
    reads=READS,
    options=SummaryOptions,
    share="Time (%)",
    optional={"Desync P90 (%)": "p90"},
)

RULES = [DESYNC_TRACE, DESYNC_SUMMARY]
