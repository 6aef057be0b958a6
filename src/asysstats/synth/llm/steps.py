"""The programs of the sample: start-up (weights, graph capture), prefill, decode, shutdown."""

from __future__ import annotations

from dataclasses import dataclass

from asysstats.synth.llm.catalog import (
    DECODE_BATCH,
    DOMAINS,
    LAYERS,
    PREFILL_TOKENS,
    PROMPT,
    fmha_text,
    gemm_text,
    pccl_text,
)
from asysstats.synth.llm.program import (
    DEVICE,
    MEMCPY_DTOD,
    MEMCPY_DTOH,
    MEMCPY_HTOD,
    PAGEABLE,
    PINNED,
    Call,
    Domain,
    Gap,
    Mark,
    OsCall,
    Program,
    RangeEnd,
    RangeStart,
    Work,
)

HIDDEN, QKV, ATTN, VOCAB, EXPERTS, LOCAL_EXPERTS, INTER = 2048, 1536, 1024, 37984, 128, 32, 768
MB = 2**20
# Device addresses: (slot, address, bytes); "scratch" is released and its address reused.
WEIGHTS = (0x3000000000, 6 * 64 * MB)
KV_CACHE = (0x3100000000, 20 * 1024 * MB)
PCCL_BUFFERS = ((0x301A000000, 32 * MB), (0x302D000000, 32 * MB))
ACBLAS_WS = (0x3040000000, 32 * MB)
SCRATCH = (0x3050000000, 256 * MB)
WORKSPACE = (0x3060000000, 512 * MB)
SAMPLER_GRAPH, SAMPLER_EXEC = 1, 2  # captured graph, instantiated graph


@dataclass(frozen=True)
class Phase:
    """Shapes and device times (µs) of one forward pass."""

    name: str
    tokens: int
    times: dict[str, float]
    fmha: str
    dgemm: str
    dgemm_m: int
    allreduce: str


DECODE = Phase("decode", DECODE_BATCH, dict(
    embed=3.0, norm=3.2, qkv=11.0, rotary=2.8, attn=14.0, combine=3.5, oproj=8.0, ar=9.0, gate=4.5, topk=3.0,
    counts=1.2, scatter=4.0, gemm1=38.0, silu=3.0, gemm2=26.0, gather=5.0, lm_head=45.0, ag=18.0),
    fmha_text(DECODE_BATCH, 1, "{kvlen}", 0), "GroupedNoPad", 64, "allreduce")
