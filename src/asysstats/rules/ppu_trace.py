"""HGGC PPU trace (``hggc_ppu_trace``): kernels, memcpy and memset in one table.

Names: a kernel by the name mode; a memset ``Memset``; a memcpy ``Memcpy <kind>
(<destination memory kind>)`` where the kind is the copy kind's label shortened
(``Host-to-Device`` -> ``HtoD``, ``Unified Device-to-Host`` -> ``Unified DtoH``) and the
destination memory kind is lower-case (``Memcpy HtoD (device)``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from asysstats.compute.grouped import dense_group_ids
from asysstats.engine import Inputs
from asysstats.io.tables import NA
from asysstats.registry import HGTX_NAME, INT, NAME_OPTIONS, ROWS, TEXT, Column, Rule
from asysstats.rules.activity import device_label_ids, kind_label_ids, kind_labels
from asysstats.rules.kernels import KERNEL_COLUMNS, kernel_names

KERNEL_FIELDS = {"GrdX": "gridX", "GrdY": "gridY", "GrdZ": "gridZ", "BlkX": "blockX", "BlkY": "blockY",
                 "BlkZ": "blockZ", "Reg/Trd": "registersPerThread", "StcSMem (bytes)": "staticSharedMemory",
                 "DymSMem (bytes)": "dynamicSharedMemory"}
COMMON = ("start", "end", "deviceId", "contextId", "streamId", "correlationId")

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


def short_copy_kind(label: str) -> str:
    """``Host-to-Device`` -> ``HtoD``; ``Unified Device-to-Host`` -> ``Unified DtoH``."""
    head, sep, tail = label.rpartition("-to-")
    if not sep or not head or not tail:
        return label
    prefix, _, source = head.rpartition(" ")
    return f"{prefix} {source[0]}to{tail[0]}".lstrip()


def memcpy_name_ids(inputs: Inputs, copy_kinds: np.ndarray, dst_kinds: np.ndarray) -> np.ndarray:
    """String ids of ``Memcpy <kind> (<destination kind>)`` per memcpy."""
    copy_labels, mem_labels = kind_labels(inputs, "memcpy_kinds"), kind_labels(inputs, "mem_kinds")
    inverse, (copies, dsts) = dense_group_ids([copy_kinds, dst_kinds])
    texts = []
    for copy_kind, dst_kind in zip(copies.tolist(), dsts.tolist()):
        dst = f" ({mem_labels.get(dst_kind, 'Unknown').lower()})" if dst_kind >= 0 else ""
        texts.append(f"Memcpy {short_copy_kind(copy_labels.get(copy_kind, 'Unknown'))}{dst}")
    ids = inputs.strings.intern(texts)
    return ids[inverse] if len(ids) else np.empty(0, np.int64)


EMPTY = {c.name: (np.nan, np.float64) if c.name == "Throughput (B/s)" else (NA if c.kind == INT else -1, np.int64)
         for c in COLUMNS if c.name != "Device"}  # the device label is made last, from "_device"


def part(table, name_ids: np.ndarray, **cells: np.ndarray) -> dict[str, np.ndarray]:
    """One activity kind's rows as output columns (cells it does not give are missing)."""
    cells.update({"Start (ns)": table["start"], "Duration (ns)": table["end"] - table["start"],
                  "CorrId": table["correlationId"], "Ctx": table["contextId"], "Strm": table["streamId"],
                  "Name": name_ids})
    return {name: cells[name] if name in cells else np.full(table.rows, fill, dtype=dtype)
            for name, (fill, dtype) in EMPTY.items()} | {"_device": table["deviceId"]}


def memory_cells(table) -> dict[str, np.ndarray]:
    duration = (table["end"] - table["start"]).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        throughput = np.where(duration > 0, table["bytes"] * 1e9 / duration, np.nan)
    return {"Bytes (bytes)": table["bytes"], "Throughput (B/s)": throughput}


def ppu_trace(inputs: Inputs, options: Mapping[str, Any]) -> dict:
    kernels = inputs.table("kernels", KERNEL_COLUMNS + ("contextId", "streamId") + tuple(KERNEL_FIELDS.values()))
    memcpy = inputs.table("memcpy", COMMON + ("bytes", "copyKind", "srcKind", "dstKind"))
    memset = inputs.table("memset", COMMON + ("bytes", "memKind"))
    parts = [
        part(kernels, kernel_names(inputs, kernels, options), **{k: kernels[v] for k, v in KERNEL_FIELDS.items()}),
        part(memcpy, memcpy_name_ids(inputs, memcpy["copyKind"], memcpy["dstKind"]), **memory_cells(memcpy),
             SrcMemKd=kind_label_ids(inputs, "mem_kinds", memcpy["srcKind"]),
             DstMemKd=kind_label_ids(inputs, "mem_kinds", memcpy["dstKind"])),
        part(memset, np.repeat(inputs.strings.intern(["Memset"]), memset.rows), **memory_cells(memset),
             SrcMemKd=kind_label_ids(inputs, "mem_kinds", memset["memKind"])),
    ]
    frame = {name: np.concatenate([p[name] for p in parts]) for name in parts[0]}
    rank = inputs.strings.sort_rank(frame["Name"])
    order = np.lexsort((frame["CorrId"], frame["Strm"], frame["_device"], rank, frame["Start (ns)"]))
    frame = {name: values[order] for name, values in frame.items()}
    frame["Device"] = device_label_ids(inputs, frame.pop("_device"))
    return frame


PPU_TRACE = Rule(
    name="hggc_ppu_trace",
    title="HGGC PPU Trace",
    help="One row per kernel, memcpy and memset execution, in ascending order of start time; "
         "'-' marks cells that do not apply. Throughput is bytes / duration in bytes per second.",
    columns=COLUMNS,
    compute=ppu_trace,
    reads=("kernels", "memcpy", "memset"),
    options=(ROWS, HGTX_NAME) + NAME_OPTIONS,
    requires=("kernels", "memcpy", "memset"),
)

RULES = [PPU_TRACE]
