"""One report's operators: recognised ranges, their PPU activities, and who claims each activity.

Ranges recognised as operators are correlated with the PPU activities whose anchors they hold
(:class:`asysstats.analysis.correlate.Anchors`, docs/decisions.md D11; graph mapping unless
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

Recognition and claims always use every operator type: ``op=`` filters the rules' rows
afterwards (:meth:`Analysis.listed`), so that a filtered table's rows are those of the
unfiltered table.

A prefill FlashAttention range directly followed on its thread by a decode one (no launch
in between) forms one operator with it unless
``no-merge-flash-attention-prefill-decode-operator``; the pair is keyed and named
``<prefill> + <decode>``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import numpy as np

from asysstats.analysis.correlate import Anchors, Pairs
from asysstats.analysis.declarations import merged_reads
from asysstats.analysis.hgtx import all_ranges
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import launch_rows, runtime_calls
from asysstats.analysis.operators.activities import ACTIVITY_READS, load_activities, range_filter, with_shown_columns
from asysstats.analysis.operators.catalog import FRAMEWORK, LIBRARY, OTHERS
from asysstats.analysis.operators.common import AnalysisOptions
from asysstats.analysis.operators.merge import joined_ids, parsed_ids
from asysstats.analysis.operators.model import PEAK_READS, WORK_FIELDS, text_work
from asysstats.analysis.operators.parsers import CUSTOM, FRAMEWORK_CLAIM, LIBRARY_CLAIM
from asysstats.analysis.operators.recognise import (
    Recognised,
    TypeFilter,
    classify_kernels,
    custom_rules,
    recognise_ranges,
    type_filter,
)
from asysstats.analysis.reads import CORRELATE_READS, DEVICE_READS, HGTX_READS, KIND_READS
from asysstats.compute.grouped import dense_group_ids
from asysstats.compute.intervals import enclosing_pairs, group_time_order, outer_first, outermost_enclosing
from asysstats.core.tables import EventTable

RANGE_COLUMNS = ("rangeId", "globalTid", "start", "end")  # what the operator rules read of a range
Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # a range's thread, start, end and rangeId

T = TypeVar("T")
NOT_MERGED = (np.empty(0, np.int64), np.empty(0, np.int64))  # no decode range merged into its prefill

# What the analysis reads (Rule.reads of the operator rules), the device names of the comparisons included.
READS = merged_reads(HGTX_READS, ACTIVITY_READS, CORRELATE_READS, KIND_READS, PEAK_READS, DEVICE_READS)


@dataclass
class Analysis:
    """``acts``: the analysed activities (:mod:`activities`, without ``graphNodeId``) plus
    ``ktype`` (kernel-name type id, -1) and ``kcustom``; ``ops``: every range
    (``RANGE_COLUMNS`` of :func:`asysstats.analysis.hgtx.all_ranges`, not copied) and its ``entry``
    (row of ``texts``; -1: no operator); ``texts``: per operator text ``parsed`` (index into
    ``parsed``), ``type``/``key``/``display`` ids, ``layer``, ``claim`` and the work columns
    (a merged prefill+decode pair adds one); ``merged``: the decode ranges merged (rows,
    ascending) and the prefill range of each; ``anchors``: where the activities sit among the ranges.
    :meth:`outermost_by_claim` and :attr:`by_layer` give the outermost operator ranges, :attr:`pairs`
    every correlated (operator range, activity) pair, the last two made when first read."""

    inputs: Inputs
    acts: EventTable
    ops: EventTable
    texts: EventTable
    parsed: Recognised
    anchors: Anchors
    merged: tuple[np.ndarray, np.ndarray]
    types: TypeFilter
    key: tuple  # what it is shared under in its inputs (:func:`analyse`)

    def shared(self, name: str, make: Callable[[], T]) -> T:
        """``make()``, made once per analysis: what the rules reading it share (their instances)."""
        return self.inputs.shared((*self.key, name), make)

    def listed(self, type_ids: np.ndarray) -> np.ndarray:
        """Which of some operator type ids ``op=`` lists: every type without it; ``others`` only when named."""
        names = sorted(self.types.allowed) + ([OTHERS] if self.types.others else [])
        return np.isin(type_ids, self.inputs.strings.intern(names))

    def op(self, column: str, rows: np.ndarray) -> np.ndarray:
        """``column`` of the operator ranges ``rows``: a range column, else their text's."""
        if column in self.ops:
            return self.ops[column][rows]
        return self.texts[column][self.ops["entry"][rows]]

    def operator_of(self, rows: np.ndarray) -> np.ndarray:
        """The operator of each range row in ``rows`` (int64): the range itself, or the prefill
        range it was merged into; -1 stays -1."""
        decode, prefill = self.merged
        out = rows.astype(np.int64)
        if len(decode):
            at = np.minimum(np.searchsorted(decode, rows), len(decode) - 1)
            hit = decode[at] == rows
            out[hit] = prefill[at[hit]]
        return out

    def ranges_where(self, per_text: np.ndarray) -> np.ndarray:
        """The operator ranges whose recognised text (index into ``parsed``) ``per_text`` marks."""
        return ranges_where(self.ops, self.texts, per_text)

    def outermost_by_claim(self) -> dict[Any, np.ndarray]:
        """Per claim class (custom, library, framework) the outermost operator range of each
        activity (-1: none), and under ``(class, "graph")`` whether graph mapping alone links them.
        Made on each call and not kept: the flat rules read it once, for the instances they share
        (0.8 GB at 55 M activities)."""
        return self._outermost("claim", (CUSTOM, LIBRARY_CLAIM, FRAMEWORK_CLAIM))

    @functools.cached_property
    def by_layer(self) -> dict[Any, np.ndarray]:
        """As :meth:`outermost_by_claim`, per layer: ``"F"`` (framework) and ``"L"`` (library); kept."""
        found = self._outermost("layer", (FRAMEWORK, LIBRARY))
        return {"F": found[FRAMEWORK], ("F", "graph"): found[FRAMEWORK, "graph"],
                "L": found[LIBRARY], ("L", "graph"): found[LIBRARY, "graph"]}

    def _outermost(self, column: str, classes: tuple) -> dict[Any, np.ndarray]:
        entry = self.ops["entry"]
        klass = np.where(entry >= 0, self.texts[column][entry], -1) if self.texts.rows else np.full(len(entry), -1)
        return outermost(self.anchors, self.ops, klass, self.acts.rows, classes)

    @functools.cached_property
    def pairs(self) -> Pairs:
        """Every correlated (operator range, activity) pair: read by the rooflines, not by the flat rules."""
        return self.pairs_of(np.flatnonzero(self.ops["entry"] >= 0))

    def pairs_of(self, rows: np.ndarray) -> Pairs:
        """The correlated pairs of the operator ranges ``rows`` (ascending), as :attr:`pairs` lists
        them (:meth:`Anchors.all_pairs`)."""
        ranges = EventTable({k: self.ops[k][rows] for k in ("globalTid", "start", "end")})
        found = self.anchors.all_pairs(ranges)
        return Pairs(rows[found.range_row], found.activity_row, found.via_graph)


