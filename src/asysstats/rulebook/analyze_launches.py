"""The ``asys analyze`` rules on launches and short kernels.

* Launch statistics (HTA's ``get_cuda_kernel_launch_stats``): per PPU activity whose launching
  API call is in the report, the call's duration, the launch delay (from the call's end to the
  activity's start, 0 when the activity starts first) and the activity's duration:
  ``ppu_launch_trace`` (one row per activity, or only the outliers above the thresholds) and
  ``ppu_launch_stats`` (per activity name).
* The short-kernel study (TraceLens's): ``ppu_short_kernel_histogram`` (the durations of the
  kernels shorter than ``threshold`` microseconds in ``bins`` equal bins) and ``ppu_short_kernels``
  (those kernels per parent operator, its recorded shapes and kernel name).

For short kernels: a kernel is short when it lasts less than ``threshold`` µs (TraceLens's 10 µs by default). Time
shares are of the GPU span: the first start to the last end of the activities (kernels, memcpy,
memset) whose launching API call is in the report (of all of them when none is), as TraceLens's
``total_time``. The parent operator of a kernel is the innermost range around its launch call
(docs/decisions.md D10); a PyTorch operator's text gives its input dims, strides and concrete
inputs (docs/decisions.md D39). Kernels are grouped and counted with numpy; only the distinct
parent texts are parsed one by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from asysstats.analysis.activity import kind_label_ids
from asysstats.analysis.declarations import BASE, MANGLED, ROWS, Option, Options, Rule, merged_reads, name_mode
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import innermost_range_names, launch_rows, runtime_calls
from asysstats.analysis.names import kernel_name_ids
from asysstats.analysis.operators.parsers import parse_pytorch
from asysstats.analysis.operators.torch_texts import is_true, torch_fields, torch_mask
from asysstats.analysis.reads import CALL_READS, INNERMOST_READS, KIND_READS, NAME_COLUMNS, PPU_KINDS
from asysstats.compute.arrow import from_numpy, on_threads, text
from asysstats.compute.distinct import distinct, tie_order
from asysstats.compute.grouped import dense_group_ids
from asysstats.core.result import FIGURE, INT, PERCENT, TEXT, Column, Frame
from asysstats.core.tables import EventTable
from asysstats.rulebook.memory_ops import API_WORDS

US = 1000  # ns per microsecond
THRESHOLD = Option("threshold", "decimal", "A kernel shorter than this many microseconds is short (fractions too).",
                   10, minimum=0, maximum=(1 << 62) // US)
BINS = Option("bins", "int", "Number of equal bins the short kernels' durations are cut into.", 100, minimum=1,
              maximum=1_000_000)  # each bin is a row
SHORT_ORDER_BY = Option("order-by", "choice", "Sort order: time (total time, descending, as TraceLens) or count "
                        "(number of kernels, descending).", "time", choices=("time", "count"))
ACTIVITY_COLUMNS = ("start", "end", "correlationId", "globalPid")
KERNEL_COLUMNS = ACTIVITY_COLUMNS + NAME_COLUMNS
SPAN_READS = merged_reads({kind: ACTIVITY_COLUMNS for kind in PPU_KINDS}, CALL_READS)
HISTOGRAM_READS = SPAN_READS
SUMMARY_READS = merged_reads(SPAN_READS, {"kernels": KERNEL_COLUMNS}, INNERMOST_READS)
NO_FIELD = "-"
PARENT_FIELDS = ("sizes", "strides", "concrete")  # of a PyTorch operator text: input dims, strides, scalars


@dataclass(frozen=True)
class HistogramOptions(Options):
    threshold: Fraction = THRESHOLD.field()
    bins: int = BINS.field()
    rows: int | None = ROWS.field()


@dataclass(frozen=True)
class ShortKernelOptions(Options):
    rows: int | None = ROWS.field()
    threshold: Fraction = THRESHOLD.field()
    order_by: str = SHORT_ORDER_BY.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()


def short_kernels(inputs: Inputs, threshold: Fraction, columns: tuple[str, ...]) -> EventTable:
    """The kernels lasting less than ``threshold`` µs (an integer length is less than x when
    less than ceil(x))."""
    kernels = inputs.table("kernels", columns)
    return kernels.take(kernels["end"] - kernels["start"] < math.ceil(threshold * US))


def gpu_span(inputs: Inputs) -> int:
    """First start to last end of the activities whose launch call is in the report (of all
    of them when none is); 0 without activities. Mostly the activity that starts first and
    the one that ends last were both launched by calls of the report: then only those two
    are looked up, not every activity."""
    calls = runtime_calls(inputs)
    parts = [table for kind in PPU_KINDS if inputs.has(kind) and (table := inputs.table(kind, ACTIVITY_COLUMNS)).rows]
    if not parts:
        return 0
    first, last = extreme(parts, "start", min), extreme(parts, "end", max)
    if launched(calls, *first[1:]) and launched(calls, *last[1:]):
        return last[0] - first[0]
    activities = EventTable.concat(parts, ("start", "end", "pid", "correlationId"))
    linked = launch_rows(calls, activities) >= 0
    chosen = activities.take(linked) if linked.any() else activities
    return int(chosen["end"].max()) - int(chosen["start"].min())


def extreme(parts: list[EventTable], column: str, pick: Callable) -> tuple[int, EventTable, int]:
    """The smallest (``pick`` min) or largest (max) value of ``column`` in ``parts``, with the
    table and row holding it."""
    rows = [int(part[column].argmin() if pick is min else part[column].argmax()) for part in parts]
    return pick(((int(part[column][row]), part, row) for part, row in zip(parts, rows)), key=lambda found: found[0])


def launched(calls: EventTable, activities: EventTable, row: int) -> bool:
    """Whether a call of ``calls`` launched the activity of ``row`` (:func:`launch_rows` of one row)."""
    correlation, pid = activities["correlationId"][row], activities["pid"][row]
    return bool(correlation > 0 and np.any((calls["correlationId"] == correlation) & (calls["pid"] == pid)))


def share(time: np.ndarray, span: int) -> np.ndarray:
    return time * 100.0 / span if span > 0 else np.full(len(time), np.nan)


def duration_bins(durations: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's ``bins`` equal bins over the durations in microseconds (floats, as TraceLens
    cuts them; a duration on an edge falls in the upper bin, the last bin holds its end) as
    edges in ns, and each duration's bin."""
    micros = durations / float(US)
    edges = np.histogram_bin_edges(micros, bins)
    where = np.clip(np.searchsorted(edges, micros, side="right") - 1, 0, bins - 1)
    return edges * US, where


