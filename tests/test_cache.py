"""The columnar cache: reuse, invalidation on change, rebuild after corruption, opt-out."""

from __future__ import annotations

import gc
import json
import os
import shutil
import threading
import time
import weakref
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from asysstats.analysis import hgtx
from asysstats.analysis.inputs import Inputs
from asysstats.api.running import run_rule
from asysstats.compute import textindex
from asysstats.compute.arrow import from_numpy, from_texts, one_chunk, to_numpy
from asysstats.compute.textindex import fingerprints
from asysstats.core.errors import MissingData
from asysstats.core.tables import EventTable
from asysstats.reading import cache as cache_module
from asysstats.reading import sqlite_columns as reading
from asysstats.reading.cache import ColumnCache, cache_root
from asysstats.reading.opening import open_report
from asysstats.rulebook import REGISTRY
from asysstats.synth.writer import ReportWriter
from asysstats.writing.writers import render

from conftest import run_cli

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.asysrep"


def build(path, durations):
    writer = ReportWriter(path)
    name = writer.string("k")
    writer.add("kernels", start=[0] * len(durations), end=durations, deviceId=0, demangledName=name)
    writer.close()
    return path


def total(path, *extra):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum:column=Total Time (ns)", "--format", "csv", *extra, path)
    assert run.code == 0, run.err
    return int(run.out.splitlines()[1].split(",")[1])


def test_cache_is_written_outside_the_report_folder_and_reused(tmp_path):
    path = build(tmp_path / "r.asysrep", [10, 20])
    assert total(path) == 30
    entry = ColumnCache(path).folder
    files = sorted(p.name for p in entry.glob("*.arrow"))
    assert "HGPTI_ACTIVITY_KIND_KERNEL.start.arrow" in files
    assert entry.is_relative_to(cache_root()) and sorted(p.name for p in tmp_path.iterdir()) == ["r.asysrep"]
    assert total(path) == 30


def test_modified_report_invalidates_its_entry(tmp_path):
    path = build(tmp_path / "r.asysrep", [10, 20])
    assert total(path) == 30
    build(path, [5, 5, 5])
    os.utime(path, ns=(1, 1))  # a different modification time as well as size
    assert total(path) == 15


def test_truncated_or_corrupt_cache_file_is_rebuilt(tmp_path):
    path = build(tmp_path / "r.asysrep", [10, 20])
    assert total(path) == 30
    entry = ColumnCache(path).folder
    start = entry / "HGPTI_ACTIVITY_KIND_KERNEL.start.arrow"
    start.write_bytes(start.read_bytes()[:20])
    (entry / "HGPTI_ACTIVITY_KIND_KERNEL.end.arrow").write_bytes(b"garbage")
    assert total(path) == 30
    assert total(path) == 30


def test_no_cache_reads_and_writes_nothing(tmp_path):
    path = build(tmp_path / "r.asysrep", [7])
    assert total(path, "--no-cache") == 7
    assert not list(ColumnCache(path).folder.glob("*.arrow"))


def outputs(path, cache: bool) -> dict[str, str]:
    """CSV of every single-report rule on one freshly opened report (MissingData as its message)."""
    report, out = open_report(path, cache=cache), {}
    try:
        for rule in REGISTRY:
            if rule.reports != 1:
                continue
            try:
                out[rule.name] = render(run_rule(rule, rule.parse_options({}), Inputs(report)), "csv")
            except MissingData as exc:
                out[rule.name] = f"missing: {exc}"
    finally:
        report.close()
    return out


def test_every_rule_gives_the_same_result_cold_warm_and_without_cache(tmp_path, monkeypatch):
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    built = []
    real_build = hgtx._build_ranges
    monkeypatch.setattr(hgtx, "_build_ranges", lambda report: built.append(1) or real_build(report))
    cold = outputs(path, cache=True)
    assert built == [1]
    assert list(ColumnCache(path).folder.glob("derived*.hgtx_ranges.name.arrow"))
    warm = outputs(path, cache=True)
    assert built == [1]  # the HGTX ranges (nesting, names) came from the cache
    assert warm == cold
    assert outputs(path, cache=False) == cold
    assert sum(not v.startswith("missing") for v in cold.values()) >= 30


