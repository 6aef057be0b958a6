"""NVIDIA's ``nsys stats`` reports over NVTX ranges and the CUDA summary of everything
(docs/nsys.md, docs/decisions.md D34): ``nvtx_kern_sum`` (kernels per enclosing NVTX range) and
``cuda_api_gpu_sum`` (API calls, kernels and memory operations in one table).

``nvtx_kern_sum`` is the attribution of ``hgtx_kern_sum`` (the asys reference copied nsys): a kernel
counts in every range on its launch call's thread that holds the call's start; its groups are
:func:`~asysstats.rulebook.hgtx_kernels.kernel_groups`, printed in NVIDIA's columns and formats."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.analysis.declarations import (
    Option,
    Options,
    Rows,
    Rule,
    Stats,
    Summary,
    merged_reads,
    name_mode,
)
from asysstats.analysis.hgtx import load_ranges
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import innermost_range_names
from asysstats.analysis.names import demangle, prefixed_ids
from asysstats.analysis.reads import INNERMOST_READS, LAUNCH_COLUMNS
from asysstats.analysis.summary import StatColumns
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import grouped_stats, sample_deviation
from asysstats.core.result import DECIMAL, INT, NSYS_STATS, TEXT, Column, Frame
from asysstats.rulebook.hgtx_kernels import READS as KERNEL_RANGE_READS
from asysstats.rulebook.hgtx_kernels import SumOptions, kernel_groups
from asysstats.rulebook.hgtx_projection import READS as PROJECTION_READS
from asysstats.rulebook.hgtx_projection import TRACE_COLUMNS as HGTX_TRACE_COLUMNS
from asysstats.rulebook.hgtx_projection import TraceOptions as ProjTraceOptions
from asysstats.rulebook.hgtx_projection import proj_trace as hgtx_proj_trace
from asysstats.rulebook.hgtx_projection import projected_ranges
from asysstats.rulebook.memory_ops import READS as MEMORY_READS
from asysstats.rulebook.memory_ops import operations
from asysstats.rulebook.nsys_stats import (
    BASE,
    MANGLED,
    KernelOptions,
    api_names,
    call_rows,
    default_domain_names,
    kernel_rows,
    nvidia_frame,
)


def without_share(statistics: StatColumns) -> StatColumns:
    """``statistics`` without their ``Time (%)`` column (a report that prints no share)."""
    return StatColumns({name: column for name, column in statistics.by_statistic.items() if name != "share"})


def range_display(inputs: Inputs, names: np.ndarray) -> np.ndarray:
    """Range name ids as nsys 2024 prints them: a range of the default domain ``:name``
    (as ``nvtx_sum`` prints it), one of a named domain ``domain:name``."""
    ranges = load_ranges(inputs, ("name", "domain"))
    uniq, index = distinct(names)  # decided per distinct name: 4 M rows of nvtx_kern_sum hold 60 k
    default = np.isin(uniq, distinct(ranges["name"][ranges["domain"] < 0])[0]) & (uniq >= 0)
    shown = uniq.copy()
    shown[default] = default_domain_names(inputs, uniq[default])
    return shown[index]


# nvtx_kern_sum ---------------------------------------------------------------------------------------------

KERN_STATS = without_share(StatColumns.nvidia("executions of this kernel in this range", count="Kern Inst"))


def nvtx_kern_sum(inputs: Inputs, options: KernelOptions) -> Frame:
    groups = kernel_groups(inputs, options.like(SumOptions))
    keys = groups.keys
    order = np.arange(len(keys[0]))
    demangled = name_mode(options) == "demangled"
    return {
        "NVTX Range": range_display(inputs, keys[0]), "Style": keys[1], "PID": keys[2], "TID": keys[3],
        "NVTX Inst": groups.range_instances, **KERN_STATS.cells(groups.stats, order),
        "Kernel Name": inputs.strings.map_distinct(keys[4], demangle) if demangled else keys[4],
    }


NVTX_KERN_SUM = Rule(
    name="nvtx_kern_sum",
    title="NVTX Range Kernel Summary",
    help="nsys stats' NVTX Range Kernel Summary: kernel execution time per NVTX range, thread and kernel name. "
         "A kernel counts in every push/pop or start/end range on its launch call's thread that holds the "
         "call's start. Sorted by range name, PID and TID, then by total time descending; NVIDIA's columns "
         "and formats (float average and median, sample standard deviation).",
    columns=(Column("NVTX Range", TEXT, "Name of the NVTX range ('domain:range'; ':range' in the default domain)"),
             Column("Style", TEXT, "Range style; Start/End or Push/Pop"),
             Column("PID", INT, "Process ID for this set of ranges and kernels"),
             Column("TID", INT, "Thread ID for this set of ranges and kernels"),
             Column("NVTX Inst", INT, "Number of NVTX range instances"),
             KERN_STATS.by_statistic["count"], KERN_STATS.by_statistic["sum"])
    + KERN_STATS.columns[2:] + (Column("Kernel Name", TEXT, "Name of the kernel"),),
    compute=nvtx_kern_sum,
    reads=KERNEL_RANGE_READS,
    options=KernelOptions,
    requires=("kernels",),
    share="Total Time (ns)",
    numbered=False,
    mirrors=NSYS_STATS,
)


# cuda_api_gpu_sum ------------------------------------------------------------------------------------------

NVTX_NAME = Option("nvtx-name", "flag", "Prefix the kernel name with the name of the innermost enclosing NVTX "
                   "range ('range:kernel').", False)
CATEGORIES = ("CUDA_API", "CUDA_KERNEL", "MEMORY_OPER")
ALL_STATS = StatColumns.nvidia("instances of this operation")


@dataclass(frozen=True)
class AllOptions(Options):
    """``cuda_api_gpu_sum``'s options, as NVIDIA documents them."""

    nvtx_name: bool = NVTX_NAME.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()


