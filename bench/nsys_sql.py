"""The Nsight-style SQL that ``nvtx_kern_sum`` and ``nvtx_gpu_proj_sum`` replace, written as
Nsight's report scripts work: NVTX ranges joined with the CUDA API calls on the thread by time
containment (range start <= call start < range end), then with the GPU activities by
(process, correlationId). Each query yields a group key ``k`` and a value ``v`` per row; the
tests (tests/test_nsys_ranges.py) take their statistics in SQL, and bench/ can time them."""

from __future__ import annotations

import sqlite3

CALL_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER")
ACTIVITY_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")

# A range without an end lasts until the last NVTX timestamp, as Nsight Systems shows it.
RANGES = """ranges AS (
    SELECT n.rowid AS id, coalesce(n.text, (SELECT value FROM StringIds WHERE id = n.textId)) || '/' ||
           n.eventType || '/' || coalesce(n.domainId, 0) || '/' || n.globalTid AS name, n.globalTid, n.start,
           max(n.start, coalesce(n.end, (SELECT max(max(start), coalesce(max(end), 0)) FROM NVTX_EVENTS))) AS end
    FROM NVTX_EVENTS AS n WHERE n.eventType IN (59, 60))"""

LAUNCHED = """launched AS (
    SELECT r.id AS range_id, r.name, a.id AS activity_id, a.start, a.end, a.name_id
    FROM ranges AS r
    JOIN calls AS c ON c.globalTid = r.globalTid AND c.start >= r.start AND c.start < r.end
    JOIN activities AS a ON a.correlationId = c.correlationId AND a.pid = c.globalTid >> 24
    WHERE c.correlationId > 0)"""


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
