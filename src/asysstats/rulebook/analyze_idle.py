"""The ``asys analyze`` rules of a stream's idle time and launch queue (HTA's idle-time
breakdown and queue length, docs/decisions.md D38):

* ``ppu_idle_breakdown``: each gap between consecutive PPU activities of a stream, classed
  by the activity that ends it: *host wait* (its launch call began after the stream went
  idle: the CPU was late), *kernel wait* (else, a gap shorter than ``kernel-wait``: the cost
  of back-to-back launches), *other* (the rest: waits on events, other streams, ...).
* ``ppu_queue_length`` / ``ppu_queue_length_trace``: the launches outstanding on a stream
  (launch call begun, activity not yet finished, or not yet begun with ``until=start``), as
  time-weighted statistics per stream, or as the step series of its changes.

Streams are (process, device, stream); activities are kernels, memcpy and memset. Groups are
looped over; events never are."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from asysstats.analysis.declarations import ROWS, Option, Options, Rule, merged_reads
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import launch_rows, runtime_calls
from asysstats.analysis.reads import CALL_READS, PPU_KINDS
from asysstats.compute.grouped import dense_group_ids, id_time_order
from asysstats.compute.intervals import open_counts, running_max_by_segment
from asysstats.core.integers import INT64_MAX
from asysstats.core.result import DECIMAL, INT, PERCENT, TEXT, Column, Frame
from asysstats.core.tables import EventTable

STREAM_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "globalPid")
READS = merged_reads({kind: STREAM_COLUMNS for kind in PPU_KINDS}, CALL_READS)
IDLE_CLASSES = ("host wait", "kernel wait", "other")
KERNEL_WAIT = Option("kernel-wait", "decimal",
                     "Gaps shorter than this many microseconds that the CPU did not cause are kernel wait "
                     "(HTA's consecutive_kernel_delay).", 30, minimum=0, maximum=INT64_MAX // 1_000)
UNTIL = Option("until", "choice",
               "A launch is outstanding until its activity 'end's (default) or 'start's (HTA's queue length).",
               "end", choices=("end", "start"))
KEYS = (Column("PID", INT, "Process identifier"), Column("Device ID", INT, "PPU device identifier"),
        Column("Stream ID", INT, "Stream identifier"))


@dataclass(frozen=True)
class IdleOptions(Options):
    kernel_wait: Fraction = KERNEL_WAIT.field()
    rows: int | None = ROWS.field()


@dataclass(frozen=True)
class QueueOptions(Options):
    until: str = UNTIL.field()
    rows: int | None = ROWS.field()


@dataclass(frozen=True)
class QueueTraceOptions(Options):
    until: str = UNTIL.field()
    rows: int | None = ROWS.field()


@dataclass(frozen=True)
class Streams:
    """The activities of the time window sorted by (stream, start, end): ``group`` of each
    row (streams numbered in key order: ``keys`` holds each one's PID, device and stream), the
    start of its launch call (``launched``: whether one is in the report)."""

    keys: tuple[np.ndarray, ...]
    group: np.ndarray
    start: np.ndarray
    end: np.ndarray
    launch: np.ndarray
    launched: np.ndarray

    @property
    def count(self) -> int:
        """The number of streams."""
        return len(self.keys[0])


def streams(inputs: Inputs) -> Streams:
    """The activities by stream, with the start of their launch calls (looked up in the whole report)."""
    activities = EventTable.concat([inputs.table(kind, STREAM_COLUMNS) for kind in PPU_KINDS],
                                   ("start", "end", "pid", "deviceId", "streamId", "correlationId"))
    calls = runtime_calls(inputs)
    group, keys = dense_group_ids([activities["pid"], activities["deviceId"], activities["streamId"]])
    start, end = activities["start"], np.maximum(activities["end"], activities["start"])
    order = id_time_order(group, len(keys[0]), start, end)
    rows = launch_rows(calls, activities)[order] if calls.rows else np.full(activities.rows, -1, np.int64)
    launched = rows >= 0
    launch = np.where(launched, calls["start"][np.maximum(rows, 0)] if calls.rows else 0, 0)
    ordered_group = np.repeat(np.arange(len(keys[0])), np.bincount(group, minlength=len(keys[0])))
    return Streams(keys, ordered_group, start[order], end[order], launch, launched)


def key_columns(keys: tuple[np.ndarray, ...], group: np.ndarray) -> Frame:
    return {"PID": keys[0][group], "Device ID": keys[1][group], "Stream ID": keys[2][group]}


def idle_classes(all_streams: Streams, kernel_wait_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Per activity, the idle gap it ends (0 when none: first of its stream, or overlapping the
    activities before it) and that gap's class (an index of IDLE_CLASSES)."""
    reach = running_max_by_segment(all_streams.group, all_streams.end)  # end of the stream's busy time so far
    previous = np.concatenate([[0], reach[:-1]])
    follows = np.concatenate([[False], all_streams.group[1:] == all_streams.group[:-1]])
    gap = np.where(follows, np.maximum(all_streams.start - previous, 0), 0)
    host = all_streams.launched & (all_streams.launch > previous)
    kernel = ~host & (gap < kernel_wait_ns)
    return gap, np.where(host, 0, np.where(kernel, 1, 2))


IDLE_COLUMNS = KEYS + (
    Column("Idle Class", TEXT, "host wait, kernel wait or other"),
    Column("Idle Time (ns)", INT, "Total length of the stream's gaps of this class"),
    Column("Gaps", INT, "Number of the stream's gaps of this class"),
    Column("Share (%)", PERCENT, "Share of the stream's idle time in this class"),
)


def ppu_idle_breakdown(inputs: Inputs, options: IdleOptions) -> Frame:
    all_streams = streams(inputs)
    gap, kind = idle_classes(all_streams, int(options.kernel_wait * 1_000))
    cell = all_streams.group * len(IDLE_CLASSES) + kind
    cells = all_streams.count * len(IDLE_CLASSES)
    idle = np.zeros(cells, np.int64)
    np.add.at(idle, cell, gap)
    count = np.bincount(cell[gap > 0], minlength=cells).astype(np.int64)
    total = idle.reshape(-1, len(IDLE_CLASSES)).sum(axis=1).repeat(len(IDLE_CLASSES))
    share = np.where(total > 0, idle * 100.0 / np.maximum(total, 1), 0.0)
    group = np.arange(cells) // len(IDLE_CLASSES)
    frame = key_columns(all_streams.keys, group)
    order = np.lexsort((np.arange(cells), frame["Stream ID"], frame["Device ID"], frame["PID"]))
    labels = inputs.strings.intern(IDLE_CLASSES)
    frame.update({"Idle Class": labels[np.arange(cells) % len(IDLE_CLASSES)], "Idle Time (ns)": idle,
                  "Gaps": count, "Share (%)": share})
    return {name: values[order] for name, values in frame.items()}


@dataclass(frozen=True)
class Series:
    """The queue length of each stream as a step function: from ``time`` on (to the next
    point of the same ``group``) the stream has ``length`` launches outstanding."""

    time: np.ndarray
    length: np.ndarray
    group: np.ndarray
    hold: np.ndarray  # how long each value holds (0 at a stream's last point)


def queue_series(all_streams: Streams, until: str) -> Series:
    """Each launched activity is outstanding over ``[min(launch, done), done)``, ``done`` its
    end (or start): the count of those open on each stream (:func:`open_counts`)."""
    done = (all_streams.end if until == "end" else all_streams.start)[all_streams.launched]
    # a GPU clock ahead of the CPU's: outstanding from done
    begin = np.minimum(all_streams.launch[all_streams.launched], done)
    real = begin < done
    begin, done, group = begin[real], done[real], all_streams.group[all_streams.launched][real]
    time, length, group = open_counts(group, all_streams.count, begin, done)
    same = np.concatenate([group[1:] == group[:-1], [False]])
    hold = np.where(same, np.concatenate([time[1:], [0]]) - time, 0)
    return Series(time, length, group, hold)


QUEUE_COLUMNS = KEYS + (
    Column("Launches", INT, "Activities of the stream whose launch call is in the report"),
    Column("Mean", DECIMAL, "Time-weighted mean of the outstanding launches over the span"),
    Column("Max", INT, "Largest number of outstanding launches"),
    Column("P50", INT, "Smallest length the queue stays at or under for half of the span"),
    Column("P90", INT, "Smallest length the queue stays at or under for 90% of the span"),
    Column("P99", INT, "Smallest length the queue stays at or under for 99% of the span"),
    Column("Time at Zero (ns)", INT, "Time within the span with no launch outstanding"),
    Column("Time at Zero (%)", PERCENT, "Time at zero over the span"),
    Column("Time at Max (ns)", INT, "Time with the largest number of launches outstanding (a full queue)"),
    Column("Span (ns)", INT, "First launch call to last activity done (end, or start)"),
)


PERCENTILES = {"P50": 0.5, "P90": 0.9, "P99": 0.99}


def time_at_length(length: np.ndarray, hold: np.ndarray) -> np.ndarray:
    """How long the step function holds each value 0, 1, ..., its max (a queue length is small:
    one pass, no sort)."""
    held = np.zeros(int(length.max()) + 1, np.int64)
    np.add.at(held, length, hold)
    return held


def time_percentiles(held: np.ndarray) -> dict[str, int]:
    """Of each of :data:`PERCENTILES`, the smallest value the step function stays at or under for
    that share of its time, from :func:`time_at_length`."""
    cumulative = np.cumsum(held)
    found = np.searchsorted(cumulative, np.array(list(PERCENTILES.values())) * cumulative[-1])
    return dict(zip(PERCENTILES, found.tolist()))


def ppu_queue_length(inputs: Inputs, options: QueueOptions) -> Frame:
    all_streams = streams(inputs)
    series = queue_series(all_streams, options.until)
    launches = np.bincount(all_streams.group[all_streams.launched], minlength=all_streams.count)
    found = np.flatnonzero(np.bincount(series.group, minlength=all_streams.count) > 0)
    bounds = np.searchsorted(series.group, np.append(found, all_streams.count))
    cells: dict[str, list] = {name: [] for name in ("Mean", "Max", "P50", "P90", "P99", "Time at Zero (ns)",
                                                    "Time at Max (ns)", "Span (ns)")}
    for index in range(len(found)):
        held = time_at_length(*(values[bounds[index]:bounds[index + 1]] for values in (series.length, series.hold)))
        span, top = int(held.sum()), len(held) - 1
        cells["Mean"].append(float((np.arange(len(held)) * held).sum()) / span)
        cells["Max"].append(top)
        for name, value in time_percentiles(held).items():
            cells[name].append(value)
        cells["Time at Zero (ns)"].append(int(held[0]))
        cells["Time at Max (ns)"].append(int(held[top]))
        cells["Span (ns)"].append(span)
    frame = key_columns(all_streams.keys, found)
    frame["Launches"] = launches[found].astype(np.int64)
    frame.update({name: np.asarray(values, np.float64 if name == "Mean" else np.int64)
                  for name, values in cells.items()})
    frame["Time at Zero (%)"] = frame["Time at Zero (ns)"] * 100.0 / np.maximum(frame["Span (ns)"], 1)
    order = np.lexsort((frame["Stream ID"], frame["Device ID"], frame["PID"]))
    return {name: values[order] for name, values in frame.items()}


TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Time the queue length changed"),
    Column("Queue Length", INT, "Launches outstanding from this time to the next row of the stream"),
) + KEYS


