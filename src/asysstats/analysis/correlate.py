"""Correlating HGTX ranges with PPU activities (docs/decisions.md D10, D11), all by sorted joins.

* An activity (kernel, memcpy, memset) links to its launching API call by
  ``(process, correlationId)``: a sort + ``searchsorted`` join with the runtime table.
* It correlates with every range on the call's thread whose ``[start, end)`` holds the
  call's start (:func:`asysstats.compute.intervals.enclosing_pairs`).
* With graph mapping, an activity run from a graph (``graphNodeId >= 0``) also correlates
  with the ranges holding the creation of its graph node: the node's creation row, followed
  back through ``originalGraphNodeId`` to the node it was cloned from (the captured one).

Results are index pairs, so memory is linear in the number of pairs; past a size, ranges are
linked a set at a time (:class:`Anchors`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from asysstats.analysis.hgtx import find_filter_range, trusted
from asysstats.analysis.launches import launch_rows, runtime_calls
from asysstats.analysis.reads import ACTIVITY_COLUMNS, NODE_COLUMNS, PPU_KINDS
from asysstats.compute.distinct import distinct_sorted
from asysstats.compute.intervals import covered_length_sorted, enclosing_pairs, group_order, group_slices
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


# anchors (launch calls, graph node creations) whose links are made in one pass: past it, a
# set of whole threads at a time (the 5 M-kernel sample holds 5.1 M, linked to 18.6 M ranges)
SET_ANCHORS = 1 << 23
# links per set of ranges where ranges may be linked apart from the rest of their thread (projection)
SET_LINKS = 1 << 24


@dataclass(frozen=True)
class Points:
    """Activities (rows) placed at a time on a thread."""

    activity: np.ndarray
    thread: np.ndarray
    time: np.ndarray

    @classmethod
    def at(cls, events: EventTable, rows: np.ndarray) -> "Points":
        """Each activity with an event row (``rows``, -1: none) at that event's start on its thread."""
        have = np.flatnonzero(rows >= 0)
        return cls(have, events["globalTid"][rows[have]], events["start"][rows[have]])

    def on(self, threads: np.ndarray | None, span: tuple[int, int] | None = None) -> "Points":
        """The points on ``threads`` within ``span``, ``[start, end)`` (all when ``threads`` is None;
        at any time when ``span`` is None); the points themselves, not a copy, when all of them are on
        ``threads``. The span only leaves out points that no range of a set holds."""
        if threads is None:
            return self
        keep = np.isin(self.thread, threads)
        if keep.all():
            return self
        if span is not None:
            keep &= self.time >= span[0]
            keep &= self.time < span[1]
        rows = np.flatnonzero(keep)
        return Points(self.activity[rows], self.thread[rows], self.time[rows])


