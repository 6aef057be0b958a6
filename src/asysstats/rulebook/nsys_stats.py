"""NVIDIA's ``nsys stats`` summaries under their own names (docs/nsys.md, docs/decisions.md D31):
``cuda_gpu_kern_sum``, ``cuda_api_sum``, ``cuda_gpu_mem_time_sum``, ``cuda_gpu_mem_size_sum``,
``nvtx_sum`` and ``osrtsum`` (``osrt_sum`` is the asys reference's rule of that name).

They read the logical tables of the asys summaries (Nsight exports and asysrep alike) and
print what nsys 2024 prints: NVIDIA's columns, averages and medians as decimals, the sample
standard deviation, the names as nsys spells them; rows by total descending, ties in the
order of the string ids nsys groups by (its ``GROUP BY`` of ids, then ``ORDER BY`` total), or
by name where nsys orders them so (kernels, memory operations).
The writers put them in NVIDIA's CSV, TSV and console formats (``mirrors=NSYS_STATS``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from asysstats.analysis.declarations import Option, Options, Rows, Rule, Stats, Summary, name_mode
from asysstats.analysis.hgtx import load_ranges
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.names import demangle, prefixed_ids
from asysstats.analysis.reads import HGTX_READS
from asysstats.analysis.summary import StatColumns
from asysstats.core.result import NSYS_STATS, TEXT, Column, Frame
from asysstats.rulebook.api import api_name_key
from asysstats.rulebook.memory_ops import OPERATION, operations
from asysstats.rulebook.memory_ops import READS as MEMORY_READS

BASE = Option("base", "flag", "Summarise over the base name of the kernel (its shortName), rather than the "
              "templated name.", False)
MANGLED = Option("mangled", "flag", "Summarise over the raw mangled name of the kernel, rather than the "
                 "templated name.", False)


@dataclass(frozen=True)
class KernelOptions(Options):
    """``cuda_gpu_kern_sum``'s options, as NVIDIA documents them."""

    base: bool = BASE.field()
    mangled: bool = MANGLED.field()


Names = Callable[[Inputs, Any, tuple[np.ndarray, ...]], dict[str, np.ndarray]]  # options, group keys -> text columns


def nvidia_frame(statistics: StatColumns, names: Names, by_text: bool = False) -> Callable[..., Frame]:
    """The ``frame`` of an nsys summary: its statistics and the text columns ``names`` makes of
    the group keys; groups by total descending, ties by the keys' ids (``by_text``: by the
    first key's text, for names nsys groups by as text)."""
    def frame(inputs: Inputs, options: Options, keys: tuple[np.ndarray, ...], stats: Stats) -> Frame:
        ties = (inputs.strings.sort_rank(keys[0]),) + keys[1:] if by_text else keys
        order = np.lexsort(tuple(reversed(ties)) + (-stats["sum"],))
        return statistics.cells(stats, order) | names(inputs, options, tuple(key[order] for key in keys))

    return frame


def first_key(column: str) -> Names:
    """The text column ``column`` of the first key, as it is."""
    return lambda inputs, options, keys: {column: keys[0]}


# cuda_gpu_kern_sum ---------------------------------------------------------------------------------------

KERNEL_STATS = StatColumns.nvidia("executions of this kernel")
NAME_COLUMN = {"demangled": "demangledName", "base": "shortName", "mangled": "mangledName"}


def kernel_rows(inputs: Inputs, options: KernelOptions) -> Rows:
    """Per kernel its name id in NVIDIA's mode (the mangled name: the demangled one where none)."""
    column = NAME_COLUMN[name_mode(options)]
    kernels = inputs.table("kernels", ("start", "end", "demangledName") + ((column,) * (column != "demangledName")))
    names = kernels[column]
    if column == "mangledName":
        names = np.where(names >= 0, names, kernels["demangledName"])
    return Rows((names,), kernels["end"] - kernels["start"])


