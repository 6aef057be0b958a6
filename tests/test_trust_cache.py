"""The columnar cache never serves a number the report no longer holds.

Each test warms the cache, changes the report or the cache in one way, and then compares every
rule's result read through the cache with a ``--no-cache`` run, and with the result before the
change (so that a change the cache missed would show).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest
from test_kineto import EVENTS, TOP, write_trace

from asysstats.reading import cache as cache_module
from asysstats.reading.cache import SUM_SUFFIX, ColumnCache

from conftest import run_cli

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.asysrep"
KERNEL = "HGPTI_ACTIVITY_KIND_KERNEL"
SQLITE_RULES = ("hggc_ppu_kern_sum", "hgtx_sum", "hggc_api_sum", "hggc_ppu_trace")
KINETO_RULES = ("hggc_ppu_kern_sum", "hggc_api_sum", "hggc_ppu_trace")


def results(path: Path, rules: tuple[str, ...], *extra: str) -> dict[str, str]:
    """The CSV of each rule on ``path``."""
    found = {}
    for rule in rules:
        run = run_cli("stats", "-r", rule, "--format", "csv", *extra, path)
        assert run.code == 0 and "Traceback" not in run.err, run.err
        found[rule] = run.out
    return found


def check_after(path: Path, before: dict[str, str], rules: tuple[str, ...]) -> None:
    """The warm results equal a run without the cache, and the change showed."""
    warm = results(path, rules)
    assert warm == results(path, rules, "--no-cache")
    assert warm != before


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path = tmp_path / "run" / "report.asysrep"
    path.parent.mkdir()
    shutil.copyfile(SAMPLE, path)
    return path


def edited_copy(source: Path, target: Path) -> Path:
    """A copy of ``source`` whose first ten kernels last 1 µs longer (same file size)."""
    shutil.copyfile(source, target)
    lengthen(target)
    return target


def lengthen(path: Path, con: sqlite3.Connection | None = None) -> None:
    writer = con or sqlite3.connect(path)
    writer.execute(f"UPDATE {KERNEL} SET end = end + 1000 WHERE rowid <= 10")
    writer.commit()
    if con is None:
        writer.close()


def keep_times(path: Path):
    """Restore ``path``'s access and modification times after a change (``cp -p``, ``tar x``)."""
    info = path.stat()
    return lambda: os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


def test_an_edit_in_place_with_size_and_mtime_kept_is_seen(report):
    before = results(report, SQLITE_RULES)
    size, restore = report.stat().st_size, keep_times(report)
    lengthen(report)
    restore()
    assert report.stat().st_size == size
    check_after(report, before, SQLITE_RULES)


def test_a_copy_over_the_report_keeping_its_mtime_is_seen(report, tmp_path):
    before = results(report, SQLITE_RULES)
    edited = edited_copy(report, tmp_path / "edited.asysrep")
    os.utime(edited, ns=(report.stat().st_atime_ns, report.stat().st_mtime_ns))
    shutil.copy2(edited, report)  # cp -p: same inode, same size, same modification time
    check_after(report, before, SQLITE_RULES)


def test_a_new_file_in_its_place_with_the_same_times_is_seen(report, tmp_path):
    before = results(report, SQLITE_RULES)
    restore = keep_times(report)
    os.replace(edited_copy(report, tmp_path / "edited.asysrep"), report)  # tar x: a new inode
    restore()
    check_after(report, before, SQLITE_RULES)


def test_an_edit_within_one_tick_of_a_coarse_clock_is_seen_by_the_change_counter(report, monkeypatch):
    """Identity, size and times all unchanged (a file system that records seconds): SQLite's
    header change counter still tells."""
    before = results(report, SQLITE_RULES)
    frozen, restore = cache_module.file_state(report), keep_times(report)
    monkeypatch.setattr(cache_module, "file_state", lambda path: frozen)
    lengthen(report)
    restore()
    check_after(report, before, SQLITE_RULES)


def test_commits_sitting_in_the_wal_file_are_seen(report):
    writer = sqlite3.connect(report)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    try:
        before = results(report, SQLITE_RULES)
        main_file = cache_module.file_state(report)
        lengthen(report, writer)  # the commit stays in report.asysrep-wal
        assert cache_module.file_state(report) == main_file
        check_after(report, before, SQLITE_RULES)
    finally:
        writer.close()


def test_a_wal_file_rewritten_to_the_same_size_is_seen(report, monkeypatch):
    writer = sqlite3.connect(report)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    try:
        lengthen(report, writer)
        before = results(report, SQLITE_RULES)
        states = {path: cache_module.file_state(path) for path in (report, Path(f"{report}-wal"))}
        monkeypatch.setattr(cache_module, "file_state", lambda path: states[path])
        writer.execute(f"UPDATE {KERNEL} SET end = end + 7000 WHERE rowid <= 10")  # rewrites the same frames
        writer.commit()
        check_after(report, before, SQLITE_RULES)
    finally:
        writer.close()