def ppu_queue_length_trace(inputs: Inputs, options: QueueTraceOptions) -> Frame:
    all_streams = streams(inputs)
    # the series comes by stream, then time, and streams are numbered in the order of their keys:
    # already the output's order (PID, device, stream, start)
    series = queue_series(all_streams, options.until)
    return {**key_columns(all_streams.keys, series.group), "Start (ns)": series.time, "Queue Length": series.length}


PPU_IDLE_BREAKDOWN = Rule(
    name="ppu_idle_breakdown",
    title="PPU Idle Time Breakdown",
    help="The idle gaps of each stream (between its first and last PPU activity) classed by the activity "
         "ending them: host wait (its launch call began after the stream went idle), kernel wait (else, a gap "
         "shorter than 'kernel-wait' microseconds) or other; three rows per stream, with each class's share.",
    columns=IDLE_COLUMNS,
    compute=ppu_idle_breakdown,
    reads=READS,
    options=IdleOptions,
    requires=PPU_KINDS,
    command="analyze",
)

PPU_QUEUE_LENGTH = Rule(
    name="ppu_queue_length",
    title="PPU Queue Length",
    help="Launches outstanding on each stream (launch call begun, activity not yet done: 'until' its end or "
         "start), time-weighted over the stream's span: mean, max, percentiles, time at zero and at the max. "
         "ppu_queue_length_trace gives the series.",
    columns=QUEUE_COLUMNS,
    compute=ppu_queue_length,
    reads=READS,
    options=QueueOptions,
    requires=PPU_KINDS,
    command="analyze",
)

PPU_QUEUE_LENGTH_TRACE = Rule(
    name="ppu_queue_length_trace",
    title="PPU Queue Length Trace",
    help="The queue length of each stream (see ppu_queue_length) as a step series: one row per change, the "
         "length holding until the stream's next row.",
    columns=TRACE_COLUMNS,
    compute=ppu_queue_length_trace,
    reads=READS,
    options=QueueTraceOptions,
    requires=PPU_KINDS,
    command="analyze",
)

RULES = [PPU_IDLE_BREAKDOWN, PPU_QUEUE_LENGTH, PPU_QUEUE_LENGTH_TRACE]
