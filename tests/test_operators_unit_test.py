"""ppu_op_unit_test: the generated script compiles, runs under ``python`` (a clean skip without
PyTorch), honours its options, and lists the operators it could not generate."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from test_operators_build import Build

from conftest import run_cli

HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture
def script(writer, tmp_path):
    b = Build(writer)
    for name in ("acblas", "fmha", "moe", "NCCL"):
        b.domain(name)
    b.device(0, "PPU-ZW810E")
    b.range("[ACBLAS] --format=GemmEx,n,n,32,16,8,32,8,32,1,0,1,DEFAULT,BF16,ALGO,32F,EPILOGUE_DEFAULT", 10, 20, "acblas")
    b.range("[FMHA] --format=fa,Forward,data_type:bf16,batch_size:1,num_heads:4,num_heads_k:2,head_dim:16,"
            "head_dim_value:16,seqlen_q:8,seqlen_k:8,is_fixed_seqs:1,causal:1", 30, 40, "fmha")
    b.range("[MoE] --format=M_4_E_4_H_16_In_8_topk_2_topkids[0,1]_unique_2", 50, 60, "moe")
    b.range("aten::add, seq = 1, op_id = 2, sizes = [[4, 4], [4, 4], []], input_op_ids = []", 70, 80)
    b.range("AllReduce, p:0, c:16, d:9, r:0, w:2, h:ab, t:1, b:0x1/0x2", 90, 100, "NCCL")
    b.kernel("gemm_kernel", 1000, 1600, launch=15)
    b.kernel("flash_fwd_kernel", 2000, 2500, launch=35)
    b.kernel("moe_kernel", 3000, 3400, launch=55)
    b.kernel("add_kernel", 4000, 4300, launch=75)
    b.kernel("ncclDevKernel_AllReduce", 5000, 5200, launch=95)
    b.kernel("cutlass_gemm", 6000, 6100, launch=200)
    path = b.close()
    run = run_cli("stats", "-r", "ppu_op_unit_test", "--format", "py", "-o", tmp_path / "out", path)
    assert run.code == 0, run.err
    return tmp_path / "out_ppu_op_unit_test.py"


def python(path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=120)


def test_script_lists_tests_in_total_time_order(script):
    text = script.read_text()
    compile(text, str(script), "exec")
    listed = python(script, "--list")
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [
        "test_001_acblas_gemmex", "test_002_fmha_fa", "test_003_moe_m_4_e_4_h_16_in_8_topk_2_topkids",
        "test_004_aten_add"]
    assert "# operators without a unit test" in text
    assert "(5, 'PCCL', 'AllReduce, p:0, c:16, d:9, r:0, w:2, h:ab, t:1, b:0x1/0x2', 'no generator for PCCL operators')," \
        in text
    assert "#   6. [GEMM] cutlass_gemm -> not generated" in text
    assert python(script, "--list", "--top", "2").stdout.count("\n") == 2
    assert python(script, "--list", "--test", "test_004_aten_add").stdout.startswith("test_004_aten_add ")


def test_help_and_bad_options(script):
    helped = python(script, "--help")
    assert helped.returncode == 0 and "--warm-up" in helped.stdout and "--repeat" in helped.stdout
    bad = python(script, "--test", "no_such_test")
    assert bad.returncode == 2 and "unknown test(s): no_such_test" in bad.stderr


@pytest.mark.skipif(HAS_TORCH, reason="PyTorch is installed")
def test_without_pytorch_the_script_skips_cleanly(script):
    done = python(script, "--top", "3", "--warm-up", "5", "--repeat", "5")
    assert done.returncode == 0 and done.stdout.startswith("SKIP: PyTorch is not installed; 3 test(s) not run")


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_with_pytorch_the_tests_run(script):
    done = python(script, "--device", "cpu", "--repeat", "2")
    assert done.returncode == 0
    assert "test_001_acblas_gemmex: " in done.stdout and "us per run" in done.stdout


def test_other_formats_hold_one_line_per_row(script, tmp_path):
    report = script.parent / "report.asysrep"
    run = run_cli("stats", "-r", "ppu_op_unit_test", "--format", "csv", report)
    assert run.out.splitlines()[:2] == ["Row#,Script,", '1,"#!/usr/bin/env python3",']
    bad = run_cli("stats", "-r", "ppu_op_sum", "--format", "py", report)
    assert bad.code == 2 and "does not write a script" in bad.err
