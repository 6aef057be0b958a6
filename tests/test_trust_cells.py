"""Issue 26, cells, option values, the regex budget and console text: every text cell of an XLSX
file is a text cell holding the name (escaped only where XML cannot hold a character); CSV keeps
names verbatim; the console table and error messages never pass a terminal control character
through; a quoted user value is cut to a readable length; every integer option is range-checked
(one line, exit 2); a user regex has one time budget for all the names it meets.

Every CLI case checks the stated outcome, no traceback, the exit status, the report untouched
(``run_cli``) and nothing left next to the report or the output."""

from __future__ import annotations

import itertools
import json
import re
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

import openpyxl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import asysstats
from asysstats.core import regexes
from asysstats.core.errors import AsysError, escaped_control, quoted
from asysstats.core.integers import INT64_MAX, parse_int
from asysstats.core.regexes import compile_user_regex, search
from asysstats.synth.writer import ReportWriter
from asysstats.writing.spreadsheets import XLSX_TEXT_CHARS, ooxml_text

from conftest import run_cli

RULE = "hggc_ppu_kern_sum"
PUSHPOP = 59
HOSTILE_NAMES = ["=1+2", "=HYPERLINK(\"http://x\",\"y\")", "+cmd", "-2+3", "@SUM(A1)", "#N/A", "#DIV/0!",
                 "ctl\x01\x1b[31mred\x1b[0m", "bell\x07", "c1\x9bcsi", "_x0041_ literal", "_x005F_ too",
                 "cr\rhere", "lf\nhere", "tab\there", "  spaced  ", "ok"]
TWO_TO_THE_70 = str(1 << 70)
OOXML_ESCAPE = re.compile(r"_x([0-9A-Fa-f]{4})_")
SHEET = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def report_of(path: Path, names: list[str], hgtx: bool = False) -> Path:
    """A report of one kernel per name (kernel i lasts i + 1 ns, so rows sort by name index
    backwards), optionally with one HGTX push/pop range ``step``."""
    writer = ReportWriter(path)
    ids = writer.strings(names)
    count = len(names)
    writer.add("kernels", start=[100 * i for i in range(count)], end=[100 * i + i + 1 for i in range(count)],
               deviceId=[0] * count, demangledName=ids)
    if hgtx:
        writer.add("hgtx", start=[0], end=[100 * count], eventType=[PUSHPOP], text=["step"], globalTid=[1 << 24],
                   domainId=[0])
    writer.close()
    return path


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def cli(folder: Path, *args: str | Path, code: int = 0, outputs: tuple[str, ...] = ()):
    """``asys`` with ``args``: the exit status ``code``, no traceback, a one-line error on exit 2,
    the report folder holding only what it held plus ``outputs`` (``run_cli`` checks the report)."""
    before = listing(folder)
    run = run_cli(*args)
    assert run.code == code, (run.code, run.err[:500])
    assert "Traceback" not in run.err and "internal error" not in run.err, run.err[:500]
    if code == 2:
        assert run.err.startswith("error: ") and run.err.count("\n") == 1, run.err[:500]
    assert listing(folder) == sorted(before + list(outputs))
    return run


def ooxml_decoded(text: str) -> str:
    """What Excel and LibreOffice show of an OOXML string (ECMA-376 ST_Xstring)."""
    return OOXML_ESCAPE.sub(lambda found: chr(int(found[1], 16)), text)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    return report_of(tmp_path / "r.asysrep", HOSTILE_NAMES)


def expected_order(names: list[str]) -> list[str]:
    return list(reversed(names))  # the longest kernel first (report_of)


