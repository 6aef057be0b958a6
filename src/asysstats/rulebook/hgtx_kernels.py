"""HGTX-correlated kernels: ``hgtx_kern_sum`` and ``hgtx_kern_trace`` (docs/decisions.md D11).

A kernel counts in every range that holds the start of its launch call (on the call's
thread), and with graph mapping in the ranges holding the creation of its graph node.
With ``standalone``, kernels correlated with no (selected) range get a row whose HGTX
cells are ``-``; their PID/TID are those of the launching thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

import numpy as np

from asysstats.analysis.activity import take_or_na
from asysstats.analysis.correlate import Anchors, activity_table
from asysstats.analysis.declarations import (
    BASE,
    DEVICE,
    MANGLED,
    NO_GRAPH_MAPPING,
    RANGE_EXCLUDE,
    RANGE_INCLUDE,
    ROWS,
    Option,
    Options,
    Rule,
    Stats,
    merged_reads,
    name_mode,
)
from asysstats.analysis.hgtx import load_ranges, name_filter
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import launch_rows, runtime_calls
from asysstats.analysis.names import kernel_name_codes, kernel_name_ids
from asysstats.analysis.reads import ACTIVITY_COLUMNS, CORRELATE_READS, HGTX_READS, NAME_COLUMNS
from asysstats.compute.distinct import Coded, distinct_sorted, tie_order
from asysstats.compute.grouped import dense_group_ids, grouped_stats
from asysstats.compute.keys import pair_key, row_order
from asysstats.core.memory import release_memory
from asysstats.core.result import INT, TEXT, Column, Frame, Gathered
from asysstats.core.strings import StringPool
from asysstats.core.tables import NA, EventTable
from asysstats.rulebook.kernel_traces import dimension_ids

if TYPE_CHECKING:
    import regex

STANDALONE = Option("standalone", "flag", "Include kernels correlated with no HGTX range (HGTX cells '-').", False)
# what the summary reads of a kernel, the mangled name only for --mangled (a cold run need not read
# the trace's eleven other columns)
SUM_KERNEL_COLUMNS = (*ACTIVITY_COLUMNS, "demangledName")
TRACE_KERNEL_COLUMNS = ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid", "graphId",
                        "graphNodeId", "demangledName", "shortName", "mangledName",
                        "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ")


RANGE_CELLS = ("rangeId", "name", "style", "globalTid", "pid", "tid", "start", "end")
READS = merged_reads(HGTX_READS, {"kernels": (*SUM_KERNEL_COLUMNS, *NAME_COLUMNS)}, CORRELATE_READS)
TRACE_READS = merged_reads(HGTX_READS, {"kernels": TRACE_KERNEL_COLUMNS}, CORRELATE_READS)


@dataclass(frozen=True)
class TraceOptions(Options):
    rows: int | None = ROWS.field()
    base: bool = BASE.field()
    mangled: bool = MANGLED.field()
    standalone: bool = STANDALONE.field()
    no_graph_mapping: bool = NO_GRAPH_MAPPING.field()
    range_include: "tuple[regex.Pattern, ...] | None" = RANGE_INCLUDE.field()
    range_exclude: "tuple[regex.Pattern, ...] | None" = RANGE_EXCLUDE.field()


@dataclass(frozen=True)
class SumOptions(TraceOptions):
    device: tuple[int, ...] | None = DEVICE.field()


class Linked:
    """The selected ranges, the kernels and their launch calls: what :class:`Links` are made of,
    through where the kernels sit among the ranges (:class:`~asysstats.analysis.correlate.Anchors`,
    made for the links and dropped with them)."""

    def __init__(self, inputs: Inputs, options: TraceOptions, devices: tuple[int, ...] | None,
                 kernel_columns: tuple[str, ...]) -> None:
        inputs.require("kernels")
        ranges = load_ranges(inputs, RANGE_CELLS)
        self.ranges = ranges.take(name_filter(inputs, ranges["name"], options.range_include, options.range_exclude))
        self.kernels: EventTable = activity_table(inputs, "kernels", kernel_columns, devices)
        self.calls = runtime_calls(inputs)
        self.launch = launch_rows(self.calls, self.kernels)
        self.inputs, self.graph_mapping, self.standalone = inputs, not options.no_graph_mapping, options.standalone

    def anchors(self) -> Anchors:
        return Anchors(self.inputs, self.kernels, self.graph_mapping, self.launch)

    def links(self, anchors: Anchors | None = None) -> "Links":
        """Every link at once (``anchors``: when made already)."""
        pairs = (anchors or self.anchors()).pairs(self.ranges)
        r, k, graph = pairs.range_row.astype(np.int32), pairs.activity_row.astype(np.int32), pairs.via_graph
        del pairs
        if self.standalone:
            alone = np.ones(self.kernels.rows, dtype=bool)
            alone[k] = False
            k_alone = np.flatnonzero(alone).astype(np.int32)
            r = np.concatenate([r, np.full(len(k_alone), -1, np.int32)])
            k = np.concatenate([k, k_alone])
            graph = np.concatenate([graph, np.zeros(len(k_alone), dtype=bool)])
        release_memory()  # the correlation's temporaries
        return Links(self, r, k, graph)

    def link_sets(self) -> Iterator["Links"]:
        """The links of each set of whole range threads (``Anchors.thread_sets``), then, with
        ``standalone``, a row for each kernel linked in none; every link at once when the
        kernels' anchors fit in one set (the anchors then dropped before the links are used).
        Links of different threads fall in different groups of (range, thread, kernel name), so
        each set's groups are whole."""
        held = [self.anchors()]  # emptied by one pass: the anchors go before its links are used
        sets = held[0].thread_sets(self.ranges["globalTid"])
        if sets is None:
            yield self.links(held.pop())
            return
        anchors = held.pop()
        linked = np.zeros(self.kernels.rows, dtype=bool)
        for threads in sets:
            yield self.links_on(anchors, threads, linked)  # held by the caller alone
        if self.standalone:
            alone = np.flatnonzero(~linked).astype(np.int32)
            yield Links(self, np.full(len(alone), -1, np.int32), alone, np.zeros(len(alone), dtype=bool))

    def links_on(self, anchors: Anchors, threads: np.ndarray, linked: np.ndarray) -> "Links":
        """The links of the ranges on ``threads``; marks their kernels in ``linked``."""
        pairs = anchors.pairs(self.ranges, threads)
        linked[pairs.activity_row] = True
        links = Links(self, pairs.range_row.astype(np.int32), pairs.activity_row.astype(np.int32), pairs.via_graph)
        del pairs
        release_memory()
        return links


