"""ppu_op_sum and ppu_op_type_sum on a small mixed report, with merging, custom types and filters.

    thread 100 (device 0 unless noted):
      aten::mm [100,200) > ACBLAS ldc 64  [110,190)  launch@120 -> gemm_a        [1000,1400)
      aten::mm [300,400) > ACBLAS ldc 128 [310,390)  launch@320 -> gemm_a        [2000,2600)
      aten::add [500,600)                            launch@510 -> add_kernel    [3000,3100)
                                                     launch@520 -> add_kernel    [3300,3400)
      NCCL AllReduce r:0 [700,800)                   launch@710 -> ncclDevKernel [4000,4500)
    thread 101: NCCL AllReduce r:1 [700,800)         launch@710 -> ncclDevKernel [4100,4500) device 1
      no range:                                      launch@900 -> cutlass_gemm_kernel [5000,5300)
                                                     launch@950 -> relu_kernel   [5400,5450)

The acBLAS ranges claim their kernels (library beats framework); the aten::mm ranges are
left with nothing. ACBLAS operators differing only in ldc merge; so do the two ranks of the
AllReduce. aten::add lasts 400 ns with 200 ns active. The cutlass kernel is a GEMM by name;
the relu kernel belongs to no operator (``others``).
"""

from __future__ import annotations

import pytest
from test_operators_build import Build, csv

from conftest import run_cli

GEMM = "GemmEx,n,n,64,64,64,64,64,{ldc},1,0,1,DEFAULT,BF16,ALGO,32F,EPILOGUE_DEFAULT"
ACBLAS = "ACBLAS:" + GEMM.format(ldc=64)
ADD = "aten::add, seq = 3, op_id = 30, sizes = [[64], [64]]"
REDUCE = "AllReduce, p:0, c:1024, d:9, r:{r}, w:2, h:abc, t:1, b:{b}"
REDUCE0 = REDUCE.format(r=0, b="0x1/0x2")


@pytest.fixture
def mixed(writer):
    b = Build(writer)
    b.domain("acblas")
    b.domain("NCCL")
    b.device(0, "PPU-ZW810E")
    b.device(1, "PPU-ZW810E")
    b.range("aten::mm, seq = 1, op_id = 10, sizes = [[64, 64], [64, 64]], input_op_ids = [(9,0)]", 100, 200)
    b.range("[ACBLAS] --format=" + GEMM.format(ldc=64), 110, 190, "acblas")
    b.range("aten::mm, seq = 2, op_id = 20, sizes = [[64, 64], [64, 64]], input_op_ids = [(19,0)]", 300, 400)
    b.range("[ACBLAS] --format=" + GEMM.format(ldc=128), 310, 390, "acblas")
    b.range(ADD, 500, 600)
    b.range(REDUCE0, 700, 800, "NCCL")
    b.range(REDUCE.format(r=1, b="0x3/0x4"), 700, 800, "NCCL", tid=101)
    b.kernel("gemm_a", 1000, 1400, launch=120)
    b.kernel("gemm_a", 2000, 2600, launch=320)
    b.kernel("add_kernel", 3000, 3100, launch=510)
    b.kernel("add_kernel", 3300, 3400, launch=520)
    b.kernel("ncclDevKernel_AllReduce_Sum_bf16", 4000, 4500, launch=710)
    b.kernel("ncclDevKernel_AllReduce_Sum_bf16", 4100, 4500, launch=710, tid=101, device=1)
    b.kernel("cutlass_gemm_kernel", 5000, 5300, launch=900)
    b.kernel("relu_kernel", 5400, 5450, launch=950)
    return b.close()


SUM_HEADER = ("Row#,OP Type,Total Time (ns),Percent (%),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),"
              "PPU Active Time (ns),Active Percent (%),StdDev (ns),Compute Util (%),HBM Load Util (%),"
              "HBM Store Util (%),OP Name,")


def test_op_sum(mixed):
    # ACBLAS: 2 x 2*64^3 FLOPs over 1000 ns at 139 TFLOP/s = 0.75 %; 2 x 16384 B read and
    # 2 x 8192 B written at 2.7648 TB/s = 1.19 % and 0.59 %
    assert csv(mixed, "ppu_op_sum") == [
        SUM_HEADER,
        f'1,"GEMM",1000,38.5,2,500,500,400,600,1000,100.0,100,0.8,1.2,0.6,"{ACBLAS}",',
        f'2,"PCCL",900,34.6,2,450,450,400,500,900,100.0,50,"-","-","-","{REDUCE0}",',
        # aten::add of two [64] (bf16 assumed): 64 FLOPs and 384 B over 400 ns: 0.0 % of the peaks
        f'3,"PyTorch",400,15.4,1,400,400,400,400,200,50.0,0,0.0,0.0,0.0,"{ADD}",',
        '4,"GEMM",300,11.5,1,300,300,300,300,300,100.0,0,"-","-","-","cutlass_gemm_kernel",',
    ]


