"""``ppu_operator_kernel_breakdown_compare`` and ``ppu_operator_breakdown_compare``: the
layered operator breakdowns of two reports (``ppu_op_kernel_breakdown``, ``ppu_op_breakdown``).

Each side's rows are the single rule's rows, made from the same statistics
(:func:`asysstats.analysis.operators.layers.breakdown`), plus the layers' merge keys.
Rows match level by level: the framework operator by type and match key
(:func:`compare_operators.match_key`; ``Native`` by type), the library operator inside it
by match key (``Native``, ``Idle`` by name), the kernel inside that by name. A row is the
full outer join at the deepest level (kernel, or library operator); a side without that
row still shows its framework and library operators when they match. Rows nest like the
single rules': framework groups by the larger side's time percentage (or ``order-by``
value; ``name``: by name only), then library groups, then kernels, ties by name.
``top=N`` keeps the rows whose deepest operator is among the N largest time percentages
of either report; ``matched-only`` keeps the rows matched at the deepest level.
``Avg Ratio`` is the deepest level's target / base.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import numpy as np

from asysstats.analysis.comparison import (
    DEVICE_NAME,
    MATCHED_ONLY,
    TOP,
    Pairing,
    as_float,
    device_label,
    keeps_run_ids,
    match_rows,
    name_rank,
    resolved,
    run_free_names,
    taken,
    target_over_base,
)
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
from asysstats.analysis.operators.analysis import READS, analyse
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
from asysstats.analysis.operators.layers import IDLE, NATIVE, breakdown
from asysstats.compute.intervals import set_difference
from asysstats.core.result import INT, PAIR_TEXT, PERCENT, RATIO, TEXT, Column, Frame
from asysstats.core.tables import NA

if TYPE_CHECKING:
    import regex
from asysstats.rulebook.compare_operators import match_key
from asysstats.rulebook.operators_breakdown import ORDERS, library_utilisation, nested_order, percent

SENTINELS = {NATIVE: "<native>", IDLE: "<idle>"}
ORDER_COLUMNS = {"time": "Time (%)", "avg": "Avg (ns)", "instances": "Instances"}  # order-by -> level column
NAMES = {"Framework": "Framework OP", "Library": "Library OP", "Kernel": "Kernel"}
WHAT = {"Framework": "framework layer operator", "Library": "compute library layer operator", "Kernel": "HGGC kernel"}
UTILS = (("Compute Util (%)", "PPU compute capability"), ("HBM Load Util (%)", "PPU HBM load bandwidth"),
         ("HBM Store Util (%)", "PPU HBM store bandwidth"))


def level_columns(level: str) -> tuple[Column, ...]:
    what = WHAT[level]
    return (Column(NAMES[level], TEXT, f"Name of the {what}"),
            Column(f"{level} Time (%)", PERCENT, f"Time of this {what} as a percentage of 'Total Time'"),
            Column(f"{level} Avg (ns)", INT, f"Average duration of this {what}"),
            Column(f"{level} Instances", INT, f"Number of instances of this {what}"))


def side_frame(inputs: Inputs, options: "CompareOptions", levels: tuple[str, ...]) -> Frame:
    """One report's breakdown rows (in the single rule's order) with the level keys."""
    with_kernel = "Kernel" in levels
    mode = name_mode(options) if isinstance(options, KernelCompareOptions) else "demangled"
    an = analyse(inputs, options.like(AnalysisOptions), mode)
    layers = breakdown(an)
    library_of, kernel_of = np.arange(len(layers.library["framework"])), None
    if with_kernel:  # every kernel row, and the library groups without kernels
        empty = set_difference(library_of, layers.kernel["library"])
        library_of = np.r_[layers.kernel["library"], empty].astype(np.int64)
        kernel_of = np.r_[np.arange(len(layers.kernel["library"])), np.full(len(empty), -1)].astype(np.int64)
    order = nested_order(inputs, layers, layers.library["framework"][library_of], library_of, kernel_of,
                         options.order_by)
    rows = {"Framework": layers.library["framework"][library_of][order], "Library": library_of[order]}
    if kernel_of is not None:  # with_kernel
        rows["Kernel"] = kernel_of[order]
    frame = {"OP Type": resolved(inputs, layers.framework["type"][rows["Framework"]])}
    for level, table in zip(levels, (layers.framework, layers.library, layers.kernel)):
        at = rows[level]
        has, pick = at >= 0, np.maximum(at, 0)
        name, time, avg, count = (column.name for column in level_columns(level))
        values = (table["name"], percent(table["time"], layers.total), table["time"] / np.maximum(table["count"], 1),
                  table["count"])
        for column, source, fill in zip((name, time, avg, count), values, (-1, np.nan, np.nan, NA)):
            frame[column] = np.where(has, source[pick], fill) if len(source) else np.full(len(at), fill)
        frame[name] = resolved(inputs, frame[name])
        if level != "Kernel" and not keeps_run_ids(options):  # shown (matched by key) without per-run ids
            frame[name] = run_free_names(frame[name])
        if level != "Kernel":
            keys = table["key"][at]
            texts = resolved(inputs, np.where(keys >= 0, keys, -1)).tolist()
            frame[f"{level} Key"] = np.array([match_key(SENTINELS.get(key, text))
                                              for key, text in zip(keys.tolist(), texts)], dtype=object)
    if not with_kernel:
        util = library_utilisation(inputs, an, layers)
        frame.update({name: util[name][rows["Library"]] for name, _ in UTILS})
    frame[DEVICE_NAME] = np.full(len(order), device_label(inputs, options.device), dtype=object)
    return frame


def level_rows(frames: tuple[Frame, Frame], exact: Pairing, keys: list[str]) -> Pairing:
    """Per output row and side: the matched row, else the first row of that side with the
    same ``keys`` as the other side's row (the parent it shares), else -1."""
    found = []
    for side, (rows, other) in enumerate(((exact.base, exact.target), (exact.target, exact.base))):
        first: dict[tuple, int] = {}
        for row, key in enumerate(zip(*(frames[side][column].tolist() for column in keys))):
            first.setdefault(key, row)
        other_keys = list(zip(*(frames[1 - side][column].tolist() for column in keys)))
        found.append(np.array([row if row >= 0 else first.get(other_keys[other_row], -1)
                               for row, other_row in zip(rows.tolist(), other.tolist())], dtype=np.int64))
    return Pairing(*found)


