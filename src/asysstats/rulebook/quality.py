"""Data-quality checks of a report (``asys stats --check``) and the default exclusion of
suspect events. Every check is vectorised and looks at the whole report (no time window):

* ``end before start`` — events of any table with start and end whose end precedes their
  start (an optional end left empty, such as an HGTX mark's, is not checked);
* ``longer than capture`` — events lasting longer than the capture of ``ANALYSIS_DETAILS``
  (without it the capture is the span of the events, which no event outlasts);
* ``time beyond 2^62 ns`` — events with a start or end at or past ±2^62 ns (146 years), left out
  of every statistic even with ``--keep-suspect-events``;
* ``no launch call`` — kernels, memcpy and memset whose (process, correlationId) is not among
  the API calls (checked when API calls were traced; correlationId 0 marks activities no call
  caused, such as unified-memory migrations);
* ``launch without activity`` — successful API calls named ``*LaunchKernel*``,
  ``*GraphLaunch*``, ``*Memcpy*`` or ``*Memset*`` that ran no PPU activity and created no graph
  node (checked when PPU activity was traced);
* ``starts before launch`` — PPU activities starting before their launch call started;
* ``outside capture`` — PPU activities starting before or ending after both the capture and
  the host API calls (a device clock offset);
* ``broken nesting`` — push/pop ranges not inside the range one level up on their thread
  (the nesting of :func:`asysstats.analysis.nesting.nesting`; none is reported exactly when every thread's
  ranges nest properly);
* ``unmatched free`` — frees releasing no earlier allocation of the same process, device and
  address (the matching of ``device_memory_usage_*``).

Unless ``--keep-suspect-events``, the tables that rules read (``engine.Inputs.table``) leave out
the events of the first two checks, and the run notes how many (:mod:`asysstats.analysis.suspects`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

import numpy as np

from asysstats.analysis.declarations import RowsOptions, Rule, merged_reads
from asysstats.analysis.hgtx import all_ranges
from asysstats.analysis.launches import launch_rows, runtime_calls
from asysstats.analysis.reads import CALL_READS, HGTX_READS, PPU_KINDS
from asysstats.analysis.suspects import TIMED_TABLES, suspects
from asysstats.compute.distinct import distinct
from asysstats.compute.keys import pair_key
from asysstats.core.result import INT, TEXT, Column, Frame
from asysstats.core.tables import NA, EventTable
from asysstats.reading.schema import TABLES

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs

EXAMPLES = 3
LAUNCH_NAMES = re.compile("LaunchKernel|GraphLaunch|Memcpy|Memset")
CHECKS = ("end before start", "longer than capture", "time beyond 2^62 ns", "no launch call",
          "launch without activity", "starts before launch", "outside capture", "broken nesting", "unmatched free")

Finding = tuple[str, str, int, str]  # check, table, count, examples
ACTIVITY_COLUMNS = ("start", "end", "deviceId", "correlationId", "globalPid")
CALL_COLUMNS = ("start", "globalTid", "correlationId", "nameId", "returnValue")
MEMORY_COLUMNS = ("start", "globalPid", "deviceId", "address", "memoryOperationType")
READS = merged_reads({name: ("start", "end") for name in TIMED_TABLES}, {name: ACTIVITY_COLUMNS for name in PPU_KINDS},
                     CALL_READS, {"runtime": CALL_COLUMNS, "graph_nodes": ("globalTid", "correlationId"),
                                  "memory_usage": MEMORY_COLUMNS}, HGTX_READS)


def finding(check: str, table: str, selected: np.ndarray, describe: Callable[[int], str]) -> list[Finding]:
    """One finding of the rows ``selected`` (a mask, or ascending rows; none when empty), the
    first few described."""
    rows = np.flatnonzero(selected) if selected.dtype == bool else selected
    if len(rows) == 0:
        return []
    return [(check, table, len(rows), "; ".join(describe(int(r)) for r in rows[:EXAMPLES]))]


def timing(inputs: "Inputs") -> list[Finding]:
    out = []
    for name in (n for n in TIMED_TABLES if inputs.has(n)):
        t, found = inputs.whole(name, ("start", "end")), suspects(inputs, name)
        s, e = t["start"], t["end"]
        out += finding("end before start", name, found.backwards, lambda r: f"row {r + 1}: start {s[r]}, end {e[r]}")
        out += finding("longer than capture", name, found.longer,
                       lambda r: f"row {r + 1}: {e[r] - s[r]} ns (capture {found.capture} ns)")
        out += finding("time beyond 2^62 ns", name, found.outside, lambda r: f"row {r + 1}: start {s[r]}, end {e[r]}")
    return out


def launches(inputs: "Inputs") -> list[Finding]:
    """Activities without launch call, or starting before it; launch calls without activity."""
    calls = runtime_calls(inputs)
    if calls.rows == 0:
        return []
    present = [n for n in PPU_KINDS if inputs.has(n)]
    out, ran = [], []
    for name in present:
        a = inputs.whole(name, ("start", "deviceId", "correlationId", "globalPid"))
        ran.append(pair_key(a["pid"], a["correlationId"]))
        launch = launch_rows(calls, a)
        lead = calls["start"][np.maximum(launch, 0)] - a["start"]
        out += finding("no launch call", name, (a["correlationId"] > 0) & (launch < 0),
                       lambda r: f"row {r + 1}: device {a['deviceId'][r]}, correlation {a['correlationId'][r]}, "
                                 f"start {a['start'][r]}")
        out += finding("starts before launch", name, (launch >= 0) & (lead > 0),
                       lambda r: f"row {r + 1}: device {a['deviceId'][r]} starts {lead[r]} ns before its launch call")
    if present:
        out += silent_launches(inputs, ran)
    return out


def silent_launches(inputs: "Inputs", ran: list[np.ndarray]) -> list[Finding]:
    """Successful launch calls whose (process, correlationId) no activity or graph node has."""
    calls = inputs.whole("runtime", CALL_COLUMNS)
    if inputs.has("graph_nodes"):
        nodes = inputs.whole("graph_nodes", ("globalTid", "correlationId"))
        ran.append(pair_key(nodes["pid"], nodes["correlationId"]))
    uniq, slot = distinct(np.maximum(calls["nameId"], 0))
    names = inputs.strings.lookup(uniq)
    named = np.array([n is not None and LAUNCH_NAMES.search(n) is not None for n in names], bool)
    lonely = named[slot] & (calls["nameId"] >= 0) & (calls["returnValue"] == 0) & (calls["correlationId"] > 0) \
        & ~np.isin(pair_key(calls["pid"], calls["correlationId"]), np.concatenate(ran))
    return finding("launch without activity", "runtime", lonely,
                   lambda r: f"row {r + 1}: {names[slot[r]]} at {calls['start'][r]} "
                             f"(correlation {calls['correlationId'][r]})")


def outside_capture(inputs: "Inputs") -> list[Finding]:
    """PPU activities outside the capture widened to the host API calls."""
    if not inputs.has("analysis"):
        return []
    lo, hi = inputs.capture_range()
    for host in (inputs.whole(n, ("start", "end")) for n in ("runtime", "osrt") if inputs.has(n)):
        if host.rows:
            lo, hi = min(lo, int(host["start"].min())), max(hi, int(host["end"].max()))
    out = []
    for name in (n for n in PPU_KINDS if inputs.has(n)):
        a = inputs.whole(name, ("start", "end", "deviceId"))
        s, e, d = a["start"], np.maximum(a["end"], a["start"]), a["deviceId"]
        out += finding("outside capture", name, (s < lo) | (e > hi),
                       lambda r: f"row {r + 1}: device {d[r]} starts {lo - s[r]} ns before the capture" if s[r] < lo
                       else f"row {r + 1}: device {d[r]} ends {e[r] - hi} ns after the capture")
    return out


def nesting_breaks(ranges: EventTable) -> tuple[np.ndarray, np.ndarray]:
    """Mask of the push/pop ranges (of :func:`asysstats.analysis.hgtx.all_ranges`, sorted by ``rangeId``)
    ending after their parent, and each range's parent row (0 without parent). None is flagged
    exactly when every thread's ranges nest properly: a range at level L > 0 always has a
    parent, the latest range at level L-1 before it on its thread."""
    has_parent = ranges["parentId"] != NA
    parent = np.where(has_parent, np.searchsorted(ranges["rangeId"], ranges["parentId"]), 0)
    return has_parent & (ranges["end"] > ranges["end"][parent]), parent


def broken_nesting(inputs: "Inputs") -> list[Finding]:
    ranges = all_ranges(inputs)
    broken, parent = nesting_breaks(ranges)
    ids, names, s, e = ranges["rangeId"], ranges["name"], ranges["start"], ranges["end"]

    def describe(r: int) -> str:
        p, text = parent[r], inputs.strings.text
        return (f"range {ids[r]} '{text(names[r])}' [{s[r]}, {e[r]}) on thread {ranges['tid'][r]} is not inside "
                f"range {ids[p]} '{text(names[p])}' [{s[p]}, {e[p]})")
    return finding("broken nesting", "hgtx", broken, describe)


def unmatched_frees(inputs: "Inputs") -> list[Finding]:
    if not inputs.has("memory_usage"):
        return []
    from asysstats.rulebook.memory_usage import ALLOC, FREE, released_pairs

    mem = inputs.whole("memory_usage", MEMORY_COLUMNS)
    op = mem["memoryOperationType"]
    rows = np.flatnonzero((op == ALLOC) | (op == FREE))
    m = mem.take(rows)
    released = released_pairs(m["pid"], m["deviceId"], m["address"], m["start"], m["memoryOperationType"])
    return finding("unmatched free", "memory_usage", (m["memoryOperationType"] == FREE) & (released < 0),
                   lambda r: f"row {rows[r] + 1}: free of address {m['address'][r]} on device {m['deviceId'][r]} "
                             f"(pid {m['pid'][r]}) at {m['start'][r]}")


def report_check(inputs: "Inputs", options: RowsOptions) -> Frame:
    found = timing(inputs) + launches(inputs) + outside_capture(inputs) + broken_nesting(inputs) \
        + unmatched_frees(inputs)
    found.sort(key=lambda f: CHECKS.index(f[0]))  # stable: tables keep their order within a check
    check, table, count, example = zip(*found) if found else ((), (), (), ())
    return {"Check": np.array(check, dtype=object), "Table": np.array(table, dtype=object),
            "Count": np.array(count, dtype=np.int64), "Example": np.array(example, dtype=object)}


CHECK = Rule(
    name="report_check",  # rules.registry.CHECK_RULE
    title="Report Data Quality",
    help="Data-quality problems of the report (asys stats --check), one row per failing check and table: "
         + "; ".join(CHECKS) + ". Checks the whole report, ignoring --filter-time and --filter-hgtx.",
    columns=(Column("Check", TEXT, "The failing check"),
             Column("Table", TEXT, "The logical table of the failing events (kernels, runtime, hgtx, ...)"),
             Column("Count", INT, "Number of failing events"),
             Column("Example", TEXT, "Up to three failing rows (1-based row numbers of the table, in stored order)")),
    compute=report_check,
    reads=READS,
    requires=tuple(TABLES),
    options=RowsOptions,
)
