"""ppu_op_trace: the reference example's rows, graph-mapped operators, prefill/decode merging."""

from __future__ import annotations

from test_operators_build import Build, csv, table

REDUCE = "AllReduce, p:0, c:442368, d:9, r:2, w:4, h:c70515c91cef61c7, t:1, b:0x119e800000/0x119e8d8000"
PCCL_KERNEL = "void pcclKernel_twoShotAllReduceKernel<__ppu_bfloat16, 4, 0, 0, 1, 1>(twoShotDevParams)"
GEMM = "GemmEx,t,n,2048,72,6144,6144,6144,2048,1,0,1,DEFAULT,BF16,ACBLAS_GEMM_DEFAULT_TENSOR_OP,32F,EPILOGUE_DEFAULT"
GEMM_KERNEL = ("gemm_ktype0_aiu1_mtype1_dtypeBF16xBF16xFP32xBF16xBF16_tile128x256x64x64x64x2_layout0x1x0x0_"
               "align1x1x8x8_splitk2_fusion0_prefetch0_fp32tc0_ptrhost1_schedule0")
HEADER = ("Row#,OP Type,OP Name,OP Start (ns),OP Duration (ns),OP ID,Activity ID,PID,Device ID,Context ID,Stream ID,"
          "Activity Start (ns),Activity Duration (ns),Activity Name,")


def test_trace_example(writer):
    # range ids: NCCL domain 1, acblas domain 2, the AllReduce 3, the GemmEx 4; kernel ids 1..3
    b = Build(writer, pid=3790741)
    b.domain("NCCL")
    b.domain("acblas")
    b.range(REDUCE, 1000, 2000, "NCCL")
    b.range(f"[ACBLAS] --format={GEMM}", 3000, 4000, "acblas")
    b.kernel(PCCL_KERNEL, 136493999, 136493999 + 16760, launch=1500, device=2, stream=1)
    b.kernel(GEMM_KERNEL, 136513799, 136513799 + 26520, launch=3100, device=2, stream=1)
    b.kernel("gemm_splitk_reduce", 136540119, 136544119, launch=3200, device=2, stream=1)
    assert csv(b.close(), "ppu_op_trace") == [
        HEADER,
        f'1,"PCCL","{REDUCE}",136493999,16760,3,1,3790741,2,1,1,136493999,16760,"{PCCL_KERNEL}",',
        f'2,"GEMM","ACBLAS:{GEMM}",136513799,30320,4,2,3790741,2,1,1,136513799,26520,"{GEMM_KERNEL}",',
        f'3,"GEMM","ACBLAS:{GEMM}",136513799,30320,4,3,3790741,2,1,1,136540119,4000,"gemm_splitk_reduce",',
    ]


def test_graph_mapped_operator_has_one_instance_per_launch(writer):
    # aten::relu [100, 200) holds the creation of graph node 5 at 150; the graph is launched
    # twice, outside any range: each launch is one instance of the operator.
    b = Build(writer)
    b.range("aten::relu, seq = 9", 100, 200)
    b.w.add("graph_nodes", start=[150], end=[155], globalTid=b.thread(), correlationId=[99], graphId=[1],
            graphNodeId=[5], originalGraphNodeId=[None])
    b.kernel("relu_kernel", 6000, 6100, launch=2000, graph_node=5, api="hggcGraphLaunch")
    b.kernel("relu_kernel", 7000, 7150, launch=3000, graph_node=5, api="hggcGraphLaunch")
    path = b.close()
    assert [row[3:7] for row in table(csv(path, "ppu_op_trace"))] == [
        ["6000", "100", "1", "1"], ["7000", "150", "1", "2"]]
    assert csv(path, "ppu_op_sum")[1].startswith('1,"PyTorch",250,100.0,2,125,')
    assert csv(path, "ppu_op_trace:no-graph-mapping") == [HEADER]


def fmha(seqlen_q: int, seqlen_k: int) -> str:
    return ("[FMHA] --format=fa2,Forward,data_type:bf16,batch_size:1,num_heads:8,num_heads_k:8,head_dim:64,"
            f"head_dim_value:64,seqlen_q:{seqlen_q},seqlen_k:{seqlen_k},is_fixed_seqs:0,causal:1")


def attention_report(writer):
    # prefill then decode with nothing launched between: one operator; the second pair has a
    # launch between them: two operators.
    b = Build(writer)
    b.domain("fmha")
    b.range(fmha(128, 128), 100, 200, "fmha")
    b.range(fmha(1, 129), 210, 300, "fmha")
    b.range(fmha(128, 128), 400, 500, "fmha")
    b.range(fmha(1, 130), 520, 600, "fmha")
    b.kernel("flash_fwd_kernel", 1000, 1200, launch=150)
    b.kernel("flash_fwd_splitkv_kernel", 1300, 1350, launch=250)
    b.kernel("flash_fwd_kernel", 2000, 2200, launch=450)
    b.kernel("copy_kernel", 2250, 2260, launch=510)
    b.kernel("flash_fwd_splitkv_kernel", 2300, 2350, launch=550)
    return b.close()


def test_prefill_and_decode_attention_merge(writer):
    path = attention_report(writer)
    lines = csv(path, "ppu_op_trace")
    pair = f"FMHA:{fmha(128, 128)[16:]} + FMHA:{fmha(1, 129)[16:]}"
    assert [row[2] for row in table(lines)] == [pair, pair, f"FMHA:{fmha(128, 128)[16:]}", f"FMHA:{fmha(1, 130)[16:]}"]
    assert table(lines)[0][3:5] == ["1000", "350"]
    assert [line.split(",")[2] for line in csv(path, "ppu_op_sum")[1:]] == ["350", "200", "50"]
    separate = csv(path, "ppu_op_sum:no-merge-flash-attention-prefill-decode-operator")
    assert [line.split(",")[2:4] for line in separate[1:]] == [["400", "80.0"], ["100", "20.0"]]
    strict = csv(path, "ppu_op_sum:no-merge-flash-attention-prefill-decode-operator:no-merge-flash-attention-parameter")
    assert [line.split(",")[2] for line in strict[1:]] == ["400", "50", "50"]
    # a range filter does not hide the launch that keeps the second pair apart
    only = table(csv(path, r"ppu_op_sum:range-include=seqlen_k\:130"))
    assert [(row[2], row[15]) for row in only] == [("50", f"FMHA:{fmha(1, 130)[16:]}")]
