"""The layered breakdown: framework (F), library (L) and kernel (K) operators.

Every analysed activity has at most one operator per layer: the outermost correlated
framework range (PyTorch, ``D_MoE``, an hgtx-matched custom type), the outermost library
range (acBLAS, DeepGEMM, FlashAttention, FlashMLA, MoE, PCCL) and itself, the kernel
(recognised by name or not). Activities with no operator at any layer are left out unless
``op=`` lists ``others``. An operator instance spans its activities; a graph-mapped range
has one instance per graph launch.

* A row's OP Type is that of its top-level operator (F, else L, else the kernel's type).
* ``Native`` stands for a missing parent: the L slot of activities without a library
  operator (each such activity is one Native instance) and the F slot of top-level L
  operators and kernels (one Native F group per type).
* ``Idle``: inside an F instance, the time no child (L instance or Native activity) runs;
  inside an L instance, the time none of its activities runs (kernel layer).
* Total Time = the sum of the top-level items (F instances, L instances without an F,
  kernels without both); every percentage is of it.
* ``op=`` keeps the rows whose OP Type it lists (a top-level item and all below it); Total
  Time stays that of every type, so that the rows kept are those of the unfiltered table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from asysstats.analysis.activity import row_index
from asysstats.analysis.operators.analysis import Analysis, instance_ids
from asysstats.analysis.operators.catalog import OTHERS
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import dense_group_ids, group_heads
from asysstats.compute.intervals import covered_length_by_group, covered_length_sorted, group_start_order

NATIVE, IDLE = -2, -3  # L-slot keys of Native and Idle rows (real keys are string ids >= 0)


@dataclass
class Spans:
    """Instances of one layer: ``label`` per activity (-1 none), per instance ``row`` (the
    operator range), ``start``, ``end``, ``active`` and ``head`` (its first activity)."""

    label: np.ndarray
    row: np.ndarray
    start: np.ndarray
    end: np.ndarray
    active: np.ndarray
    head: np.ndarray


def spans(an: Analysis, idx: np.ndarray, layer: str) -> Spans:
    rows, graph = an.by_layer[layer][idx], an.by_layer[layer, "graph"][idx]
    operator = an.operator_of(rows)
    ids = instance_ids(an, operator, graph, idx)
    has = ids >= 0
    uniq, label_has = distinct(ids[has])
    label = np.full(len(idx), -1, dtype=np.int64)
    label[has] = label_has
    count = len(uniq)
    start, end = an.acts["start"][idx], np.maximum(an.acts["end"][idx], an.acts["start"][idx])
    pos = np.flatnonzero(has)
    order = pos[group_start_order(label[pos], start[pos])]
    head = order[np.r_[True, label[order][1:] != label[order][:-1]]] if len(order) else order
    instance_end = np.full(count, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(instance_end, label[pos], end[pos])
    return Spans(label, operator[head], start[head], instance_end,
                 covered_length_sorted(label[order], start[order], end[order], count), head)


@dataclass
class Breakdown:
    """Rows at three levels. ``framework``: per F group (``type``, ``key``, ``name``,
    ``time``, ``count``); ``library``: per L group (``framework`` group index, ``key``,
    ``name``, ``time``, ``count``); ``kernel``: per kernel row (``library`` group index,
    ``name``, ``time``, ``count``); ``library_instances``: per L instance its ``group``,
    range ``row``, ``device`` and ``span``; ``total``: the top-level time."""

    framework: dict[str, np.ndarray]
    library: dict[str, np.ndarray]
    kernel: dict[str, np.ndarray]
    library_instances: dict[str, np.ndarray]
    total: float


def at(values: np.ndarray, label: np.ndarray, fallback: np.ndarray | int) -> np.ndarray:
    """``values[label]`` where ``label >= 0``, else ``fallback``."""
    picked = values[np.maximum(label, 0)] if len(values) else np.zeros(len(label), np.int64)
    return np.where(label >= 0, picked, fallback)


def breakdown(an: Analysis) -> Breakdown:
    """The breakdown of the OP Types ``op=`` lists, its Total Time that of every type."""
    acts = an.acts
    kernels = (acts["ktype"] >= 0) | (an.types.others & (acts["kind"] == 0))
    idx = np.flatnonzero((an.by_layer["F"] >= 0) | (an.by_layer["L"] >= 0) | kernels)
    whole, top_type = layered(an, idx)
    keep = an.listed(top_type)
    if keep.all():
        return whole
    return replace(layered(an, idx[keep])[0], total=whole.total)


def layered(an: Analysis, idx: np.ndarray) -> tuple[Breakdown, np.ndarray]:
    """The breakdown of the activities ``idx``, and the OP Type (top-level type) of each."""
    acts, pool = an.acts, an.inputs.strings
    native_id, idle_id = pool.intern(["Native", "Idle"])
    kernel_type = np.where(acts["ktype"] >= 0, acts["ktype"], pool.intern([OTHERS])[0])
    framework_spans, library_spans = spans(an, idx, "F"), spans(an, idx, "L")
    start = acts["start"][idx]
    end = np.maximum(acts["end"][idx], start)
    # per activity: its F group (type, key) and its L key
    own_type = at(an.op("type", library_spans.row), library_spans.label, kernel_type[idx])
    framework_type = at(an.op("type", framework_spans.row), framework_spans.label, own_type)
    framework_key = at(an.op("key", framework_spans.row), framework_spans.label, NATIVE)
    library_key = at(an.op("key", library_spans.row), library_spans.label, NATIVE)
    library_parent = framework_spans.label[library_spans.head]  # F instance of each L instance (-1: top level)
    bare = (framework_spans.label < 0) & (library_spans.label < 0)  # top-level kernels
    native = library_spans.label < 0
    # idle time: F instances minus their children, L instances minus their activities
    child = np.r_[library_parent, framework_spans.label[native]]
    child_start, child_end = np.r_[library_spans.start, start[native]], np.r_[library_spans.end, end[native]]
    inside = child >= 0
    framework_idle = (framework_spans.end - framework_spans.start) - covered_length_by_group(
        child[inside], child_start[inside], child_end[inside], len(framework_spans.start))
    library_idle = (library_spans.end - library_spans.start) - library_spans.active
    loose = library_parent < 0
    framework_items = {
        "type": np.r_[framework_type[framework_spans.head], own_type[library_spans.head][loose], framework_type[bare]],
        "key": np.r_[framework_key[framework_spans.head], np.full(int(loose.sum() + bare.sum()), NATIVE)],
        "time": np.r_[framework_spans.end - framework_spans.start, (library_spans.end - library_spans.start)[loose],
                      (end - start)[bare]],
        "start": np.r_[framework_spans.start, library_spans.start[loose], start[bare]],
        "display": np.r_[an.op("display", framework_spans.row), np.full(int(loose.sum() + bare.sum()), native_id)]}
    _, framework = summarise(framework_items, ("type", "key"))
    framework["name"] = framework["display"]
    framework_of_act = row_index([framework["type"], framework["key"]], [framework_type, framework_key])
    idle = framework_idle > 0
    library_items = {
        "framework": np.r_[framework_of_act[library_spans.head], framework_of_act[native],
                           framework_of_act[framework_spans.head][idle]],
        "key": np.r_[library_key[library_spans.head], np.full(int(native.sum()), NATIVE),
                     np.full(int(idle.sum()), IDLE)],
        "time": np.r_[library_spans.end - library_spans.start, (end - start)[native], framework_idle[idle]],
        "start": np.r_[library_spans.start, start[native], framework_spans.start[idle]],
        "display": np.r_[an.op("display", library_spans.row), np.full(int(native.sum()), native_id),
                         np.full(int(idle.sum()), idle_id)]}
    library_group, library = summarise(library_items, ("framework", "key"))
    library["name"] = library["display"]
    library_of_act = row_index([library["framework"], library["key"]], [framework_of_act, library_key])
    instance_group = library_group[:len(library_spans.start)]
    gap = library_idle > 0
    kernel_items = {"library": np.r_[library_of_act, instance_group[gap]],
                    "name": np.r_[acts["name"][idx], np.full(int(gap.sum()), idle_id)],
                    "time": np.r_[end - start, library_idle[gap]], "start": np.r_[start, library_spans.start[gap]]}
    kernel_items["display"] = kernel_items["name"]
    _, kernel = summarise(kernel_items, ("library", "name"))
    library_instances = {"group": instance_group, "row": library_spans.row,
                         "device": acts["deviceId"][idx][library_spans.head],
                         "span": library_spans.end - library_spans.start}
    return Breakdown(framework, library, kernel, library_instances,
                     float(framework_items["time"].sum())), framework_type


def summarise(items: dict[str, np.ndarray], keys: tuple[str, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Group items by ``keys``: per group the keys, ``time`` sum, ``count`` and the
    ``display`` of its earliest item; returns each item's group too."""
    label, values = dense_group_ids([items[key] for key in keys])
    count = len(values[0])
    out = dict(zip(keys, values))
    out["time"] = np.bincount(label, weights=items["time"], minlength=count)
    out["count"] = np.bincount(label, minlength=count).astype(np.int64)
    out["display"] = items["display"][group_heads(label, count, [items["start"]])]
    return label, out

