"""ppu_op_breakdown and ppu_op_kernel_breakdown on the reference example's DeepGEMM rows.

The fixture rebuilds one instance of the example's framework-level MoE operator: two
DeepGEMM grouped GEMMs with the example's average times (55495 ns and 30975 ns) and one
kernel with no library operator (Native), on a PPU-ZW810E (catalogue peaks). With the
byte model of docs/operators.md the utilisations are the printed 2.6 / 262.6 and 2.3 / 235.1
(compute / HBM load); our HBM store figures are 0.1 and 0.3 where the reference prints 0.0.

    device 0:  [gemvt n768 100000 .. 155495) idle [gather 160000 .. 165000)[gemvt n2048 .. 195975)
    thread:    D_MoE [1000 ............................................................ 9000)
                 DeepGemm [1100 .. 1200)   launch gather @1300   DeepGemm [1400 .. 1500)
    Total Time = 195975 - 100000 = 95975; Idle = 160000 - 155495 = 4505
"""

from __future__ import annotations

from test_operators_build import Build, csv

MOE = "D_MoE,M_8_E_128_H_2048_In_768_topk_8"
GEMM1 = "GroupedNoPad,data_type:bf16,groups:128,m:64,n:768,k:2048,gpu:0"
GEMM2 = "GroupedNoPad,data_type:bf16,groups:128,m:64,n:2048,k:384,gpu:0"
GEMVT1 = ("void deep_gemm::batched_gemvt_kernel<__nv_bfloat16, __nv_bfloat16, float, int4, int4, 256, 32, 2, 2, 2>"
          "(deep_gemm::GemvtArgs)")
GEMVT2 = ("void deep_gemm::batched_gemvt_kernel<__nv_bfloat16, __nv_bfloat16, float, int4, int4, 256, 8, 4, 1, 1>"
          "(deep_gemm::GemvtArgs)")


def build(writer, device: str = "PPU-ZW810E"):
    b = Build(writer)
    b.domain("moe")
    b.domain("deepgemm")
    b.device(0, device)
    b.range(MOE, 1000, 9000, "moe")
    b.range(f"[DeepGemm] --format={GEMM1}", 1100, 1200, "deepgemm")
    b.range(f"[DeepGemm] --format={GEMM2}", 1400, 1500, "deepgemm")
    b.kernel(GEMVT1, 100_000, 155_495, launch=1150)
    b.kernel("_fwd_kernel_ep_gather", 160_000, 165_000, launch=1300)
    b.kernel(GEMVT2, 165_000, 195_975, launch=1450)
    return b.close()


def test_op_breakdown_reproduces_the_example_utilisations(writer):
    # all-columns: the reference's column list (its example header leaves out the framework averages, issue 27)
    path = build(writer)
    assert csv(path, "ppu_op_breakdown")[0] == (
        "Row#,OP Type,Framework OP,Framework Time (%),Library OP,Library Time (%),Library Avg (ns),Library Instances,"
        "Compute Util (%),HBM Load Util (%),HBM Store Util (%),")
    assert csv(path, "ppu_op_breakdown:all-columns") == [
        "Row#,OP Type,Framework OP,Framework Time (%),Framework Avg (ns),Framework Instances,Library OP,"
        "Library Time (%),Library Avg (ns),Library Instances,Compute Util (%),HBM Load Util (%),HBM Store Util (%),",
        f'1,"MoE","{MOE}",100.0,95975,1,"DeepGemm:{GEMM1}",57.8,55495,1,2.6,262.6,0.1,',
        f'2,"MoE","{MOE}",100.0,95975,1,"DeepGemm:{GEMM2}",32.3,30975,1,2.3,235.1,0.3,',
        f'3,"MoE","{MOE}",100.0,95975,1,"Native",5.2,5000,1,"-","-","-",',
        f'4,"MoE","{MOE}",100.0,95975,1,"Idle",4.7,4505,1,"-","-","-",',
    ]


def test_kernel_breakdown_goes_down_to_kernels(writer):
    assert csv(build(writer), "ppu_op_kernel_breakdown") == [
        "Row#,OP Type,Framework OP,Framework Time (%),Library OP,Library Time (%),Kernel Name,Kernel Time (%),"
        "Avg (ns),Instances,",
        f'1,"MoE","{MOE}",100.0,"DeepGemm:{GEMM1}",57.8,"{GEMVT1}",57.8,55495,1,',
        f'2,"MoE","{MOE}",100.0,"DeepGemm:{GEMM2}",32.3,"{GEMVT2}",32.3,30975,1,',
        f'3,"MoE","{MOE}",100.0,"Native",5.2,"_fwd_kernel_ep_gather",5.2,5000,1,',
        f'4,"MoE","{MOE}",100.0,"Idle",4.7,"-","-","-","-",',
    ]


def test_base_names_and_order_by_name(writer):
    lines = csv(build(writer), "ppu_op_kernel_breakdown:base:order-by=name")
    assert [line.split(",")[-5] for line in lines[1:]] == ['"batched_gemvt_kernel"', '"batched_gemvt_kernel"',
                                                          '"-"', '"_fwd_kernel_ep_gather"']
    assert [line.split('"')[5] for line in lines[1:]] == [f"DeepGemm:{GEMM2}", f"DeepGemm:{GEMM1}", "Idle", "Native"]


def test_op_filter_and_unknown_device(writer):
    path = build(writer, device="Mystery Accelerator 9000")
    run_cli = __import__("conftest").run_cli
    # op= filters the rows by their OP Type (issue 27): the DeepGEMM operators stay under their MoE operator
    assert run_cli("stats", "-r", "ppu_op_breakdown:op=GEMM", "--format", "csv", path).out.splitlines()[1:] == []
    run = run_cli("stats", "-r", "ppu_op_breakdown:op=MoE:all-columns", "--format", "csv", path)
    assert run.code == 0
    assert run.out.splitlines()[1:] == [
        f'1,"MoE","{MOE}",100.0,95975,1,"DeepGemm:{GEMM1}",57.8,55495,1,"-","-","-",',
        f'2,"MoE","{MOE}",100.0,95975,1,"DeepGemm:{GEMM2}",32.3,30975,1,"-","-","-",',
        f'3,"MoE","{MOE}",100.0,95975,1,"Native",5.2,5000,1,"-","-","-",',
        f'4,"MoE","{MOE}",100.0,95975,1,"Idle",4.7,4505,1,"-","-","-",',
    ]
    assert run.err.count("no peak figures for device 0 (Mystery Accelerator 9000)") == 1


def test_kernel_idle_inside_a_library_operator(writer):
    # one acBLAS operator with two kernels and a 100 ns gap: kernel-level Idle
    b = Build(writer)
    b.domain("acblas")
    b.device(0, "PPU-ZW810E")
    b.range("[ACBLAS] --format=GemmEx,n,n,64,64,64,64,64,64,1,0,1,DEFAULT,BF16,ALGO,32F,EPILOGUE_DEFAULT", 10, 50,
            "acblas")
    b.kernel("gemm_main", 1000, 1300, launch=20)
    b.kernel("splitk_reduce", 1400, 1500, launch=30)
    lines = csv(b.close(), "ppu_op_kernel_breakdown")
    assert [line.split('",')[-1] for line in lines[1:]] == ["60.0,300,1,", "20.0,100,1,", "20.0,100,1,"]
    assert [line.split(",")[-5] for line in lines[1:]] == ['"gemm_main"', '"Idle"', '"splitk_reduce"']
