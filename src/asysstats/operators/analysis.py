"""One report's operators: recognised ranges, their PPU activities, and who claims each activity.

Ranges recognised as operators are correlated with PPU activities by
:func:`asysstats.correlate.correlate` (conventions 14; graph mapping unless
``no-graph-mapping``). For every activity the analysis keeps, per claim class (custom
hgtx rule, library, framework) and per layer (framework, library), the *outermost*
correlated operator range (earliest start, then latest end). The flat rules let one
operator claim each activity, strongest first:

1. a ``--ppu-op-config Type=kernel:`` rule matching the kernel name;
2. a ``Type=hgtx:`` rule's range;
3. a library range (acBLAS, DeepGEMM, FlashAttention, FlashMLA, MoE, PCCL);
4. the built-in kernel-name recognition (PCCL, MoE, FlashAttention, GEMM kernels),
   which stands in for absent library annotations;
5. a framework range (PyTorch, framework-level MoE);
6. ``others`` (kernels only, when ``op=`` lists it).

A prefill FlashAttention range directly followed on its thread by a decode one (no launch
in between) forms one operator with it unless
``no-merge-flash-attention-prefill-decode-operator``; the pair is keyed and named
``<prefill> + <decode>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from asysstats.compute.grouped import dense_group_ids
from asysstats.compute.intervals import enclosing_pairs
from asysstats.correlate import Pairs, correlate
from asysstats.engine import Inputs
from asysstats.hgtx import all_ranges, launch_rows, runtime_calls
from asysstats.compute.distinct import distinct
from asysstats.io.tables import EventTable
from asysstats.operators.activities import load_activities, range_filter
from asysstats.operators.catalog import FRAMEWORK, LIBRARY
from asysstats.operators.merge import PREFILL_DECODE_OPTION, joined_ids, parsed_ids
from asysstats.operators.model import WORK_FIELDS, work_arrays, work_of
from asysstats.operators.parsers import CUSTOM, FRAMEWORK_CLAIM, LIBRARY_CLAIM
from asysstats.operators.recognise import (Recognised, TypeFilter, classify_kernels, custom_rules, recognise_ranges,
                                           type_filter)

RANGE_COLUMNS = ("rangeId", "globalTid", "start", "end")  # what the operator rules read of a range


@dataclass
class Analysis:
    """``acts``: the analysed activities (:mod:`activities`) plus ``ktype`` (kernel-name type
    id, -1) and ``kcustom``; ``ops``: the operator ranges (``RANGE_COLUMNS`` of
    :func:`asysstats.hgtx.all_ranges` rows) plus per-range ``type``/``key``/``display`` ids,
    ``layer``, ``claim``, ``parsed`` (index into ``parsed``) and the work columns; ``outer``:
    per claim class and per layer (keys ``"F"``, ``"L"``) the outermost operator range of
    each activity (-1: none), and under ``(key, "graph")`` whether graph mapping alone links
    them; ``merged_into``: each range's operator (itself, or its prefill partner);
    ``pairs``: every correlated (operator range, activity) pair."""

    inputs: Inputs
    acts: EventTable
    ops: EventTable
    parsed: Recognised
    pairs: Pairs
    outer: dict[Any, np.ndarray]
    merged_into: np.ndarray
    types: TypeFilter


def analyse(inputs: Inputs, options: Mapping[str, Any], mode: str = "demangled") -> Analysis:
    """Recognise, correlate and rank the operators of one report (``mode``: kernel names)."""
    inputs.require("kernels", "memcpy", "memset")
    rules = custom_rules(inputs.settings.ppu_op_config)
    types = type_filter(options.get("op"), rules)
    graph = not options.get("no-graph-mapping", False)
    every = load_activities(inputs, options.get("device"), mode)
    launch = launch_rows(runtime_calls(inputs.report), every)
    keep = range_filter(inputs, every, options, graph, launch)
    acts = every if keep.all() else every.take(keep)  # no copy of every activity when none is left out
    del every
    ktype, kcustom = classify_kernels(inputs.strings, np.where(acts["kind"] == 0, acts["raw"], -1), rules, types)
    acts = acts.with_columns(ktype=ktype, kcustom=kcustom)
    ops, parsed = operator_ranges(inputs, rules, types, options)
    pairs = correlate(inputs.report, ops, acts, graph, launch[keep])
    order = outer_order(pairs, ops)
    outer = outermost(pairs, order, ops["claim"], acts.rows, (CUSTOM, LIBRARY_CLAIM, FRAMEWORK_CLAIM))
    by_layer = outermost(pairs, order, ops["layer"], acts.rows, (FRAMEWORK, LIBRARY))
    for name, layer in (("F", FRAMEWORK), ("L", LIBRARY)):
        outer[name], outer[name, "graph"] = by_layer[layer], by_layer[layer, "graph"]
    merged_into = np.arange(ops.rows)
    if not options.get(PREFILL_DECODE_OPTION, False):
        ops, merged_into = merge_prefill_decode(inputs, ops, parsed, launch)
    return Analysis(inputs, acts, ops, parsed, pairs, outer, merged_into, types)


def operator_ranges(inputs: Inputs, rules: tuple, types: TypeFilter,
                    options: Mapping[str, Any]) -> tuple[EventTable, Recognised]:
    """The recognised ranges with their ``parsed`` index, ``type``/``key``/``display`` ids,
    ``layer``, ``claim`` class and work columns (library and custom operators only: a
    framework operator rarely holds the kernels its parameters describe)."""
    ranges = all_ranges(inputs.report)
    index, parsed = recognise_ranges(inputs.strings, ranges, rules, types)
    per_text = parsed_ids(inputs.strings, parsed, options)
    per_text.update(work_arrays(parsed.column(lambda p: work_of(p) if p.claim != FRAMEWORK_CLAIM else None, None,
                                              object)))
    per_text["layer"] = parsed.column(lambda p: p.layer, FRAMEWORK, np.int64)
    per_text["claim"] = parsed.column(lambda p: p.claim, FRAMEWORK_CLAIM, np.int64)
    keep = np.flatnonzero(index >= 0)
    index = index[keep]
    columns = {k: ranges[k][keep] for k in RANGE_COLUMNS}
    return EventTable({**columns, "parsed": index, **{k: v[index] for k, v in per_text.items()}}), parsed


def outer_order(pairs: Pairs, ops: EventTable) -> np.ndarray:
    """The pairs by activity, then outermost range first (earliest start, latest end, lowest
    ``rangeId``); ties in pair order. Ranges are ranked once, so one two-key sort serves."""
    rank, _ = dense_group_ids([ops["start"], -ops["end"], ops["rangeId"]])
    return np.lexsort((rank[pairs.range_row], pairs.activity_row))


def outermost(pairs: Pairs, order: np.ndarray, klass: np.ndarray, n_acts: int, classes: tuple) -> dict:
    """Per class: for each activity the outermost correlated range of that class (-1 if
    none), and under ``(class, "graph")`` whether only graph mapping links the two;
    ``order`` is :func:`outer_order`."""
    r, a, g = pairs.range_row[order], pairs.activity_row[order], pairs.via_graph[order]
    c = klass[r]
    out = {}
    for k in classes:
        pick = np.flatnonzero(c == k)
        pick = pick[np.r_[True, a[pick[1:]] != a[pick[:-1]]]] if len(pick) else pick
        out[k] = np.full(n_acts, -1, dtype=np.int64)
        out[k, "graph"] = np.zeros(n_acts, dtype=bool)
        out[k][a[pick]] = r[pick]
        out[k, "graph"][a[pick]] = g[pick]
    return out


def instance_ids(an: "Analysis", rows: np.ndarray, graph: np.ndarray, act: np.ndarray | None = None) -> np.ndarray:
    """Instance ids of (operator range ``rows``, activity ``act``) links (-1: none), after
    prefill/decode merging: the range row, or for graph-mapped links one instance per
    (range, graph launch) above ``ops.rows + acts.rows``. ``act`` defaults to 0, 1, ..."""
    act = np.arange(len(rows)) if act is None else act
    rows = np.where(rows >= 0, an.merged_into[np.maximum(rows, 0)], -1) if an.ops.rows else rows
    out = rows.copy()
    split = np.flatnonzero((rows >= 0) & graph)
    if len(split):
        index, _ = dense_group_ids([rows[split], an.acts["pid"][act[split]], an.acts["correlationId"][act[split]]])
        out[split] = an.ops.rows + an.acts.rows + index
    return out


def merge_prefill_decode(inputs: Inputs, ops: EventTable, parsed: Recognised,
                         launch: np.ndarray) -> tuple[EventTable, np.ndarray]:
    """Pair each prefill attention range with the decode one that follows it on its thread
    with no launch (``launch``: the launching call rows of all activities, before range
    filters) in between; the decode range's operator becomes the prefill's."""
    merged_into = np.arange(ops.rows)
    flash = parsed.column(lambda p: p.family == "flash" and p.layer == LIBRARY, False, bool)
    decode = parsed.column(lambda p: bool(p.params.get("decode")), False, bool)
    rows = np.flatnonzero(flash[ops["parsed"]])
    if len(rows) < 2:
        return ops, merged_into
    rows = rows[np.lexsort((ops["rangeId"][rows], ops["start"][rows], ops["globalTid"][rows]))]
    first, second = rows[:-1], rows[1:]
    is_decode = decode[ops["parsed"]]
    cand = (ops["globalTid"][first] == ops["globalTid"][second]) & ~is_decode[first] & is_decode[second]
    first, second = first[cand], second[cand]
    calls = runtime_calls(inputs.report)
    launched = distinct(launch)[0]
    launched = launched[launched >= 0]
    hit, _ = enclosing_pairs(ops["globalTid"][first], ops["end"][first], ops["start"][second],
                             calls["globalTid"][launched], calls["start"][launched])
    clear = np.ones(len(first), dtype=bool)
    clear[hit] = False
    first, second = first[clear], second[clear]
    merged_into[second] = first
    pool = inputs.strings
    columns = {k: ops[k].copy() for k in ("key", "display") + WORK_FIELDS}
    columns["key"][first] = joined_ids(pool, ops["key"][first], ops["key"][second])
    columns["display"][first] = joined_ids(pool, ops["display"][first], ops["display"][second])
    for k in WORK_FIELDS:
        columns[k][first] = ops[k][first] + ops[k][second]
    return ops.with_columns(**columns), merged_into
