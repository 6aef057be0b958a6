"""Which SQLite reader should the loader use? Times them on one kernel table, in one run.

    python bench/readers.py [--kernels 5000000] [--repeat 1]

The report (StringIds + a kernel table) is built once and cached under bench/out/.
Timed: SQLite's own aggregate over the table (the floor: every page read, nothing
returned), then each reader fetching five columns of every row, then the asysstats
loader (``SqliteReport.load``: connectorx in rowid slices on parallel threads, then numpy),
cold and from its column cache. Then checks on tiny databases: NULLs (in a column with values,
in an all-NULL column), an empty table, a read-only (``mode=ro``) open, and whether a
read of a WAL-mode database leaves ``-wal``/``-shm`` files or changes the file.
Results go to stdout and bench/out/readers.json. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import sqlite3
import sys
import tempfile
import time
import urllib.parse
from importlib.metadata import version
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import OUT, best_of, file_state, kernel_report  # noqa: E402

TABLE = "HGPTI_ACTIVITY_KIND_KERNEL"
FLOOR = f'SELECT count(*), sum("end" - start), min(start), max("end"), sum(deviceId) FROM {TABLE}'
FIVE = f'SELECT start, "end", deviceId, correlationId, demangledName FROM {TABLE}'


def ro_uri(path: Path) -> str:
    return "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"


def read_sqlite3(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(ro_uri(path), uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def read_pandas(path: Path, sql: str):
    import pandas as pd

    con = sqlite3.connect(ro_uri(path), uri=True)
    try:
        return pd.read_sql(sql, con)
    finally:
        con.close()


def read_adbc(path: Path, sql: str):
    import adbc_driver_sqlite.dbapi as adbc

    con = adbc.connect(ro_uri(path))
    try:
        cur = con.cursor()
        cur.execute(sql)
        table = cur.fetch_arrow_table()
        cur.close()
        return table
    finally:
        con.close()


def read_connectorx(path: Path, sql: str):
    import connectorx

    return connectorx.read_sql("sqlite://" + urllib.parse.quote(str(path.resolve())), sql, return_type="arrow")


READERS: dict[str, Callable[[Path, str], object]] = {
    "sqlite3 fetchall": read_sqlite3,
    "pandas.read_sql": read_pandas,
    "adbc-driver-sqlite (arrow)": read_adbc,
    "connectorx (arrow)": read_connectorx,
}


def load_with_asysstats(path: Path, cache: bool = False):
    from asysstats.reading.sqlite import SqliteReport

    report = SqliteReport(path, cache=cache)
    try:
        return report.load("kernels", ("start", "end", "deviceId", "correlationId", "demangledName"))
    finally:
        report.close()


def rows_of(result) -> int:
    return getattr(result, "num_rows", None) or getattr(result, "rows", None) or len(result)


def timings(path: Path, repeat: int) -> list[dict]:
    for reader in READERS.values():  # imports and first connections are not timed
        reader(path, f"SELECT start FROM {TABLE} LIMIT 1")
    load_with_asysstats(kernel_report(10))
    read_sqlite3(path, FLOOR)  # every reader then finds the file in the OS page cache
    floor, agg = best_of(repeat, lambda: read_sqlite3(path, FLOOR))
    out = [{"reader": "SQLite aggregate (floor)", "seconds": floor, "rows": agg[0][0]}]
    for name, reader in READERS.items():
        seconds, result = best_of(repeat, lambda: reader(path, FIVE))
        out.append({"reader": name, "seconds": seconds, "rows": rows_of(result)})
    seconds, table = best_of(repeat, lambda: load_with_asysstats(path))
    out.append({"reader": "asysstats SqliteReport.load, cold", "seconds": seconds, "rows": table.rows})
    load_with_asysstats(path, cache=True)  # fills the column cache (bench/out/cache)
    seconds, table = best_of(repeat, lambda: load_with_asysstats(path, cache=True))
    out.append({"reader": "asysstats SqliteReport.load, cached", "seconds": seconds, "rows": table.rows})
    for row in out:
        row["ratio"] = row["seconds"] / floor
    return out


def cells(result, column: str) -> list:
    """A column of any reader's result as a Python list (None for NULL)."""
    if isinstance(result, list):
        return [row[{"a": 0, "b": 1, "c": 2}[column]] for row in result]
    if hasattr(result, "column") and hasattr(result, "num_rows"):  # Arrow
        return result.column(column).to_pylist()
    return [None if v is None or v != v else v for v in result[column].tolist()]  # pandas: NaN -> None


