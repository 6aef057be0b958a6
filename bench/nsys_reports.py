"""NVIDIA's report names against the Nsight-style SQL they replace, in one run.

    python bench/nsys_reports.py [--scale 1434] [--timeout 600] [--rules cuda_gpu_kern_sum,nvtx_kern_sum]

Makes the Nsight-dialect copy of ``asys sample --scale N`` (bench/common.py ``nsight_copy``; 1434: 5 M
kernels, 5 M API calls, 1 M NVTX ranges) and, per rule: the SQL of bench/nsys_sql.py as Nsight's
scripts run it (Python's sqlite3, ``median``/``stdev`` aggregates in Python; for ``nvtx_kern_sum``
the plain join and the join over TEMP tables with indexes, each stopped after ``--timeout`` seconds),
SQLite's own scan of the columns the rule reads (bench/run.py), and the rule as an ``asys`` process,
cold (empty cache) and warm. Prints seconds and ratios; writes bench/out/nsys_<report>.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from common import OUT, nsight_copy
from nsys_sql import KERNEL_SUMMARY, group_statistics, indexed_nvtx_kern_sum, nsys_aggregates, nvtx_kern_sum_rows
from run import column_scans, run_rule, sample, scan_seconds, startup, tables_read

# Per rule, the SQL it replaces: (label, the statements of a connection to the report; the last yields the rows).
Statements = Callable[[sqlite3.Connection], list[str] | None]
QUERIES: dict[str, list[tuple[str, Statements]]] = {
    "cuda_gpu_kern_sum": [("GROUP BY, median/stdev in Python", lambda con: [KERNEL_SUMMARY])],
    "nvtx_kern_sum": [
        ("join on the thread by time, then correlationId", lambda con: (
            None if (rows := nvtx_kern_sum_rows(con)) is None else [group_statistics(rows)])),
        ("the same join over TEMP tables with indexes", indexed_nvtx_kern_sum),
    ],
}


def sql_seconds(report: Path, statements: Statements, timeout: float) -> tuple[float, int | None]:
    """Wall seconds of the statements on a read-only connection, and the rows of the last (None: it was
    stopped after ``timeout`` seconds)."""
    con = sqlite3.connect(f"file:{report}?mode=ro", uri=True, check_same_thread=False)
    nsys_aggregates(con)
    con.execute("PRAGMA temp_store = FILE")  # TEMP tables in a temporary file, as a large export needs
    stop = threading.Timer(timeout, con.interrupt)
    begin = time.perf_counter()
    stop.start()
    try:
        queries = statements(con) or []
        rows = 0
        for query in queries:
            rows = len(con.execute(query).fetchall())
        return time.perf_counter() - begin, rows
    except sqlite3.OperationalError as error:
        if "interrupted" not in str(error):
            raise
        return time.perf_counter() - begin, None
    finally:
        stop.cancel()
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1434)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--rules", default=",".join(QUERIES))
    args = parser.parse_args()
    report = nsight_copy(sample(args.scale))
    floor, base = startup()
    lines = [f"report: {report.name} ({report.stat().st_size / 1e6:.0f} MB), machine: {os.cpu_count()} cores, "
             f"start-up {floor:.2f} s, {base / 1e6:.0f} MB RSS", "",
             "| rule | SQL it replaces | SQL (s) | rows | scan of the columns read (s) | cold (s) | warm (s) "
             "| SQL / cold | SQL / warm | cold / scan | warm / scan | peak RSS cold / warm (MB) |", "|---" * 12 + "|"]
    with tempfile.TemporaryDirectory() as temp:
        out = Path(temp)
        for rule in args.rules.split(","):
            cache = out / f"cache-{rule}"
            shutil.rmtree(cache, ignore_errors=True)
            cold, cold_rss = run_rule(rule, "stats", report, cache, out)
            warm, warm_rss = run_rule(rule, "stats", report, cache, out)
            scan = scan_seconds(report, column_scans(report, tables_read(report, cache), cache))
            for label, statements in QUERIES[rule]:
                seconds, rows = sql_seconds(report, statements, args.timeout)
                finished = rows is not None
                shown = f"{seconds:.1f}" if finished else f"> {args.timeout:.0f} (stopped)"
                ratio = (lambda ours: f"{seconds / ours:.1f}" if finished else f"> {seconds / ours:.0f}")
                lines.append(f"| `{rule}` | {label} | {shown} | {rows if finished else '-'} | {scan:.2f} | "
                             f"{cold:.2f} | {warm:.2f} | {ratio(cold)} | {ratio(warm)} | {cold / scan:.2f} | "
                             f"{warm / scan:.2f} | {cold_rss / 1e6:,.0f} / {warm_rss / 1e6:,.0f} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    (OUT / f"nsys_{report.stem}.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
