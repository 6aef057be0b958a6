"""Help generated from the declarations: --help-reports/--help-rules, --help-report, --help-formats."""

from __future__ import annotations

from asysstats.rulebook import REGISTRY

from conftest import run_cli


def test_help_reports_lists_every_stats_rule():
    run = run_cli("stats", "--help-reports")
    assert run.code == 0
    assert all(r.name in run.out for r in REGISTRY if r.command == "stats")
    assert "ppu_gaps" not in run.out


def test_analyze_help_rules_lists_the_expert_rules():
    run = run_cli("analyze", "--help-rules")
    assert run.code == 0 and "ppu_gaps" in run.out and "ppu_time_util" in run.out and "hggc_api_sum" not in run.out


def test_help_report_shows_options_and_columns():
    run = run_cli("stats", "--help-report", "hggc_ppu_kern_sum")
    assert run.code == 0 and "rows=<n>" in run.out and "StdDev (ns) :" in run.out


def test_help_formats():
    run = run_cli("stats", "--help-formats", "ALL")
    assert run.code == 0 and all(name in run.out for name in ("column", "csv", "json", "xlsx", "ratio=.N%"))


def test_help_report_of_unknown_rule_is_an_error():
    run = run_cli("stats", "--help-report", "nope")
    assert run.code == 2 and "unknown rule 'nope'" in run.err


def test_compare_reads_device_specs(tmp_path):
    spec = tmp_path / "devices.json"
    spec.write_text("not json")
    run = run_cli("compare", "--device-spec", spec, tmp_path / "a.asysrep", tmp_path / "b.asysrep")
    assert run.code == 2 and run.err.count("\n") == 1 and "--device-spec" in run.err


def test_help_reports_lists_each_family_under_the_tool_it_mirrors():
    lines = run_cli("stats", "--help-reports").out.splitlines()
    asys = lines.index("The asys reports (the asys reference's names, columns and formats):")
    nsys = lines.index("The nsys stats reports (NVIDIA's names, columns and formats, as `nsys stats` prints them):")
    assert asys < lines.index("    hggc_ppu_kern_sum                      HGGC PPU Kernel Summary") < nsys
    assert nsys < next(i for i, line in enumerate(lines) if line.startswith("    cuda_gpu_kern_sum "))
