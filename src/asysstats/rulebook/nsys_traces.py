"""NVIDIA's ``nsys stats`` trace reports under their own names (docs/nsys.md, docs/decisions.md D33):
``cuda_gpu_trace``, ``cuda_api_trace``, ``cuda_kern_exec_trace`` and ``nvtx_pushpop_trace``, and the
summary of the kernel execution trace's launches, ``cuda_kern_exec_sum``.

Each is the asys trace of the same events (``hggc_ppu_trace``, ``hggc_api_trace``,
``hggc_kern_exec_trace``, ``hgtx_pushpop_trace``) in the columns, units and names nsys 2024/2025
prints: sizes in MB (10^6 bytes), nsys's throughput, ``[CUDA memcpy Host-to-Device]``, kernel
names as ``cuda_gpu_kern_sum`` names them, ``:name`` for a range of the default domain. Every
column is gathered by one row index as it is written (no per-event Python, no sorted copies)."""

from __future__ import annotations

from typing import Any

import numpy as np

from asysstats.analysis.declarations import Rule, Stats, merged_reads
from asysstats.analysis.hgtx import load_ranges
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import earliest_launches
from asysstats.analysis.reads import HGTX_READS, KERNEL_COLUMNS
from asysstats.analysis.summary import StatColumns
from asysstats.compute.grouped import dense_group_ids, grouped_stats
from asysstats.core.result import FIGURE, INT, NSYS_STATS, TEXT, Column, Frame, Gathered
from asysstats.core.tables import NA
from asysstats.rulebook.api import API_COLUMNS, api_name_ids, api_trace_frame, thread_values
from asysstats.rulebook.hgtx_ranges import TRACE_COLUMNS as PUSHPOP_COLUMNS
from asysstats.rulebook.hgtx_ranges import TRACE_INPUTS as PUSHPOP_INPUTS
from asysstats.rulebook.hgtx_ranges import pushpop_frame
from asysstats.rulebook.kernel_traces import EXEC_COLUMNS, GB_COLUMNS, dimension_ids, kern_exec_trace
from asysstats.rulebook.memory_ops import READS as MEMORY_READS
from asysstats.rulebook.memory_ops import operations
from asysstats.rulebook.nsys_stats import KernelOptions, kernel_names, kernel_rows, nvidia_range_names
from asysstats.rulebook.ppu_trace import READS as PPU_TRACE_READS
from asysstats.rulebook.ppu_trace import memory_cells, stacked_columns, table_coded, trace_tables

MB = 10 ** 6  # bytes per MB, as nsys counts them
NAME_READS = {"kernels": ("demangledName", "shortName", "mangledName")}  # what nsys_stats.kernel_rows reads


def nvidia_kernel_names(inputs: Inputs, options: KernelOptions) -> np.ndarray:
    """Per kernel row its name id as ``cuda_gpu_kern_sum`` prints it (``base``: the shortName;
    ``mangled``: the mangledName, else the demangled name)."""
    ids = kernel_rows(inputs, options).keys[0]
    return np.asarray(kernel_names(inputs, options, (np.asarray(ids),))["Name"])


# cuda_gpu_trace -------------------------------------------------------------------------------------------

KERNEL_FIELDS = {"GrdX": "gridX", "GrdY": "gridY", "GrdZ": "gridZ", "BlkX": "blockX", "BlkY": "blockY",
                 "BlkZ": "blockZ", "Reg/Trd": "registersPerThread"}
SHARED_MEMORY = {"StcSMem (MB)": "staticSharedMemory", "DymSMem (MB)": "dynamicSharedMemory"}

GPU_TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Timestamp of start time"),
    Column("Duration (ns)", INT, "Length of event"),
    Column("CorrId", INT, "Correlation ID"),
    Column("GrdX", INT, "Grid X value"), Column("GrdY", INT, "Grid Y value"), Column("GrdZ", INT, "Grid Z value"),
    Column("BlkX", INT, "Block X value"), Column("BlkY", INT, "Block Y value"), Column("BlkZ", INT, "Block Z value"),
    Column("Reg/Trd", INT, "Registers per thread"),
    Column("StcSMem (MB)", FIGURE, "Size of static shared memory"),
    Column("DymSMem (MB)", FIGURE, "Size of dynamic shared memory"),
    Column("Bytes (MB)", FIGURE, "Size of the memory operation"),
    Column("Throughput (MB/s)", FIGURE, "Memory throughput"),
    Column("SrcMemKd", TEXT, "Memcpy source memory kind or memset memory kind"),
    Column("DstMemKd", TEXT, "Memcpy destination memory kind"),
    Column("Device", TEXT, "GPU device name and ID"),
    Column("Ctx", INT, "Context ID"),
    Column("GreenCtx", INT, "Green context ID"),
    Column("Strm", INT, "Stream ID"),
    Column("Name", TEXT, "Trace event name"),
)
GPU_TRACE_READS = merged_reads(PPU_TRACE_READS, MEMORY_READS, NAME_READS)


