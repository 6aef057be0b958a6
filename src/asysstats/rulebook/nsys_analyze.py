"""NVIDIA's ``nsys analyze`` expert-system rules as ``asys analyze`` rules (docs/nsys.md, docs/decisions.md D36):
``cuda_memcpy_async``, ``cuda_memcpy_sync``, ``cuda_memset_sync``, ``cuda_api_sync``, ``gpu_gaps``
(the Analysis Guide's "GPU Starvation", also found as ``gpu_starvation``) and ``gpu_time_util``.

The CUDA rules list the memory operations or API calls NVIDIA flags, longest first, a memory
operation with the name of the runtime call that launched it (same process and correlation id);
on asysrep the calls are HGGC's (``hggcMemcpyAsync``), on the other inputs CUDA's.
The GPU rules work per process and device on the kernels, memcpy and memset starting after 0,
as ``ppu_gaps`` and ``ppu_time_util`` do (whose grouping and gap finding they reuse), in
NVIDIA's units: a chunk's utilisation sums its operations' time, so overlapping ones add up.
Everything is printed in NVIDIA's columns and formats (``mirrors=NSYS_STATS``)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from asysstats.analysis.activity import kind_label_ids, kind_labels, row_index, take_or_na
from asysstats.analysis.declarations import Option, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.compute.distinct import distinct
from asysstats.compute.intervals import gaps, summed_busy_per_window
from asysstats.core.integers import INT64_MAX
from asysstats.core.result import FIGURE, INT, NSYS_STATS, PERCENT, TEXT, Column, Frame
from asysstats.core.tables import NA, EventTable
from asysstats.reading.schema import ASYSREP
from asysstats.rulebook.analyze import ACTIVITY_KINDS, GAP, activity_groups, group_rows, low_runs

ROWS = Option("rows", "int", "Maximum number of rows to print; -1 for no limit.", 50, minimum=-1)
THRESHOLD = Option("threshold", "int", "Report chunks whose GPU utilisation is under this percentage.", 50,
                   minimum=0)
CHUNKS = Option("chunks", "int", "Number of equal-duration chunks each device's time range is cut into.", 30,
                minimum=1, maximum=1000)
FROM_TIME = Option("start", "int", "Report only what starts at or after this time, in nanoseconds.", None, minimum=0)
TO_TIME = Option("end", "int", "Report only what ends at or before this time, in nanoseconds.", None, minimum=0)
PROCESS = Option("process", "int", "Report only the calls of this process id (default: all).", None, minimum=0)
THREAD = Option("thread", "int", "Report only the calls of this thread id (default: all).", None, minimum=0)


@dataclass(frozen=True)
class RowsOptions(Options):
    """The options every nsys analyze rule takes."""

    rows: int = ROWS.field()
    start: int | None = FROM_TIME.field()
    end: int | None = TO_TIME.field()


@dataclass(frozen=True)
class ApiSyncOptions(RowsOptions):
    process: int | None = PROCESS.field()
    thread: int | None = THREAD.field()


@dataclass(frozen=True)
class GapsOptions(RowsOptions):
    gap: Fraction = GAP.field()


@dataclass(frozen=True)
class TimeUtilOptions(RowsOptions):
    threshold: int = THRESHOLD.field()
    chunks: int = CHUNKS.field()


def time_range(options: RowsOptions, first: int = 0) -> tuple[int, int]:
    """The ``start`` and ``end`` options as an inclusive range (``first`` at the earliest)."""
    return max(first, options.start or 0), INT64_MAX if options.end is None else options.end


def in_range(table: EventTable, options: RowsOptions) -> np.ndarray:
    """Which events start at or after ``start`` and end at or before ``end``."""
    lo, hi = time_range(options)
    return (table["start"] >= lo) & (table["end"] <= hi)


DURATION = Column("Duration (ns)", INT, "Duration of the operation on the GPU")
START = Column("Start (ns)", INT, "Start time of the operation on the GPU")
BYTES = Column("Bytes (MB)", FIGURE, "Bytes transferred or set, in MB (10^6 bytes)")
PID = Column("PID", INT, "Process identifier")
DEVICE_ID = Column("Device ID", INT, "GPU device identifier")
CONTEXT_ID = Column("Context ID", INT, "Context identifier")
GREEN_CONTEXT_ID = Column("Green Context ID", INT, "Green context identifier (empty: none)")
STREAM_ID = Column("Stream ID", INT, "Stream identifier")
API_NAME = Column("API Name", TEXT, "Runtime API function name, as the report spells it")
ROW_NUMBER = Column("Row#", INT, "Row number")
OPERATION_COLUMNS = (PID, DEVICE_ID, CONTEXT_ID, GREEN_CONTEXT_ID, STREAM_ID, API_NAME)
OPERATION_READS = ("start", "end", "deviceId", "contextId", "greenContextId", "streamId", "correlationId",
                   "globalPid", "bytes")
RUNTIME_READS = {"runtime": ("start", "end", "globalTid", "correlationId", "nameId")}
KIND_READS = {"mem_kinds": ("id", "label")}
SMALL_HOST_TO_DEVICE = 64 * 1024  # CUDA returns before such a Host-to-Device copy is done: not blocking


def name_mask(inputs: Inputs, name_ids: np.ndarray, pattern: str) -> np.ndarray:
    """Which of the string ids ``name_ids`` name a function matching ``pattern`` (case-insensitive
    from the start, as SQL's ``LIKE``), tested once per distinct name; ``{api}`` in the pattern is
    the report's API prefix (``hggc`` on asysrep, ``cuda`` on the others)."""
    values, inverse = distinct(name_ids)
    regex = re.compile(pattern.format(api="hggc" if inputs.dialect == ASYSREP else "cuda"), re.IGNORECASE)
    matched = np.array([text is not None and regex.match(text) is not None
                        for text in inputs.strings.lookup(values)], dtype=bool)
    return matched[inverse] if len(values) else np.zeros(len(name_ids), dtype=bool)


def kind_mask(inputs: Inputs, kinds: np.ndarray, labels: tuple[str, ...]) -> np.ndarray:
    """Which memory kinds are among ``labels`` (by the report's memory-kind names, so that both
    dialects' numberings are read alike)."""
    ids = [kind for kind, label in kind_labels(inputs, "mem_kinds").items() if label in labels]
    return np.isin(kinds, ids)


def launched(inputs: Inputs, table: str, columns: tuple[str, ...]) -> tuple[EventTable, np.ndarray]:
    """The operations of ``table`` whose launching runtime call is in the report, and that call's name id."""
    inputs.require("runtime")
    operations = inputs.table(table, columns)
    calls = inputs.table("runtime", RUNTIME_READS["runtime"])
    found = row_index([calls["pid"], calls["correlationId"]], [operations["pid"], operations["correlationId"]])
    linked = (found >= 0) & (operations["correlationId"] >= 0)
    return operations.take(linked), take_or_na(calls["nameId"], found[linked], missing=-1)


def operation_frame(inputs: Inputs, operations: EventTable, names: np.ndarray,
                    kinds: dict[str, np.ndarray]) -> Frame:
    """The rows of a memory-operation rule: longest first, ties by start."""
    duration = operations["end"] - operations["start"]
    order = np.lexsort((operations["start"], -duration))
    green = operations["greenContextId"]
    return {"Duration (ns)": duration[order], "Start (ns)": operations["start"][order],
            **{column: kind_label_ids(inputs, "mem_kinds", values[order]) for column, values in kinds.items()},
            "Bytes (MB)": operations["bytes"][order] / 1e6, "PID": operations["pid"][order],
            "Device ID": operations["deviceId"][order], "Context ID": operations["contextId"][order],
            "Green Context ID": np.where(green != 0, green, NA)[order], "Stream ID": operations["streamId"][order],
            "API Name": names[order]}


MEMCPY_READS = OPERATION_READS + ("copyKind", "srcKind", "dstKind")


def memcpy_rule(select: Callable[[Inputs, EventTable, np.ndarray], np.ndarray]) -> Callable[..., Frame]:
    """The compute of a memcpy rule listing the copies ``select`` keeps."""
    def compute(inputs: Inputs, options: RowsOptions) -> Frame:
        copies, names = launched(inputs, "memcpy", MEMCPY_READS)
        keep = select(inputs, copies, names) & in_range(copies, options)
        return operation_frame(inputs, copies.take(keep), names[keep],
                               {"Src Kind": copies["srcKind"][keep], "Dst Kind": copies["dstKind"][keep]})

    return compute


def pageable_async(inputs: Inputs, copies: EventTable, names: np.ndarray) -> np.ndarray:
    """An ``Async`` memcpy call whose source or destination is pageable memory."""
    pageable = kind_mask(inputs, copies["srcKind"], ("Pageable",)) | kind_mask(inputs, copies["dstKind"], ("Pageable",))
    return pageable & name_mask(inputs, names, r"{api}Memcpy.*Async")


def blocking_sync(inputs: Inputs, copies: EventTable, names: np.ndarray) -> np.ndarray:
    """A memcpy call without ``Async`` in its name, but Host-to-Device copies of 64 KB or less."""
    host_to_device = [kind for kind, label in kind_labels(inputs, "memcpy_kinds").items() if label == "Host-to-Device"]
    small = np.isin(copies["copyKind"], host_to_device) & (copies["bytes"] <= SMALL_HOST_TO_DEVICE)
    return ~small & name_mask(inputs, names, r"{api}Memcpy(?!.*async)")


def memset_sync(inputs: Inputs, options: RowsOptions) -> Frame:
    """A memset call without ``Async`` in its name on pinned host memory or managed memory."""
    sets, names = launched(inputs, "memset", OPERATION_READS + ("memKind",))
    keep = kind_mask(inputs, sets["memKind"], ("Pinned", "Managed"))
    keep &= name_mask(inputs, names, r"{api}Memset(?!.*async)") & in_range(sets, options)
    return operation_frame(inputs, sets.take(keep), names[keep], {"Memory Kind": sets["memKind"][keep]})


def api_sync(inputs: Inputs, options: ApiSyncOptions) -> Frame:
    """``cudaDeviceSynchronize`` and ``cudaStreamSynchronize`` calls, longest first."""
    calls = inputs.table("runtime", RUNTIME_READS["runtime"])
    keep = name_mask(inputs, calls["nameId"], r"{api}(Device|Stream)Synchronize") & in_range(calls, options)
    if options.process is not None:
        keep &= calls["pid"] == options.process
    if options.thread is not None:
        keep &= calls["tid"] == options.thread
    calls = calls.take(keep)
    duration = calls["end"] - calls["start"]
    order = np.lexsort((calls["start"], -duration))
    return {"Duration (ns)": duration[order], "Start (ns)": calls["start"][order], "PID": calls["pid"][order],
            "TID": calls["tid"][order], "API Name": calls["nameId"][order]}


GPU_COLUMNS = ("start", "end", "deviceId", "globalPid", "contextId")
GPU_READS = {kind: GPU_COLUMNS for kind in ACTIVITY_KINDS}


def gpu_gaps(inputs: Inputs, options: GapsOptions) -> Frame:
    """Idle gaps longer than ``gap`` ms per process and device, each with the context of the
    operation whose end opens it; longest first, ties by start."""
    operations, groups = activity_groups(inputs, zero_length=True, columns=GPU_COLUMNS,
                                           within=time_range(options, first=1))  # nsys: GPU operations after 0
    longer_than = math.floor(options.gap * 1_000_000)
    found = []
    for g in range(groups.count):
        rows = group_rows(groups, g)
        starts, ends = operations["start"][rows], operations["end"][rows]
        lo, hi = gaps(starts, ends)
        keep = hi - lo > longer_than
        by_end = np.lexsort((starts, ends))
        opener = rows[by_end[np.searchsorted(ends[by_end], lo[keep], side="right") - 1]]
        found.append((hi[keep] - lo[keep], lo[keep], np.full(keep.sum(), g), operations["contextId"][opener]))
    duration, start, group, context = (np.concatenate(c) for c in zip(*found)) if found else (
        np.empty(0, np.int64),) * 4
    order = np.lexsort((group, start, -duration))
    return {"Row#": np.arange(1, len(order) + 1), "Duration (ns)": duration[order], "Start (ns)": start[order],
            "PID": groups.keys[0][group][order], "Device ID": groups.keys[1][group][order],
            "Context ID": context[order]}


def chunk_edges(lo: int, hi: int, chunks: int) -> np.ndarray:
    """NVIDIA's chunks of ``[lo, hi]``: ``chunks`` of the length rounded up to a nanosecond, the
    last cut at ``hi`` (so fewer chunks when the rounding covers the range sooner)."""
    size = -(-(hi - lo) // chunks)
    count = -(-(hi - lo) // size)
    return np.minimum(lo + size * np.arange(count + 1, dtype=np.int64), hi)


def gpu_time_util(inputs: Inputs, options: TimeUtilOptions) -> Frame:
    """Runs of chunks under ``threshold`` percent per process and device, with their weighted
    utilisation (rounded to a tenth, as printed), lowest first, ties by duration."""
    operations, groups = activity_groups(inputs, zero_length=True, columns=GPU_COLUMNS,
                                           within=time_range(options, first=1))  # nsys: GPU operations after 0
    cells: list[tuple[np.ndarray, ...]] = []
    for g in range(groups.count):
        rows = group_rows(groups, g)
        starts, ends = operations["start"][rows], operations["end"][rows]
        lo, hi = int(starts.min()), int(ends.max())
        if hi <= lo:
            continue
        edges = chunk_edges(lo, hi, options.chunks)
        first, busy, length = low_runs(summed_busy_per_window(starts, ends, edges), np.diff(edges), options.threshold)
        context = operations["contextId"][rows[np.argmin(starts)]]
        cells.append((np.floor(busy * 1000.0 / length + 0.5) / 10, length.astype(np.int64), edges[first],
                      np.full(len(first), g), np.full(len(first), context)))
    in_use, duration, start, group, context = (np.concatenate(c) for c in zip(*cells)) if cells else (
        np.empty(0),) + (np.empty(0, np.int64),) * 4
    order = np.lexsort((group, start, duration, in_use))
    return {"Row#": np.arange(1, len(order) + 1), "In-Use (%)": in_use[order], "Duration (ns)": duration[order],
            "Start (ns)": start[order], "PID": groups.keys[0][group][order],
            "Device ID": groups.keys[1][group][order], "Context ID": context[order]}


def memcpy_columns() -> tuple[Column, ...]:
    return (DURATION, START, Column("Src Kind", TEXT, "Memcpy source memory kind"),
            Column("Dst Kind", TEXT, "Memcpy destination memory kind"), BYTES) + OPERATION_COLUMNS


MEMCPY_RULE_READS = {"memcpy": MEMCPY_READS, **RUNTIME_READS, **KIND_READS, "memcpy_kinds": ("id", "label")}

CUDA_MEMCPY_ASYNC = Rule(
    name="cuda_memcpy_async",
    title="CUDA Async Memcpy with Pageable Memory",
    help="nsys analyze's asynchronous memcpy with pageable memory: memcpy launched by a cudaMemcpy*Async call "
         "whose source or destination is pageable memory, which makes the copy synchronous; longest first.",
    columns=memcpy_columns(),
    compute=memcpy_rule(pageable_async),
    reads=MEMCPY_RULE_READS,
    options=RowsOptions,
    requires=("memcpy",),
    numbered=False,
    command="analyze",
    mirrors=NSYS_STATS,
)

CUDA_MEMCPY_SYNC = Rule(
    name="cuda_memcpy_sync",
    title="CUDA Synchronous Memcpy",
    help="nsys analyze's synchronous memcpy: memcpy launched by a cudaMemcpy* call without Async, which blocks "
         "the host (not Host-to-Device copies of 64 KB or less, which return early); longest first.",
    columns=memcpy_columns(),
    compute=memcpy_rule(blocking_sync),
    reads=MEMCPY_RULE_READS,
    options=RowsOptions,
    requires=("memcpy",),
    numbered=False,
    command="analyze",
    mirrors=NSYS_STATS,
)

CUDA_MEMSET_SYNC = Rule(
    name="cuda_memset_sync",
    title="CUDA Synchronous Memset",
    help="nsys analyze's synchronous memset: memset launched by a cudaMemset* call without Async on pinned host "
         "memory or managed (Unified) memory, which blocks the host; longest first.",
    columns=(DURATION, START, Column("Memory Kind", TEXT, "Type of memory being set"), BYTES) + OPERATION_COLUMNS,
    compute=memset_sync,
    reads={"memset": OPERATION_READS + ("memKind",), **RUNTIME_READS, **KIND_READS},
    options=RowsOptions,
    requires=("memset",),
    numbered=False,
    command="analyze",
    mirrors=NSYS_STATS,
)

CUDA_API_SYNC = Rule(
    name="cuda_api_sync",
    title="CUDA Synchronization APIs",
    help="nsys analyze's synchronization APIs: cudaDeviceSynchronize and cudaStreamSynchronize calls, which block "
         "the host until the issued CUDA work is complete; longest first.",
    columns=(Column("Duration (ns)", INT, "Duration of the synchronization call"),
             Column("Start (ns)", INT, "Start time of the synchronization call"), PID,
             Column("TID", INT, "Thread identifier"), API_NAME),
    compute=api_sync,
    reads=RUNTIME_READS,
    options=ApiSyncOptions,
    numbered=False,
    command="analyze",
    mirrors=NSYS_STATS,
)

GPU_GAPS = Rule(
    name="gpu_gaps",
    title="GPU Gaps",
    help="nsys analyze's GPU gaps (the Analysis Guide's GPU Starvation; also gpu_starvation): idle gaps longer "
         "than 'gap' milliseconds between the kernels, memcpy and memset of each process on each device, within "
         "its first to last operation; longest first.",
    columns=(ROW_NUMBER, Column("Duration (ns)", INT, "Duration of the GPU gap"),
             Column("Start (ns)", INT, "Start time of the GPU gap"), PID, DEVICE_ID, CONTEXT_ID),
    compute=gpu_gaps,
    reads=GPU_READS,
    options=GapsOptions,
    requires=ACTIVITY_KINDS,
    numbered=False,
    command="analyze",
    mirrors=NSYS_STATS,
)

GPU_TIME_UTIL = Rule(
    name="gpu_time_util",
    title="GPU Time Utilization",
    help="nsys analyze's GPU time utilisation: each process's first to last GPU operation on each device is cut "
         "into 'chunks' chunks; a chunk's utilisation is its operations' summed time over its length (so it may "
         "pass 100%). Chunks under 'threshold' percent are reported, adjacent ones merged (time-weighted), "
         "lowest first.",
    columns=(ROW_NUMBER, Column("In-Use (%)", PERCENT, "Percentage of time the GPU is in use"),
             Column("Duration (ns)", INT, "Duration of the chunk (or of the merged chunks)"),
             Column("Start (ns)", INT, "Start time of the chunk"), PID, DEVICE_ID, CONTEXT_ID),
    compute=gpu_time_util,
    reads=GPU_READS,
    options=TimeUtilOptions,
    requires=ACTIVITY_KINDS,
    numbered=False,
    command="analyze",
    mirrors=NSYS_STATS,
)

RULES = [CUDA_MEMCPY_ASYNC, CUDA_MEMCPY_SYNC, CUDA_MEMSET_SYNC, CUDA_API_SYNC, GPU_GAPS, GPU_TIME_UTIL]
