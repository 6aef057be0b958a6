"""The command line the reference describes (issue 27, section 1): files default to CSV, comma
lists of formats and outputs, --version, --help-reports ALL, the brief summary of the default
set, one JSON document per stream, a note when --filter-time holds no events, ``asys cache``."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
from pathlib import Path

import pytest

from asysstats.cli.arguments import output_items
from asysstats.cli.helptext import all_rules_help, rule_help
from asysstats.core.errors import AsysError
from asysstats.reading import cache as column_cache
from asysstats.reading.cache_folder import cache_entries, human_size, trim_cache
from asysstats.rulebook import REGISTRY
from asysstats.synth.writer import ReportWriter

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample.asysrep"
KERN_SUM = "hggc_ppu_kern_sum"
HEADER_CSV = "Row#,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name,"
HEADER_COLUMN = "Row#  Time (%)  Total Time (ns)  Instances  Avg (ns)  Med (ns)  Min (ns)  Max (ns)  StdDev (ns)  Name"


def kernels_report(path: Path, count: int = 13, analysis: bool = True) -> Path:
    """``count`` kernels k00, k01, ... of one run each on device 0, kernel i from 1000 + 100 i to
    1000 + 100 i + 10 + i (k12 the longest); the capture (ANALYSIS_DETAILS) spans 0..5000 ns from 0:

        0        1000   1100   1200 ...  2200     5000
        |capture  [k00]  [k01]  [k02] ... [k12]   |
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = ReportWriter(path)
    names = writer.strings([f"k{index:02d}" for index in range(count)])
    starts = [1000 + 100 * index for index in range(count)]
    writer.add("kernels", start=starts, end=[start + 10 + index for index, start in enumerate(starts)],
               deviceId=0, demangledName=names, shortName=names, mangledName=names)
    if analysis:
        writer.add("analysis", duration=5000, startTime=0, stopTime=5000)
    writer.close()
    return path


@pytest.fixture
def report(tmp_path):
    return kernels_report(tmp_path / "in" / "r.asysrep")


def kernel_names(csv_text: str) -> list[str]:
    return [line.split(",")[-2].strip('"') for line in csv_text.splitlines()[1:]]


# -- 1. files default to CSV ------------------------------------------------------------------

def test_files_default_to_csv_the_console_and_commands_to_column(report, tmp_path):
    run = run_cli("stats", "-r", KERN_SUM, "-o", tmp_path / "p", report)
    assert (run.code, run.out, run.err) == (0, "", "")
    written = (tmp_path / f"p_{KERN_SUM}.csv").read_text()
    assert written.splitlines()[0] == HEADER_CSV
    assert kernel_names(written) == [f"k{index:02d}" for index in range(12, -1, -1)]  # longest first
    assert run_cli("stats", "-r", KERN_SUM, "-o", ".", report).code == 0
    assert sorted(p.name for p in report.parent.iterdir()) == ["r.asysrep", f"r_{KERN_SUM}.csv"]
    assert (report.parent / f"r_{KERN_SUM}.csv").read_text() == written
    console = run_cli("stats", "-r", KERN_SUM, report)
    assert console.out.splitlines()[0] == HEADER_COLUMN and len(console.out.splitlines()) == 2 + 13
    piped = tmp_path / "piped.txt"
    assert run_cli("stats", "-r", KERN_SUM, "-o", f"@cat > {piped}", report).code == 0
    assert piped.read_text() == console.out
    run = run_cli("stats", "-r", KERN_SUM, "--format", "json", "-o", tmp_path / "j", report)
    assert run.code == 0 and json.loads((tmp_path / f"j_{KERN_SUM}.json").read_text())[0]["Name"] == "k12"


def test_help_formats_names_the_defaults_of_files_and_console():
    run = run_cli("stats", "--help-formats")
    lines = {line.split()[0]: line for line in run.out.splitlines() if line.startswith("    ") and line.strip()}
    assert "(the console default, and of @command)" in lines["column"]
    assert "(the file default: -o . or <dir>/<prefix>)" in lines["csv"]
    assert "default: csv to files, column to the console and @command" in " ".join(run_cli("stats", "--help").out.split())


# -- 2. comma lists ---------------------------------------------------------------------------