class Links:
    """Correlated (range, kernel) rows, plus one row per standalone kernel (range -1), as
    int32 rows of ``ranges`` and ``kernels``; the cells they print are gathered from those."""

    def __init__(self, linked: Linked, range_row: np.ndarray, kernel_row: np.ndarray, via_graph: np.ndarray) -> None:
        self.ranges, self.kernels, self.calls, self.launch = linked.ranges, linked.kernels, linked.calls, linked.launch
        self.range_row, self.kernel_row, self.via_graph = range_row, kernel_row, via_graph

    def sort(self, kernel_order: np.ndarray, range_order: np.ndarray) -> None:
        """Put the rows in the order of their kernels in ``kernel_order``, then of their
        ranges in ``range_order`` (:func:`sorted_pairs`)."""
        self.kernel_row, self.range_row, self.via_graph = sorted_pairs(
            self.kernel_row, self.range_row, self.via_graph, kernel_order, range_order)

    def owner(self) -> np.ndarray:
        """Per row, the row of :meth:`owner_values` it takes its thread and range cells from:
        its range, or for a standalone kernel, the kernel's (after the ranges)."""
        r = self.range_row
        return r if r.min(initial=0) >= 0 else np.where(r >= 0, r, self.ranges.rows + self.kernel_row)

    def owner_values(self, column: str) -> np.ndarray:
        """A range cell (``name``, ``style``, ``pid``, ``tid``) of each range, then, when there
        are standalone rows, of each kernel as its standalone row shows it: no range name or
        style, the launching thread."""
        if self.range_row.min(initial=0) >= 0:
            return self.ranges[column]
        if column == "pid":
            standalone = self.kernels["pid"]
        elif column == "tid":
            standalone = take_or_na(self.calls["tid"], self.launch)
        else:
            standalone = np.full(self.kernels.rows, -1, np.int64)
        return np.concatenate([self.ranges[column], standalone])

    def call_cells(self) -> tuple[Gathered, Gathered]:
        """The launch call's start and duration per row (``NA`` when mapped through a graph node)."""
        call = np.where(self.via_graph, -1, self.launch.astype(np.int32)[self.kernel_row])  # -1: the NA appended
        start, end = self.calls["start"], self.calls["end"]
        return Gathered(np.append(start, NA), call), Gathered(np.append(end - start, NA), call)


