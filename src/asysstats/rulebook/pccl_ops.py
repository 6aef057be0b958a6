"""PCCL operator summary (``pccl_op_sum``).

An *execution* is a PCCL kernel correlated with a PCCL annotation range (docs/decisions.md D11,
graph mapping by default; the innermost annotation wins). Executions sharing a merge key
(operator and parameters without the per-rank ``r`` and ``b``) are numbered per process
and device in start order over the whole report, so that ``--filter-time`` cannot shift
the numbering; the k-th executions of every device form one collective *instance*.

Collective: Trans Time sums the shortest kernel of each instance, Total Time the longest,
Instances counts instances. Point-to-point (Send, Recv): every execution is an instance.
Trans Size sums the bytes each rank moves (docs/decisions.md D22); bandwidth = size / Trans Time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.correlate import correlate
from asysstats.analysis.declarations import (
    DEVICE,
    NO_GRAPH_MAPPING,
    RANGE_EXCLUDE,
    RANGE_INCLUDE,
    ROWS,
    Options,
    Rule,
    merged_reads,
)
from asysstats.analysis.hgtx import all_ranges, name_filter
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.pccl import annotate, rank_bytes
from asysstats.analysis.reads import CORRELATE_READS, HGTX_READS
from asysstats.compute.grouped import group_by
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame
from asysstats.core.tables import EventTable
from asysstats.rulebook.kernels import on_devices
from asysstats.rulebook.pccl_desync import pccl_mask

if TYPE_CHECKING:
    import regex

OP_KERNEL_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid", "graphNodeId",
                     "demangledName", "mangledName")
READS = merged_reads({"kernels": OP_KERNEL_COLUMNS}, HGTX_READS, CORRELATE_READS)


@dataclass(frozen=True)
class OpSumOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()


def executions(inputs: Inputs, options: OpSumOptions) -> EventTable:
    """One row per (PCCL kernel, innermost annotation) with the annotation's fields and the
    kernel's ``ordinal`` among the executions of its key, process and device."""
    kernels = on_devices(inputs.whole("kernels", OP_KERNEL_COLUMNS), options.device)
    kernels = kernels.take(pccl_mask(inputs.strings, kernels))
    ranges = all_ranges(inputs)
    notes = annotate(inputs.strings, ranges["name"])
    rows = np.flatnonzero((notes.of >= 0) & name_filter(inputs, ranges["name"], options.range_include,
                                                        options.range_exclude))
    pairs = correlate(inputs, ranges.take(rows), kernels, graph_mapping=not options.no_graph_mapping)
    order = np.lexsort((ranges["start"][rows][pairs.range_row], pairs.activity_row))
    act = pairs.activity_row[order]
    innermost = order[np.r_[act[1:] != act[:-1], True]] if len(act) else order
    k, r = pairs.activity_row[innermost], notes.of[rows[pairs.range_row[innermost]]]
    key, start = notes.key[r], kernels["start"][k]
    pid, device = kernels["pid"][k], kernels["deviceId"][k]
    numbered = group_by([key, pid, device], start)
    ordinal = np.empty(len(k), np.int64)
    ordinal[numbered.order] = np.arange(len(k)) - np.repeat(numbered.bounds[:-1], numbered.size)
    table = EventTable({"key": key, "text": notes.text[r], "count": notes.count[r], "element": notes.element[r],
                        "ranks": notes.ranks[r], "factor": notes.factor_kind[r], "p2p": notes.p2p[r],
                        "pid": pid, "device": device, "start": start, "end": kernels["end"][k],
                        "ordinal": ordinal})
    window = inputs.window
    if window is None:
        return table
    return table.take((table["start"] >= window[0]) & (np.maximum(table["end"], table["start"]) <= window[1]))


def device_masks(key: np.ndarray, device: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """``0xF``-style hex masks of the devices each key ran on (one per ``keys`` entry)."""
    pairs = group_by([key, device])
    masks: dict[int, int] = {}
    for k, d in zip(*(a.tolist() for a in pairs.keys)):
        masks[k] = masks.get(k, 0) | (1 << d)
    return np.array([f"0x{masks.get(k, 0):X}" for k in keys.tolist()], dtype=object)


def op_sum(inputs: Inputs, options: OpSumOptions) -> Frame:
    ex = executions(inputs, options)
    n = ex.rows
    span = ex["end"] - ex["start"]
    instance = np.where(ex["p2p"], n + np.arange(n), ex["ordinal"])  # point-to-point: one per execution
    inst = group_by([ex["key"], instance])
    label = inst.label()
    ranks = np.where(ex["ranks"] > 0, ex["ranks"], inst.size[label])  # no w: the participants
    moved = rank_bytes(ex["count"], ex["element"], ranks, ex["factor"])
    ops = group_by([inst.keys[0]])
    trans = ops.reduce(np.add, inst.reduce(np.minimum, span))
    total = ops.reduce(np.add, inst.reduce(np.maximum, span))
    size = np.round(ops.reduce(np.add, inst.reduce(np.add, moved)))  # whole bytes
    first = np.lexsort((ex["device"], ex["start"], ex["key"]))
    first = first[np.r_[True, ex["key"][first][1:] != ex["key"][first][:-1]]] if n else first
    name = ex["text"][first]
    order = np.lexsort((inputs.strings.sort_rank(name), -trans))
    bandwidth = np.where(trans > 0, size * 1e9 / np.maximum(trans, 1), np.nan)
    percent = np.where(total > 0, 100.0 * trans / np.maximum(total, 1), np.nan)
    values = {"Trans Time (ns)": trans, "Trans Percent (%)": percent, "Total Time (ns)": total, "Instances": ops.size,
              "Device Mask": device_masks(ex["key"], ex["device"], ops.keys[0]), "Trans Size (bytes)": size,
              "Trans Bandwidth (B/s)": bandwidth, "OP Name": name}
    return {column: np.asarray(v)[order] for column, v in values.items()}


COLUMNS = (
    Column("Trans Time (ns)", INT, "Transmission time for all instances of the operator"),
    Column("Trans Percent (%)", PERCENT, "Percentage of 'Trans Time' relative to 'Total Time'"),
    Column("Total Time (ns)", INT, "Sum over instances of the longest participating kernel"),
    Column("Instances", INT, "Number of grouped transmissions for the PCCL operator"),
    Column("Device Mask", TEXT, "PPU device mask of this PCCL operator (bit i = device i)"),
    Column("Trans Size (bytes)", INT, "Total data size transmitted by the operator, summed over ranks"),
    Column("Trans Bandwidth (B/s)", INT, "Transmission bandwidth: Trans Size / Trans Time"),
    Column("OP Name", TEXT, "PCCL operator name (the annotation text of its first instance)"),
)

OP_SUM = Rule(
    name="pccl_op_sum",
    title="PCCL Operator Summary",
    help="PCCL operators from their HGTX annotations (domain NCCL), merged across devices per "
         "communication (same operator, communicator hash and size), in descending order of Trans Time. "
         "Collective: Trans Time is the shortest kernel of each instance, Total Time the longest; "
         "point-to-point (Send, Recv): each kernel execution is an instance.",
    columns=COLUMNS,
    compute=op_sum,
    reads=READS,
    options=OpSumOptions,
    share="Trans Time (ns)",
)

RULES = [OP_SUM]