# -- 1. XLSX: every text a text cell, unaltered where XML holds it --------------------------------
def test_xlsx_writes_every_name_as_a_text_cell_that_decodes_to_the_name(hostile, tmp_path):
    cli(tmp_path, "stats", "-r", RULE, "--format", "xlsx", "-o", tmp_path / "o", hostile,
        outputs=("o_hggc_ppu_kern_sum.xlsx",))
    path = tmp_path / "o_hggc_ppu_kern_sum.xlsx"
    sheet = openpyxl.load_workbook(path).active
    header = [c.value for c in sheet[1]]
    cells = [row[header.index("Name")] for row in sheet.iter_rows(min_row=2)]
    assert all(c.data_type == "s" for c in cells)
    assert [ooxml_decoded(c.value) for c in cells] == expected_order(HOSTILE_NAMES)
    stored = {ooxml_decoded(c.value): c.value for c in cells}
    assert stored["=1+2"] == "=1+2" and stored["#N/A"] == "#N/A" and stored["+cmd"] == "+cmd"  # not '=1+2
    assert stored["ctl\x01\x1b[31mred\x1b[0m"] == "ctl_x0001__x001B_[31mred_x001B_[0m"
    assert stored["_x0041_ literal"] == "_x005F_x0041_ literal" and stored["cr\rhere"] == "cr_x000D_here"
    assert stored["tab\there"] == "tab\there" and stored["lf\nhere"] == "lf\nhere"
    assert stored["c1\x9bcsi"] == "c1\x9bcsi"
    assert stored["  spaced  "] == "  spaced  "


def test_xlsx_sheet_xml_holds_inline_strings_and_no_formula(hostile, tmp_path):
    cli(tmp_path, "stats", "-r", RULE, "--format", "xlsx", "-o", tmp_path / "o", hostile,
        outputs=("o_hggc_ppu_kern_sum.xlsx",))
    with zipfile.ZipFile(tmp_path / "o_hggc_ppu_kern_sum.xlsx") as book:
        xml = book.read("xl/worksheets/sheet1.xml")
    root = ElementTree.fromstring(xml)  # well-formed XML 1.0: no raw control character
    assert not list(root.iter(f"{SHEET}f")) and b"<f>" not in xml
    names = [c for c in root.iter(f"{SHEET}c") if c.get("r", "").startswith("J") and c.get("r") != "J1"]
    assert len(names) == len(HOSTILE_NAMES)
    assert {c.get("t") for c in names} == {"inlineStr"}
    texts = ["".join(t.text or "" for t in c.iter(f"{SHEET}t")) for c in names]
    assert [ooxml_decoded(t) for t in texts] == expected_order(HOSTILE_NAMES)


def test_xlsx_text_longer_than_a_cell_holds_is_refused_in_one_line(tmp_path):
    report = report_of(tmp_path / "r.asysrep", ["k" * (XLSX_TEXT_CHARS + 1), "short"])
    out = tmp_path / "out"
    out.mkdir()
    run = cli(tmp_path, "stats", "-r", RULE, "--format", "xlsx", "-o", out / "o", report, code=2)
    assert "column 'Name'" in run.err and "32,768 characters" in run.err and "csv" in run.err
    assert listing(out) == []


def test_xlsx_text_of_exactly_a_cell_is_kept_whole(tmp_path):
    name = "k" * XLSX_TEXT_CHARS
    report = report_of(tmp_path / "r.asysrep", [name])
    cli(tmp_path, "stats", "-r", RULE, "--format", "xlsx", "-o", tmp_path / "o", report,
        outputs=("o_hggc_ppu_kern_sum.xlsx",))
    sheet = openpyxl.load_workbook(tmp_path / "o_hggc_ppu_kern_sum.xlsx").active
    assert sheet["J2"].value == name


@given(st.text(alphabet=st.sampled_from(list("ax_05F") + ["\x00", "\x1b", "\r", "\n", "\t", "\x7f", "\ufffe"]),
               max_size=30))
def test_ooxml_escape_reads_back_as_the_text(text):
    stored = ooxml_text(text)
    assert ooxml_decoded(stored) == text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\ufffe\uffff]", stored)  # XML 1.0 holds it, CR kept


# -- 2. CSV keeps names verbatim (decision: data for pipelines; spreadsheets read XLSX) -----------
def test_csv_keeps_formula_like_names_verbatim(hostile, tmp_path):
    run = cli(tmp_path, "stats", "-r", RULE, "--format", "csv", hostile)
    for name in ("=1+2", "+cmd", "-2+3", "@SUM(A1)", '=HYPERLINK(""http://x"",""y"")'):
        assert f',"{name}",\n' in run.out
    assert ",\"'=" not in run.out and "\"\t=" not in run.out