@pytest.mark.parametrize("coarse_clock", [False, True])
def test_a_kineto_trace_rewritten_with_size_and_mtime_kept_is_seen(tmp_path, monkeypatch, coarse_clock):
    path = write_trace(tmp_path / "t.pt.trace.json", EVENTS, **TOP)
    before = results(path, KINETO_RULES)
    frozen, restore = cache_module.file_state(path), keep_times(path)
    text = path.read_text()
    assert text.count('"dur": 5.5') == 1
    path.write_text(text.replace('"dur": 5.5', '"dur": 7.5'))
    restore()
    if coarse_clock:  # the same identity and times: the hash of its content tells
        monkeypatch.setattr(cache_module, "file_state", lambda path: frozen)
    check_after(path, before, KINETO_RULES)


def entry_files(report: Path) -> list[Path]:
    return sorted(ColumnCache(report).folder.glob("*.arrow"))


def cache_file(report: Path, table: str, column: str) -> Path:
    return ColumnCache(report).folder / f"{table}.{column}.arrow"


def rewrite(path: Path, change) -> None:
    """Replace a stored column by ``change`` of its values, as a valid IPC file (readable, wrong)."""
    with pa.memory_map(str(path)) as source:
        frame = pa.ipc.open_file(source).read_all()
    values = change(frame.column(0).to_pylist())
    changed = pa.table({frame.column_names[0]: pa.array(values, frame.column(0).type)})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, changed.schema) as writer:
        writer.write_table(changed)


def test_a_cache_file_altered_but_readable_is_rebuilt(report):
    before = results(report, SQLITE_RULES)
    rewrite(cache_file(report, KERNEL, "end"), lambda ends: [end + 5000 for end in ends])
    warm = results(report, SQLITE_RULES)
    assert warm == results(report, SQLITE_RULES, "--no-cache") == before


def test_cache_files_swapped_are_rebuilt(report):
    """Start and end swapped, with and then without their .sum files: negative durations would show."""
    before = results(report, SQLITE_RULES)
    for suffixes in (("", SUM_SUFFIX), ("",)):
        start, end = cache_file(report, KERNEL, "start"), cache_file(report, KERNEL, "end")
        for suffix in suffixes:
            a, b = Path(f"{start}{suffix}"), Path(f"{end}{suffix}")
            os.replace(a, a.with_name("swap"))
            os.replace(b, a)
            os.replace(a.with_name("swap"), b)
        assert results(report, SQLITE_RULES) == before


def test_a_cache_file_of_another_report_is_not_trusted(report, tmp_path):
    other = edited_copy(report, tmp_path / "other.asysrep")
    before = results(report, SQLITE_RULES)
    assert results(other, SQLITE_RULES) != before
    for name in ("start", "end"):
        for suffix in ("", SUM_SUFFIX):
            shutil.copyfile(f"{cache_file(other, KERNEL, name)}{suffix}", f"{cache_file(report, KERNEL, name)}{suffix}")
    assert results(report, SQLITE_RULES) == before


@pytest.mark.parametrize("damage", ["directory", "no sum", "sum garbage", "sum of another column", "symlink loop"])
def test_a_damaged_cache_file_is_rebuilt(report, damage):
    before = results(report, SQLITE_RULES)
    stored = cache_file(report, KERNEL, "end")
    vouch = Path(f"{stored}{SUM_SUFFIX}")
    if damage == "directory":
        stored.unlink()
        (stored / "inside").mkdir(parents=True)
    elif damage == "no sum":
        vouch.unlink()
    elif damage == "sum garbage":
        vouch.write_bytes(b"\x00{")
    elif damage == "sum of another column":
        shutil.copyfile(f"{cache_file(report, KERNEL, 'start')}{SUM_SUFFIX}", vouch)
    else:
        stored.unlink()
        stored.symlink_to(stored)
    assert results(report, SQLITE_RULES) == results(report, SQLITE_RULES, "--no-cache") == before
    assert stored.is_file() and json.loads(vouch.read_text())["column"] == "end"


def test_a_byte_changed_in_any_stored_file_is_noticed(report):
    """Every file of the entry (columns, derived tables, fingerprints) with one byte flipped in
    its middle: each is thrown away and written again, and the results do not change."""
    before = results(report, SQLITE_RULES)
    files = entry_files(report)
    assert len(files) > 20 and any(".fingerprints." in p.name for p in files)
    assert any(p.name.startswith("derived") for p in files)
    flipped = {}
    for path in files:
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x20
        path.write_bytes(bytes(data))
        flipped[path] = bytes(data)
    assert results(report, SQLITE_RULES) == before
    assert [p.name for p in files if p.read_bytes() == flipped[p]] == []


def test_the_stamp_holds_what_sqlite_records_of_a_change(report):
    stamp = cache_module.report_stamp(report.resolve())
    assert {"device", "inode", "size", "mtime_ns", "ctime_ns", "header"} <= set(stamp)
    header = bytes.fromhex(str(stamp["header"]))
    assert header.startswith(b"SQLite format 3\x00") and len(header) == 100
    counter = int.from_bytes(header[24:28], "big")
    lengthen(report)
    assert int.from_bytes(bytes.fromhex(str(cache_module.report_stamp(report.resolve())["header"]))[24:28],
                          "big") == counter + 1
