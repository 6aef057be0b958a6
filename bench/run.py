"""Benchmark of every rule on a scaled sample report, against SQLite's own scan.

    python bench/run.py [--scale N[,M...] | --kernels N] [--nsight] [--rules a,b] [--cold-only] [--repeat N]

Generates (and caches in bench/out/) ``asys sample --scale N`` (or, with ``--kernels N``, a
report of N kernels alone; with ``--nsight``, its copy in the Nsight dialect, ``common.nsight_copy``), times SQLite's C aggregate scan of each table a rule's cold run read (those
its cache entry holds: the rule's and the engine's reads with default options; the
floor for reading the data: over start/end, and over every column the rule's cold run read,
the scan "of the same columns" of target 1), then runs each rule as a whole ``asys`` process
twice — cold (empty columnar cache) and warm (cache filled) — and prints seconds, ratios to the scans and
peak memory (RSS of the process, also less the RSS of a process that only starts up — for a
cold run, one that also loads the SQLite reader — whose seconds the header gives and the warm
seconds also appear without) against the size of the columns of the tables the rule reads
(inline text by its bytes; also with every value at 8 bytes, as runs before the eighth session
measured). Each run writes a fresh output file. ``--repeat N`` measures each rule in N rounds
and keeps the best seconds of the scan, the cold and the warm run (on a shared machine, the
runs least slowed by others) and the largest RSS. The report is read once first, into the OS page
cache, where the scans find it. For a trace rule the output's bytes matter: each run also times a
plain write of as many bytes to the same disk, and the last two ratios take it off. Writes the
table to bench/out/run_<report>.md as well; with ``--rules``, the rows of those rules replace theirs
in the table there (the other rows stay as measured before). Several scales (``--scale 287,1434``) run each rule's
rounds on every report in turn, so that the tables of issue 31's linear growth (``bench/targets.py``)
come from runs minutes apart, not hours: this machine's speed drifts by tens of percent between hours.
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from common import kernel_report, nsight_copy

from asysstats.reading.cache import ColumnCache
from asysstats.reading.schema import TABLES
from asysstats.reading.sqlite import SqliteReport
from asysstats.rulebook import REGISTRY

OUT = Path(__file__).resolve().parent / "out"


def sample(scale: int) -> Path:
    path = OUT / f"sample_{scale}.asysrep"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "asysstats", "sample", str(path), "--scale", str(scale)], check=True)
    return path


def scan_seconds(report: Path, queries: list[str]) -> float:
    """Seconds of SQLite's own aggregates (no Python rows): :func:`start_end_scans`, :func:`column_scans`."""
    con = sqlite3.connect(f"file:{report}?mode=ro", uri=True)
    begin = time.perf_counter()
    for query in queries:
        con.execute(query).fetchall()
    seconds = time.perf_counter() - begin
    con.close()
    return seconds


def physical_tables(report: Path, tables: list[str]) -> Iterator[tuple[str, str, set[str]]]:
    """(logical table, physical table, its columns) of each physical table of the logical ``tables``."""
    opened = SqliteReport(report, cache=False)
    for logical in tables:
        for table in opened.physical_tables(logical):
            yield logical, table, set(opened.table_columns(table))


def tables_read(report: Path, cache: Path) -> list[str]:
    """The logical tables whose columns a cold run left in its cache entry under ``cache``: what the
    rule read with its default options (its declared reads also name tables only an option reads)."""
    stored = ColumnCache(report, cache / "asysstats").stored()
    return sorted({logical for logical, table, _ in physical_tables(report, list(TABLES)) if table in stored})


def start_end_scans(report: Path, tables: list[str]) -> list[str]:
    """An aggregate over start/end of each physical table of the logical ``tables``."""
    queries = []
    for _, table, present in physical_tables(report, tables):
        columns = [c for c in ("start", "end") if c in present] or ["rowid"]
        expr = ", ".join(f'sum("{c}"), min("{c}"), max("{c}")' for c in columns)
        queries.append(f'SELECT count(*), {expr} FROM "{table}"')
    return queries


def column_scans(report: Path, tables: list[str], cache: Path) -> list[str]:
    """An aggregate over the columns a cold run read of each physical table of ``tables``, those
    of its cache entry under ``cache`` (``total``, a sum that cannot overflow; text by its
    length): the scan "of the same columns" of target 1."""
    stored = ColumnCache(report, cache / "asysstats").stored()
    queries = []
    for logical, table, present in physical_tables(report, tables):
        if table in stored:
            cols = [TABLES[logical].column(name) for name in stored[table]]
            expr = ", ".join(f'total(length("{source}"))' if col.kind == "text" else f'total("{source}")'
                             for col in cols if (source := col.source(present))) or "0"
            queries.append(f'SELECT count(*), {expr} FROM "{table}"')
    return queries