# -- 3. Console text: no terminal control character from a name ----------------------------------
def test_column_table_escapes_control_characters_and_stays_aligned(hostile, tmp_path):
    run = cli(tmp_path, "stats", "-r", RULE, hostile)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", run.out)
    assert "ctl\\x01\\x1b[31mred\\x1b[0m" in run.out and "bell\\x07" in run.out and "c1\\x9bcsi" in run.out
    assert "cr\\rhere" in run.out and "lf\\nhere" in run.out and "tab\\there" in run.out
    lines = run.out.splitlines()
    assert len(lines) == 2 + len(HOSTILE_NAMES)  # a newline in a name breaks no line
    name_at = lines[0].index("Name")
    assert all(len(line) >= name_at for line in lines[2:])


def test_json_keeps_names_exactly(hostile, tmp_path):
    run = cli(tmp_path, "stats", "-r", RULE, "--format", "json", hostile)
    assert [row["Name"] for row in json.loads(run.out)] == expected_order(HOSTILE_NAMES)


@pytest.mark.parametrize("args", [
    ("stats", "-r", f"{RULE}:column=a\x1b[31mb\x9b"),
    ("stats", "-r", "no_such\x1b]0;title\x07rule"),
    ("stats", "-r", RULE, "--format", "csv\x1b[2J"),
])
def test_error_messages_escape_control_characters(hostile, tmp_path, args):
    run = cli(tmp_path, *args, hostile, code=2)
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", run.err[:-1])
    assert "\\x1b" in run.err


def test_escaped_control_spells_each_character():
    assert escaped_control("a\nb\r\tc\x1b\x9b\x00\x7f\u2028") == "a\\nb\\r\\tc\\x1b\\x9b\\x00\\x7f\\u2028"
    assert escaped_control("plain ✓ text") == "plain ✓ text"


# -- 4. A long user value is cut in a message -----------------------------------------------------
@pytest.mark.parametrize("args", [
    ("-r", f"{RULE}:rows=" + "9" * 100_000),
    ("-r", f"{RULE}:base=" + "x" * 100_000),
    ("-r", f"{RULE}:column=" + "x" * 100_000),
    ("-r", f"{RULE}:nope" + "x" * 100_000),
    ("-r", "hgtx_pushpop_trace:range=(" + "a" * 100_000),
    ("-r", RULE, "--filter-time", "1/" + "x" * 100_000),
    ("-r", RULE, "--format", "csv:ratio=" + "x" * 100_000),
    ("-r", RULE, "--ts-shift", "7" * 100_000),
    ("-r", "hggc_ppu_kern_category_sum", "--kernel-group-config", "g=" + "(" * 100_000),
])
def test_a_100_kb_option_value_gives_a_short_error_line(hostile, tmp_path, args):
    run = cli(tmp_path, "stats", *args, hostile, code=2)
    assert len(run.err) < 600 and "(100,0" in run.err, run.err


def test_quoted_shows_short_values_whole_and_long_ones_cut():
    assert quoted("ten") == "'ten'" and quoted("a\x1bb") == "'a\\x1bb'"
    assert quoted("x" * 81) == repr("x" * 80) + "…(81 characters)"


# -- 5. Every integer option is range-checked ----------------------------------------------------
@pytest.mark.parametrize("option, words", [
    (f"device={TWO_TO_THE_70}", ("option 'device'", "from 0 to 2147483647")),
    (f"device=0/{1 << 31}", ("option 'device'", "from 0 to 2147483647")),
    (f"rows={TWO_TO_THE_70}", ("option 'rows'", f"from 1 to {INT64_MAX}")),
    ("rows=" + "9" * 5000, ("option 'rows'", "(5,000 characters)")),
    ("rows=-3", ("option 'rows' must be an integer >= 1",)),
    ("rows=١٢", ("option 'rows' must be an integer >= 1",)),
])
def test_out_of_range_rule_integers_are_one_line_errors(hostile, tmp_path, option, words):
    run = cli(tmp_path, "stats", "-r", f"{RULE}:{option}", hostile, code=2)
    for word in words:
        assert word in run.err


def test_in_range_integers_still_work(hostile, tmp_path):
    run = cli(tmp_path, "stats", "-r", f"{RULE}:device=2147483647", "--format", "csv", hostile)
    assert run.out.count("\n") == 1  # the header: no kernel on that device
    run = cli(tmp_path, "stats", "-r", f"{RULE}:rows= +002 ", "--format", "csv", hostile)
    assert run.out.count("\n") == 3