HISTOGRAM_COLUMNS = (
    Column("Bin Start (ns)", FIGURE, "Start of the bin (its kernels last at least this long)"),
    Column("Bin End (ns)", FIGURE, "End of the bin (its kernels last less, the last bin's up to it)"),
    Column("Count", INT, "Number of short kernels whose duration falls in the bin"),
    Column("Time (ns)", INT, "Total duration of those kernels"),
    Column("Time (%)", PERCENT, "Their share of the GPU span (first start to last end of the launched activities)"),
    Column("Cumulative Time (%)", PERCENT, "Share of the GPU span of the short kernels up to this bin's end"),
)


def histogram_frame(inputs: Inputs, options: HistogramOptions) -> Frame:
    kernels = short_kernels(inputs, options.threshold, ("start", "end"))
    durations = kernels["end"] - kernels["start"]
    if kernels.rows == 0:
        empty = np.empty(0)
        return {"Bin Start (ns)": empty, "Bin End (ns)": empty, "Count": empty.astype(np.int64),
                "Time (ns)": empty.astype(np.int64), "Time (%)": empty, "Cumulative Time (%)": empty}
    edges, where = duration_bins(durations, options.bins)
    time = np.bincount(where, weights=durations, minlength=options.bins).astype(np.int64)
    span = gpu_span(inputs)
    return {"Bin Start (ns)": edges[:-1], "Bin End (ns)": edges[1:],
            "Count": np.bincount(where, minlength=options.bins), "Time (ns)": time,
            "Time (%)": share(time, span), "Cumulative Time (%)": share(np.cumsum(time), span)}


