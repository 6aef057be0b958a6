"""The kernel helpers the kernel rules share: names in a name mode (prefixed with the
innermost HGTX range with ``hgtx-name``) and the selection of devices."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.analysis.declarations import BASE, DEVICE, HGTX_NAME, MANGLED, ROWS, Options, merged_reads
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import INNERMOST_READS, innermost_range_names
from asysstats.analysis.names import kernel_name_codes, prefixed_ids
from asysstats.compute.distinct import Coded
from asysstats.core.tables import EventTable

KERNEL_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid", "demangledName", "shortName", "mangledName")
NAME_COLUMNS = ("demangledName", "mangledName")  # what the name modes read of a kernel
LAUNCH_COLUMNS = ("correlationId", "globalPid")  # what finds a kernel's launch call
# What a rule that names kernels reads, ``hgtx-name`` included (Rule.reads).
KERNEL_NAME_READS = merged_reads({"kernels": NAME_COLUMNS + LAUNCH_COLUMNS}, INNERMOST_READS)


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
    return Coded.of(prefixed_ids(inputs.strings, innermost_range_names(inputs, kernels), names.rows()))


def kernel_names(inputs: Inputs, kernels: EventTable, mode: str, hgtx_name: bool = False) -> np.ndarray:
    """Per-kernel name ids (:func:`kernel_name_key`)."""
    return kernel_name_key(inputs, kernels, mode, hgtx_name).rows()


def on_devices(table: EventTable, devices: tuple[int, ...] | None) -> EventTable:
    """Rows of the selected PPU devices (all when ``devices`` is None)."""
    if devices is None:
        return table
    return table.take(np.isin(table["deviceId"], np.asarray(devices, dtype=np.int64)))
