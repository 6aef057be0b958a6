"""Operator instances of the flat rules (sum, type sum, trace, unit test) and their groups.

Every analysed activity is claimed by at most one operator (the order of
:mod:`analysis`). An annotated operator instance is one range (a graph-mapped range:
one per graph launch; a prefill+decode pair: one); an operator recognised from a kernel
name, or an ``others`` kernel, is one kernel. An instance lasts from its first activity's
start to its last activity's end. Instances with equal type and merge key form a group,
shown with the name of its earliest instance; its PPU active time is the union of its
activities on each device. Only the instances of the types ``op=`` lists are kept;
``total`` is the time of all instances, what percentages are of.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from asysstats.analysis.operators.analysis import Analysis, instance_ids, row_type
from asysstats.analysis.operators.catalog import OTHERS
from asysstats.analysis.operators.model import DEFAULT_FIELD, peak_arrays
from asysstats.analysis.operators.parsers import CUSTOM, FRAMEWORK_CLAIM, LIBRARY_CLAIM
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import group_heads, grouped_stats
from asysstats.compute.intervals import covered_length_by_group
from asysstats.core.tables import EventTable

NS = 1e-9


def claims(an: Analysis, outer: dict) -> tuple[np.ndarray, np.ndarray]:
    """Per activity: the claiming operator range (row of ``an.ops`` after prefill/decode
    merging; -1 for a kernel-level operator or none) and the instance id (-1: unclaimed), from
    the outermost operator ranges of each claim class (``outer``)."""
    acts, n = an.acts, an.ops.rows
    kernel_op = acts["ktype"] >= 0
    steps = [kernel_op & acts["kcustom"], CUSTOM, LIBRARY_CLAIM, kernel_op, FRAMEWORK_CLAIM]
    if an.types.others:
        steps.append(acts["kind"] == 0)
    decided = np.zeros(acts.rows, dtype=bool)
    kernel = np.zeros(acts.rows, dtype=bool)
    rows = np.full(acts.rows, -1, dtype=row_type(n))
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
    operator = an.operator_of(rows)
    inst = instance_ids(an, operator, graph)
    inst[kernel] = n + np.flatnonzero(kernel)
    return operator.astype(rows.dtype), inst


@dataclass
class Instances:
    """``table``: one row per instance (``type``, ``key``, ``display``, ``opid``, ``start``,
    ``end``, ``device``, ``source`` (range row or -1), ``holder`` and ``shares`` (:func:`work`));
    ``act``: the claimed activities' rows of ``an.acts``, each instance's earliest first;
    ``label``: their instance;
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
    """The instances of the claimed activities, their activities (``act``, ``label``) each
    instance's earliest first; made once per analysis (the rules of a comparison share them)."""
    return an.shared("flat instances", lambda: made_instances(an))


def made_instances(an: Analysis) -> Instances:
    outer = an.outermost_by_claim()
    rows, claim = claims(an, outer)
    framework_of = outer[FRAMEWORK_CLAIM]  # of each activity: all the rest needs of the claim classes
    del outer
    acts, operators = an.acts, an.texts.rows > 0
    kept = row_type(acts.rows)  # rows of activities, numbers of instances: kept while the rule runs
    act = np.flatnonzero(claim >= 0).astype(kept)
    label = distinct(claim[act])[1].astype(kept)
    del claim
    order = np.lexsort((acts["aid"][act], acts["start"][act], label))
    act, label = act[order], label[order]
    del order
    n = int(label[-1]) + 1 if len(label) else 0
    first = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(label, minlength=n), out=first[1:])
    kernel = act[first[:-1]]  # the first activity of each instance
    start = acts["start"][kernel]
    last_end = np.maximum.reduceat(np.maximum(acts["end"][act], acts["start"][act]), first[:-1]) if n else start
    source = rows[kernel]
    del rows
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
    framework = framework_of[kernel] if operators else np.full(n, -1)
    del framework_of
    inside = ~ranged & (framework >= 0) & (acts["ktype"][kernel] >= 0) & ~acts["kcustom"][kernel]

    def named(column: str) -> np.ndarray:
        fallback = np.where(inside, an.op(column, np.maximum(framework, 0)), acts["raw"][kernel]) if operators \
            else acts["raw"][kernel]
        return pick(column, fallback)

    # Such kernels share the framework operator's modelled work (most often it launched one):
    # ``holder`` and ``shares``, from which :func:`work` makes the work columns when read.
    held_type = row_type(max(an.ops.rows, n))
    holder = np.where(inside, framework, -1).astype(held_type)
    held = np.maximum(holder, 0)
    shares = np.where(inside, np.bincount(held[inside], minlength=an.ops.rows)[held], 0).astype(held_type) \
        if operators else np.zeros(n, held_type)
    del held
    table = {"type": pick("type", ktype), "key": named("key"),
             "display": named("display"), "opid": pick("rangeId", acts["aid"][kernel]),
             "start": start, "end": last_end, "device": acts["deviceId"][kernel], "source": source.astype(held_type),
             "holder": holder, "shares": shares}
    every = Instances(EventTable(table), act, label, float((last_end - start).sum()))
    return every.listed(an.listed(table["type"]))


