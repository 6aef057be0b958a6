"""Device memory usage grouped by allocation call stack (``device_memory_usage_summary``,
``device_memory_usage_detail``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asysstats.analysis.callstacks import chain_membership, group_labels, parse_groups
from asysstats.analysis.declarations import ROWS, Option, Options, Rule
from asysstats.analysis.inputs import Inputs
from asysstats.compute.grouped import group_by
from asysstats.compute.keys import lookup, lookup_pair
from asysstats.core.result import INT, TEXT, Column, Frame
from asysstats.core.tables import NA, EventTable

ALLOC, FREE = 0, 1
MEMORY_COLUMNS = ("start", "globalPid", "globalTid", "deviceId", "contextId", "address", "bytes",
                  "accessFlags", "memoryOperationType", "correlationId")
FIRST_GROUP = Option("match-first-group", "flag",
                     "Assign an allocation only to the first matching call-stack group (default: all).", False)
CALL_COLUMNS = ("globalTid", "correlationId", "callchainId")
FRAME_COLUMNS = ("id", "stackDepth", "symbol", "module")
READS = {"memory_usage": MEMORY_COLUMNS, "runtime": CALL_COLUMNS, "callchains": FRAME_COLUMNS}
SUMMARY_MODES = ("alloc-size", "unreleased-size", "alloc-count", "unreleased-count")
SUMMARY_MODE = Option("usage-mode", "choice", "What to sum: allocated or unreleased bytes or counts.",
                      "unreleased-size", choices=SUMMARY_MODES)
DETAIL_MODE = Option("usage-mode", "choice", "'unreleased' allocations or 'all' allocations and frees.",
                     "unreleased", choices=("all", "unreleased"))


@dataclass(frozen=True)
class SummaryOptions(Options):
    rows: int | None = ROWS.field()
    usage_mode: str = SUMMARY_MODE.field()
    match_first_group: bool = FIRST_GROUP.field()


@dataclass(frozen=True)
class DetailOptions(Options):
    rows: int | None = ROWS.field()
    usage_mode: str = DETAIL_MODE.field()
    match_first_group: bool = FIRST_GROUP.field()


def released_pairs(pid: np.ndarray, device: np.ndarray, address: np.ndarray, start: np.ndarray,
                   operation: np.ndarray) -> np.ndarray:
    """Per row, the allocation row a free releases (-1 otherwise). A free releases the latest
    earlier event of its process, device and address when that event is an allocation
    (rows in stored order break timestamp ties); an address may be reused after a free."""
    n = len(start)
    freed = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return freed
    order = np.lexsort((np.arange(n), start, address, device, pid))
    same = (pid[order][1:] == pid[order][:-1]) & (device[order][1:] == device[order][:-1]) \
        & (address[order][1:] == address[order][:-1])
    pair = same & (operation[order][:-1] == ALLOC) & (operation[order][1:] == FREE)
    freed[order[1:][pair]] = order[:-1][pair]
    return freed


def _api_calls(inputs: Inputs, pid: np.ndarray, correlation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(callchain id, tid) of the API call with the same process and correlation id (-1 if none).
    Read from the whole report: the call may start just before the ``--filter-time`` window."""
    if not inputs.has("runtime"):
        return np.full(len(pid), -1), np.full(len(pid), -1)
    calls = inputs.whole("runtime", CALL_COLUMNS)
    row = lookup_pair(calls["pid"], calls["correlationId"], pid, correlation)
    row[correlation < 0] = -1
    found = row >= 0
    return np.where(found, calls["callchainId"][row], -1), np.where(found, calls["tid"][row], -1)


def memory_events(inputs: Inputs, first_only: bool) -> EventTable:
    """Allocation and free rows with ``pid``, ``tid``, ``released``/``allocation`` links and
    the ``group`` label id of the allocation's call stack."""
    mem = inputs.table("memory_usage", MEMORY_COLUMNS)
    operation = mem["memoryOperationType"]
    mem = mem.take((operation == ALLOC) | (operation == FREE))
    pid = (mem["globalPid"] >> 24) & 0xFFFFFF
    operation = mem["memoryOperationType"]
    allocation = released_pairs(pid, mem["deviceId"], mem["address"], mem["start"], operation)
    chain, api_tid = _api_calls(inputs, pid, mem["correlationId"])
    own = mem["globalTid"] >= 0
    tid = np.where(own, mem["globalTid"] & 0xFFFFFF, np.where(api_tid >= 0, api_tid, NA))
    chain = np.where(allocation >= 0, chain[np.maximum(allocation, 0)], chain)  # a free shows its allocation
    config = parse_groups(inputs.settings.callstack_groups)
    frames = inputs.table("callchains", FRAME_COLUMNS)
    ids, member = chain_membership(config, frames, inputs.strings)
    labels = group_labels(inputs.strings, config.names,
                          np.vstack([member, np.zeros((1, len(config.names)), bool)]), first_only)
    slot = lookup(ids, chain)
    released = np.zeros(mem.rows, dtype=bool)
    released[allocation[allocation >= 0]] = True
    size = np.where(allocation >= 0, mem["bytes"][np.maximum(allocation, 0)], mem["bytes"])
    return mem.with_columns(pid=pid, tid=tid, released=released, allocation=allocation,
                            group=labels[np.where(slot >= 0, slot, len(ids))],
                            size=np.where(operation == FREE, -size, size))


