"""The operator models of asysstats.analysis.operators.torch_models: TraceLens's perf-model sheets, and small
cases checked by hand."""

from __future__ import annotations

import ast
import csv
import math

import pytest
from conftest import CORPUS

from asysstats.analysis.operators.torch_models import (
    MODELS,
    Estimate,
    TorchCall,
    estimate,
)

BF16, FP16, FP32 = "c10::BFloat16", "c10::Half", "float"
SHEETS = ("GEMM", "SDPA_fwd", "CONV_fwd", "CONV_bwd", "UnaryElementwise", "BinaryElementwise", "Normalization",
          "Reduce_fwd", "Reduce_bwd", "RMSNorm_fwd", "InferenceAttention_fwd", "RoPE_fwd")
MIB = 2**20


def golden_rows() -> list:
    """One param per row of every TraceLens perf-model sheet of the corpus (one skipped param when absent)."""
    params = []
    for folder in sorted((CORPUS / "kineto").glob("tracelens_*.golden")):
        for sheet in SHEETS:
            path = folder / f"{sheet}.csv"
            if not path.is_file():
                continue
            with path.open(encoding="utf-8") as handle:
                for number, row in enumerate(csv.DictReader(handle)):
                    params.append(pytest.param(row, id=f"{folder.stem}/{sheet}/{number}-{row['name']}"))
    return params or [pytest.param(None, marks=pytest.mark.skip(reason="no TraceLens goldens in the corpus"))]


def golden_key(row: dict) -> tuple[str, str]:
    return row["name"], row["Input Dims_first"]


def reduce_output_fixed(output_elems: int, element_size: int):
    """TraceLens skips the dim of a reduction (it parses only non-string Concrete Inputs) and counts one output
    element; we count the real output: the bytes differ by (outputs - 1) elements, the FLOPs agree."""
    def check(ours: Estimate, flops: float, moved: float) -> None:
        assert ours.flops == pytest.approx(flops, rel=1e-6)
        assert ours.read + ours.written == pytest.approx(moved + (output_elems - 1) * element_size, rel=1e-9)
    return check


def conv_weight_grad_only(ours: Estimate, flops: float, moved: float) -> None:
    """The first conv layer's output_mask is [False, True, False] (no grad of the network input): TraceLens ignores
    output_mask and counts the input gradient as well; we count the weight gradient only, half of its numbers."""
    assert ours.flops == pytest.approx(flops / 2, rel=1e-9)
    assert ours.read + ours.written == pytest.approx(moved / 2, rel=1e-9)


# The golden rows where we differ from TraceLens on purpose: (name, Input Dims) -> a check of the difference.
GOLDEN_EXCEPTIONS = {
    ("aten::mean", "[[16, 559, 1024], [], [], []]"): reduce_output_fixed(16 * 559, 4),  # mean over dim -1 (qwen)
    ("aten::sum", "[[10, 1000], [], [], []]"): reduce_output_fixed(1000, 2),  # sum over dim 0 (resnet)
    ("aten::mean", "[[10, 512, 7, 7], [], [], []]"): reduce_output_fixed(10 * 512, 2),  # over [-1, -2] (resnet)
    ("aten::convolution_backward", str([[10, 64, 112, 112], [10, 3, 224, 224], [64, 3, 7, 7]] + [[]] * 8)):
        conv_weight_grad_only,
}
# Rows with no model: sglang_profiler:: ops are pseudo ops TraceLens builds from a merged graph-capture trace
# (paged attention over the KV cache, whose lengths come from the capture's metadata).
NOT_MODELLED = {"sglang_profiler::attention_paged_attention_ragged"}


