"""MoE operator summary (``moe_op_sum``).

A MoE operator is a range with MoE parameters (``[MoE] --format=M_.._E_.._H_.._In_.._topk_..``
or the framework-level ``D_MoE,M_..``) that holds no other such range on its thread (so a
``D_MoE`` wrapping a ``[MoE]`` counts once, as the ``[MoE]``); a graph-mapped range has one
instance per graph launch. An instance's time is the sum of its kernels' durations.
Its GEMM *units* are the GEMM library ranges (DeepGEMM, acBLAS) inside it, or the GEMM and
MoE kernels outside such ranges; the last two units in start order are GEMM1 (gate+up) and
GEMM2 (down) — a router GEMM before them is left out; a lone unit is GEMM1. Utilisations
follow :mod:`asysstats.analysis.operators.model` with GEMM times averaged per instance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, RANGE_EXCLUDE, RANGE_INCLUDE, ROWS, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.analysis import READS, Analysis, analyse, instance_ids
from asysstats.analysis.operators.catalog import GEMM, MOE
from asysstats.analysis.operators.common import MOE_MERGE, REQUIRES, AnalysisOptions, sorted_order
from asysstats.analysis.operators.model import DEFAULT_FIELD, moe_work, peak_arrays
from asysstats.compute.grouped import group_by, group_heads, grouped_stats, share_percent
from asysstats.compute.intervals import enclosing_pairs, set_difference
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame

if TYPE_CHECKING:
    import regex


@dataclass(frozen=True)
class MoeOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    no_merge_moe_parameter: bool = MOE_MERGE.field()

NS = 1e-9


def moe_ranges(an: Analysis) -> np.ndarray:
    """Rows of ``an.ops`` with MoE parameters that hold no other such range on their thread."""
    ops = an.ops
    rows = an.ranges_where(an.parsed.column(lambda p: p.family == "moe" and "M" in p.params, False, bool))
    outer, inner = enclosing_pairs(ops["globalTid"][rows], ops["start"][rows], ops["end"][rows],
                                   ops["globalTid"][rows], ops["start"][rows])
    nested = (outer != inner) & ((ops["start"][rows][inner] > ops["start"][rows][outer])
                                 | (ops["end"][rows][inner] < ops["end"][rows][outer]))
    return set_difference(rows, rows[outer[nested]])


def gemm_units(an: Analysis) -> np.ndarray:
    """Per activity its GEMM unit: the innermost GEMM library range (a row of ``an.ops``),
    else ``ops.rows + activity`` for a GEMM or MoE kernel, else -1."""
    ops = an.ops
    pairs = an.pairs_of(an.ranges_where(an.parsed.column(lambda p: p.family == "gemm", False, bool)))
    r, a = pairs.range_row, pairs.activity_row
    order = np.lexsort((-ops["start"][r], a))
    r, a = r[order], a[order]
    first = np.r_[True, a[1:] != a[:-1]] if len(a) else np.zeros(0, dtype=bool)
    unit = np.full(an.acts.rows, -1, dtype=np.int64)
    kinds = an.inputs.strings.intern([GEMM, MOE])
    named = np.isin(an.acts["ktype"], kinds) & (an.acts["kind"] == 0)
    unit[named] = ops.rows + np.flatnonzero(named)
    unit[a[first]] = r[first]
    return unit


def moe_frame(inputs: Inputs, options: MoeOptions) -> Frame:
    an = analyse(inputs, options.like(AnalysisOptions))
    acts = an.acts
    pairs = an.pairs_of(moe_ranges(an))
    member = acts["kind"][pairs.activity_row] == 0
    r, a = pairs.range_row[member], pairs.activity_row[member]
    inst_raw = instance_ids(an, an.operator_of(r), pairs.via_graph[member], a)
    inst_ids, inst = np.unique(inst_raw, return_inverse=True)
    inst = inst.reshape(-1)
    n = len(inst_ids)
    duration = acts["end"][a] - acts["start"][a]
    time = np.bincount(inst, weights=duration, minlength=n)
    head = group_heads(inst, n, [acts["start"][a]])  # each instance's first activity
    source, device = r[head], acts["deviceId"][a[head]]
    first, second = unit_times(gemm_units(an)[a], inst, acts["start"][a], duration, n)
    flops, load, store = gemm_works(an, an.op("parsed", source))
    peak, bandwidth = peak_arrays(inputs, device, np.full(n, DEFAULT_FIELD), np.ones(n, dtype=bool))
    groups, stats = grouped_stats([an.op("key", source)], time.astype(np.int64))
    label = groups.label() if n else np.empty(0, np.int64)
    earliest = group_heads(label, groups.count, [acts["start"][a[head]], acts["aid"][a[head]]])
    frame = {"Total Time (ns)": stats["sum"], "Percent (%)": share_percent(stats["sum"], float(stats["sum"].sum())),
             "Instances": stats["count"], "Avg (ns)": stats["mean"], "Med (ns)": stats["median"],
             "Min (ns)": stats["min"], "Max (ns)": stats["max"], "StdDev (ns)": stats["std"],
             "OP Name": an.op("display", source[earliest]), "OP Key": groups.keys[0]}
    for i, (gemm_time, has) in enumerate((first, second)):
        name = f"GEMM{i + 1}"
        frame[f"{name} Total Time (ns)"] = np.bincount(label, weights=gemm_time, minlength=groups.count)
        seconds = np.bincount(label, weights=np.where(has, gemm_time, 0) * NS, minlength=groups.count)
        for column, work, divisor in (("Compute", flops, peak), ("HBM Load", load, bandwidth),
                                      ("HBM Store", store, bandwidth)):
            used = np.bincount(label, weights=np.where(has, work[:, i] / divisor, 0), minlength=groups.count)
            with np.errstate(divide="ignore", invalid="ignore"):
                frame[f"{name} {column} Util (%)"] = np.where(seconds > 0, 100.0 * used / seconds, np.nan)
    order = sorted_order(inputs.strings, frame["Total Time (ns)"], True, frame["OP Name"], frame["OP Key"])
    return {k: np.asarray(v)[order] for k, v in frame.items()}


def gemm_works(an: Analysis, parsed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """FLOPs, bytes read and bytes written of (GEMM1, GEMM2) per instance (n x 2 each)."""
    uniq, inverse = np.unique(parsed, return_inverse=True)
    rows = []
    for index in uniq.tolist():
        pair = moe_work(an.parsed[index].params)
        rows.append([getattr(w, f) for f in ("flops", "load", "store") for w in pair] if pair else [np.nan] * 6)
    table = np.array(rows, dtype=np.float64).reshape(-1, 6)[inverse.reshape(-1)]
    return table[:, 0:2], table[:, 2:4], table[:, 4:6]


def unit_times(unit: np.ndarray, inst: np.ndarray, start: np.ndarray, duration: np.ndarray,
               n: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Per instance: (time, present) of GEMM1 and of GEMM2 from the activities' units."""
    on = unit >= 0
    groups = group_by([inst[on], unit[on]])
    label = groups.label() if groups.count else np.empty(0, np.int64)
    total = np.bincount(label, weights=duration[on], minlength=groups.count)
    begin = np.full(groups.count, np.iinfo(np.int64).max)
    np.minimum.at(begin, label, start[on])
    owner = groups.keys[0]
    order = np.lexsort((begin, owner))
    owners = owner[order]
    starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]]) if groups.count else np.empty(0, np.int64)
    rank = np.empty(groups.count, np.int64)
    rank[order] = np.arange(groups.count) - np.repeat(starts, np.diff(np.r_[starts, groups.count]))
    size = np.bincount(owner, minlength=n)[owner]
    out = []
    for pick in ((rank == size - 2) | ((size == 1) & (rank == 0)), (rank == size - 1) & (size >= 2)):
        time = np.zeros(n)
        time[owner[pick]] = total[pick]
        has = np.zeros(n, dtype=bool)
        has[owner[pick]] = True
        out.append((time, has))
    return out[0], out[1]


