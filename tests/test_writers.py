"""Writers and outputs: CSV quoting and rounding, column/JSON/XLSX, files, pipes, overwrite rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pytest

from asysstats.analysis.declarations import Rule
from asysstats.compute.arrow import quoted
from asysstats.core.errors import AsysError
from asysstats.core.result import DECIMAL, INT, PERCENT, TEXT, Column, Result
from asysstats.core.strings import StringPool
from asysstats.core.tables import NA
from asysstats.writing import spreadsheets, writers
from asysstats.writing.format import cells, typed_column
from asysstats.writing.writers import to_column, to_csv

from conftest import fingerprint, run_cli

RULE = Rule("demo", "Demo", "A demo rule.", (
    Column("Time (%)", PERCENT, "share"), Column("Total (ns)", INT, "total"),
    Column("Value", DECIMAL, "value"), Column("Name", TEXT, "name")), lambda i, o: {}, {"kernels": ()})


def demo(pool=None) -> Result:
    pool = pool or StringPool()
    frame = {"Time (%)": np.array([2.25, 0.05, np.nan]), "Total (ns)": np.array([9021.8, NA, -3.7]),
             "Value": np.array([1600518599.66, -0.04, 98.75]),
             "Name": np.array(['say "hi", then: go', None, "plain"], dtype=object)}
    return Result(RULE.name, RULE.title, RULE.share, RULE.columns, frame, pool)


def test_csv_quotes_text_truncates_integers_and_rounds_half_away():
    assert to_csv(demo()).splitlines() == [
        "Row#,Time (%),Total (ns),Value,Name,",
        '1,2.3,9021,1600518599.7,"say ""hi"", then: go",',
        '2,0.1,"-",0.0,"-",',
        '3,"-",-3,98.8,"plain",',
    ]


def test_quoted_doubles_quotes_only_where_the_slice_has_them():
    texts = pa.array(['a"b', "plain", ":1:2", 'x""', None])
    assert quoted(texts).to_pylist() == ['"a""b"', '"plain"', '":1:2"', '"x' + '"' * 4 + '"', None]
    assert quoted(texts.slice(1, 2)).to_pylist() == ['"plain"', '":1:2"']  # its quote lies before the slice
    assert quoted(texts.slice(2, 2)).to_pylist() == ['":1:2"', '"x' + '"' * 4 + '"']


def test_ratio_unit_changes_percent_decimals():
    assert to_csv(demo(), decimals=2).splitlines()[1].startswith("1,2.25,9021,")
    assert cells(PERCENT, np.array([12.3456]), StringPool(), 3).to_pylist() == ["12.346"]
    assert cells(PERCENT, np.array([12.5]), StringPool(), 0).to_pylist() == ["13"]


def test_column_format_aligns():
    assert to_column(demo()).splitlines() == [
        "Row#  Time (%)  Total (ns)         Value  Name",
        "----  --------  ----------  ------------  ------------------",
        "   1       2.3        9021  1600518599.7  say \"hi\", then: go",
        "   2       0.1           -           0.0  -",
        "   3         -          -3          98.8  plain",
    ]


def many_rows(rows: int = 10) -> Result:
    """A result whose widest cells lie in its last rows, with missing and negative values."""
    frame = {"Time (%)": np.linspace(-5.55, 100.0, rows), "Total (ns)": np.where(np.arange(rows) % 4 == 2, NA,
                                                                                  np.arange(rows) ** 11),
             "Value": np.where(np.arange(rows) == 2, np.nan, np.arange(rows) / 3),
             "Name": np.array([None if i == 3 else "n" * (i + 1) + '"' for i in range(rows)], dtype=object)}
    return Result(RULE.name, RULE.title, RULE.share, RULE.columns, frame, StringPool())


def test_columns_of_many_rows_are_measured_then_written_a_piece_at_a_time(monkeypatch):
    whole = to_column(many_rows())
    assert whole.splitlines()[:4] == [
        "Row#  Time (%)   Total (ns)  Value  Name",
        "----  --------  -----------  -----  -----------",
        '   1      -5.6            0    0.0  n"',
        '   2       6.2            1    0.3  nn"',
    ]
    assert whole.splitlines()[-1] == "  10     100.0  31381059609    3.0  nnnnnnnnnn\""
    monkeypatch.setattr(writers, "CHUNK_ROWS", 3)
    for formatters, lines in ((1, [2, 3, 3, 3, 1]), (2, [2] + [1] * 10)):  # header and rule, then the pieces
        monkeypatch.setattr(writers, "FORMATTERS", formatters)
        assert [bytes(p).count(b"\n") for p in writers.column_parts(many_rows())] == lines
        assert to_column(many_rows()) == whole
    assert to_column(many_rows(0)).splitlines() == ["Row#  Time (%)  Total (ns)  Value  Name",
                                                    "----  --------  ----------  -----  ----"]


def test_json_is_written_a_piece_of_rows_at_a_time_as_json_dumps_writes_the_list(monkeypatch):
    whole = json.dumps(writers.rows_as_records(many_rows()), indent=1, ensure_ascii=False) + "\n"
    monkeypatch.setattr(writers, "CHUNK_ROWS", 4)
    for formatters, objects in ((1, [4, 4, 2]), (2, [2, 2, 2, 2, 2])):  # pieces, between "[", "]" and commas
        monkeypatch.setattr(writers, "FORMATTERS", formatters)
        parts = [bytes(p) for p in writers.json_parts(many_rows())]
        assert [p.count(b"{") for p in parts[1:-1:2]] == objects and set(parts[2:-1:2]) == {b",\n"}
        assert writers.to_json(many_rows()) == whole
    assert json.loads(whole)[1] == {"Time (%)": 6.2, "Total (ns)": 1, "Value": 0.3, "Name": 'nn"'}
    assert json.loads(whole)[2]["Total (ns)"] is json.loads(whole)[2]["Value"] is json.loads(whole)[3]["Name"] is None
    assert writers.to_json(many_rows(0)) == "[]\n"


def test_typed_values_are_the_printed_cells_as_numbers():
    pool = StringPool()
    ids = pool.intern(["a", "b"])
    assert typed_column(INT, np.array([9021.8, -3.7, np.nan, float(NA)]), pool) == [9021, -3, None, None]
    assert typed_column(INT, np.array([5, NA]), pool) == [5, None]
    assert typed_column(PERCENT, np.array([2.25, 2.345, -0.05, np.nan]), pool, decimals=2) == [2.25, 2.35, -0.05, None]
    assert typed_column(DECIMAL, np.array([98.75, -0.04]), pool) == [98.8, -0.0]
    assert typed_column(TEXT, np.array([ids[1], -1, ids[0]]), pool) == ["b", None, "a"]


@pytest.fixture
def report(writer):
    names = writer.strings(['k"quoted"', "plain"])
    writer.add("kernels", start=[0, 10, 30], end=[5, 20, 60], deviceId=0, demangledName=[names[0], names[1], names[1]])
    writer.close()
    return writer.path


def test_json_rows_are_typed(report):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "json", report)
    rows = json.loads(run.out)
    assert rows[0] == {"Time (%)": 88.9, "Total Time (ns)": 40, "Instances": 2, "Avg (ns)": 20, "Med (ns)": 20,
                       "Min (ns)": 10, "Max (ns)": 30, "StdDev (ns)": 10, "Name": "plain"}


def test_xlsx_file(report, tmp_path):
    from openpyxl import load_workbook

    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "xlsx", "-o", tmp_path / "out", report)
    assert run.code == 0, run.err
    book = load_workbook(tmp_path / "out_hggc_ppu_kern_sum.xlsx")
    sheet = book["hggc_ppu_kern_sum"]
    assert [c.value for c in sheet[1]][:3] == ["Row#", "Time (%)", "Total Time (ns)"]
    assert sheet["A1"].font.bold and sheet.freeze_panes == "A2" and sheet.auto_filter.ref.startswith("A1:")
    assert sheet["C2"].value == 40 and isinstance(sheet["B2"].value, float)
    assert sheet["J3"].value == 'k"quoted"'
    assert len(book.chartsheets) == 1 and len(book.chartsheets[0]._charts) == 1  # its chart, clear of the data


def test_xlsx_is_written_a_piece_of_rows_at_a_time_and_refuses_more_rows_than_a_sheet_holds(monkeypatch, tmp_path):
    from openpyxl import load_workbook

    monkeypatch.setattr(spreadsheets, "SHEET_PIECE_ROWS", 4)
    monkeypatch.setattr(spreadsheets, "XLSX_ROWS", 11)
    (tmp_path / "demo.xlsx").write_bytes(writers.to_xlsx(many_rows()))
    sheet = load_workbook(tmp_path / "demo.xlsx")["demo"]
    rows = [[c.value for c in row] for row in sheet.iter_rows()]
    assert rows[0] == ["Row#", "Time (%)", "Total (ns)", "Value", "Name"] and len(rows) == 11
    assert rows[3] == [3, 17.9, "-", "-", 'nnn"'] and rows[10] == [10, 100, 31381059609, 3, 'nnnnnnnnnn"']
    assert sheet.auto_filter.ref == "A1:E11" and sheet.column_dimensions["E"].width == 13
    monkeypatch.setattr(spreadsheets, "XLSX_ROWS", 10)
    with pytest.raises(AsysError, match="rule 'demo' has 10 rows, more than a sheet holds \\(9 under its header\\)"):
        writers.to_xlsx(many_rows())


def test_output_next_to_report_and_overwrite_protection(report):
    target = report.parent / "report_hggc_ppu_kern_sum.csv"
    assert run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", "-o", ".", report).code == 0
    first = target.read_text()
    assert first.startswith("Row#,")
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", "-o", ".", report)
    assert run.code == 2 and "exists" in run.err and "-f true" in run.err
    assert run_cli("stats", "-r", "hggc_ppu_kern_sum:rows=1", "--format", "csv", "-o", ".", "-f", "true",
                   report).code == 0
    assert target.read_text() != first
    assert [p.name for p in report.parent.iterdir() if p.name.startswith(".")] == []
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's private 0600


def test_csv_of_many_rows_streams_in_chunks_equal_to_one_piece(monkeypatch):
    frame = {"Total Time (ns)": np.arange(10), "Name": np.array([f'n"{i % 3}' for i in range(10)], dtype=object)}
    result = Result(RULE.name, RULE.title, RULE.share, (Column("Total Time (ns)", INT, ""), Column("Name", TEXT, "")), frame, StringPool())
    whole = to_csv(result)
    monkeypatch.setattr(writers, "CHUNK_ROWS", 3)
    monkeypatch.setattr(writers, "FORMATTERS", 1)
    assert [bytes(p).count(b"\n") for p in writers.csv_parts(result)] == [1, 3, 3, 3, 1]
    assert to_csv(result) == whole
    monkeypatch.setattr(writers, "CHUNK_ROWS", 6)
    monkeypatch.setattr(writers, "FORMATTERS", 2)  # pieces of half the rows, made two at a time, in order
    assert [bytes(p).count(b"\n") for p in writers.csv_parts(result)] == [1, 3, 3, 3, 1]
    assert to_csv(result) == whole
    assert whole.splitlines()[2] == '2,1,"n""1",'


def test_pieces_made_side_by_side_load_each_report_string_once(monkeypatch):
    """Formatting threads that meet report strings not yet loaded fetch each of them once, and
    the CSV is the one a single formatter writes."""
    fetched = []

    def fetch(ids):
        time.sleep(0.002)  # a read from the report: the other formatter runs meanwhile
        fetched.extend(ids)
        return [(i, f"name {i}") for i in ids]

    ids = np.repeat(np.arange(40), 5)  # each piece of 6 rows meets names first seen there
    columns = (Column("Total (ns)", INT, ""), Column("Name", TEXT, ""))

    def csv(formatters):
        monkeypatch.setattr(writers, "FORMATTERS", formatters)
        return to_csv(Result(RULE.name, RULE.title, RULE.share, columns, {"Total (ns)": np.arange(len(ids)), "Name": ids}, StringPool(fetch)))

    monkeypatch.setattr(writers, "CHUNK_ROWS", 12)
    alone = csv(1)
    fetched.clear()
    assert csv(4) == alone and sorted(fetched) == list(range(40))
    assert alone.splitlines()[7] == '7,6,"name 1",'


def test_csv_pieces_are_a_32nd_of_the_rows_within_bounds():
    assert writers.piece_rows(10) == writers.CHUNK_ROWS == 32_768
    assert writers.piece_rows(32 * 100_000 + 5) == 100_000
    assert writers.piece_rows(10 ** 9) == 262_144
    assert writers.piece_rows(10 ** 9, formatters=2) == 131_072


def test_missing_output_directory_is_an_error(report, tmp_path):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "-o", tmp_path / "nowhere" / "x", report)
    assert run.code == 2 and "does not exist" in run.err
    assert not (tmp_path / "nowhere").exists()


def test_output_errors_stop_the_run_before_any_rule_runs(report, tmp_path, monkeypatch):
    from asysstats.api import reports as session

    monkeypatch.setattr(session, "run_rule", lambda *a: pytest.fail("a rule ran"))
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum,hggc_ppu_kern_sum:base", "-o", "%", "-o",
                  tmp_path / "nowhere" / "x", report)
    assert (run.code, run.out) == (2, "") and run.err == f"error: --output {tmp_path}/nowhere/x: directory " \
                                                        f"{tmp_path}/nowhere does not exist\n"
    (tmp_path / "x_hggc_ppu_kern_sum.csv").write_text("old")
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", "-o", tmp_path / "x", report)
    assert run.code == 2 and run.err == f"error: {tmp_path}/x_hggc_ppu_kern_sum.csv exists; use -f true to " \
                                        "overwrite it\n"
    assert (tmp_path / "x_hggc_ppu_kern_sum.csv").read_text() == "old"


def test_positional_pairing_of_rules_formats_and_outputs(report, tmp_path):
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum,hggc_ppu_kern_sum:base", "--format", "csv", "--format", "json",
                  "-o", tmp_path / "a", "-o", "%", report)
    assert run.code == 0, run.err
    assert (tmp_path / "a_hggc_ppu_kern_sum.csv").read_text().startswith("Row#")
    assert json.loads(run.out)[0]["Name"] == "plain"


def test_pipe_output_and_its_failure(report, tmp_path):
    out = tmp_path / "piped.txt"
    assert run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "csv", "-o", f"@cat > {out}", report).code == 0
    assert out.read_text().startswith("Row#,")
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "-o", "@exit 3", report)
    assert run.code == 2 and "failed with exit status 3" in run.err


@pytest.mark.parametrize("rules", ["hggc_ppu_kern_sum", "hggc_ppu_kern_sum,hggc_ppu_kern_sum:base"])
def test_closed_pipe_exits_quietly(report, rules):
    before = fingerprint(report)
    shell = f"{sys.executable} -m asysstats stats -r {rules} {report} | head -1; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout and "Traceback" not in done.stderr and "Error" not in done.stderr
    assert fingerprint(report) == before


@pytest.mark.parametrize("fmt", ["csv", "column"])
def test_a_run_imports_only_what_it_needs(writer, fmt):
    """pyarrow imports pandas on its first pa.array/pa.scalar (0.3-0.7 s of every run); the loader (NULLs
    filled) and the writers avoid both. Rule modules other than the run's, the operator machinery and the
    PyTorch trace reader are not imported either (start-up time), nor the report checks, the ``regex`` module
    (user patterns only) or ``subprocess`` (piped output only)."""
    names = writer.strings(["plain"])
    writer.add("kernels", start=[0, 10], end=[5, 20], deviceId=0, demangledName=names[0])
    writer.add("hgtx", start=[0, 1], end=[9, None], eventType=[59, 34], text=["range", "mark"], globalTid=1)
    writer.close()
    report = writer.path
    code = ("import sys\nfrom asysstats.cli import main\n"
            f"sys.argv = ['asys', 'stats', '-r', 'hggc_ppu_kern_sum,hggc_ppu_kern_sum:base,hgtx_sum', '--format', '{fmt}', "
            f"'--no-cache', {str(report)!r}]\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
            "print('pandas' in sys.modules)\n"
            "print(sorted(m for m in sys.modules if m.startswith(('asysstats.rulebook.', 'asysstats.analysis.operators', "
            "'asysstats.reading.kineto.report'))))\n"
            "print([m for m in ('regex', 'subprocess', 'asysstats.rulebook.quality') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-3] == "False" and "plain" in done.stdout
    assert done.stdout.splitlines()[-2] == str(["asysstats.rulebook.hgtx_ranges", "asysstats.rulebook.kernels"])
    assert done.stdout.splitlines()[-1] == "[]"
