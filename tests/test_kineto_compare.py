"""Comparing an NVIDIA and an AMD trace of the same model: operators match by type and shape
(the `aten::` operator around a vendor's GEMM or attention kernel), not by kernel name."""

from __future__ import annotations

import csv
import io

import pytest

from conftest import CORPUS, run_cli

H100 = CORPUS / "kineto" / "tracelens_h100_bert.json.gz"
MI300 = CORPUS / "kineto" / "tracelens_mi300_bert.json.gz"
pytestmark = pytest.mark.skipif(not (H100.exists() and MI300.exists()), reason="Kineto corpus absent")


def rows(run):
    assert run.code == 0, run.err
    return list(csv.DictReader(io.StringIO(run.out)))


def test_every_operator_matches_across_vendors():
    table = rows(run_cli("stats", "-r", "ppu_operator_summary_compare", "--format", "csv", H100, MI300))
    assert len(table) == 16
    assert all(" / -" not in r["Percent (%)"] and not r["Percent (%)"].startswith("- /") for r in table)
    assert all(r["Base OP Name"] == r["Target OP Name"] for r in table)
    gemm = [r for r in table if r["OP Type"] == "GEMM"]
    bf16 = "types = ['c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16']"
    assert sorted(r["Base OP Name"] for r in gemm) == [
        f"aten::linear, sizes = [[1, 141, 2048], [512, 2048], [512]], {bf16}, "
        "strides = [[288768, 2048, 1], [2048, 1], [1]], concrete = ['', '', '']",
        f"aten::linear, sizes = [[1, 141, 512], [2048, 512], [2048]], {bf16}, "
        "strides = [[72192, 512, 1], [512, 1], [1]], concrete = ['', '', '']",
        f"aten::linear, sizes = [[1, 141, 512], [30522, 512], [30522]], {bf16}, "
        "strides = [[72192, 512, 1], [512, 1], [1]], concrete = ['', '', '']",
        f"aten::linear, sizes = [[1, 141, 512], [512, 512], [512]], {bf16}, "
        "strides = [[72192, 512, 1], [512, 1], [1]], concrete = ['', '', '']",
    ]
    assert gemm[0]["Device Name"] == "NVIDIA H100 80GB HBM3 / AMD Instinct MI300X VF"
    attention = [r for r in table if r["OP Type"] == "FlashAttention"]
    assert [r["Instances"] for r in attention] == ["4 / 4"]


def test_asys_compare_end_to_end(tmp_path):
    run = run_cli("compare", "-o", tmp_path / "bert", H100, MI300)
    assert run.code == 0, run.err
    table = list(csv.DictReader((tmp_path / "bert_ppu_operator_summary_compare.csv").open()))
    assert len(table) == 16 and all(r["Base OP Name"] == r["Target OP Name"] for r in table)
