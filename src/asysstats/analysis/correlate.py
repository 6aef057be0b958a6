"""Correlating HGTX ranges with PPU activities (docs/decisions.md D10, D11), all by sorted joins.

* An activity (kernel, memcpy, memset) links to its launching API call by
  ``(process, correlationId)``: a sort + ``searchsorted`` join with the runtime table.
* It correlates with every range on the call's thread whose ``[start, end)`` holds the
  call's start (:func:`asysstats.compute.intervals.enclosing_pairs`).
* With graph mapping, an activity run from a graph (``graphNodeId >= 0``) also correlates
  with the ranges holding the creation of its graph node: the node's creation row, followed
  back through ``originalGraphNodeId`` to the node it was cloned from (the captured one).

Results are index pairs, so memory is linear in the number of pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.hgtx import find_filter_range, trusted
from asysstats.analysis.launches import launch_rows, runtime_calls
from asysstats.analysis.reads import ACTIVITY_COLUMNS, NODE_COLUMNS, PPU_KINDS
from asysstats.compute.intervals import covered_length_sorted, enclosing_pairs
from asysstats.compute.keys import lookup, pair_key
from asysstats.core.tables import EventTable, empty_table, in_window

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs

JOINED = ("start", "end", "pid", "correlationId", "graphNodeId")  # ppu_activities: times, launch and graph node


@dataclass(frozen=True)
class Pairs:
    """Correlated (range row, activity row) pairs, each once; ``via_graph`` when only graph
    mapping links them (the launch call is not inside the range). Unordered: the direct
    pairs (per thread, range, launch time), then the graph-mapped ones."""

    range_row: np.ndarray
    activity_row: np.ndarray
    via_graph: np.ndarray


def graph_nodes(inputs: "Inputs") -> EventTable:
    """Every graph node creation (no time window: a node is only looked up by id)."""
    columns = inputs.reading("graph_nodes", NODE_COLUMNS)
    if not inputs.has("graph_nodes"):
        return empty_table(list(columns) + ["pid", "tid"])
    return inputs.whole("graph_nodes", columns)


def activity_table(inputs: "Inputs", name: str, columns: tuple[str, ...] = ACTIVITY_COLUMNS,
                   devices: tuple[int, ...] | None = None) -> EventTable:
    """One PPU activity table as ``Inputs.table`` gives it (no suspect events, inside the
    PPU-side window) plus ``row``, its row id in the report (1-based, as SQLite numbers
    rows), restricted to ``devices`` when given."""
    table = inputs.whole(name, columns)
    table = trusted(inputs, name, table.with_columns(row=np.arange(1, table.rows + 1)))
    table = in_window(table, inputs.ppu_window)
    if devices is not None:
        table = table.take(np.isin(table["deviceId"], np.asarray(devices, dtype=np.int64)))
    return table


def ppu_activities(inputs: "Inputs", devices: tuple[int, ...] | None = None) -> EventTable:
    """Kernels, memcpy and memset in one table of :data:`JOINED` and ``kind`` (position in
    ``PPU_KINDS``): the columns the joined table is used for, since joining copies them (the
    tables themselves are mapped from the cache)."""
    parts = []
    for kind, name in enumerate(PPU_KINDS):
        if inputs.has(name):
            part = activity_table(inputs, name, ACTIVITY_COLUMNS, devices)
            parts.append(part.with_columns(kind=np.full(part.rows, kind, np.int8)))
    if not parts:
        return empty_table([*JOINED, "kind"])
    return EventTable.concat(parts, (*JOINED, "kind"))


def creation_rows(nodes: EventTable, activities: EventTable) -> np.ndarray:
    """Row of the creation of each graph-run activity's original graph node, or -1: from the
    node with the activity's ``graphNodeId``, back through ``originalGraphNodeId`` to nodes
    created earlier (a clone is made after its original, which also rules out cycles)."""
    keys = pair_key(nodes["pid"], nodes["graphNodeId"])
    row = lookup(keys, pair_key(activities["pid"], activities["graphNodeId"]))
    row[activities["graphNodeId"] < 0] = -1
    origin = lookup(keys, pair_key(nodes["pid"], nodes["originalGraphNodeId"]))
    origin[nodes["originalGraphNodeId"] < 0] = -1
    earlier = origin >= 0
    earlier[earlier] = nodes["start"][origin[earlier]] < nodes["start"][earlier]
    origin[~earlier] = -1
    live = np.flatnonzero(row >= 0)
    while len(live):  # ends: creation times fall strictly along every chain
        up = origin[row[live]]
        live = live[up >= 0]
        row[live] = up[up >= 0]
    return row


def correlate(inputs: "Inputs", ranges: EventTable, activities: EventTable, graph_mapping: bool = True,
              launch: np.ndarray | None = None) -> Pairs:
    """Every (range, activity) pair of docs/decisions.md D11; a pair found both ways is direct.
    ``launch``: the activities' :func:`launch_rows`, when the caller has them."""
    calls = runtime_calls(inputs)
    launch = launch_rows(calls, activities) if launch is None else launch
    have = np.flatnonzero(launch >= 0)
    r, p = enclosing_pairs(ranges["globalTid"], ranges["start"], ranges["end"],
                           calls["globalTid"][launch[have]], calls["start"][launch[have]])
    a = have[p]
    del p
    graph = np.zeros(len(r), dtype=bool)
    if graph_mapping and (activities["graphNodeId"] >= 0).any():
        nodes = graph_nodes(inputs)
        created = creation_rows(nodes, activities)
        have = np.flatnonzero(created >= 0)
        gr, gp = enclosing_pairs(ranges["globalTid"], ranges["start"], ranges["end"],
                                 nodes["globalTid"][created[have]], nodes["start"][created[have]])
        ga = have[gp]
        graph_run = np.zeros(activities.rows, dtype=bool)
        graph_run[ga] = True
        fresh = ~sorted_member(np.sort(pair_key(r[graph_run[a]], a[graph_run[a]])), pair_key(gr, ga))
        r = np.concatenate([r, gr[fresh]])
        a = np.concatenate([a, ga[fresh]])
        graph = np.concatenate([graph, np.ones(int(fresh.sum()), dtype=bool)])
    return Pairs(r, a, graph)