@dataclass(frozen=True)
class KernelGroups:
    """The groups of (range name, style, PID, TID, kernel name) of correlated kernels, in output
    order (range name by text, PID, TID, total descending, kernel name, style; standalone rows
    last): their keys, range instances and kernel duration statistics (``grouped_stats``).
    ``hgtx_kern_sum`` and NVIDIA's ``nvtx_kern_sum`` print them."""

    keys: tuple[np.ndarray, ...]
    range_instances: np.ndarray
    stats: Stats
    standalone: np.ndarray


def kernel_groups(inputs: Inputs, options: SumOptions) -> KernelGroups:
    mode = name_mode(options)
    columns = (*SUM_KERNEL_COLUMNS, "mangledName") if mode == "mangled" else SUM_KERNEL_COLUMNS
    linked = Linked(inputs, options, options.device, columns)
    sets = linked.link_sets()
    names = kernel_name_codes(inputs.strings, linked.kernels, mode)
    parts = []
    while (part := set_groups(sets, names)) is not None:
        parts.append(part)
    del linked
    groups = joined(parts)
    keys, stats, range_inst, standalone = groups.keys, groups.stats, groups.range_instances, groups.standalone
    order = row_order((standalone, inputs.strings.sort_rank(keys[0]), keys[2], keys[3], -stats["sum"],
                       inputs.strings.sort_rank(keys[4]), inputs.strings.sort_rank(keys[1])))
    return KernelGroups(tuple(key[order] for key in keys), range_inst[order],
                        {name: values[order] for name, values in stats.items()}, standalone[order])


def joined(parts: list[KernelGroups]) -> KernelGroups:
    """The groups of several sets one after another (a set with none left out: its statistics
    have no type)."""
    parts = [part for part in parts if len(part.keys[0])] or parts[:1]
    if len(parts) == 1:
        return parts[0]
    return KernelGroups(tuple(np.concatenate([part.keys[at] for part in parts]) for at in range(len(parts[0].keys))),
                        np.concatenate([part.range_instances for part in parts]),
                        {name: np.concatenate([part.stats[name] for part in parts]) for name in parts[0].stats},
                        np.concatenate([part.standalone for part in parts]))


def set_groups(sets: Iterator[Links], names: Coded) -> KernelGroups | None:
    """The groups of the next set of links (whole threads), unordered; None after the last. The
    links are taken from ``sets`` here, and freed once counted."""
    links = next(sets, None)
    if links is None:
        return None
    label, keys = row_groups(links, names)
    # a kernel counts once per group (nested ranges of one name would count it twice). The links come
    # range by range, their kernels in time order: keys by range or by kernel first hold long sorted
    # runs, which timsort merges (18.6 M links: 3.8 s -> 0.5 s against (group, row) keys by quicksort)
    distinct = distinct_sorted(np.sort(pair_key(links.kernel_row, label), kind="stable"))
    range_inst = np.bincount(distinct_sorted(np.sort(pair_key(links.range_row, label), kind="stable")) & 0xFFFFFFFF,
                             minlength=len(keys[0]))
    kernels = links.kernels
    del label, links
    k_row, k_label = distinct >> 32, distinct & 0xFFFFFFFF
    del distinct
    _, stats = grouped_stats([k_label], kernels["end"][k_row] - kernels["start"][k_row])
    return KernelGroups(keys, range_inst, stats, keys[0] < 0)


