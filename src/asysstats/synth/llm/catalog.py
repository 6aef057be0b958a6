"""What the sample report is made of: kernels, devices, call stacks, metrics, annotation texts.

The model is a small MoE decoder (4 layers, hidden 2048, 32 heads / 8 KV heads of 128,
128 experts, top-8, expert intermediate 768, vocabulary 151936) served with tensor and
expert parallelism over 4 PPUs; the texts follow the annotation formats of the asysrep schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from asysstats.analysis.names import base_name, demangle

DEVICES = 4
LAYERS = 4
BLOCK_STEPS = 12  # one prefill step and 11 decode steps per batch of requests
PROMPT = 512  # prompt tokens per request; a prefill batch is 4 requests
DECODE_BATCH = 8
PREFILL_TOKENS = 4 * PROMPT
FIRST_PID = 31000
HOSTNAME = "ppu-node-07"
DOMAINS = ("acblas", "deepgemm", "fmha", "moe", "NCCL")  # domainId = index + 1
COMM_HASH = "9da3d23b9ccef54c"


@dataclass(frozen=True)
class Kernel:
    """One kernel function: names, launch shape and resource use."""

    name: str  # a mangled C++ name, or a plain (C linkage / Triton) name
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    registers: int
    static_smem: int = 0
    dynamic_smem: int = 0

    @property
    def demangled(self) -> str:
        return demangle(self.name)

    @property
    def short(self) -> str:
        return base_name(self.name)


def _gemm(tile: str, grid: tuple[int, int, int], smem: int) -> Kernel:
    return Kernel(f"gemm_ktype0_bf16_tn_{tile}", grid, (256, 1, 1), 168, 0, smem)


_FLASH_TRAITS = ("I23Flash_fwd_kernel_traitsILi128ELi64ELi128ELi4ELb0ELb0EN7cutlass10bfloat16_tE"
                 "19Flash_kernel_traitsILi128ELi64ELi128ELi4ES3_EE")
KERNELS: dict[str, Kernel] = {
    "embed": Kernel("_ZN4vllm31vocab_parallel_embedding_kernelIN3c108BFloat16EEEvPT_PKS3_PKliii",
                    (8, 1, 1), (256, 1, 1), 32),
    "norm": Kernel("_ZN4vllm25fused_add_rms_norm_kernelIN3c108BFloat16ELi8EEEvPT_S4_PKS3_fii",
                   (8, 1, 1), (256, 1, 1), 40, 64),
    "final_norm": Kernel("_ZN4vllm15rms_norm_kernelIN3c108BFloat16EEEvPT_PKS3_S6_fii",
                         (8, 1, 1), (1024, 1, 1), 30, 64),
    "rotary": Kernel("_ZN4vllm23rotary_embedding_kernelIN3c108BFloat16ELb1EEEvPKlPT_S6_PKS5_illiii",
                     (8, 1, 1), (512, 1, 1), 38),
    "gemm_small": _gemm("64x32x128_stage4_warp1x2_splitk4", (48, 1, 4), 49152),
    "gemm_large": _gemm("128x128x64_stage3_warp2x2_splitk1", (16, 12, 1), 98304),
    "gemm_vocab": _gemm("128x32x128_stage4_warp2x1_splitk1", (297, 1, 1), 81920),
    "flash_decode": Kernel(f"_ZN5flash24flash_fwd_splitkv_kernel{_FLASH_TRAITS}Lb1ELb0ELb0ELb0ELb1ELb1ELb0ELb0EEEv"
                           "NS_16Flash_fwd_paramsE", (1, 8, 16), (128, 1, 1), 255, 0, 49152),
    "flash_combine": Kernel(f"_ZN5flash32flash_fwd_splitkv_combine_kernel{_FLASH_TRAITS}Li4ELi3ELb1EEEv"
                            "NS_16Flash_fwd_paramsE", (16, 1, 1), (128, 1, 1), 64, 0, 16640),
    "flash_prefill": Kernel("_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi64ELi4ELb0ELb0E"
                            "N7cutlass10bfloat16_tE19Flash_kernel_traitsILi128ELi128ELi64ELi4ES3_EE"
                            "Lb0ELb1ELb0ELb0ELb1ELb1ELb0ELb0EEEvNS_16Flash_fwd_paramsE",
                            (4, 4, 8), (128, 1, 1), 255, 0, 98304),
    "topk": Kernel("_ZN3moe17topkGatingSoftmaxILi8ELi128ELi4ELi16ELi32EiEEvPKfPKbPfiPiS6_iii",
                   (1, 1, 1), (32, 4, 1), 56),
    "scatter": Kernel("_fwd_kernel_ep_scatter_1", (32, 1, 1), (128, 1, 1), 48, 0, 1024),
    "grouped_gemm": Kernel("_ZN9deep_gemm28ppu_grouped_gemm_bf16_kernelILj128ELj64ELj64ELj128ELj1ELNS_8GemmTypeE2EEEv"
                           "NS_13GroupedParamsE", (96, 1, 1), (256, 1, 1), 128, 0, 147456),
    "silu": Kernel("_silu_and_mul_kernel", (64, 1, 1), (128, 1, 1), 26),
    "gather": Kernel("_fwd_kernel_ep_gather", (8, 1, 1), (256, 1, 1), 40),
    "allreduce": Kernel("_Z33pcclKernel_oneShotAllReduceKernelI14__ppu_bfloat16Li4ELi0ELi1ELi1EEv16oneShotDevParams",
                        (16, 1, 1), (512, 1, 1), 72),
    "allreduce_ring": Kernel("_Z40pcclKernel_AllReduce_RING_LL128_Sum_bf1615pcclDevWorkColl",
                             (16, 1, 1), (640, 1, 1), 96),
    "allgather": Kernel("_Z33pcclKernel_AllGather_RING_LL_bf1615pcclDevWorkColl", (8, 1, 1), (512, 1, 1), 80),
    "softmax": Kernel("_ZN2at6native12_GLOBAL__N_119cunn_SoftMaxForwardILi4EfffNS1_22SoftMaxForwardEpilogueEEEv"
                      "PT2_PKT0_i", (8, 1, 1), (1024, 1, 1), 36, 128),
    "argmax": Kernel("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIN3c108BFloat16ENS0_9ArgMaxOpsIfEEjlLi4EEEE"
                     "EvT1_", (8, 1, 1), (32, 16, 1), 32, 0, 2048),
    "fill": Kernel("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIiEESt5arrayIPcLm1EEEEviT0_T1_",
                   (1, 1, 1), (128, 1, 1), 16),
    "add": Kernel("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIN3c108BFloat16EEESt5arrayI"
                  "PcLm3EEEEviT0_T1_", (1, 1, 1), (128, 1, 1), 20),
}


class DeviceInfo(TypedDict):
    """The sample device's row of the devices table, by column."""

    name: str
    computeMajor: int
    computeMinor: int
    asyncEngineCount: int
    cuCount: int
    totalMemory: int
    clockRate: int
    memoryClockRate: int
    memoryBandwidth: int
    peakFlopsBf16: float
    peakFlopsFp16: float
    peakFlopsFp32: float
    peakFlopsInt8: float


