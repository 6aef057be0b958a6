"""The ``asys analyze`` rules of memory-copy bandwidth (HTA's memory-bandwidth counters, issue 30):
``ppu_memory_bandwidth`` (a summary per device and direction) and ``ppu_memory_bandwidth_trace``
(the bandwidth over time, as a table of steps).

A memcpy or memset moves its bytes at ``bytes / (end - start)`` bytes per ns (= GB/s) over its
interval; a direction's bandwidth at a time is the sum over its operations running then (HTA's
step function). Directions are ``Memcpy HtoD``/``DtoH``/``DtoD``/... (the copy kind) and
``Memset``. A zero-length operation is counted with its bytes but moves nothing over time
(docs/decisions.md D40). Groups are looped over; events never are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from asysstats.analysis.activity import kind_labels, short_copy_kind
from asysstats.analysis.declarations import ROWS, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.reads import KIND_READS
from asysstats.compute.distinct import distinct
from asysstats.compute.grouped import group_by
from asysstats.core.result import FIGURE, INT, TEXT, Column, Frame

READS = {"memcpy": ("start", "end", "bytes", "copyKind", "deviceId"), "memset": ("start", "end", "bytes", "deviceId"),
         "memcpy_kinds": KIND_READS["memcpy_kinds"]}
DEVICE_ID = Column("Device ID", INT, "PPU device identifier")
DIRECTION = Column("Direction", TEXT, "Memcpy and its copy kind (HtoD, DtoH, DtoD, ...), or Memset")


@dataclass(frozen=True)
class BandwidthOptions(Options):
    rows: int | None = ROWS.field()


class Operations(NamedTuple):
    """Every memcpy and memset: start, end, bytes, device and direction (a string id)."""

    start: np.ndarray
    end: np.ndarray
    bytes: np.ndarray
    device: np.ndarray
    direction: np.ndarray


def operations(inputs: Inputs) -> Operations:
    memcpy, memset = inputs.table("memcpy"), inputs.table("memset")
    kinds, inverse = distinct(np.asarray(memcpy["copyKind"], np.int64))
    labels = kind_labels(inputs, "memcpy_kinds")
    copy_ids = inputs.strings.intern(f"Memcpy {short_copy_kind(labels.get(k, 'Unknown'))}" for k in kinds.tolist())
    direction = np.concatenate([copy_ids[inverse] if len(copy_ids) else np.empty(0, np.int64),
                                np.repeat(inputs.strings.intern(["Memset"]), memset.rows)])
    start, end, size, device = (np.concatenate([memcpy[c], memset[c]]).astype(np.int64)
                                for c in ("start", "end", "bytes", "deviceId"))
    return Operations(start, end, size, device, direction)


class Steps(NamedTuple):
    """A step function: from ``start`` for ``duration`` ns the bandwidth is ``rate`` GB/s, carried
    by ``running`` operations (a step ends where either changes); the steps where none runs are left out."""

    start: np.ndarray
    duration: np.ndarray
    rate: np.ndarray
    running: np.ndarray


def steps(start: np.ndarray, end: np.ndarray, rate: np.ndarray) -> Steps:
    """The sum of ``rate`` over the intervals ``[start, end)`` (each of positive length) as steps:
    one per change of the sum or of the number of intervals running (the sum is exactly 0 where none runs:
    no float residue)."""
    if len(start) == 0:
        return Steps(start, start, np.empty(0), start)
    times = np.concatenate([start, end])
    order = np.argsort(times, kind="stable")
    times = times[order]
    total = np.cumsum(np.concatenate([rate, -rate])[order])
    running = np.cumsum(np.concatenate([np.ones(len(start), np.int64), -np.ones(len(end), np.int64)])[order])
    last = np.concatenate([times[1:] != times[:-1], [True]])  # the value after every change at a time
    times, total, running = times[last], np.where(running[last] > 0, total[last], 0.0), running[last]
    changed = np.concatenate([[True], (total[1:] != total[:-1]) | (running[1:] != running[:-1])])
    times, total, running = times[changed], total[changed], running[changed]
    duration = np.diff(times)
    keep = running[:-1] > 0
    return Steps(times[:-1][keep], duration[keep], total[:-1][keep], running[:-1][keep])


def grouped_steps(ops: Operations) -> tuple[list[Steps], tuple[np.ndarray, ...], np.ndarray]:
    """The steps of each (device, direction) group of the operations of positive length, the
    groups' keys, and each operation's group."""
    groups = group_by([ops.device, ops.direction])
    timed = ops.end > ops.start
    rate = np.where(timed, ops.bytes / np.where(timed, ops.end - ops.start, 1), 0.0)
    found = []
    for g in range(groups.count):
        rows = groups.order[groups.bounds[g]:groups.bounds[g + 1]]
        rows = rows[timed[rows]]
        found.append(steps(ops.start[rows], ops.end[rows], rate[rows]))
    return found, groups.keys, groups.label()


SUMMARY_COLUMNS = (
    DEVICE_ID, DIRECTION,
    Column("Operations", INT, "Number of operations (zero-length ones included)"),
    Column("Bytes", INT, "Bytes moved or set by them"),
    Column("Busy Time (ns)", INT, "Time during which at least one of them runs"),
    Column("Mean (GB/s)", FIGURE, "Bandwidth averaged over the busy time: bytes of the operations of positive "
                                  "length / busy time"),
    Column("Peak (GB/s)", FIGURE, "Highest bandwidth: the largest sum over operations running at once"),
    Column("Peak Start (ns)", INT, "Start of the first time the peak bandwidth is reached"),
)


def ppu_memory_bandwidth(inputs: Inputs, options: BandwidthOptions) -> Frame:
    ops = operations(inputs)
    found, (device, direction), group = grouped_steps(ops)
    count = len(found)
    timed = ops.end > ops.start
    busy = np.array([int(s.duration.sum()) for s in found], np.int64)
    peak_at = [int(np.argmax(s.rate)) if len(s.rate) else -1 for s in found]
    peak = np.array([s.rate[i] if i >= 0 else 0.0 for s, i in zip(found, peak_at)])
    peak_start = np.array([int(s.start[i]) if i >= 0 else 0 for s, i in zip(found, peak_at)], np.int64)
    timed_bytes = np.bincount(group[timed], weights=ops.bytes[timed], minlength=count)
    total_bytes = np.bincount(group, weights=ops.bytes, minlength=count).astype(np.int64)
    order = np.lexsort((direction, -total_bytes, device)) if count else np.empty(0, np.int64)
    return {"Device ID": device[order], "Direction": direction[order],
            "Operations": np.bincount(group, minlength=count)[order], "Bytes": total_bytes[order],
            "Busy Time (ns)": busy[order], "Mean (GB/s)": (timed_bytes / np.maximum(busy, 1))[order],
            "Peak (GB/s)": peak[order], "Peak Start (ns)": peak_start[order]}


TRACE_COLUMNS = (
    Column("Start (ns)", INT, "Start of the step: bandwidth and running operations are constant from here"),
    Column("Duration (ns)", INT, "Length of the step (until the bandwidth or the number running changes)"),
    Column("Bandwidth (GB/s)", FIGURE, "Sum of the bandwidths of the operations running in the step"),
    Column("Running", INT, "Number of operations running in the step"),
    DEVICE_ID, DIRECTION,
)


def ppu_memory_bandwidth_trace(inputs: Inputs, options: BandwidthOptions) -> Frame:
    found, (device, direction), _ = grouped_steps(operations(inputs))
    group = np.repeat(np.arange(len(found)), [len(s.start) for s in found]).astype(np.int64)
    if found:
        start, duration, rate, running = (np.concatenate(c) for c in zip(*found))
    else:
        start = duration = running = np.empty(0, np.int64)
        rate = np.empty(0)
    device, direction = device[group], direction[group]
    order = np.lexsort((direction, device, start))
    return {"Start (ns)": start[order], "Duration (ns)": duration[order], "Bandwidth (GB/s)": rate[order],
            "Running": running[order], "Device ID": device[order], "Direction": direction[order]}


HELP = ("A memcpy or memset moves its bytes at bytes / duration (GB/s = bytes per ns) over its interval; the "
        "bandwidth of a device and direction (Memcpy HtoD, DtoH, DtoD, ..., Memset) at a time is the sum over its "
        "operations running then (HTA's memory-bandwidth counter). Zero-length operations are counted with their "
        "bytes but move nothing over time.")

PPU_MEMORY_BANDWIDTH = Rule(
    name="ppu_memory_bandwidth",
    title="PPU Memory Bandwidth",
    help=HELP + " One row per device and direction, most bytes first; the series is ppu_memory_bandwidth_trace.",
    columns=SUMMARY_COLUMNS,
    compute=ppu_memory_bandwidth,
    reads=READS,
    options=BandwidthOptions,
    requires=("memcpy", "memset"),
    command="analyze",
)

PPU_MEMORY_BANDWIDTH_TRACE = Rule(
    name="ppu_memory_bandwidth_trace",
    title="PPU Memory Bandwidth Trace",
    help=HELP + " One row per step (constant bandwidth and number of running operations) of each device and "
                "direction while one runs, in time order "
                "(the summary is ppu_memory_bandwidth).",
    columns=TRACE_COLUMNS,
    compute=ppu_memory_bandwidth_trace,
    reads=READS,
    options=BandwidthOptions,
    requires=("memcpy", "memset"),
    command="analyze",
)

RULES = [PPU_MEMORY_BANDWIDTH, PPU_MEMORY_BANDWIDTH_TRACE]
