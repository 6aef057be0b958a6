"""Every table-name and column-name mapping between the two SQLite dialects, in one place.

A *logical table* (``kernels``, ``runtime``, ...) is read from the first physical table
of the report's dialect that exists (several are concatenated where the spec says so,
such as the CUDA runtime and driver APIs). Logical columns map onto physical ones by
name, with per-dialect alternatives for the columns that differ across exporter
versions; an absent optional column reads as its fill value. Columns of kind ``text``
hold inline text and are interned into the string pool by the loader, so that every
loaded column is numeric.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection

import numpy as np

from asysstats.core.errors import MissingData
from asysstats.core.tables import EventTable

if TYPE_CHECKING:
    from asysstats.reading.protocol import ReportSource

ASYSREP = "asysrep"
NSYS = "nsys"
DIALECTS = (ASYSREP, NSYS)


@dataclass(frozen=True)
class Col:
    """One logical column: physical names to try in order, the fill value for NULL or absence."""

    name: str
    sources: tuple[str, ...] = ()
    fill: int | float = 0
    required: bool = False  # absent or NULL: an error
    kind: str = "int"  # int | float | text (inline text, interned as a string id) | strid
    present: bool = False  # absent: an error (a NULL value is its fill)

    def physical(self) -> tuple[str, ...]:
        return self.sources or (self.name,)

    def source(self, present: Collection[str]) -> str | None:
        """The first of the column's physical names that a table with columns ``present`` has."""
        return next((s for s in self.physical() if s in present), None)


@dataclass(frozen=True)
class TableSpec:
    """A logical table: where it lives in each dialect, its columns, and how to collect it."""

    name: str
    physical: dict[str, tuple[str, ...]]
    columns: tuple[Col, ...]
    what: str
    collect: str
    concat: bool = False  # read every physical table present and concatenate them

    def column(self, name: str) -> Col:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"{self.name} has no column {name!r}")


def _ids(*names: str, fill: int = -1, present: tuple[str, ...] = ()) -> tuple[Col, ...]:
    return tuple(Col(n, fill=fill, kind="strid", present=n in present) for n in names)


_TIME = (Col("start", required=True), Col("end", required=True))
_DEVICE_ACTIVITY = _TIME + (
    Col("deviceId", required=True), Col("contextId"), Col("streamId"),
    Col("correlationId", fill=-1), Col("globalPid"), Col("graphNodeId", fill=-1),
)

# The OpenMP tables of an Nsight export, one per OMPT event kind (OPENMP_EVENT_KIND_<kind>).
OPENMP_EVENT_KINDS = ("THREAD", "PARALLEL", "SYNC_REGION_WAIT", "SYNC_REGION", "TASK", "MASTER", "REDUCTION",
                      "TASK_CREATE", "TASK_SCHEDULE", "CANCEL", "MUTEX_WAIT", "CRITICAL_SECTION", "MUTEX_RELEASED",
                      "LOCK_INIT", "LOCK_DESTROY", "WORKSHARE", "DISPATCH", "FLUSH")

