"""HGGC PPU trace (``hggc_ppu_trace``): kernels, memcpy and memset in one table.

Names: a kernel by the name mode; a memset ``Memset``; a memcpy ``Memcpy <kind>
(<destination memory kind>)`` where the kind is the copy kind's label shortened
(``Host-to-Device`` -> ``HtoD``, ``Unified Device-to-Host`` -> ``Unified DtoH``) and the
destination memory kind is lower-case (``Memcpy HtoD (device)``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from asysstats.analysis.activity import device_label_ids, kind_label_ids, memcpy_name_ids
from asysstats.analysis.declarations import BASE, HGTX_NAME, MANGLED, ROWS, Options, Rule, merged_reads, name_mode
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import DEVICE_READS, KERNEL_COLUMNS, KERNEL_NAME_READS, KIND_READS
from asysstats.compute.distinct import Coded, code_type, distinct, tie_order
from asysstats.core.result import INT, TEXT, Column, Frame, Gathered
from asysstats.core.tables import NA, EventTable
from asysstats.rulebook.kernels import kernel_names

KERNEL_FIELDS = {"GrdX": "gridX", "GrdY": "gridY", "GrdZ": "gridZ", "BlkX": "blockX", "BlkY": "blockY",
                 "BlkZ": "blockZ", "Reg/Trd": "registersPerThread", "StcSMem (bytes)": "staticSharedMemory",
                 "DymSMem (bytes)": "dynamicSharedMemory"}
COMMON = ("start", "end", "deviceId", "contextId", "streamId", "correlationId")
KERNEL_READ = KERNEL_COLUMNS + ("contextId", "streamId") + tuple(KERNEL_FIELDS.values())
MEMCPY_READ = COMMON + ("bytes", "copyKind", "srcKind", "dstKind")
MEMSET_READ = COMMON + ("bytes", "memKind")
READS = merged_reads({"kernels": KERNEL_READ, "memcpy": MEMCPY_READ, "memset": MEMSET_READ},
                     KERNEL_NAME_READS, KIND_READS, DEVICE_READS)


@dataclass(frozen=True)
class TraceOptions(Options):
    rows: int | None = ROWS.field()
    hgtx_name: bool = HGTX_NAME.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()

COLUMNS = (
    Column("Start (ns)", INT, "Timestamp of start time"),
    Column("Duration (ns)", INT, "Length of event"),
    Column("CorrId", INT, "Correlation ID"),
    Column("GrdX", INT, "Grid X value"), Column("GrdY", INT, "Grid Y value"), Column("GrdZ", INT, "Grid Z value"),
    Column("BlkX", INT, "Block X value"), Column("BlkY", INT, "Block Y value"), Column("BlkZ", INT, "Block Z value"),
    Column("Reg/Trd", INT, "Registers per thread"),
    Column("StcSMem (bytes)", INT, "Size of static shared memory"),
    Column("DymSMem (bytes)", INT, "Size of dynamic shared memory"),
    Column("Bytes (bytes)", INT, "Size of the memory operation"),
    Column("Throughput (B/s)", INT, "Memory throughput: bytes / duration"),
    Column("SrcMemKd", TEXT, "Memcpy source memory kind, or memset memory kind"),
    Column("DstMemKd", TEXT, "Memcpy destination memory kind"),
    Column("Device", TEXT, "PPU device name and ID"),
    Column("Ctx", INT, "Context ID"),
    Column("Strm", INT, "Stream ID"),
    Column("Name", TEXT, "Trace event name"),
)


MISSING = {c.name: NA if c.kind == INT else -1 for c in COLUMNS}  # a cell a table does not have (string id -1)


def table_coded(values: np.ndarray, first: int, rows: int, fill: int | float) -> Coded:
    """One table's column at the ``rows`` of the tables stacked in turn (its rows from
    ``first`` on), coded (:class:`Coded`): ``fill`` at the other tables' rows."""
    if values.dtype.kind in "iu":
        uniq, codes = distinct(values, narrow=True)
    elif not np.signbit(values).any():  # non-negative floats (NaN last) order as their bits: few values, no sort
        bits, codes = distinct(values.view(np.int64), narrow=True)  # 5 M shared-memory sizes in MB: 1.7 s -> 0.05 s
        uniq = bits.view(np.float64)
    else:
        uniq, codes = np.unique(values, return_inverse=True)
    at = int(np.searchsorted(uniq, fill))  # NaN sorts last
    added = at == len(uniq) or not (uniq[at] == fill or np.isnan(fill) and np.isnan(uniq[at]))
    stacked: np.ndarray = np.full(rows, at, dtype=code_type(len(uniq) + added))
    own = stacked[first:first + len(values)]
    own[:] = codes
    if added:  # the fill takes its place among the values
        uniq = np.insert(uniq, at, fill)
        np.add(own, 1, out=own, where=own >= at)
    return Coded(uniq, stacked)


