"""Breakdown comparisons on the operator fixture of test_compare_operators: rows match layer
by layer; an unmatched kernel still shows the other side's framework and library operators."""

from __future__ import annotations

import json

import pytest
from test_compare_operators import A64, A128, ADD_SHOWN, C64, GPU, PPU, RELU_SHOWN, op_paths, sample  # noqa: F401

from conftest import run_cli

R1 = R7 = RELU_SHOWN  # the framework operators without their per-run ids
SIDE = ["Framework OP", "Framework Time (%)", "Framework Avg (ns)", "Framework Instances", "Library OP",
        "Library Time (%)", "Library Avg (ns)", "Library Instances"]
KERNEL = ["Kernel", "Kernel Time (%)", "Kernel Avg (ns)", "Kernel Instances"]
UTILS = ["Compute Util (%)", "HBM Load Util (%)", "HBM Store Util (%)"]


def header(columns: list[str]) -> str:
    return ",".join(["Row#", "Device Name", "OP Type"] + [f"Base {c}" for c in columns]
                    + [f"Target {c}" for c in columns] + ["Avg Ratio"]) + ","


def csv(rule: str, *args) -> list[str]:
    run = run_cli("stats", "-r", rule, "--format", "csv", *args)
    assert run.code == 0, run.err
    return run.out.splitlines()


DASHES = ",".join(['"-"'] * 4)


def test_kernel_breakdown_compare_golden(op_paths):
    # base Total Time 290: Native GEMM framework group (3 library instances: 2 x GEMM64, GEMM128) 240,
    # relu 50; target 260: Native GEMM (GEMM64) 150, relu 100, add 10. Only k_relu runs on both.
    both = f'"{PPU} / {GPU}"'
    base_gemm = '"GEMM","Native",82.8,80,3'
    target_gemm = '"Native",57.7,150,1'
    assert csv("ppu_operator_kernel_breakdown_compare:all-columns", *op_paths) == [  # the column list (issue 27)
        header(SIDE + KERNEL),
        f'1,{both},{base_gemm},"{A64}",69.0,100,2,"k_ppu_a",69.0,100,2,{target_gemm},"{C64}",57.7,150,1,{DASHES},"-",',
        f'2,{both},{base_gemm},"{A64}",69.0,100,2,{DASHES},{target_gemm},"{C64}",57.7,150,1,"k_nv_a",57.7,150,1,"-",',
        f'3,{both},{base_gemm},"{A128}",13.8,40,1,"k_ppu_c",13.8,40,1,{target_gemm},{DASHES},{DASHES},"-",',
        f'4,{both},"PyTorch","{R1}",17.2,50,1,"Native",17.2,50,1,"k_relu",17.2,50,1,'
        f'"{R7}",38.5,100,1,"Native",38.5,100,1,"k_relu",38.5,100,1,2.0,',
        f'5,"- / {GPU}","PyTorch",{DASHES},{DASHES},{DASHES},'
        f'"{ADD_SHOWN}",3.8,10,1,"Native",3.8,10,1,"k_nv_c",3.8,10,1,"-",',
    ]


def test_breakdown_compare_golden(op_paths):
    columns = "/".join(["Device Name", "OP Type"] + [f"{s} {c}" for s in ("Base", "Target") for c in SIDE]
                       + ["Avg Ratio"])
    both = f'"{PPU} / {GPU}"'
    assert csv(f"ppu_operator_breakdown_compare:column={columns}", *op_paths)[1:] == [
        f'1,{both},"GEMM","Native",82.8,80,3,"{A64}",69.0,100,2,"Native",57.7,150,1,"{C64}",57.7,150,1,1.5,',
        f'2,{both},"GEMM","Native",82.8,80,3,"{A128}",13.8,40,1,"Native",57.7,150,1,{DASHES},"-",',
        f'3,{both},"PyTorch","{R1}",17.2,50,1,"Native",17.2,50,1,"{R7}",38.5,100,1,"Native",38.5,100,1,2.0,',
        f'4,"- / {GPU}","PyTorch",{DASHES},{DASHES},"{ADD_SHOWN}",3.8,10,1,"Native",3.8,10,1,"-",',
    ]
    assert csv("ppu_operator_breakdown_compare:all-columns", *op_paths)[0] == header(SIDE + UTILS)
    example = [c for c in SIDE + UTILS if c not in ("Framework Avg (ns)", "Framework Instances")]  # the reference's
    assert csv("ppu_operator_breakdown_compare", *op_paths)[0] == header(example)