def analyse(inputs: Inputs, options: AnalysisOptions, mode: str = "demangled") -> Analysis:
    """Recognise, correlate and rank the operators of one report (``mode``: kernel names).
    The tables it loads are not kept: what it needs of them, it holds. Made once per inputs,
    mode and ``options`` (the options it reads): rules that read the same operators (a
    comparison's three operator rules) share it."""
    key = ("operators", mode, repr(options))
    return inputs.shared(key, lambda: analysed(inputs, options, mode, key))


def analysed(inputs: Inputs, options: AnalysisOptions, mode: str, key: tuple) -> Analysis:
    inputs.require("kernels", "memcpy", "memset")
    rules = custom_rules(inputs.settings.ppu_op_config)
    types = type_filter(options.op, rules)  # what the rules list; every type is recognised
    every_type = type_filter(None, rules)
    graph = not options.no_graph_mapping
    all_ranges(inputs)  # a cold run builds the ranges before it loads the activities: one peak, then the other
    with inputs.transient():
        every = load_activities(inputs, options.device)
        launch = launch_rows(runtime_calls(inputs), every)
        keep = range_filter(inputs, every, options, graph, launch)
        acts = every.take(keep)
        del every
        ktype, kcustom = classify_kernels(inputs.strings, np.where(acts["kind"] == 0, acts["raw"], -1), rules,
                                         every_type)
        acts = acts.with_columns(ktype=ktype, kcustom=kcustom)
        ops, texts, parsed = operator_ranges(inputs, rules, every_type, options)
        merged = NOT_MERGED
        if not options.no_merge_flash_attention_prefill_decode_operator:
            ops, texts, merged = merge_prefill_decode(inputs, ops, texts, parsed, launch)
        anchors = Anchors(inputs, acts, graph, launch[keep])  # after the merge: one peak, then the other
        del launch
        acts = EventTable({k: v for k, v in acts.items() if k != "graphNodeId"})  # read by the correlation only
    return Analysis(inputs, with_shown_columns(inputs, acts, mode), ops, texts, parsed, anchors, merged, types,
                    key)