@pytest.mark.parametrize("option, words", [
    (f"ppu_gaps:gap={TWO_TO_THE_70}", ("option 'gap'",)),
    (f"ppu_gaps:gap={INT64_MAX // 1_000_000 + 1}", ("option 'gap'", f"from 0 to {INT64_MAX // 1_000_000}")),
    ("ppu_time_util:chunks=100000000", ("option 'chunks'", "from 1 to 1000000")),
])
def test_analyze_integers_that_do_not_fit_their_meaning(hostile, tmp_path, option, words):
    run = cli(tmp_path, "analyze", "-r", option, hostile, code=2)
    for word in words:
        assert word in run.err


@pytest.mark.parametrize("value", [TWO_TO_THE_70, str((1 << 62) + 1), f"-{TWO_TO_THE_70}", "1e3", "x"])
def test_ts_shift_out_of_range_is_a_one_line_error(hostile, tmp_path, value):
    run = cli(tmp_path, "stats", "-r", RULE, "--ts-shift", value, hostile, code=2)
    assert "--ts-shift must be an integer" in run.err


def test_ts_shift_in_range_shifts_the_trace(tmp_path):
    report = report_of(tmp_path / "r.asysrep", ["a", "b"])
    plain = cli(tmp_path, "stats", "-r", "hggc_ppu_trace", "--format", "json", report)
    shifted = cli(tmp_path, "stats", "-r", "hggc_ppu_trace", "--format", "json", "--ts-shift", str(10 ** 18), report)
    starts = [[row["Start (ns)"] for row in json.loads(run.out)] for run in (plain, shifted)]
    assert [s + 10 ** 18 for s in starts[0]] == starts[1] and starts[0]


@pytest.mark.parametrize("shift", [1 << 70, [0, -(1 << 63)], True, "5", 1.5])
def test_api_ts_shift_is_checked(tmp_path, shift):
    report = report_of(tmp_path / "r.asysrep", ["a"])
    with pytest.raises(AsysError, match="ts_shift"):
        asysstats.open(report, ts_shift=shift)
    assert listing(tmp_path) == ["r.asysrep"]


def test_api_integers_are_checked(tmp_path):
    report = report_of(tmp_path / "r.asysrep", ["a"])
    with pytest.raises(AsysError, match="filter_time: the end"):
        asysstats.open(report, filter_time=(0, 1 << 70))
    with asysstats.open(report) as opened:
        with pytest.raises(AsysError, match="option 'device' must be an integer from 0 to 2147483647"):
            opened.stats(RULE, device=[1 << 70])
        with pytest.raises(AsysError, match="option 'rows'"):
            opened.stats(RULE, rows=1 << 70)


@pytest.mark.parametrize("spec, words", [
    ("step/" + "9" * 5000, ("--filter-hgtx: the index", "(5,000 characters)")),
    (f"step/{TWO_TO_THE_70}", ("--filter-hgtx: the index", f"from 0 to {INT64_MAX}")),
    ("step/1", ("has 1 instance(s), index 1 is out of range",)),
])
def test_filter_hgtx_index_out_of_range(tmp_path, spec, words):
    report = report_of(tmp_path / "r.asysrep", ["a", "b"], hgtx=True)
    run = cli(tmp_path, "stats", "-r", RULE, "--filter-hgtx", spec, report, code=2)
    for word in words:
        assert word in run.err


def test_filter_hgtx_index_zero_still_works(tmp_path):
    report = report_of(tmp_path / "r.asysrep", ["a", "b"], hgtx=True)
    run = cli(tmp_path, "stats", "-r", RULE, "--format", "csv", "--filter-hgtx", "step/0", report)
    assert run.out.count("\n") == 3


def test_filter_time_out_of_int64_is_a_one_line_error(hostile, tmp_path):
    run = cli(tmp_path, "stats", "-r", RULE, "--filter-time", f"0/{TWO_TO_THE_70}", hostile, code=2)
    assert "--filter-time" in run.err and "the end (ns)" in run.err


@pytest.mark.parametrize("unit", ["csv:ratio=.²%", "csv:ratio=." + "9" * 5000 + "%", "csv:ratio=.4%"])
def test_format_ratio_digits_are_checked(hostile, tmp_path, unit):
    run = cli(tmp_path, "stats", "-r", RULE, "--format", unit, hostile, code=2)
    assert "the ratio unit is %, .1%, .2% or .3%" in run.err and len(run.err) < 300