SUMMARY_COLUMNS = (
    Column("PID", INT, "Process identifier"),
    Column("Device ID", INT, "PPU device identifier"),
    Column("Group List", TEXT, "The call-stack group(s) of the memory usage, separated by '/'"),
    Column("Memory Usage", INT, "Device memory usage: bytes or allocation count, by 'usage-mode'"),
)


def usage_summary(inputs: Inputs, options: SummaryOptions) -> Frame:
    mode = options.usage_mode
    events = memory_events(inputs, options.match_first_group)
    keep = events["memoryOperationType"] == ALLOC
    if mode.startswith("unreleased"):
        keep &= ~events["released"]
    events = events.take(keep)
    value = events["size"] if mode.endswith("size") else np.ones(events.rows, dtype=np.int64)
    groups = group_by([events["pid"], events["deviceId"], events["group"]])
    usage = groups.reduce(np.add, value)
    pid, device, label = groups.keys
    order = np.lexsort((device, pid, inputs.strings.sort_rank(label), -usage))
    return {"PID": pid[order], "Device ID": device[order], "Group List": label[order], "Memory Usage": usage[order]}


DETAIL_COLUMNS = SUMMARY_COLUMNS[:3] + (
    Column("Time (ns)", INT, "Memory usage timestamp"),
    Column("TID", INT, "Thread identifier (of the event, else of its API call)"),
    Column("Context ID", INT, "Context identifier"),
    Column("Memory", INT, "Memory address"),
    Column("Size (bytes)", INT, "Memory usage size; negative for a free (the size it releases)"),
    Column("Access Flag", INT, "Memory access flag"),
    Column("Event ID", INT, "Correlation id of the event (its API call)"),
)


def usage_detail(inputs: Inputs, options: DetailOptions) -> Frame:
    events = memory_events(inputs, options.match_first_group)
    if options.usage_mode == "unreleased":
        events = events.take((events["memoryOperationType"] == ALLOC) & ~events["released"])
    order = np.lexsort((np.arange(events.rows), events["deviceId"], events["pid"], events["start"]))
    e = events.take(order)
    return {"PID": e["pid"], "Device ID": e["deviceId"], "Group List": e["group"], "Time (ns)": e["start"],
            "TID": e["tid"], "Context ID": e["contextId"], "Memory": e["address"], "Size (bytes)": e["size"],
            "Access Flag": _or_na(e["accessFlags"]), "Event ID": _or_na(e["correlationId"])}


def _or_na(values: np.ndarray) -> np.ndarray:
    """Negative fill values (absent cells) as ``NA`` (printed ``-``)."""
    return np.where(values >= 0, values, NA)


GROUPING_HELP = ("Allocations are grouped by their call stack (that of the API call with the same correlation "
                 "id) with --callstack-group-config rules, or the built-in groups; unmatched memory is 'others'. "
                 "A free releases the latest earlier allocation of its process, device and address.")

SUMMARY = Rule(
    name="device_memory_usage_summary",
    title="Device Memory Usage Summary",
    help="Device memory usage per process, device and call-stack group, in descending order. " + GROUPING_HELP,
    columns=SUMMARY_COLUMNS,
    numbered=False,  # the reference's example header: PID,Device ID,Group List,Memory Usage,
    compute=usage_summary,
    reads=READS,
    options=SummaryOptions,
    share="Memory Usage",
)

DETAIL = Rule(
    name="device_memory_usage_detail",
    title="Device Memory Usage Detail",
    help="Device memory allocations (and frees with usage-mode=all) with their call-stack groups, "
         "in time order. " + GROUPING_HELP,
    columns=DETAIL_COLUMNS,
    compute=usage_detail,
    reads=READS,
    options=DetailOptions,
)

RULES = [SUMMARY, DETAIL]
