"""Kernel traces and the grid/block summary: ``hggc_kern_exec_trace`` (launch call to kernel
end), ``hggc_ppu_kern_gb_sum`` and ``hggc_ppu_kern_gb_trace``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from asysstats.analysis.activity import triple_ids
from asysstats.analysis.declarations import (
    BASE,
    HGTX_NAME,
    MANGLED,
    ROWS,
    KernelNaming,
    Options,
    Rows,
    Rule,
    Stats,
    Summary,
    merged_reads,
    name_mode,
)
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import earliest_launches
from asysstats.analysis.reads import KERNEL_COLUMNS, KERNEL_NAME_READS
from asysstats.analysis.summary import StatColumns, output_order
from asysstats.compute.distinct import tie_order
from asysstats.core.result import INT, TEXT, Column, Frame, Gathered
from asysstats.core.tables import NA
from asysstats.rulebook.api import API_COLUMNS, api_name_ids
from asysstats.rulebook.kernels import KernelOptions, kernel_name_key, kernel_names, on_devices

DIMENSIONS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
GB_COLUMNS = KERNEL_COLUMNS + ("contextId", "streamId") + DIMENSIONS
GRID = Column("GridXYZ", TEXT, "Grid dimensions of the kernel launch")
BLOCK = Column("BlockXYZ", TEXT, "Block dimensions of the kernel launch")
GB_READS = merged_reads({"kernels": GB_COLUMNS}, KERNEL_NAME_READS)


@dataclass(frozen=True)
class ExecTraceOptions(Options):
    rows: int | None = ROWS.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()


@dataclass(frozen=True)
class GbTraceOptions(Options):
    rows: int | None = ROWS.field()
    hgtx_name: bool = HGTX_NAME.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()


def dimension_ids(inputs: Inputs, kernels: Mapping[str, np.ndarray],
                  template: str = "{} {} {}") -> tuple[np.ndarray, np.ndarray]:
    """String ids of ``"x y z"`` (or ``template``) for the grid and the block of every kernel."""
    grid = triple_ids(inputs.strings, kernels["gridX"], kernels["gridY"], kernels["gridZ"], template)
    block = triple_ids(inputs.strings, kernels["blockX"], kernels["blockY"], kernels["blockZ"], template)
    return grid, block


EXEC_COLUMNS = (
    Column("API Start (ns)", INT, "Start timestamp of the HGGC API launch call"),
    Column("API Dur (ns)", INT, "Duration of the HGGC API launch call"),
    Column("Queue Start (ns)", INT, "Start of the queue wait (the end of the launch call), if any"),
    Column("Queue Dur (ns)", INT, "Kernel start minus the end of the launch call, if the kernel starts after it"),
    Column("Kernel Start (ns)", INT, "Start timestamp of the kernel"),
    Column("Kernel Dur (ns)", INT, "Duration of the kernel"),
    Column("Total Dur (ns)", INT, "Duration from the API call start to the kernel end"),
    Column("PID", INT, "Process ID that made the launch call"),
    Column("TID", INT, "Thread ID that made the launch call"),
    Column("DevId", INT, "PPU device that executed the kernel"),
    Column("API Function", TEXT, "Name of the HGGC API call that launched the kernel"),
    GRID, BLOCK,
    Column("Kernel Name", TEXT, "Name of the kernel"),
)


def kern_exec_trace(inputs: Inputs, options: KernelNaming) -> Frame:
    kernels = inputs.table("kernels", GB_COLUMNS)
    calls = inputs.table("runtime", API_COLUMNS)
    k, call = earliest_launches(calls, kernels)
    names = kernel_names(inputs, kernels, name_mode(options))
    order = tie_order(calls["start"][call], lambda rows: (
        kernels["streamId"][k[rows]], kernels["deviceId"][k[rows]], inputs.strings.sort_rank(names[k[rows]]),
        kernels["start"][k[rows]]))
    k, call = k[order], call[order]  # rows of the kernels and of their launch calls, in output order
    kernel_start, call_end = kernels["start"][k], calls["end"][call]
    queued = kernel_start >= call_end
    grid, block = dimension_ids(inputs, kernels)
    return {
        "API Start (ns)": Gathered(calls["start"], call), "API Dur (ns)": Gathered(calls["end"] - calls["start"], call),
        "Queue Start (ns)": np.where(queued, call_end, NA), "Queue Dur (ns)": np.where(queued, kernel_start - call_end, NA),
        "Kernel Start (ns)": kernel_start, "Kernel Dur (ns)": Gathered(kernels["end"] - kernels["start"], k),
        "Total Dur (ns)": kernels["end"][k] - calls["start"][call],
        "PID": Gathered(calls["pid"], call), "TID": Gathered(calls["tid"], call),
        "DevId": Gathered(kernels["deviceId"], k), "API Function": Gathered(api_name_ids(inputs, calls["nameId"]), call),
        "GridXYZ": Gathered(grid, k), "BlockXYZ": Gathered(block, k), "Kernel Name": Gathered(names, k)}


GB_STATS = StatColumns.of("executions of this kernel")
GB_SUM_COLUMNS = GB_STATS.columns + (GRID, BLOCK, Column("Name", TEXT, "Name of the kernel"))


def kern_gb_rows(inputs: Inputs, options: KernelOptions) -> Rows:
    kernels = on_devices(inputs.table("kernels", GB_COLUMNS), options.device)
    keys = (kernel_name_key(inputs, kernels, name_mode(options), options.hgtx_name),) + \
        tuple(kernels[d] for d in DIMENSIONS)
    return Rows(keys, kernels["end"] - kernels["start"])  # ties: name, then dimensions ascending


def kern_gb_frame(inputs: Inputs, options: KernelOptions, keys: tuple[np.ndarray, ...], stats: Stats) -> Frame:
    order = output_order(inputs.strings, keys, stats, 0)
    frame = GB_STATS.cells(stats, order)
    grid, block = dimension_ids(inputs, dict(zip(DIMENSIONS, (k[order] for k in keys[1:]), strict=True)))
    frame.update({"GridXYZ": grid, "BlockXYZ": block, "Name": keys[0][order]})
    return frame


GB_SUMMARY = Summary(kern_gb_rows, kern_gb_frame)


GB_TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Start timestamp of the kernel"),
    Column("Duration (ns)", INT, "Duration of the kernel"),
    Column("PID", INT, "Process identifier"),
    Column("Device ID", INT, "PPU device identifier"),
    Column("Context ID", INT, "Context identifier"),
    Column("Stream ID", INT, "Stream identifier"),
    GRID, BLOCK,
    Column("Name", TEXT, "Name of the kernel"),
)


def kern_gb_trace(inputs: Inputs, options: GbTraceOptions) -> Frame:
    kernels = inputs.table("kernels", GB_COLUMNS)
    names = kernel_names(inputs, kernels, name_mode(options), options.hgtx_name)
    order = tie_order(kernels["start"], lambda rows: (kernels["end"][rows], kernels["streamId"][rows],
                                                      kernels["deviceId"][rows], inputs.strings.sort_rank(names[rows])))
    grid, block = dimension_ids(inputs, kernels)
    return {name: Gathered(values, order) for name, values in (
        ("Start (ns)", kernels["start"]), ("Duration (ns)", kernels["end"] - kernels["start"]),
        ("PID", kernels["pid"]), ("Device ID", kernels["deviceId"]), ("Context ID", kernels["contextId"]),
        ("Stream ID", kernels["streamId"]), ("GridXYZ", grid), ("BlockXYZ", block), ("Name", names))}


EXEC_TRACE = Rule(
    name="hggc_kern_exec_trace",
    title="HGGC Kernel Execution Trace",
    help="One row per kernel, from its launch API call to its end, in ascending order of the launch call's "
         "start. A graph launch gives one row per kernel. The queue cells are '-' when the kernel starts "
         "before the launch call returns.",
    columns=EXEC_COLUMNS,
    compute=kern_exec_trace,
    reads={"kernels": GB_COLUMNS, "runtime": API_COLUMNS},
    options=ExecTraceOptions,
)

GB_SUM = Rule(
    name="hggc_ppu_kern_gb_sum",
    title="HGGC PPU Kernel Grid/Block Summary",
    help="Kernel execution time per kernel name, grid size and block size, in descending order of total "
         "time. 'Time (%)' is the share of the total of all kernels in the table.",
    columns=GB_SUM_COLUMNS,
    compute=GB_SUMMARY.compute,
    reads=GB_READS,
    options=KernelOptions,
    share="Time (%)",
)

GB_TRACE = Rule(
    name="hggc_ppu_kern_gb_trace",
    title="HGGC PPU Kernel Grid/Block Trace",
    help="One row per kernel execution with its grid and block sizes, in ascending order of start time.",
    columns=GB_TRACE_COLUMNS,
    compute=kern_gb_trace,
    reads=GB_READS,
    options=GbTraceOptions,
)

RULES = [EXEC_TRACE, GB_SUM, GB_TRACE]