def kernel_names(inputs: Inputs, options: KernelOptions, keys: tuple[np.ndarray, ...]) -> dict[str, np.ndarray]:
    """The printed name; a ``demangledName`` still mangled (asysrep may store one) demangled."""
    demangled = name_mode(options) == "demangled"
    return {"Name": inputs.strings.map_distinct(keys[0], demangle) if demangled else keys[0]}


# Ties by name text: nsys 2024 printed fuser_hopper_r1's two kernels of 4160 ns in the order of their
# names, not of their ids (the only tie of kernels in the corpus; docs/nsys.md).
KERNEL_SUMMARY = Summary(kernel_rows, nvidia_frame(KERNEL_STATS, kernel_names, by_text=True))

CUDA_GPU_KERN_SUM = Rule(
    name="cuda_gpu_kern_sum",
    title="CUDA GPU Kernel Summary",
    help="nsys stats' CUDA GPU Kernel Summary: kernel execution time per kernel name, in descending order of "
         "total time, in NVIDIA's columns and formats (float average and median, sample standard deviation).",
    columns=KERNEL_STATS.columns + (Column("Name", TEXT, "Name of the kernel"),),
    compute=KERNEL_SUMMARY.compute,
    reads={"kernels": ("start", "end", "demangledName", "shortName", "mangledName")},
    options=KernelOptions,
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)


# cuda_api_sum, osrtsum -------------------------------------------------------------------------------------

CALL_STATS = StatColumns.nvidia("calls to this function", count="Num Calls")
CALL_COLUMNS = CALL_STATS.columns + (Column("Name", TEXT, "Name of the function"),)


def call_rows(table: str) -> Callable[[Inputs, Options], Rows]:
    """Per call of ``table`` its name id and duration."""
    def rows(inputs: Inputs, options: Options) -> Rows:
        calls = inputs.table(table, ("start", "end", "nameId"))
        return Rows((calls["nameId"],), calls["end"] - calls["start"])

    return rows


def api_names(inputs: Inputs, options: Options, keys: tuple[np.ndarray, ...]) -> dict[str, np.ndarray]:
    """API names as nsys prints them: an Nsight export's ``_v`` + four digits dropped."""
    return {"Name": api_name_key(inputs, keys[0]).rows()}


API_SUMMARY = Summary(call_rows("runtime"), nvidia_frame(CALL_STATS, api_names))
OSRT_SUMMARY = Summary(call_rows("osrt"), nvidia_frame(CALL_STATS, first_key("Name")))

CUDA_API_SUM = Rule(
    name="cuda_api_sum",
    title="CUDA API Summary",
    help="nsys stats' CUDA API Summary: time in CUDA runtime and driver API calls per name, in descending order "
         "of total time, in NVIDIA's columns and formats.",
    columns=CALL_COLUMNS,
    compute=API_SUMMARY.compute,
    reads={"runtime": ("start", "end", "nameId")},
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)

OSRT_SUM = Rule(
    name="osrtsum",
    title="OS Runtime Summary",
    help="nsys stats' OS Runtime Summary (nsys 2022's name; osrt_sum is the asys rule): time in OS runtime "
         "calls per function, in descending order of total time, in NVIDIA's columns and formats.",
    columns=CALL_COLUMNS,
    compute=OSRT_SUMMARY.compute,
    reads={"osrt": ("start", "end", "nameId")},
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)


# cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum -----------------------------------------------------------

TIME_STATS = StatColumns.nvidia("executions of this operation", count="Count")
SIZE_STATS = StatColumns.nvidia("sizes of this operation", count="Count", unit="MB")


def memory_rows(value: int) -> Callable[[Inputs, Options], Rows]:
    """Per memcpy and memset NVIDIA's operation name (``[CUDA memcpy <copy kind>]``, ``[CUDA memset]``)
    and the ``value`` of :func:`operations` (1: duration, 2: bytes)."""
    def rows(inputs: Inputs, options: Options) -> Rows:
        found = operations(inputs, api="CUDA")
        return Rows((found[0],), found[value])

    return rows


