"""Helpers shared by the benchmarks: cached synthetic reports, timing, file state."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path
from typing import Callable

from asysstats.reading.schema import ASYSREP, NSYS, TABLES

OUT = Path(__file__).resolve().parent / "out"  # git-ignored
KERNEL_NAMES = 24


def kernel_report(kernels: int, out: Path = OUT) -> Path:
    """A report with only StringIds and a kernel table of ``kernels`` rows (cached in
    ``out``). Written by one ``INSERT ... SELECT`` from a recursive CTE: ~5 s per million.

    Every column of the loader's schema is present; ``graphNodeId``/``graphId`` are NULL
    except on every 10th row, as in a report where a tenth of the kernels ran from graphs."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"kernels_{kernels}.sqlite"
    if path.exists():
        return path
    partial = path.with_suffix(".part")
    partial.unlink(missing_ok=True)
    table = TABLES["kernels"].physical[ASYSREP][0]
    columns = [c.physical()[0] for c in TABLES["kernels"].columns]
    values = {
        "start": "1000000000 + i * 1500 + (i * 7919) % 97",
        "end": "1000000000 + i * 1500 + (i * 7919) % 97 + 400 + (i * 2654435761) % 997",
        "deviceId": "i % 4", "contextId": "1", "streamId": "7 + i % 2", "correlationId": "i / 4 + 1",
        "globalPid": "(1 << 48) | ((31000 + i % 4) << 24)",
        "demangledName": f"(i * 31) % {KERNEL_NAMES}", "shortName": f"(i * 31) % {KERNEL_NAMES}",
        "mangledName": f"(i * 31) % {KERNEL_NAMES}",
        "gridX": "128", "gridY": "1", "gridZ": "1", "blockX": "256", "blockY": "1", "blockZ": "1",
        "registersPerThread": "64", "staticSharedMemory": "0", "dynamicSharedMemory": "16384",
        "graphId": "CASE WHEN i % 10 = 0 THEN 2 END", "graphNodeId": "CASE WHEN i % 10 = 0 THEN 5 + i % 3 END",
    }
    con = sqlite3.connect(partial)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        with con:
            con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
            con.executemany("INSERT INTO StringIds VALUES (?, ?)",
                            [(i, f"void bench::kernel_{i}<float, {i}>(float*, int)") for i in range(KERNEL_NAMES)])
            ddl = ", ".join('"%s" INTEGER' % c for c in columns)
            con.execute(f'CREATE TABLE "{table}" ({ddl})')
            con.execute(f'WITH RECURSIVE seq(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i < {kernels - 1}) '
                        f'INSERT INTO "{table}" SELECT {", ".join(values[c] for c in columns)} FROM seq')
    finally:
        con.close()
    os.replace(partial, path)
    return path


def nsight_copy(report: Path) -> Path:
    """An Nsight-dialect copy of the asysrep ``report`` (cached beside it as ``<stem>.nsys.sqlite``):
    every table under the name an Nsight export gives it (``HGPTI_ACTIVITY_KIND_KERNEL`` ->
    ``CUPTI_ACTIVITY_KIND_KERNEL``, ``HGTX_EVENTS`` -> ``NVTX_EVENTS``, ...), the asysrep marker
    left out: what SQL written for Nsight exports reads. The report itself is opened read-only."""
    renamed = {spec.physical[ASYSREP][0]: spec.physical[NSYS][0] for spec in TABLES.values()
               if spec.physical[ASYSREP] and spec.physical[NSYS]}

    def fill(con: sqlite3.Connection) -> None:
        tables = con.execute("SELECT name, sql FROM source.sqlite_master WHERE type = 'table'").fetchall()
        for table, ddl in tables:  # the table's own DDL (its keys), under its Nsight name
            name = renamed.get(table, table)
            con.execute(ddl.replace(table, name, 1))
            con.execute(f'INSERT INTO "{name}" SELECT * FROM source."{table}"'
                        + (" WHERE name <> 'ReportFormat'" if table == "META_DATA_EXPORT" else ""))

    return copy_of(report, report.with_name(f"{report.stem}.nsys.sqlite"), fill)


SHIFTED_IDS = ("correlationId", "rangeId")  # ids that link rows of the tables: a copy's are its own


def replicated(report: Path, times: int) -> Path:
    """A copy of ``report`` with every table of events (a ``start`` column) ``times`` times over,
    cached beside it as ``<stem>_x<times>.asysrep``: copy k follows copy k-1 in time (its times
    shifted by k spans of the capture) and has its own correlation and range ids, so that launches,
    kernels and ranges link within their copy only and each table stays in time order; the capture
    (``ANALYSIS_DETAILS``) spans them all. The report itself is opened read-only."""
    source = sqlite3.connect(f"file:{report}?mode=ro", uri=True)
    try:
        first, last = source.execute("SELECT min(startTime), max(stopTime) FROM ANALYSIS_DETAILS").fetchone()
        tables = [name for (name,) in source.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        columns = {name: [row[1] for row in source.execute(f'PRAGMA table_info("{name}")')] for name in tables}
        largest = {column: max(int(source.execute(f'SELECT max("{column}") FROM "{name}"').fetchone()[0] or 0)
                               for name in tables if column in columns[name]) for column in SHIFTED_IDS}
    finally:
        source.close()
    span = last - first + 1

    def fill(con: sqlite3.Connection) -> None:
        for name, ddl in con.execute("SELECT name, sql FROM source.sqlite_master WHERE type = 'table'").fetchall():
            con.execute(ddl)
            if "start" not in columns[name]:
                con.execute(f'INSERT INTO "{name}" SELECT * FROM source."{name}"')
                continue
            for k in range(times):  # a copy at a time: each scan of the source in rowid order appends in order
                shifted = {"start": span * k, "end": span * k, **{c: (largest[c] + 1) * k for c in SHIFTED_IDS}}
                select = ", ".join(f'"{c}" + {shifted[c]}' if c in shifted else f'"{c}"' for c in columns[name])
                con.execute(f'INSERT INTO "{name}" SELECT {select} FROM source."{name}"')
        con.execute(f"UPDATE ANALYSIS_DETAILS SET stopTime = stopTime + {span * (times - 1)}, "
                    f"duration = duration + {span * (times - 1)}")

    return copy_of(report, report.with_name(f"{report.stem}_x{times}{report.suffix}"), fill)


def copy_of(report: Path, path: Path, fill: Callable[[sqlite3.Connection], None]) -> Path:
    """``path``, unless it exists: a new database that ``fill`` writes from ``report`` (attached
    read-only as ``source``), in one transaction without a journal, renamed into place when done."""
    if path.exists():
        return path
    partial = path.with_suffix(".part")
    partial.unlink(missing_ok=True)
    con = sqlite3.connect(f"file:{partial}?mode=rwc", uri=True)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        con.execute("ATTACH DATABASE ? AS source", (f"file:{report}?mode=ro",))
        with con:
            fill(con)
    finally:
        con.close()
    os.replace(partial, path)
    return path


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    """The shortest wall time of ``repeat`` calls (seconds) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def file_state(path: Path) -> tuple[str, int, list[str]]:
    """Content hash, mtime and the sidecar files (-wal, -shm, -journal) of a database."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    sidecars = sorted(p.name for p in path.parent.glob(path.name + "-*"))
    return digest, path.stat().st_mtime_ns, sidecars