def test_a_single_chunk_column_is_not_copied_when_read_or_cached():
    """The loader and the cache keep a column as one chunk; taking it as an array must not copy it
    (``combine_chunks`` copies even a single chunk: 77 MB of HGTX text on the 1 M sample)."""
    column = pa.chunked_array([from_numpy(np.arange(10))])
    assert one_chunk(column).buffers()[1].address == column.chunk(0).buffers()[1].address
    assert one_chunk(pa.chunked_array([from_numpy(np.arange(3)), from_numpy(np.arange(2))])).to_pylist() == \
        [0, 1, 2, 0, 1]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the process's mappings from /proc")
def test_a_cold_load_keeps_the_numbers_it_stored_as_a_mapping_of_the_stored_file(tmp_path):
    """Once stored, a cold run's numbers are mapped back from the cache file: pages the system
    can drop and read again, as a warm run holds them, not memory of the process (at 50 M kernels
    the difference between fitting in 12 GiB and not)."""
    path = build(tmp_path / "r.asysrep", [10, 20, 30])
    report = open_report(path, cache=True)
    try:
        ends = report.load("kernels", ("start", "end"))["end"]
        assert ends.tolist() == [10, 20, 30]
        assert mapped_file(ends.__array_interface__["data"][0]) == \
            str(ColumnCache(path).folder / "HGPTI_ACTIVITY_KIND_KERNEL.end.arrow")
    finally:
        report.close()


def mapped_file(address: int) -> str:
    """The file mapped at ``address`` in this process ('' for memory of its own)."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        low, high = (int(bound, 16) for bound in fields[0].split("-"))
        if low <= address < high:
            return fields[5] if len(fields) > 5 else ""
    return ""


def test_a_table_read_in_slices_is_joined_and_stored_a_column_at_a_time_on_the_joining_threads(tmp_path, monkeypatch):
    """Each column is given to the cache as it is made, on the threads that join the slices (the
    main thread would leave a core idle): numbers in one chunk, text a dictionary per slice."""
    monkeypatch.setattr(reading, "SLICE_ROWS", 4)
    path = tmp_path / "r.asysrep"
    writer = ReportWriter(path)
    writer.add("hgtx", start=np.arange(30), end=np.arange(30) + 5, eventType=59, text=[f"r{i % 3}" for i in range(30)])
    writer.close()
    report = open_report(path)
    stored = []
    monkeypatch.setattr(ColumnCache, "put", lambda self, table, name, values, keys=None:
                        stored.append((name, values.num_chunks, threading.get_ident())))
    events = report.load("hgtx", ("end", "eventType", "text"))
    assert events["end"].tolist() == list(range(5, 35))
    assert list(report.strings.lookup(events["text"][:4])) == ["r0", "r1", "r2", "r0"]
    report.close()
    assert sorted(name for name, _, _ in stored) == ["end", "eventType", "text"]
    assert {name: chunks for name, chunks, _ in stored} == {"end": 1, "eventType": 1, "text": 8}
    assert threading.get_ident() not in {thread for _, _, thread in stored}


def test_the_stored_columns_are_listed_by_table_without_the_fingerprints_of_text(tmp_path):
    path = tmp_path / "r.asysrep"
    writer = ReportWriter(path)
    writer.add("hgtx", start=[1, 2], end=[3, 4], eventType=59, text=["a", "b"])
    writer.close()
    report = open_report(path)
    report.load("hgtx", ("start", "text"))
    report.close()
    entry = ColumnCache(path)
    assert (entry.folder / "HGTX_EVENTS.text.fingerprints.arrow").exists()
    assert entry.stored() == {"HGTX_EVENTS": ["start", "text"]}


def test_tables_loaded_inside_transient_are_loaded_anew_after_it(tmp_path):
    """With a column cache, what a ``transient`` block loads is dropped at its end (mapped again
    when asked for); what was loaded before stays; without a cache every load stays."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    report = open_report(path)
    before = report.load("kernels", ("start",))
    with report.transient():
        inside = report.load("kernels", ("end",))
        assert report.load("kernels", ("end",)) is inside
    assert report.load("kernels", ("start",)) is before
    again = report.load("kernels", ("end",))
    assert again is not inside and again.rows == 3488 and np.array_equal(again["end"], inside["end"])
    uncached = open_report(path, cache=False)
    with uncached.transient():
        inside = uncached.load("kernels", ("end",))
    assert uncached.load("kernels", ("end",)) is inside