def throughput(sizes: np.ndarray, durations: np.ndarray) -> np.ndarray:
    """MB/s as nsys computes it: the MB times the whole number of durations in a second
    (10^9 // duration ns; docs/decisions.md D33); NaN (empty) for a zero duration."""
    per_second = np.where(durations > 0, 10 ** 9 // np.maximum(durations, 1), 0)
    return np.where(durations > 0, sizes / MB * per_second, np.nan)


def gpu_trace(inputs: Inputs, options: KernelOptions) -> Frame:
    kernels, memcpy, memset = tables = trace_tables(inputs)
    names = np.concatenate([nvidia_kernel_names(inputs, options), operations(inputs, api="CUDA")[0]])
    columns, order = stacked_columns(inputs, tables, names)
    columns["GreenCtx"] = lambda rows: np.full(len(rows), NA, np.int64)
    rows = len(names)
    columns |= {name: table_coded(kernels[field], 0, rows, NA) for name, field in KERNEL_FIELDS.items()}
    columns |= {name: table_coded(kernels[field] / MB, 0, rows, np.nan) for name, field in SHARED_MEMORY.items()}
    memory = memory_cells(inputs, memcpy, memset)
    sizes = memory["Bytes (bytes)"]
    durations = np.concatenate([memcpy["end"] - memcpy["start"], memset["end"] - memset["start"]])
    moved = {"Bytes (MB)": sizes / MB, "Throughput (MB/s)": throughput(sizes, durations),
             "SrcMemKd": memory["SrcMemKd"], "DstMemKd": memory["DstMemKd"]}
    columns |= {name: table_coded(values, kernels.rows, rows, np.nan if values.dtype.kind == "f" else -1)
                for name, values in moved.items()}
    return {name: Gathered(values, order) for name, values in columns.items()}  # gathered as written


CUDA_GPU_TRACE = Rule(
    name="cuda_gpu_trace",
    title="CUDA GPU Trace",
    help="nsys stats' CUDA GPU Trace: every kernel, memcpy and memset, one row each in ascending order of "
         "start, in NVIDIA's columns and units (MB = 10^6 bytes; kernel names as cuda_gpu_kern_sum names them).",
    columns=GPU_TRACE_COLUMNS,
    compute=gpu_trace,
    reads=GPU_TRACE_READS,
    options=KernelOptions,
    requires=("kernels", "memcpy", "memset"),
    numbered=False,
    mirrors=NSYS_STATS,
)


# cuda_api_trace -------------------------------------------------------------------------------------------

API_TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Timestamp when API call was made"),
    Column("Duration (ns)", INT, "Length of API calls"),
    Column("Name", TEXT, "API function name"),
    Column("Result", INT, "Return value of API call"),
    Column("CorrID", INT, "Correlation used to map to other CUDA calls"),
    Column("Pid", INT, "Process ID that made the call"),
    Column("Tid", INT, "Thread ID that made the call"),
    Column("T-Pri", INT, "Run priority of the call's thread"),
    Column("Thread Name", TEXT, "Name of the thread that called the API function"),
)


def api_trace(inputs: Inputs, options: Any) -> Frame:
    """``hggc_api_trace``'s rows and columns, with each call's result and its thread's priority."""
    frame = api_trace_frame(inputs)
    order = frame["Start (ns)"].rows
    calls = inputs.table("runtime", ("globalTid", "returnValue"))
    priorities = thread_values(inputs, "priority")(calls["globalTid"])
    return frame | {"Result": Gathered(calls["returnValue"], order), "T-Pri": Gathered(priorities, order)}


