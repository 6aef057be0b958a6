"""``asys compare`` end to end on two generated sample reports: console summary, files,
overwrite protection, time filters and the CI exit status."""

from __future__ import annotations

import os

import pytest
from test_compare_rules import corpus_pairs

from asysstats.cli import compare
from asysstats.cli.compare import DEFAULT_COMPARE
from asysstats.synth.writer import ReportWriter

from conftest import fingerprint, run_cli

WRITTEN = ("ppu_operator_type_summary_compare", "ppu_time_util_compare", "ppu_operator_summary_compare",
           "ppu_operator_kernel_breakdown_compare", "pccl_desync_summary_compare", "ppu_kernel_summary_compare")


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    folder = tmp_path_factory.mktemp("samples")
    paths = folder / "a.asysrep", folder / "b.asysrep"
    for seed, path in enumerate(paths, start=1):
        assert run_cli("sample", path, "--seed", seed).code == 0
    return paths


@pytest.fixture
def in_tmp(tmp_path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(cwd)


def test_summary_and_files_with_default_names(samples, in_tmp):
    before = [fingerprint(p) for p in samples]
    run = run_cli("compare", *samples)
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[:3] == [f"Base:   {samples[0]}", f"Target: {samples[1]}", "(ratios are target / base)"]
    assert "PPU time utilisation per device:" in lines
    devices = [line for line in lines if line.startswith("  device ")]
    assert [line.split(":")[0] for line in devices] == [f"  device {d}" for d in range(4)]
    assert any(line.startswith("Top regressions") for line in lines)
    assert any(line.startswith("Top improvements") for line in lines)
    for rule in WRITTEN:
        path = in_tmp / f"a_vs_b_{rule}.csv"
        assert f"  {path.name}" in lines
        stats = run_cli("stats", "-r", rule, "--format", "csv", *samples)
        assert path.read_text(encoding="utf-8") == stats.out
    assert [fingerprint(p) for p in samples] == before


def test_utilisation_line_values(samples, in_tmp):
    run = run_cli("compare", *samples)
    stats = run_cli("stats", "-r", "ppu_time_util_compare:column=In-Use (%)/Base Device ID", "--format", "csv",
                    *samples)
    by_device = {line.rsplit(",", 2)[1]: line.split(",")[1].strip('"').split(" / ")
                 for line in stats.out.splitlines()[1:]}
    line = next(x for x in run.out.splitlines() if x.startswith("  device 0:"))
    base, target = by_device["0"]
    assert line.startswith(f"  device 0: in-use {base}% -> {target}%, active ")


def test_overwrite_needs_force(samples, tmp_path):
    prefix = tmp_path / "cmp"
    assert run_cli("compare", "--output", prefix, *samples).code == 0
    target = tmp_path / "cmp_ppu_kernel_summary_compare.csv"
    target.write_text("old", encoding="utf-8")
    run = run_cli("compare", "--output", prefix, *samples)
    assert run.code == 2 and "exists; use -f true" in run.err and run.out == ""
    assert target.read_text(encoding="utf-8") == "old"
    run = run_cli("compare", "-f", "true", "--output", prefix, *samples)
    assert run.code == 0 and target.read_text(encoding="utf-8").startswith("Row#,Device Name,")


def test_output_errors_come_before_the_comparisons_run(samples, tmp_path, monkeypatch):
    monkeypatch.setattr(compare, "compare_reports", lambda *a: pytest.fail("compared"))
    run = run_cli("compare", "--output", tmp_path / "nowhere" / "p", *samples)
    assert run.code == 2 and run.err.endswith(f"directory {tmp_path}/nowhere does not exist\n")
    (tmp_path / "p_ppu_time_util_compare.csv").write_text("old")
    run = run_cli("compare", "--output", tmp_path / "p", *samples)
    assert run.code == 2 and run.err == f"error: {tmp_path}/p_ppu_time_util_compare.csv exists; use -f true to " \
                                        "overwrite it\n"


@pytest.mark.parametrize("order, code, verdict", [((0, 1), 0, "OK: "), ((1, 0), 1, "FAIL: ")])
def test_fail_if_slower_exit_status(samples, tmp_path, order, code, verdict):
    # the kernel total of a (seed 1) is larger than that of b (seed 2): b -> a is slower
    base, target = samples[order[0]], samples[order[1]]
    run = run_cli("compare", "-o", tmp_path / "p", "--fail-if-slower", "0.1", base, target)
    assert run.code == code, run.err
    last = run.out.splitlines()[-1]
    assert last.startswith(f"{verdict}total PPU kernel time (ppu_kernel_summary_compare) ")
    assert "--fail-if-slower 0.1%" in last
    run = run_cli("compare", "-o", tmp_path / "q", "--fail-if-slower", "50", base, target)
    assert run.code == 0 and run.out.splitlines()[-1].startswith("OK: ")


def test_fail_on_another_total(samples, tmp_path):
    run = run_cli("compare", "-o", tmp_path / "p", "--fail-if-slower", "0", "--fail-on", "ppu_time_util_compare",
                  *samples)
    assert run.code in (0, 1) and "total PPU active time (ppu_time_util_compare)" in run.out
    run = run_cli("compare", "-o", tmp_path / "q", "--fail-if-slower", "0", "--fail-on", "nonsense", *samples)
    assert run.code == 2 and "--fail-on" in run.err


def test_a_report_compared_with_itself(samples, tmp_path):
    run = run_cli("compare", "-o", tmp_path / "p", "--fail-if-slower", "0", samples[0], samples[0])
    assert run.code == 0
    assert "Top regressions (slower in target): none" in run.out
    assert "Top improvements (faster in target): none" in run.out
    devices = [line for line in run.out.splitlines() if line.startswith("  device ")]
    assert devices and all(line.endswith("(1.00x)") for line in devices)


def test_filter_hgtx_applies_to_both_reports(samples, tmp_path):
    window = "[prof_range]: step 0"
    run = run_cli("compare", "-o", tmp_path / "p", "--filter-hgtx", window, *samples)
    assert run.code == 0, run.err
    stats = run_cli("stats", "-r", "ppu_kernel_summary_compare", "--format", "csv", "--filter-hgtx", window, *samples)
    whole = run_cli("stats", "-r", "ppu_kernel_summary_compare", "--format", "csv", *samples)
    written = (tmp_path / "p_ppu_kernel_summary_compare.csv").read_text(encoding="utf-8")
    assert written == stats.out != whole.out


def test_bad_ppu_op_config_is_a_one_line_error(samples, tmp_path):
    run = run_cli("compare", "-o", tmp_path / "p", "--ppu-op-config", "no-equals-sign", *samples)
    assert run.code == 2 and run.err.count("\n") == 1 and "--ppu-op-config" in run.err


def test_absent_data_is_skipped_with_a_note(tmp_path):
    paths = []
    for name in ("x", "y"):
        writer = ReportWriter(tmp_path / f"{name}.asysrep")
        writer.add("memcpy", start=[0, 50], end=[10, 80], deviceId=0, bytes=8, copyKind=1, globalPid=1 << 24)
        writer.close()
        paths.append(writer.path)
    run = run_cli("compare", "-o", tmp_path / "p", *paths)
    assert run.code == 0, run.err
    assert "Skipped ppu_kernel_summary_compare: " in run.out and "does not contain HGGC kernel data" in run.out
    assert (tmp_path / "p_ppu_time_util_compare.csv").exists()
    assert not (tmp_path / "p_ppu_kernel_summary_compare.csv").exists()
    run = run_cli("compare", "-o", tmp_path / "q", "--fail-if-slower", "5", *paths)
    assert run.code == 2 and "ppu_kernel_summary_compare was not computed" in run.err
    assert not list(tmp_path.glob("q_*"))


def test_missing_report_is_an_error(samples, tmp_path):
    run = run_cli("compare", samples[0], tmp_path / "absent.asysrep")
    assert run.code == 2 and "absent.asysrep" in run.err


@pytest.mark.parametrize("path, other", corpus_pairs())
def test_corpus_pairs(path, other, tmp_path):
    before = fingerprint(path), fingerprint(other)
    run = run_cli("compare", "-o", tmp_path / "p", path, other)
    assert run.code == 0, run.err
    assert run.out.startswith(f"Base:   {path}\nTarget: {other}\n")
    written = {p.name for p in tmp_path.iterdir()}
    skipped = [line for line in run.out.splitlines() if line.startswith("Skipped ")]
    assert len(written) + len(skipped) == len(DEFAULT_COMPARE)
    assert all("does not contain" in line for line in skipped)
    assert (fingerprint(path), fingerprint(other)) == before
