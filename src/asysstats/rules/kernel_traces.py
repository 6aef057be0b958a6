"""Kernel traces and the grid/block summary: ``hggc_kern_exec_trace`` (launch call to kernel
end), ``hggc_ppu_kern_gb_sum`` and ``hggc_ppu_kern_gb_trace``."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from asysstats.analysis.activity import row_index, triple_ids
from asysstats.analysis.declarations import DEVICE, HGTX_NAME, NAME_OPTIONS, ROWS, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.summary import Rows, Stats, Summary, output_order, stat_cells, stat_columns
from asysstats.compute.distinct import tie_order
from asysstats.core.columns import INT, TEXT, Column
from asysstats.core.result import Gathered
from asysstats.core.tables import NA
from asysstats.rules.api import API_COLUMNS, api_name_ids
from asysstats.rules.kernels import KERNEL_COLUMNS, kernel_name_key, kernel_names, on_devices

DIMENSIONS = ("gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")
GB_COLUMNS = KERNEL_COLUMNS + ("contextId", "streamId") + DIMENSIONS
GRID = Column("GridXYZ", TEXT, "Grid dimensions of the kernel launch")
BLOCK = Column("BlockXYZ", TEXT, "Block dimensions of the kernel launch")


def dimension_ids(inputs: Inputs, kernels: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """String ids of ``"x y z"`` for the grid and the block of every kernel."""
    grid = triple_ids(inputs.strings, kernels["gridX"], kernels["gridY"], kernels["gridZ"])
    block = triple_ids(inputs.strings, kernels["blockX"], kernels["blockY"], kernels["blockZ"])
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


def kern_exec_trace(inputs: Inputs, options: Mapping[str, Any]) -> dict:
    kernels = inputs.table("kernels", GB_COLUMNS)
    calls = inputs.table("runtime", API_COLUMNS)
    by_call = np.lexsort((calls["end"], calls["start"], calls["correlationId"], calls["pid"]))
    found = row_index([calls["pid"][by_call], calls["correlationId"][by_call]],
                      [kernels["pid"], kernels["correlationId"]])
    k = np.flatnonzero((found >= 0) & (kernels["correlationId"] >= 0))
    call = by_call[found[k]]
    names = kernel_names(inputs, kernels, options)
    order = tie_order(calls["start"][call], lambda rows: (
        kernels["streamId"][k[rows]], kernels["deviceId"][k[rows]], inputs.strings.sort_rank(names[k[rows]]),
        kernels["start"][k[rows]]))
    k, call = k[order], call[order]  # rows of the kernels and of their launch calls, in output order
    kernel_start, call_end = kernels["start"][k], calls["end"][call]
    queued = kernel_start >= call_end
    grid, block = dimension_ids(inputs, kernels)
    return dict(zip((column.name for column in EXEC_COLUMNS), (
        Gathered(calls["start"], call), Gathered(calls["end"] - calls["start"], call),
        np.where(queued, call_end, NA), np.where(queued, kernel_start - call_end, NA),
        kernel_start, Gathered(kernels["end"] - kernels["start"], k), kernels["end"][k] - calls["start"][call],
        Gathered(calls["pid"], call), Gathered(calls["tid"], call), Gathered(kernels["deviceId"], k),
        Gathered(api_name_ids(inputs, calls["nameId"]), call), Gathered(grid, k), Gathered(block, k),
        Gathered(names, k))))


GB_SUM_COLUMNS = stat_columns("executions of this kernel") + (GRID, BLOCK, Column("Name", TEXT, "Name of the kernel"))


def kern_gb_rows(inputs: Inputs, options: Mapping[str, Any]) -> Rows:
    kernels = on_devices(inputs.table("kernels", GB_COLUMNS), options["device"])
    keys = (kernel_name_key(inputs, kernels, options),) + tuple(kernels[d] for d in DIMENSIONS)
    return Rows(keys, kernels["end"] - kernels["start"])  # ties: name, then dimensions ascending


def kern_gb_frame(inputs: Inputs, options: Mapping[str, Any], keys: tuple[np.ndarray, ...], stats: Stats) -> dict:
    order = output_order(inputs.strings, keys, stats, 0)
    frame = stat_cells(GB_SUM_COLUMNS[:-3], stats, order)
    grid, block = dimension_ids(inputs, dict(zip(DIMENSIONS, (k[order] for k in keys[1:]))))
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


def kern_gb_trace(inputs: Inputs, options: Mapping[str, Any]) -> dict:
    kernels = inputs.table("kernels", GB_COLUMNS)
    names = kernel_names(inputs, kernels, options)
    order = tie_order(kernels["start"], lambda rows: (kernels["end"][rows], kernels["streamId"][rows],
                                                      kernels["deviceId"][rows], inputs.strings.sort_rank(names[rows])))
    grid, block = dimension_ids(inputs, kernels)
    return dict(zip((c.name for c in GB_TRACE_COLUMNS), (Gathered(values, order) for values in (
        kernels["start"], kernels["end"] - kernels["start"], kernels["pid"], kernels["deviceId"],
        kernels["contextId"], kernels["streamId"], grid, block, names))))


EXEC_TRACE = Rule(
    name="hggc_kern_exec_trace",
    title="HGGC Kernel Execution Trace",
    help="One row per kernel, from its launch API call to its end, in ascending order of the launch call's "
         "start. A graph launch gives one row per kernel. The queue cells are '-' when the kernel starts "
         "before the launch call returns.",
    columns=EXEC_COLUMNS,
    compute=kern_exec_trace,
    reads=("kernels", "runtime"),
    options=(ROWS,) + NAME_OPTIONS,
)

GB_SUM = Rule(
    name="hggc_ppu_kern_gb_sum",
    title="HGGC PPU Kernel Grid/Block Summary",
    help="Kernel execution time per kernel name, grid size and block size, in descending order of total "
         "time. 'Time (%)' is the share of the total of all kernels in the table.",
    columns=GB_SUM_COLUMNS,
    compute=GB_SUMMARY.compute,
    reads=("kernels",),
    options=(ROWS, HGTX_NAME) + NAME_OPTIONS + (DEVICE,),
    share="Time (%)",
)

GB_TRACE = Rule(
    name="hggc_ppu_kern_gb_trace",
    title="HGGC PPU Kernel Grid/Block Trace",
    help="One row per kernel execution with its grid and block sizes, in ascending order of start time.",
    columns=GB_TRACE_COLUMNS,
    compute=kern_gb_trace,
    reads=("kernels",),
    options=(ROWS, HGTX_NAME) + NAME_OPTIONS,
)

RULES = [EXEC_TRACE, GB_SUM, GB_TRACE]