CUDA_API_TRACE = Rule(
    name="cuda_api_trace",
    title="CUDA API Trace",
    help="nsys stats' CUDA API Trace: every CUDA runtime and driver API call in ascending order of start, in "
         "NVIDIA's columns (API names without an Nsight export's _v suffix).",
    columns=API_TRACE_COLUMNS,
    compute=api_trace,
    reads={"runtime": API_COLUMNS + ("returnValue",), "threads": ("globalTid", "nameId", "priority")},
    numbered=False,
    mirrors=NSYS_STATS,
)


# cuda_kern_exec_trace -------------------------------------------------------------------------------------

DIMENSIONS = "{:4d} {:4d} {:4d}"  # nsys's GridXYZ and BlockXYZ: each dimension four wide


def kern_exec_trace_nvidia(inputs: Inputs, options: KernelOptions) -> Frame:
    """``hggc_kern_exec_trace``'s rows, with nsys's kernel names and dimension texts."""
    frame = kern_exec_trace(inputs, options)
    launched = frame["Kernel Dur (ns)"].rows  # the kernel row of each output row
    kernels = inputs.table("kernels", GB_COLUMNS)
    grid, block = dimension_ids(inputs, kernels, DIMENSIONS)
    return frame | {"GridXYZ": Gathered(grid, launched), "BlockXYZ": Gathered(block, launched),
                    "Kernel Name": Gathered(nvidia_kernel_names(inputs, options), launched)}


CUDA_KERN_EXEC_TRACE = Rule(
    name="cuda_kern_exec_trace",
    title="CUDA Kernel Launch & Exec Time Trace",
    help="nsys stats' CUDA Kernel Launch & Exec Time Trace: per kernel its launch API call, queue time and "
         "execution, in ascending order of the API call's start, in NVIDIA's columns. The queue cells are empty "
         "when the kernel starts before the call returns.",
    columns=tuple(Column(c.name, c.kind, c.help.replace("HGGC", "CUDA").replace("PPU", "GPU")) for c in EXEC_COLUMNS),
    compute=kern_exec_trace_nvidia,
    reads=merged_reads({"kernels": GB_COLUMNS, "runtime": API_COLUMNS}, NAME_READS),
    options=KernelOptions,
    numbered=False,
    mirrors=NSYS_STATS,
)


# cuda_kern_exec_sum ---------------------------------------------------------------------------------------

LAUNCH_TIMES = {  # the statistics' prefix -> what it is a statistic of
    "T": "total times of these launches (API call start to the later of the call's end and the kernel's end)",
    "A": "API times of these launches (the launch call's duration)",
    "Q": "queue times of these launches (API call end to kernel start), over the positive ones",
    "K": "kernel times of these launches",
}
LAUNCH_STATISTICS = ("mean", "median", "min", "max", "sample_std")


def launch_statistics(letter: str) -> StatColumns:
    """NVIDIA's Avg/Med/Min/Max/StdDev (ns) of one time of a launch, prefixed (``TAvg (ns)``)."""
    plain = StatColumns.nvidia(LAUNCH_TIMES[letter]).by_statistic
    return StatColumns({s: Column(letter + plain[s].name, plain[s].kind, plain[s].help) for s in LAUNCH_STATISTICS})


EXEC_SUM_STATS = {letter: launch_statistics(letter) for letter in LAUNCH_TIMES}
EXEC_SUM_COLUMNS = (
    Column("PID", INT, "Process ID that made the launch calls"),
    Column("TID", INT, "Thread ID that made the launch calls"),
    Column("DevId", INT, "GPU device that executed the kernels"),
    Column("Count", INT, "Number of launches"),
    Column("QCount", INT, "Number of launches whose kernel started after the launch call returned"),
) + tuple(column for statistics in EXEC_SUM_STATS.values() for column in statistics.columns) + (
    Column("API Name", TEXT, "Name of the CUDA API call that launched the kernels"),
    Column("Kernel Name", TEXT, "Name of the kernel"),
)


def positive_only(stats: Stats, present: np.ndarray, groups: int) -> Stats:
    """The statistics of the groups in ``present`` spread over all ``groups``; a group without a
    value has count 0 and empty statistics (NaN, so that ``--timeunit`` keeps them empty)."""
    spread = {name: np.full(groups, np.nan) for name in stats}
    spread["count"] = np.zeros(groups, np.int64)
    for name, values in stats.items():
        spread[name][present] = values
    return spread