def test_a_derived_table_is_read_back_as_built_without_the_loads_that_built_it(tmp_path):
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    report, used = open_report(path), []

    def lengths() -> EventTable:
        used.append(report.load("kernels", ("start", "end")))
        return EventTable({"length": used[-1]["end"] - used[-1]["start"]})

    table = report.derived("lengths", ("length",), (), lengths)
    expected = used[0]["end"] - used[0]["start"]
    assert np.array_equal(table["length"], expected) and int(table["length"].sum()) == int(expected.sum()) > 0
    assert report.load("kernels", ("start", "end")) is not used[0]
    again = open_report(path).derived("lengths", ("length",), (), lengths)
    assert len(used) == 1 and np.array_equal(again["length"], expected)


def kernel_names(report) -> EventTable:
    """A derived table of the report's kernel starts and names (a text column)."""
    def built() -> EventTable:
        kernels = report.load("kernels", ("start", "demangledName"))
        return EventTable({"start": kernels["start"], "name": kernels["demangledName"]})
    return report.derived("names", ("start", "name"), ("name",), built)


def test_a_derived_tables_text_is_interned_when_first_read(tmp_path):
    """Read back from the cache, a derived table's text columns wait until read (most rules read one
    of the HGTX ranges' three), and then hold the texts built; a take keeps them waiting."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    report = open_report(path)
    cold = kernel_names(report)
    again = open_report(path)
    warm = kernel_names(again)
    firsts = warm.take(np.arange(0, warm.rows, 2))
    assert "name" not in warm._columns and "name" not in firsts._columns and list(warm) == ["start", "name"]
    assert again.strings.texts(firsts["name"]).to_pylist() == report.strings.texts(cold["name"][::2]).to_pylist()
    assert "name" in warm._columns and len(set(firsts["name"].tolist())) > 10  # made once, for the table and its take


def test_a_peeked_text_column_is_not_kept_cold_or_warm(tmp_path):
    """``peek`` gives a text column without the table keeping it (operator recognition reads the
    range names once): cold, the ids as built, let go once given (a later read interns them from
    the cache, to the same ids); warm, interned from the cache."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    report = open_report(path)
    cold = kernel_names(report)
    given = cold.peek("name")
    again = cold.peek("name")
    assert "name" not in cold._columns and again is not given and np.array_equal(again, given)
    assert np.array_equal(cold["name"], given) and "name" in cold._columns and cold.peek("name") is cold["name"]
    other = open_report(path)
    warm = kernel_names(other)
    names = other.strings.texts(warm.peek("name")).to_pylist()
    assert "name" not in warm._columns and names == report.strings.texts(given).to_pylist()
    assert len(set(names)) > 10


