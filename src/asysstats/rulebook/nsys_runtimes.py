"""NVIDIA's ``nsys stats`` reports of the programming models beside CUDA (docs/nsys.md, docs/decisions.md
D35): ``openacc_sum`` (OpenACC events), ``openmp_sum`` (OpenMP events), ``um_total_sum`` (the
totals of unified memory migrations and page faults), ``um_sum`` (the same per virtual address) and
``um_cpu_page_faults_sum`` (CPU page faults per faulting instruction).

They read tables only an Nsight export has (the asys profiler traces neither OpenACC, OpenMP nor
unified memory faults); an asysrep report lacks them and is told so. The summaries are those of
:mod:`asysstats.rulebook.nsys_stats`: NVIDIA's columns, float average and median, sample deviation."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from asysstats.analysis.activity import kind_labels
from asysstats.analysis.declarations import Options, Rows, Rule, Summary
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import KIND_READS
from asysstats.compute.grouped import group_by
from asysstats.core.result import FIGURE, INT, NSYS_STATS, TEXT, Column, Frame
from asysstats.rulebook.nsys_analyze import ROWS
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


def migrations(inputs: Inputs) -> dict[str, dict[str, np.ndarray]]:
    """The unified memory migrations by direction (``HtoD``, ``DtoH``): the bytes, the virtual base
    address (-1: none) and the duration of each, told apart from other copies by their copy kind's label."""
    memcpy = inputs.table("memcpy", MIGRATION_READS["memcpy"])
    codes = {label: code for code, label in kind_labels(inputs, "memcpy_kinds").items()}
    chosen = {direction: memcpy["copyKind"] == codes.get(label, -1) for direction, label in UNIFIED_LABELS.items()}
    return {direction: {"bytes": memcpy["bytes"][rows], "address": memcpy["virtualAddress"][rows],
                        "duration": memcpy["end"][rows] - memcpy["start"][rows]} for direction, rows in chosen.items()}


def address_ids(inputs: Inputs, addresses: np.ndarray) -> np.ndarray:
    """The string ids of virtual addresses as nsys prints them (``0x7F9C80000000``); -1 (an empty
    cell) where there is none (a negative address)."""
    ids = np.full(len(addresses), -1, np.int64)
    known = addresses >= 0
    if known.any():
        ids[known] = inputs.strings.intern([f"0x{address:X}" for address in addresses[known].tolist()])
    return ids


