"""Hostile report files, generated here: each gives a result or a one-line error naming the
file (and table/column where it applies) — never a traceback or a hang — and the report is
never modified, nor are -wal/-shm files created beside it."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from asysstats.synth.writer import ReportWriter

from conftest import fingerprint, run_cli

KERNEL = "HGPTI_ACTIVITY_KIND_KERNEL"


def good_report(path: Path, names=("void k<int>(int)", "k2"), rows=40) -> Path:
    writer = ReportWriter(path)
    ids = writer.strings(names)
    writer.add("kernels", start=list(range(0, rows * 10, 10)), end=list(range(5, rows * 10 + 5, 10)),
               deviceId=[i % 2 for i in range(rows)], demangledName=[ids[i % len(ids)] for i in range(rows)])
    writer.close()
    return path


def sql(path: Path, *statements: str) -> Path:
    con = sqlite3.connect(path)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()
    return path


def check(path: Path, *args: str, expect: tuple[int, ...] = (0, 2), words: tuple[str, ...] = ()):
    before = fingerprint(path)
    siblings = sorted(p.name for p in path.parent.iterdir())
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", *args, path)
    assert run.code in expect, (run.code, run.err)
    assert "Traceback" not in run.err and "internal error" not in run.err, run.err
    if run.code == 2:
        assert run.err.count("\n") == 1, run.err
    for word in words:
        assert word in run.err + run.out, (word, run.err, run.out)
    assert fingerprint(path) == before
    assert sorted(p.name for p in path.parent.iterdir()) == siblings
    return run


@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.5, 0.8, 0.99])
def test_truncated_file(tmp_path, fraction):
    path = good_report(tmp_path / "r.asysrep", rows=2000)
    data = path.read_bytes()
    path.write_bytes(data[: max(100, int(len(data) * fraction))])
    check(path, words=("r.asysrep",))


@pytest.mark.parametrize("offset", [100, 1024, 4096, 6000])
def test_corrupted_bytes(tmp_path, offset):
    path = good_report(tmp_path / "r.asysrep", rows=2000)
    data = bytearray(path.read_bytes())
    data[offset:offset + 200] = bytes(range(200))
    path.write_bytes(bytes(data))
    check(path)


def test_database_locked_by_a_writer(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    con = sqlite3.connect(path, check_same_thread=False)
    con.execute("BEGIN EXCLUSIVE")
    try:
        run = run_cli("stats", "-r", "hggc_ppu_kern_sum", path)
    finally:
        con.rollback()
        con.close()
    assert run.code == 2 and "locked" in run.err and run.err.count("\n") == 1


def test_wal_mode_with_pending_wal_file(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute(f"INSERT INTO {KERNEL} (start, end, deviceId, demangledName) VALUES (1000, 1100, 0, 1)")
    writer.commit()
    wal = path.with_name(path.name + "-wal")
    assert wal.exists() and wal.stat().st_size > 0
    run = check(path, words=())  # the pending row in the -wal file counts: 21 instances of k2
    assert int([ln for ln in run.out.splitlines() if '"k2"' in ln][0].split(",")[3]) == 21
    writer.close()


def test_wal_mode_without_wal_file(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    sql(path, "PRAGMA journal_mode=WAL")
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    check(path, expect=(0,))


def test_text_in_an_integer_column(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET start = 'soon' WHERE rowid = 3")
    check(path, expect=(2,), words=(KERNEL, "start"))


def test_null_in_a_required_column(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET end = NULL WHERE rowid = 3")
    check(path, expect=(2,), words=(KERNEL, "end", "NULL"))


def test_table_with_no_rows(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), f"DELETE FROM {KERNEL}")
    run = check(path, expect=(0,))
    assert run.out.count("\n") == 1


def test_missing_required_column(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), f"ALTER TABLE {KERNEL} DROP COLUMN end")
    check(path, expect=(2,), words=(KERNEL, "end"))


def test_duplicated_string_ids(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    sql(path, "CREATE TABLE s2 AS SELECT * FROM StringIds", "DROP TABLE StringIds",
        "CREATE TABLE StringIds (id INTEGER, value TEXT)", "INSERT INTO StringIds SELECT * FROM s2",
        "INSERT INTO StringIds SELECT id, value || '-dup' FROM s2", "DROP TABLE s2")
    check(path, expect=(0,))


def test_missing_string_table(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), "DROP TABLE StringIds")
    run = check(path, expect=(0,))
    assert '"<unknown string 0>"' in run.out and '"<unknown string 1>"' in run.out


def test_string_id_without_string(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET demangledName = 999999")
    check(path, expect=(0,))


def test_gigantic_name(tmp_path):
    path = good_report(tmp_path / "r.asysrep", names=("x" * 1_000_000, "k2"))
    run = check(path, expect=(0,))
    assert len(run.out) > 1_000_000


def test_non_utf8_text(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    con = sqlite3.connect(path)
    con.execute("UPDATE StringIds SET value = CAST(? AS TEXT) WHERE id = 0", (b"bad\xff\xfename",))
    con.commit()
    con.close()
    run = check(path, expect=(0,))
    assert "bad" in run.out


@pytest.mark.parametrize("name", ['quote"and,comma', "new\nline", "tab\tand spaces  ", "", "=SUM(A1)", "ünïcødé 名"])
def test_awkward_names_round_trip_through_csv(tmp_path, name):
    import csv
    import io

    path = good_report(tmp_path / "r.asysrep", names=(name, "k2"))
    run = check(path, expect=(0,))
    rows = list(csv.reader(io.StringIO(run.out)))
    assert name in [row[9] for row in rows[1:]]


@pytest.mark.parametrize("filename", ["with space.asysrep", "q?mark#hash.asysrep", "ünï.asysrep", "100%.sqlite"])
def test_awkward_file_names(tmp_path, filename):
    run = check(good_report(tmp_path / filename), expect=(0,))
    assert run.out.startswith("Row#")


def test_negative_and_zero_durations(tmp_path):
    """Kernels ending before they start are left out with a note (zero-length ones count), unless kept."""
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET end = start - 7 WHERE rowid % 3 = 0",
               f"UPDATE {KERNEL} SET end = start WHERE rowid % 3 = 1")
    run = check(path, expect=(0,), words=("note: r.asysrep: 13 kernels rows with end < start excluded",))
    assert sum(int(line.split(",")[3]) for line in run.out.splitlines()[1:]) == 27
    kept = check(path, "--keep-suspect-events", expect=(0,))
    assert sum(int(line.split(",")[3]) for line in kept.out.splitlines()[1:]) == 40 and kept.err == ""


def test_huge_timestamps(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET start = start + 9000000000000000000, "
                                                      "end = end + 9000000000000000000")
    check(path, expect=(0,))


def test_float_timestamps(tmp_path):
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET start = start + 0.5")
    check(path)


def test_unreadable_file(tmp_path):
    import os

    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    path = good_report(tmp_path / "r.asysrep")
    path.chmod(0)
    run = run_cli("stats", path)
    assert run.code == 2 and "cannot read" in run.err


def test_symlink_to_report(tmp_path):
    target = good_report(tmp_path / "real.asysrep")
    link = tmp_path / "link.asysrep"
    link.symlink_to(target)
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", link)
    assert run.code == 0 and run.out.startswith("Row#")


def test_kernel_table_is_a_view(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    sql(path, f"ALTER TABLE {KERNEL} RENAME TO k_base", f"CREATE VIEW {KERNEL} AS SELECT * FROM k_base")
    check(path)


def test_no_hang_on_concurrent_writer_thread(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    stop = threading.Event()

    def write():
        con = sqlite3.connect(path, timeout=0.1)
        while not stop.is_set():
            try:
                con.execute(f"UPDATE {KERNEL} SET contextId = contextId + 1 WHERE rowid = 1")
                con.commit()
            except sqlite3.OperationalError:
                pass
        con.close()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        run = run_cli("stats", "-r", "hggc_ppu_kern_sum", path)
    finally:
        stop.set()
        thread.join()
    assert run.code in (0, 2) and "Traceback" not in run.err


def test_hot_rollback_journal_is_rolled_back_in_a_private_copy(tmp_path):
    path = good_report(tmp_path / "r.asysrep")
    journal_source = tmp_path / "make"
    journal_source.mkdir()
    work = journal_source / "r.asysrep"
    work.write_bytes(path.read_bytes())
    con = sqlite3.connect(work)
    con.execute("PRAGMA journal_mode=DELETE")
    con.execute("BEGIN")
    con.execute(f"DELETE FROM {KERNEL}")
    con.execute("PRAGMA cache_spill=1")
    con.execute(f"INSERT INTO {KERNEL} (start, end, deviceId, demangledName) SELECT start, end, deviceId, "
                f"demangledName FROM {KERNEL}")
    # snapshot the file and its hot journal mid-transaction, as a crash would leave them
    hot = journal_source / "r.asysrep-journal"
    if not hot.exists():
        con.rollback()
        con.close()
        pytest.skip("SQLite kept the transaction in memory")
    path.write_bytes(work.read_bytes())
    path.with_name("r.asysrep-journal").write_bytes(hot.read_bytes())
    con.rollback()
    con.close()
    run = check(path, expect=(0,))
    assert int(run.out.splitlines()[1].split(",")[3]) + int(run.out.splitlines()[2].split(",")[3]) == 40
