"""PPU operator breakdowns: ``ppu_op_kernel_breakdown`` (down to kernels) and
``ppu_op_breakdown`` (down to library operators, with utilisations).

Layers, ``Native``, ``Idle`` and the Total Time are those of :mod:`asysstats.analysis.operators.layers`.
Rows nest: framework groups, then library groups inside each, then kernels inside each,
every level sorted by ``order-by`` (``time``, the default, ``avg``, ``instances``:
descending; ``name``: ascending), ties by name. In ``ppu_op_kernel_breakdown`` the ``Avg``
and ``Instances`` columns describe the row's kernel (the reference example's header).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.declarations import (
    BASE,
    DEVICE,
    MANGLED,
    NO_GRAPH_MAPPING,
    RANGE_EXCLUDE,
    RANGE_INCLUDE,
    ROWS,
    Options,
    Rule,
    name_mode,
)
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.analysis import READS, Analysis, analyse
from asysstats.analysis.operators.common import (
    ALL_COLUMNS,
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
)
from asysstats.analysis.operators.layers import Breakdown, breakdown
from asysstats.analysis.operators.model import peak_arrays
from asysstats.compute.intervals import set_difference
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame
from asysstats.core.tables import NA

if TYPE_CHECKING:
    import regex

ORDERS = ("time", "avg", "instances", "name")
LEVEL_ORDER = "at every level, by time, avg or instances descending, or by name ascending"
NS = 1e-9
LEVEL_ORDER_BY = order_by(ORDERS, "time", LEVEL_ORDER)


@dataclass(frozen=True)
class KernelBreakdownOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()
    op: tuple[str, ...] | None = OP.field()
    order_by: str = LEVEL_ORDER_BY.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()
    all_columns: bool = ALL_COLUMNS.field()


@dataclass(frozen=True)
class BreakdownOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    order_by: str = LEVEL_ORDER_BY.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()
    all_columns: bool = ALL_COLUMNS.field()


def level_keys(inputs: Inputs, level: dict[str, np.ndarray], how: str) -> tuple[np.ndarray, np.ndarray]:
    """(primary sort key, name rank) of one level's groups for ``order-by``."""
    rank = inputs.strings.sort_rank(level["name"])
    value = {"time": level["time"], "avg": level["time"] / np.maximum(level["count"], 1),
             "instances": level["count"]}.get(how)
    return (rank.astype(np.float64), rank) if value is None else (-np.asarray(value, np.float64), rank)


def nested_order(inputs: Inputs, layers: Breakdown, framework_of: np.ndarray, library_of: np.ndarray,
                 kernel_of: np.ndarray | None, how: str) -> np.ndarray:
    """Rows sorted level by level: F group, then L group, then (when given) the kernel row."""
    framework_key, framework_rank = level_keys(inputs, layers.framework, how)
    library_key, library_rank = level_keys(inputs, layers.library, how)
    keys = [framework_key[framework_of], framework_rank[framework_of],
            inputs.strings.sort_rank(layers.framework["type"])[framework_of] if len(framework_of) else framework_of,
            library_key[library_of], library_rank[library_of]]
    if kernel_of is not None:
        kernel_key, kernel_rank = level_keys(inputs, layers.kernel, how)
        has = kernel_of >= 0
        keys += [np.where(has, kernel_key[np.maximum(kernel_of, 0)] if len(kernel_key) else 0, -np.inf),
                 np.where(has, kernel_rank[np.maximum(kernel_of, 0)] if len(kernel_rank) else 0, -1)]
    return np.lexsort(tuple(reversed(keys)))


def percent(time: np.ndarray, total: float) -> np.ndarray:
    return 100.0 * np.asarray(time, np.float64) / total if total > 0 else np.full(len(time), np.nan)


