"""Values that do not fit, and columns that are not there: a one-line error naming them, or the
rows left out as suspect events with a note — never a wrapped number, never a silent ``-``."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pytest
from test_hostile import KERNEL, check, good_report, sql

from asysstats.compute.distinct import DERIVED_BASE
from asysstats.synth.writer import ReportWriter

from conftest import run_cli

LIMIT = 1 << 62


def kernels(path: Path, spans: list[tuple[int, int]], name: str = "k", **tables) -> Path:
    writer = ReportWriter(path)
    name_id = writer.string(name)
    writer.add("kernels", start=[s for s, _ in spans], end=[e for _, e in spans], deviceId=0, demangledName=name_id)
    for table, columns in tables.items():
        writer.add(table, **columns)
    writer.close()
    return path


def summary(run) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(run.out)))


# kernels on one device (times in ns):
#   -9e18 |===========================================================| 9e18   (does not fit: left out)
#                                      0 |=| 10     100 |===| 130
def test_a_kernel_whose_duration_does_not_fit_is_left_out_even_when_suspects_are_kept(tmp_path):
    path = kernels(tmp_path / "r.asysrep", [(-9 * 10**18, 9 * 10**18), (0, 10), (100, 130)])
    for extra in ((), ("--keep-suspect-events",)):
        run = check(path, *extra, expect=(0,), words=("1 kernels rows with a time beyond ±2^62 ns excluded",))
        [row] = summary(run)
        cells = (row["Total Time (ns)"], row["Instances"], row["Max (ns)"], row["Time (%)"])
        assert cells == ("40", "2", "30", "100.0")


@pytest.mark.parametrize("start, end", [(LIMIT, LIMIT + 5), (-LIMIT, -LIMIT + 5), (0, LIMIT), (1 - 2**63, 0)])
def test_a_time_at_the_limit_is_left_out_and_one_inside_is_kept(tmp_path, start, end):
    path = kernels(tmp_path / "r.asysrep", [(start, end), (LIMIT - 20, LIMIT - 1), (-LIMIT + 1, -LIMIT + 11)])
    [row] = summary(check(path, expect=(0,), words=("1 kernels rows with a time beyond",)))
    assert (row["Total Time (ns)"], row["Instances"]) == ("29", "2")


def test_the_check_lists_the_times_beyond_the_limit(tmp_path):
    path = kernels(tmp_path / "r.asysrep", [(-9 * 10**18, 9 * 10**18), (0, 10)])
    run = run_cli("stats", "--check", "--format", "csv", path)
    assert run.code == 0, run.err
    [row] = [r for r in csv.reader(io.StringIO(run.out)) if "time beyond 2^62 ns" in r]
    assert row[2:4] == ["kernels", "1"] and "start -9000000000000000000" in row[4]


# three kernels of 4e18 ns each: every one fits, their total (1.2e19) does not
def test_durations_whose_total_does_not_fit_are_an_error(tmp_path):
    path = kernels(tmp_path / "r.asysrep", [(0, 4 * 10**18)] * 3)
    for rule in ("hggc_ppu_kern_sum", "hggc_ppu_timeline_sum", "hggc_ppu_kern_gb_sum"):
        run = run_cli("stats", "-r", rule, path)
        assert run.code == 2 and run.err.count("\n") == 1, run.err
        assert "table kernels" in run.err and "2^61 ns" in run.err and str(path) in run.err


# ANALYSIS_DETAILS spans -4e18 .. 4e18: 8e18 ns, near what int64 holds
#   -4e18 |=| -4e18 + 2e18          0 |=| 10      a kernel of 9e18 ns would not fit the capture
def test_a_capture_as_long_as_int64_allows_keeps_the_kernels_inside_it(tmp_path):
    path = kernels(tmp_path / "r.asysrep", [(0, 10), (-4 * 10**18, -2 * 10**18)],
                   analysis={"duration": [8 * 10**18], "startTime": [-4 * 10**18], "stopTime": [4 * 10**18]})
    [row] = summary(check(path, expect=(0,)))
    assert (row["Instances"], row["Max (ns)"]) == ("2", str(2 * 10**18))


@pytest.mark.parametrize("string_id", [DERIVED_BASE, DERIVED_BASE + 7, 2**63 - 1])
def test_a_string_id_past_the_ids_the_tool_reads_is_an_error(tmp_path, string_id):
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET demangledName = {string_id} WHERE rowid = 2",
               f"INSERT INTO StringIds VALUES ({string_id}, 'collides')")
    check(path, expect=(2,), words=(KERNEL, "demangledName", str(string_id), "2^40"))


def test_a_string_id_just_below_the_limit_is_read(tmp_path):
    string_id = DERIVED_BASE - 1
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET demangledName = {string_id} WHERE rowid = 2",
               f"INSERT INTO StringIds VALUES ({string_id}, 'highest')")
    rows = summary(check(path, expect=(0,)))
    assert {r["Name"]: r["Instances"] for r in rows}["highest"] == "1"


@pytest.mark.parametrize("value, shown", [(b"blob \xc3\xa9 name", "blob é name"), (None, ""), (12345, "12345"),
                                          (1.5, "1.5")])
def test_strings_that_are_not_text_print_as_text_not_as_python_values(tmp_path, value, shown):
    path = sql(good_report(tmp_path / "r.asysrep", names=("first", "k2")),  # StringIds without NOT NULL
               "ALTER TABLE StringIds RENAME TO s2", "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value)",
               "INSERT INTO StringIds SELECT * FROM s2", "DROP TABLE s2")
    con = sqlite3.connect(path)
    con.execute("UPDATE StringIds SET value = ? WHERE value = 'first'", (value,))
    con.commit()
    con.close()
    rows = summary(check(path, expect=(0,)))
    assert sorted(r["Name"] for r in rows) == sorted([shown, "k2"])
    assert not any(r["Name"].startswith(("b'", "None")) for r in rows)


@pytest.mark.parametrize("table, column, rule", [
    (KERNEL, "demangledName", "hggc_ppu_kern_sum"),
    (KERNEL, "shortName", "hggc_ppu_kern_gb_sum"),
    ("HGPTI_ACTIVITY_KIND_MEMCPY", "bytes", "hggc_ppu_mem_size_sum"),
    ("HGPTI_ACTIVITY_KIND_MEMCPY", "copyKind", "hggc_ppu_mem_time_sum"),
])
def test_a_column_the_rule_needs_that_the_report_lacks_is_named(tmp_path, table, column, rule):
    writer = ReportWriter(tmp_path / "r.asysrep")
    name = writer.string("k")
    writer.add("kernels", start=[0, 20], end=[10, 30], deviceId=0, demangledName=name, shortName=name)
    writer.add("memcpy", start=[0], end=[5], deviceId=0, bytes=[64], copyKind=[1])
    writer.close()
    path = sql(writer.path, f'ALTER TABLE {table} DROP COLUMN "{column}"')
    run = run_cli("stats", "-r", rule, path)
    assert run.code == 2 and run.err == f"error: {path}: table {table} has no column {column}\n"


def test_an_optional_column_absent_falls_back(tmp_path):
    """Nsight exports of OpenACC and Fortran kernels carry no mangledName: the mangled view shows
    the demangled names, as for a kernel whose mangled name is empty."""
    path = sql(good_report(tmp_path / "r.asysrep"), f"ALTER TABLE {KERNEL} DROP COLUMN mangledName")
    rows = summary(run_cli("stats", "-r", "hggc_ppu_kern_sum:mangled", "--format", "csv", path))
    assert {r["Name"]: r["Instances"] for r in rows} == {"void k<int>(int)": "20", "k2": "20"}


@pytest.mark.parametrize("value", ["1e300", "'12abc'", "x'00ff'"])
def test_a_value_of_the_wrong_kind_names_its_column(tmp_path, value):
    path = sql(good_report(tmp_path / "r.asysrep"), f"UPDATE {KERNEL} SET end = {value} WHERE rowid = 4")
    run = check(path, expect=(2,), words=(KERNEL, "column end"))
    assert "column ?" not in run.err