def run_rule(rule: str, command: str, report: Path, cache: Path, out: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one ``asys`` process."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPYCACHEPREFIX=str(OUT / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # run as installed: modules compiled once, not every run
    args = [sys.executable, "-m", "asysstats", command, "-r", rule, "--format", "csv", "-o", str(out / "r"),
            "-f", "true", str(report)]
    for old in out.glob("r_*"):  # freeing a previous run's output (up to 1.4 GB) is not the rule's time
        old.unlink()
    begin = time.perf_counter()
    process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - begin
    if status != 0:
        err = process.stderr.read().decode(errors="replace").strip() if process.stderr else ""
        print(f"  {rule}: exit {os.waitstatus_to_exitcode(status)} {err}", file=sys.stderr)
    return seconds, usage.ru_maxrss * 1024


def output_bytes(out: Path) -> int:
    return sum(path.stat().st_size for path in out.glob("r_*"))


def plain_write(out: Path, size: int) -> float:
    """Seconds to write ``size`` bytes to a new file on the disk of the outputs, as the rule writes
    its CSV (in 1 MiB pieces, no fsync): what a trace rule's time above it is measured over."""
    piece = b"x" * (1 << 20)
    path = out / "plain.bin"
    begin = time.perf_counter()
    with open(path, "wb") as file:
        for at in range(0, size, len(piece)):
            file.write(piece[:size - at])
    seconds = time.perf_counter() - begin
    path.unlink()
    return seconds


def into_page_cache(report: Path) -> None:
    """Read the report once, so that the first rule's cold run finds it in the OS page cache as
    the scans after it do."""
    with open(report, "rb") as file:
        while file.read(1 << 24):
            pass


def best(runs: list[tuple[float, int]]) -> tuple[float, int]:
    """The fewest seconds and the largest RSS of repeated runs."""
    return min(seconds for seconds, _ in runs), max(rss for _, rss in runs)


def startup(modules: str = "asysstats.cli, pyarrow.ipc") -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes; :func:`best` of three runs) of a process that only imports ``modules``:
    by default the CLI (Python, numpy, pyarrow, click), the floor of every run; a cold run
    also loads the SQLite reader, connectorx (its library alone is about 19 MB of RSS)."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(OUT / "pycache"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    runs = []
    for _ in range(3):
        begin = time.perf_counter()
        process = subprocess.Popen([sys.executable, "-c", f"import {modules}"], env=env)
        _, _, usage = os.wait4(process.pid, 0)
        runs.append((time.perf_counter() - begin, usage.ru_maxrss * 1024))
    return best(runs)


def loaded_bytes(report: Path, tables: list[str]) -> tuple[int, int]:
    """Size of the columns of the tables a rule reads — numbers at 8 bytes a value, inline text
    by its bytes and 4 of offset a value (as Arrow holds it; at least 8 a value) — and the size
    with every value at 8 bytes, the measure of runs before the eighth session."""
    sizes = [table_bytes(report, logical) for logical in tables]
    return sum(s for s, _ in sizes), sum(f for _, f in sizes)


@functools.cache
def table_bytes(report: Path, logical: str) -> tuple[int, int]:
    """:func:`loaded_bytes` of one logical table."""
    opened = SqliteReport(report, cache=False)
    spec = TABLES[logical]
    size = flat = 0
    for table in opened.physical_tables(logical):
        rows = int(opened.scalar(table, f'SELECT count(*) FROM "{table}"') or 0)
        present = set(opened.table_columns(table))
        for col in spec.columns:
            source = col.source(present)
            text = 0
            if col.kind == "text" and source:
                text = 4 * rows + int(opened.scalar(
                    table, f'SELECT sum(length(CAST("{source}" AS BLOB))) FROM "{table}"') or 0)
            size += max(8 * rows, text)
        flat += rows * 8 * len(spec.columns)
    return size, flat


HEAD = ("| rule | scan (s) | cold (s) | cold / scan | warm (s) | warm / scan | (warm − start-up) / scan "
        "| scan of the columns read (s) | cold / that scan | warm / that scan "
        "| peak RSS (MB) | columns (MB) | RSS / columns | (RSS − start-up) / columns "
        "| (RSS − start-up) / columns, text at 8 B a value "
        "| output (MB) | plain write (s) | (cold − write) / that scan | (warm − write) / that scan |")


@dataclass
class Rounds:
    """What the rounds of one rule on one report measured."""

    scans: list[float] = field(default_factory=list)
    columns_read: list[float] = field(default_factory=list)
    colds: list[tuple[float, int]] = field(default_factory=list)
    warms: list[tuple[float, int]] = field(default_factory=list)
    writes: list[float] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    size: int = 0