def sorted_member(pool: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``np.isin(values, pool)`` for a sorted ``pool``, by binary search."""
    if len(pool) == 0:
        return np.zeros(len(values), dtype=bool)
    return pool[np.minimum(np.searchsorted(pool, values), len(pool) - 1)] == values


@dataclass(frozen=True)
class Projection:
    """Per range: the number of correlated activities, the first start and last end of
    them (0 for a range with none) and the length of their union (``active``)."""

    count: np.ndarray
    start: np.ndarray
    end: np.ndarray
    active: np.ndarray


def project(pairs: Pairs, activities: EventTable, n_ranges: int) -> Projection:
    """Project ranges onto the PPU: span and busy time of their correlated activities.

    The pairs are ordered by (range, activity start) through one packed-key ``np.sort``
    (in place; each temporary the size of the pairs is freed once used, and ``pairs`` too
    when the caller holds no other reference)."""
    count = np.bincount(pairs.range_row, minlength=n_ranges).astype(np.int64)
    start = np.zeros(n_ranges, np.int64)
    end = np.zeros(n_ranges, np.int64)
    if len(pairs.range_row) == 0:
        return Projection(count, start, end, np.zeros(n_ranges, np.int64))
    n = activities.rows
    by_start = np.argsort(activities["start"], kind="stable")
    if n_ranges * n < 1 << 62:
        rank = np.empty(n, np.int64)
        rank[by_start] = np.arange(n)
        key = pairs.range_row * n
        key += rank[pairs.activity_row]
        del rank, pairs
        key.sort(kind="stable")
        r = key // n
        np.remainder(key, n, out=key)
        a = by_start[key]
        del key
    else:
        order = np.lexsort((activities["start"][pairs.activity_row], pairs.range_row))
        r, a = pairs.range_row[order], pairs.activity_row[order]
        del order, pairs
    del by_start
    s = activities["start"][a]
    e = np.maximum(activities["end"][a], s)
    del a
    first = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    start[r[first]] = s[first]
    end[r[first]] = np.maximum.reduceat(e, first)
    return Projection(count, start, end, covered_length_sorted(r, s, e, n_ranges))


def filter_windows(inputs: "Inputs", spec: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``--filter-hgtx``: the named ranges' own span, first start to last end (for CPU-side
    events), and their projection, first to last correlated PPU activity (for PPU-side
    events). Ranges with no correlated activity project onto their own span. ``inputs``:
    the engine's view (the windows are the run's, not a rule's)."""
    found = find_filter_range(inputs, spec)
    cpu = (int(found["start"].min()), int(found["end"].max()))
    parts = [inputs.whole(k, ACTIVITY_COLUMNS) for k in PPU_KINDS if inputs.has(k)]
    if not parts:
        return cpu, cpu
    activities = EventTable.concat(parts)
    pairs = correlate(inputs, found, activities)
    if len(pairs.activity_row) == 0:
        return cpu, cpu
    proj = project(pairs, activities, found.rows)
    projected = proj.count > 0
    return cpu, (int(proj.start[projected].min()), int(proj.end[projected].max()))
