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
    n = len(uniq)
    s, e = an.acts["start"][idx], np.maximum(an.acts["end"][idx], an.acts["start"][idx])
    pos = np.flatnonzero(has)
    order = pos[group_start_order(label[pos], s[pos])]
    head = order[np.r_[True, label[order][1:] != label[order][:-1]]] if len(order) else order
    end = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(end, label[pos], e[pos])
    return Spans(label, operator[head], s[head], end, covered_length_sorted(label[order], s[order], e[order], n), head)


@dataclass
class Breakdown:
    """Rows at three levels. ``f``: per F group (``type``, ``key``, ``name``, ``time``,
    ``count``); ``l``: per L group (``f`` index, ``key``, ``name``, ``time``, ``count``);
    ``k``: per kernel row (``l`` index, ``name``, ``time``, ``count``); ``lib``: per L
    instance its ``group``, range ``row``, ``device`` and ``span``; ``total``: the
    top-level time."""

    f: dict[str, np.ndarray]
    l: dict[str, np.ndarray]
    k: dict[str, np.ndarray]
    lib: dict[str, np.ndarray]
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
    F, L = spans(an, idx, "F"), spans(an, idx, "L")
    s = acts["start"][idx]
    e = np.maximum(acts["end"][idx], s)
    # per activity: its F group (type, key) and its L key
    own_type = at(an.op("type", L.row), L.label, kernel_type[idx])
    f_type = at(an.op("type", F.row), F.label, own_type)
    f_key = at(an.op("key", F.row), F.label, NATIVE)
    l_key = at(an.op("key", L.row), L.label, NATIVE)
    l_parent = F.label[L.head]  # F instance of each L instance (-1: top level)
    bare = (F.label < 0) & (L.label < 0)  # top-level kernels
    native = L.label < 0
    # idle time: F instances minus their children, L instances minus their activities
    child = np.r_[l_parent, F.label[native]]
    child_s, child_e = np.r_[L.start, s[native]], np.r_[L.end, e[native]]
    inside = child >= 0
    f_idle = (F.end - F.start) - covered_length_by_group(child[inside], child_s[inside], child_e[inside], len(F.start))
    l_idle = (L.end - L.start) - L.active
    loose = l_parent < 0
    f_items = {"type": np.r_[f_type[F.head], own_type[L.head][loose], f_type[bare]],
               "key": np.r_[f_key[F.head], np.full(int(loose.sum() + bare.sum()), NATIVE)],
               "time": np.r_[F.end - F.start, (L.end - L.start)[loose], (e - s)[bare]],
               "start": np.r_[F.start, L.start[loose], s[bare]],
               "display": np.r_[an.op("display", F.row), np.full(int(loose.sum() + bare.sum()), native_id)]}
    _, f = summarise(f_items, ("type", "key"))
    f["name"] = f["display"]
    f_of_act = row_index([f["type"], f["key"]], [f_type, f_key])
    idle = f_idle > 0
    l_items = {"f": np.r_[f_of_act[L.head], f_of_act[native], f_of_act[F.head][idle]],
               "key": np.r_[l_key[L.head], np.full(int(native.sum()), NATIVE), np.full(int(idle.sum()), IDLE)],
               "time": np.r_[L.end - L.start, (e - s)[native], f_idle[idle]],
               "start": np.r_[L.start, s[native], F.start[idle]],
               "display": np.r_[an.op("display", L.row), np.full(int(native.sum()), native_id),
                                np.full(int(idle.sum()), idle_id)]}
    l_group, l = summarise(l_items, ("f", "key"))
    l["name"] = l["display"]
    l_of_act = row_index([l["f"], l["key"]], [f_of_act, l_key])
    lib_group = l_group[:len(L.start)]
    gap = l_idle > 0
    k_items = {"l": np.r_[l_of_act, lib_group[gap]], "name": np.r_[acts["name"][idx], np.full(int(gap.sum()), idle_id)],
               "time": np.r_[e - s, l_idle[gap]], "start": np.r_[s, L.start[gap]]}
    k_items["display"] = k_items["name"]
    _, k = summarise(k_items, ("l", "name"))
    lib = {"group": lib_group, "row": L.row, "device": acts["deviceId"][idx][L.head], "span": L.end - L.start}
    return Breakdown(f, l, k, lib, float(f_items["time"].sum())), f_type


def summarise(items: dict[str, np.ndarray], keys: tuple[str, ...]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Group items by ``keys``: per group the keys, ``time`` sum, ``count`` and the
    ``display`` of its earliest item; returns each item's group too."""
    label, values = dense_group_ids([items[k] for k in keys])
    count = len(values[0])
    out = dict(zip(keys, values))
    out["time"] = np.bincount(label, weights=items["time"], minlength=count)
    out["count"] = np.bincount(label, minlength=count).astype(np.int64)
    out["display"] = items["display"][group_heads(label, count, [items["start"]])]
    return label, out