def operator_columns(layers: Breakdown, framework_of: np.ndarray, library_of: np.ndarray) -> Frame:
    """The OP Type, framework and library columns of rows of framework groups ``framework_of``
    and library groups ``library_of``."""
    framework, library = layers.framework, layers.library
    return {
        "OP Type": framework["type"][framework_of], "Framework OP": framework["name"][framework_of],
        "Framework Time (%)": percent(framework["time"], layers.total)[framework_of],
        "Framework Avg (ns)": (framework["time"] / np.maximum(framework["count"], 1))[framework_of],
        "Framework Instances": framework["count"][framework_of], "Library OP": library["name"][library_of],
        "Library Time (%)": percent(library["time"], layers.total)[library_of],
        "Library Avg (ns)": (library["time"] / np.maximum(library["count"], 1))[library_of],
        "Library Instances": library["count"][library_of],
    }


def kernel_breakdown(inputs: Inputs, options: KernelBreakdownOptions) -> Frame:
    layers = breakdown(analyse(inputs, options.like(AnalysisOptions), name_mode(options)))
    library, kernel = layers.library, layers.kernel
    # library groups without kernels (Idle)
    empty = set_difference(np.arange(len(library["framework"])), kernel["library"])
    library_of = np.r_[kernel["library"], empty].astype(np.int64)
    kernel_of = np.r_[np.arange(len(kernel["library"])), np.full(len(empty), -1)].astype(np.int64)
    framework_of = library["framework"][library_of]
    order = nested_order(inputs, layers, framework_of, library_of, kernel_of, options.order_by)
    framework_of, library_of, kernel_of = framework_of[order], library_of[order], kernel_of[order]
    has = kernel_of >= 0
    kernel_row = np.maximum(kernel_of, 0)
    kernel_time = kernel["time"][kernel_row] if len(kernel["time"]) else np.zeros(len(kernel_row))
    kernel_count = kernel["count"][kernel_row] if len(kernel["count"]) else np.zeros(len(kernel_row), np.int64)
    return {
        **operator_columns(layers, framework_of, library_of),
        "Kernel Name": np.where(has, kernel["name"][kernel_row] if len(kernel["name"]) else -1, -1),
        "Kernel Time (%)": np.where(has, percent(kernel_time, layers.total), np.nan),
        "Avg (ns)": np.where(has, kernel_time / np.maximum(kernel_count, 1), np.nan),
        "Instances": np.where(has, kernel_count, NA),
    }


FRAMEWORK_AVG = Column("Framework Avg (ns)", INT, "Average duration of this framework operator (with all-columns)")
FRAMEWORK_INSTANCES = Column("Framework Instances", INT, "Number of instances of this framework operator "
                                                         "(with all-columns)")
LIBRARY_AVG = Column("Library Avg (ns)", INT, "Average duration of this library operator")
LIBRARY_INSTANCES = Column("Library Instances", INT, "Number of instances of this library operator")
# The columns of the reference's column list that its example header leaves out: printed with all-columns.
KERNEL_OPTIONAL = {column: "all_columns" for column in ("Framework Avg (ns)", "Framework Instances",
                                                        "Library Avg (ns)", "Library Instances")}
OP_OPTIONAL = {column: "all_columns" for column in ("Framework Avg (ns)", "Framework Instances")}

KERNEL_COLUMNS = (
    Column("OP Type", TEXT, "Operator type (of the row's top-level operator)"),
    Column("Framework OP", TEXT, "Framework layer operator name ('Native': none)"),
    Column("Framework Time (%)", PERCENT, "Framework operator time as a percentage of Total Time"),
    FRAMEWORK_AVG, FRAMEWORK_INSTANCES,
    Column("Library OP", TEXT, "Compute library layer operator name ('Native': none; 'Idle': no child ran)"),
    Column("Library Time (%)", PERCENT, "Library operator time as a percentage of Total Time"),
    Column(LIBRARY_AVG.name, INT, LIBRARY_AVG.help + " (with all-columns)"),
    Column(LIBRARY_INSTANCES.name, INT, LIBRARY_INSTANCES.help + " (with all-columns)"),
    Column("Kernel Name", TEXT, "HGGC kernel name (memcpy / memset description; 'Idle': no kernel of the library "
                                "operator ran)"),
    Column("Kernel Time (%)", PERCENT, "Kernel time as a percentage of Total Time"),
    Column("Avg (ns)", INT, "Average duration of the kernel"),
    Column("Instances", INT, "Number of instances of the kernel"),
)
BREAKDOWN_HELP = ("Total Time is the sum of the top-level operators' times; 'Native' stands for a missing parent "
                  "operator, 'Idle' for time inside a parent when no child runs.")