def test_comma_lists_pair_as_repeated_options_do(report, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    rules = f"{KERN_SUM},{KERN_SUM}:base,{KERN_SUM}:mangled"
    commas = run_cli("stats", "-r", rules, "--format", "csv,json", "--output", f"%,{tmp_path}/a/p", report)
    repeated = run_cli("stats", "-r", rules, "--format", "csv", "--format", "json", "--output", "%",
                       "--output", f"{tmp_path}/b/p", report)
    assert commas.code == repeated.code == 0, commas.err + repeated.err
    assert commas.out == repeated.out and commas.out.splitlines()[0] == HEADER_CSV  # the first rule: CSV, console
    names = [f"p_{KERN_SUM}_2.json", f"p_{KERN_SUM}_3.json"]  # the last format and output repeat
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == names
    for name in names:
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
        assert json.loads((tmp_path / "a" / name).read_text())[0]["Name"] == "k12"


def test_an_at_command_takes_the_rest_of_the_list_commas_and_all(report, tmp_path):
    second = tmp_path / "second.txt"
    run = run_cli("stats", "-r", f"{KERN_SUM},{KERN_SUM}:base", "--format", "column,csv",
                  "-o", f"%,@cut -d, -f2,10 > {second}", report)
    assert run.code == 0, run.err
    assert run.out.splitlines()[:4] == ["", f"** HGGC PPU Kernel Summary ({KERN_SUM}):", "", HEADER_COLUMN]
    assert second.read_text().splitlines()[:3] == ['Time (%),Name', '10.6,"k12"', '10.1,"k11"']


def test_output_items():
    assert output_items(["%,out/p", "."]) == ["%", "out/p", "."]
    assert output_items([r"out/a\,b,%"]) == ["out/a,b", "%"]  # a literal comma of a path
    assert output_items(["out/p, @sort -t, -k2 | head -3"]) == ["out/p", "@sort -t, -k2 | head -3"]
    assert output_items(["@tr , ;"]) == ["@tr , ;"]


def test_an_escaped_comma_is_part_of_the_file_name(report, tmp_path):
    assert run_cli("stats", "-r", KERN_SUM, "-o", f"{tmp_path}/a\\,b", report).code == 0
    assert (tmp_path / f"a,b_{KERN_SUM}.csv").read_text().splitlines()[0] == HEADER_CSV


def test_an_unknown_format_in_a_list_is_one_line(report):
    run = run_cli("stats", "-r", f"{KERN_SUM},{KERN_SUM}:base", "--format", "csv,yaml", report)
    assert (run.code, run.out) == (2, "") and run.err == \
        "error: --format: unknown format 'yaml' (formats: column, csv, json, xlsx, py, tsv)\n"


# -- 3. --version -----------------------------------------------------------------------------

def test_version_is_the_package_version():
    run = run_cli("--version")
    assert (run.code, run.out) == (0, f"asys {importlib.metadata.version('asysstats')}\n")


# -- 4. --help-reports ALL and docs/rules.md ---------------------------------------------------

def test_help_reports_all_prints_every_rules_help():
    run = run_cli("stats", "--help-reports", "ALL")
    stats_rules = [rule for rule in REGISTRY if rule.command != "analyze"]
    assert run.code == 0 and run.out == "\n".join(rule_help(rule) for rule in stats_rules)
    assert run.out.count("    Output:\n") == len(stats_rules) and "ppu_gaps --" not in run.out
    assert run_cli("stats", "--help-reports", "all").out == run.out
    analyze = run_cli("analyze", "--help-rules", "ALL").out
    analyze_rules = [rule for rule in REGISTRY if rule.command == "analyze"]
    assert [rule.name for rule in analyze_rules][:2] == ["ppu_gaps", "ppu_time_util"]
    assert analyze == "\n".join(rule_help(rule) for rule in analyze_rules)


def test_help_reports_without_a_value_lists_the_names():
    run = run_cli("stats", "--help-reports")
    assert run.out.startswith("The following built-in rules are available:\n\nThe asys reports (the asys reference's "
                              "names, columns and formats):\n    hggc_ppu_kern_sum ")
    assert "    Options:" not in run.out
    # the title and a blank line, two families (a heading each, a blank line between), a closing blank line
    assert len(run.out.splitlines()) == 6 + sum(r.command != "analyze" for r in REGISTRY)


def test_docs_rules_md_is_the_text_of_help_reports_all():
    page = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```\n(.*?)^```$", page, re.S | re.M)
    assert "\n".join(blocks) == all_rules_help(REGISTRY, "stats") + "\n" + all_rules_help(REGISTRY, "analyze"), \
        "docs/rules.md is stale: python -m asysstats.cli.helptext > docs/rules.md"


# -- 5. the brief summary of the default set ----------------------------------------------------

def test_the_default_set_prints_the_top_rows_and_how_to_see_the_rest(report, tmp_path):
    run = run_cli("stats", report)
    assert run.code == 0
    table = run.out.split(f"({KERN_SUM}):\n\n")[1].splitlines()
    assert table[0] == HEADER_COLUMN
    assert [line.split()[-1] for line in table[2:12]] == [f"k{index:02d}" for index in range(12, 2, -1)]
    assert table[12] == f"\u2026 3 more rows: asys stats -r {KERN_SUM} {report}"
    assert "k02" not in run.out
    full = run_cli("stats", "-r", KERN_SUM, report)  # what the hint runs: every row
    assert len(full.out.splitlines()) == 2 + 13 and "more rows" not in full.out
    assert run_cli("stats", "-o", tmp_path / "p", report).code == 0  # files keep every row
    assert len((tmp_path / f"p_{KERN_SUM}.csv").read_text().splitlines()) == 1 + 13


def test_the_hint_repeats_the_options_that_change_the_rows(report):
    run = run_cli("stats", "--filter-time", "100/5000", "--keep-suspect-events", report)
    hint = [line for line in run.out.splitlines() if "more rows" in line]
    assert hint == [f"\u2026 3 more rows: asys stats -r {KERN_SUM} --filter-time 100/5000 --keep-suspect-events "
                    f"{report}"]
    assert len(run_cli(*shlex.split(hint[0].split(": ", 1)[1])[1:]).out.splitlines()) == 2 + 13


def test_a_table_of_ten_rows_or_fewer_is_printed_whole(tmp_path):
    report = kernels_report(tmp_path / "ten.asysrep", count=10)
    run = run_cli("stats", report)
    assert "more rows" not in run.out and "k00" in run.out


def test_the_sample_summary_is_brief():
    run = run_cli("stats", SAMPLE)
    lines = run.out.splitlines()
    assert run.code == 0 and len(lines) == 78
    assert [line for line in lines if "more rows" in line] == [
        f"\u2026 667 more rows: asys stats -r hgtx_sum {SAMPLE}",
        f"\u2026 4 more rows: asys stats -r hggc_api_sum {SAMPLE}",
        f"\u2026 12 more rows: asys stats -r hggc_ppu_kern_sum {SAMPLE}"]


# -- 6. one JSON document per stream -------------------------------------------------------------

def test_several_json_results_to_the_console_are_one_object(report):
    run = run_cli("stats", "-r", f"{KERN_SUM},{KERN_SUM}:base:rows=2,{KERN_SUM}:device=5", "--format", "json", report)
    assert run.code == 0, run.err
    document = json.loads(run.out)
    assert list(document) == [f"{KERN_SUM}_1", f"{KERN_SUM}_2", f"{KERN_SUM}_3"]  # as its files would be named
    assert [row["Name"] for row in document[f"{KERN_SUM}_2"]] == ["k12", "k11"]
    assert len(document[f"{KERN_SUM}_1"]) == 13 and document[f"{KERN_SUM}_3"] == []
    assert document[f"{KERN_SUM}_1"][0] == {"Time (%)": 10.6, "Total Time (ns)": 22, "Instances": 1, "Avg (ns)": 22,
                                            "Med (ns)": 22, "Min (ns)": 22, "Max (ns)": 22, "StdDev (ns)": 0,
                                            "Name": "k12"}
    one = json.loads(run_cli("stats", "-r", KERN_SUM, "--format", "json", report).out)
    assert isinstance(one, list) and one == document[f"{KERN_SUM}_1"]


def test_json_of_several_reports_is_keyed_by_report_and_rule(tmp_path):
    first = kernels_report(tmp_path / "a.asysrep", count=2)
    second = kernels_report(tmp_path / "b.asysrep", count=3)
    document = json.loads(run_cli("stats", "-r", KERN_SUM, "--format", "json", first, second).out)
    assert {key: len(rows) for key, rows in document.items()} == {f"a_{KERN_SUM}": 2, f"b_{KERN_SUM}": 3}


def test_the_default_set_in_json_is_one_object_of_the_tables_there_are(report):
    run = run_cli("stats", "--format", "json", report)
    document = json.loads(run.out)
    assert list(document) == [KERN_SUM] and len(document[KERN_SUM]) == 13  # JSON keeps every row
    assert run.err.count("SKIPPED: ") == 5


# -- 7. a --filter-time that holds no events says why ---------------------------------------------

def test_a_window_without_the_rules_events_is_a_note_with_the_spans(report):
    run = run_cli("stats", "-r", KERN_SUM, "--filter-time", "0/900", report)
    assert (run.code, run.out.splitlines()[2:]) == (0, [])
    assert run.err == f"note: {KERN_SUM}: no events in --filter-time 0/900; the capture spans 0..5000 ns and its " \
                      "kernels 1000..2222 ns\n"
    assert run_cli("stats", "-r", KERN_SUM, "--filter-time", "1000/1010", report).err == ""  # k00 is inside


def test_an_empty_table_of_events_in_the_window_has_no_note(tmp_path):
    report = kernels_report(tmp_path / "r.asysrep", count=2)
    run = run_cli("analyze", "-r", "ppu_gaps:gap=1", "--filter-time", "900/1200", report)  # k00, k01: no gap > 1 ms
    assert run.code == 0 and run.out.count("\n") == 2 and run.err == ""


def test_the_sample_says_where_its_kernels_are():
    run = run_cli("stats", "-r", KERN_SUM, "--filter-time", "1000000/5000000", SAMPLE)
    assert run.err == f"note: {KERN_SUM}: no events in --filter-time 1000000/5000000; the capture spans " \
                      "0..56792519 ns and its kernels 29556879..54954044 ns\n"


def test_the_readme_filter_time_example_returns_rows_on_the_sample():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("asys stats") and "--filter-time" in line)
    args = shlex.split(line.split("#")[0])[1:]
    assert str(SAMPLE.relative_to(ROOT)) in args
    run = run_cli(*[SAMPLE if arg == str(SAMPLE.relative_to(ROOT)) else arg for arg in args])
    assert run.code == 0 and run.err == "" and len(run.out.splitlines()) == 2 + 11