TIME_SUMMARY = Summary(memory_rows(1), nvidia_frame(TIME_STATS, first_key("Operation"), by_text=True))
SIZE_SUMMARY = Summary(memory_rows(2), nvidia_frame(SIZE_STATS, first_key("Operation"), by_text=True))

CUDA_GPU_MEM_TIME_SUM = Rule(
    name="cuda_gpu_mem_time_sum",
    title="CUDA GPU MemOps Summary (by Time)",
    help="nsys stats' GPU memory operations by time: memset and memcpy by copy kind, in descending order of "
         "total time, in NVIDIA's columns and formats.",
    columns=TIME_STATS.columns + (OPERATION,),
    compute=TIME_SUMMARY.compute,
    reads=MEMORY_READS,
    requires=("memcpy", "memset"),
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)

CUDA_GPU_MEM_SIZE_SUM = Rule(
    name="cuda_gpu_mem_size_sum",
    title="CUDA GPU MemOps Summary (by Size)",
    help="nsys stats' GPU memory operations by size: memset and memcpy by copy kind, in descending order of "
         "total size, in MB (10^6 bytes), in NVIDIA's columns and formats.",
    columns=SIZE_STATS.columns + (OPERATION,),
    compute=SIZE_SUMMARY.compute,
    reads=MEMORY_READS,
    requires=("memcpy", "memset"),
    share="Total (MB)",
    numbered=False,
    mirrors=NSYS_STATS,
)


# nvtx_sum -------------------------------------------------------------------------------------------------

RANGE_STATS = StatColumns.nvidia("instances of this range")


def range_rows(inputs: Inputs, options: Options) -> Rows:
    ranges = load_ranges(inputs, ("name", "style", "domain", "start", "end"))
    return Rows((ranges["name"], ranges["style"], ranges["domain"]), ranges["end"] - ranges["start"], text=(0, 1, 2))


def default_domain_names(inputs: Inputs, names: np.ndarray) -> np.ndarray:
    """Ids of ``:name``, as nsys 2024 prints a range of the default domain (a missing name stays
    missing): joined by Arrow once per distinct name, not made in Python per string."""
    names = np.asarray(names, dtype=np.int64)
    empty = inputs.strings.intern([""])[0]
    return prefixed_ids(inputs.strings, np.where(names >= 0, empty, -1), names, sep=":")


def nvidia_range_names(inputs: Inputs, names: np.ndarray, domains: np.ndarray) -> np.ndarray:
    """Range name ids as nsys 2024 prints them: ``domain:name``, ``:name`` in the default domain."""
    default = domains < 0
    shown = names.copy()
    shown[default] = default_domain_names(inputs, names[default])
    return shown


def range_names(inputs: Inputs, options: Options, keys: tuple[np.ndarray, ...]) -> dict[str, np.ndarray]:
    """``Style`` and ``Range`` (:func:`nvidia_range_names`)."""
    names, styles, domains = keys
    return {"Style": styles, "Range": nvidia_range_names(inputs, names, domains)}


RANGE_SUMMARY = Summary(range_rows, nvidia_frame(RANGE_STATS, range_names))

NVTX_SUM = Rule(
    name="nvtx_sum",
    title="NVTX Range Summary",
    help="nsys stats' NVTX Range Summary: time in NVTX push/pop and start/end ranges per name and style, in "
         "descending order of total time, in NVIDIA's columns and formats ('domain:range'; ':range' in the "
         "default domain).",
    columns=RANGE_STATS.columns + (Column("Style", TEXT, "Range style; Start/End or Push/Pop"),
                                   Column("Range", TEXT, "Name of the range")),
    compute=RANGE_SUMMARY.compute,
    reads=HGTX_READS,
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)

RULES = [CUDA_GPU_KERN_SUM, CUDA_API_SUM, CUDA_GPU_MEM_TIME_SUM, CUDA_GPU_MEM_SIZE_SUM, NVTX_SUM, OSRT_SUM]
