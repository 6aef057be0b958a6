"""Fuzzing the option parsers: any string gives a result or a one-line error (exit 0 or 2).

A longer run: ASYS_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz_options.py
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asysstats.cli.arguments import parse_rule_args
from asysstats.core.errors import AsysError
from asysstats.rulebook import REGISTRY

from conftest import run_cli

EXAMPLES = int(os.environ.get("ASYS_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",))
pieces = st.sampled_from([":", ",", "=", "/", "\\", "(", ")", "[", "*", "+", "?", "@", "rows", "base", "device",
                          "0", "-1", "99999999999999999999", " ", "hggc_ppu_kern_sum", "column", "Name", "%", "."])
noise = st.lists(st.one_of(pieces, st.text(ALPHABET, max_size=4)), max_size=12).map("".join)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from asysstats.synth.writer import ReportWriter

    writer = ReportWriter(tmp_path_factory.mktemp("fuzz") / "r.asysrep")
    name = writer.string("k")
    writer.add("kernels", start=[0, 5], end=[3, 9], deviceId=[0, 1], demangledName=name)
    writer.add("runtime", start=[0], end=[1], globalTid=[1 << 24 | 1], nameId=name, correlationId=[1])
    writer.add("hgtx", start=[0], end=[10], eventType=[59], globalTid=[1 << 24 | 1], text=["r"])
    writer.close()
    return writer.path


def assert_clean(run):
    assert run.code in (0, 2), (run.code, run.err)
    assert "Traceback" not in run.err and "internal error" not in run.err, run.err
    if run.code == 2:
        assert run.err.count("\n") == 1, run.err


@FUZZ
@given(noise)
def test_rule_spec_parser(text):
    try:
        requests = parse_rule_args([text])
    except AsysError:  # the only exception a bad selection may raise
        return
    assert all(r.name for r in requests)


@FUZZ
@given(rule=st.sampled_from([r.name for r in REGISTRY if r.reports == 1]), options=noise)
def test_rule_options_through_the_cli(report, rule, options):
    command = {r.name: r.command for r in REGISTRY}[rule]
    assert_clean(run_cli(command, "-r", f"{rule}:{options}", "--format", "csv", report))


@FUZZ
@given(option=st.sampled_from(["--filter-time", "--filter-hgtx", "--kernel-group-config", "--callstack-group-config",
                               "--ppu-op-config", "--format", "--output"]), value=noise)
def test_command_options(report, option, value, tmp_path_factory):
    rule = {"--kernel-group-config": "hggc_ppu_kern_category_sum", "--callstack-group-config": "device_memory_usage_summary",
            "--ppu-op-config": "ppu_op_sum"}.get(option, "hggc_ppu_kern_sum")
    if rule not in REGISTRY:
        rule = "hggc_ppu_kern_sum"
    if option == "--output":  # files only inside a temporary folder; never run fuzzed shell commands
        value = "%" if value.startswith("@") else str(tmp_path_factory.mktemp("out") / value.replace("\0", "").replace("/", "_"))
    assert_clean(run_cli("stats", "-r", rule, option, value, "-f", "true", report))