def kernel_operations(inputs: Inputs, options: AllOptions) -> Rows:
    """Per kernel its name id in NVIDIA's mode (:func:`~asysstats.rulebook.nsys_stats.kernel_rows`);
    with ``nvtx-name``, demangled and prefixed ``range:`` (the innermost range around its launch call)."""
    rows = kernel_rows(inputs, options.like(KernelOptions))
    if not options.nvtx_name:
        return rows
    names = np.asarray(rows.keys[0])
    if name_mode(options) == "demangled":
        names = inputs.strings.map_distinct(names, demangle)
    kernels = inputs.table("kernels", ("start", "end") + LAUNCH_COLUMNS)
    return Rows((prefixed_ids(inputs.strings, innermost_range_names(inputs, kernels), names, sep=":"),), rows.values)


def all_rows(inputs: Inputs, options: AllOptions) -> Rows:
    """The API calls, kernels and memory operations, keyed by (category, name id)."""
    calls = call_rows("runtime")(inputs, options)
    kernels = kernel_operations(inputs, options)
    labels, durations, _ = operations(inputs, api="CUDA")
    parts = ((np.asarray(calls.keys[0]), calls.values), (np.asarray(kernels.keys[0]), kernels.values),
             (labels, durations))
    categories = inputs.strings.intern(list(CATEGORIES))
    category = np.concatenate([np.full(len(names), code, np.int64) for code, (names, _) in zip(categories, parts)])
    return Rows((category, np.concatenate([names for names, _ in parts])),
                np.concatenate([values for _, values in parts]), text=(0, 1))


def operation_names(inputs: Inputs, options: AllOptions, keys: tuple[np.ndarray, ...]) -> dict[str, np.ndarray]:
    """``Category`` and ``Operation``: API names as ``cuda_api_sum`` prints them, kernel names
    as ``cuda_gpu_kern_sum`` does, memory operations as they are."""
    category, names = keys
    api, kernel, _ = inputs.strings.intern(list(CATEGORIES))
    shown = names.copy()
    is_api, is_kernel = category == api, category == kernel
    shown[is_api] = api_names(inputs, options, (names[is_api],))["Name"]
    if name_mode(options) == "demangled":
        shown[is_kernel] = inputs.strings.map_distinct(names[is_kernel], demangle)
    return {"Category": category, "Operation": shown}


# ties by the ids of (category, name), as nsys groups: categories in the order interned (API, kernel, memory)
ALL_SUMMARY = Summary(all_rows, nvidia_frame(ALL_STATS, operation_names))

CUDA_API_GPU_SUM = Rule(
    name="cuda_api_gpu_sum",
    title="CUDA Summary (API/Kernels/MemOps)",
    help="nsys stats' CUDA Summary: CUDA API calls, kernels and GPU memory operations in one table, in "
         "descending order of total time; 'Time (%)' is the share of the total of all of them. NVIDIA's "
         "columns and formats.",
    columns=ALL_STATS.columns + (Column("Category", TEXT, "CUDA_API, CUDA_KERNEL or MEMORY_OPER"),
                                 Column("Operation", TEXT, "Name of the API call, kernel or memory operation")),
    compute=ALL_SUMMARY.compute,
    reads=merged_reads({"runtime": ("start", "end", "nameId"),
                        "kernels": ("start", "end", "demangledName", "shortName", "mangledName") + LAUNCH_COLUMNS},
                       MEMORY_READS, INNERMOST_READS),
    options=AllOptions,
    requires=("runtime", "kernels", "memcpy", "memset"),
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)


# nvtx_gpu_proj_sum, nvtx_gpu_proj_trace --------------------------------------------------------------------