KERNEL_BREAKDOWN = Rule(
    name="ppu_op_kernel_breakdown",
    title="PPU Operator Kernel Performance Breakdown",
    help="PPU operators in three layers (framework, compute library, kernel), nested by their PPU time, broken "
         "down to kernels. " + BREAKDOWN_HELP,
    columns=KERNEL_COLUMNS,
    compute=kernel_breakdown,
    reads=READS,
    requires=REQUIRES,
    options=KernelBreakdownOptions,
    share="Kernel Time (%)",
    optional=KERNEL_OPTIONAL,
)


def library_utilisation(inputs: Inputs, an: Analysis, layers: Breakdown) -> dict[str, np.ndarray]:
    """Per library group: 100 x sum(work / peak) / sum(instance time); NaN without a model."""
    instances, groups = layers.library_instances, len(layers.library["framework"])
    flops, load, store = (an.op(column, instances["row"]) for column in ("flops", "load", "store"))
    modelled = ~np.isnan(flops)
    peak, bandwidth = peak_arrays(inputs, instances["device"], an.op("field", instances["row"]), modelled)
    seconds = np.bincount(instances["group"], weights=instances["span"] * NS, minlength=groups)
    out = {}
    for name, work, divisor in (("Compute", flops, peak), ("HBM Load", load, bandwidth), ("HBM Store", store, bandwidth)):
        used = np.bincount(instances["group"], weights=work / divisor, minlength=groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{name} Util (%)"] = np.where(seconds > 0, 100.0 * used / seconds, np.nan)
    return out


def op_breakdown(inputs: Inputs, options: BreakdownOptions) -> Frame:
    an = analyse(inputs, options.like(AnalysisOptions))
    layers = breakdown(an)
    framework_of = layers.library["framework"]
    library_of = np.arange(len(framework_of))
    order = nested_order(inputs, layers, framework_of, library_of, None, options.order_by)
    framework_of, library_of = framework_of[order], library_of[order]
    util = library_utilisation(inputs, an, layers)
    return {**operator_columns(layers, framework_of, library_of),
            **{name: values[library_of] for name, values in util.items()}}


OP_COLUMNS = (
    Column("OP Type", TEXT, "Operator type (of the row's top-level operator)"),
    Column("Framework OP", TEXT, "Framework layer operator name ('Native': none)"),
    Column("Framework Time (%)", PERCENT, "Framework operator time as a percentage of Total Time"),
    FRAMEWORK_AVG, FRAMEWORK_INSTANCES,
    Column("Library OP", TEXT, "Compute library layer operator name ('Native': none; 'Idle': no child ran)"),
    Column("Library Time (%)", PERCENT, "Library operator time as a percentage of Total Time"),
    LIBRARY_AVG, LIBRARY_INSTANCES,
    Column("Compute Util (%)", PERCENT, "Estimated PPU compute utilisation of the library operator"),
    Column("HBM Load Util (%)", PERCENT, "Estimated PPU HBM load utilisation of the library operator"),
    Column("HBM Store Util (%)", PERCENT, "Estimated PPU HBM store utilisation of the library operator"),
)

OP_BREAKDOWN = Rule(
    name="ppu_op_breakdown",
    title="PPU Operator Performance Breakdown",
    help="PPU operators in three layers (framework, compute library, kernel), nested by their PPU time, broken "
         "down to library operators with their estimated utilisations. " + BREAKDOWN_HELP,
    columns=OP_COLUMNS,
    compute=op_breakdown,
    reads=READS,
    requires=REQUIRES,
    options=BreakdownOptions,
    share="Library Time (%)",
    optional=OP_OPTIONAL,
)

RULES = [KERNEL_BREAKDOWN, OP_BREAKDOWN]
