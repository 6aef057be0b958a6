"""HGGC PPU kernel summary (``hggc_ppu_kern_sum``) and the helpers the kernel rules share:
kernel names in a name mode (prefixed with the innermost HGTX range with ``hgtx-name``) and
the selection of devices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.analysis.declarations import (
    BASE,
    DEVICE,
    HGTX_NAME,
    MANGLED,
    ROWS,
    Options,
    Rows,
    Rule,
    Summary,
    merged_reads,
    name_mode,
)
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.names import kernel_name_codes, prefixed_ids
from asysstats.analysis.reads import KERNEL_NAME_READS, LAUNCH_COLUMNS
from asysstats.analysis.summary import StatColumns, keyed_frame
from asysstats.compute.distinct import Coded
from asysstats.core.result import TEXT, Column
from asysstats.core.tables import EventTable


@dataclass(frozen=True)
class KernelOptions(Options):
    """The options of the rules with a row per kernel name (``hggc_ppu_kern_sum`` and kin)."""

    rows: int | None = ROWS.field()
    hgtx_name: bool = HGTX_NAME.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()
    device: tuple[int, ...] | None = DEVICE.field()


def kernel_name_key(inputs: Inputs, kernels: EventTable, mode: str, hgtx_name: bool = False) -> Coded:
    """Per-kernel name ids (coded) in name ``mode``, prefixed ``<range>/`` with ``hgtx_name``
    (the innermost HGTX range enclosing the launch call, docs/decisions.md D10)."""
    names = kernel_name_codes(inputs.strings, kernels, mode)
    if not hgtx_name:
        return names
    from asysstats.analysis.launches import innermost_range_names  # HGTX ranges: the runs with hgtx-name only

    return Coded.of(prefixed_ids(inputs.strings, innermost_range_names(inputs, kernels), names.rows()))


def kernel_names(inputs: Inputs, kernels: EventTable, mode: str, hgtx_name: bool = False) -> np.ndarray:
    """Per-kernel name ids (:func:`kernel_name_key`)."""
    return kernel_name_key(inputs, kernels, mode, hgtx_name).rows()


def on_devices(table: EventTable, devices: tuple[int, ...] | None) -> EventTable:
    """Rows of the selected PPU devices (all when ``devices`` is None)."""
    if devices is None:
        return table
    return table.take(np.isin(table["deviceId"], np.asarray(devices, dtype=np.int64)))


def kernel_columns(options: KernelOptions) -> tuple[str, ...]:
    """The kernel columns read with these options, and no more (reading is the cost)."""
    columns = ["start", "end", "demangledName"]
    if options.device is not None:
        columns.append("deviceId")
    if options.mangled:
        columns.append("mangledName")
    if options.hgtx_name:
        columns += LAUNCH_COLUMNS
    return tuple(columns)


STATS = StatColumns.of("executions of this kernel")
SUM_COLUMNS = STATS.columns + (Column("Name", TEXT, "Name of the kernel"),)


def kern_sum_rows(inputs: Inputs, options: KernelOptions) -> Rows:
    kernels = on_devices(inputs.table("kernels", kernel_columns(options)), options.device)
    return Rows((kernel_name_key(inputs, kernels, name_mode(options), options.hgtx_name),),
                kernels["end"] - kernels["start"])


SUMMARY = Summary(kern_sum_rows, keyed_frame(STATS, "Name"))


KERN_SUM = Rule(
    name="hggc_ppu_kern_sum",
    title="HGGC PPU Kernel Summary",
    help="Kernel execution time per kernel name, in descending order of total time. "
         "'Time (%)' is the share of the total of all kernels in the table.",
    columns=SUM_COLUMNS,
    compute=SUMMARY.compute,
    reads=merged_reads({"kernels": ("start", "end", "deviceId")}, KERNEL_NAME_READS),
    options=KernelOptions,
    share="Time (%)",
)

RULES = [KERN_SUM]
