"""HGGC PPU kernel summary (``hggc_ppu_kern_sum``) and the kernel helpers the kernel rules share."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from asysstats.analysis.declarations import DEVICE, HGTX_NAME, NAME_OPTIONS, ROWS, Rule, name_mode
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import innermost_range_names
from asysstats.analysis.names import kernel_name_codes, prefixed_ids
from asysstats.analysis.summary import Rows, Summary, keyed_frame, stat_columns
from asysstats.compute.distinct import Coded
from asysstats.core.columns import TEXT, Column
from asysstats.core.tables import EventTable

KERNEL_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid", "demangledName", "shortName", "mangledName")


def kernel_columns(options: Mapping[str, Any], *extra: str) -> tuple[str, ...]:
    """The kernel columns a rule reads with these name options, and no more (reading is the cost)."""
    columns = ["start", "end", "demangledName", *extra]
    if options.get("device") is not None:
        columns.append("deviceId")
    if options.get("mangled"):
        columns.append("mangledName")
    if options.get("hgtx-name"):
        columns += ["correlationId", "globalPid"]
    return tuple(dict.fromkeys(columns))


def kernel_name_key(inputs: Inputs, kernels: EventTable, options: Mapping[str, Any]) -> Coded:
    """Per-kernel name ids (coded) in the chosen name mode, prefixed ``<range>/`` with
    ``hgtx-name`` (the innermost HGTX range enclosing the launch call, docs/decisions.md D10)."""
    names = kernel_name_codes(inputs.strings, kernels, name_mode(options))
    if not options.get("hgtx-name"):
        return names
    return Coded.of(prefixed_ids(inputs.strings, innermost_range_names(inputs, kernels), names.rows()))


def kernel_names(inputs: Inputs, kernels: EventTable, options: Mapping[str, Any]) -> np.ndarray:
    """Per-kernel name ids (:func:`kernel_name_key`)."""
    return kernel_name_key(inputs, kernels, options).rows()


def on_devices(table: EventTable, devices: tuple[int, ...] | None) -> EventTable:
    """Rows of the selected PPU devices (all when ``devices`` is None)."""
    if devices is None:
        return table
    return table.take(np.isin(table["deviceId"], np.asarray(devices, dtype=np.int64)))


SUM_COLUMNS = stat_columns("executions of this kernel") + (Column("Name", TEXT, "Name of the kernel"),)


def kern_sum_rows(inputs: Inputs, options: Mapping[str, Any]) -> Rows:
    kernels = on_devices(inputs.table("kernels", kernel_columns(options)), options["device"])
    return Rows((kernel_name_key(inputs, kernels, options),), kernels["end"] - kernels["start"])


SUMMARY = Summary(kern_sum_rows, keyed_frame(SUM_COLUMNS, "Name"))


KERN_SUM = Rule(
    name="hggc_ppu_kern_sum",
    title="HGGC PPU Kernel Summary",
    help="Kernel execution time per kernel name, in descending order of total time. "
         "'Time (%)' is the share of the total of all kernels in the table.",
    columns=SUM_COLUMNS,
    compute=SUMMARY.compute,
    reads=("kernels",),
    options=(ROWS, HGTX_NAME) + NAME_OPTIONS + (DEVICE,),
    share="Time (%)",
)

RULES = [KERN_SUM]