PROJ_STATS = StatColumns({
    "sum": Column("Total Proj Time (ns)", INT, "Total projected time of all instances of this range"),
    "range_time": Column("Total Range Time (ns)", INT, "Total original NVTX range time of all instances"),
    "count": Column("Range Instances", INT, "Number of instances of this range"),
    "mean": Column("Proj Avg (ns)", DECIMAL, "Average projected time of this range"),
    "median": Column("Proj Med (ns)", DECIMAL, "Median projected time of this range"),
    "min": Column("Proj Min (ns)", INT, "Minimum projected time of this range"),
    "max": Column("Proj Max (ns)", INT, "Maximum projected time of this range"),
    "sample_std": Column("Proj StdDev (ns)", DECIMAL, "Sample standard deviation of the projected times"),
})
PER_RANGE = (("Total GPU Ops", None), ("Avg GPU Ops", "ops"), ("Avg Range Lvl", "level"),
             ("Avg Num Child", "children"))  # after the statistics: the GPU operations, the stack state


def proj_sum(inputs: Inputs, options: Options) -> Frame:
    ranges, proj, _ = projected_ranges(inputs, options.like(ProjTraceOptions))
    groups, stats = grouped_stats([ranges["name"], ranges["style"]], proj.end - proj.start)
    label = groups.label()

    def total(values: np.ndarray) -> np.ndarray:
        return np.bincount(label, weights=values, minlength=groups.count)

    stats = stats | {"range_time": total(ranges["end"] - ranges["start"]).astype(np.int64)}
    order = np.lexsort(tuple(reversed(groups.keys)) + (-stats["sum"],))
    per_range = {"ops": proj.count, "level": ranges["level"], "children": ranges["children"]}
    name, style = groups.keys
    return {"Range": range_display(inputs, name[order]), "Style": style[order],
            **{PROJ_STATS.by_statistic[s].name: _statistic(stats, s)[order] for s in PROJ_STATS.by_statistic},
            "Total GPU Ops": total(proj.count).astype(np.int64)[order],
            **{column: (total(per_range[of]) / stats["count"])[order] for column, of in PER_RANGE if of}}


def _statistic(stats: Stats, statistic: str) -> np.ndarray:
    return sample_deviation(stats) if statistic == "sample_std" else stats[statistic]


NVTX_GPU_PROJ_SUM = Rule(
    name="nvtx_gpu_proj_sum",
    title="NVTX GPU Projection Summary",
    help="nsys stats' NVTX GPU Projection Summary: NVTX ranges projected onto the GPU (from the start of the "
         "first to the end of the last kernel, memcpy or memset launched inside them), per range name and "
         "style, in descending order of total projected time; NVIDIA's columns and formats.",
    columns=(Column("Range", TEXT, "Name of the NVTX range ('domain:range'; ':range' in the default domain)"),
             Column("Style", TEXT, "Range style; Start/End or Push/Pop"))
    + tuple(PROJ_STATS.by_statistic.values())
    + (Column("Total GPU Ops", INT, "Total number of GPU operations"),
       Column("Avg GPU Ops", DECIMAL, "Average number of GPU operations"),
       Column("Avg Range Lvl", DECIMAL, "Average range stack depth"),
       Column("Avg Num Child", DECIMAL, "Average number of child ranges")),
    compute=proj_sum,
    reads=PROJECTION_READS,
    share="Total Proj Time (ns)",
    numbered=False,
    mirrors=NSYS_STATS,
)


def proj_trace(inputs: Inputs, options: Options) -> Frame:
    """``hgtx_ppu_proj_trace``'s rows, in NVIDIA's columns (no active time; ``NumGPUOps``)."""
    frame = hgtx_proj_trace(inputs, options.like(ProjTraceOptions))
    frame["NumGPUOps"] = frame.pop("NumPPUOps")
    del frame["PPU Active Time (ns)"]
    return frame


TRACE_WORDS = {"NumPPUOps": Column("NumGPUOps", INT, "Number of enclosed GPU operations")}
NVTX_GPU_PROJ_TRACE = Rule(
    name="nvtx_gpu_proj_trace",
    title="NVTX GPU Projection Trace",
    help="nsys stats' NVTX GPU Projection Trace: each NVTX range projected onto the GPU (first to last "
         "correlated kernel, memcpy or memset), with its stack state, in order of projected start; NVIDIA's "
         "columns and formats.",
    columns=tuple(TRACE_WORDS.get(c.name, c) for c in HGTX_TRACE_COLUMNS if c.name != "PPU Active Time (ns)"),
    compute=proj_trace,
    reads=PROJECTION_READS,
    numbered=False,
    mirrors=NSYS_STATS,
)

RULES = [NVTX_KERN_SUM, CUDA_API_GPU_SUM, NVTX_GPU_PROJ_SUM, NVTX_GPU_PROJ_TRACE]