def one_round(rule: str, command: str, report: Path, out: Path, cold_only: bool, rounds: Rounds) -> None:
    """A cold run, the scans of what it read, a warm run and a plain write of its output's bytes."""
    cache = out / f"cache-{rule}-{report.stem}"
    shutil.rmtree(cache, ignore_errors=True)
    rounds.colds.append(run_rule(rule, command, report, cache, out))
    rounds.tables = tables_read(report, cache)
    rounds.scans.append(scan_seconds(report, start_end_scans(report, rounds.tables)))
    rounds.columns_read.append(scan_seconds(report, column_scans(report, rounds.tables, cache)))
    rounds.warms.append((float("nan"), 0) if cold_only else run_rule(rule, command, report, cache, out))
    rounds.size = output_bytes(out)
    rounds.writes.append(plain_write(out, rounds.size))
    shutil.rmtree(cache, ignore_errors=True)


def table_row(rule: str, report: Path, rounds: Rounds, floor: float, base: int, cold_base: int) -> str:
    """The Markdown row of one rule on one report: the best seconds of its rounds, the largest RSS."""
    scan, column_scan = min(rounds.scans), max(min(rounds.columns_read), 1e-4)
    (cold, cold_rss), (warm, warm_rss), write = best(rounds.colds), best(rounds.warms), min(rounds.writes)
    rss = max(cold_rss, warm_rss)
    over = max(cold_rss - cold_base, warm_rss - base)  # each run less the start-up it shares with any run
    columns, flat = (max(size, 1) for size in loaded_bytes(report, rounds.tables))
    return (f"| {rule} | {scan:.2f} | {cold:.2f} | {cold / scan:.2f} | {warm:.2f} | "
            f"{warm / scan:.2f} | {(warm - floor) / scan:.2f} | {column_scan:.2f} | "
            f"{cold / column_scan:.2f} | {warm / column_scan:.2f} | {rss / 1e6:.0f} | "
            f"{columns / 1e6:.0f} | {rss / columns:.2f} | {over / columns:.2f} | {over / flat:.2f} | "
            f"{rounds.size / 1e6:.1f} | {write:.2f} | {(cold - write) / column_scan:.2f} | "
            f"{(warm - write) / column_scan:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="200", help="a scale of asys sample, or several (287,1434) run interleaved")
    parser.add_argument("--kernels", type=int, default=0, help="a report of this many kernels alone")
    parser.add_argument("--nsight", action="store_true", help="the report's copy under Nsight's table names")
    parser.add_argument("--rules", default="")
    parser.add_argument("--cold-only", action="store_true", help="skip the warm runs (very large reports)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds of scan, cold and warm run per rule: the best seconds of each, the largest RSS")
    args = parser.parse_args()
    reports = [kernel_report(args.kernels)] if args.kernels else [sample(int(s)) for s in args.scale.split(",")]
    if args.nsight:
        reports = [nsight_copy(report) for report in reports]
    rules = [r for r in REGISTRY if r.reports == 1 and (not args.rules or r.name in args.rules.split(","))]
    floor, base = startup()
    _, cold_base = startup("asysstats.cli, pyarrow.ipc, connectorx")
    lines = {report: [f"report: {report.name} ({report.stat().st_size / 1e6:.0f} MB), machine: {os.cpu_count()} "
                      f"cores, start-up {floor:.2f} s and {base / 1e6:.0f} MB RSS ({cold_base / 1e6:.0f} MB with the "
                      "SQLite reader a cold run loads)", "", HEAD, "|---" * 19 + "|"] for report in reports}
    for report in reports:
        into_page_cache(report)
    with tempfile.TemporaryDirectory() as temp:
        out = Path(temp)
        for rule in rules:
            rounds = {report: Rounds() for report in reports}
            for _ in range(max(args.repeat, 1)):  # interleaved: a slower spell of the machine hits all of them
                for report in reports:
                    one_round(rule.name, rule.command, report, out, args.cold_only, rounds[report])
            for report in reports:
                lines[report].append(table_row(rule.name, report, rounds[report], floor, base, cold_base))
                print(lines[report][-1], flush=True)
    for report in reports:
        target = OUT / f"run_{report.stem}.md"
        table = merged(target.read_text().splitlines(), lines[report]) if args.rules and target.exists() \
            else lines[report]
        target.write_text("\n".join(table) + "\n")
        print("\n".join(lines[report][:2]))


def merged(table: list[str], fresh: list[str]) -> list[str]:
    """``table`` (a run file's lines) with the rule rows of ``fresh`` in place of its rows of the
    same rules, and those it lacks at its end: a run of a few rules updates the whole table."""
    def rule(line: str) -> str | None:
        return line.split("|")[1].strip() if line.startswith("| ") and not line.startswith(HEAD[:8]) else None

    rows = {rule(line): line for line in fresh if rule(line)}
    kept = [rows.pop(rule(line), line) if rule(line) else line for line in table]
    return kept + list(rows.values())


if __name__ == "__main__":
    main()