def parent_fields(inputs: Inputs, parents: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per parent range name id (-1: none): the ids of its operator name, input dims, input
    strides and concrete inputs; a text that is no PyTorch operator's is its own name, with
    '-' fields. Each distinct text is read once: ASCII PyTorch texts in bulk with Arrow's
    string kernels, other texts one by one."""
    uniq, inverse = distinct(parents)
    texts = inputs.strings.texts(uniq)
    bulk = torch_mask(texts)
    fields = [pc.fill_null(texts, text(NO_FIELD))] + [pa.nulls(len(uniq), pa.string())] * len(PARENT_FIELDS)
    if bulk.any():
        parsed = on_threads(lambda part: torch_fields(part, PARENT_FIELDS), texts.filter(from_numpy(bulk)))
        fields = [pc.replace_with_mask(column, from_numpy(bulk), values) for column, values in zip(fields, parsed)]
    ids = [inputs.strings.intern_texts(column) for column in fields]
    other = is_true(pc.invert(pc.string_is_ascii(texts)))  # torch_mask takes ASCII texts only: these one by one
    for row, range_text in zip(np.flatnonzero(other).tolist(), texts.filter(from_numpy(other)).to_pylist()):
        parsed_one = parse_pytorch(range_text)
        if parsed_one is not None:
            ids[0][row] = inputs.strings.intern([parsed_one.params["op"]])[0]
            for column, key in zip(ids[1:], PARENT_FIELDS):
                value = parsed_one.params.get(key)
                column[row] = inputs.strings.intern([value])[0] if value is not None else -1
    none, empty = inputs.strings.intern([NO_FIELD, ""])
    ids[0][ids[0] == empty] = none  # an empty range text names no operator
    return tuple(np.where(column >= 0, column, none)[inverse] for column in ids)


SUMMARY_COLUMNS = (
    Column("Parent Operator", TEXT, "Innermost range around the launch call: a PyTorch operator's name, another "
                                    "range's text, '-' without one"),
    Column("Input Dims", TEXT, "The operator's recorded input dims ('-': not recorded)"),
    Column("Input Strides", TEXT, "The operator's recorded input strides ('-': not recorded)"),
    Column("Concrete Inputs", TEXT, "The operator's recorded scalar inputs ('-': not recorded)"),
    Column("Kernel Name", TEXT, "Name of the kernel"),
    Column("Time (ns)", INT, "Total duration of these short kernels"),
    Column("Count", INT, "Number of these short kernels"),
    Column("Avg (ns)", FIGURE, "Average duration"),
    Column("Time (%)", PERCENT, "Share of the GPU span (first start to last end of the launched activities)"),
)


def summary_frame(inputs: Inputs, options: ShortKernelOptions) -> Frame:
    kernels = short_kernels(inputs, options.threshold, KERNEL_COLUMNS)
    durations = kernels["end"] - kernels["start"]
    parent = parent_fields(inputs, innermost_range_names(inputs, kernels))
    names = kernel_name_ids(inputs.strings, kernels, name_mode(options))
    label, keys = dense_group_ids([*parent, names])
    n = len(keys[0]) if len(label) else 0
    count = np.bincount(label, minlength=n)
    time = np.bincount(label, weights=durations, minlength=n).astype(np.int64)
    avg = time / np.maximum(count, 1)
    ranks = [inputs.strings.sort_rank(k) for k in keys]
    primary = (-time, count) if options.order_by == "time" else (-count, -time)
    order = np.lexsort(tuple(reversed((*primary, avg, *ranks)))) if n else np.empty(0, np.int64)
    frame = {"Parent Operator": keys[0], "Input Dims": keys[1], "Input Strides": keys[2], "Concrete Inputs": keys[3],
             "Kernel Name": keys[4], "Time (ns)": time, "Count": count, "Avg (ns)": avg,
             "Time (%)": share(time, gpu_span(inputs))}
    return {k: np.asarray(v)[order] for k, v in frame.items()}


SHORT_KERNEL_HISTOGRAM = Rule(
    name="ppu_short_kernel_histogram",
    title="PPU Short Kernel Histogram",
    help="The durations of the kernels shorter than 'threshold' microseconds, cut into 'bins' equal bins from the "
         "shortest to the longest (TraceLens's short-kernel histogram): per bin the kernels, their time and its "
         "share of the GPU span, and the cumulative share (the last row's: all short kernels').",
    columns=HISTOGRAM_COLUMNS,
    compute=histogram_frame,
    reads=HISTOGRAM_READS,
    options=HistogramOptions,
    requires=("kernels",),
    command="analyze",
)

SHORT_KERNELS = Rule(
    name="ppu_short_kernels",
    title="PPU Short Kernels",
    help="The kernels shorter than 'threshold' microseconds per parent operator (the innermost range around the "
         "launch), its recorded input dims, strides and concrete inputs, and kernel name (TraceLens's short "
         "kernels summary): total time, count, average and share of the GPU span; by order-by.",
    columns=SUMMARY_COLUMNS,
    compute=summary_frame,
    reads=SUMMARY_READS,
    options=ShortKernelOptions,
    requires=("kernels",),
    command="analyze",
    share="Time (%)",
)

CPU_THRESHOLD = Option("cpu-threshold", "decimal", "A launch call lasting longer than this many microseconds is an "
                       "outlier (HTA's runtime cutoff).", 50, minimum=0, maximum=(1 << 62) // US)
DELAY_THRESHOLD = Option("delay-threshold", "decimal", "A launch delay longer than this many microseconds is an "
                         "outlier (HTA's launch delay cutoff).", 100, minimum=0, maximum=(1 << 62) // US)
OUTLIERS = Option("outliers", "flag", "Only the outliers: launches whose call or delay passes its threshold.", False)
LAUNCH_COLUMNS = ("start", "end", "correlationId", "globalPid", "deviceId")
LAUNCH_READS = merged_reads({"kernels": LAUNCH_COLUMNS + NAME_COLUMNS, "memcpy": LAUNCH_COLUMNS + ("copyKind",),
                             "memset": LAUNCH_COLUMNS, "runtime": ("nameId",)}, CALL_READS,
                            {"memcpy_kinds": KIND_READS["memcpy_kinds"]})


@dataclass(frozen=True)
class LaunchTraceOptions(Options):
    rows: int | None = ROWS.field()
    outliers: bool = OUTLIERS.field()
    cpu_threshold: Fraction = CPU_THRESHOLD.field()
    delay_threshold: Fraction = DELAY_THRESHOLD.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()


@dataclass(frozen=True)
class LaunchStatsOptions(Options):
    rows: int | None = ROWS.field()
    cpu_threshold: Fraction = CPU_THRESHOLD.field()
    delay_threshold: Fraction = DELAY_THRESHOLD.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()


@dataclass(frozen=True)
class Launches:
    """The launched activities: start, duration, correlation, pid, device, name id, and their
    launch call's duration, name id and the launch delay (all ns)."""

    start: np.ndarray
    gpu: np.ndarray
    correlation: np.ndarray
    pid: np.ndarray
    device: np.ndarray
    name: np.ndarray
    cpu: np.ndarray
    call: np.ndarray
    delay: np.ndarray


def launches(inputs: Inputs, mode: str) -> Launches:
    """Every kernel, memcpy and memset whose launch call is in the report, in start order."""
    api = API_WORDS.get(inputs.dialect, "HGGC")
    kernels = inputs.table("kernels", LAUNCH_COLUMNS + NAME_COLUMNS)
    memcpy = inputs.table("memcpy", LAUNCH_COLUMNS + ("copyKind",))
    memset = inputs.table("memset", LAUNCH_COLUMNS)
    names = np.concatenate([kernel_name_ids(inputs.strings, kernels, mode),
                            kind_label_ids(inputs, "memcpy_kinds", memcpy["copyKind"], f"[{api} memcpy {{}}]"),
                            np.repeat(inputs.strings.intern([f"[{api} memset]"]), memset.rows)])
    acts = EventTable.concat([kernels, memcpy, memset], ("start", "end", "correlationId", "deviceId", "pid"))
    calls = runtime_calls(inputs)
    row = launch_rows(calls, acts)
    keep = np.flatnonzero(row >= 0)
    keep = keep[tie_order(acts["start"][keep], lambda rows: (acts["correlationId"][keep[rows]],))]
    row = row[keep]
    call_names = inputs.whole("runtime", ("nameId",))["nameId"] if calls.rows else np.empty(0, np.int64)
    start = acts["start"][keep]
    return Launches(start, acts["end"][keep] - start, acts["correlationId"][keep], acts["pid"][keep],
                    acts["deviceId"][keep], names[keep], calls["end"][row] - calls["start"][row], call_names[row],
                    np.maximum(start - calls["end"][row], 0))


def outlier_masks(found: Launches, cpu_us: Fraction, delay_us: Fraction) -> tuple[np.ndarray, np.ndarray]:
    """Calls longer than ``cpu_us``, delays longer than ``delay_us`` (an integer is longer than x
    when longer than floor(x))."""
    return found.cpu > math.floor(cpu_us * US), found.delay > math.floor(delay_us * US)


LAUNCH_TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Start of the activity"),
    Column("CPU Duration (ns)", INT, "Duration of its launch call"),
    Column("Launch Delay (ns)", INT, "From the end of the launch call to the start of the activity (0 when the "
                                     "activity starts first)"),
    Column("GPU Duration (ns)", INT, "Duration of the activity"),
    Column("Correlation ID", INT, "Correlation ID of the call and the activity"),
    Column("PID", INT, "Process identifier"),
    Column("Device ID", INT, "PPU device identifier"),
    Column("Launch Call", TEXT, "Name of the launch call"),
    Column("Name", TEXT, "Name of the activity (kernel name, memcpy kind, memset)"),
)


