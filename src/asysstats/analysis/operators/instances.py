"""Operator instances of the flat rules (sum, type sum, trace, unit test) and their groups.

Every analysed activity is claimed by at most one operator (the order of
:mod:`analysis`). An annotated operator instance is one range (a graph-mapped range:
one per graph launch; a prefill+decode pair: one); an operator recognised from a kernel
name, or an ``others`` kernel, is one kernel. An instance lasts from its first activity's start to its last activity's end; its
PPU active time is the union of its activities. Instances with equal type and merge key
form a group, shown with the name of its earliest instance. Only the instances of the types
``op=`` lists are kept; ``total`` is the time of all instances, what percentages are of.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from asysstats.analysis.operators.analysis import Analysis, instance_ids
from asysstats.analysis.operators.catalog import OTHERS
from asysstats.analysis.operators.model import DEFAULT_FIELD, WORK_FIELDS, peak_arrays
from asysstats.analysis.operators.parsers import CUSTOM, FRAMEWORK_CLAIM, LIBRARY_CLAIM
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import grouped_stats
from asysstats.compute.intervals import covered_length_by_group, covered_length_sorted
from asysstats.core.tables import EventTable

NS = 1e-9


def claims(an: Analysis) -> tuple[np.ndarray, np.ndarray]:
    """Per activity: the claiming operator range (row of ``an.ops`` after prefill/decode
    merging; -1 for a kernel-level operator or none) and the instance id (-1: unclaimed)."""
    acts, n, outer = an.acts, an.ops.rows, an.by_claim
    kernel_op = acts["ktype"] >= 0
    steps = [kernel_op & acts["kcustom"], CUSTOM, LIBRARY_CLAIM, kernel_op, FRAMEWORK_CLAIM]
    if an.types.others:
        steps.append(acts["kind"] == 0)
    decided = np.zeros(acts.rows, dtype=bool)
    kernel = np.zeros(acts.rows, dtype=bool)
    rows = np.full(acts.rows, -1, dtype=np.int64)
    graph = np.zeros(acts.rows, dtype=bool)
    for step in steps:
        if isinstance(step, np.ndarray):
            take = ~decided & step
            kernel |= take
        else:
            take = ~decided & (outer[step] >= 0)
            rows[take] = outer[step][take]
            graph[take] = outer[step, "graph"][take]
        decided |= take
    inst = instance_ids(an, rows, graph)
    inst[kernel] = n + np.flatnonzero(kernel)
    rows = np.where(rows >= 0, an.merged_into[np.maximum(rows, 0)], -1) if n else rows
    return rows, inst


@dataclass
class Instances:
    """``table``: one row per instance (``type``, ``key``, ``display``, ``opid``, ``start``,
    ``end``, ``active``, ``device``, ``pid``, ``source`` (range row or -1), work columns and
    ``field``);
    ``act``: the claimed activities' rows of ``an.acts``; ``label``: their instance;
    ``total``: the summed duration of the instances of every type, listed or not."""

    table: EventTable
    act: np.ndarray
    label: np.ndarray
    total: float

    def listed(self, keep: np.ndarray) -> "Instances":
        """The instances ``keep`` marks, with their activities (``total`` unchanged)."""
        if keep.all():
            return self
        number = np.cumsum(keep) - 1
        claimed = keep[self.label]
        return Instances(self.table.take(keep), self.act[claimed], number[self.label[claimed]], self.total)


def flat_instances(an: Analysis) -> Instances:
    rows, claim = claims(an)
    act = np.flatnonzero(claim >= 0)
    ids, label = distinct(claim[act])
    del claim
    acts, operators = an.acts, an.texts.rows > 0
    start = acts["start"][act]
    end = np.maximum(acts["end"][act], start)
    n = len(ids)
    order = np.lexsort((acts["aid"][act], start, label))  # each instance's activities, earliest first
    first = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(label, minlength=n), out=first[1:])
    start, end = start[order], end[order]
    active = covered_length_sorted(np.repeat(np.arange(n), np.diff(first)), start, end, n)
    last_end = np.maximum.reduceat(end, first[:-1]) if n else end[:0]
    del end
    head = order[first[:-1]]
    start = start[first[:-1]]
    kernel = act[head]  # the first activity of each instance
    source = rows[kernel]
    ranged = source >= 0
    row = np.maximum(source, 0)
    others = an.inputs.strings.intern([OTHERS])[0]
    ktype = np.where(acts["ktype"][kernel] >= 0, acts["ktype"][kernel], others)

    def pick(column: str, fallback: np.ndarray) -> np.ndarray:
        return np.where(ranged, an.op(column, row), fallback) if operators else fallback

    # A kernel recognised by a built-in kernel-name type inside a framework operator (a GEMM
    # under aten::linear) is named and keyed by that operator, so that the same operator
    # matches across vendors whose kernels differ. A ``T=kernel:`` custom type keeps the
    # kernel's name: the user chose those kernels by it (docs/operators.md).
    framework = an.by_claim[FRAMEWORK_CLAIM][kernel] if operators else np.full(n, -1)
    inside = ~ranged & (framework >= 0) & (acts["ktype"][kernel] >= 0) & ~acts["kcustom"][kernel]

    def named(column: str) -> np.ndarray:
        fallback = np.where(inside, an.op(column, np.maximum(framework, 0)), acts["raw"][kernel]) if operators \
            else acts["raw"][kernel]
        return pick(column, fallback)

    table = {"type": pick("type", ktype), "key": named("key"),
             "display": named("display"), "opid": pick("rangeId", acts["aid"][kernel]),
             "start": start, "end": last_end, "active": active,
             "device": acts["deviceId"][kernel], "pid": acts["pid"][kernel], "source": source}
    # Such kernels share the framework operator's modelled work (most often it launched one).
    holder = np.maximum(framework, 0)
    shares = np.bincount(holder[inside], minlength=an.ops.rows)[holder] if operators else np.ones(n)
    for column in WORK_FIELDS:
        held = np.where(inside, an.op(column, holder) / np.maximum(shares, 1), np.nan) if operators \
            else np.full(n, np.nan)
        table[column] = pick(column, held).astype(np.float64)
    table["field"] = pick("field", np.where(inside, an.op("field", holder), DEFAULT_FIELD) if operators
                          else np.full(n, DEFAULT_FIELD))
    every = Instances(EventTable(table), act, label, float((last_end - start).sum()))
    return every.listed(an.listed(table["type"]))


@dataclass
class Grouped:
    """Instances grouped by keys: ``label`` per instance and ``stats`` of durations; when
    first read, the earliest instance of each group (``first``) and per-device union
    ``active`` time."""

    an: Analysis
    inst: Instances
    keys: tuple[np.ndarray, ...]
    label: np.ndarray
    stats: dict[str, np.ndarray]

    @property
    def count(self) -> int:
        return len(self.stats["count"])

    @functools.cached_property
    def first(self) -> np.ndarray:
        t = self.inst.table
        order = np.lexsort((t["opid"], t["start"], self.label))
        return order[np.r_[True, self.label[order][1:] != self.label[order][:-1]]] if len(order) else order

    @functools.cached_property
    def active(self) -> np.ndarray:
        return union_per_device(self.an, self.inst, self.label[self.inst.label], self.count)


def group_instances(an: Analysis, inst: Instances, keys: list[np.ndarray]) -> Grouped:
    t = inst.table
    groups, stats = grouped_stats(keys, t["end"] - t["start"])
    return Grouped(an, inst, groups.keys, groups.label() if t.rows else np.empty(0, np.int64), stats)


def union_per_device(an: Analysis, inst: Instances, group_of_act: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: the union of its activities on each device, summed over devices."""
    devices, device_index = distinct(an.acts["deviceId"][inst.act])
    starts = an.acts["start"][inst.act]
    ends = np.maximum(an.acts["end"][inst.act], starts)
    key = group_of_act * max(len(devices), 1) + device_index
    per = covered_length_by_group(key, starts, ends, n_groups * max(len(devices), 1))
    return per.reshape(n_groups, max(len(devices), 1)).sum(axis=1)


def utilisation(an: Analysis, inst: Instances, label: np.ndarray, n_groups: int) -> dict[str, np.ndarray]:
    """Per group: 100 x sum(work / peak) / sum(time) for compute, HBM load and HBM store."""
    t = inst.table
    modelled = ~np.isnan(t["flops"])
    peak, bandwidth = peak_arrays(an.inputs, t["device"], t["field"], modelled)
    seconds = np.bincount(label, weights=(t["end"] - t["start"]) * NS, minlength=n_groups)
    out = {}
    for column, divisor in (("flops", peak), ("load", bandwidth), ("store", bandwidth)):
        used = np.bincount(label, weights=t[column] / divisor, minlength=n_groups) if t.rows else np.zeros(n_groups)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[column] = np.where(seconds > 0, 100.0 * used / seconds, np.nan)
    return out