def memory_cells(inputs: Inputs, memcpy: EventTable, memset: EventTable) -> dict[str, np.ndarray]:
    """The cells of memcpy, then memset, rows that kernels do not have."""
    stacked = {"Bytes (bytes)": np.concatenate([memcpy["bytes"], memset["bytes"]])}
    duration = np.concatenate([memcpy["end"] - memcpy["start"], memset["end"] - memset["start"]]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        stacked["Throughput (B/s)"] = np.where(duration > 0, stacked["Bytes (bytes)"] * 1e9 / duration, np.nan)
    stacked["SrcMemKd"] = kind_label_ids(inputs, "mem_kinds", np.concatenate([memcpy["srcKind"], memset["memKind"]]))
    stacked["DstMemKd"] = np.concatenate([kind_label_ids(inputs, "mem_kinds", memcpy["dstKind"]),
                                          np.full(memset.rows, -1, np.int64)])
    return stacked


def trace_tables(inputs: Inputs) -> tuple[EventTable, EventTable, EventTable]:
    """The kernels, memcpy and memset of a trace, with the columns it prints."""
    return (inputs.table("kernels", KERNEL_READ), inputs.table("memcpy", MEMCPY_READ),
            inputs.table("memset", MEMSET_READ))


def stacked_columns(inputs: Inputs, tables: tuple[EventTable, ...], names: np.ndarray) -> tuple[dict[str, Any],
                                                                                                np.ndarray]:
    """The columns kernels, memcpy and memset all have, stacked in turn (``Start (ns)``, ``Duration
    (ns)``, ``CorrId``, ``Device``, ``Ctx``, ``Strm``, ``Name``: ``names``), and the trace's row order:
    by start, ties by correlation id, stream, device and name."""
    stacked = {name: np.concatenate([t[name] for t in tables]) for name in COMMON}
    order = tie_order(stacked["start"], lambda rows: (
        stacked["correlationId"][rows], stacked["streamId"][rows], stacked["deviceId"][rows],
        inputs.strings.sort_rank(names[rows])))
    start, end = stacked["start"], stacked["end"]
    columns: dict[str, Any] = {
        "Start (ns)": start, "Duration (ns)": lambda rows: end[rows] - start[rows], "CorrId": stacked["correlationId"],
        "Device": device_label_ids(inputs, stacked.pop("deviceId")), "Ctx": stacked["contextId"],
        "Strm": stacked["streamId"], "Name": names}
    return columns, order


def ppu_trace(inputs: Inputs, options: TraceOptions) -> Frame:
    kernels, memcpy, memset = tables = trace_tables(inputs)
    names = np.concatenate([kernel_names(inputs, kernels, name_mode(options), options.hgtx_name),
                            memcpy_name_ids(inputs, memcpy["copyKind"], memcpy["dstKind"]),
                            np.repeat(inputs.strings.intern(["Memset"]), memset.rows)])
    columns, order = stacked_columns(inputs, tables, names)
    rows = len(names)
    columns |= {name: table_coded(kernels[field], 0, rows, NA) for name, field in KERNEL_FIELDS.items()}
    columns |= {name: table_coded(values, kernels.rows, rows, np.nan if values.dtype.kind == "f" else MISSING[name])
                for name, values in memory_cells(inputs, memcpy, memset).items()}
    return {name: Gathered(values, order) for name, values in columns.items()}  # gathered as written


PPU_TRACE = Rule(
    name="hggc_ppu_trace",
    title="HGGC PPU Trace",
    help="One row per kernel, memcpy and memset execution, in ascending order of start time; "
         "'-' marks cells that do not apply. Throughput is bytes / duration in bytes per second.",
    columns=COLUMNS,
    compute=ppu_trace,
    reads=READS,
    options=TraceOptions,
    requires=("kernels", "memcpy", "memset"),
)

RULES = [PPU_TRACE]