def kern_sum(inputs: Inputs, options: SumOptions) -> Frame:
    groups = kernel_groups(inputs, options)
    keys, stats = groups.keys, groups.stats
    return {
        "HGTX Range": keys[0], "Style": keys[1], "PID": keys[2], "TID": keys[3],
        "HGTX Inst": np.where(groups.standalone, NA, groups.range_instances), "Kern Inst": stats["count"],
        "Total Time (ns)": stats["sum"], "Avg (ns)": stats["mean"], "Med (ns)": stats["median"],
        "Min (ns)": stats["min"], "Max (ns)": stats["max"], "StdDev (ns)": stats["std"],
        "Kernel Name": keys[4],
    }


def row_groups(links: Links, names: Coded) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
    """The group of every row: its owner's (range name, style, pid, tid), then its kernel's
    name (``names``, per kernel); and the five keys of each group. The owners are numbered by
    thread first, then name (derived ids in order of first occurrence), so that the links of a
    thread, in time order, find their groups' slots near each other, and the groups' ids follow
    time for the sorts after (docs/performance.md: the grouping of 18.6 M links 6.8 -> 6.0 s)."""
    who, (tid, pid, name, style) = dense_group_ids([links.owner_values(c) for c in ("tid", "pid", "name", "style")])
    label, (owner_group, name_code) = dense_group_ids([Coded(np.arange(len(tid)), who[links.owner()]),
                                                       Coded(np.arange(len(names.values)),
                                                             names.codes[links.kernel_row])])
    return label, tuple(k[owner_group] for k in (name, style, pid, tid)) + (names.values[name_code],)


SUM_COLUMNS = (
    Column("HGTX Range", TEXT, "Name of the range"),
    Column("Style", TEXT, "Range style; Start/End or Push/Pop"),
    Column("PID", INT, "Process ID for this set of ranges and kernels"),
    Column("TID", INT, "Thread ID for this set of ranges and kernels"),
    Column("HGTX Inst", INT, "Number of HGTX range instances"),
    Column("Kern Inst", INT, "Number of HGGC kernel instances"),
    Column("Total Time (ns)", INT, "Total execution time for all kernel instances in this range"),
    Column("Avg (ns)", INT, "Average execution time of this kernel"),
    Column("Med (ns)", INT, "Median execution time of this kernel"),
    Column("Min (ns)", INT, "Minimum execution time of this kernel"),
    Column("Max (ns)", INT, "Maximum execution time of this kernel"),
    Column("StdDev (ns)", INT, "Standard deviation of this kernel's execution time"),
    Column("Kernel Name", TEXT, "Name of the kernel"),
)

KERN_SUM = Rule(
    name="hgtx_kern_sum",
    title="HGTX Range Kernel Summary",
    help="Kernel execution time per thread, HGTX range name and kernel name. A kernel counts in "
         "every range that holds the start of its launch call on the same thread (and, with graph "
         "mapping, in the ranges around the creation of its graph node). Sorted by range name, PID "
         "and TID, then by total time descending.",
    columns=SUM_COLUMNS,
    compute=kern_sum,
    reads=READS,
    options=SumOptions,
    share="Total Time (ns)",
)