class Anchors:
    """Where activities sit among ranges (docs/decisions.md D11): each at the start of its launch
    call on the call's thread and, with graph mapping, at the creation of its graph node's
    original on that thread. Made once; a range links the activities anchored in it on its own
    thread, so ranges can be linked a set at a time: of whole threads, or of ranges."""

    def __init__(self, inputs: "Inputs", activities: EventTable, graph_mapping: bool = True,
                 launch: np.ndarray | None = None) -> None:
        calls = runtime_calls(inputs)
        self.launched = Points.at(calls, launch_rows(calls, activities) if launch is None else launch)
        self.created: Points | None = None
        if graph_mapping and (activities["graphNodeId"] >= 0).any():
            nodes = graph_nodes(inputs)
            self.created = Points.at(nodes, creation_rows(nodes, activities))
        self.activities = activities.rows

    def points(self) -> list[Points]:
        """The anchors of each kind: launch calls, then graph node creations (with graph mapping)."""
        return [self.launched] if self.created is None else [self.launched, self.created]

    def fit(self) -> bool:
        """Whether every anchor fits in one pass (:data:`SET_ANCHORS`)."""
        return sum(len(found.thread) for found in self.points()) <= SET_ANCHORS

    def thread_sets(self, threads: np.ndarray) -> list[np.ndarray] | None:
        """The distinct ``threads`` (of ranges) in sets holding at most :data:`SET_ANCHORS` anchors
        each (a thread holding more: a set of its own), in thread order; None (every thread at
        once) when all the anchors fit in one."""
        if self.fit():
            return None
        anchored, count = np.unique(np.concatenate([found.thread for found in self.points()]),
                                    return_counts=True)
        threads = distinct_sorted(np.sort(threads))
        at = np.minimum(np.searchsorted(anchored, threads), len(anchored) - 1)
        held = np.where(anchored[at] == threads, count[at], 0)
        sets: list[np.ndarray] = []
        first, total = 0, 0
        for last, count_here in enumerate(held.tolist()):  # a loop over threads
            if last > first and total + count_here > SET_ANCHORS:
                sets.append(threads[first:last])
                first, total = last, 0
            total += count_here
        sets.append(threads[first:])
        return sets

    def range_sets(self, ranges: EventTable) -> list[np.ndarray] | None:
        """Rows of ``ranges`` in sets of about :data:`SET_LINKS` links (a range holding more: a
        set of its own), each thread's ranges in row order; None (every range at once) when all
        the anchors fit in one set (:data:`SET_ANCHORS`). For analyses whose figures are each
        range's own: a thread holds more links than one set should."""
        if self.fit() or ranges.rows == 0:
            return None
        tid, start, end = ranges["globalTid"], ranges["start"], ranges["end"]
        order = group_order(tid)
        links = np.zeros(ranges.rows, np.int64)
        for found in self.points():
            for rows, _, times in group_slices(tid, order, found.thread, found.time):  # a loop over threads
                links[rows] += np.searchsorted(times, end[rows]) - np.searchsorted(times, start[rows])
        total = np.cumsum(links[order])
        bounds = np.searchsorted(total, np.arange(SET_LINKS, int(total[-1]), SET_LINKS), "right")
        return [rows for rows in np.split(order, distinct_sorted(bounds)) if len(rows)]

    def all_pairs(self, ranges: EventTable) -> Pairs:
        """:meth:`pairs` of every range, a set of ranges at a time past one pass (:meth:`range_sets`),
        in the order one pass gives: a set's ranges are whole threads' runs in row order, so its
        direct pairs, then those of the next sets, then every set's graph-mapped ones, are that order."""
        sets = self.range_sets(ranges)
        if sets is None:
            return self.pairs(ranges)
        parts = []
        for rows in sets:
            found = self.pairs_within(ranges, rows)
            parts.append(Pairs(rows[found.range_row], found.activity_row, found.via_graph))
        return in_pass_order(parts)

    def pairs_within(self, ranges: EventTable, rows: np.ndarray) -> Pairs:
        """:meth:`pairs` of the ranges ``rows`` (a set of :meth:`range_sets`), with the anchors of
        their threads alone; range rows are positions in ``rows``."""
        own = EventTable({column: ranges[column][rows] for column in ("globalTid", "start", "end")})
        return self.pairs(own, distinct_sorted(np.sort(own["globalTid"])))

    def pairs(self, ranges: EventTable, threads: np.ndarray | None = None) -> Pairs:
        """Every (range, activity) pair of the ranges on ``threads`` (all when None); a pair
        found both ways is direct. Range rows are those of ``ranges``."""
        tid, start, end = ranges["globalTid"], ranges["start"], ranges["end"]
        rows = None
        span = (0, 0)
        if threads is not None:
            rows = np.flatnonzero(np.isin(tid, threads))
            tid, start, end = tid[rows], start[rows], end[rows]
            span = (int(start.min()), int(end.max())) if len(rows) else span
        launched = self.launched.on(threads, span)
        r, p = enclosing_pairs(tid, start, end, launched.thread, launched.time)
        a = launched.activity[p]
        del p, launched
        graph = np.zeros(len(r), dtype=bool)
        if self.created is not None:
            created = self.created.on(threads, span)
            gr, gp = enclosing_pairs(tid, start, end, created.thread, created.time)
            ga = created.activity[gp]
            graph_run = np.zeros(self.activities, dtype=bool)
            graph_run[ga] = True
            fresh = ~sorted_member(np.sort(pair_key(r[graph_run[a]], a[graph_run[a]])), pair_key(gr, ga))
            r = np.concatenate([r, gr[fresh]])
            a = np.concatenate([a, ga[fresh]])
            graph = np.concatenate([graph, np.ones(int(fresh.sum()), dtype=bool)])
        return Pairs(r if rows is None else rows[r], a, graph)