def test_breakdown_utilisations_are_those_of_each_report(op_paths):
    rows = json.loads(run_cli("stats", "-r", "ppu_operator_breakdown_compare", "--format", "json", *op_paths).out)
    for prefix, path in zip(("Base", "Target"), op_paths):
        single = json.loads(run_cli("stats", "-r", "ppu_op_breakdown", "--format", "json", path).out)
        by_library = {r["Library OP"]: [r[u] for u in UTILS] for r in single}
        for row in rows:
            if row[f"{prefix} Library OP"] is not None:
                assert [row[f"{prefix} {u}"] for u in UTILS] == by_library[row[f"{prefix} Library OP"]]
    assert rows[0]["Base Compute Util (%)"] > 0 and rows[0]["Target Compute Util (%)"] > 0


@pytest.mark.parametrize("options, kernels", [
    ("matched-only", [("k_relu", "k_relu")]),
    ("top=1", [("k_ppu_a", None), (None, "k_nv_a")]),  # the largest kernel of each report
    ("top=2", [("k_ppu_a", None), (None, "k_nv_a"), ("k_relu", "k_relu")]),
    ("op=PyTorch", [("k_relu", "k_relu"), (None, "k_nv_c")]),
])
def test_kernel_breakdown_compare_options(op_paths, options, kernels):
    run = run_cli("stats", "-r", f"ppu_operator_kernel_breakdown_compare:{options}", "--format", "json", *op_paths)
    assert run.code == 0, run.err
    assert [(r["Base Kernel"], r["Target Kernel"]) for r in json.loads(run.out)] == kernels


@pytest.mark.parametrize("rule", ["ppu_operator_kernel_breakdown_compare", "ppu_operator_breakdown_compare"])
def test_a_report_compared_with_itself(sample, rule):  # noqa: F811
    rows = json.loads(run_cli("stats", "-r", rule, "--format", "json", sample, sample).out)
    assert rows
    for row in rows:
        assert row["Avg Ratio"] == 1.0 or row["Avg Ratio"] is None and row["Base Kernel"] is None  # Idle-only rows
        for name, value in row.items():
            if name.startswith("Base "):
                assert value == row["Target " + name[5:]], name


@pytest.mark.parametrize("order, kernels", [
    # framework GEMM 3 instances, add and relu 1 (by name); libraries GEMM64 2, GEMM128 1; kernels 2, 1
    ("instances", ["k_ppu_a", "k_nv_a", "k_ppu_c", "k_nv_c", "k_relu"]),
    # framework GEMM 150 ns, relu 100, add 10; libraries GEMM64 150, GEMM128 40; kernels k_nv_a 150, k_ppu_a 100
    ("avg", ["k_nv_a", "k_ppu_a", "k_ppu_c", "k_relu", "k_nv_c"]),
    # names ascending at every level: Native < aten::add < aten::relu; ACBLAS...128 < ACBLAS...64; k_nv < k_ppu
    ("name", ["k_ppu_c", "k_nv_a", "k_ppu_a", "k_nv_c", "k_relu"]),
])
def test_kernel_breakdown_compare_order_by(op_paths, order, kernels):
    run = run_cli("stats", "-r", f"ppu_operator_kernel_breakdown_compare:order-by={order}", "--format", "json",
                  *op_paths)
    assert [r["Base Kernel"] or r["Target Kernel"] for r in json.loads(run.out)] == kernels