@pytest.mark.parametrize("row", golden_rows())
def test_tracelens_golden_row(row: dict) -> None:
    """Every perf-model row: GFLOPs and MB moved equal TraceLens's to 1e-6, or differ as documented above."""
    call = TorchCall(row["name"], *(ast.literal_eval(row[f"{field}_first"]) for field in
                                    ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")))
    ours = estimate(call)
    if row["name"] in NOT_MODELLED:
        assert ours == f"no model for {row['name']}"
        return
    assert isinstance(ours, Estimate), ours
    flops, moved = float(row["GFLOPS_first"]) * 1e9, float(row["Data Moved (MB)_first"]) * MIB
    if golden_key(row) in GOLDEN_EXCEPTIONS:
        GOLDEN_EXCEPTIONS[golden_key(row)](ours, flops, moved)
        return
    assert ours.flops / 1e9 == pytest.approx(float(row["GFLOPS_first"]), rel=1e-6, abs=1e-15)
    assert (ours.read + ours.written) / MIB == pytest.approx(float(row["Data Moved (MB)_first"]), rel=1e-6)


def work(op: str, dims: list, types: list[str] | None = None, concrete: list[str] | None = None,
         fallback_dtype: str = "fp32") -> Estimate:
    result = estimate(TorchCall(op, dims, types, None, concrete, fallback_dtype))
    assert isinstance(result, Estimate), result
    return result


def numbers(result: Estimate) -> tuple[float, float, float]:
    return result.flops, result.read, result.written


# --------------------------------------------------------------------------------------------- GEMMs


def test_mm_bf16() -> None:
    # 2·8·4·2 = 128 FLOPs; read (8·4 + 4·2)·2 = 80, written 8·2·2 = 32 (112 in all)
    result = work("aten::mm", [[8, 4], [4, 2]], [BF16, BF16])
    assert numbers(result) == (128, 80, 32)
    assert (result.dtype, result.matrix, result.model) == ("bf16", True, "GEMM")


def test_mm_without_types_uses_the_fallback_dtype() -> None:
    # emit_nvtx records only sizes: bf16 assumed gives the 112 bytes above; the default fp32 twice that
    assert numbers(work("aten::mm", [[8, 4], [4, 2]], fallback_dtype="bf16")) == (128, 80, 32)
    default = work("aten::mm", [[8, 4], [4, 2]])
    assert (numbers(default), default.dtype) == ((128, 160, 64), "fp32")


def test_addmm_bmm_baddbmm() -> None:
    # addmm fp32, bias [2]: 128 + 8·2 = 144 FLOPs; read (2 + 32 + 8)·4 = 168; written 16·4 = 64
    assert numbers(work("aten::addmm", [[2], [8, 4], [4, 2], [], []], [FP32] * 3 + ["Scalar"] * 2)) == (144, 168, 64)
    # bmm fp16, batch 3: 3·128 = 384; read 3·40·2 = 240; written 3·16·2 = 96
    assert numbers(work("aten::bmm", [[3, 8, 4], [3, 4, 2]], [FP16, FP16])) == (384, 240, 96)
    # baddbmm, bias [3, 8, 2]: 3·(128 + 16) = 432; read 48·2 + 240 = 336; written 96
    assert numbers(work("aten::baddbmm", [[3, 8, 2], [3, 8, 4], [3, 4, 2], [], []],
                        [FP16] * 3 + ["Scalar"] * 2)) == (432, 336, 96)


def test_matmul_and_linear() -> None:
    # matmul [5, 8, 4]·[4, 2] bf16: batch 5 -> 640 FLOPs; read (160 + 8)·2 = 336; written 5·16·2 = 160
    assert numbers(work("aten::matmul", [[5, 8, 4], [4, 2]], [BF16, BF16])) == (640, 336, 160)
    # a dot product of two [4] fp32 vectors: 2·4 = 8 FLOPs; read 32; written one element, 4
    assert numbers(work("aten::matmul", [[4], [4]], [FP32, FP32])) == (8, 32, 4)
    # linear x [2, 3, 4], W [5, 4], b [5] fp32: M = 6 -> 2·6·5·4 + 30 = 270; read (24 + 20 + 5)·4 = 196; written 120
    assert numbers(work("aten::linear", [[2, 3, 4], [5, 4], [5]], [FP32] * 3)) == (270, 196, 120)


def test_scaled_mm_fp8_to_bf16() -> None:
    # A [16, 32], B [32, 8] fp8, per-tensor float scales (0-dim): 2·16·8·32 = 8192 FLOPs;
    # read 512 + 256 + 4 + 4 = 776; written 16·8 at out_dtype 15 (bf16) = 256
    result = work("aten::_scaled_mm", [[16, 32], [32, 8], [], [], [], [], [], []],
                  ["c10::Float8_e4m3fn", "c10::Float8_e4m3fn", FP32, FP32, "", "", "Scalar", "Scalar"],
                  ["", "", "", "", "", "", "15", "False"])
    assert numbers(result) == (8192, 776, 256)
    assert (result.dtype, result.matrix, result.model) == ("fp8", True, "scaled GEMM")


# ------------------------------------------------------------------------------------- convolutions

CONV_TYPES = [BF16, BF16, BF16, "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]


def test_convolution_with_stride_padding_groups_and_bias() -> None:
    # x [2, 8, 10, 10], W [16, 4, 3, 3] (groups 2), stride 2, padding 1: out side (10 + 2 - 2 - 1)//2 + 1 = 5,
    # out [2, 16, 5, 5] = 800; FLOPs 2·800·(4·9) + 800 (bias) = 58400;
    # read (1600 + 576 + 16)·2 = 4384; written 800·2 = 1600
    result = work("aten::convolution", [[2, 8, 10, 10], [16, 4, 3, 3], [16], [], [], [], [], [], []], CONV_TYPES,
                  ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2"])
    assert numbers(result) == (58400, 4384, 1600)
    assert (result.matrix, result.model) == (True, "conv fwd")


def test_transposed_convolution() -> None:
    # conv_transpose2d x [1, 4, 3, 3], W [4, 2, 3, 3], stride 2: out side (3 - 1)·2 + 2 + 1 = 7, out [1, 2, 7, 7];
    # FLOPs 2·numel(x)·prod(W[1:]) = 2·36·18 = 1296; read (36 + 72)·4 = 432; written 98·4 = 392
    result = work("aten::conv_transpose2d", [[1, 4, 3, 3], [4, 2, 3, 3], [], [], [], [], [], []],
                  [FP32, FP32, "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList"],
                  ["", "", "", "[2, 2]", "[0, 0]", "[0, 0]", "1", "[1, 1]"])
    assert numbers(result) == (1296, 432, 392)


def conv_backward(mask: str) -> Estimate:
    return work("aten::convolution_backward",
                [[2, 16, 5, 5], [2, 8, 10, 10], [16, 4, 3, 3], [], [], [], [], [], [], [], []],
                [BF16] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"],
                ["", "", "", "[16]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2", mask])


def test_convolution_backward_follows_output_mask() -> None:
    # dy [2, 16, 5, 5] (800), F = 2·800·36 = 57600. All three: 2F + 800 = 116000 FLOPs;
    # read 3·dy (4800) + W (1152) + x (3200) = 9152; written dx 3200 + dW 1152 + db 32 = 4384
    assert numbers(conv_backward("[True, True, True]")) == (116000, 9152, 4384)
    # weight gradient only: F; read dy + x = 1600 + 3200; written dW = 1152
    assert numbers(conv_backward("[False, True, False]")) == (57600, 4800, 1152)


def test_convolution_needs_its_scalar_arguments() -> None:
    result = estimate(TorchCall("aten::convolution", [[2, 8, 10, 10], [16, 4, 3, 3], [], [], [], [], [], [], []]))
    assert result == "aten::convolution: transposed not recorded (no Concrete Inputs)"


# ---------------------------------------------------------------------------------------- attention

SDPA_TYPES = [BF16, BF16, BF16, "", "Scalar", "Scalar", "", "Scalar"]


def sdpa(causal: str) -> Estimate:
    """GQA: q [2, 8, 16, 64], k/v [2, 2, 32, 64] (kv length 32 != q length 16)."""
    return work("aten::scaled_dot_product_attention", [[2, 8, 16, 64], [2, 2, 32, 64], [2, 2, 32, 64], [], [], [],
                                                       [], []], SDPA_TYPES, ["", "", "", "", "0.", causal, "", "True"])


def test_attention_gqa_with_a_longer_kv() -> None:
    # pairs 2·16·32 = 1024 per head: 8 heads · 1024 · 2·(64 + 64) = 2097152 FLOPs;
    # read q 16384 + k, v 2·2·32·128 = 16384 elements, ·2 = 65536; written O 16384·2 = 32768
    result = sdpa("False")
    assert numbers(result) == (2097152, 65536, 32768)
    assert (result.dtype, result.matrix, result.model) == ("bf16", True, "SDPA fwd")


def test_causal_attention_alignment() -> None:
    # PyTorch's is_causal is aligned top-left: each batch keeps 16²/2 = 128 of the 16×32 pairs:
    # 8 · 2·128 · 256 = 524288 FLOPs (bytes unchanged)
    assert numbers(sdpa("True")) == (524288, 65536, 32768)
    # flash-attn aligns bottom-right ([B, N, H, d] layout): 16·32 - 16²/2 = 384 pairs per batch:
    # 8 · 2·384 · 256 = 1572864 FLOPs
    flash = work("flash_attn::_flash_attn_forward", [[2, 16, 8, 64], [2, 32, 2, 64], [2, 32, 2, 64]] + [[]] * 8,
                 [BF16] * 3 + ["Scalar"] * 8, ["", "", "", "0.", "0.125", "True", "-1", "-1", "0.", "", "False"])
    assert flash.flops == 1572864
    # a square causal mask halves the FLOPs: B 1, H 1, N 16, d 8: 16²/2 · 2·16 = 4096 (8192 without the mask)
    square = work("aten::_scaled_dot_product_flash_attention", [[1, 1, 16, 8]] * 3 + [[]] * 4,
                  [BF16] * 3 + ["Scalar"] * 4, ["", "", "", "0.", "True", "False", "0.35"])
    assert square.flops == 4096


def test_attention_backward_with_gqa() -> None:
    # q/dO/O [1, 2, 16, 8], k/v [1, 1, 16, 8]: 2 heads · 256 pairs · 2·(3·8 + 2·8) = 40960, + the sums of dK, dV over
    # the 2 heads of the group: 16 tokens · 1 head · 16 · 1 = 256 -> 41216 FLOPs;
    # read q 256 + k, v 256 + O, dO 512 elements ·2 = 2048; written dq, dk, dv 512·2 = 1024
    result = work("aten::_scaled_dot_product_flash_attention_backward",
                  [[1, 2, 16, 8], [1, 2, 16, 8], [1, 1, 16, 8], [1, 1, 16, 8], [1, 2, 16, 8], [1, 2, 16]] + [[]] * 8,
                  [BF16] * 5 + [FP32, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "long int", "long int"],
                  [""] * 8 + ["16", "16", "0.", "False", "", ""])
    assert numbers(result) == (41216, 2048, 1024)
    assert result.model == "SDPA bwd"


def test_variable_length_attention() -> None:
    # 10 tokens in 2 sequences, max 6: one of 6 and one of 4: 36 + 16 = 52 pairs; 2 heads · 52 · 2·16 = 3328 FLOPs
    result = work("flash_attn::_flash_attn_varlen_forward", [[10, 2, 8]] * 3 + [[3], [3]] + [[]] * 5,
                  [BF16] * 3 + ["int", "int"] + ["Scalar"] * 5, ["", "", "", "", "", "6", "6", "0.", "0.35", "False"])
    assert result.flops == 3328


def test_attention_without_is_causal_says_so() -> None:
    assert estimate(TorchCall("aten::_scaled_dot_product_flash_attention", [[1, 1, 16, 8]] * 3)) == (
        "aten::_scaled_dot_product_flash_attention: is_causal not recorded (no Concrete Inputs)")


# --------------------------------------------------------------------------------------- elementwise


def test_binary_broadcasting() -> None:
    # [4, 1, 3] · [2, 1] -> [4, 2, 3]: 24 FLOPs; read (12 + 2)·4 = 56; written 24·4 = 96
    result = work("aten::mul", [[4, 1, 3], [2, 1]], [FP32, FP32])
    assert numbers(result) == (24, 56, 96)
    assert (result.matrix, result.model) == (False, "binary elementwise")


def test_binary_scalar_operand_and_promotion() -> None:
    # a 'Scalar' second operand is one 4-byte element: read 10·2 + 4 = 24; written 10·2
    assert numbers(work("aten::add", [[10], [], []], [FP16, "Scalar", "Scalar"], ["", "2", "1"])) == (10, 24, 20)
    # bf16 + fp32 promotes to fp32 (written 4·4), but in place the result keeps self's bf16 (written 4·2)
    assert numbers(work("aten::add", [[4], [4], []], [BF16, FP32, "Scalar"])) == (4, 24, 16)
    assert numbers(work("aten::add_", [[4], [4], []], [BF16, FP32, "Scalar"])) == (4, 24, 8)
    # the shapes must broadcast
    assert estimate(TorchCall("aten::mul", [[4, 3], [2]], [FP32, FP32])) == (
        "aten::mul: shapes [4, 3] and [2] do not broadcast")


def test_unary_copy_and_cast() -> None:
    # silu fp16 [6]: 6 FLOPs; read 12; written 12
    assert numbers(work("aten::silu", [[6]], [FP16])) == (6, 12, 12)
    # copy_ of a bf16 [4, 5] source into an fp32 destination: 20 conversions; read 20·2; written 20·4
    copied = work("aten::copy_", [[4, 5], [4, 5], []], [FP32, BF16, "Scalar"], ["", "", "False"])
    assert (numbers(copied), copied.model) == ((20, 40, 80), "copy/cast")
    # _to_copy fp32 [3, 4] to dtype 15 (bf16): read 48; written 24
    assert numbers(work("aten::_to_copy", [[3, 4], [], [], [], [], [], []], [FP32] + ["Scalar"] * 6,
                        ["", "15", "", "", "", "False", ""])) == (12, 48, 24)


def test_silu_and_mul() -> None:
    # out [2, 8], x [2, 16] bf16: 5·16 = 80 FLOPs; read 32·2 = 64; written 16·2 = 32
    assert numbers(work("sgl_kernel::silu_and_mul", [[2, 8], [2, 16]], [BF16, BF16])) == (80, 64, 32)


# -------------------------------------------------------------------- reductions, norms, softmax, embedding


def test_reductions() -> None:
    # sum of [4, 6] fp32 over dim 1: 24 FLOPs; read 96; written 4·4
    assert numbers(work("aten::sum", [[4, 6], [], [], []], [FP32, "ScalarList", "Scalar", ""],
                        ["", "[1]", "False", ""])) == (24, 96, 16)
    # max over a dim also writes int64 indices: 4·(4 + 8) = 48; a full max writes one element
    assert work("aten::max", [[4, 6], [], []], [FP32, "Scalar", "Scalar"], ["", "1", "False"]).written == 48
    assert work("aten::max", [[4, 6]], [FP32], [""]).written == 4
    # cumsum keeps every element: [5] int32 -> written 20
    assert work("aten::cumsum", [[5], [], []], ["int", "Scalar", ""], ["", "0", ""]).written == 20
    # a dim that was passed but not recorded (emit_nvtx) gives no estimate
    assert estimate(TorchCall("aten::sum", [[4, 6], [], [], []])) == (
        "aten::sum: dim not recorded (no Concrete Inputs)")


def test_normalisations() -> None:
    # layer_norm [2, 4] fp32 over [4]: n 8, C 4: FLOPs 2·8 + 3·8 + 6·4 = 64;
    # read 8·4 + 4·(2 + weight + bias)·4 = 96; written 8·4 + 2·4·4 = 64
    layer = work("aten::layer_norm", [[2, 4], [], [4], [4], [], []], [FP32, "ScalarList", FP32, FP32, "Scalar", "Scalar"],
                 ["", "[4]", "", "", "1e-05", "True"])
    assert (numbers(layer), layer.model) == ((64, 96, 64), "normalisation fwd")
    # batch norm in eval mode, [2, 3, 4] (C 3): FLOPs 2·24 + 6·3 = 66; read 96 + 4·3·4 = 144; written 96
    assert numbers(work("aten::native_batch_norm", [[2, 3, 4], [3], [3], [3], [3], [], [], []],
                        [FP32] * 5 + ["Scalar"] * 3, ["", "", "", "", "", "False", "0.1", "1e-05"])) == (66, 144, 96)
    # rms_norm [2, 4] bf16: 2 rows·(2·4 + 2) + 8·2 = 36 FLOPs; read 16 + 8 = 24; written 16
    assert numbers(work("aten::rms_norm", [[2, 4], [], [4], []], [BF16, "ScalarList", BF16, "Scalar"],
                        ["", "[4]", "", "1e-06"])) == (36, 24, 16)


def test_softmax_and_embedding() -> None:
    # _softmax of fp16 [2, 5] with half_to_float: 5·10 = 50 FLOPs; read 20; written 10·4 = 40
    assert numbers(work("aten::_softmax", [[2, 5], [], []], [FP16, "Scalar", "Scalar"], ["", "-1", "True"])) == (
        50, 20, 40)
    # embedding of a [100, 8] fp32 table by [3, 4] int64 indices: 12 rows·8·4 = 384 read and written, + 96 of indices
    assert numbers(work("aten::embedding", [[100, 8], [3, 4], [], [], []], [FP32, "long int", "Scalar", "Scalar",
                                                                            "Scalar"])) == (0, 480, 384)


# ---------------------------------------------------------------------------------------- no model

ODD_DIMS = ([], [[8, -4], [4, 2]], "[[8, 4]]", [[8, 4]], [[8.5, 4], [4, 2]], [None, None, None],
            [[True, 4], [4, 2]], [[[1, 2], [3]], [4]], [[2, 3, 4, 5]] * 12, [[]] * 12, [[0, 0, 0, 0]] * 12)


def test_reasons_for_no_estimate() -> None:
    assert estimate(TorchCall("aten::foo", [[1]])) == "no model for aten::foo"
    assert estimate(TorchCall("aten::mm", [[8, 4]], [BF16])) == "aten::mm: input 1 is not a tensor"
    assert estimate(TorchCall("aten::mm", [[8, 4], [5, 2]], [BF16, BF16])) == "aten::mm: inner dimensions differ: 4 != 5"
    assert estimate(TorchCall("aten::mm", [[8, -4], [4, 2]])) == "aten::mm: input 0 is not a tensor"
    assert estimate(TorchCall("aten::mm", [[8, 4], [4, 2]], fallback_dtype="fp7")) == (
        "aten::mm: unknown fallback data type 'fp7'")


@pytest.mark.parametrize("op", sorted(MODELS))
def test_odd_inputs_never_raise(op: str) -> None:
    for dims in ODD_DIMS:
        for types in (None, ["Scalar"] * 12, [BF16] * 12, "bf16"):
            for concrete in (None, [""] * 12, ["[1]"] * 12, ["-3"] * 12, [")("] * 12):
                result = estimate(TorchCall(op, dims, types, None, concrete))  # type: ignore[arg-type]
                if isinstance(result, Estimate):
                    assert all(math.isfinite(value) and value >= 0 for value in numbers(result)), (dims, result)
                else:
                    assert isinstance(result, str) and result.startswith(op) and "\n" not in result

