"""``ppu_operator_summary_compare``, ``ppu_operator_type_summary_compare`` and
``ppu_operator_roofline_compare``: the ``ppu_op_sum``, ``ppu_op_type_sum`` and
``ppu_op_roofline`` tables of two reports.

Operators match by type and merged parameters: the merge key of ``ppu_op_sum`` without
its library segment and without the per-run PyTorch ids (``seq``, ``op_id``,
``input_op_ids``: no two runs share them, ``no-merge-pytorch-parameter`` or not), with the
vendor prefixes of BLAS and collective libraries dropped (``ACBLAS``/``CUBLAS`` -> ``BLAS``,
``PCCL``/``NCCL`` -> ``CCL``, kernel names included) and case-folded, so that an operator of
a PPU report matches the same operator of an NVIDIA report, and of another run. Names show
without those ids. Operator types match by name; the ``Summary`` row of the type table
comes first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from asysstats.analysis.comparison import (
    BASE,
    DEVICE_NAME,
    EITHER,
    MATCHED_ONLY,
    TARGET,
    TOP,
    SideFrame,
    comparison_rule,
    pair,
    ratio,
    side,
    single_rule_frame,
)
from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, RANGE_EXCLUDE, RANGE_INCLUDE, ROWS, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.common import (
    FLASH_MERGE,
    GEMM_MERGE,
    MOE_MERGE,
    OP,
    PCCL_MERGE,
    PREFILL_DECODE,
    PYTORCH_MERGE,
    order_by,
)
from asysstats.analysis.operators.parsers import without_run_ids
from asysstats.core.result import PAIR_FIGURE, PAIR_INT, PAIR_PERCENT, PAIR_TEXT, Frame
from asysstats.rulebook.operators_roofline import OP_ROOFLINE, ROOFLINE_ORDER
from asysstats.rulebook.operators_summary import OP_SUM, SUM_ORDER, TYPE_SUM

if TYPE_CHECKING:
    import regex

SUM_ORDER_BY = order_by(SUM_ORDER, "total", "|".join(SUM_ORDER))


@dataclass(frozen=True)
class SumCompareOptions(Options):
    top: int | None = TOP.field()
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
    matched_only: bool = MATCHED_ONLY.field()


@dataclass(frozen=True)
class TypeCompareOptions(Options):
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
    matched_only: bool = MATCHED_ONLY.field()

VENDOR = re.compile(r"(?i)\b(?:AC|CU)(?=BLAS)|\b[PN](?=CCL)")
LIBRARY_SEGMENT = re.compile(r"(^| \+ )([^|]+)\|[^|]*\|")
MATCH_KEY = "Match Key"


def match_key(key: str | None) -> str | None:
    """A merge key (``type|library|fields``, `` + ``-joined for merged pairs, or a kernel
    name) without library segments, per-run PyTorch ids and vendor prefixes, case-folded."""
    if key is None:
        return None
    return VENDOR.sub("", LIBRARY_SEGMENT.sub(r"\1\2||", without_run_ids(key, key=True) or "")).casefold()


def keyed_frame(rule: Rule[Any]) -> SideFrame:
    """A side frame of ``rule`` (whose frame holds ``OP Key``) with the match key of every row."""
    side_frame = single_rule_frame(rule, extra_text=("OP Key",), run_free=("OP Name",))

    def frame(inputs: Inputs, options: Options) -> Frame:
        out = side_frame(inputs, options)
        out[MATCH_KEY] = np.array([match_key(k) for k in out["OP Key"].tolist()], dtype=object)
        return out

    return frame


def operator_order(options: SumCompareOptions) -> tuple[str | None, tuple[str, ...]]:
    """Default: the larger time percentage; ``order-by`` a numeric column: its larger side;
    ``name`` / ``type``: ascending by those texts."""
    key = options.order_by
    if key == "name":
        return None, ("OP Name", "OP Type")
    if key == "type":
        return None, ("OP Type", "OP Name")
    return ("Percent (%)" if key == "total" else SUM_ORDER[key]), ("OP Name",)


DEVICE_CELL = pair("Device Name", DEVICE_NAME, PAIR_TEXT, "PPU device name")
TYPE_CELL = side("OP Type", "OP Type", EITHER, "PPU operator type")
OPERATOR_CELLS = (
    DEVICE_CELL, TYPE_CELL,
    pair("Percent (%)", "Percent (%)", PAIR_PERCENT, "Percentage of the total time of all operators of the report"),
    pair("Instances", "Instances", PAIR_INT, "Number of instances of this operator"),
    pair("Avg (ns)", "Avg (ns)", PAIR_INT, "Average execution time of this operator"),
    ratio("Avg Ratio", "Avg (ns)", "Target average time compared to base"),
    pair("Total (ns)", "Total Time (ns)", PAIR_INT, "Total time of all instances of this operator"),
    ratio("Total Ratio", "Total Time (ns)", "Target total time compared to base"),
    pair("Active (ns)", "PPU Active Time (ns)", PAIR_INT, "PPU active time of this operator, overlaps counted once"),
    ratio("Active Ratio", "PPU Active Time (ns)", "Target active time compared to base"),
    pair("Compute Util (%)", "Compute Util (%)", PAIR_PERCENT, "Estimated PPU compute utilisation"),
    pair("HBM Load Util (%)", "HBM Load Util (%)", PAIR_PERCENT, "Estimated PPU HBM load utilisation"),
    pair("HBM Store Util (%)", "HBM Store Util (%)", PAIR_PERCENT, "Estimated PPU HBM store utilisation"),
    side("Base OP Name", "OP Name", BASE, "Name of the operator in the base report"),
    side("Target OP Name", "OP Name", TARGET, "Name of the operator in the target report"),
)

OPERATOR_SUMMARY_COMPARE = comparison_rule(
    name="ppu_operator_summary_compare",
    title="PPU Operator Summary Comparison",
    help="The ppu_op_sum tables of the base and target reports, operators matched by type and merged parameters "
         "(library and vendor prefixes ignored); sorted by the larger of the two time percentages, descending "
         "(order-by: another column's larger side; name and type ascending).",
    cells=OPERATOR_CELLS,
    side_frame=keyed_frame(OP_SUM),
    keys=("OP Type", MATCH_KEY),
    sort="Percent (%)",
    options=SumCompareOptions,
    reads=OP_SUM.reads,
    requires=OP_SUM.requires,
    order=operator_order,
    share="Total (ns)",
    label="Target OP Name",
)

TYPE_CELLS = (
    DEVICE_CELL, TYPE_CELL,
    pair("Percent (%)", "Percent (%)", PAIR_PERCENT, "Percentage of 'Total Time'"),
    pair("Instances", "Instances", PAIR_INT, "Number of instances of this operator type"),
    pair("Avg (ns)", "Avg (ns)", PAIR_INT, "Average duration of this operator type"),
    ratio("Avg Ratio", "Avg (ns)", "Target average duration compared to base"),
    pair("Total (ns)", "Total Time (ns)", PAIR_INT, "Total duration of all instances of this operator type"),
    ratio("Total Ratio", "Total Time (ns)", "Target total time compared to base"),
    pair("PPU Active Time (ns)", "PPU Active Time (ns)", PAIR_INT, "PPU active time of this type, overlaps once"),
    ratio("Active Time Ratio", "PPU Active Time (ns)", "Target PPU active time compared to base"),
    pair("Top OP Percent (%)", "Top OP Percent (%)", PAIR_PERCENT, "Share of the top operator in its type's time"),
    side("Base Top OP Name", "Top OP Name", BASE, "Name of the top operator of this type in the base report"),
    side("Target Top OP Name", "Top OP Name", TARGET, "Name of the top operator of this type in the target report"),
)

TYPE_SUMMARY_COMPARE = comparison_rule(
    name="ppu_operator_type_summary_compare",
    title="PPU Operator Type Summary Comparison",
    help="The ppu_op_type_sum tables of the base and target reports, operator types matched by name; the "
         "Summary row (all types) first, then by the larger of the two time percentages, descending.",
    cells=TYPE_CELLS,
    side_frame=single_rule_frame(TYPE_SUM, run_free=("Top OP Name",)),
    keys=("OP Type",),
    sort="Percent (%)",
    options=TypeCompareOptions,
    reads=TYPE_SUM.reads,
    requires=TYPE_SUM.requires,
    first="Summary",
    share="Total (ns)",
    label="OP Type",
)



@dataclass(frozen=True)
class RooflineCompareOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    order_by: str = order_by(ROOFLINE_ORDER, "time", "|".join(ROOFLINE_ORDER)).field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    matched_only: bool = MATCHED_ONLY.field()


def roofline_order(options: RooflineCompareOptions) -> tuple[str | None, tuple[str, ...]]:
    """Default: the larger kernel time; ``order-by`` another numeric column: its larger side; ``name`` ascending."""
    if options.order_by == "name":
        return None, ("OP Name", "OP Type")
    return ROOFLINE_ORDER[options.order_by], ("OP Name",)


ROOFLINE_CELLS = (
    DEVICE_CELL, TYPE_CELL,
    pair("Instances", "Instances", PAIR_INT, "Instances that launched device work"),
    pair("Kernel Time (ns)", "Kernel Time (ns)", PAIR_INT, "Total kernel time of the instances"),
    ratio("Kernel Time Ratio", "Kernel Time (ns)", "Target kernel time compared to base"),
    pair("Avg Kernel Time (ns)", "Avg Kernel Time (ns)", PAIR_INT, "Average kernel time of an instance"),
    pair("GFLOPs", "GFLOPs", PAIR_FIGURE, "Modelled FLOPs of one instance, in 10^9"),
    pair("Data Moved (MB)", "Data Moved (MB)", PAIR_FIGURE, "Modelled bytes of one instance, in 10^6"),
    pair("TFLOP/s", "TFLOP/s", PAIR_FIGURE, "Achieved compute rate"),
    ratio("TFLOP/s Ratio", "TFLOP/s", "Target compute rate compared to base"),
    pair("TB/s", "TB/s", PAIR_FIGURE, "Achieved bandwidth"),
    ratio("TB/s Ratio", "TB/s", "Target bandwidth compared to base"),
    pair("Compute Peak (%)", "Compute Peak (%)", PAIR_PERCENT, "Achieved compute rate as a share of the peak"),
    pair("Memory Peak (%)", "Memory Peak (%)", PAIR_PERCENT, "Achieved bandwidth as a share of the peak"),
    pair("Bound", "Bound", PAIR_TEXT, "compute- or memory-bound at the operator's intensity"),
    side("Base OP Name", "OP Name", BASE, "Name of the operator in the base report"),
    side("Target OP Name", "OP Name", TARGET, "Name of the operator in the target report"),
)

ROOFLINE_COMPARE = comparison_rule(
    name="ppu_operator_roofline_compare",
    title="PPU Operator Roofline Comparison",
    help="The ppu_op_roofline tables of the base and target reports side by side (achieved TFLOP/s and TB/s, "
         "their share of each device's peaks), operators matched by type and shapes as in "
         "ppu_operator_summary_compare; sorted by the larger kernel time, descending (order-by: another column's "
         "larger side; name ascending).",
    cells=ROOFLINE_CELLS,
    side_frame=keyed_frame(OP_ROOFLINE),
    keys=("OP Type", MATCH_KEY),
    sort="Kernel Time (ns)",
    options=RooflineCompareOptions,
    reads=OP_ROOFLINE.reads,
    requires=OP_ROOFLINE.requires,
    order=roofline_order,
    share="Kernel Time (ns)",
    label="Target OP Name",
)

RULES = [OPERATOR_SUMMARY_COMPARE, TYPE_SUMMARY_COMPARE, ROOFLINE_COMPARE]