COLUMNS = (
    Column("Total Time (ns)", INT, "Total time of all kernel instances of this operator"),
    Column("Percent (%)", PERCENT, "Percentage of 'Total Time'"),
    Column("GEMM1 Total Time (ns)", INT, "Total time of the GEMM 1 kernels"),
    Column("GEMM2 Total Time (ns)", INT, "Total time of the GEMM 2 kernels"),
    Column("Instances", INT, "Number of instances of this MoE operator"),
    Column("Avg (ns)", INT, "Average execution time of this operator's kernels"),
    Column("Med (ns)", INT, "Median execution time of this operator's kernels"),
    Column("Min (ns)", INT, "Smallest execution time of this operator's kernels"),
    Column("Max (ns)", INT, "Largest execution time of this operator's kernels"),
    Column("StdDev (ns)", INT, "Population standard deviation of the execution time of this operator's kernels"),
    Column("GEMM1 Compute Util (%)", PERCENT, "GEMM 1 utilisation of the PPU compute capability"),
    Column("GEMM2 Compute Util (%)", PERCENT, "GEMM 2 utilisation of the PPU compute capability"),
    Column("GEMM1 HBM Load Util (%)", PERCENT, "GEMM 1 utilisation of the PPU HBM load bandwidth"),
    Column("GEMM1 HBM Store Util (%)", PERCENT, "GEMM 1 utilisation of the PPU HBM store bandwidth"),
    Column("GEMM2 HBM Load Util (%)", PERCENT, "GEMM 2 utilisation of the PPU HBM load bandwidth"),
    Column("GEMM2 HBM Store Util (%)", PERCENT, "GEMM 2 utilisation of the PPU HBM store bandwidth"),
    Column("OP Name", TEXT, "Name of the MoE operator (of the group's first instance)"),
)

MOE_SUM = Rule(
    name="moe_op_sum",
    title="MoE Operator Summary",
    help="MoE operators grouped by parameters (topkids and unique merged unless no-merge-moe-parameter): the sum "
         "of their kernels' times, the times of their two GEMMs and the GEMMs' estimated utilisations. "
         "Sorted by total time descending.",
    columns=COLUMNS,
    compute=moe_frame,
    reads=READS,
    requires=REQUIRES,
    options=MoeOptions,
    share="Total Time (ns)",
)

RULES = [MOE_SUM]
