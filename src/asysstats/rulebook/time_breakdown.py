"""PPU time breakdown (``hggc_ppu_time_breakdown``): busy, idle, computation, communication
and memcpy time of the union of PPU activities, with the exposed (not overlapped) parts.

Buckets: memcpy operations are *memcpy*; kernels whose name matches the ``communication``
regex (NCCL/RCCL/PCCL collectives, vLLM's custom all-reduce) are *communication*; other
kernels and memsets are *computation*. Every figure is the length of a union of intervals
(or of a difference of unions), so concurrent activities count once — the figures of
TraceLens's ``gpu_timeline`` (docs/kineto.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import regex

from asysstats.analysis.declarations import DEVICE, ROWS, Option, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.analysis.launches import launch_rows, runtime_calls
from asysstats.analysis.names import kernel_name_ids
from asysstats.analysis.reads import CALL_READS, KERNEL_COLUMNS
from asysstats.compute.distinct import distinct, distinct_sorted
from asysstats.compute.grouped import share_percent
from asysstats.compute.intervals import Intervals, merged_segments, segments_difference, segments_length, union
from asysstats.core.regexes import compile_user_regex, search_each
from asysstats.core.result import INT, PERCENT, TEXT, Column, Frame
from asysstats.core.strings import StringPool
from asysstats.rulebook.kernels import on_devices

RULE_NAME = "hggc_ppu_time_breakdown"
ALL = "All"
ACTIVITY_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid")
COMPUTATION, COMMUNICATION, MEMCPY = 0, 1, 2
DEFAULT_COMMUNICATION = compile_user_regex(r"(?i)nccl|rccl|pccl|cross_device_reduce", "communication")
COMMUNICATION_OPTION = Option(
    "communication", "regex", "Kernels whose name this regex finds are communication (default: "
    "'nccl|rccl|pccl|cross_device_reduce' in any case).", None)
LINKED_ONLY = Option("linked-only", "flag", "Count only activities whose launching API call is in the report "
                     "(as TraceLens's gpu_timeline does).", False)
TYPES = ("Total", "Busy", "Idle", "Computation", "Communication", "Exposed Communication", "Memcpy",
         "Exposed Memcpy")
READS = {"kernels": KERNEL_COLUMNS, "memcpy": ACTIVITY_COLUMNS, "memset": ACTIVITY_COLUMNS, **CALL_READS}


@dataclass(frozen=True)
class BreakdownOptions(Options):
    rows: int | None = ROWS.field()
    device: tuple[int, ...] | None = DEVICE.field()
    communication: "regex.Pattern | None" = COMMUNICATION_OPTION.field()
    linked_only: bool = LINKED_ONLY.field()


def name_matches(strings: StringPool, names: np.ndarray, pattern: regex.Pattern, where: str) -> np.ndarray:
    """Mask of the rows whose name (string id) the regex finds; one search per distinct name."""
    if len(names) == 0:
        return np.zeros(0, dtype=bool)
    uniq, inverse = distinct(np.maximum(names, 0))
    return search_each(pattern, strings.lookup(uniq), where)[inverse] & (names >= 0)


def is_communication(strings: StringPool, names: np.ndarray, pattern: regex.Pattern | None, rule: str) -> np.ndarray:
    """Mask of the kernels (name ids) that the ``communication`` option's regex finds (its
    default without one)."""
    return name_matches(strings, names, pattern or DEFAULT_COMMUNICATION, f"rule '{rule}': option 'communication'")


def bucketed_activities(inputs: Inputs, options: BreakdownOptions) -> dict[str, np.ndarray]:
    """``start``, ``end``, ``deviceId`` and ``bucket`` of every kernel, memcpy and memset on the
    selected devices (only those with their launch call in the report, with ``linked-only``)."""
    kernels = inputs.table("kernels", KERNEL_COLUMNS)
    names = kernel_name_ids(inputs.strings, kernels, "demangled")
    communication = is_communication(inputs.strings, names, options.communication, RULE_NAME)
    parts = [(kernels, np.where(communication, COMMUNICATION, COMPUTATION)),
             (inputs.table("memcpy", ACTIVITY_COLUMNS), MEMCPY),
             (inputs.table("memset", ACTIVITY_COLUMNS), COMPUTATION)]
    calls = runtime_calls(inputs) if options.linked_only else None
    out: dict[str, list[np.ndarray]] = {"start": [], "end": [], "deviceId": [], "bucket": []}
    for table, bucket in parts:
        table = table.with_columns(bucket=np.broadcast_to(np.asarray(bucket, np.int64), (table.rows,)).copy())
        if calls is not None:
            table = table.take(launch_rows(calls, table) >= 0)
        table = on_devices(table, options.device)
        for name, values in out.items():
            values.append(table[name])
    return {name: np.concatenate(values) for name, values in out.items()}


def bucket_unions(start: np.ndarray, end: np.ndarray, bucket: np.ndarray) -> tuple[Intervals, ...]:
    """The union of the computation, communication and memcpy buckets of one set of activities."""
    return tuple(union(start[bucket == kind], end[bucket == kind]) for kind in (COMPUTATION, COMMUNICATION, MEMCPY))


def breakdown(comp: Intervals, comm: Intervals, copy: Intervals) -> dict[str, int]:
    """The time of each of :data:`TYPES` for one set of activities, from its :func:`bucket_unions`
    (the unions of several buckets are merged from those)."""
    device_work = merged_segments(comp, comm)
    seg_start, seg_end = merged_segments(device_work, copy)
    total = int(seg_end[-1] - seg_start[0]) if len(seg_start) else 0
    busy = segments_length(seg_start, seg_end)
    return {"Total": total, "Busy": busy, "Idle": total - busy, "Computation": segments_length(*comp),
            "Communication": segments_length(*comm),
            "Exposed Communication": segments_length(*segments_difference(*comm, *comp)),
            "Memcpy": segments_length(*copy),
            "Exposed Memcpy": segments_length(*segments_difference(*copy, *device_work))}


def time_breakdown(inputs: Inputs, options: BreakdownOptions) -> Frame:
    """The rows of all devices, then of each device. The buckets' unions of all devices are merged
    from each device's: no union of every row is made."""
    acts = bucketed_activities(inputs, options)
    groups = []
    for dev in distinct_sorted(np.sort(acts["deviceId"])):
        rows = acts["deviceId"] == dev
        groups.append((str(dev), bucket_unions(acts["start"][rows], acts["end"][rows], acts["bucket"][rows])))
    if groups:
        groups.insert(0, (ALL, tuple(merged_segments(*(unions[kind] for _, unions in groups)) for kind in range(3))))
    types: list[str]
    labels, types, times, shares = [], [], [], []
    for label, unions in groups:
        figures = breakdown(*unions)
        labels += [label] * len(TYPES)
        types += TYPES
        times += [figures[kind] for kind in TYPES]
        shares.append(share_percent(np.asarray([figures[kind] for kind in TYPES]), figures["Total"]))
    return {"Device": np.array(labels, dtype=object), "Type": np.array(types, dtype=object),
            "Time (ns)": np.array(times, dtype=np.int64),
            "Time (%)": np.concatenate(shares) if shares else np.empty(0, np.float64)}


COLUMNS = (
    Column("Device", TEXT, "PPU device id, or 'All' for all selected devices together"),
    Column("Type", TEXT, "Total: first start to last end of the activities; Busy: time covered by any; Idle: "
                         "Total - Busy; Computation, Communication, Memcpy: time covered by each bucket; Exposed "
                         "Communication: communication time without computation; Exposed Memcpy: memcpy time "
                         "without computation or communication"),
    Column("Time (ns)", INT, "The time of the row's type"),
    Column("Time (%)", PERCENT, "'Time' as a percentage of the group's Total"),
)

TIME_BREAKDOWN = Rule(
    name=RULE_NAME,
    title="HGGC PPU Time Breakdown",
    help="For all selected devices together ('All'), then per device: eight rows of time from the union of the "
         "PPU activities (concurrent activities count once). Memcpy operations are memcpy; kernels whose name "
         "matches the 'communication' regex are communication; other kernels and memsets are computation. "
         "'linked-only' counts only activities whose launch API call is in the report.",
    columns=COLUMNS,
    compute=time_breakdown,
    reads=READS,
    requires=("kernels", "memcpy", "memset"),
    options=BreakdownOptions,
)

RULES = [TIME_BREAKDOWN]