# -- 8. the cache: asys cache, --clear, the size cap ----------------------------------------------

@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache folder of the test's own (the session's private one is shared by every test)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("ASYSSTATS_CACHE_MAX", raising=False)
    return tmp_path / "xdg" / "asysstats"


def test_asys_cache_shows_the_folder_size_and_entries_and_clears_them(report, own_cache):
    empty = run_cli("cache")
    assert empty.out.splitlines()[:2] == [f"cache folder: {own_cache} (not made yet)", "size: 0 B in 0 entries"]
    assert run_cli("stats", "-r", KERN_SUM, report).code == 0
    entries = cache_entries(own_cache)
    assert [entry.report for entry in entries] == [str(report.resolve())]
    size = sum(path.stat().st_size for path in entries[0].folder.iterdir())
    assert entries[0].size == size > 0
    shown = run_cli("cache").out.splitlines()
    assert shown[:3] == [f"cache folder: {own_cache}", f"size: {human_size(size)} in 1 entry",
                         "cap: 10.0 GiB (ASYSSTATS_CACHE_MAX, e.g. 20G): past it, a run removes the entries used "
                         "longest ago once done; asys cache --clear empties it"]
    assert shown[4].split() == ["Size", "Last", "use", "Report"]
    assert shown[5].endswith(f"  {report.resolve()}") and shown[5].lstrip().startswith(human_size(size))
    cleared = run_cli("cache", "--clear")
    assert (cleared.code, cleared.out) == (0, f"removed {own_cache} ({human_size(size)})\n")
    assert not own_cache.exists()