def test_a_derived_table_of_text_alone_has_its_rows_cold_and_warm(tmp_path):
    """With no number column to give its length, a derived table's text is made at once, built or read back."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    report = open_report(path)

    def built() -> EventTable:
        return EventTable({"name": report.load("kernels", ("demangledName",))["demangledName"]})

    cold = report.derived("texts", ("name",), ("name",), built)
    other = open_report(path)
    warm = other.derived("texts", ("name",), ("name",), built)
    assert cold.rows == warm.rows == report.load("kernels", ("start",)).rows > 0
    assert other.strings.texts(warm["name"]).to_pylist() == report.strings.texts(cold["name"]).to_pylist()


def text_column(values: list[str | None]) -> pa.ChunkedArray:
    """A dictionary-encoded text column of two chunks (of one dictionary, as a cache file holds)."""
    encoded = pc.dictionary_encode(from_texts(values))
    return pa.chunked_array([encoded.slice(0, len(values) // 2), encoded.slice(len(values) // 2)])


def test_fingerprints_of_a_text_column_are_stored_checked_and_rebuilt(tmp_path, monkeypatch):
    """The fingerprints kept next to a text column are used only while their digest matches the
    column's text; missing, truncated, corrupt or another column's ones are computed again."""
    cache = ColumnCache(build(tmp_path / "r.asysrep", [1]), root=tmp_path / "cache")
    names, other = ["b", "a", None, "ab" * 200, "a", "é", "c"], ["x", "y", "x", "z"]
    cache.put("T", "name", text_column(names))
    cache.put("T", "other", text_column(other))
    cache.keys("T", "other", cache.get("T", "other"))  # computed and stored
    expected = [fingerprints(chunk.dictionary) for chunk in text_column(names).chunks]

    def keys() -> list[list[int]]:
        column = cache.get("T", "name")
        return [k.tolist() for k in cache.keys("T", "name", column)]

    assert keys() == [k.tolist() for k in expected]  # computed and stored on first use
    stored = cache.folder / "T.name.fingerprints.arrow"
    good = stored.read_bytes()
    computed = []
    monkeypatch.setattr(cache_module, "fingerprints", lambda array: computed.append(len(array)) or fingerprints(array))
    assert keys() == [k.tolist() for k in expected] and computed == []  # stored ones, verified
    frame = pa.ipc.open_file(pa.BufferReader(good)).read_all()
    wrong = to_numpy(frame.column(0), np.dtype(np.uint64)).copy()
    wrong[1] ^= np.uint64(1)
    corrupt = pa.table({"keys": from_numpy(wrong)}).replace_schema_metadata(frame.schema.metadata)
    for damage in (lambda: stored.unlink(), lambda: stored.write_bytes(good[:len(good) // 2]),
                   lambda: stored.write_bytes(b"garbage"),
                   lambda: cache._write(stored, "T", "name" + cache_module.KEYS_SUFFIX, corrupt),  # vouched for, wrong
                   lambda: shutil.copyfile(cache.folder / "T.other.fingerprints.arrow", stored)):
        damage()
        computed.clear()
        assert keys() == [k.tolist() for k in expected] and computed == [5, 5]
        assert stored.read_bytes() == good
    cache.put("T", "name", text_column(other))  # a new column: its old fingerprints go
    assert not stored.exists()


def test_an_older_cache_version_is_not_trusted(tmp_path):
    path = build(tmp_path / "r.asysrep", [10, 20])
    cache = ColumnCache(path)
    stamp = json.loads((cache.folder / "stamp.json").read_text())
    (cache.folder / "stamp.json").write_text(json.dumps({**stamp, "version": 1}))
    (cache.folder / "T.name.fingerprints.arrow").write_bytes(b"old")
    assert not ColumnCache(path).folder.joinpath("T.name.fingerprints.arrow").exists()
    assert total(path) == 30


def test_a_warm_run_does_not_fingerprint_cached_text_again(tmp_path, monkeypatch):
    """The HGTX range names come back from the cache with their fingerprints; damaged
    fingerprints are rebuilt and the results stay those of a run without cache."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    rules = [rule for rule in REGISTRY if rule.name in ("hgtx_sum", "hgtx_pushpop_trace")]

    def results(cache: bool) -> list[str]:
        report = open_report(path, cache=cache)
        try:
            return [render(run_rule(rule, rule.parse_options({}), Inputs(report)), "csv") for rule in rules]
        finally:
            report.close()

    uncached = results(False)
    assert results(True) == uncached
    stored = next(ColumnCache(path).folder.glob("derived*.hgtx_ranges.name.fingerprints.arrow"))
    names = len(pa.ipc.open_file(pa.memory_map(str(stored))).read_all())
    assert names > 100
    lengths = []
    real = textindex.fingerprints
    monkeypatch.setattr(textindex, "fingerprints", lambda array: lengths.append(len(array)) or real(array))
    monkeypatch.setattr(cache_module, "fingerprints", textindex.fingerprints)
    assert results(True) == uncached
    assert names not in lengths
    stored.write_bytes(stored.read_bytes()[:100])
    assert results(True) == uncached and names in lengths


