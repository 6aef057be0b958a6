"""HGTX range summary (``hgtx_sum``) and push/pop range trace (``hgtx_pushpop_trace``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow.compute as pc

from asysstats.analysis.declarations import ROWS, Option, Options, Rows, Rule, Summary
from asysstats.analysis.hgtx import load_ranges, range_stacks
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import HGTX_READS
from asysstats.analysis.summary import StatColumns, keyed_frame
from asysstats.compute.arrow import from_numpy, text
from asysstats.compute.distinct import distinct, tie_order
from asysstats.core.regexes import search_each
from asysstats.core.result import INT, TEXT, Column, Frame, Gathered, TextColumn
from asysstats.core.tables import EventTable

if TYPE_CHECKING:
    import regex

PROCESS = Option("process", "int_list", "Process ids to analyse, separated by '/' (default: all).", None, minimum=0)
THREAD = Option("thread", "int_list", "Thread ids to analyse, separated by '/' (default: all).", None, minimum=0)
RANGE = Option("range", "regex", "Analyse only HGTX ranges whose name matches this regex (default: all).", None)



@dataclass(frozen=True)
class SumOptions(Options):
    rows: int | None = ROWS.field()
    process: tuple[int, ...] | None = PROCESS.field()
    thread: tuple[int, ...] | None = THREAD.field()


@dataclass(frozen=True)
class TraceOptions(Options):
    rows: int | None = ROWS.field()
    range: "regex.Pattern | None" = RANGE.field()


STATS = StatColumns.of("instances of this range")
SUM_COLUMNS = STATS.columns + (
    Column("Style", TEXT, "Range style; Start/End or Push/Pop"),
    Column("Range", TEXT, "Name of the range"),
)


def on_threads(ranges: EventTable, processes: tuple[int, ...] | None, threads: tuple[int, ...] | None) -> EventTable:
    """Ranges of a selected thread or of a thread of a selected process (all when neither)."""
    if processes is None and threads is None:
        return ranges
    keep = np.zeros(ranges.rows, dtype=bool)
    if processes is not None:
        keep |= np.isin(ranges["pid"], np.asarray(processes, dtype=np.int64))
    if threads is not None:
        keep |= np.isin(ranges["tid"], np.asarray(threads, dtype=np.int64))
    return ranges.take(keep)


def hgtx_sum_rows(inputs: Inputs, options: SumOptions) -> Rows:
    ranges = on_threads(load_ranges(inputs, ("name", "style", "start", "end", "pid", "tid")), options.process,
                        options.thread)
    return Rows((ranges["name"], ranges["style"]), ranges["end"] - ranges["start"], text=(0, 1))


SUMMARY = Summary(hgtx_sum_rows, keyed_frame(STATS, "Range", "Style"))


HGTX_SUM = Rule(
    name="hgtx_sum",
    title="HGTX Range Summary",
    help="Time spent in HGTX ranges (push/pop and start/end) per range name and style, in "
         "descending order of total time. A range in a domain is named 'domain:range'. "
         "'Time (%)' is the share of the total of all ranges in the table, not of the run time.",
    columns=SUM_COLUMNS,
    compute=SUMMARY.compute,
    reads=HGTX_READS,
    options=SumOptions,
    share="Time (%)",
)


TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Range start timestamp"),
    Column("End (ns)", INT, "Range end timestamp"),
    Column("Duration (ns)", INT, "Range duration"),
    Column("DurChild (ns)", INT, "Total duration of all child ranges"),
    Column("DurNonChild (ns)", INT, "Duration of this range minus the total duration of its child ranges"),
    Column("Name", TEXT, "Name of the HGTX range"),
    Column("PID", INT, "Process ID"),
    Column("TID", INT, "Thread ID"),
    Column("Lvl", INT, "Stack level, starts at 0"),
    Column("NumChild", INT, "Number of child ranges"),
    Column("RangeId", INT, "Arbitrary ID for the range"),
    Column("ParentId", INT, "Range ID of the enclosing range"),
    Column("RangeStack", TEXT, "Range IDs that make up the push/pop stack"),
    Column("NameTree", TEXT, "Range name prefixed with a level indicator"),
)


TRACE_INPUTS = ("pushpop", "start", "end", "childTime", "name", "pid", "tid", "level", "children", "rangeId",
                "parentId")


def name_matches(inputs: Inputs, names: np.ndarray, pattern: "regex.Pattern | None") -> np.ndarray:
    """Mask of rows whose name the regex finds (searched once per distinct name)."""
    if pattern is None or len(names) == 0:
        return np.ones(len(names), dtype=bool)
    uniq, inverse = distinct(names)
    texts = [text or "" for text in inputs.strings.lookup(uniq)]
    return search_each(pattern, texts, "rule 'hgtx_pushpop_trace': option 'range'")[inverse]


def name_trees(inputs: Inputs, levels: np.ndarray, names: np.ndarray, marker: str = "-") -> TextColumn:
    """``marker`` once per level, then the name: the text of each distinct (level, name) built
    once and taken per row as the writers read it (not interned: no row looks it up)."""
    span = int(levels.max(initial=0)) + 1
    pairs, pair = distinct(names * span + levels, narrow=True)  # counted in a table: name ids are dense
    names, levels = np.divmod(pairs, span)
    trees = pc.binary_join_element_wise(pc.binary_repeat(text(marker), from_numpy(levels)),
                                        inputs.strings.texts(names, ""), text(""))
    return TextColumn(trees, pair)


def pushpop_trace(inputs: Inputs, options: TraceOptions) -> Frame:
    ranges = load_ranges(inputs, TRACE_INPUTS)
    rows = np.flatnonzero((ranges["pushpop"] == 1) & name_matches(inputs, ranges["name"], options.range))
    return pushpop_frame(inputs, ranges, rows, ranges["name"])


def pushpop_frame(inputs: Inputs, ranges: EventTable, rows: np.ndarray, names: np.ndarray,
                  marker: str = "-") -> Frame:
    """The trace of the push/pop ``rows`` of ``ranges`` (:data:`TRACE_INPUTS`) in start order, each
    named by ``names`` (an id per range) and its name tree by ``marker`` per level. The printed
    columns are the ranges' own, gathered a slice at a time as they are written."""
    rows = rows[tie_order(ranges["start"][rows], lambda tied: (ranges["level"][rows[tied]],))]  # stack order, then id
    rows = rows.astype(np.int32 if ranges.rows < 2 ** 31 else np.int64)  # kept while the trace is written
    start, end, child_time = ranges["start"], ranges["end"], ranges["childTime"]
    frame = {name: Gathered(values, rows) for name, values in (  # durations computed a slice at a time
        ("Start (ns)", start), ("End (ns)", end), ("Duration (ns)", lambda r: end[r] - start[r]),
        ("DurChild (ns)", child_time), ("DurNonChild (ns)", lambda r: end[r] - start[r] - child_time[r]),
        ("Name", names), ("PID", ranges["pid"]), ("TID", ranges["tid"]), ("Lvl", ranges["level"]),
        ("NumChild", ranges["children"]), ("RangeId", ranges["rangeId"]), ("ParentId", ranges["parentId"]))}
    return frame | {"RangeStack": range_stacks(inputs, frame["RangeId"]),
                    "NameTree": name_trees(inputs, ranges["level"][rows], names[rows], marker)}


PUSHPOP_TRACE = Rule(
    name="hgtx_pushpop_trace",
    title="HGTX Push/Pop Range Trace",
    help="Every HGTX push/pop range (domain and non-domain) with its stack state: level, parent, "
         "immediate children and their total duration, in order of start time.",
    columns=TRACE_COLUMNS,
    compute=pushpop_trace,
    reads=HGTX_READS,
    options=TraceOptions,
)

RULES = [HGTX_SUM, PUSHPOP_TRACE]