TABLES: dict[str, TableSpec] = {t.name: t for t in (
    TableSpec(
        "kernels",
        {ASYSREP: ("HGPTI_ACTIVITY_KIND_KERNEL",), NSYS: ("CUPTI_ACTIVITY_KIND_KERNEL",)},
        _DEVICE_ACTIVITY + _ids("demangledName", "shortName", "mangledName", present=("demangledName", "shortName"))
        + (
            Col("gridX"), Col("gridY"), Col("gridZ"), Col("blockX"), Col("blockY"), Col("blockZ"),
            Col("registersPerThread"), Col("staticSharedMemory"), Col("dynamicSharedMemory"),
            Col("graphId", fill=-1),
        ),
        "HGGC kernel data", "--trace hggc"),
    TableSpec(
        "memcpy",
        {ASYSREP: ("HGPTI_ACTIVITY_KIND_MEMCPY",), NSYS: ("CUPTI_ACTIVITY_KIND_MEMCPY",)},
        _DEVICE_ACTIVITY + (Col("bytes", present=True), Col("copyKind", present=True), Col("srcKind", fill=-1),
                            Col("dstKind", fill=-1), Col("virtualAddress", fill=-1), Col("greenContextId")),
        "HGGC memcpy data", "--trace hggc"),
    TableSpec(
        "memset",
        {ASYSREP: ("HGPTI_ACTIVITY_KIND_MEMSET",), NSYS: ("CUPTI_ACTIVITY_KIND_MEMSET",)},
        _DEVICE_ACTIVITY + (Col("value"), Col("bytes", present=True), Col("memKind", fill=-1), Col("greenContextId")),
        "HGGC memset data", "--trace hggc"),
    TableSpec(
        "runtime",
        {ASYSREP: ("HGPTI_ACTIVITY_KIND_RUNTIME",),
         NSYS: ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")},
        _TIME + (Col("globalTid", required=True), Col("correlationId", fill=-1),
                 Col("nameId", required=True, kind="strid"), Col("returnValue"), Col("callchainId", fill=-1)),
        "HGGC API data", "--trace hggc", concat=True),
    TableSpec(
        "hgtx",
        {ASYSREP: ("HGTX_EVENTS",), NSYS: ("NVTX_EVENTS",)},
        (Col("start", required=True), Col("end", fill=-1), Col("eventType", required=True),
         Col("rangeId", fill=-1), Col("category", fill=-1), Col("globalTid"), Col("endGlobalTid", fill=-1),
         Col("domainId"), Col("text", fill=-1, kind="text"), Col("textId", fill=-1, kind="strid")),
        "HGTX data", "--trace hgtx"),
    TableSpec(
        "osrt",
        {ASYSREP: ("OSRT_API",), NSYS: ("OSRT_API",)},
        _TIME + (Col("globalTid", required=True), Col("nameId", required=True, kind="strid"),
                 Col("returnValue"), Col("nestingLevel"), Col("callchainId", fill=-1)),
        "OS runtime data", "--trace osrt"),
    TableSpec(
        "openacc",
        {ASYSREP: (), NSYS: ("CUPTI_ACTIVITY_KIND_OPENACC_DATA", "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
                             "CUPTI_ACTIVITY_KIND_OPENACC_OTHER")},
        _TIME + (Col("nameId", required=True, kind="strid"), Col("globalTid"), Col("eventKind"),
                 Col("lineNo", fill=-1), Col("srcFile", fill=-1, kind="strid"), Col("funcName", fill=-1, kind="strid")),
        "OpenACC event data", "nsys profile --trace openacc", concat=True),
    TableSpec(
        "openmp",
        {ASYSREP: (), NSYS: tuple(f"OPENMP_EVENT_KIND_{kind}" for kind in OPENMP_EVENT_KINDS)},
        _TIME + (Col("nameId", required=True, kind="strid"), Col("globalTid"), Col("eventKind")),
        "OpenMP event data", "nsys profile --trace openmp", concat=True),
    TableSpec(
        "um_cpu_faults",
        {ASYSREP: (), NSYS: ("CUDA_UM_CPU_PAGE_FAULT_EVENTS",)},
        (Col("start", required=True), Col("globalPid"), Col("address", required=True),
         Col("originalFaultPc", fill=-1), Col("CpuInstruction", fill=-1, kind="strid"),
         Col("module", fill=-1, kind="strid")),
        "CUDA Unified Memory CPU page faults data",
        "nsys profile --trace cuda --cuda-um-cpu-page-faults true"),
    TableSpec(
        "um_gpu_faults",
        {ASYSREP: (), NSYS: ("CUDA_UM_GPU_PAGE_FAULT_EVENTS",)},
        _TIME + (Col("globalPid"), Col("deviceId"), Col("address", required=True),
                 Col("numberOfPageFaults", present=True), Col("faultAccessType", fill=-1)),
        "CUDA Unified Memory GPU page faults data",
        "nsys profile --trace cuda --cuda-um-gpu-page-faults true"),
    TableSpec(
        "graph_nodes",
        {ASYSREP: ("HGGC_GRAPH_NODE_EVENTS",), NSYS: ("CUDA_GRAPH_NODE_EVENTS",)},
        _TIME + (Col("globalTid"), Col("correlationId", fill=-1), Col("graphId", fill=-1),
                 Col("graphNodeId", fill=-1), Col("originalGraphNodeId", fill=-1), Col("nameId", fill=-1, kind="strid")),
        "HGGC graph node data", "--trace hggc"),
    TableSpec(
        "callchains",
        {ASYSREP: ("HGGC_CALLCHAINS",), NSYS: ("CUDA_CALLCHAINS",)},
        (Col("id", required=True), Col("stackDepth", required=True)) + _ids("symbol", "module"),
        "HGGC call-stack data", "--trace hggc --backtrace"),
    TableSpec(
        "memory_usage",
        {ASYSREP: ("HGGC_PPU_MEMORY_USAGE_EVENTS",), NSYS: ("CUDA_GPU_MEMORY_USAGE_EVENTS",)},
        (Col("start", required=True), Col("globalPid"), Col("globalTid", fill=-1), Col("deviceId"),
         Col("contextId"), Col("address", required=True), Col("bytes", present=True), Col("memKind", fill=-1),
         Col("accessFlags", fill=-1), Col("memoryOperationType", required=True), Col("correlationId", fill=-1)),
        "device memory usage data", "--hggc-memory-usage device"),
    TableSpec(
        "pccl_stages",
        {ASYSREP: ("PCCL_STAGE_EVENTS",), NSYS: ()},
        _TIME + (Col("globalTid"), Col("deviceId"), Col("channelId"), Col("channelType", fill=-1, kind="text"),
                 Col("stageNameId", fill=-1, kind="strid")),
        "PCCL transfer stage data", "--trace pccl"),
    TableSpec(
        "metrics",
        {ASYSREP: ("PPU_METRICS",), NSYS: ("GPU_METRICS",)},
        (Col("deviceId", sources=("deviceId", "typeId")), Col("start", sources=("start", "timestamp"), required=True),
         Col("end", fill=-1), Col("metricId", required=True), Col("value", kind="float", present=True)),
        "PPU metric data", "--ppu-metrics-device all"),
    TableSpec(
        "metric_info",
        {ASYSREP: ("TARGET_INFO_PPU_METRICS",), NSYS: ("TARGET_INFO_GPU_METRICS",)},
        (Col("metricId", required=True), Col("metricName", fill=-1, kind="text"), Col("unit", fill=-1, kind="text")),
        "PPU metric data", "--ppu-metrics-device all"),
    TableSpec(
        "devices",
        {ASYSREP: ("TARGET_INFO_PPU",), NSYS: ("TARGET_INFO_GPU",)},
        (Col("id", sources=("id", "deviceId"), required=True), Col("name", fill=-1, kind="text"),
         Col("busLocation", fill=-1, kind="text"), Col("uuid", fill=-1, kind="text"),
         Col("hostname", fill=-1, kind="text"), Col("computeMajor", fill=-1), Col("computeMinor", fill=-1),
         Col("asyncEngineCount", sources=("asyncEngineCount", "asyncEngines"), fill=-1),
         Col("cuCount", sources=("cuCount", "smCount"), fill=-1), Col("totalMemory", fill=-1),
         Col("clockRate", fill=-1), Col("memoryClockRate", fill=-1), Col("memoryBandwidth", fill=-1),
         Col("peakFlopsBf16", fill=float("nan"), kind="float"), Col("peakFlopsFp16", fill=float("nan"), kind="float"),
         Col("peakFlopsFp32", fill=float("nan"), kind="float"), Col("peakFlopsFp8", fill=float("nan"), kind="float"),
         Col("peakFlopsInt8", fill=float("nan"), kind="float")),
        "PPU device data", "--trace hggc"),
    TableSpec(
        "legacy_gpus",
        {ASYSREP: (), NSYS: ("TARGET_INFO_CUDA_GPU",)},
        (Col("deviceId", required=True), Col("computeCapabilityMajor", fill=-1),
         Col("computeCapabilityMinor", fill=-1), Col("numMemcpyEngines", fill=-1),
         Col("numMultiprocessors", fill=-1), Col("globalMemorySize", fill=-1), Col("coreClockRate", fill=-1)),
        "PPU device data", "--trace hggc"),
    TableSpec(
        "system_env",
        {ASYSREP: ("TARGET_INFO_SYSTEM_ENV",), NSYS: ("TARGET_INFO_SYSTEM_ENV",)},
        (Col("name", fill=-1, kind="text"), Col("value", fill=-1, kind="text")),
        "system environment data", "(any trace)"),
    TableSpec(
        "processes",
        {ASYSREP: ("PROCESSES",), NSYS: ("PROCESSES",)},
        (Col("globalPid"), Col("pid"), Col("name", fill=-1, kind="text")),
        "process data", "(any trace)"),
    TableSpec(
        "threads",
        {ASYSREP: ("ThreadNames",), NSYS: ("ThreadNames",)},
        (Col("nameId", fill=-1, kind="strid"), Col("priority"), Col("globalTid")),
        "thread name data", "(any trace)"),
    TableSpec(
        "analysis",
        {ASYSREP: ("ANALYSIS_DETAILS",), NSYS: ("ANALYSIS_DETAILS",)},
        (Col("duration"), Col("startTime"), Col("stopTime")),
        "analysis range data", "(any trace)"),
    TableSpec(
        "session_start",
        {ASYSREP: ("TARGET_INFO_SESSION_START_TIME",), NSYS: ("TARGET_INFO_SESSION_START_TIME",)},
        (Col("utcEpochNs"),),
        "session start time", "(any trace)"),
    TableSpec(
        "memcpy_kinds",
        {ASYSREP: ("ENUM_HGGC_MEMCPY_OPER",), NSYS: ("ENUM_CUDA_MEMCPY_OPER",)},
        (Col("id"), Col("name", fill=-1, kind="text"), Col("label", fill=-1, kind="text")),
        "memcpy kind names", "(any trace)"),
    TableSpec(
        "mem_kinds",
        {ASYSREP: ("ENUM_HGGC_MEM_KIND",), NSYS: ("ENUM_CUDA_MEM_KIND",)},
        (Col("id"), Col("name", fill=-1, kind="text"), Col("label", fill=-1, kind="text")),
        "memory kind names", "(any trace)"),
)}

# What an Nsight export lacks and the nsys option that collects it, in NVIDIA's words (the
# TableSpec's own words are the asys profiler's): the hint of a "does not contain" error. The
# first five are the words of nsys stats' own "SKIPPED: <file> does not contain ..." lines.
NSYS_WORDS = {
    "kernels": ("CUDA kernel data", "nsys profile --trace cuda"),
    "memcpy": ("GPU memory data", "nsys profile --trace cuda"),
    "memset": ("GPU memory data", "nsys profile --trace cuda"),
    "runtime": ("CUDA trace data", "nsys profile --trace cuda"),
    "hgtx": ("NV Tools Extension (NVTX) data", "nsys profile --trace nvtx"),
    "osrt": ("OS runtime data", "nsys profile --trace osrt"),
    "graph_nodes": ("CUDA graph node data", "nsys profile --trace cuda --cuda-graph-trace node"),
    "callchains": ("CUDA call-stack data", "nsys profile --trace cuda --cudabacktrace all"),
    "memory_usage": ("GPU memory usage data", "nsys profile --cuda-memory-usage true"),
    "metrics": ("GPU metric data", "nsys profile --gpu-metrics-devices all"),
    "metric_info": ("GPU metric data", "nsys profile --gpu-metrics-devices all"),
    "devices": ("GPU device data", "nsys profile --trace cuda"),
    "legacy_gpus": ("GPU device data", "nsys profile --trace cuda"),
    "openacc": ("OpenACC event data", "nsys profile --trace openacc"),
    "openmp": ("OpenMP event data", "nsys profile --trace openmp"),
    "um_cpu_faults": ("CUDA Unified Memory CPU page faults data",
                      "nsys profile --trace cuda --cuda-um-cpu-page-faults true"),
    "um_gpu_faults": ("CUDA Unified Memory GPU page faults data",
                      "nsys profile --trace cuda --cuda-um-gpu-page-faults true"),
}


def missing_words(spec: TableSpec, dialect: str) -> tuple[str, str]:
    """What the report lacks and how to collect it, in the words of the report's profiler."""
    return NSYS_WORDS.get(spec.name, (spec.what, spec.collect)) if dialect == NSYS else (spec.what, spec.collect)


def missing_data(report: "ReportSource", logical: str) -> MissingData:
    """The error of ``report`` lacking the logical table: its one-line message, and what it
    lacks in the words of the report's profiler."""
    return MissingData(report.missing_message(logical), lacking=missing_words(TABLES[logical], report.dialect)[0])


# Names of the enumerations as Nsight Systems numbers them, for exports without ENUM_* tables.
MEMCPY_KIND_LABELS = {
    0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array", 4: "Array-to-Host",
    5: "Array-to-Array", 6: "Array-to-Device", 7: "Device-to-Array", 8: "Device-to-Device",
    9: "Host-to-Host", 10: "Peer-to-Peer", 11: "Unified Host-to-Device", 12: "Unified Device-to-Host",
    13: "Unified Device-to-Device",
}
MEM_KIND_LABELS = {
    0: "Unknown", 1: "Pageable", 2: "Pinned", 3: "Device", 4: "Array", 5: "Managed",
    6: "Device Static", 7: "Managed Static",
}

# Nsight Systems numbers memory kinds differently from CUPTI (its ENUM_CUDA_MEM_KIND table):
# the labels for Nsight exports that lack the table (verified on exports that have it).
NSYS_MEM_KIND_LABELS = {
    0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed", 5: "Device Static",
    6: "Managed Static", 7: "Unknown",
}

# Marker tables: which dialect a database is.
DIALECT_MARKERS = {
    ASYSREP: ("HGPTI_ACTIVITY_KIND_KERNEL", "HGPTI_ACTIVITY_KIND_RUNTIME", "HGTX_EVENTS", "TARGET_INFO_PPU"),
    NSYS: ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "TARGET_INFO_GPU"),
}


def derived_names(columns: list[str]) -> list[str]:
    """The columns :func:`derive_ids` adds to a table loaded with ``columns``."""
    if "globalTid" in columns:
        return ["pid", "tid"]
    return ["pid"] if "globalPid" in columns and "pid" not in columns else []


def derive_ids(table: EventTable) -> EventTable:
    """Add ``pid``/``tid`` decoded from ``globalTid`` (or ``pid`` from ``globalPid``)."""
    extra: dict[str, np.ndarray] = {}
    if "globalTid" in table:
        g = table["globalTid"]
        extra = {"pid": (g >> 24) & 0xFFFFFF, "tid": g & 0xFFFFFF}
    elif "globalPid" in table and "pid" not in table:
        extra = {"pid": (table["globalPid"] >> 24) & 0xFFFFFF}
    return table.with_columns(**extra) if extra else table