def test_type_sum_has_a_summary_row(mixed):
    assert csv(mixed, "ppu_op_type_sum") == [
        "Row#,OP Type,Percent (%),Avg (ns),Total Time (ns),Instances,PPU Active Time (ns),Active Percent (%),"
        "Top OP Percent (%),Top OP Name,",
        f'1,"Summary",100.0,433,2600,6,2400,92.3,76.9,"{ACBLAS}",',
        f'2,"GEMM",50.0,433,1300,3,1300,100.0,76.9,"{ACBLAS}",',
        f'3,"PCCL",34.6,450,900,2,900,100.0,100.0,"{REDUCE0}",',
        f'4,"PyTorch",15.4,400,400,1,200,50.0,100.0,"{ADD}",',
    ]


def names_and_totals(lines: list[str]) -> list[tuple[str, str]]:
    return [(line.split(",")[1].strip('"'), line.split(",")[2]) for line in lines[1:]]


def test_no_merge_options_split_groups(mixed):
    assert names_and_totals(csv(mixed, "ppu_op_sum:no-merge-gemm-parameter:no-merge-communication-parameter")) == [
        ("GEMM", "600"), ("PCCL", "500"), ("GEMM", "400"), ("PCCL", "400"), ("PyTorch", "400"), ("GEMM", "300")]


def test_others_and_op_filter(mixed):
    lines = csv(mixed, "ppu_op_sum:op=others/gemm/PCCL/PyTorch")
    assert lines[-1] == '5,"others",50,1.9,1,50,50,50,50,50,100.0,0,"-","-","-","relu_kernel",'
    # only PyTorch: op= filters, it does not re-parse: the GEMM kernels stay with their acBLAS ranges (issue 27)
    assert names_and_totals(csv(mixed, "ppu_op_sum:op=pytorch")) == [("PyTorch", "400")]
    run = run_cli("stats", "-r", "ppu_op_sum:op=Bogus", mixed)
    assert run.code == 2 and "option 'op': unknown operator type 'Bogus'" in run.err and run.err.count("\n") == 1


def test_range_include_exclude_and_device(mixed):
    assert names_and_totals(csv(mixed, r"ppu_op_sum:range-include=aten\:\:add")) == [("PyTorch", "400")]
    assert [t for t, _ in names_and_totals(csv(mixed, "ppu_op_sum:range-exclude=NCCL"))] == ["GEMM", "PyTorch", "GEMM"]
    assert names_and_totals(csv(mixed, "ppu_op_sum:device=1")) == [("PCCL", "400")]


def test_custom_operator_types(mixed):
    lines = csv(mixed, "ppu_op_sum", "--ppu-op-config", "GEMM=kernel:relu", "--ppu-op-config", "Elementwise=hgtx:add")
    assert '"relu_kernel",' in lines[-1] and lines[-1].startswith('5,"GEMM",50,')
    assert lines[3].startswith('3,"Elementwise",400,') and lines[3].endswith(f'"{ADD}",')
    # the reference's example names the built-in type in another case: it is PyTorch, claiming as PyTorch does
    assert csv(mixed, "ppu_op_type_sum", "--ppu-op-config", "Pytorch=hgtx:aten") == csv(mixed, "ppu_op_type_sum")
    # an hgtx rule of a type of its own beats the library ranges inside it
    lines = csv(mixed, "ppu_op_type_sum", "--ppu-op-config", "Matmul=hgtx:aten::mm")
    assert [line.split(",")[1] for line in lines[1:]] == ['"Summary"', '"Matmul"', '"PCCL"', '"PyTorch"', '"GEMM"']


@pytest.mark.parametrize("config, message", [
    ("GEMM=foo:bar", "expected <Type>=kernel:<regex> or <Type>=hgtx:<regex>"),
    ("GEMM=kernel:(", "invalid regular expression"),
    ("GEMM=hgtx:", "the regular expression is empty"),
])
def test_bad_custom_configs_are_one_line_errors(mixed, config, message):
    run = run_cli("stats", "-r", "ppu_op_sum", "--ppu-op-config", config, mixed)
    assert run.code == 2 and message in run.err and "--ppu-op-config" in run.err and run.err.count("\n") == 1


def test_order_by(mixed):
    assert [line.split(",")[4] for line in csv(mixed, "ppu_op_sum:order-by=instances")[1:]] == ["2", "2", "1", "1"]
    assert [t for t, _ in names_and_totals(csv(mixed, "ppu_op_sum:order-by=type"))] == ["GEMM", "GEMM", "PCCL",
                                                                                       "PyTorch"]
    assert csv(mixed, "ppu_op_sum:order-by=compute")[1].endswith(f'"{ACBLAS}",')


def test_empty_filter_gives_header_only(mixed):
    assert csv(mixed, "ppu_op_type_sum:range-include=nothing-matches") == [csv(mixed, "ppu_op_type_sum")[0]]
