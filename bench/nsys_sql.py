"""The Nsight-style SQL that ``cuda_gpu_kern_sum``, ``nvtx_kern_sum`` and ``nvtx_gpu_proj_sum``
replace, written as Nsight's report scripts work: a ``GROUP BY`` whose median and sample deviation
are aggregates in Python (:func:`nsys_aggregates`); NVTX ranges joined with the CUDA API calls on the
thread by time containment (range start <= call start < range end), then with the GPU activities by
(process, correlationId). The range queries yield a group key ``k`` and a value ``v`` per row; the
tests (tests/test_nsys_ranges.py) take their statistics in SQL, bench/nsys_reports.py times them
(:func:`indexed_nvtx_kern_sum`: the same join over temporary tables with indexes)."""

from __future__ import annotations

import math
import sqlite3
import statistics

CALL_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")
ACTIVITY_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")

# A range without an end lasts until the last NVTX timestamp, as Nsight Systems shows it.
RANGES_SELECT = """
    SELECT n.rowid AS id, coalesce(n.text, (SELECT value FROM StringIds WHERE id = n.textId)) || '/' ||
           n.eventType || '/' || coalesce(n.domainId, 0) || '/' || n.globalTid AS name, n.globalTid, n.start,
           max(n.start, coalesce(n.end, (SELECT max(max(start), coalesce(max(end), 0)) FROM NVTX_EVENTS))) AS end
    FROM NVTX_EVENTS AS n WHERE n.eventType IN (59, 60)"""
RANGES = f"ranges AS ({RANGES_SELECT})"

LAUNCHED_SELECT = """
    SELECT r.id AS range_id, r.name, a.id AS activity_id, a.start, a.end, a.name_id
    FROM ranges AS r
    JOIN calls AS c ON c.globalTid = r.globalTid AND c.start >= r.start AND c.start < r.end
    JOIN activities AS a ON a.correlationId = c.correlationId AND a.pid = c.globalTid >> 24
    WHERE c.correlationId > 0"""
LAUNCHED = f"launched AS ({LAUNCHED_SELECT})"


def _union(con: sqlite3.Connection, tables: tuple[str, ...], columns: str) -> str | None:
    present = {name for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    parts = [f"SELECT {columns.format(table=table)} FROM {table}" for table in tables if table in present]
    return " UNION ALL ".join(parts) or None


def _launched(con: sqlite3.Connection, activities: tuple[str, ...], name_id: str) -> str | None:
    """The WITH clauses up to ``launched`` (range, activity) pairs; None without the tables."""
    calls = _union(con, CALL_TABLES, "globalTid, start, correlationId")
    acts = _union(con, activities, "'{table}' || ':' || rowid AS id, start, end, correlationId, globalPid >> 24 AS pid, "
                  + name_id)
    has_nvtx = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone()
    if calls is None or acts is None or not has_nvtx:
        return None
    return f"WITH calls AS ({calls}), activities AS ({acts}), {RANGES}, {LAUNCHED}"


def nvtx_kern_sum_rows(con: sqlite3.Connection) -> str | None:
    """Per (range name, style, domain, thread, kernel name) and kernel, the kernel's duration:
    a kernel counts once per group, in every range around its launch call."""
    head = _launched(con, ACTIVITY_TABLES[:1], "demangledName AS name_id")
    if head is None:
        return None
    return f"{head} SELECT DISTINCT name || '/' || name_id AS k, activity_id, end - start AS v FROM launched"


def nvtx_gpu_proj_sum_rows(con: sqlite3.Connection) -> str | None:
    """Per range with GPU work, its name key and projected time: the first start to the last
    end of the kernels, memcpy and memset launched inside it."""
    head = _launched(con, ACTIVITY_TABLES, "0 AS name_id")
    if head is None:
        return None
    return f"{head} SELECT name AS k, max(end) - min(start) AS v FROM launched GROUP BY range_id"


class Median:
    """SQLite aggregate ``median(v)``: the middle value, the mean of the two middle ones."""

    def __init__(self) -> None:
        self.values: list[float] = []

    def step(self, value: float | None) -> None:
        if value is not None:
            self.values.append(value)

    def finalize(self) -> float | None:
        return statistics.median(self.values) if self.values else None


class SampleDeviation:
    """SQLite aggregate ``stdev(v)``: the sample standard deviation (0 for one value), by Welford's sums."""

    def __init__(self) -> None:
        self.count, self.mean, self.squares = 0, 0.0, 0.0

    def step(self, value: float | None) -> None:
        if value is not None:
            self.count += 1
            delta = value - self.mean
            self.mean += delta / self.count
            self.squares += delta * (value - self.mean)

    def finalize(self) -> float | None:
        return math.sqrt(self.squares / (self.count - 1)) if self.count > 1 else 0.0 if self.count else None


def nsys_aggregates(con: sqlite3.Connection) -> None:
    """``median`` and ``stdev`` on ``con``, as Nsight's report scripts register them."""
    con.create_aggregate("median", 1, Median)  # type: ignore[arg-type]
    con.create_aggregate("stdev", 1, SampleDeviation)  # type: ignore[arg-type]


KERNEL_SUMMARY = """
SELECT round(100.0 * sum(end - start) / (SELECT sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL), 1),
       sum(end - start), count(*), avg(end - start), median(end - start), min(end - start), max(end - start),
       stdev(end - start), (SELECT value FROM StringIds WHERE id = demangledName)
FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY demangledName ORDER BY 2 DESC"""


def group_statistics(rows: str) -> str:
    """The statistics of each group ``k`` of the rows ``(k, v)``, most time first."""
    return (f"SELECT k, sum(v), count(*), avg(v), median(v), min(v), max(v), stdev(v) FROM ({rows}) "
            "GROUP BY k ORDER BY 2 DESC")


def indexed_nvtx_kern_sum(con: sqlite3.Connection) -> list[str] | None:
    """``nvtx_kern_sum``'s join as statements over TEMP tables (the report is not written): the calls
    indexed by (thread, start), the kernels by (correlationId, process), the ranges made once; the
    last statement yields each group's statistics."""
    calls = _union(con, CALL_TABLES, "globalTid, start, correlationId")
    if calls is None or not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'NVTX_EVENTS'").fetchone():
        return None
    return [
        f"CREATE TEMP TABLE calls AS {calls}",
        "CREATE INDEX temp.calls_by_thread ON calls (globalTid, start)",
        "CREATE TEMP TABLE activities AS SELECT rowid AS id, start, end, correlationId, globalPid >> 24 AS pid, "
        "demangledName AS name_id FROM CUPTI_ACTIVITY_KIND_KERNEL",
        "CREATE INDEX temp.activities_by_call ON activities (correlationId, pid)",
        f"CREATE TEMP TABLE ranges AS {RANGES_SELECT}",
        group_statistics(f"SELECT DISTINCT launched.name || '/' || name_id AS k, activity_id, end - start AS v "
                         f"FROM ({LAUNCHED_SELECT}) AS launched"),
    ]