def operator_ranges(inputs: Inputs, rules: tuple, types: TypeFilter,
                    options: AnalysisOptions) -> tuple[EventTable, EventTable, Recognised]:
    """Every range with its ``entry`` (-1: no operator), and per recognised text its
    ``parsed`` index, ``type``/``key``/``display`` ids, ``layer``, ``claim`` class and work
    columns with their ``model`` and ``dtype`` (:func:`asysstats.analysis.operators.model.text_work`)."""
    ranges = all_ranges(inputs)
    entry, parsed = recognise_ranges(inputs.strings, ranges, rules, types)
    texts = parsed_ids(inputs.strings, parsed, options)
    texts.update(text_work(inputs.strings, parsed))
    texts["layer"] = parsed.column(lambda p: p.layer, FRAMEWORK, np.int64)
    texts["claim"] = parsed.column(lambda p: p.claim, FRAMEWORK_CLAIM, np.int64)
    texts["parsed"] = np.arange(len(parsed))
    return EventTable({**{k: ranges[k] for k in RANGE_COLUMNS}, "entry": entry}), EventTable(texts), parsed


def row_type(rows: int) -> np.dtype:
    """The type of row numbers into ``rows`` rows, kept per range or activity: 32 bits when they fit."""
    return np.dtype(np.int32 if rows < 2 ** 31 else np.int64)


def ranges_where(ops: EventTable, texts: EventTable, per_text: np.ndarray) -> np.ndarray:
    """The rows of ``ops`` whose recognised text (index into ``parsed``) ``per_text`` marks."""
    entry = ops["entry"]
    rows = np.flatnonzero(entry >= 0)
    return rows[per_text[texts["parsed"][entry[rows]]]]


def outermost(anchors: Anchors, ops: EventTable, klass: np.ndarray, n_acts: int, classes: tuple) -> dict:
    """Per class: for each activity the outermost range of that class holding one of its anchors
    (-1 if none): the earliest start, then the latest end, then the lowest ``rangeId`` (one per
    range). Under ``(class, "graph")``: whether it holds only the graph node's creation, not the
    launch call (the link is graph mapping's alone). Each class's ranges are ordered once, or past
    one pass (:meth:`Anchors.thread_sets`) those of a set of whole threads at a time, so that the
    ranges gathered and ordered are a set's. Every launch call is placed before any creation, so
    that a creation's range replaces a launch call's only when strictly outer."""
    operator = np.flatnonzero(klass >= 0)
    sets = anchors.thread_sets(ops["globalTid"][operator])
    whole = class_ranges(ops, klass, operator, classes) if sets is None else []
    passes: list[np.ndarray | None] = [None] if sets is None else list(sets)
    found = [np.full(n_acts, -1, dtype=row_type(ops.rows)) for _ in classes]  # kept: one per activity and class
    graph = [np.zeros(n_acts, dtype=bool) for _ in classes]
    for kind, every_point in enumerate(anchors.points()):  # launch calls, then graph node creations
        for threads in passes:  # a loop over sets of threads
            if threads is None:
                ranges, points = whole, every_point
            else:
                ranges = class_ranges(ops, klass, operator[np.isin(ops["globalTid"][operator], threads)], classes)
                points = every_point.on(threads)
            point_order = group_time_order(points.thread, points.time)
            for (rows, columns, order), outer, mapped in zip(ranges, found, graph):
                held = outermost_enclosing(*columns, points.thread, points.time, order, point_order)
                hit = np.flatnonzero(held >= 0)
                act, candidate = points.activity[hit], rows[held[hit]]
                if kind:
                    act, candidate = outer_than(ops, act, candidate, outer)
                    mapped[act] = True
                outer[act] = candidate
    out: dict[Any, np.ndarray] = {}
    for k, outer, mapped in zip(classes, found, graph):
        out[k], out[k, "graph"] = outer, mapped
    return out