def sorted_pairs(kernel_row: np.ndarray, range_row: np.ndarray, via_graph: np.ndarray, kernel_order: np.ndarray,
                 range_order: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (kernel row, range row, via graph) pairs in the order of their kernels in
    ``kernel_order``, then of their ranges in ``range_order`` (a standalone row, range -1,
    first), as int32 rows: one ``np.sort`` of packed keys, from which the rows are read back
    (a pair occurs once, so the keys are distinct; int32 rows keep them below 2**63)."""
    span = len(range_order) + 1  # range positions from 1; 0: standalone
    range_pos = np.zeros(span, np.int64)
    range_pos[range_order + 1] = np.arange(1, span)
    kernel_pos = np.empty(len(kernel_order), np.int64)
    kernel_pos[kernel_order] = np.arange(len(kernel_order))
    key = kernel_pos[kernel_row] * span
    key += range_pos[range_row + 1]
    key <<= 1
    key |= via_graph
    del kernel_pos, range_pos
    key.sort(kind="stable")
    graph = (key & 1).astype(bool)
    key >>= 1
    ranges = np.append(-1, range_order).astype(np.int32)[key % span]
    key //= span
    return kernel_order.astype(np.int32)[key], ranges, graph


def start_order(strings: StringPool, start: np.ndarray, names: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Rows in order of start, then name (text order), then id; names ranked only where
    starts tie (:func:`~asysstats.compute.distinct.tie_order`)."""
    return tie_order(start, lambda rows: (ids[rows], strings.sort_rank(names[rows])))


def kern_trace(inputs: Inputs, options: TraceOptions) -> Frame:
    links = Linked(inputs, options, None, TRACE_KERNEL_COLUMNS).links()
    kernels = links.kernels
    kernel_names = kernel_name_ids(inputs.strings, kernels, name_mode(options))
    ranges = links.ranges
    # kernel (start, name, row), then range (none first; start, name, id)
    links.sort(start_order(inputs.strings, kernels["start"], kernel_names, kernels["row"]),
               start_order(inputs.strings, ranges["start"], ranges["name"], ranges["rangeId"]))
    k = links.kernel_row
    grid, block = dimension_ids(inputs, kernels)
    graph_node = kernels["graphNodeId"]
    from_graph = graph_node >= 0
    per_kernel = {
        "Device ID": kernels["deviceId"], "Context ID": kernels["contextId"], "Stream ID": kernels["streamId"],
        "Kernel Exec ID": kernels["row"], "Kernel Start (ns)": kernels["start"],
        "Kernel Duration (ns)": kernels["end"] - kernels["start"], "GridXYZ": grid, "BlockXYZ": block,
        "Correlation ID": kernels["correlationId"], "Graph ID": np.where(from_graph, kernels["graphId"], NA),
        "Graph Node ID": np.where(from_graph, graph_node, NA), "Kernel Name": kernel_names,
        "Mangled Name": kernel_name_ids(inputs.strings, kernels, "mangled"),
    }
    frame = {name: Gathered(values, k) for name, values in per_kernel.items()}
    for name, column, missing in (("Range Name", "name", -1), ("Style", "style", -1), ("HGTX Range ID", "rangeId", NA)):
        frame[name] = Gathered(np.append(ranges[column], missing), links.range_row)  # row -1 (standalone): missing
    owner = links.owner()
    frame["PID"], frame["TID"] = (Gathered(links.owner_values(c), owner) for c in ("pid", "tid"))
    frame["API Start (ns)"], frame["API Duration (ns)"] = links.call_cells()
    return frame


TRACE_COLUMNS = (
    Column("Range Name", TEXT, "Name of the HGTX range"),
    Column("Style", TEXT, "Range style; Start/End or Push/Pop"),
    Column("PID", INT, "Process identifier"),
    Column("TID", INT, "Thread identifier"),
    Column("Device ID", INT, "PPU device identifier"),
    Column("Context ID", INT, "Context identifier"),
    Column("Stream ID", INT, "Stream identifier"),
    Column("HGTX Range ID", INT, "HGTX range identifier"),
    Column("Kernel Exec ID", INT, "Kernel execution identifier"),
    Column("Kernel Start (ns)", INT, "Start timestamp of the HGGC kernel"),
    Column("Kernel Duration (ns)", INT, "Duration of the HGGC kernel"),
    Column("API Start (ns)", INT, "Start timestamp of the API call ('-' when mapped through a graph node)"),
    Column("API Duration (ns)", INT, "Duration of the API call ('-' when mapped through a graph node)"),
    Column("GridXYZ", TEXT, "Grid dimensions for the kernel launch call"),
    Column("BlockXYZ", TEXT, "Block dimensions for the kernel launch call"),
    Column("Correlation ID", INT, "Correlation identifier"),
    Column("Graph ID", INT, "HGGC graph identifier"),
    Column("Graph Node ID", INT, "HGGC graph node identifier"),
    Column("Kernel Name", TEXT, "Name of the kernel"),
    Column("Mangled Name", TEXT, "Mangled name of the kernel"),
)

KERN_TRACE = Rule(
    name="hgtx_kern_trace",
    title="HGTX Range Kernel Trace",
    help="One row per (HGTX range, correlated kernel), in order of kernel start, then range start. "
         "API cells are '-' where the range is mapped to the kernel through a graph node.",
    columns=TRACE_COLUMNS,
    compute=kern_trace,
    reads=TRACE_READS,
    options=TraceOptions,
)

RULES = [KERN_SUM, KERN_TRACE]