def work(an: Analysis, inst: Instances, column: str) -> np.ndarray:
    """Per instance its modelled ``flops``, ``load`` or ``store`` (NaN when unmodelled) or its
    peak ``field``: its operator range's, or for a kernel inside a framework operator
    (``holder``) that operator's, the work split between the ``shares`` such kernels. Made when
    read, not kept."""
    t = inst.table
    if an.texts.rows == 0:
        return np.full(t.rows, DEFAULT_FIELD) if column == "field" else np.full(t.rows, np.nan)
    holder, source = t["holder"], t["source"]
    values = an.op(column, np.maximum(holder, 0))
    if column != "field":
        values = values / np.maximum(t["shares"], 1)
    values[holder < 0] = DEFAULT_FIELD if column == "field" else np.nan
    ranged = source >= 0
    values[ranged] = an.op(column, source[ranged])
    return values


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
        return group_heads(self.label, self.count, [t["start"], t["opid"]])

    @functools.cached_property
    def active(self) -> np.ndarray:
        return union_per_device(self.an, self.inst, self.label[self.inst.label], self.count)


def group_instances(an: Analysis, inst: Instances, keys: list[np.ndarray]) -> Grouped:
    t = inst.table
    groups, stats = grouped_stats(keys, t["end"] - t["start"])
    return Grouped(an, inst, groups.keys, groups.label() if t.rows else np.empty(0, np.int64), stats)


def union_per_device(an: Analysis, inst: Instances, group_of_act: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group: the union of its activities on each device, summed over devices; a device at a
    time, so that what is gathered and sorted is one device's."""
    devices, device = distinct(an.acts["deviceId"][inst.act], narrow=True)
    out = np.zeros(n_groups, dtype=np.int64)
    for index in range(len(devices)):  # a loop over devices
        on = np.flatnonzero(device == index)
        rows = inst.act[on]
        starts = an.acts["start"][rows]
        out += covered_length_by_group(group_of_act[on], starts, np.maximum(an.acts["end"][rows], starts), n_groups)
    return out


def utilisation(an: Analysis, inst: Instances, label: np.ndarray, n_groups: int) -> dict[str, np.ndarray]:
    """Per group: 100 x sum(work / peak) / sum(time) for compute, HBM load and HBM store."""
    t = inst.table
    seconds = np.bincount(label, weights=(t["end"] - t["start"]) * NS, minlength=n_groups)
    values = work(an, inst, "flops")
    peak, bandwidth = peak_arrays(an.inputs, t["device"], work(an, inst, "field"), ~np.isnan(values))
    out = {}
    for column, divisor in (("flops", peak), ("load", bandwidth), ("store", bandwidth)):
        if column != "flops":
            values = work(an, inst, column)  # one work column at a time
        used = np.bincount(label, weights=values / divisor, minlength=n_groups) if t.rows else np.zeros(n_groups)
        del values
        with np.errstate(divide="ignore", invalid="ignore"):
            out[column] = np.where(seconds > 0, 100.0 * used / seconds, np.nan)
    return out