def check(reader: Callable[[Path, str], object], work: Path) -> dict:
    """NULL handling, an empty table, a mode=ro open, and a read of a WAL-mode copy."""
    db = work / "checks.sqlite"
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.executescript("CREATE TABLE t (a INTEGER, b INTEGER, c INTEGER);"
                      "INSERT INTO t VALUES (1, NULL, NULL), (NULL, 2, NULL), (3, 4, NULL);"
                      "CREATE TABLE e (a INTEGER, b TEXT);")
    con.close()
    result: dict = {}
    try:
        got = reader(db, "SELECT a, b, c FROM t")
        ok = cells(got, "a") == [1, None, 3] and cells(got, "b") == [None, 2, 4] and cells(got, "c") == [None] * 3
        dtype = str(got["a"].dtype) if hasattr(got, "dtypes") else "-"
        result["nulls"] = "ok" + (f" (int column becomes {dtype})" if dtype not in ("-", "int64", "Int64") else "") \
            if ok else f"wrong: {cells(got, 'a')} {cells(got, 'b')} {cells(got, 'c')}"
    except Exception as exc:  # a failure is a finding, not a crash of the benchmark
        result["nulls"] = f"error: {type(exc).__name__}: {str(exc)[:80]}"
    try:
        got = reader(db, "SELECT a, b FROM e")
        result["empty"] = "ok" if rows_of(got) == 0 else f"wrong: {rows_of(got)} rows"
    except Exception as exc:
        result["empty"] = f"error: {type(exc).__name__}: {str(exc)[:80]}"
    result["wal"] = wal_check(reader, work, pending=False)
    result["wal_pending"] = wal_check(reader, work, pending=True)
    result["hot_journal"] = hot_journal_check(reader, work)
    return result


def wal_check(reader: Callable[[Path, str], object], work: Path, pending: bool) -> str:
    """Read a WAL-mode database (with committed frames not yet checkpointed into the
    main file when ``pending``); report the rows seen, files left beside it, and changes."""
    wal_dir = work / "wal"
    shutil.rmtree(wal_dir, ignore_errors=True)
    wal_dir.mkdir()
    db = wal_dir / "wal.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA wal_autocheckpoint=0")
    con.executescript("CREATE TABLE t (a INTEGER); INSERT INTO t VALUES (1), (2);")
    if pending:  # snapshot the files while the writer is open: the rows live in -wal only
        con.execute("INSERT INTO t VALUES (3)")
        con.commit()
        snapshot = work / "snapshot"
        shutil.rmtree(snapshot, ignore_errors=True)
        snapshot.mkdir()
        for f in wal_dir.iterdir():
            if not f.name.endswith("-shm"):
                shutil.copy(f, snapshot / f.name)
        con.close()
        shutil.rmtree(wal_dir)
        snapshot.rename(wal_dir)
    else:
        con.close()
    before = file_state(db)
    try:
        rows = rows_of(reader(db, "SELECT a FROM t"))
    except Exception as exc:
        return f"error: {type(exc).__name__}: {str(exc)[:60]}"
    settle()
    after = file_state(db)
    notes = [f"{rows} rows"]
    if after[2] != before[2]:
        notes.append(f"sidecars {before[2] or 'none'} -> {after[2] or 'none'}")
    if after[0] != before[0]:
        notes.append("MAIN FILE CHANGED")
    elif after[1] != before[1]:
        notes.append("mtime changed")
    return "; ".join(notes) if len(notes) > 1 else notes[0] + "; untouched"


