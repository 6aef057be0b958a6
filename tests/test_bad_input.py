"""Bad input: one line on stderr, exit status 2, no traceback, the report untouched."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import fingerprint, run_cli


def assert_one_line_error(run, *words):
    assert run.code == 2, (run.code, run.err)
    assert run.err.count("\n") == 1 and "Traceback" not in run.err, run.err
    for word in words:
        assert word in run.err, run.err


@pytest.fixture
def report(writer):
    name = writer.string("k")
    writer.add("kernels", start=[0], end=[10], deviceId=[0], demangledName=[name])
    writer.close()
    return writer.path


def test_missing_file(tmp_path):
    assert_one_line_error(run_cli("stats", tmp_path / "nope.asysrep"), "nope.asysrep", "no such file")


def test_directory(tmp_path):
    assert_one_line_error(run_cli("stats", tmp_path), "is a directory")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.asysrep"
    path.write_bytes(b"")
    assert_one_line_error(run_cli("stats", path), "empty.asysrep", "empty")


def test_not_sqlite(tmp_path):
    path = tmp_path / "report.asysrep"
    path.write_bytes(b"ASYSREP\x00binary container")
    before = fingerprint(path)
    run = run_cli("stats", path)
    assert_one_line_error(run, "report.asysrep: not an SQLite database")
    assert "asys export" not in run.err  # no such command
    assert fingerprint(path) == before


def test_sqlite_without_kernel_table(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    con.commit()
    con.close()
    before = fingerprint(path)
    assert_one_line_error(run_cli("stats", "-r", "hggc_ppu_kern_sum", path),
                          "does not contain CUDA kernel data", "nsys profile --trace cuda")  # read as Nsight
    assert fingerprint(path) == before


def test_sqlite_without_any_known_table(tmp_path):
    path = tmp_path / "plain.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    assert_one_line_error(run_cli("stats", path), "not an asysrep or Nsight Systems export")


@pytest.mark.parametrize("spec, words", [
    ("no_such_rule", ("unknown rule 'no_such_rule'",)),
    ("hggc_ppu_kern_su", ("did you mean hggc_ppu_kern_sum",)),
    ("hggc_ppu_kern_sum:colour=red", ("unknown option 'colour'",)),
    ("hggc_ppu_kern_sum:rows=ten", ("option 'rows' must be an integer >= 1, got 'ten'",)),
    ("hggc_ppu_kern_sum:rows=0", ("option 'rows' must be an integer >= 1",)),
    ("hggc_ppu_kern_sum:device=a/b", ("option 'device'",)),
    ("hggc_ppu_kern_sum:base=maybe", ("option 'base' takes no value",)),
    ("hggc_ppu_kern_sum:base:mangled", ("'base' and 'mangled' exclude each other",)),
    ("hggc_ppu_kern_sum:column=Nope", ("unknown column 'Nope'",)),
    ("hggc_ppu_kern_sum:rows", ("option 'rows' needs a value",)),
    (",", ("empty rule name",)),
])
def test_bad_rule_options(report, spec, words):
    before = fingerprint(report)
    assert_one_line_error(run_cli("stats", "-r", spec, report), *words)
    assert fingerprint(report) == before


@pytest.mark.parametrize("args, words", [
    (("--format", "pdf"), ("unknown format 'pdf'",)),
    (("--format", "csv:ratio=2"), ("ratio",)),
    (("--filter-time", "abc"), ("--filter-time",)),
    (("--filter-time", "10/5"), ("end is before start",)),
    (("-f", "maybe"), ("--force-overwrite",)),
    (("--kernel-group-config", "noequals"), ("--kernel-group-config", "name=value")),
])
def test_bad_command_options(report, args, words):
    assert_one_line_error(run_cli("stats", "-r", "hggc_ppu_kern_sum", *args, report), *words)


def test_no_report_given():
    assert_one_line_error(run_cli("stats", "-r", "hggc_ppu_kern_sum"), "no report given")


def test_the_command_exits_as_main_says_without_teardown(report, tmp_path):
    """``python -m asysstats`` (and the ``asys`` script) leave through ``os._exit``: the status,
    the whole of stdout and the one-line error must still come out as ``main`` produced them."""
    import subprocess
    import sys

    good = subprocess.run([sys.executable, "-m", "asysstats", "stats", "-r", "hggc_ppu_kern_sum", "--format", "csv",
                           str(report)], capture_output=True, text=True, timeout=120)
    assert good.returncode == 0 and good.stdout == run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv",
                                                           report).out
    bad = subprocess.run([sys.executable, "-m", "asysstats", "stats", "-r", "no_such_rule", str(report)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "unknown rule 'no_such_rule'" in bad.stderr and not bad.stdout


@pytest.mark.parametrize("value", ["'soon'", "1.5", "x'00'"])
def test_a_number_column_holding_other_values(report, value):
    """Text, a fraction or a blob where the kernel table has integers: connectorx refuses the mixed
    column, the sqlite3 reader names the table and the column."""
    with sqlite3.connect(report) as con:
        con.execute(f"UPDATE HGPTI_ACTIVITY_KIND_KERNEL SET start = {value}")
    con.close()
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", report)
    assert_one_line_error(run, "HGPTI_ACTIVITY_KIND_KERNEL", "column start", "wrong type")