def class_ranges(ops: EventTable, klass: np.ndarray, rows: np.ndarray,
                 classes: tuple) -> list[tuple[np.ndarray, Columns, np.ndarray]]:
    """Per class, its ranges among ``rows``: their rows, thread, start, end and ``rangeId``, and
    their order outermost first (:func:`outer_first`)."""
    out = []
    for k in classes:
        members = rows[klass[rows] == k]
        columns = (ops["globalTid"][members], ops["start"][members], ops["end"][members], ops["rangeId"][members])
        out.append((members, columns, outer_first(*columns)))
    return out


def outer_than(ops: EventTable, act: np.ndarray, candidate: np.ndarray,
               found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The activities ``act`` whose ``candidate`` range is strictly outer than the one ``found``
    for them (or where none is), with those candidates."""
    held = np.maximum(found[act], 0)
    start, end, range_id = ops["start"], ops["end"], ops["rangeId"]
    same = start[candidate] == start[held]
    outer = start[candidate] < start[held]
    outer |= same & (end[candidate] > end[held])
    same &= end[candidate] == end[held]
    outer |= same & (range_id[candidate] < range_id[held])
    outer |= found[act] < 0
    return act[outer], candidate[outer]


def instance_ids(an: "Analysis", rows: np.ndarray, graph: np.ndarray, act: np.ndarray | None = None) -> np.ndarray:
    """Instance ids of (operator ``rows``, activity ``act``) links (-1: none), the rows after
    prefill/decode merging (:meth:`Analysis.operator_of`): the operator's row, or for
    graph-mapped links one instance per (operator, graph launch) above ``ops.rows + acts.rows``.
    ``act`` defaults to 0, 1, ..."""
    act = np.arange(len(rows)) if act is None else act
    out = rows.astype(np.int64)
    split = np.flatnonzero((rows >= 0) & graph)
    if len(split):
        index, _ = dense_group_ids([rows[split], an.acts["pid"][act[split]], an.acts["correlationId"][act[split]]])
        out[split] = an.ops.rows + an.acts.rows + index
    return out


def merge_prefill_decode(inputs: Inputs, ops: EventTable, texts: EventTable, parsed: Recognised,
                         launch: np.ndarray) -> tuple[EventTable, EventTable, tuple[np.ndarray, np.ndarray]]:
    """Pair each prefill attention range with the decode one that follows it on its thread
    with no launch (``launch``: the launching call rows of all activities, before range
    filters) in between; the decode range's operator becomes the prefill's, whose new text
    entry joins the two keys and names and adds up their work. Returns the pairs as
    :attr:`Analysis.merged` holds them."""
    rows = ranges_where(ops, texts, parsed.column(lambda p: p.family == "flash" and p.layer == LIBRARY, False, bool))
    if len(rows) < 2:
        return ops, texts, NOT_MERGED
    rows = rows[np.lexsort((ops["rangeId"][rows], ops["start"][rows], ops["globalTid"][rows]))]
    decode = parsed.column(lambda p: bool(p.params.get("decode")), False, bool)
    is_decode = decode[texts["parsed"][ops["entry"][rows]]]
    first, second = rows[:-1], rows[1:]
    cand = (ops["globalTid"][first] == ops["globalTid"][second]) & ~is_decode[:-1] & is_decode[1:]
    first, second = first[cand], second[cand]
    calls = runtime_calls(inputs)
    launched = np.zeros(calls.rows, dtype=bool)
    launched[launch[launch >= 0]] = True
    launched = np.flatnonzero(launched)
    hit, _ = enclosing_pairs(ops["globalTid"][first], ops["end"][first], ops["start"][second],
                             calls["globalTid"][launched], calls["start"][launched])
    clear = np.ones(len(first), dtype=bool)
    clear[hit] = False
    first, second = first[clear], second[clear]
    if len(first) == 0:
        return ops, texts, NOT_MERGED
    one, two = ops["entry"][first], ops["entry"][second]
    added = {k: v[one] for k, v in texts.items()}
    added["key"] = joined_ids(inputs.strings, texts["key"][one], texts["key"][two])
    added["display"] = joined_ids(inputs.strings, texts["display"][one], texts["display"][two])
    for k in WORK_FIELDS:
        added[k] = texts[k][one] + texts[k][two]
    entry = ops["entry"].copy()
    entry[first] = texts.rows + np.arange(len(first))
    by_decode = np.argsort(second)
    merged = (second[by_decode], first[by_decode])
    return ops.with_columns(entry=entry), EventTable.concat([texts, EventTable(added)]), merged