def test_parse_int_reads_ascii_decimal_only():
    assert parse_int(" -0012 ", "n") == -12 and parse_int("+7", "n") == 7
    for bad in ("1_000", "0x10", "1e3", "", "١", "²"):
        with pytest.raises(AsysError, match="n must be an integer"):
            parse_int(bad, "n")
    assert parse_int("0" * 40 + "5", "n") == 5  # leading zeros are not digits of the value


# -- 6. One regex time budget for all the names ---------------------------------------------------
SLOW = "(a|aa)+$"  # backtracks exponentially on a run of a's that does not end the text


def test_slow_regex_over_many_names_stops_within_its_budget(tmp_path):
    names = [f"{'a' * 27}b{index}" for index in range(20)]  # each ~0.5 s here: 20 x that without the budget
    report = report_of(tmp_path / "r.asysrep", names)
    started = time.perf_counter()
    run = cli(tmp_path, "stats", "-r", "hggc_ppu_kern_category_sum", "--kernel-group-config", f"slow={SLOW}", report,
              code=2)
    elapsed = time.perf_counter() - started
    assert elapsed < 2 * regexes.MATCH_TIMEOUT_S + 1, elapsed
    assert "'(a|aa)+$' took too long" in run.err and "--kernel-group-config" in run.err


def test_budget_is_shared_spent_and_renewed_by_a_new_request(monkeypatch):
    monkeypatch.setattr(regexes, "MATCH_TIMEOUT_S", 0.2)
    pattern = compile_user_regex(SLOW, "test")
    started = time.perf_counter()
    with pytest.raises(AsysError, match="took too long"):
        for index in range(100):
            search(pattern, f"{'a' * 22}b{index}", "test")
    assert time.perf_counter() - started < 2 * 0.2 + 0.2
    with pytest.raises(AsysError, match="took too long"):  # spent: the next name fails at once
        search(pattern, "aab", "test")
    assert search(compile_user_regex(SLOW, "test"), "aa", "test")  # a new request: a full budget


@pytest.mark.parametrize("cost, runs_out", [(0.0009, False), (0.0011, True)])
def test_sound_pattern_over_many_names_never_runs_out(monkeypatch, cost, runs_out):
    """On a clock where each match takes ``cost``: below the refill a pattern matches 20,000 names
    (18 s of matching against a 0.5 s budget); above it, the budget is spent after ~5,000."""
    readings = itertools.count()  # two a match: its start, then its end, ``cost`` later
    monkeypatch.setattr(regexes, "time", SimpleNamespace(perf_counter=lambda: (next(readings) + 1) // 2 * cost))
    monkeypatch.setattr(regexes, "MATCH_TIMEOUT_S", 0.5)
    pattern = compile_user_regex(r"gemm|nccl", "test")
    names = (f"void kernel_{index}_gemm<float>(int)" for index in range(20_000))
    if runs_out:
        with pytest.raises(AsysError, match="took too long"):
            all(search(pattern, name, "test") for name in names)
    else:
        assert sum(search(pattern, name, "test") for name in names) == 20_000


@pytest.mark.parametrize("pattern, literal", [
    (r"ProfilerStep#\d+", "ProfilerStep#"), ("gemm", "gemm"), ("gemm?", "gem"), ("ab*c", "a"), ("ab{0,2}", "a"),
    ("^step", ""), ("nccl|gemm", ""), ("(?i)nccl", ""), ("a(b|c)d", ""), (r"aten::mm\(", "aten::mm"), ("", ""),
    ("{?", "")])
def test_required_literal_is_the_plain_text_every_match_begins_with(pattern, literal):
    assert regexes.required_literal(pattern) == literal


@settings(max_examples=300, deadline=None)
@example(pattern="{?", texts=[""])  # a literal '{' made optional: nothing is required
@given(st.text(alphabet="ab#.*+?{}1,()|^$\\d", max_size=8), st.lists(st.text(alphabet="ab#1 ", max_size=8), max_size=8))
def test_search_each_finds_what_search_finds(pattern, texts):
    """Skipping the texts without the pattern's required literal never loses a match."""
    try:
        compiled = compile_user_regex(pattern, "test")
    except AsysError:
        return
    expected = [search(compiled, text, "test") for text in texts]
    assert regexes.search_each(compiled, texts + [None], "test").tolist() == expected + [False]