def launch_trace_frame(inputs: Inputs, options: LaunchTraceOptions) -> Frame:
    found = launches(inputs, name_mode(options))
    keep = np.ones(len(found.start), dtype=bool)
    if options.outliers:
        slow, late = outlier_masks(found, options.cpu_threshold, options.delay_threshold)
        keep = slow | late
    return {"Start (ns)": found.start[keep], "CPU Duration (ns)": found.cpu[keep],
            "Launch Delay (ns)": found.delay[keep], "GPU Duration (ns)": found.gpu[keep],
            "Correlation ID": found.correlation[keep], "PID": found.pid[keep], "Device ID": found.device[keep],
            "Launch Call": found.call[keep], "Name": found.name[keep]}


LAUNCH_STATS_COLUMNS = (
    Column("Launches", INT, "Number of launched activities of this name"),
    Column("Avg CPU (ns)", FIGURE, "Average duration of their launch calls"),
    Column("Max CPU (ns)", INT, "Longest launch call"),
    Column("Avg Delay (ns)", FIGURE, "Average launch delay"),
    Column("Max Delay (ns)", INT, "Longest launch delay"),
    Column("Avg GPU (ns)", FIGURE, "Average duration of the activities"),
    Column("Max GPU (ns)", INT, "Longest activity"),
    Column("CPU Outliers", INT, "Launch calls longer than cpu-threshold"),
    Column("Delay Outliers", INT, "Launch delays longer than delay-threshold"),
    Column("Name", TEXT, "Name of the activity (kernel name, memcpy kind, memset)"),
)