def sides(frames: tuple[Frame, Frame], rows: Pairing, column: str) -> tuple[np.ndarray, np.ndarray]:
    return taken(frames[0][column], rows.base), taken(frames[1][column], rows.target)


def either(frames: tuple[Frame, Frame], rows: Pairing, column: str) -> np.ndarray:
    base, target = sides(frames, rows, column)
    return np.where(rows.base >= 0, base, target)


def in_top(frame: Frame, column: str, count: int | None) -> np.ndarray:
    """Whether each row's deepest operator is among the ``count`` largest (all without a count)."""
    values = np.nan_to_num(as_float(frame[column]), nan=-np.inf)
    keep = np.full(len(values), count is None)
    keep[np.argsort(-values, kind="stable")[:count or 0]] = True
    return keep


def kept(exact: Pairing, frames: tuple[Frame, Frame], deepest: str, options: "CompareOptions") -> Pairing:
    """The rows of ``top`` and ``matched-only``."""
    keep = np.zeros(len(exact.base), dtype=bool)
    for frame, rows in zip(frames, (exact.base, exact.target)):
        top = in_top(frame, f"{deepest} Time (%)", options.top)
        keep |= (rows >= 0) & np.append(top, False)[rows]
    if options.matched_only:
        keep &= (exact.base >= 0) & (exact.target >= 0)
    return exact.take(keep)


def nested_rows(frames: tuple[Frame, Frame], pairings: dict[str, Pairing], how: str) -> np.ndarray:
    """Output order: level by level, the larger side's ``order-by`` value descending, then name
    (after the framework name, the type)."""
    keys = []
    for level, rows in pairings.items():
        value = np.zeros(len(rows.base))
        if how != "name":
            both = (as_float(values) for values in sides(frames, rows, f"{level} {ORDER_COLUMNS[how]}"))
            value = -np.nan_to_num(np.fmax(*both), nan=-np.inf)
        keys += [value, name_rank(either(frames, rows, NAMES[level]))]
    keys.insert(2, name_rank(either(frames, pairings["Framework"], "OP Type")))
    deepest = list(pairings.values())[-1]
    return np.lexsort((deepest.target, deepest.base) + tuple(reversed(keys)))


def shown(level: str, levels: tuple[str, ...]) -> list[str]:
    """The side columns of one level (the library level of the library breakdown: with utilisations)."""
    utils = [name for name, _ in UTILS] if level == levels[-1] == "Library" else []
    return [column.name for column in level_columns(level)] + utils