def correlate(inputs: "Inputs", ranges: EventTable, activities: EventTable, graph_mapping: bool = True,
              launch: np.ndarray | None = None) -> Pairs:
    """Every (range, activity) pair of docs/decisions.md D11 (:class:`Anchors`), at once.
    ``launch``: the activities' :func:`launch_rows`, when the caller has them."""
    return Anchors(inputs, activities, graph_mapping, launch).pairs(ranges)


def in_pass_order(parts: list[Pairs]) -> Pairs:
    """The pairs of several sets as one: the direct pairs of each (they come first in a set),
    then the graph-mapped ones. Each set is let go once copied (``parts`` is emptied), so that
    the copy grows as the sets go."""
    direct = [int(np.count_nonzero(~part.via_graph)) for part in parts]
    total = sum(len(part.range_row) for part in parts)
    out = Pairs(np.empty(total, np.int64), np.empty(total, np.int64), np.zeros(total, dtype=bool))
    at_direct, at_graph = 0, sum(direct)
    for count in direct:
        part = parts.pop(0)
        graph = len(part.range_row) - count
        for mine, theirs in ((out.range_row, part.range_row), (out.activity_row, part.activity_row)):
            mine[at_direct:at_direct + count] = theirs[:count]
            mine[at_graph:at_graph + graph] = theirs[count:]
        out.via_graph[at_graph:at_graph + graph] = True
        at_direct, at_graph = at_direct + count, at_graph + graph
    return out


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


def project(pairs: Pairs, activities: EventTable, n_ranges: int, by_start: np.ndarray | None = None) -> Projection:
    """Project ranges onto the PPU: span and busy time of their correlated activities.

    The pairs are ordered by (range, activity start) through one packed-key ``np.sort``
    (in place; each temporary the size of the pairs is freed once used, and ``pairs`` too
    when the caller holds no other reference). ``by_start``: the activities in order of
    start (a stable argsort), when the caller has it."""
    count = np.bincount(pairs.range_row, minlength=n_ranges).astype(np.int64)
    start = np.zeros(n_ranges, np.int64)
    end = np.zeros(n_ranges, np.int64)
    if len(pairs.range_row) == 0:
        return Projection(count, start, end, np.zeros(n_ranges, np.int64))
    n = activities.rows
    by_start = np.argsort(activities["start"], kind="stable") if by_start is None else by_start
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


def projected(anchors: Anchors, ranges: EventTable, activities: EventTable) -> Projection:
    """:func:`project` of every range, a set of ranges at a time (:meth:`Anchors.range_sets`):
    each set is projected on its own and its figures put in place."""
    sets = anchors.range_sets(ranges)
    if sets is None:
        return project(anchors.pairs(ranges), activities, ranges.rows)
    by_start = np.argsort(activities["start"], kind="stable")
    total = Projection(*(np.zeros(ranges.rows, np.int64) for _ in fields(Projection)))
    for rows in sets:
        part = project(anchors.pairs_within(ranges, rows), activities, len(rows), by_start)
        for field in fields(Projection):
            getattr(total, field.name)[rows] = getattr(part, field.name)
        del part
    return total


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
