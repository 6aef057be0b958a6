"""Recognition, merge keys, the work model and the device catalogue, function by function."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from test_operators_breakdown import build as deepgemm_report

from asysstats.analysis.inputs import Inputs
from asysstats.analysis.operators.catalog import PEAK_FIELDS, find_device, read_device_spec
from asysstats.analysis.operators.common import AnalysisOptions
from asysstats.analysis.operators.merge import merge_key
from asysstats.analysis.operators.model import (
    DEFAULT_FIELD,
    attention_work,
    device_peaks,
    gemm_work,
    moe_work,
    peak_arrays,
)
from asysstats.analysis.operators.parsers import parse_builtin
from asysstats.analysis.operators.recognise import classify_kernels, type_filter
from asysstats.core.errors import AsysError
from asysstats.core.strings import StringPool
from asysstats.reading.opening import open_report

from conftest import run_cli

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.asysrep"


def parse(text: str, domain: str | None = None):
    canonical = f"{domain}:{text}" if domain else text
    return parse_builtin(canonical, text, domain)


@pytest.mark.parametrize("text, domain, kind, key", [
    ("aten::mm, seq = 12, op_id = 345, sizes = [[2048, 6144], [6144, 72]], input_op_ids = [(344,0), (0,-1)]", None,
     "PyTorch", "PyTorch|PyTorch|op=aten::mm,sizes=[[2048, 6144], [6144, 72]]"),
    ("aten::clamp_min", None, "PyTorch", "PyTorch|PyTorch|op=aten::clamp_min"),
    ("[ACBLAS] --format=GemmEx,t,n,2048,72,6144,6144,6144,2048,1,0,1,DEFAULT,BF16,ACBLAS_GEMM_DEFAULT_TENSOR_OP,32F,"
     "EPILOGUE_DEFAULT", "acblas", "GEMM", "GEMM|ACBLAS|kind=GemmEx,transa=t,transb=n,m=2048,n=72,k=6144,batch=1,"
     "math=DEFAULT,dtype=BF16,algo=ACBLAS_GEMM_DEFAULT_TENSOR_OP,compute=32F,epilogue=EPILOGUE_DEFAULT"),
    ("[FMHA] --format=flash_attn_v2.8.2,Forward,data_type:bf16,batch_size:4,num_heads:32,num_heads_k:8,head_dim:128,"
     "head_dim_value:128,seqlen_q:1,seqlen_k:2048,is_fixed_seqs:1,causal:1", "fmha", "FlashAttention",
     "FlashAttention|FMHA|impl=flash_attn_v2.8.2,direction=Forward,data_type=bf16,batch_size=4,num_heads=32,"
     "num_heads_k=8,head_dim=128,head_dim_value=128,seqlen_q=1,is_fixed_seqs=1,causal=1"),
    ("[MLA] --format=sparse:decode,batch_size:8,seqlen_q:1,seqlen_k:4096,num_heads:128,num_heads_kv:1,head_dim:576,"
     "head_dim_v:512,causal:0,dtype:bf16", "mla", "FlashAttention", "FlashAttention|MLA|sparse=decode,batch_size=8,"
     "seqlen_q=1,num_heads=128,num_heads_kv=1,head_dim=576,head_dim_v=512,causal=0,dtype=bf16"),
    ("[MoE] --format=M_876_E_128_H_4096_In_384_topk_8_topkids[136,0,25,...]_unique_102", "moe", "MoE",
     "MoE|MoE|M=876,E=128,H=4096,In=384,topk=8"),
    ("[MoE] --format=M_192_E128_H2048_In768_topk8", "moe", "MoE", "MoE|MoE|M=192,E=128,H=2048,In=768,topk=8"),
    ("D_MoE,M_8_E_128_H_2048_In_768_topk_8", "moe", "MoE", "MoE|D_MoE|M=8,E=128,H=2048,In=768,topk=8"),
    ("AllReduce, p:0, c:83886080, d:9, r:1, w:4, h:9da3d23b9ccef54c, t:1, b:0x301a000000/0x302d000000", "NCCL",
     "PCCL", "PCCL|PCCL|op=AllReduce,p=0,c=83886080,d=9,w=4,t=1"),
])
def test_annotation_formats(text, domain, kind, key):
    parsed = parse(text, domain)
    assert parsed.type == kind and merge_key(parsed, AnalysisOptions()) == key


@pytest.mark.parametrize("text", ["ExpressionEvaluator::evaluate", "GpuLower::Lower::IndexCompute::IndexCompute",
                                  "{'traceMarker': ['net.py:34'], 'funcStack': '/<module>/Net::forward'}",
                                  "{'mod': 'numpy', 'op': 'relu', 'args': []}", "[prof_range]: iter 7",
                                  "[UNKNOWNLIB] --format=a,b"])
def test_other_ranges_are_not_operators(text):
    assert parse(text) is None


def test_no_merge_options_keep_the_minor_fields():
    gemm = parse("[ACBLAS] --format=GemmEx,t,n,8,8,8,8,8,8,1,0,1,DEFAULT,BF16,A,32F,E", "acblas")
    assert "lda=8" in merge_key(gemm, AnalysisOptions(no_merge_gemm_parameter=True))
    torch = parse("aten::mm, seq = 12, op_id = 345")
    assert merge_key(torch, AnalysisOptions(no_merge_pytorch_parameter=True)).endswith("seq=12,op_id=345")
    prefill = parse("[FMHA] --format=fa,Forward,seqlen_q:8,seqlen_k:8", "fmha")
    assert "seqlen_k=8" in merge_key(prefill, AnalysisOptions())  # only decode steps drop seqlen_k


@pytest.mark.parametrize("name, kind", [
    ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>>"
     "(flash::Flash_fwd_params)", "FlashAttention"),
    ("fmha_cutlassF_f16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel::Params)", "FlashAttention"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm *, unsigned long, ncclWork *)", "PCCL"),
    ("void pcclKernel_oneShotAllReduceKernel<__ppu_bfloat16, 4, 0, 1, 1>(oneShotDevParams)", "PCCL"),
    ("fused_moe_kernel", "MoE"), ("void marlin_moe_wna16::Marlin<__nv_bfloat16, 256>(int4 const*)", "MoE"),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn", "GEMM"),
    ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", "GEMM"), ("volta_sgemm_128x64_nn", "GEMM"),
    ("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<float>>(cutlass::gemm::kernel::Gemm<float>::Params)", "GEMM"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::AbsFunctor<float>>(int, float)", None),
])
def test_kernel_names(name, kind):
    pool = StringPool()
    ids, _ = classify_kernels(pool, pool.intern([name]), (), type_filter(None, ()))
    assert (pool.text(int(ids[0])) if ids[0] >= 0 else None) == kind


def test_work_model():
    assert gemm_work({"m": 2, "n": 3, "k": 4, "beta": 1.0, "dtype": "fp32"}).load == (8 + 12 + 6) * 4
    grouped = gemm_work({"kind": "GroupedNoPad", "m": 64, "n": 768, "k": 2048, "groups": 128, "dtype": "bf16"})
    assert (grouped.flops, grouped.load, grouped.store) == (2 * 64 * 768 * 2048, (64 * 2048 + 128 * 2048 * 768) * 2,
                                                            64 * 768 * 2)
    causal = attention_work({"batch": 1, "heads": 1, "head_dim": 2, "seqlen_q": 4, "seqlen_k": 4, "causal": True})
    assert causal.flops == 2 * 10 * 4  # 10 unmasked pairs of 16, d + dv = 4
    mla = attention_work({"batch": 1, "heads": 2, "heads_k": 1, "head_dim": 4, "head_dim_v": 2, "seqlen_q": 1,
                          "seqlen_k": 3, "shared_kv": True})
    assert mla.load == (1 * 2 * 4 + 3 * 1 * 4) * 2 and mla.store == 2 * 2 * 2
    first, second = moe_work({"M": 8, "E": 4, "H": 64, "In": 32, "topk": 2, "unique": None})
    assert first.load == (16 * 64 + 4 * 64 * 64) * 2 and second.store == 16 * 64 * 2


@pytest.mark.parametrize("name, model, bf16, bandwidth", [
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM", 989.4e12, 3.35e12),
    ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe", 756.5e12, 2e12),
    ("NVIDIA H200", "NVIDIA H200", 989.4e12, 4.8e12), ("NVIDIA H20", "NVIDIA H20", 148e12, 4e12),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB", 312e12, 1.555e12),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe", 312e12, 1.935e12),
    ("PPU-ZW810E", "PPU-ZW810E", 139e12, 2.7648e12), ("ZW-M890P", "ZW-M890P", 430e12, 2.7e12),
])
def test_device_catalogue(name, model, bf16, bandwidth):
    spec = find_device(name)
    assert (spec.name, spec.bf16, spec.bandwidth) == (model, bf16, bandwidth)


def test_estimates_and_unknown_devices():
    assert find_device("PPU-ZW810").estimate and find_device("PPU-ZW610").estimate
    assert not find_device("PPU-ZW810E").estimate
    assert find_device("NVIDIA GeForce RTX 2070 SUPER") is None and find_device(None) is None


def test_device_spec_file(tmp_path, writer):
    spec = tmp_path / "devices.json"
    spec.write_text(json.dumps([{"match": "Mystery", "name": "Mystery 9000", "bandwidth": 2.7648e12, "bf16": 139e12}]))
    entries = read_device_spec(str(spec))
    assert find_device("Mystery Accelerator 9000", entries).name == "Mystery 9000"
    assert math.isnan(entries[0].fp8)
    report = deepgemm_report(writer, device="Mystery Accelerator 9000")
    run = run_cli("stats", "-r", "ppu_op_breakdown", "--format", "csv", "--device-spec", spec, report)
    assert run.code == 0 and run.err == ""
    assert run.out.splitlines()[1].endswith(",2.6,262.6,0.1,")


@pytest.mark.parametrize("content, message", [
    ("not json", "cannot read a JSON list of devices"),
    ('[{"match": "x", "bandwidth": 1e12, "speed": 3}]', "unknown key(s) speed"),
    ('[{"bandwidth": 1e12}]', "'match' must be a non-empty regular expression"),
    ('[{"match": "(", "bandwidth": 1e12}]', "invalid regular expression"),
    ('[{"match": "x", "bandwidth": -1}]', "'bandwidth' must be a positive number"),
    ('[{"match": "x"}]', "'bandwidth' must be a positive number"),
    ('3', "expected a JSON list of device objects"),
])
def test_bad_device_spec_files(tmp_path, content, message):
    spec = tmp_path / "devices.json"
    spec.write_text(content)
    with pytest.raises(AsysError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_device_spec(str(spec))
    run = run_cli("stats", "-r", "ppu_op_sum", "--device-spec", spec, spec)
    assert run.code == 2 and run.err.count("\n") == 1 and "--device-spec" in run.err


def test_peak_arrays_read_each_rows_peak_field_on_its_device():
    inputs = Inputs(open_report(SAMPLE))
    table = device_peaks(inputs)
    assert PEAK_FIELDS[DEFAULT_FIELD] == "bf16" and table[1]["fp32"] == 34.75e12 and table[0]["int8"] == 278e12
    fields = np.array([PEAK_FIELDS.index("fp32"), DEFAULT_FIELD, PEAK_FIELDS.index("int8")])
    flops, bandwidth = peak_arrays(inputs, np.array([1, 0, 0]), fields, np.ones(3, dtype=bool))
    assert flops.tolist() == [34.75e12, 139e12, 278e12] and bandwidth.tolist() == [2.7648e12] * 3 and not inputs.notes
    flops, _ = peak_arrays(inputs, np.array([2, 2]), np.array([PEAK_FIELDS.index("fp8"), DEFAULT_FIELD]),
                           np.array([True, True]))
    assert math.isnan(flops[0]) and flops[1] == 139e12 and len(inputs.notes) == 1  # the sample lists no fp8 peak