# Device figures (TARGET_INFO_PPU); peak figures as in the device catalogue.
DEVICE_INFO: DeviceInfo = dict(
    name="PPU-ZW810E", computeMajor=8, computeMinor=0, asyncEngineCount=4, cuCount=108,
    totalMemory=96 * 2**30, clockRate=1_500_000_000, memoryClockRate=1_800_000_000,
    memoryBandwidth=2_764_800_000_000, peakFlopsBf16=139e12, peakFlopsFp16=139e12, peakFlopsFp32=34.75e12,
    peakFlopsInt8=278e12,
)

METRICS = (("PPU Utilization", "%"), ("HBM Bandwidth", "GB/s"), ("Power", "W"), ("CU Clock", "MHz"))

_HGGC = "/usr/local/PPU_SDK/lib/libhggc.so.1"
_TORCH = "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so"
_C10 = "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10_cuda.so"
_ALLOC = ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, "
          "CUstream_st*)", _C10)
_EMPTY = ("at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
          "std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", _TORCH)
# Call stacks of the allocating API calls, innermost frame first: (symbol, module).
CALLCHAINS: dict[str, tuple[tuple[str, str], ...]] = {
    "weights": (("hggcMalloc", _HGGC), _ALLOC, _EMPTY, ("load_weights (model_loader.py:214)", "model_loader.py"),
                ("__init__ (worker.py:61)", "worker.py")),
    "kv_cache": (("hggcMalloc", _HGGC), _ALLOC, _EMPTY, ("allocate_kv_cache (cache_engine.py:64)", "cache_engine.py"),
                 ("__init__ (worker.py:88)", "worker.py")),
    "pccl": (("hggcMalloc", _HGGC), ("pcclCommInitRank", "/usr/local/PPU_SDK/lib/libpccl.so.2"),
             ("c10d::ProcessGroupNCCL::getNCCLComm(std::string const&, c10::Device&, c10d::OpType, int, bool)", _TORCH),
             ("init_process_group (parallel_state.py:77)", "parallel_state.py")),
    "acblas": (("hggcMalloc", _HGGC), ("acblasLtMatmulAlgoGetHeuristic", "/usr/local/PPU_SDK/lib/libacblas.so.12"),
               ("at::cuda::getCurrentCUDABlasLtHandle()", _TORCH), ("forward (model.py:120)", "model.py"),
               ("generate (run.py:42)", "run.py")),
    "workspace": (("hggcMalloc", _HGGC), _ALLOC, _EMPTY, ("forward (model.py:120)", "model.py"),
                  ("generate (run.py:42)", "run.py")),
    "free": (("hggcFree", _HGGC), ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::release_block"
                                   "(c10::cuda::CUDACachingAllocator::Native::(anonymous namespace)::Block*)", _C10),
             ("empty_cache (memory.py:192)", "memory.py")),
}


def pccl_text(op: str, count: int, buffers: str) -> str:
    """A PCCL range text for rank ``{rank}`` (filled in per device)."""
    return f"{op}, p:0, c:{count}, d:9, r:{{rank}}, w:{DEVICES}, h:{COMM_HASH}, t:1, b:{buffers}"


def gemm_text(m: int, n: int, k: int) -> str:
    return (f"[ACBLAS] --format=GemmEx,t,n,{m},{n},{k},{k},{k},{m},1,0,1,DEFAULT,BF16,"
            "ACBLAS_GEMM_DEFAULT_TENSOR_OP,32F,EPILOGUE_DEFAULT")


def fmha_text(batch: int, seqlen_q: int | str, seqlen_k: int | str, fixed: int) -> str:
    return (f"[FMHA] --format=flash_attn_v2.8.2,Forward,data_type:bf16,batch_size:{batch},num_heads:8,num_heads_k:2,"
            f"head_dim:128,head_dim_value:128,seqlen_q:{seqlen_q},seqlen_k:{seqlen_k},is_fixed_seqs:{fixed},causal:1")
