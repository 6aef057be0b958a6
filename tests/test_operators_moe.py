"""moe_op_sum: MoE layers with their two grouped GEMMs (hand-checked utilisations).

    D_MoE [100, 900) (domain moe) holds a router acBLAS GEMM and the [MoE] range:
      ACBLAS [110,150) launch@120 -> gemm_router [t, t+10)
      [MoE]  [200, 800)
        launch@210 -> scatter_kernel 10 ns
        DeepGemm [300,350) launch@320 -> deep_gemm_kernel (GEMM1)
        launch@400 -> silu_kernel 5 ns
        DeepGemm [500,550) launch@520 -> deep_gemm_kernel (GEMM2)
        launch@600 -> gather_kernel 10 ns
    Two such layers (thread 100 at t = 1000, thread 101 at t = 2000): GEMM1 40 / 60 ns,
    GEMM2 20 / 30 ns, so the instances take 85 and 115 ns of kernel time.

M 8, topk 2 -> 16 rows; H 64, In 32, unique 3 experts, bf16 on a PPU-ZW810E:
GEMM1 2*16*64*64 FLOPs per layer, (16*64 + 3*64*64)*2 B read, 16*64*2 B written over
100 ns in all: 1.9 % / 19.3 % / 1.5 %; GEMM2 (half the FLOPs, (16*32 + 3*32*64)*2 B read,
16*64*2 B written) over 50 ns: 1.9 % / 19.3 % / 3.0 %.
"""

from __future__ import annotations

from test_operators_build import Build, csv

SHAPE = "M_8_E_4_H_64_In_32_topk_2"
HEADER = ("Row#,Total Time (ns),Percent (%),GEMM1 Total Time (ns),GEMM2 Total Time (ns),Instances,Avg (ns),Med (ns),"
          "Min (ns),Max (ns),StdDev (ns),GEMM1 Compute Util (%),GEMM2 Compute Util (%),GEMM1 HBM Load Util (%),"
          "GEMM1 HBM Store Util (%),GEMM2 HBM Load Util (%),GEMM2 HBM Store Util (%),OP Name,")


def layer(b: Build, tid: int, t: int, topkids: str, gemm1: int, gemm2: int) -> None:
    b.range(f"D_MoE,{SHAPE}", 100, 900, "moe", tid=tid)
    b.range("[ACBLAS] --format=GemmEx,n,n,4,8,64,64,64,4,1,0,1,DEFAULT,BF16,ALGO,32F,EPILOGUE_DEFAULT", 110, 150,
            "acblas", tid=tid)
    b.range(f"[MoE] --format={SHAPE}_topkids[{topkids}]_unique_3", 200, 800, "moe", tid=tid)
    group = "GroupedNoPad,data_type:bf16,groups:3,m:16,n:{n},k:{k},gpu:0"
    b.range("[DeepGemm] --format=" + group.format(n=64, k=64), 300, 350, "deepgemm", tid=tid)
    b.range("[DeepGemm] --format=" + group.format(n=64, k=32), 500, 550, "deepgemm", tid=tid)
    b.kernel("gemm_router", t, t + 10, launch=120, tid=tid)
    b.kernel("scatter_kernel", t + 20, t + 30, launch=210, tid=tid)
    b.kernel("deep_gemm_kernel", t + 40, t + 40 + gemm1, launch=320, tid=tid)
    b.kernel("silu_kernel", t + 100, t + 105, launch=400, tid=tid)
    b.kernel("deep_gemm_kernel", t + 110, t + 110 + gemm2, launch=520, tid=tid)
    b.kernel("gather_kernel", t + 150, t + 160, launch=600, tid=tid)


def build(writer):
    b = Build(writer)
    for name in ("moe", "acblas", "deepgemm"):
        b.domain(name)
    b.device(0, "PPU-ZW810E")
    layer(b, 100, 1000, "1,2,3", 40, 20)
    layer(b, 101, 2000, "3,2,1", 60, 30)
    return b.close()


def test_moe_op_sum(writer):
    assert csv(build(writer), "moe_op_sum") == [
        HEADER,
        f'1,200,100.0,100,50,2,100,100,85,115,15,1.9,1.9,19.3,1.5,19.3,3.0,"MoE:{SHAPE}_topkids[1,2,3]_unique_3",',
    ]


def test_no_merge_moe_parameter_keeps_topkids_apart(writer):
    lines = csv(build(writer), "moe_op_sum:no-merge-moe-parameter")
    assert [line.split(",")[:6] for line in lines[1:]] == [["1", "115", "57.5", "60", "30", "1"],
                                                           ["2", "85", "42.5", "40", "20", "1"]]
    assert lines[1].endswith(f'"MoE:{SHAPE}_topkids[3,2,1]_unique_3",')


def test_framework_moe_alone_counts_its_last_two_gemms(writer):
    # without the [MoE] range the D_MoE range is the operator; the router GEMM comes first
    b = Build(writer)
    for name in ("moe", "deepgemm"):
        b.domain(name)
    b.device(0, "PPU-ZW810E")
    b.range(f"D_MoE,{SHAPE}", 100, 900, "moe")
    b.kernel("router_gemm_kernel", 1000, 1010, launch=120)
    b.kernel("fused_moe_kernel", 1020, 1060, launch=320)
    b.kernel("fused_moe_kernel", 1070, 1090, launch=520)
    lines = csv(b.close(), "moe_op_sum")
    assert lines[1].split(",")[:6] == ["1", "70", "100.0", "40", "20", "1"]
    assert lines[1].endswith(f'"D_MoE,{SHAPE}",')
