"""NVIDIA's ``nsys stats`` reports of the programming models beside CUDA (docs/nsys.md, docs/decisions.md
D35): ``openacc_sum`` (OpenACC events), ``openmp_sum`` (OpenMP events) and ``um_total_sum`` (the
totals of unified memory migrations and page faults).

They read tables only an Nsight export has (the asys profiler traces neither OpenACC, OpenMP nor
unified memory faults); an asysrep report lacks them and is told so. The summaries are those of
:mod:`asysstats.rulebook.nsys_stats`: NVIDIA's columns, float average and median, sample deviation."""

from __future__ import annotations

import numpy as np

from asysstats.analysis.activity import kind_labels
from asysstats.analysis.declarations import Options, Rows, Rule, Summary
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import KIND_READS
from asysstats.core.result import FIGURE, INT, NSYS_STATS, TEXT, Column, Frame
from asysstats.rulebook.nsys_stats import CALL_STATS, call_rows, first_key, nvidia_frame

EVENT_NAME = Column("Name", TEXT, "Name of the event")


# openacc_sum ----------------------------------------------------------------------------------------------

def openacc_rows(inputs: Inputs, options: Options) -> Rows:
    """Per OpenACC event (data, launch and other) its name, source file and line, and its duration."""
    events = inputs.table("openacc", ("start", "end", "nameId", "srcFile", "lineNo"))
    return Rows((events["nameId"], events["srcFile"], events["lineNo"]), events["end"] - events["start"],
                text=(0, 1))


def openacc_names(inputs: Inputs, options: Options, keys: tuple[np.ndarray, ...]) -> dict[str, np.ndarray]:
    """``<event>@<source file>:<line>``, as nsys names an OpenACC event (``Wait@main.c:202``); the
    event's name alone where the export holds no source file (docs/decisions.md D35)."""
    names, files, lines = keys
    texts = inputs.strings.texts(names, "").to_pylist()
    sources = inputs.strings.texts(files, "").to_pylist()
    shown = [f"{name}@{source}:{line}" if known else name
             for name, source, line, known in zip(texts, sources, lines.tolist(), (files >= 0).tolist())]
    return {"Name": inputs.strings.intern(shown) if shown else np.empty(0, np.int64)}


OPENACC_SUMMARY = Summary(openacc_rows, nvidia_frame(CALL_STATS, openacc_names, by_text=True))

OPENACC_SUM = Rule(
    name="openacc_sum",
    title="OpenACC Summary",
    help="nsys stats' OpenACC Summary: time in OpenACC data, launch and other events per event name, source "
         "file and line ('Wait@main.c:202'), in descending order of total time, in NVIDIA's columns and formats.",
    columns=CALL_STATS.columns + (EVENT_NAME,),
    compute=OPENACC_SUMMARY.compute,
    reads={"openacc": ("start", "end", "nameId", "srcFile", "lineNo")},
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)


# openmp_sum -----------------------------------------------------------------------------------------------

OPENMP_SUMMARY = Summary(call_rows("openmp"), nvidia_frame(CALL_STATS, first_key("Name")))

OPENMP_SUM = Rule(
    name="openmp_sum",
    title="OpenMP Summary",
    help="nsys stats' OpenMP Summary: time in OpenMP events (every OPENMP_EVENT_KIND_* table) per event name, "
         "in descending order of total time, in NVIDIA's columns and formats.",
    columns=CALL_STATS.columns + (EVENT_NAME,),
    compute=OPENMP_SUMMARY.compute,
    reads={"openmp": ("start", "end", "nameId")},
    share="Time (%)",
    numbered=False,
    mirrors=NSYS_STATS,
)


# um_total_sum ---------------------------------------------------------------------------------------------