def um_totals(inputs: Inputs, options: Options) -> Frame:
    """One row: the bytes migrated each way, the CPU and GPU page faults, and the lowest and highest
    virtual address that any of them names; no row without any migration or fault."""
    moved = migrations(inputs)
    cpu = inputs.table("um_cpu_faults", FAULT_READS["um_cpu_faults"])
    gpu = inputs.table("um_gpu_faults", FAULT_READS["um_gpu_faults"])
    found = int(bool(len(moved["HtoD"]["bytes"]) + len(moved["DtoH"]["bytes"]) + cpu.rows + gpu.rows))
    addresses = np.concatenate([moved["HtoD"]["address"], moved["DtoH"]["address"], cpu["address"], gpu["address"]])
    addresses = addresses[addresses >= 0]  # a copy without its address (older exports) names none
    low, high = address_ids(inputs, np.array([addresses.min(), addresses.max()]) if len(addresses)
                            else np.array([-1, -1]))
    row = {
        "Total HtoD Migration Size (MB)": moved["HtoD"]["bytes"].sum() / 10 ** 6,
        "Total DtoH Migration Size (MB)": moved["DtoH"]["bytes"].sum() / 10 ** 6,
        "Total CPU Page Faults": cpu.rows,
        "Total GPU PageFaults": int(gpu["numberOfPageFaults"].sum()),
        "Minimum Virtual Address": low,
        "Maximum Virtual Address": high,
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



# um_sum ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UmSumOptions(Options):
    """``um_sum``'s one option, the Analysis Guide's ``rows``."""

    rows: int = dataclasses.replace(ROWS, default=10).field()  # the Analysis Guide: "Default is 10"


UM_PARTS = ("HtoD", "DtoH", "CPU", "GPU", "duration")  # what each migration or fault adds to its address


def um_events(inputs: Inputs) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every migration and fault as one event: its virtual address, and what it adds to each of
    ``UM_PARTS`` (a migration its bytes one way and its duration, a CPU fault 1, a GPU fault its
    page faults)."""
    moved = migrations(inputs)
    cpu = inputs.table("um_cpu_faults", FAULT_READS["um_cpu_faults"])
    gpu = inputs.table("um_gpu_faults", FAULT_READS["um_gpu_faults"])
    sources = [(moved["HtoD"]["address"], {"HtoD": moved["HtoD"]["bytes"], "duration": moved["HtoD"]["duration"]}),
               (moved["DtoH"]["address"], {"DtoH": moved["DtoH"]["bytes"], "duration": moved["DtoH"]["duration"]}),
               (cpu["address"], {"CPU": np.ones(cpu.rows, np.int64)}),
               (gpu["address"], {"GPU": gpu["numberOfPageFaults"]})]
    addresses = np.concatenate([np.asarray(address, np.int64) for address, _ in sources])
    parts = {part: np.concatenate([np.asarray(adds.get(part, np.zeros(len(address), np.int64)), np.int64)
                                   for address, adds in sources]) for part in UM_PARTS}
    return addresses, parts


def um_by_address(inputs: Inputs, options: UmSumOptions) -> Frame:
    """Per virtual address the bytes migrated each way, the CPU and GPU page faults, and the
    migrations' throughput; the most bytes migrated first, ties by address (D35)."""
    addresses, parts = um_events(inputs)
    groups = group_by([addresses])
    sums = {part: groups.reduce(np.add, values) for part, values in parts.items()}
    migrated = sums["HtoD"] + sums["DtoH"]
    order = np.lexsort((groups.keys[0], -migrated))
    with np.errstate(divide="ignore", invalid="ignore"):  # no migration time: no throughput (an empty cell)
        throughput = np.where(sums["duration"] > 0, migrated * 1e3 / sums["duration"], np.nan)  # bytes/ns -> MB/s
    return {
        "Virtual Address": address_ids(inputs, groups.keys[0][order]),
        "HtoD Migration size (MB)": sums["HtoD"][order] / 10 ** 6,
        "DtoH Migration size (MB)": sums["DtoH"][order] / 10 ** 6,
        "CPU Page Faults": sums["CPU"][order],
        "GPU Page Faults": sums["GPU"][order],
        "Migration Throughput (MBps)": throughput[order],
    }


UM_SUM = Rule(
    name="um_sum",
    title="Unified Memory Analysis Summary",
    help="nsys stats' Unified Memory Analysis Summary: per virtual base address the bytes of unified memory "
         "migrated host to device and device to host (MB, 10^6 bytes), the CPU and GPU page faults at it, and "
         "the migrations' throughput (MB per second of migration time); the most bytes migrated first, "
         "'rows' of them (default 10).",
    columns=(
        Column("Virtual Address", TEXT, "Virtual base address of the pages migrated or faulted"),
        Column("HtoD Migration size (MB)", FIGURE, "Bytes migrated from host to device"),
        Column("DtoH Migration size (MB)", FIGURE, "Bytes migrated from device to host"),
        Column("CPU Page Faults", INT, "Number of CPU page faults at the address"),
        Column("GPU Page Faults", INT, "Number of GPU page faults at the address"),
        Column("Migration Throughput (MBps)", FIGURE, "Bytes migrated per second of migration time, in MB"),
    ),
    compute=um_by_address,
    reads=MIGRATION_READS | FAULT_READS,
    options=UmSumOptions,
    requires=("memcpy", "um_cpu_faults", "um_gpu_faults"),
    numbered=False,
    mirrors=NSYS_STATS,
)


# um_cpu_page_faults_sum -----------------------------------------------------------------------------------

CPU_FAULT_READS = {"um_cpu_faults": ("start", "CpuInstruction")}


def cpu_faults_by_instruction(inputs: Inputs, options: Options) -> Frame:
    """Per CPU instruction (as the export names it) the CPU page faults it caused; the most first,
    ties by the instruction's text."""
    faults = inputs.table("um_cpu_faults", CPU_FAULT_READS["um_cpu_faults"])
    groups = group_by([faults["CpuInstruction"]])
    instructions = groups.keys[0]
    order = np.lexsort((inputs.strings.sort_rank(instructions), -groups.size)) if groups.count else np.empty(0, int)
    return {"CPU Page Faults": groups.size[order], "CPU Instruction Address": instructions[order]}


UM_CPU_PAGE_FAULTS_SUM = Rule(
    name="um_cpu_page_faults_sum",
    title="Unified Memory CPU Page Faults Summary",
    help="nsys stats' Unified Memory CPU Page Faults Summary: the CPU page faults of unified memory per CPU "
         "instruction that caused them, the most first.",
    columns=(
        Column("CPU Page Faults", INT, "Number of CPU page faults the instruction caused"),
        Column("CPU Instruction Address", TEXT, "The CPU instruction that caused the page faults"),
    ),
    compute=cpu_faults_by_instruction,
    reads=CPU_FAULT_READS,
    requires=("um_cpu_faults",),
    numbered=False,
    mirrors=NSYS_STATS,
)

RULES = [OPENACC_SUM, OPENMP_SUM, UM_TOTAL_SUM, UM_SUM, UM_CPU_PAGE_FAULTS_SUM]
