"""PPU operator summaries: ``ppu_op_sum`` (per merged operator) and ``ppu_op_type_sum`` (per type).

Operators, claims, instances and merging are those of :mod:`asysstats.analysis.operators`. Times
are instance durations (first to last activity); ``PPU Active Time`` is the union of the
group's activities on each device, summed over devices. :func:`op_sum_frame` and
:func:`type_sum_frame` are the per-report cores that the comparison rules reuse; besides
the printed columns their frames hold ``OP Key`` (the merge key's string id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, RANGE_EXCLUDE, RANGE_INCLUDE, ROWS, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.analysis import READS, analyse
from asysstats.analysis.operators.common import (
    FLASH_MERGE,
    GEMM_MERGE,
    MOE_MERGE,
    OP,
    PCCL_MERGE,
    PREFILL_DECODE,
    PYTORCH_MERGE,
    REQUIRES,
    AnalysisOptions,
    order_by,
    sorted_order,
)
from asysstats.analysis.operators.instances import flat_instances, group_instances, utilisation
from asysstats.compute.grouped import share_percent
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame

if TYPE_CHECKING:
    import regex

SUM_ORDER = {"total": "Total Time (ns)", "instances": "Instances", "avg": "Avg (ns)", "med": "Med (ns)",
             "min": "Min (ns)", "max": "Max (ns)", "stddev": "StdDev (ns)", "active": "PPU Active Time (ns)",
             "compute": "Compute Util (%)", "load": "HBM Load Util (%)", "store": "HBM Store Util (%)",
             "name": "OP Name", "type": "OP Type"}
SUM_ORDER_BY = order_by(SUM_ORDER, "total", "by that column, descending (name and type: ascending)")


@dataclass(frozen=True)
class SumOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    order_by: str = SUM_ORDER_BY.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()


@dataclass(frozen=True)
class TypeSumOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()


def ratio(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    whole = np.asarray(whole, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(whole > 0, 100.0 * np.asarray(part, dtype=np.float64) / whole, np.nan)


def op_sum_frame(inputs: Inputs, options: SumOptions) -> Frame:
    an = analyse(inputs, options.like(AnalysisOptions))
    inst = flat_instances(an)
    t = inst.table
    groups = group_instances(an, inst, [t["type"], t["key"]])
    util = utilisation(an, inst, groups.label, groups.count)
    s = groups.stats
    frame = {
        "OP Type": groups.keys[0], "Total Time (ns)": s["sum"],
        "Percent (%)": share_percent(s["sum"], inst.total), "Instances": s["count"],
        "Avg (ns)": s["mean"], "Med (ns)": s["median"], "Min (ns)": s["min"], "Max (ns)": s["max"],
        "PPU Active Time (ns)": groups.active, "Active Percent (%)": ratio(groups.active, s["sum"]),
        "StdDev (ns)": s["std"], "Compute Util (%)": util["flops"], "HBM Load Util (%)": util["load"],
        "HBM Store Util (%)": util["store"], "OP Name": t["display"][groups.first], "OP Key": groups.keys[1],
    }
    key = options.order_by
    column = SUM_ORDER[key]
    if key in ("name", "type"):
        order = sorted_order(inputs.strings, inputs.strings.sort_rank(frame[column]), False, frame["OP Name"],
                             inputs.strings.sort_rank(frame["OP Type"]), frame["OP Key"])
    else:
        order = sorted_order(inputs.strings, frame[column], True, frame["OP Name"],
                             inputs.strings.sort_rank(frame["OP Type"]), frame["OP Key"])
    return {k: np.asarray(v)[order] for k, v in frame.items()}


SUM_COLUMNS = (
    Column("OP Type", TEXT, "PPU operator type"),
    Column("Total Time (ns)", INT, "Total execution time of all instances of this operator"),
    Column("Percent (%)", PERCENT, "The operator's 'Total Time' as a percentage of the total of all operators "
                                   "(of every type, also with op=)"),
    Column("Instances", INT, "Number of operator instances"),
    Column("Avg (ns)", INT, "Average execution time of this operator"),
    Column("Med (ns)", INT, "Median execution time of this operator"),
    Column("Min (ns)", INT, "Minimum execution time of this operator"),
    Column("Max (ns)", INT, "Maximum execution time of this operator"),
    Column("PPU Active Time (ns)", INT, "Total PPU active time of this operator, overlaps counted once"),
    Column("Active Percent (%)", PERCENT, "'PPU Active Time' as a percentage of 'Total Time'"),
    Column("StdDev (ns)", INT, "Population standard deviation of the time of this operator"),
    Column("Compute Util (%)", PERCENT, "Estimated PPU compute utilisation"),
    Column("HBM Load Util (%)", PERCENT, "Estimated PPU HBM load utilisation"),
    Column("HBM Store Util (%)", PERCENT, "Estimated PPU HBM store utilisation"),
    Column("OP Name", TEXT, "Operator signature: name and key parameters (of the group's first instance)"),
)

OP_SUM = Rule(
    name="ppu_op_sum",
    title="PPU Operator Summary",
    help="PPU operators (from HGTX annotations and kernel names) grouped by type and parameters, minor parameter "
         "differences merged; time = first to last correlated PPU activity per instance; utilisations from "
         "the operator's FLOPs and bytes over the device peaks. Sorted by order-by (default total time), "
         "then name.",
    columns=SUM_COLUMNS,
    compute=op_sum_frame,
    reads=READS,
    requires=REQUIRES,
    options=SumOptions,
    share="Total Time (ns)",
)


def type_sum_frame(inputs: Inputs, options: TypeSumOptions) -> Frame:
    an = analyse(inputs, options.like(AnalysisOptions))
    inst = flat_instances(an)
    t = inst.table
    if t.rows == 0:
        return {c.name: np.empty(0, np.int64) for c in TYPE_COLUMNS}
    ops = group_instances(an, inst, [t["type"], t["key"]])
    kinds = group_instances(an, inst, [t["type"]])
    everything = group_instances(an, inst, [np.zeros(t.rows, np.int64)])
    op_total, op_type, op_name = ops.stats["sum"], ops.keys[0], t["display"][ops.first]
    rank = inputs.strings.sort_rank(op_name)
    best = np.lexsort((rank, -op_total, op_type))
    top = best[np.r_[True, op_type[best][1:] != op_type[best][:-1]]]  # per type, in type order
    type_total = kinds.stats["sum"]
    overall = np.lexsort((rank, -op_total))[0]
    overall_type = np.searchsorted(kinds.keys[0], op_type[overall])
    grand = float(type_total.sum())
    frame = {
        "OP Type": np.r_[inputs.strings.intern(["Summary"]), kinds.keys[0]],
        "Percent (%)": share_percent(np.r_[grand, type_total], inst.total),
        "Avg (ns)": np.r_[grand / t.rows, kinds.stats["mean"]],
        "Total Time (ns)": np.r_[grand, type_total].astype(np.int64),
        "Instances": np.r_[t.rows, kinds.stats["count"]],
        "PPU Active Time (ns)": np.r_[everything.active, kinds.active],
        "Top OP Percent (%)": ratio(np.r_[op_total[overall], op_total[top]],
                                    np.r_[type_total[overall_type], type_total]),
        "Top OP Name": np.r_[op_name[overall], op_name[top]],
    }
    frame["Active Percent (%)"] = ratio(frame["PPU Active Time (ns)"], frame["Total Time (ns)"])
    order = sorted_order(inputs.strings, type_total, True, kinds.keys[0])
    order = np.r_[0, order + 1]
    return {c.name: np.asarray(frame[c.name])[order] for c in TYPE_COLUMNS}


TYPE_COLUMNS = (
    Column("OP Type", TEXT, "PPU operator type ('Summary': all types)"),
    Column("Percent (%)", PERCENT, "Percentage of the 'Total Time' of all operators (of every type, also with op=)"),
    Column("Avg (ns)", INT, "Average duration of this operator type"),
    Column("Total Time (ns)", INT, "Total duration of all instances of this operator type"),
    Column("Instances", INT, "Number of instances of this operator type"),
    Column("PPU Active Time (ns)", INT, "Total PPU active time of this operator type, overlaps counted once"),
    Column("Active Percent (%)", PERCENT, "'PPU Active Time' as a percentage of 'Total Time'"),
    Column("Top OP Percent (%)", PERCENT, "Share of the top operator in the 'Total Time' of its type"),
    Column("Top OP Name", TEXT, "Name of the operator with the longest total time of this type"),
)

TYPE_SUM = Rule(
    name="ppu_op_type_sum",
    title="PPU Operator Type Summary",
    help="PPU operator time per operator type, with the hotspot operator (longest total) of each type; the "
         "first row, 'Summary', covers the types listed (its Top OP Percent is the top operator's share of its "
         "own type, as in the reference). Sorted by total time descending.",
    columns=TYPE_COLUMNS,
    compute=type_sum_frame,
    reads=READS,
    requires=REQUIRES,
    options=TypeSumOptions,
    share="Total Time (ns)",
)

RULES = [OP_SUM, TYPE_SUM]