PREFILL = Phase("prefill", PREFILL_TOKENS, dict(
    embed=22.0, norm=25.0, qkv=160.0, rotary=20.0, attn=420.0, combine=0.0, oproj=110.0, ar=260.0, gate=30.0,
    topk=18.0, counts=1.5, scatter=45.0, gemm1=900.0, silu=40.0, gemm2=620.0, gather=60.0, lm_head=30.0, ag=22.0),
    fmha_text(4, PROMPT, PROMPT, 1), "GroupedContiguous", PREFILL_TOKENS * 8 // 4, "allreduce_ring")
# The sampler graph's kernel nodes: (autograd op, input sizes, kernel, µs); a copy node follows.
SAMPLER = (("aten::softmax", "[[8, 37984], [], []]", "softmax", 5.0),
           ("aten::argmax", "[[8, 37984], [], []]", "argmax", 4.0),
           ("aten::fill_", "[[8], []]", "fill", 1.5), ("aten::add", "[[8], [8], []]", "add", 1.5))


def sampler_graph_launch() -> Call:
    """``hggcGraphLaunch`` of the instantiated sampler graph: its kernels and its copy node."""
    work = tuple(Work("kernels", us, key, graph=(SAMPLER_EXEC, 101 + i)) for i, (_, _, key, us) in enumerate(SAMPLER))
    copy = Work("memcpy", 1.2, bytes=64, copy_kind=MEMCPY_DTOD, src_kind=DEVICE, dst_kind=DEVICE,
                graph=(SAMPLER_EXEC, 101 + len(SAMPLER)))
    return Call("hggcGraphLaunch", 12.0, work + (copy,))


def startup() -> Program:
    p = Program("startup")
    p.add(*(Domain(name) for name in DOMAINS), Mark("[prof_range]: model init"), RangeStart("load", "load_weights"))
    p.add(OsCall("open", 25.0), OsCall("read", 400.0), OsCall("close", 6.0))
    for slot, (address, nbytes) in (("weights", WEIGHTS), ("kv_cache", KV_CACHE), ("pccl", PCCL_BUFFERS[0]),
                                    ("pccl", PCCL_BUFFERS[1]), ("acblas", ACBLAS_WS), ("workspace", SCRATCH)):
        p.add(Call("hggcMalloc", 120.0, callchain=slot, memory=(0, address, nbytes)), Gap(15.0))
    p.add(Call("hggcFree", 45.0, callchain="free", memory=(1, SCRATCH[0], SCRATCH[1])),
          Call("hggcMalloc", 110.0, callchain="workspace", memory=(0, SCRATCH[0], SCRATCH[1] // 2)))
    for _ in range(6):
        p.memcpy("hgMemcpyHtoDAsync_v2", MEMCPY_HTOD, 64 * MB, PAGEABLE, DEVICE, 2700.0, api_us=2750.0)
    p.memset(1024 * MB, 480.0)
    p.add(Call("hggcStreamSynchronize", 5.0, sync=True, inner_os="ioctl"), RangeEnd("load"))
    with p.range("[prof_range]: capture sampler graph"):
        p.add(Call("hggcStreamBeginCapture", 6.0))
        for node, (name, sizes, _, _) in enumerate(SAMPLER, start=1):
            with p.aten(name, sizes):
                p.add(Call("hggcLaunchKernel", 5.0, nodes=((SAMPLER_GRAPH, node, None),)))
        p.add(Call("hgMemcpyDtoDAsync_v2", 5.0, nodes=((SAMPLER_GRAPH, len(SAMPLER) + 1, None),)),
              Call("hggcStreamEndCapture", 25.0))
    clones = tuple((SAMPLER_EXEC, 100 + n, n) for n in range(1, len(SAMPLER) + 2))
    p.add(Call("hggcGraphInstantiate", 180.0, nodes=clones), Gap(200.0))
    return p


def forward(phase: Phase) -> Program:
    """One step: inputs, embedding, the decoder layers, logits, sampling, outputs."""
    p, t, m = Program(phase.name), phase.times, phase.tokens
    with p.range("[prof_range]: step {step}"):
        p.add(OsCall("pthread_cond_wait", 600.0 if m == DECODE_BATCH else 5000.0, "sched"),
              OsCall("nanosleep", 50.0, "proxy"))
        if phase is PREFILL:
            p.add(Call("hggcMalloc", 90.0, callchain="workspace", memory=(0, *WORKSPACE)))
        p.memcpy("hgMemcpyHtoDAsync_v2", MEMCPY_HTOD, 8 * m, PINNED, DEVICE, 1.5)
        p.memcpy("hgMemcpyHtoDAsync_v2", MEMCPY_HTOD, 8 * m, PINNED, DEVICE, 1.4)
        with p.aten("aten::embedding", f"[[{VOCAB}, {HIDDEN}], [{m}], [], [], []]"):
            p.launch("embed", t["embed"])
        allreduce(p, phase)
        for layer in range(LAYERS):
            with p.range(f"model.layers.{layer}"):
                decoder_layer(p, phase, layer)
        with p.aten("_C::rms_norm", f"[[{m}, {HIDDEN}], [{m}, {HIDDEN}], [{HIDDEN}], []]"):
            p.launch("final_norm", 3.0)
        rows = m if phase is DECODE else 4  # logits of the last token of each request
        gemm(p, rows, VOCAB, HIDDEN, "gemm_vocab", t["lm_head"])
        p.collective(pccl_text("AllGather", rows * VOCAB, "0x3041000000/0x3042000000"), "allgather", t["ag"])
        p.add(sampler_graph_launch())
        p.memcpy("hgMemcpyDtoHAsync_v2", MEMCPY_DTOH, 4 * rows, DEVICE, PINNED, 2.0)
        if phase is PREFILL:
            p.memcpy("hgMemcpyDtoDAsync_v2", MEMCPY_DTOD, 4 * MB, DEVICE, DEVICE, 6.0)
        p.add(Call("hggcEventRecord", 2.5), OsCall("poll", 120.0, "sched", ret=1),
              Call("hgEventQuery", 1.2, ret=600), Gap(30.0), Call("hgEventQuery", 1.0),
              Call("hggcStreamSynchronize", 4.0, sync=True, inner_os="ioctl"))
        if phase is PREFILL:
            p.add(Call("hggcFree", 40.0, callchain="free", memory=(1, *WORKSPACE)))
        p.add(Gap(25.0))
    return p


def decoder_layer(p: Program, phase: Phase, layer: int) -> None:
    t, m = phase.times, phase.tokens
    norm = f"[[{m}, {HIDDEN}], [{m}, {HIDDEN}], [{HIDDEN}], []]"
    with p.aten("_C::fused_add_rms_norm", norm):
        p.launch("norm", t["norm"])
    gemm(p, m, QKV, HIDDEN, "gemm_small" if phase is DECODE else "gemm_large", t["qkv"])
    with p.aten("_C::rotary_embedding", f"[[{m}], [{m}, {ATTN}], [{m}, 256], [], [40960, 128], []]"):
        p.launch("rotary", t["rotary"])
    with p.aten("aten::_flash_attention_forward", f"[[{m}, 8, 128], [4096, 16, 2, 128], [4096, 16, 2, 128], [], []]"):
        with p.range(phase.fmha, "fmha"):
            if phase is DECODE:
                p.launch("flash_decode", t["attn"])
                p.launch("flash_combine", t["combine"])
            else:
                p.launch("flash_prefill", t["attn"])
    gemm(p, m, HIDDEN, ATTN, "gemm_small" if phase is DECODE else "gemm_large", t["oproj"])
    allreduce(p, phase, chained=layer == 2)
    with p.aten("_C::fused_add_rms_norm", norm):
        p.launch("norm", t["norm"])
    shape = f"M_{m}_E_{EXPERTS}_H_{HIDDEN}_In_{INTER}_topk_8"
    with p.range(f"D_MoE,{shape}", "moe"):
        gemm(p, m, EXPERTS, HIDDEN, "gemm_small", t["gate"])
        with p.aten("_moe_C::topk_softmax", f"[[{m}, 8], [{m}, 8], [{m}, 8], [{m}, {EXPERTS}], []]"):
            p.launch("topk", t["topk"])
        with p.range(f"[MoE] --format={shape}_topkids[{{topkids}}]_unique_{{unique{m}}}", "moe"):
            p.memset(LOCAL_EXPERTS * 16, t["counts"])
            p.launch("scatter", t["scatter"])
            for n, k, us in ((2 * INTER, HIDDEN, t["gemm1"]), (HIDDEN, INTER, t["gemm2"])):
                with p.range(f"[DeepGemm] --format={phase.dgemm},data_type:bf16,groups:{LOCAL_EXPERTS},"
                             f"m:{phase.dgemm_m},n:{n},k:{k},gpu:{{rank}}", "deepgemm"):
                    p.launch("grouped_gemm", us)
                if n == 2 * INTER:
                    p.launch("silu", t["silu"])
            p.launch("gather", t["gather"])
    allreduce(p, phase)


def allreduce(p: Program, phase: Phase, chained: bool = False) -> None:
    """Tensor-parallel all-reduce: one-shot through peer memory in decode (no proxy stages), a ring in prefill."""
    text = pccl_text("AllReduce", phase.tokens * HIDDEN, "0x301a000000/0x302d000000")
    p.collective(text, phase.allreduce, phase.times["ar"], chained=chained, proxy=phase is PREFILL)


def gemm(p: Program, m: int, n: int, k: int, key: str, us: float) -> None:
    """``aten::mm`` of (m x k) by (k x n) through acBLAS (column-major: C^T = W^T X^T)."""
    with p.aten("aten::mm", f"[[{m}, {k}], [{k}, {n}]]"):
        with p.range(gemm_text(n, m, k), "acblas"):
            p.launch(key, us)


def shutdown() -> Program:
    p = Program("shutdown")
    p.add(Gap(300.0))
    for address, nbytes in (ACBLAS_WS, *PCCL_BUFFERS, (SCRATCH[0], SCRATCH[1] // 2)):
        p.add(Call("hggcFree", 45.0, callchain="free", memory=(1, address, nbytes)), Gap(10.0))
    p.add(Call("hggcStreamSynchronize", 3.0, sync=True), Mark("[prof_range]: shutdown"))
    return p
