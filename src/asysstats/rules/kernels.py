"""HGGC PPU kernel summary (``hggc_ppu_kern_sum``)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from asysstats.engine import Inputs
from asysstats.io.tables import EventTable
from asysstats.names import kernel_name_ids
from asysstats.registry import DEVICE, NAME_OPTIONS, ROWS, TEXT, Column, Rule, name_mode
from asysstats.rules.summary import stat_cells, stat_columns, summarize

KERNEL_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid", "demangledName", "shortName", "mangledName")


def on_devices(table: EventTable, devices: tuple[int, ...] | None) -> EventTable:
    """Rows of the selected PPU devices (all when ``devices`` is None)."""
    if devices is None:
        return table
    return table.take(np.isin(table["deviceId"], np.asarray(devices, dtype=np.int64)))


SUM_COLUMNS = stat_columns("executions of this kernel") + (Column("Name", TEXT, "Name of the kernel"),)


def kern_sum(inputs: Inputs, options: Mapping[str, Any]) -> dict:
    kernels = on_devices(inputs.table("kernels", KERNEL_COLUMNS), options["device"])
    names = kernel_name_ids(inputs.strings, kernels, name_mode(options))
    groups, stats, order = summarize(inputs.strings, [names], kernels["end"] - kernels["start"], 0)
    frame = stat_cells(SUM_COLUMNS[:-1], stats, order)
    frame["Name"] = groups.keys[0][order]
    return frame


KERN_SUM = Rule(
    name="hggc_ppu_kern_sum",
    title="HGGC PPU Kernel Summary",
    help="Kernel execution time per kernel name, in descending order of total time. "
         "'Time (%)' is the share of the total of all kernels in the table.",
    columns=SUM_COLUMNS,
    compute=kern_sum,
    reads=("kernels",),
    options=(ROWS,) + NAME_OPTIONS + (DEVICE,),
    share="Time (%)",
)

RULES = [KERN_SUM]