def test_later_columns_are_made_once_on_first_read_and_never_when_unread():
    made = []
    table = EventTable({"a": np.arange(3)}).with_later_columns(b=lambda: made.append("b") or np.arange(3) * 2,
                                                               c=lambda: made.append("c") or np.arange(4))
    assert list(table) == ["a", "b", "c"] and len(table) == 3 and made == []
    assert table["b"].tolist() == [0, 2, 4] and table["b"].tolist() == [0, 2, 4] and made == ["b"]
    assert EventTable({k: table[k] for k in ("a", "b")}).take(np.array([2, 0]))["b"].tolist() == [4, 0]
    try:
        table["c"]
        raise AssertionError("a later column of another length was accepted")
    except ValueError as exc:
        assert "column c: 4 rows, not 3" in str(exc)


def test_a_later_column_read_by_threads_at_once_is_made_once():
    made = []

    def slow():
        made.append("b")
        time.sleep(0.05)  # the other threads ask meanwhile
        return np.arange(3) * 2

    table = EventTable({"a": np.arange(3)}).with_later_columns(b=slow)
    with ThreadPoolExecutor(4) as threads:
        read = list(threads.map(lambda _: table["b"].tolist(), range(4)))
    assert read == [[0, 2, 4]] * 4 and made == ["b"]


def test_the_range_and_step_summaries_do_not_build_the_nesting_that_a_later_rule_builds(tmp_path):
    """A cold ``hgtx_sum`` or ``hgtx_step_sum`` reads no nesting column: the nesting table is
    built (and cached) by the first rule that reads one, with the results of a run without cache."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    folder = ColumnCache(path).folder
    summary, steps, trace = (REGISTRY.get(name) for name in ("hgtx_sum", "hgtx_step_sum", "hgtx_pushpop_trace"))

    def result(rule, cache: bool) -> str:
        report = open_report(path, cache=cache)
        try:
            return render(run_rule(rule, rule.parse_options({}), Inputs(report)), "csv")
        finally:
            report.close()

    assert result(summary, True) == result(summary, False)
    assert result(steps, True) == result(steps, False)
    assert list(folder.glob("derived*.hgtx_ranges.*.arrow")) and not list(folder.glob("derived*.hgtx_nesting.*"))
    assert result(trace, True) == result(trace, False)
    assert sorted(p.name.split(".")[-2] for p in folder.glob("derived*.hgtx_nesting.*.arrow")) == \
        sorted(hgtx.NESTING_COLUMNS)


def test_the_ranges_kept_per_report_do_not_keep_it_alive(tmp_path):
    """The ranges are cached per report in a weak dictionary: what it keeps (the nesting made
    on first read, the makers of its text columns) must not refer to the report, or no report
    would ever be freed; built (cold) or read back from the cache (warm)."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    for _ in ("cold", "warm"):
        report = open_report(path)
        assert hgtx.all_ranges(Inputs(report))["level"].max() > 0
        alive = weakref.ref(report)
        report.close()
        del report
        gc.collect()
        assert alive() is None


def test_the_range_build_frees_the_events_text_before_it_stores_the_ranges(tmp_path, monkeypatch):
    """A cold build of the ranges holds the events' text columns only while it makes the
    names: by the time the ranges are stored, neither the report nor the build keeps them."""
    path = tmp_path / "sample.asysrep"
    shutil.copyfile(SAMPLE, path)
    report = open_report(path)
    loaded, freed = {}, []
    load, store = report.load, report._column_cache.put_table

    def watched_load(logical, columns=()):
        table = load(logical, columns)
        if tuple(columns) == hgtx.HGTX_COLUMNS:
            loaded.update((name, weakref.ref(table[name])) for name in ("text", "textId", "domainId"))
        return table

    def watched_store(table, columns, text, strings):
        freed.append({name: ref() is None for name, ref in loaded.items()})
        return store(table, columns, text, strings)

    monkeypatch.setattr(report, "load", watched_load)
    monkeypatch.setattr(report._column_cache, "put_table", watched_store)
    assert len(hgtx.all_ranges(Inputs(report))["name"]) > 0
    assert freed and freed[0] == {"text": True, "textId": True, "domainId": True}
    report.close()