def kern_exec_sum(inputs: Inputs, options: KernelOptions) -> Frame:
    """Per (PID, TID, DevId, API name, kernel name) the launches of ``cuda_kern_exec_trace``'s
    pairing, with the statistics of their total, API, queue and kernel times."""
    kernels = inputs.table("kernels", KERNEL_COLUMNS)
    calls = inputs.table("runtime", API_COLUMNS)
    k, call = earliest_launches(calls, kernels)
    group, keys = dense_group_ids([calls["pid"][call], calls["tid"][call], kernels["deviceId"][k],
                                   api_name_ids(inputs, calls["nameId"])[call], nvidia_kernel_names(inputs, options)[k]])
    groups = len(keys[0])
    call_start, call_end = calls["start"][call], calls["end"][call]
    kernel_start, kernel_end = kernels["start"][k], kernels["end"][k]
    queue = kernel_start - call_end
    queued = queue > 0
    stats = {"T": grouped_stats([group], np.maximum(call_end, kernel_end) - call_start)[1],
             "A": grouped_stats([group], call_end - call_start)[1],
             "K": grouped_stats([group], kernel_end - kernel_start)[1]}
    present, stats["Q"] = grouped_stats([group[queued]], queue[queued])
    stats["Q"] = positive_only(stats["Q"], present.keys[0], groups)
    pid, tid, device, api, kernel = keys
    order = np.lexsort((device, tid, pid, inputs.strings.sort_rank(kernel), inputs.strings.sort_rank(api),
                        -stats["T"]["sum"]))
    frame: Frame = {"PID": pid[order], "TID": tid[order], "DevId": device[order], "Count": stats["T"]["count"][order],
                    "QCount": stats["Q"]["count"][order], "API Name": api[order], "Kernel Name": kernel[order]}
    for letter, statistics in EXEC_SUM_STATS.items():
        frame |= statistics.cells(stats[letter], order)
    return frame


CUDA_KERN_EXEC_SUM = Rule(
    name="cuda_kern_exec_sum",
    title="CUDA Kernel Launch & Exec Time Summary",
    help="nsys stats' CUDA Kernel Launch & Exec Time Summary: per process, thread, device, launch API and kernel "
         "name the launches of cuda_kern_exec_trace, with the statistics of their total (T), API (A), queue (Q, "
         "over the QCount launches whose kernel starts after the call returns) and kernel (K) times, in "
         "descending order of the total of the total times, in NVIDIA's columns and formats.",
    columns=EXEC_SUM_COLUMNS,
    compute=kern_exec_sum,
    reads=merged_reads({"kernels": KERNEL_COLUMNS, "runtime": API_COLUMNS}, NAME_READS),
    options=KernelOptions,
    numbered=False,
    mirrors=NSYS_STATS,
)


# nvtx_pushpop_trace ---------------------------------------------------------------------------------------

TREE_MARKER = "--"  # nsys's NameTree: two dashes per level (docs/decisions.md D33)


def nvtx_pushpop_trace(inputs: Inputs, options: Any) -> Frame:
    ranges = load_ranges(inputs, PUSHPOP_INPUTS + ("domain",))
    rows = np.flatnonzero(ranges["pushpop"] == 1)
    return pushpop_frame(inputs, ranges, rows, nvidia_range_names(inputs, ranges["name"], ranges["domain"]),
                         TREE_MARKER)


NVTX_PUSHPOP_TRACE = Rule(
    name="nvtx_pushpop_trace",
    title="NVTX Push/Pop Range Trace",
    help="nsys stats' NVTX Push/Pop Range Trace: every NVTX push/pop range with its stack state (level, "
         "parent, immediate children and their total duration) in ascending order of start, in NVIDIA's "
         "columns ('domain:range'; ':range' in the default domain).",
    columns=tuple(Column(c.name, c.kind, c.help.replace("HGTX", "NVTX")) for c in PUSHPOP_COLUMNS),
    compute=nvtx_pushpop_trace,
    reads=HGTX_READS,
    numbered=False,
    mirrors=NSYS_STATS,
)

RULES = [CUDA_GPU_TRACE, CUDA_API_TRACE, CUDA_KERN_EXEC_TRACE, CUDA_KERN_EXEC_SUM, NVTX_PUSHPOP_TRACE]