UNIFIED_LABELS = {"HtoD": "Unified Host-to-Device", "DtoH": "Unified Device-to-Host"}  # copy kinds of migrations
MIGRATION_READS = {"memcpy": ("start", "end", "bytes", "copyKind", "virtualAddress"), "memcpy_kinds": KIND_READS["memcpy_kinds"]}
FAULT_READS = {"um_cpu_faults": ("start", "address"), "um_gpu_faults": ("start", "end", "address",
                                                                         "numberOfPageFaults")}


def migrations(inputs: Inputs) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The unified memory migrations by direction (``HtoD``, ``DtoH``): the bytes and the virtual
    base address of each, told apart from other copies by their copy kind's label."""
    memcpy = inputs.table("memcpy", MIGRATION_READS["memcpy"])
    codes = {label: code for code, label in kind_labels(inputs, "memcpy_kinds").items()}
    chosen = {direction: memcpy["copyKind"] == codes.get(label, -1) for direction, label in UNIFIED_LABELS.items()}
    return {direction: (memcpy["bytes"][rows], memcpy["virtualAddress"][rows]) for direction, rows in chosen.items()}


def address_id(inputs: Inputs, address: int | None) -> int:
    """The string id of a virtual address as nsys prints one (``0x7F9C80000000``); -1 (an empty
    cell) for none."""
    return -1 if address is None else int(inputs.strings.intern([f"0x{address:X}"])[0])


def um_totals(inputs: Inputs, options: Options) -> Frame:
    """One row: the bytes migrated each way, the CPU and GPU page faults, and the lowest and highest
    virtual address that any of them names; no row without any migration or fault."""
    moved = migrations(inputs)
    cpu = inputs.table("um_cpu_faults", FAULT_READS["um_cpu_faults"])
    gpu = inputs.table("um_gpu_faults", FAULT_READS["um_gpu_faults"])
    found = int(bool(len(moved["HtoD"][0]) + len(moved["DtoH"][0]) + cpu.rows + gpu.rows))
    addresses = np.concatenate([moved["HtoD"][1], moved["DtoH"][1], cpu["address"], gpu["address"]])
    addresses = addresses[addresses >= 0]  # a copy without its address (older exports) names none
    low, high = (int(addresses.min()), int(addresses.max())) if len(addresses) else (None, None)
    row = {
        "Total HtoD Migration Size (MB)": moved["HtoD"][0].sum() / 10 ** 6,
        "Total DtoH Migration Size (MB)": moved["DtoH"][0].sum() / 10 ** 6,
        "Total CPU Page Faults": cpu.rows,
        "Total GPU PageFaults": int(gpu["numberOfPageFaults"].sum()),
        "Minimum Virtual Address": address_id(inputs, low),
        "Maximum Virtual Address": address_id(inputs, high),
    }
    return {column: np.array([value] * found) for column, value in row.items()}


UM_TOTAL_SUM = Rule(
    name="um_total_sum",
    title="Unified Memory Totals Summary",
    help="nsys stats' Unified Memory Totals: the bytes of unified memory migrated host to device and device "
         "to host (MB, 10^6 bytes), the CPU and GPU page faults, and the lowest and highest virtual address "
         "they name, in NVIDIA's columns and formats.",
    columns=(
        Column("Total HtoD Migration Size (MB)", FIGURE, "Total bytes migrated from host to device"),
        Column("Total DtoH Migration Size (MB)", FIGURE, "Total bytes migrated from device to host"),
        Column("Total CPU Page Faults", INT, "Number of CPU page faults"),
        Column("Total GPU PageFaults", INT, "Number of GPU page faults (nsys's heading, without its space)"),
        Column("Minimum Virtual Address", TEXT, "Lowest virtual address of the pages migrated or faulted"),
        Column("Maximum Virtual Address", TEXT, "Highest virtual address of the pages migrated or faulted"),
    ),
    compute=um_totals,
    reads=MIGRATION_READS | FAULT_READS,
    requires=("memcpy", "um_cpu_faults", "um_gpu_faults"),
    numbered=False,
    mirrors=NSYS_STATS,
)

RULES = [OPENACC_SUM, OPENMP_SUM, UM_TOTAL_SUM]
