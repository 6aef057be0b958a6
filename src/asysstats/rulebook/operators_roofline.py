"""PPU operator roofline (``ppu_op_roofline``): the modelled work of each operator and shape
against the device time it took and the device's peaks.

Every recognised operator range counts, nested ones too (``aten::linear`` and the
``aten::addmm`` inside it are both rows, as TraceLens lists them): an instance is one range
that launched device work, its kernel time the union of the activities (kernels, memory
copies, memsets) it launched, its own and its children's
(:func:`asysstats.analysis.correlate.correlate`). Instances of one
type, merge key, device and modelled work form a row. Achieved rates are the mean over
instances of work / kernel time (TraceLens's ``TFLOPS/s_mean`` and ``TB/s_mean``); a row is
compute-bound when its FLOPs per byte reach the device's ridge point (peak FLOP/s / peak
bytes/s), else memory-bound. The models are :mod:`asysstats.analysis.operators.model`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.comparison import run_free_names
from asysstats.analysis.declarations import DEVICE, NO_GRAPH_MAPPING, RANGE_EXCLUDE, RANGE_INCLUDE, ROWS, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.analysis import READS, Analysis, analyse
from asysstats.analysis.operators.common import OP, REQUIRES, AnalysisOptions, order_by, sorted_order
from asysstats.analysis.operators.model import peak_arrays
from asysstats.compute.grouped import dense_group_ids, group_heads
from asysstats.compute.intervals import covered_length_sorted, group_start_order
from asysstats.core.result import FIGURE, INT, PERCENT, TEXT, Column, Frame

if TYPE_CHECKING:
    import regex

NS = 1e-9
MB, TERA = 1e6, 1e12
ROOFLINE_ORDER = {"time": "Kernel Time (ns)", "instances": "Instances", "gflops": "GFLOPs",
                  "tflops": "TFLOP/s", "tbs": "TB/s", "compute": "Compute Peak (%)", "memory": "Memory Peak (%)",
                  "name": "OP Name"}
ROOFLINE_ORDER_BY = order_by(ROOFLINE_ORDER, "time", "by that column, descending (name: ascending)")


@dataclass(frozen=True)
class RooflineOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()
    op: tuple[str, ...] | None = OP.field()
    order_by: str = ROOFLINE_ORDER_BY.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()


@dataclass
class RangeTimes:
    """Per operator range that launched device work (``rows`` of ``an.ops``): the union of
    its activities (``time``, ns) and the device of its first one."""

    rows: np.ndarray
    time: np.ndarray
    device: np.ndarray


def range_times(an: Analysis) -> RangeTimes:
    pairs, acts = an.pairs, an.acts
    starts = acts["start"][pairs.activity_row]
    ends = np.maximum(acts["end"][pairs.activity_row], starts)
    # One sort gives the union and each range's first activity. Not covered_length_by_group: here the unsorted
    # columns go before the union is made (148 MB less peak on 5 M kernels).
    order = group_start_order(pairs.range_row, starts)
    ranked = pairs.range_row[order]
    head = order[np.r_[True, ranked[1:] != ranked[:-1]]] if len(order) else order
    starts, ends = starts[order], ends[order]
    del order
    time = covered_length_sorted(ranked, starts, ends, an.ops.rows)
    del ranked, starts, ends
    device = np.full(an.ops.rows, -1, dtype=np.int64)
    device[pairs.range_row[head]] = acts["deviceId"][pairs.activity_row[head]]
    rows = np.flatnonzero((time > 0) & (an.ops["entry"] >= 0))
    return RangeTimes(rows, time[rows], device[rows])


def roofline_frame(inputs: Inputs, options: RooflineOptions) -> Frame:
    an = analyse(inputs, options.like(AnalysisOptions))
    ranges = range_times(an)
    texts = an.texts
    entry = texts["parsed"][an.ops["entry"][ranges.rows]]  # each range's own text: prefill and decode apart
    kept = an.listed(texts["type"][entry])
    rows, time, device, entry = ranges.rows[kept], ranges.time[kept], ranges.device[kept], entry[kept]
    flops = texts["flops"][entry]
    moved = texts["load"][entry] + texts["store"][entry]
    label, keys = dense_group_ids([texts["type"][entry], texts["key"][entry], device, np.nan_to_num(flops, nan=-1.0),
                                   np.nan_to_num(moved, nan=-1.0)])
    n = len(keys[0]) if len(label) else 0
    count = np.bincount(label, minlength=n)
    total = np.bincount(label, weights=time, minlength=n)
    seconds = time * NS
    first = first_instance(an, rows, label, n)
    group_entry = entry[first]
    group_flops, group_moved = flops[first], moved[first]
    with np.errstate(divide="ignore", invalid="ignore"):
        tflops = np.bincount(label, weights=flops / seconds / TERA, minlength=n) / count if n else np.zeros(0)
        tbs = np.bincount(label, weights=moved / seconds / TERA, minlength=n) / count if n else np.zeros(0)
        intensity = group_flops / group_moved
    modelled = ~np.isnan(group_flops)
    peak, bandwidth = peak_arrays(inputs, device[first], texts["field"][group_entry], modelled)
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = 100.0 * tflops * TERA / peak
        memory = 100.0 * tbs * TERA / bandwidth
        ridge = peak / bandwidth
    names = run_free_names(inputs.strings.lookup(texts["display"][group_entry]))
    name_ids = inputs.strings.intern(names.tolist()) if n else np.empty(0, np.int64)
    bound = np.where(np.isnan(intensity) | np.isnan(ridge), "-", np.where(intensity >= ridge, "compute", "memory"))
    frame = {
        "OP Type": texts["type"][group_entry], "Device ID": device[first], "Instances": count,
        "Kernel Time (ns)": total, "Avg Kernel Time (ns)": total / np.maximum(count, 1),
        "GFLOPs": group_flops / 1e9, "Data Moved (MB)": group_moved / MB, "FLOPs/Byte": intensity,
        "TFLOP/s": tflops, "TB/s": tbs, "Compute Peak (%)": compute, "Memory Peak (%)": memory,
        "Bound": inputs.strings.intern(bound.tolist()) if n else np.empty(0, np.int64),
        "Data Type": texts["dtype"][group_entry], "Model": texts["model"][group_entry], "OP Name": name_ids,
        "OP Key": texts["key"][group_entry],
    }
    note_past_peak(inputs, frame, names)
    key = options.order_by
    column = ROOFLINE_ORDER[key]
    ties = (inputs.strings.sort_rank(frame["OP Type"]), frame["Device ID"])
    if key == "name":
        order = sorted_order(inputs.strings, inputs.strings.sort_rank(frame[column]), False, frame["OP Name"], *ties)
    else:
        order = sorted_order(inputs.strings, frame[column], True, frame["OP Name"], *ties)
    return {k: np.asarray(v)[order] for k, v in frame.items()}


def first_instance(an: Analysis, rows: np.ndarray, label: np.ndarray, n: int) -> np.ndarray:
    """Per group, the position (in ``rows``) of its earliest instance."""
    return group_heads(label, n, [an.ops["start"][rows], an.ops["rangeId"][rows]])


CACHE_HINT = {"Compute Peak (%)": "", "Memory Peak (%)": "; data served from cache also passes it"}
NAMED_PAST_PEAK = 5  # operators named one by one per peak; the others are counted


def note_past_peak(inputs: Inputs, frame: Frame, names: np.ndarray) -> None:
    """Notes on the rows whose achieved rate passes the device's peak, highest first: a wrong
    model or a wrong peak shows, it is not hidden."""
    for column, what in (("Compute Peak (%)", "FLOP/s"), ("Memory Peak (%)", "bandwidth")):
        share = np.nan_to_num(frame[column])
        past = np.flatnonzero(share > 100.0)
        past = past[np.argsort(-share[past], kind="stable")]
        for row in past[:NAMED_PAST_PEAK].tolist():
            inputs.notes.append(f"{inputs.path.name}: {names[row]} on device {frame['Device ID'][row]} achieves "
                                f"{share[row]:.1f} % of the peak {what}: check its model and the device's peak "
                                "figure (--device-spec)" + CACHE_HINT[column])
        if len(past) > NAMED_PAST_PEAK:
            inputs.notes.append(f"{inputs.path.name}: {len(past) - NAMED_PAST_PEAK} more operators pass 100 % of the "
                                f"peak {what} (column {column})")


COLUMNS = (
    Column("OP Type", TEXT, "Operator type"),
    Column("Device ID", INT, "Device of the operator's first activity"),
    Column("Instances", INT, "Instances of this operator and shape that launched device work"),
    Column("Kernel Time (ns)", INT, "Total of the instances' kernel time: the union of the device activities each "
                                    "launched, its own and its children's"),
    Column("Avg Kernel Time (ns)", INT, "Average kernel time of an instance"),
    Column("GFLOPs", FIGURE, "Floating-point operations of one instance, in 10^9, by the operator's model"),
    Column("Data Moved (MB)", FIGURE, "Bytes read and written by one instance, in 10^6, by the operator's model"),
    Column("FLOPs/Byte", FIGURE, "Arithmetic intensity: GFLOPs per byte moved"),
    Column("TFLOP/s", FIGURE, "Achieved compute rate: mean over instances of FLOPs / kernel time, in 10^12"),
    Column("TB/s", FIGURE, "Achieved bandwidth: mean over instances of bytes moved / kernel time, in 10^12"),
    Column("Compute Peak (%)", PERCENT, "TFLOP/s as a percentage of the device's dense peak for the data type "
                                        "(vector operators: its FP32 peak)"),
    Column("Memory Peak (%)", PERCENT, "TB/s as a percentage of the device's memory bandwidth"),
    Column("Bound", TEXT, "compute when FLOPs/Byte reaches the device's ridge point (peak FLOP/s / bandwidth), "
                          "else memory; '-' without a model or peak"),
    Column("Data Type", TEXT, "Data type the model counts with ('(assumed)': not recorded)"),
    Column("Model", TEXT, "The model that counts the work, or why there is none"),
    Column("OP Name", TEXT, "Operator and its shapes (of the first instance), without per-run ids"),
)

OP_ROOFLINE = Rule(
    name="ppu_op_roofline",
    title="PPU Operator Roofline",
    help="Per operator and shape (nested operators too): instances, kernel time, the FLOPs and bytes of its model "
         "(GEMM, convolution, attention, elementwise, reductions, normalisations, ...; docs/operators.md), "
         "arithmetic intensity, achieved TFLOP/s and TB/s, their share of the device's peaks and whether it is "
         "compute- or memory-bound. Sorted by order-by (default kernel time), then name.",
    columns=COLUMNS,
    compute=roofline_frame,
    reads=READS,
    requires=REQUIRES,
    options=RooflineOptions,
)

RULES = [OP_ROOFLINE]
