"""The public API (docs/api.md): its examples, its tables against the command line's, its errors."""

from __future__ import annotations

import doctest
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pytest

import asysstats
from asysstats.api.reports import Report
from asysstats.core.result import NSYS_STATS
from asysstats.rulebook import find_rule

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "sample.asysrep"
SINGLE = [r for r in asysstats.rules() if r.reports == 1]


def test_the_examples_of_api_md_run(monkeypatch):
    monkeypatch.chdir(ROOT)
    found = doctest.testfile(str(ROOT / "docs" / "api.md"), module_relative=False,
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert found.failed == 0 and found.attempted >= 30


@pytest.fixture(scope="module")
def sample():
    with asysstats.open(SAMPLE) as report:
        yield report


@pytest.mark.parametrize("rule", SINGLE, ids=lambda r: r.name)
def test_a_table_holds_the_values_the_cli_prints_as_json(rule, sample):
    """Every cell equals the JSON cell of ``asys stats --format json``: integers alike,
    floats alike once rounded as printed, text resolved, null for '-'."""
    run = run_cli(rule.command, "-r", rule.name, "--format", "json", SAMPLE)
    assert run.code == 0, run.err
    if run.err.startswith("SKIPPED: "):  # an NVIDIA name over tables only Nsight exports hold (D37)
        assert find_rule(rule.name, rule.command).mirrors == NSYS_STATS and run.out == ""
        with pytest.raises(asysstats.MissingData):
            sample.stats(rule.name) if rule.command == "stats" else sample.analyze(rule.name)
        return
    printed = json.loads(run.out)
    table = sample.stats(rule.name) if rule.command == "stats" else sample.analyze(rule.name)
    declared = find_rule(rule.name, rule.command)
    columns = declared.select_columns(None, declared.options())  # without the optional columns their flags leave off
    assert table.column_names == [c.name for c in columns]
    assert table.schema.metadata[b"asysstats.rule"] == rule.name.encode()
    assert table.num_rows == len(printed)
    for column in columns:
        got = table[column.name].to_pylist()
        want = [row[column.name] for row in printed]
        if column.kind in ("percent", "ratio", "decimal", "figure"):
            places = 3 if column.kind == "figure" else 1
            got = [None if v is None or math.isnan(v) else round(v + 0.0, places) for v in got]
            want = [None if v is None else round(v, places) for v in want]
            assert all(g == w or abs(g - w) <= 10 ** -places + 1e-12 * abs(w) for g, w in zip(got, want)), \
                column.name  # half-up vs repr: one unit of the last place apart, less float error
        else:
            assert got == want, column.name


def test_comparison_cells_are_structs_of_both_sides():
    tables = asysstats.compare(SAMPLE, SAMPLE, rules=["ppu_kernel_summary_compare"], top=2)
    table = tables["ppu_kernel_summary_compare"]
    assert pa.types.is_struct(table.schema.field("Total (ns)").type)
    first = table.to_pylist()[0]
    assert first["Total (ns)"] == {"base": 36210966, "target": 36210966} and first["Total Ratio"] == 1.0


@pytest.mark.parametrize("options,option", [
    ({"rows": "ten"}, "rows=ten"), ({"rows": 0}, "rows=0"), ({"device": [-1]}, "device=-1"),
    ({"column": ["Nope"]}, "column=Nope"), ({"base": "maybe"}, "base=maybe"), ({"nope": 1}, "nope=1"),
])
def test_a_bad_option_raises_the_message_the_cli_prints(sample, options, option):
    run = run_cli("stats", "-r", f"hggc_ppu_kern_sum:{option}", SAMPLE)
    assert run.code == 2
    with pytest.raises(asysstats.AsysError) as raised:
        sample.stats("hggc_ppu_kern_sum", **options)
    assert f"error: {raised.value}\n" == run.err


def test_a_regex_option_takes_python_strings(sample):
    every = sample.stats("hgtx_kern_sum")
    chosen = sample.stats("hgtx_kern_sum", range_include=["^aten::", "^model"], range_exclude=r"layers\.3")
    names = set(chosen["HGTX Range"].to_pylist())
    assert 0 < chosen.num_rows < every.num_rows
    assert all(n.startswith(("aten::", "model")) and "layers.3" not in n for n in names)
    assert any("layers.3" in n for n in every["HGTX Range"].to_pylist() if n)
    with pytest.raises(asysstats.AsysError, match="option 'range-include': invalid regular expression"):
        sample.stats("hgtx_kern_sum", range_include=["("])


def test_settings_of_open_are_those_of_the_cli(tmp_path):
    """The capture starts at 1 s; its kernels run from 29.6 to 55.0 ms after."""
    run = run_cli("stats", "-r", "hggc_ppu_kern_sum", "--format", "json", "--filter-time", "40000000/50000000", SAMPLE)
    whole = asysstats.open(SAMPLE).stats("hggc_ppu_kern_sum")
    with asysstats.open(SAMPLE, filter_time=(40_000_000, 50_000_000), kernel_groups=[("gemm", "gemm")]) as r:
        window = r.stats("hggc_ppu_kern_sum")
        assert window["Instances"].to_pylist() == [row["Instances"] for row in json.loads(run.out)]
        assert 0 < pa.compute.sum(window["Instances"]).as_py() < pa.compute.sum(whole["Instances"]).as_py()
        assert r.stats("hggc_ppu_kern_category_sum")["Category"].to_pylist() == ["gemm", "other"]
    with pytest.raises(asysstats.AsysError, match="filter_time"):
        asysstats.open(SAMPLE, filter_time=(5, 1))
    with pytest.raises(asysstats.AsysError, match="merge=True"):
        asysstats.open([SAMPLE, SAMPLE])


def test_a_missing_table_raises_missing_data(sample):
    with pytest.raises(asysstats.MissingData):
        asysstats.open(ROOT / "tests/fixtures/real/kineto/tracelens_h100_bert.json.gz").stats("osrt_sum")
    with pytest.raises(asysstats.AsysError, match="compares two reports"):
        sample.stats("ppu_kernel_summary_compare")


def test_the_rules_listed_are_those_the_cli_lists():
    listed = run_cli("stats", "--help-reports").out.split("\n")[2:]
    named = [line.split()[0] for line in listed if line.startswith("    ")]  # the family headings aside
    assert [r.name for r in asysstats.rules("stats")] == named
    for info in asysstats.rules():
        assert info.options[-1].name == "column" and info.columns and info.help and info.reads


def test_the_cli_runs_its_rules_through_the_api(monkeypatch, tmp_path):
    ran = []
    real = Report.run

    def recorded(self, rule, options, inputs=None):
        ran.append(rule.name)
        return real(self, rule, options, inputs)

    monkeypatch.setattr(Report, "run", recorded)
    assert run_cli("stats", "-r", "hggc_ppu_kern_sum,hggc_api_sum", "--format", "csv", SAMPLE).code == 0
    assert run_cli("analyze", "-r", "ppu_gaps", SAMPLE).code == 0
    assert ran == ["hggc_ppu_kern_sum", "hggc_api_sum", "ppu_gaps"]


def test_the_api_imports_no_pandas():
    code = ("import sys, asysstats\nr = asysstats.open(sys.argv[1])\nt = r.stats('hggc_ppu_kern_sum')\n"
            "c = asysstats.compare(sys.argv[1], sys.argv[1], rules=['ppu_kernel_summary_compare'])\n"
            "print(t.num_rows > 0, 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(SAMPLE)], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]


def test_no_rule_imports_pandas(tmp_path):
    """Every single-report rule on the bundled sample, cold (an empty cache), in one process: none imports
    pandas (pyarrow does on Python values given to ``pa.array`` or a compute function: 0.3-1.2 s a run)."""
    code = ("import sys, asysstats\nfrom asysstats.rulebook import REGISTRY\n"
            "from asysstats.core.errors import AsysError\nr = asysstats.open(sys.argv[1])\nran = 0\n"
            "for rule in (x for x in REGISTRY if x.reports == 1):\n"
            "    try:\n"
            "        (r.stats if rule.command == 'stats' else r.analyze)(rule.name)\n"
            "        ran += 1\n"
            "    except AsysError:\n"
            "        pass\n"
            "print(ran, 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(SAMPLE)], capture_output=True, text=True, check=True,
                          env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)))
    ran, pandas = done.stdout.split()
    assert int(ran) >= 50 and pandas == "False"