def test_a_run_past_the_cap_removes_the_entries_used_longest_ago(tmp_path, own_cache, monkeypatch):
    a, b, c = (kernels_report(tmp_path / f"{name}.asysrep") for name in ("a", "b", "c"))
    for each in (a, b):
        assert run_cli("stats", "-r", KERN_SUM, each).code == 0
    entry_a, entry_b = (next(e for e in cache_entries(own_cache) if e.report == str(r.resolve())) for r in (a, b))
    os.utime(entry_a.folder / "stamp.json", ns=(10**9, 10**9))
    os.utime(entry_b.folder / "stamp.json", ns=(2 * 10**9, 2 * 10**9))  # b used after a
    assert run_cli("stats", "-r", KERN_SUM, a).code == 0  # a used again (nothing stored): its stamp renewed
    assert (entry_a.folder / "stamp.json").stat().st_mtime_ns > 2 * 10**9
    assert abs(entry_a.size - entry_b.size) < 10  # their stamps and sums differ in a few digits
    monkeypatch.setenv("ASYSSTATS_CACHE_MAX", str(5 * entry_a.size // 2))  # room for two of the three entries
    assert run_cli("stats", "-r", KERN_SUM, c).code == 0
    assert [entry.report for entry in cache_entries(own_cache)] == [str(c.resolve()), str(a.resolve())]
    monkeypatch.setenv("ASYSSTATS_CACHE_MAX", "1")  # the entries of the run itself stay
    assert run_cli("stats", "-r", KERN_SUM, b).code == 0
    assert [entry.report for entry in cache_entries(own_cache)] == [str(b.resolve())]


def test_trim_keeps_the_entries_of_the_run_and_goes_from_the_oldest(tmp_path):
    root = tmp_path / "cache"
    for number, name in enumerate(("a" * 32, "b" * 32, "c" * 32, "d" * 32)):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "stamp.json").write_text(json.dumps({"path": f"/r/{name[0]}"}))
        (folder / "col.arrow").write_bytes(b"x" * 1000)
        os.utime(folder / "stamp.json", ns=((number + 1) * 10**18,) * 2)  # a used first, d last
    (root / "not-an-entry").mkdir()
    entries = cache_entries(root)
    assert [entry.report for entry in entries] == ["/r/d", "/r/c", "/r/b", "/r/a"]
    size = entries[0].size
    removed = trim_cache(2 * size, keep=frozenset({root / ("a" * 32)}), root=root)
    assert [entry.report for entry in removed] == ["/r/b", "/r/c"]  # a is the run's: it stays
    assert sorted(p.name for p in root.iterdir()) == ["a" * 32, "d" * 32, "not-an-entry", "usage.json"]
    assert json.loads((root / "usage.json").read_text()) == {"bytes": 2 * size}  # what the scan left


def test_a_run_scans_the_cache_only_when_its_recorded_usage_may_pass_the_cap(tmp_path, own_cache, monkeypatch):
    a, b = (kernels_report(tmp_path / f"{name}.asysrep") for name in ("a", "b"))
    assert run_cli("stats", "-r", KERN_SUM, a).code == 0  # no usage recorded yet: a scan records it
    [entry] = cache_entries(own_cache)
    assert json.loads((own_cache / "usage.json").read_text()) == {"bytes": entry.size}
    (own_cache / "usage.json").write_text(json.dumps({"bytes": 0}))  # an estimate far below the truth
    monkeypatch.setenv("ASYSSTATS_CACHE_MAX", str(entry.size * 3 // 2))  # room for one entry and a half
    assert run_cli("stats", "-r", KERN_SUM, b).code == 0  # 0 + b's bytes fit: no scan, a stays
    assert len(cache_entries(own_cache)) == 2
    recorded = json.loads((own_cache / "usage.json").read_text())["bytes"]
    assert 0.8 * entry.size < recorded <= entry.size  # b's stored files added to the estimate (not its stamp)
    os.utime(cache_entries(own_cache)[1].folder / "stamp.json", ns=(10**9, 10**9))  # a used longest ago
    assert run_cli("stats", "--no-cache", "-r", KERN_SUM, a).code == 0  # stores nothing: no scan
    assert len(cache_entries(own_cache)) == 2
    (own_cache / "usage.json").unlink()
    c = kernels_report(tmp_path / "c.asysrep")
    assert run_cli("stats", "-r", KERN_SUM, c).code == 0  # no estimate: a scan, past the cap, trims
    assert [e.report for e in cache_entries(own_cache)] == [str(c.resolve())]


@pytest.mark.parametrize("given, limit", [("", 10 << 30), ("123", 123), ("500M", 500 << 20), ("2GiB", 2 << 30),
                                          ("1 t", 1 << 40), ("64KB", 64 << 10)])
def test_the_cap_from_the_environment(monkeypatch, given, limit):
    monkeypatch.setenv("ASYSSTATS_CACHE_MAX", given)
    assert column_cache.cache_limit() == limit


def test_a_bad_cap_stops_the_run_before_it_starts(report, own_cache, monkeypatch):
    monkeypatch.setenv("ASYSSTATS_CACHE_MAX", "ten gigs")
    run = run_cli("stats", "-r", KERN_SUM, report)
    assert (run.code, run.out) == (2, "") and run.err == \
        "error: ASYSSTATS_CACHE_MAX='ten gigs': expected a size in bytes, or with K, M, G or T (10G)\n"
    assert not own_cache.exists()
    with pytest.raises(AsysError):
        column_cache.cache_limit()
    assert run_cli("stats", "-r", KERN_SUM, "--no-cache", report).code == 0  # no cache, no cap


def test_the_readme_tells_how_to_use_the_cache_and_a_virtual_environment():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for text in ("python3 -m venv .venv", "mkdir -p out", "asys cache --clear", "ASYSSTATS_CACHE_MAX",
                 "~/.cache/asysstats", ".pt.trace.json", "docs/kineto.md"):
        assert text in readme, text
