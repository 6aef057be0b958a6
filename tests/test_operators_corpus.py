"""Every operator rule on every real Nsight export and on the sample report: no traceback,
the report untouched; GEMM kernels of the PyTorch programs are classified."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import NSYS_CORPUS, corpus_params, fingerprint, run_cli

RULES = ("ppu_op_sum", "moe_op_sum", "ppu_op_trace", "ppu_op_type_sum", "ppu_op_kernel_breakdown", "ppu_op_breakdown",
         "ppu_op_unit_test", "ppu_op_roofline")
SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.asysrep"


@pytest.mark.parametrize("path", corpus_params())
def test_operator_rules_on_the_corpus(path):
    before = fingerprint(path)
    for rule in RULES:
        run = run_cli("stats", "-r", rule, "--format", "csv", path)
        assert "Traceback" not in run.err and "internal error" not in run.err, (rule, run.err)
        assert run.code == 0 or (run.code == 2 and "does not contain" in run.err), (rule, run.err)
    assert fingerprint(path) == before


@pytest.mark.parametrize("name", ["dlprof_relu", "fuser_hopper_r1", "fuser_nvtx_2025"])
def test_pytorch_programs_have_gemm_operators(name):
    path = NSYS_CORPUS / f"{name}.sqlite"
    if not path.exists():
        pytest.skip("corpus absent")
    lines = run_cli("stats", "-r", "ppu_op_type_sum", "--format", "csv", path).out.splitlines()
    assert any(line.split(",")[1] == '"GEMM"' for line in lines[1:])


def test_dlprof_pytorch_ranges_frame_the_gemm_kernels():
    path = NSYS_CORPUS / "dlprof_relu.sqlite"
    if not path.exists():
        pytest.skip("corpus absent")
    lines = run_cli("stats", "-r", "ppu_op_breakdown", "--format", "csv", path).out.splitlines()
    # emit_nvtx ranges (aten::conv2d, aten::linear) are framework operators above GEMM kernels
    assert any('"PyTorch","aten::conv2d, seq = 0"' in line for line in lines)


@pytest.mark.skipif(not SAMPLE.exists(), reason="no sample report")
def test_sample_report_has_every_operator_type():
    lines = run_cli("stats", "-r", "ppu_op_type_sum", "--format", "csv", SAMPLE).out.splitlines()
    assert sorted(line.split(",")[1].strip('"') for line in lines[1:]) == [
        "FlashAttention", "GEMM", "MoE", "PCCL", "PyTorch", "Summary"]
    moe = run_cli("stats", "-r", "moe_op_sum", "--format", "csv", SAMPLE).out.splitlines()
    assert len(moe) == 3 and all('"MoE:M_' in line for line in moe[1:])