def compare(inputs: tuple[Inputs, Inputs], options: "CompareOptions", levels: tuple[str, ...]) -> Frame:
    frames = (side_frame(inputs[0], options, levels), side_frame(inputs[1], options, levels))
    keys = ["OP Type", "Framework Key", "Library Key"] + (["Kernel"] if "Kernel" in levels else [])
    exact = kept(match_rows(*([frame[key] for key in keys] for frame in frames)), frames, levels[-1], options)
    parents = [level_rows(frames, exact, keys[:depth]) for depth in range(2, len(levels) + 1)]
    pairings = dict(zip(levels, parents + [exact]))
    order = nested_rows(frames, pairings, options.order_by)
    pairings = {level: rows.take(order) for level, rows in pairings.items()}
    top = pairings["Framework"]
    out = {"Device Name": np.stack(sides(frames, top, DEVICE_NAME), axis=1).reshape(-1, 2),
           "OP Type": either(frames, top, "OP Type")}
    for index, prefix in enumerate(("Base", "Target")):
        for level, rows in pairings.items():
            out.update({f"{prefix} {column}": sides(frames, rows, column)[index] for column in shown(level, levels)})
    out["Avg Ratio"] = target_over_base(*sides(frames, pairings[levels[-1]], f"{levels[-1]} Avg (ns)"))
    return out


def compare_columns(levels: tuple[str, ...]) -> tuple[Column, ...]:
    columns = [Column("Device Name", PAIR_TEXT, "PPU device name (base / target)"),
               Column("OP Type", TEXT, "PPU operator type")]
    for prefix in ("Base", "Target"):
        report = f"in the {prefix.lower()} report"
        for level in levels:
            columns += [Column(f"{prefix} {column.name}", column.kind, f"{column.help} {report}")
                        for column in level_columns(level)]
        if levels[-1] == "Library":
            columns += [Column(f"{prefix} {name}", PERCENT, f"Utilisation of the {what} {report}")
                        for name, what in UTILS]
    what = "kernel" if levels[-1] == "Kernel" else "library operator"
    return tuple(columns) + (Column("Avg Ratio", RATIO, f"Target {what} average time compared to base: target / "
                                                        "base ('-' when unmatched or the base is 0)"),)


HELP = ("Rows match by operator type and merged parameters at the framework and library layers{kernel}; a side "
        "without the row shows '-' (its parent operators when they match). Sorted level by level by the larger "
        "time percentage of the two reports. Cells are 'base / target'; ratios are target / base.")
ORDER_BY = order_by(ORDERS, "time", "|".join(ORDERS))


@dataclass(frozen=True)
class BreakdownCompareOptions(Options):
    top: int | None = TOP.field()
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    order_by: str = ORDER_BY.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()
    matched_only: bool = MATCHED_ONLY.field()
    all_columns: bool = ALL_COLUMNS.field()


@dataclass(frozen=True)
class KernelCompareOptions(Options):
    top: int | None = TOP.field()
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()
    op: tuple[str, ...] | None = OP.field()
    order_by: str = ORDER_BY.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_flash_attention_prefill_decode_operator: bool = PREFILL_DECODE.field()
    no_merge_flash_attention_parameter: bool = FLASH_MERGE.field()
    no_merge_communication_parameter: bool = PCCL_MERGE.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()
    no_merge_pytorch_parameter: bool = PYTORCH_MERGE.field()
    no_merge_gemm_parameter: bool = GEMM_MERGE.field()
    matched_only: bool = MATCHED_ONLY.field()
    all_columns: bool = ALL_COLUMNS.field()


CompareOptions = Union[BreakdownCompareOptions, KernelCompareOptions]
KERNEL_LEVELS, LIBRARY_LEVELS = ("Framework", "Library", "Kernel"), ("Framework", "Library")


def omitted(levels: tuple[str, ...]) -> dict[str, str]:
    """The columns the reference's example leaves out, as the single rule's example does: the averages and
    instances of the levels above the deepest. Printed with all-columns."""
    return {f"{side} {column.name}": "all_columns" for side in ("Base", "Target") for level in levels[:-1]
            for column in level_columns(level)[2:]}

KERNEL_BREAKDOWN_COMPARE = Rule(
    name="ppu_operator_kernel_breakdown_compare",
    title="PPU Operator Kernel Breakdown Comparison",
    help="The ppu_op_kernel_breakdown tables of the base and target reports. " + HELP.format(
        kernel=" and by kernel name at the kernel layer"),
    columns=compare_columns(KERNEL_LEVELS),
    compute=lambda inputs, options: compare(inputs, options, KERNEL_LEVELS),
    reads=READS, requires=REQUIRES, options=KernelCompareOptions, reports=2, optional=omitted(KERNEL_LEVELS),
)

BREAKDOWN_COMPARE = Rule(
    name="ppu_operator_breakdown_compare",
    title="PPU Operator Breakdown Comparison",
    help="The ppu_op_breakdown tables of the base and target reports. " + HELP.format(kernel=""),
    columns=compare_columns(LIBRARY_LEVELS),
    compute=lambda inputs, options: compare(inputs, options, LIBRARY_LEVELS),
    reads=READS, requires=REQUIRES, options=BreakdownCompareOptions, reports=2,
    optional=omitted(LIBRARY_LEVELS),
)

RULES = [KERNEL_BREAKDOWN_COMPARE, BREAKDOWN_COMPARE]