def launch_stats_frame(inputs: Inputs, options: LaunchStatsOptions) -> Frame:
    found = launches(inputs, name_mode(options))
    label, (names,) = dense_group_ids([found.name])
    n = len(names) if len(label) else 0
    count = np.bincount(label, minlength=n)
    slow, late = outlier_masks(found, options.cpu_threshold, options.delay_threshold)
    frame: Frame = {"Launches": count}
    for what, values in (("CPU", found.cpu), ("Delay", found.delay), ("GPU", found.gpu)):
        frame[f"Avg {what} (ns)"] = np.bincount(label, weights=values, minlength=n) / np.maximum(count, 1)
        top = np.zeros(n, np.int64)
        np.maximum.at(top, label, values)
        frame[f"Max {what} (ns)"] = top
    frame["CPU Outliers"] = np.bincount(label, weights=slow, minlength=n).astype(np.int64)
    frame["Delay Outliers"] = np.bincount(label, weights=late, minlength=n).astype(np.int64)
    frame["Name"] = names if n else np.empty(0, np.int64)
    order = np.lexsort((inputs.strings.sort_rank(frame["Name"]), -count)) if n else np.empty(0, np.int64)
    return {k: np.asarray(v)[order] for k, v in frame.items()}


LAUNCH_TRACE = Rule(
    name="ppu_launch_trace",
    title="PPU Launch Trace",
    help="Per kernel, memcpy and memset whose launch call is in the report (HTA's kernel launch statistics): the "
         "call's duration, the launch delay (call end to activity start, 0 if negative) and the activity's "
         "duration, in start order; with 'outliers' only the launches whose call lasts longer than "
         "'cpu-threshold' or whose delay is longer than 'delay-threshold' microseconds.",
    columns=LAUNCH_TRACE_COLUMNS,
    compute=launch_trace_frame,
    reads=LAUNCH_READS,
    options=LaunchTraceOptions,
    requires=("kernels", "memcpy", "memset"),
    command="analyze",
)

LAUNCH_STATS = Rule(
    name="ppu_launch_stats",
    title="PPU Launch Statistics",
    help="Per activity name (kernels, memcpy kinds, memset) of the activities whose launch call is in the report: "
         "launches, average and longest launch call, launch delay and activity, and the outliers (calls longer "
         "than 'cpu-threshold', delays longer than 'delay-threshold' microseconds); most launches first.",
    columns=LAUNCH_STATS_COLUMNS,
    compute=launch_stats_frame,
    reads=LAUNCH_READS,
    options=LaunchStatsOptions,
    requires=("kernels", "memcpy", "memset"),
    command="analyze",
)

RULES = [LAUNCH_TRACE, LAUNCH_STATS, SHORT_KERNEL_HISTOGRAM, SHORT_KERNELS]