def settle() -> None:
    """Let pooled connections (connectorx) close: their checkpoint or rollback happens then."""
    gc.collect()
    time.sleep(0.3)


def hot_journal_check(reader: Callable[[Path, str], object], work: Path) -> str:
    """Read a rollback-journal database left with a hot ``-journal`` (a writer that died
    inside a transaction): a reader that may write rolls it back, changing the file."""
    folder = work / "hot"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    db = folder / "hot.sqlite"
    con = sqlite3.connect(db, isolation_level=None)
    con.executescript("PRAGMA cache_size=1; CREATE TABLE t (a INTEGER, pad TEXT);"
                      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) "
                      "INSERT INTO t SELECT i, printf('%.500c', 'x') FROM n;")
    con.execute("BEGIN")
    con.execute("UPDATE t SET pad = 'y'")  # spills changed pages into the main file
    snapshot = work / "hot_snapshot"
    shutil.rmtree(snapshot, ignore_errors=True)
    shutil.copytree(folder, snapshot)
    con.execute("ROLLBACK")
    con.close()
    shutil.rmtree(folder)
    snapshot.rename(folder)
    before = file_state(db)
    try:
        rows = rows_of(reader(db, "SELECT a FROM t"))
    except Exception as exc:
        return f"error: {type(exc).__name__}: {str(exc)[:60]}"
    settle()
    after = file_state(db)
    changed = "MAIN FILE CHANGED" if after[0] != before[0] else "untouched"
    return f"{rows} rows; sidecars {before[2] or 'none'} -> {after[2] or 'none'}; {changed}"


def read_sqlite3_immutable(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(ro_uri(path) + "&immutable=1", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def machine() -> dict:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            **{pkg: version(pkg) for pkg in ("numpy", "pandas", "pyarrow", "adbc-driver-sqlite", "connectorx")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per reader")
    args = ap.parse_args()
    os.environ["XDG_CACHE_HOME"] = str(OUT / "cache")  # the loader's column cache stays in bench/out
    path = kernel_report(args.kernels)
    print(f"machine: {machine()}")
    print(f"report: {path} ({args.kernels:,} kernels, {path.stat().st_size / 2**20:.0f} MiB), best of {args.repeat}")
    rows = timings(path, args.repeat)
    print(f"{'reader':32} {'seconds':>8} {'x floor':>8} {'rows':>10}")
    for row in rows:
        print(f"{row['reader']:32} {row['seconds']:8.2f} {row['ratio']:8.1f} {row['rows']:>10,}")
    candidates = {**READERS, "sqlite3 mode=ro&immutable=1": read_sqlite3_immutable}
    with tempfile.TemporaryDirectory() as tmp:
        checks = {name: check(reader, Path(tmp)) for name, reader in candidates.items()}
    print("\nChecks (mode=ro for the readers that take a URI; connectorx takes a plain path):")
    print(f"{'reader':28} {'NULLs':34} {'empty':6} {'WAL db, checkpointed (2 rows)':44} WAL db, 1 row only in -wal (3 rows)")
    for name, found in checks.items():
        print(f"{name:28} {found['nulls']:34} {found['empty']:6} {found['wal']:44} {found['wal_pending']}")
    print(f"\n{'reader':28} rollback-journal database with a hot -journal (200 rows)")
    for name, found in checks.items():
        print(f"{name:28} {found['hot_journal']}")
    OUT.mkdir(exist_ok=True)
    (OUT / "readers.json").write_text(json.dumps({"machine": machine(), "timings": rows, "checks": checks}, indent=1))


if __name__ == "__main__":
    main()
