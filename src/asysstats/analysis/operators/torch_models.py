"""FLOPs and bytes moved of one PyTorch operator call, from the shapes the profiler recorded.

A model is a small function of the call's inputs (Kineto ``Input Dims``/``Input type``/``Concrete
Inputs``, or the ``sizes`` of an ``emit_nvtx`` range); :data:`MODELS` maps operator names to them.
The definitions follow TraceLens's perf models where TraceLens has one (so that our numbers equal its
``GFLOPS`` and ``Data Moved`` columns), and differ where TraceLens is wrong; docs/operators.md lists both.
Bytes are split into read and written, so that load and store utilisation can be told apart.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple, TypeGuard


@dataclass(frozen=True)
class TorchCall:
    """What the profiler recorded of one PyTorch operator call."""

    op: str
    dims: list
    types: list[str] | None = None
    strides: list | None = None
    concrete: list[str] | None = None
    fallback_dtype: str = "fp32"


@dataclass(frozen=True)
class Estimate:
    """The work of one call: FLOPs, bytes read and written, and the peak that applies."""

    flops: float
    read: float
    written: float
    dtype: str
    matrix: bool
    model: str


class ModelError(ValueError):
    """The call's inputs do not fit the model; the message is the reason given to the user."""


class DType(NamedTuple):
    name: str
    size: int


# Kineto "Input type" (c10 type names) -> our data type name and its element size in bytes.
TORCH_DTYPES: dict[str, DType] = {
    "c10::bfloat16": DType("bf16", 2),
    "c10::half": DType("fp16", 2),
    "float": DType("fp32", 4),
    "double": DType("fp64", 8),
    "c10::float8_e4m3fn": DType("fp8", 1),
    "c10::float8_e4m3fnuz": DType("fp8", 1),
    "c10::float8_e5m2": DType("fp8", 1),
    "c10::float8_e5m2fnuz": DType("fp8", 1),
    "c10::float8_e8m0fnu": DType("fp8", 1),
    "c10::float4_e2m1fn_x2": DType("fp4", 1),  # two fp4 values per byte; shapes count the bytes
    "signed char": DType("int8", 1),
    "unsigned char": DType("uint8", 1),
    "bool": DType("bool", 1),
    "short int": DType("int16", 2),
    "int": DType("int32", 4),
    "long int": DType("int64", 8),
    "c10::complex<c10::half>": DType("complex32", 4),
    "c10::complex<float>": DType("complex64", 8),
    "c10::complex<double>": DType("complex128", 16),
}
DTYPE_SIZES: dict[str, int] = {dtype.name: dtype.size for dtype in TORCH_DTYPES.values()}
SCALAR = DType("fp32", 4)  # a 'Scalar' operand of a binary op is counted as one 4-byte element (as TraceLens)
INDEX = DType("int64", 8)  # indices written by max/min over a dim, argmax, ...
# c10::ScalarType codes, as Concrete Inputs record a dtype argument.
SCALAR_TYPE_CODES: dict[int, str] = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "fp16",
                                     6: "fp32", 7: "fp64", 8: "complex32", 9: "complex64", 10: "complex128",
                                     11: "bool", 15: "bf16", 23: "fp8", 24: "fp8", 25: "fp8", 26: "fp8"}


def literal(text: object) -> object:
    """A Concrete Inputs entry as a Python value ('1' -> 1, '[1, 1]' -> [1, 1], 'same' -> 'same');
    None when nothing was recorded."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape)


class CallInputs:
    """Checked access to one call's inputs; every malformed or missing entry raises ModelError."""

    def __init__(self, call: TorchCall) -> None:
        if not isinstance(call.dims, list):
            raise ModelError("dims is not a list")
        self.dims = call.dims
        types = call.types if isinstance(call.types, list) else None
        self.types = types if types and any(known_dtype(entry) for entry in types) else None
        self.concrete = call.concrete if isinstance(call.concrete, list) else None
        size = DTYPE_SIZES.get(call.fallback_dtype) if isinstance(call.fallback_dtype, str) else None
        if size is None:
            raise ModelError(f"unknown fallback data type {call.fallback_dtype!r}")
        self.fallback = DType(call.fallback_dtype, size)

    def is_tensor(self, index: int) -> bool:
        """Whether input ``index`` is a tensor: its recorded type is a data type, or (types not
        recorded) its dims are a non-empty shape."""
        if index >= len(self.dims):
            return False
        if self.types is not None:
            return index < len(self.types) and known_dtype(self.types[index])
        return is_shape(self.dims[index]) and len(self.dims[index]) > 0

    def shape(self, index: int) -> tuple[int, ...]:
        """The shape of tensor input ``index``."""
        if not self.is_tensor(index):
            raise ModelError(f"input {index} is not a tensor")
        entry = self.dims[index]
        if not is_shape(entry):
            raise ModelError(f"input {index} has no valid shape: {entry!r}")
        return tuple(entry)

    def shape_of_rank(self, index: int, rank: int) -> tuple[int, ...]:
        shape = self.shape(index)
        if len(shape) != rank:
            raise ModelError(f"input {index} has {len(shape)} dims, {rank} expected")
        return shape

    def optional_shape(self, index: int) -> tuple[int, ...] | None:
        return self.shape(index) if self.is_tensor(index) else None

    def dtype(self, index: int) -> DType:
        """The data type of input ``index``: its recorded type, or the fallback when types are not recorded."""
        if self.types is None:
            return self.fallback
        entry = self.types[index] if index < len(self.types) else ""
        if isinstance(entry, str) and entry.lower() in TORCH_DTYPES:
            return TORCH_DTYPES[entry.lower()]
        if entry == "Scalar":
            return SCALAR
        raise ModelError(f"input {index} has no known data type ({entry!r})")

    def value(self, index: int) -> object:
        """The recorded value of scalar input ``index`` (None: not recorded)."""
        if self.concrete is None or index >= len(self.concrete):
            return None
        return literal(self.concrete[index])

    def required_value(self, index: int, what: str) -> object:
        if self.concrete is None:
            raise ModelError(f"{what} not recorded (no Concrete Inputs)")
        return self.value(index)

    def flag(self, index: int, what: str) -> bool:
        value = self.required_value(index, what)
        if not isinstance(value, bool):
            raise ModelError(f"{what} is not a bool: {value!r}")
        return value

    def dtype_argument(self, index: int, default: DType) -> DType:
        """A dtype argument (a c10::ScalarType code), or ``default`` when absent."""
        code = self.value(index)
        if isinstance(code, int) and not isinstance(code, bool) and code in SCALAR_TYPE_CODES:
            name = SCALAR_TYPE_CODES[code]
            return DType(name, DTYPE_SIZES[name])
        return default


def known_dtype(entry: object) -> bool:
    return isinstance(entry, str) and entry.lower() in TORCH_DTYPES


def is_shape(entry: object) -> TypeGuard[list[int]]:
    return isinstance(entry, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in entry)


def int_list(value: object, ndims: int, what: str) -> tuple[int, ...]:
    """A per-spatial-dim argument ('[1, 1]', or one value for all dims)."""
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
        raise ModelError(f"{what} is not a list of non-negative ints: {value!r}")
    if len(values) == 1:
        return tuple(values) * ndims
    if len(values) != ndims:
        raise ModelError(f"{what} has {len(values)} values for {ndims} spatial dims")
    return tuple(values)


def tensor_bytes(args: CallInputs, index: int | None) -> int:
    """The bytes of optional tensor input ``index`` (0 when absent)."""
    if index is None or not args.is_tensor(index):
        return 0
    return numel(args.shape(index)) * args.dtype(index).size


def estimate_of(flops: float, read: float, written: float, dtype: DType, matrix: bool, model: str) -> Estimate:
    return Estimate(float(flops), float(read), float(written), dtype.name, matrix, model)


# ---------------------------------------------------------------------------------------------- GEMM


def gemm_estimate(batch: int, m: int, n: int, k: int, read_bytes: float, out: DType, dtype: DType,
                  bias_elems: int = 0, model: str = "GEMM") -> Estimate:
    """Common end of the GEMM models: 2·B·M·N·K FLOPs (+ B·M·N for a bias), B·M·N outputs written."""
    flops = 2 * batch * m * n * k + (batch * m * n if bias_elems else 0)
    return estimate_of(flops, read_bytes, batch * m * n * out.size, dtype, True, model)


def inner_dims_match(k_a: int, k_b: int) -> None:
    if k_a != k_b:
        raise ModelError(f"inner dimensions differ: {k_a} != {k_b}")


def mm(args: CallInputs) -> Estimate:
    """A[M,K]·B[K,N]: FLOPs 2MNK; read MK·sA + KN·sB; written MN·sA (an out= third input is not read)."""
    (m, k), (k_b, n) = args.shape_of_rank(0, 2), args.shape_of_rank(1, 2)
    inner_dims_match(k, k_b)
    a, b = args.dtype(0), args.dtype(1)
    return gemm_estimate(1, m, n, k, m * k * a.size + k * n * b.size, a, a)


def addmm(args: CallInputs) -> Estimate:
    """bias + A[M,K]·B[K,N]: FLOPs 2MNK + MN; read bias + MK·sA + KN·sB (the bias as recorded, usually [N]);
    written MN·sA."""
    bias = args.shape(0)
    (m, k), (k_b, n) = args.shape_of_rank(1, 2), args.shape_of_rank(2, 2)
    inner_dims_match(k, k_b)
    a, b = args.dtype(1), args.dtype(2)
    read = numel(bias) * args.dtype(0).size + m * k * a.size + k * n * b.size
    return gemm_estimate(1, m, n, k, read, a, a, bias_elems=numel(bias))


def bmm(args: CallInputs) -> Estimate:
    """A[B,M,K]·B[B,K,N]: FLOPs 2·B·MNK; read B·(MK·sA + KN·sB); written B·MN·sA."""
    (batch, m, k), (batch_b, k_b, n) = args.shape_of_rank(0, 3), args.shape_of_rank(1, 3)
    inner_dims_match(k, k_b)
    if batch != batch_b:
        raise ModelError(f"batch sizes differ: {batch} != {batch_b}")
    a, b = args.dtype(0), args.dtype(1)
    return gemm_estimate(batch, m, n, k, batch * (m * k * a.size + k * n * b.size), a, a)


def baddbmm(args: CallInputs) -> Estimate:
    """bias + A[B,M,K]·B[B,K,N]: FLOPs B·(2MNK + MN); read bias + B·(MK·sA + KN·sB); written B·MN·sA."""
    bias = args.shape(0)
    (batch, m, k), (batch_b, k_b, n) = args.shape_of_rank(1, 3), args.shape_of_rank(2, 3)
    inner_dims_match(k, k_b)
    if batch != batch_b:
        raise ModelError(f"batch sizes differ: {batch} != {batch_b}")
    a, b = args.dtype(1), args.dtype(2)
    read = numel(bias) * args.dtype(0).size + batch * (m * k * a.size + k * n * b.size)
    return gemm_estimate(batch, m, n, k, read, a, a, bias_elems=numel(bias))


def broadcast(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast shape of two shapes (NumPy/PyTorch rules)."""
    rank = max(len(first), len(second))
    padded = ((1,) * (rank - len(first)) + first, (1,) * (rank - len(second)) + second)
    result = []
    for size_a, size_b in zip(*padded):
        if size_a != size_b and 1 not in (size_a, size_b):
            raise ModelError(f"shapes {list(first)} and {list(second)} do not broadcast")
        result.append(size_b if size_a == 1 else size_a)
    return tuple(result)


def matmul(args: CallInputs) -> Estimate:
    """torch.matmul: 1-D operands are promoted to [1,K] / [K,1]; the batch dims broadcast.
    FLOPs 2·batch·MNK; read both operands as recorded; written batch·MN·sA."""
    first, second = args.shape(0), args.shape(1)
    if not first or not second:
        raise ModelError("matmul of a 0-dim tensor")
    left = first if len(first) > 1 else (1,) + first
    right = second if len(second) > 1 else second + (1,)
    inner_dims_match(left[-1], right[-2])
    batch = numel(broadcast(left[:-2], right[:-2]))
    a, b = args.dtype(0), args.dtype(1)
    m, k, n = left[-2], left[-1], right[-1]
    return gemm_estimate(batch, m, n, k, numel(first) * a.size + numel(second) * b.size, a, a)


def linear(args: CallInputs) -> Estimate:
    """x[..., K]·W[N,K]ᵀ (+ bias[N]): M = the product of x's leading dims; FLOPs 2MNK (+ MN);
    read x + W (+ bias); written MN·sx."""
    x, (n, k) = args.shape(0), args.shape_of_rank(1, 2)
    if not x:
        raise ModelError("linear of a 0-dim tensor")
    inner_dims_match(x[-1], k)
    m = numel(x[:-1])
    bias = args.optional_shape(2)
    a = args.dtype(0)
    read = m * k * a.size + n * k * args.dtype(1).size + tensor_bytes(args, 2)
    return gemm_estimate(1, m, n, k, read, a, a, bias_elems=numel(bias) if bias else 0)


def scaled_mm(args: CallInputs) -> Estimate:
    """_scaled_mm(A[M,K], B[K,N], scale_a, scale_b, bias, scale_result, out_dtype): FLOPs 2MNK (+ MN with a
    bias); read A, B, the scales and the bias; written MN at out_dtype (default: A's type)."""
    (m, k), (k_b, n) = args.shape_of_rank(0, 2), args.shape_of_rank(1, 2)
    inner_dims_match(k, k_b)
    a = args.dtype(0)
    read = m * k * a.size + k * n * args.dtype(1).size + sum(tensor_bytes(args, index) for index in (2, 3, 4, 5))
    bias = args.optional_shape(4)
    out = args.dtype_argument(6, a)
    return gemm_estimate(1, m, n, k, read, out, a, bias_elems=numel(bias) if bias is not None else 0,
                         model="scaled GEMM")


def weight_transposed_gemm(args: CallInputs) -> Estimate:
    """x[M,K]·W[N,K]ᵀ (aiter::gemm_a16w16, optional bias at input 2): FLOPs 2MNK (+ MN);
    read x + W (+ bias); written MN·sx."""
    (m, k), (n, k_w) = args.shape_of_rank(0, 2), args.shape_of_rank(1, 2)
    inner_dims_match(k, k_w)
    bias = args.optional_shape(2)
    a = args.dtype(0)
    read = m * k * a.size + n * k * args.dtype(1).size + tensor_bytes(args, 2)
    return gemm_estimate(1, m, n, k, read, a, a, bias_elems=numel(bias) if bias else 0)


# --------------------------------------------------------------------------------------- convolution


@dataclass(frozen=True)
class ConvArgs:
    """Where a convolution operator keeps its arguments (input 0 and weight 1 in all of them)."""

    bias: int | None
    stride: int
    padding: int
    dilation: int
    groups: int
    transposed: int | None = None  # index of the `transposed` flag
    output_padding: int | None = None
    always_transposed: bool = False  # conv_transpose*d


def conv_output_shape(x: tuple[int, ...], w: tuple[int, ...], args: CallInputs, layout: ConvArgs,
                      transposed: bool) -> tuple[int, ...]:
    """The output shape [N, C_out, spatial...] from input, weight, stride, padding, dilation (and output_padding)."""
    ndims = len(x) - 2
    if ndims < 1 or len(w) != len(x):
        raise ModelError(f"input {list(x)} and weight {list(w)} are not an N-d convolution")
    stride = int_list(args.required_value(layout.stride, "stride"), ndims, "stride")
    dilation = int_list(args.required_value(layout.dilation, "dilation"), ndims, "dilation")
    padding_value = args.required_value(layout.padding, "padding")
    groups = args.required_value(layout.groups, "groups")
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ModelError(f"groups is not a positive int: {groups!r}")
    kernel = w[2:]
    if padding_value == "same":
        spatial = x[2:]
    else:
        padding = (0,) * ndims if padding_value == "valid" else int_list(padding_value, ndims, "padding")
        if transposed:
            out_pad_value = args.value(layout.output_padding) if layout.output_padding is not None else 0
            out_pad = int_list(out_pad_value or 0, ndims, "output_padding")
            spatial = tuple((size - 1) * s - 2 * p + d * (k - 1) + o + 1
                            for size, k, s, p, d, o in zip(x[2:], kernel, stride, padding, dilation, out_pad))
        else:
            spatial = tuple((size + 2 * p - d * (k - 1) - 1) // max(s, 1) + 1
                            for size, k, s, p, d in zip(x[2:], kernel, stride, padding, dilation))
    if any(size <= 0 for size in spatial):
        raise ModelError(f"empty convolution output {list(spatial)}")
    channels = w[1] * groups if transposed else w[0]
    return (x[0], channels) + spatial


def conv_flops(x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...], transposed: bool) -> int:
    """2 FLOPs per multiply-add: each output element (each input element for a transposed conv) meets
    prod(w[1:]) weights."""
    return 2 * numel(x if transposed else out) * numel(w[1:])


def convolution(layout: ConvArgs, args: CallInputs) -> Estimate:
    """Convolution forward (any N-d, groups, stride, padding, dilation, transposed):
    FLOPs 2·numel(out)·prod(W[1:]) (transposed: 2·numel(x)·prod(W[1:])) + numel(out) with a bias;
    read x + W + bias; written out, at x's element size."""
    x, w = args.shape(0), args.shape(1)
    transposed = layout.always_transposed or (
        layout.transposed is not None and args.flag(layout.transposed, "transposed"))
    out = conv_output_shape(x, w, args, layout, transposed)
    has_bias = layout.bias is not None and args.is_tensor(layout.bias)
    dtype = args.dtype(0)
    flops = conv_flops(x, w, out, transposed) + (numel(out) if has_bias else 0)
    read = numel(x) * dtype.size + numel(w) * args.dtype(1).size + tensor_bytes(args, layout.bias)
    return estimate_of(flops, read, numel(out) * dtype.size, dtype, True, "conv fwd")


def convolution_backward(args: CallInputs) -> Estimate:
    """convolution_backward(dy, x, W, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
    output_mask): per gradient that output_mask asks for, F = the forward FLOPs (dy gives the output shape):
    dx: F FLOPs, read dy + W, written dx; dW: F FLOPs, read dy + x, written dW;
    dbias: numel(dy) FLOPs, read dy, written C_out."""
    grad, x, w = args.shape(0), args.shape(1), args.shape(2)
    if len(grad) != len(x) or len(w) != len(x) or len(x) < 3:
        raise ModelError(f"shapes {list(grad)}, {list(x)}, {list(w)} are not an N-d convolution")
    transposed = args.flag(7, "transposed")
    mask = args.required_value(10, "output_mask")
    if not (isinstance(mask, list) and len(mask) == 3 and all(isinstance(item, bool) for item in mask)):
        raise ModelError(f"output_mask is not 3 bools: {mask!r}")
    grad_input, grad_weight, grad_bias = mask
    size_dy, size_x, size_w = args.dtype(0).size, args.dtype(1).size, args.dtype(2).size
    forward_flops = conv_flops(x, w, grad, transposed)
    flops = forward_flops * (grad_input + grad_weight) + (numel(grad) if grad_bias else 0)
    dy_bytes = numel(grad) * size_dy
    read = (grad_input + grad_weight + grad_bias) * dy_bytes
    read += grad_input * numel(w) * size_w + grad_weight * numel(x) * size_x
    written = grad_input * numel(x) * size_x + grad_weight * numel(w) * size_w + grad_bias * grad[1] * size_dy
    return estimate_of(flops, read, written, args.dtype(1), True, "conv bwd")


# ----------------------------------------------------------------------------------------- attention


@dataclass(frozen=True)
class AttentionArgs:
    """Where an attention operator keeps its arguments; k and v follow q."""

    heads_first: bool  # q is [B, H, N, d] (True) or [B, N, H, d] (False)
    query: int
    causal: int | None  # index of is_causal
    top_left: bool  # causal mask aligned to the top-left corner (PyTorch) or the bottom-right (flash-attn)
    backward: bool = False  # grad_output is input 0
    out: int | None = None  # backward: the forward output
    bias: int | None = None  # attn_mask / attn_bias
    mask_type: int | None = None  # efficient attention's custom_mask_type (1: top-left, 2: bottom-right causal)
    seqlens: int | None = None  # cu_seqlens_q (cu_seqlens_k follows) of a variable-length batch
    max_seqlen: int | None = None  # max_seqlen_q (max_seqlen_k follows)


def causal_pairs(n_q: float, n_kv: float, causal: bool, top_left: bool) -> float:
    """Area of the unmasked part of the n_q × n_kv score matrix: n_q·n_kv, or under a causal mask the area
    under the diagonal from its aligned corner (n²/2 for a square, as TraceLens and flash-attn count)."""
    if not causal:
        return n_q * n_kv
    short, long = min(n_q, n_kv), max(n_q, n_kv)
    keeps_rectangle = (n_q > n_kv) if top_left else (n_q <= n_kv)
    return short * long - short * short / 2 if keeps_rectangle else short * short / 2


def attention_causality(args: CallInputs, layout: AttentionArgs) -> tuple[bool, bool]:
    """(causal, top_left) of the call."""
    if layout.mask_type is not None:
        mask_type = args.required_value(layout.mask_type, "custom_mask_type")
        if mask_type not in (0, 1, 2):
            raise ModelError(f"unknown custom_mask_type {mask_type!r}")
        return mask_type != 0, mask_type == 1
    if layout.causal is None:
        return False, layout.top_left
    return args.flag(layout.causal, "is_causal"), layout.top_left


def heads_and_length(shape: tuple[int, ...], heads_first: bool) -> tuple[int, int, int, int]:
    """(batch, heads, length, head dim) of a 4-d q/k/v shape."""
    if len(shape) != 4:
        raise ModelError(f"attention input {list(shape)} is not 4-d")
    batch, second, third, head_dim = shape
    return (batch, second, third, head_dim) if heads_first else (batch, third, second, head_dim)


def sequence_groups(args: CallInputs, layout: AttentionArgs, q: tuple[int, ...], k: tuple[int, ...]
                    ) -> tuple[list[tuple[float, float, int]], int, int, int, int, int, int]:
    """The batch as (n_q, n_kv, count) groups, and (tokens_q, tokens_kv, H_Q, H_KV, d_qk, d_v) of q/k/v.
    A variable-length batch (q of [T, H, d] with cu_seqlens) is one sequence of max_seqlen and the rest of
    equal length (the lengths themselves are not recorded)."""
    v = args.shape(layout.query + 2)
    if layout.seqlens is not None and args.is_tensor(layout.seqlens) and len(q) == 3:
        if len(k) != 3 or len(v) != 3:
            raise ModelError("variable-length attention inputs are not all [T, H, d]")
        count = numel(args.shape(layout.seqlens)) - 1
        if count < 1:
            raise ModelError("cu_seqlens holds no sequence")
        groups = varlen_groups(args, layout, q[0], k[0], count)
        return groups, q[0], k[0], q[1], k[1], q[2], v[2]
    batch, heads_q, n_q, d_qk = heads_and_length(q, layout.heads_first)
    batch_k, heads_kv, n_kv, d_k = heads_and_length(k, layout.heads_first)
    batch_v, heads_v, n_v, d_v = heads_and_length(v, layout.heads_first)
    if (batch_k, batch_v) != (batch, batch) or heads_v != heads_kv or n_v != n_kv or d_k != d_qk:
        raise ModelError(f"q {list(q)}, k {list(k)}, v {list(v)} do not fit together")
    return [(n_q, n_kv, batch)], batch * n_q, batch * n_kv, heads_q, heads_kv, d_qk, d_v


def varlen_groups(args: CallInputs, layout: AttentionArgs, tokens_q: int, tokens_kv: int, count: int
                  ) -> list[tuple[float, float, int]]:
    max_q = args.value(layout.max_seqlen) if layout.max_seqlen is not None else None
    max_kv = args.value(layout.max_seqlen + 1) if layout.max_seqlen is not None else None
    if count == 1 or not isinstance(max_q, int) or not isinstance(max_kv, int):
        return [(tokens_q / count, tokens_kv / count, count)]
    if not (0 < max_q <= tokens_q and 0 < max_kv <= tokens_kv):
        raise ModelError(f"max_seqlen {max_q}/{max_kv} do not fit {tokens_q}/{tokens_kv} tokens")
    return [(max_q, max_kv, 1), ((tokens_q - max_q) / (count - 1), (tokens_kv - max_kv) / (count - 1), count - 1)]


def attention(layout: AttentionArgs, args: CallInputs) -> Estimate:
    """Scaled-dot-product attention, per query head and unmasked (q, k) pair P (see causal_pairs; GQA: H_KV
    heads of k/v shared by H_Q query heads):
    forward FLOPs H_Q·P·2·(d_qk + d_v) (S = QKᵀ and O = PV); read q, k, v (+ mask); written O.
    backward FLOPs H_Q·P·2·(3·d_qk + 2·d_v) (S recomputed, dV, dP, dQ, dK) + the sums of dK, dV over the
    H_Q/H_KV heads of a group; read q, k, v, O, dO (+ mask); written dQ, dK, dV. Softmax and its statistics
    (logsumexp) are not counted."""
    q, k = args.shape(layout.query), args.shape(layout.query + 1)
    groups, tokens_q, tokens_kv, heads_q, heads_kv, d_qk, d_v = sequence_groups(args, layout, q, k)
    if heads_kv == 0 or heads_q % heads_kv:
        raise ModelError(f"{heads_q} query heads are not a multiple of {heads_kv} kv heads")
    causal, top_left = attention_causality(args, layout)
    pairs = sum(count * causal_pairs(n_q, n_kv, causal, top_left) for n_q, n_kv, count in groups)
    dtype = args.dtype(layout.query)
    q_bytes, o_bytes = tokens_q * heads_q * d_qk * dtype.size, tokens_q * heads_q * d_v * dtype.size
    kv_bytes = tokens_kv * heads_kv * (d_qk + d_v) * dtype.size
    bias_bytes = tensor_bytes(args, layout.bias)
    if not layout.backward:
        flops = heads_q * pairs * 2 * (d_qk + d_v)
        return estimate_of(flops, q_bytes + kv_bytes + bias_bytes, o_bytes, dtype, True, "SDPA fwd")
    group_sums = tokens_kv * heads_kv * (d_qk + d_v) * (heads_q // heads_kv - 1)
    flops = heads_q * pairs * 2 * (3 * d_qk + 2 * d_v) + group_sums
    read = q_bytes + kv_bytes + 2 * o_bytes + bias_bytes
    return estimate_of(flops, read, q_bytes + kv_bytes, dtype, True, "SDPA bwd")


# --------------------------------------------------------------------------------------- elementwise


def output_dtype(args: CallInputs, first: int, second: int) -> DType:
    """The result type of a binary op: that of the operand with a non-empty shape (the larger when both
    have one) — type promotion as far as element sizes go."""
    candidates = [index for index in (first, second) if args.is_tensor(index) and args.shape(index)]
    if not candidates:
        return args.dtype(first)
    return max((args.dtype(index) for index in candidates), key=lambda dtype: dtype.size)


def operand_shape(args: CallInputs, index: int) -> tuple[int, ...]:
    """The shape of a binary operand, tensor or scalar (a scalar has the empty shape: one element)."""
    entry = args.dims[index] if index < len(args.dims) else None
    if not is_shape(entry):
        raise ModelError(f"input {index} has no valid shape: {entry!r}")
    return tuple(entry)


def binary(args: CallInputs, in_place: bool = False) -> Estimate:
    """out = a ∘ b with broadcasting: FLOPs numel(out); read numel(a)·sa + numel(b)·sb (a scalar operand is one
    element, a 'Scalar' 4 bytes); written numel(out)·s_out, where out is an out= tensor after the operands,
    else a (in-place), else the promoted operand type."""
    if len(args.dims) < 2:
        raise ModelError(f"{len(args.dims)} inputs, 2 operands expected")
    first, second = operand_shape(args, 0), operand_shape(args, 1)
    shape = broadcast(first, second)
    out_index = next((index for index in range(2, len(args.dims)) if args.is_tensor(index) and args.dims[index]),
                     None)
    if out_index is not None:
        out = args.dtype(out_index)
    else:
        out = args.dtype(0) if in_place else output_dtype(args, 0, 1)
    read = numel(first) * args.dtype(0).size + numel(second) * args.dtype(1).size
    return estimate_of(numel(shape), read, numel(shape) * out.size, out, False, "binary elementwise")


def unary(args: CallInputs) -> Estimate:
    """y = f(x): FLOPs numel(x) (one operation per element); read numel(x)·sx; written numel(x)·sy, where y is
    input 1 when that is a tensor (an out= argument), else x's type."""
    x = args.shape(0)
    dtype = args.dtype(0)
    out = args.dtype(1) if args.is_tensor(1) else dtype
    return estimate_of(numel(x), numel(x) * dtype.size, numel(x) * out.size, dtype, False, "unary elementwise")


def copy(args: CallInputs) -> Estimate:
    """dst.copy_(src) (dst is input 0): FLOPs numel(dst) (one move or conversion per element, as TraceLens);
    read numel(src)·s_src; written numel(dst)·s_dst."""
    dst, src = args.shape(0), args.shape(1)
    broadcast(src, dst)
    return estimate_of(numel(dst), numel(src) * args.dtype(1).size, numel(dst) * args.dtype(0).size,
                       args.dtype(1), False, "copy/cast")


def cast(args: CallInputs) -> Estimate:
    """x.to(dtype) / _to_copy: FLOPs numel(x); read numel(x)·sx; written numel(x) at the dtype argument
    (input 1 or 2; an input-1 tensor gives its type; none recorded: x's type)."""
    x = args.shape(0)
    source = args.dtype(0)
    if args.is_tensor(1):
        target = args.dtype(1)
    else:
        target = args.dtype_argument(1, args.dtype_argument(2, source))
    return estimate_of(numel(x), numel(x) * source.size, numel(x) * target.size, source, False, "copy/cast")


def gated_activation(args: CallInputs) -> Estimate:
    """silu_and_mul(out[..., D], x[..., 2D]): out = silu(x[..., :D])·x[..., D:]; FLOPs 5·numel(out);
    read numel(x)·sx; written numel(out)·s_out."""
    out, x = args.shape(0), args.shape(1)
    if numel(x) != 2 * numel(out):
        raise ModelError(f"input {list(x)} is not twice the output {list(out)}")
    return estimate_of(5 * numel(out), numel(x) * args.dtype(1).size, numel(out) * args.dtype(0).size,
                       args.dtype(1), False, "gated activation")


def rotary_embedding(args: CallInputs) -> Estimate:
    """sgl_kernel::rotary_embedding(positions, q[T, Hq·D], k[T, Hk·D], head_size, cos_sin_cache[P, R], ...),
    in place: n = T·(Hq + Hk)·R rotated elements; FLOPs 3n; read n·s; written n·s (the cache and the positions
    are not counted, as TraceLens)."""
    q, k = args.shape_of_rank(1, 2), args.shape_of_rank(2, 2)
    head_size = args.value(3)
    if not isinstance(head_size, int) or isinstance(head_size, bool) or head_size <= 0:
        raise ModelError(f"head_size is not a positive int: {head_size!r}")
    cache = args.optional_shape(4)
    rotated = cache[1] if cache and len(cache) == 2 else head_size
    elems = q[0] * (q[1] // head_size + k[1] // head_size) * rotated
    dtype = args.dtype(1)
    return estimate_of(3 * elems, elems * dtype.size, elems * dtype.size, dtype, False, "RoPE")


def store_cache(args: CallInputs) -> Estimate:
    """sglang::store_cache(k, v, k_cache, v_cache, indices, ...): a scatter of k and v into the cache:
    no FLOPs; read k + v; written k + v (the indices are not counted, as TraceLens)."""
    k, v = args.shape(0), args.shape(1)
    moved = numel(k) * args.dtype(0).size + numel(v) * args.dtype(1).size
    return estimate_of(0, moved, moved, args.dtype(0), False, "KV-cache store")


# ---------------------------------------------------------------------------------------- reductions


@dataclass(frozen=True)
class ReductionArgs:
    """Where a reduction keeps its dim argument, and what it writes."""

    dim: int | None  # index of dim (None: always the whole tensor)
    dtype: int | None = None  # index of a dtype argument
    with_indices: bool = False  # max/min over a dim also write int64 indices
    indices_only: bool = False  # argmax/argmin
    cumulative: bool = False  # cumsum/cumprod: as many outputs as inputs


def reduced_elems(shape: tuple[int, ...], dim: object) -> int:
    """Output elements of reducing ``shape`` over ``dim`` (an int, a list; None or [] is every dim)."""
    dims = [dim] if isinstance(dim, int) and not isinstance(dim, bool) else dim
    if dims is None or dims == []:
        return 1
    if not isinstance(dims, list) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise ModelError(f"dim is not an int or a list of ints: {dim!r}")
    rank = max(len(shape), 1)
    if any(not -rank <= d < rank for d in dims):
        raise ModelError(f"dim {dim!r} out of range for {len(shape)} dims")
    reduced = {d % rank for d in dims}
    return numel(tuple(size for axis, size in enumerate(shape) if axis not in reduced))


def reduction(layout: ReductionArgs, args: CallInputs) -> Estimate:
    """Reduction of x over dims: FLOPs numel(x) (one operation per input element); read numel(x)·sx; written
    numel(out) at x's type or the dtype argument, plus numel(out)·8 for indices (max/min over a dim).
    A dim argument that was passed but not recorded gives no estimate."""
    if layout.with_indices and args.is_tensor(1):
        return binary(args)  # max(a, b) / min(a, b) of two tensors
    x = args.shape(0)
    dtype = args.dtype(0)
    if layout.cumulative:
        out_elems = numel(x)
    elif layout.dim is None or layout.dim >= len(args.dims):
        out_elems = 1
    else:
        out_elems = reduced_elems(x, args.required_value(layout.dim, "dim"))
    out = args.dtype_argument(layout.dtype, dtype) if layout.dtype is not None else dtype
    indexed = layout.with_indices and layout.dim is not None and layout.dim < len(args.dims)
    written = out_elems * (INDEX.size if layout.indices_only else out.size + (INDEX.size if indexed else 0))
    return estimate_of(numel(x), numel(x) * dtype.size, written, dtype, False, "reduction")


def softmax(args: CallInputs) -> Estimate:
    """softmax / log_softmax over one dim: FLOPs 5·numel(x) (max, subtract, exp, sum, divide or log);
    read numel(x)·sx; written numel(x) at x's type, fp32 with half_to_float, or the dtype argument."""
    x = args.shape(0)
    dtype = args.dtype(0)
    flag_or_dtype = args.value(2)
    out = DType("fp32", 4) if flag_or_dtype is True else args.dtype_argument(2, dtype)
    return estimate_of(5 * numel(x), numel(x) * dtype.size, numel(x) * out.size, dtype, False, "softmax fwd")


def softmax_backward(args: CallInputs) -> Estimate:
    """_softmax_backward_data / _log_softmax_backward_data(dy, y, dim, input_dtype): FLOPs 4·numel(y) (a row
    sum and two elementwise ops); read dy + y; written dx at input_dtype (default dy's type)."""
    grad, output = args.shape(0), args.shape(1)
    dtype = args.dtype(0)
    out = args.dtype_argument(3, dtype)
    read = numel(grad) * dtype.size + numel(output) * args.dtype(1).size
    return estimate_of(4 * numel(output), read, numel(grad) * out.size, dtype, False, "softmax bwd")


def embedding(args: CallInputs) -> Estimate:
    """embedding(W[V, D], indices): a gather of numel(indices) rows: no FLOPs; read the rows and the indices;
    written the rows."""
    weight, indices = args.shape_of_rank(0, 2), args.shape(1)
    rows = numel(indices) * weight[1] * args.dtype(0).size
    return estimate_of(0, rows + numel(indices) * args.dtype(1).size, rows, args.dtype(0), False, "embedding fwd")


def embedding_backward(args: CallInputs) -> Estimate:
    """embedding_dense_backward(dy[..., D], indices, num_weights, ...): a scatter-add: FLOPs numel(dy);
    read dy and the indices; written num_weights·D (the whole gradient table)."""
    grad, indices = args.shape(0), args.shape(1)
    num_weights = args.required_value(2, "num_weights")
    if not isinstance(num_weights, int) or isinstance(num_weights, bool) or num_weights < 0 or not grad:
        raise ModelError(f"num_weights {num_weights!r} or grad {list(grad)} is not valid")
    dtype = args.dtype(0)
    read = numel(grad) * dtype.size + numel(indices) * args.dtype(1).size
    return estimate_of(numel(grad), read, num_weights * grad[-1] * dtype.size, dtype, False, "embedding bwd")


# ------------------------------------------------------------------------------------ normalisations


@dataclass(frozen=True)
class NormArgs:
    """Where a normalisation keeps its arguments."""

    input: int
    weight: int | None
    bias: int | None
    training: int | bool  # index of the training flag, or a constant
    shape: int | None = None  # index of normalized_shape (layer/RMS norm); None: channels are x.shape[1]
    grad: int = 0  # backward: index of dy
    mask: int | None = None  # backward: index of output_mask (dx, dweight, dbias)


def norm_training(args: CallInputs, layout: NormArgs) -> bool:
    return layout.training if isinstance(layout.training, bool) else args.flag(layout.training, "training")


def norm_channels(args: CallInputs, layout: NormArgs, x: tuple[int, ...]) -> int:
    """C, the length of the per-channel vectors: prod(normalized_shape) for layer/RMS norm (from the record, else
    the weight's numel), x.shape[1] otherwise."""
    if layout.shape is None:
        if len(x) < 2:
            raise ModelError(f"input {list(x)} has no channel dim")
        return x[1]
    normalized = args.value(layout.shape)
    if normalized is None and layout.weight is not None and args.is_tensor(layout.weight):
        return numel(args.shape(layout.weight))
    if isinstance(normalized, int) and not isinstance(normalized, bool):
        normalized = [normalized]
    if not (isinstance(normalized, list) and normalized and all(isinstance(d, int) and d > 0 for d in normalized)):
        raise ModelError(f"normalized_shape not recorded or not valid: {normalized!r}")
    if tuple(normalized) != x[len(x) - len(normalized):]:
        raise ModelError(f"normalized_shape {normalized} is not the end of {list(x)}")
    return numel(tuple(normalized))


def present(args: CallInputs, index: int | None) -> bool:
    return index is not None and args.is_tensor(index) and bool(args.shape(index))


def normalisation(layout: NormArgs, args: CallInputs) -> Estimate:
    """Batch/layer/group/instance norm forward (TraceLens's model): n elements, C-long vectors;
    FLOPs 2n (scale and shift) + 3n in training (mean and variance) + 6C (the per-channel factors);
    read n·sx + C·sx·(2 statistics + weight + bias); written n·sx + 2C·sx in training (the new statistics)."""
    x = args.shape(layout.input)
    channels = norm_channels(args, layout, x)
    training = norm_training(args, layout)
    dtype = args.dtype(layout.input)
    elems = numel(x)
    vectors = 2 + present(args, layout.weight) + present(args, layout.bias)
    flops = 2 * elems + (3 * elems if training else 0) + 6 * channels
    read = elems * dtype.size + vectors * channels * dtype.size
    written = elems * dtype.size + (2 * channels * dtype.size if training else 0)
    return estimate_of(flops, read, written, dtype, False, "normalisation fwd")


def backward_mask(args: CallInputs, layout: NormArgs) -> tuple[bool, bool, bool]:
    if layout.mask is None:
        return True, True, True
    mask = args.required_value(layout.mask, "output_mask")
    if not (isinstance(mask, list) and len(mask) >= 2 and all(isinstance(item, bool) for item in mask)):
        raise ModelError(f"output_mask is not a list of bools: {mask!r}")
    return mask[0], mask[1], mask[2] if len(mask) > 2 else False


def normalisation_backward(layout: NormArgs, args: CallInputs) -> Estimate:
    """Batch/layer/group norm backward (TraceLens's model), output_mask = (dx, dweight, dbias):
    FLOPs 4n (the per-channel sums of dy and dy·x̂) + 5n for dx in training (2n in eval) + 3C in eval;
    read dy + x + C (saved inverse std) + C (weight); written dx, C (dweight), C (dbias) as asked.
    The vectors count at x's element size."""
    x = args.shape(layout.input)
    grad = args.shape(layout.grad)
    channels = norm_channels(args, layout, x)
    training = norm_training(args, layout)
    grad_input, grad_weight, grad_bias = backward_mask(args, layout)
    dtype = args.dtype(layout.input)
    elems = numel(x)
    flops = 4 * elems + (5 if training else 2) * elems * grad_input + (0 if training else 3 * channels)
    read = numel(grad) * args.dtype(layout.grad).size + elems * dtype.size
    read += channels * dtype.size * (1 + present(args, layout.weight))
    written = grad_input * elems * dtype.size + (grad_weight + grad_bias) * channels * dtype.size
    return estimate_of(flops, read, written, dtype, False, "normalisation bwd")


def rms_norm_estimate(args: CallInputs, input_index: int, weight: int | None, channels: int,
                      residual: tuple[int, int] | None = None) -> Estimate:
    """RMS norm forward over the last C elements of each of R = n/C rows (TraceLens's model):
    FLOPs R·(2C + 2) (the mean of squares and its rsqrt) + n (scale) + n with a weight, + n for a residual add;
    read x (+ residual in) + C·sx (weight); written n at the output's type (input 0 when the op writes into it,
    else x's) (+ residual out)."""
    x = args.shape(input_index)
    if not x or channels <= 0 or numel(x) % channels:
        raise ModelError(f"{channels} channels do not divide input {list(x)}")
    dtype = args.dtype(input_index)
    elems, weighted = numel(x), present(args, weight)
    out = args.dtype(0) if input_index != 0 else dtype
    flops = elems // channels * (2 * channels + 2) + elems * (1 + weighted)
    read = elems * dtype.size + weighted * channels * dtype.size
    written = elems * out.size
    if residual is not None:
        flops += elems
        read += elems * args.dtype(residual[0]).size
        written += elems * args.dtype(residual[1]).size
    return estimate_of(flops, read, written, dtype, False, "RMSNorm fwd")


def rms_norm(layout: NormArgs, args: CallInputs) -> Estimate:
    """rms_norm(x, normalized_shape, weight, eps): the RMS norm model with C = prod(normalized_shape)."""
    channels = norm_channels(args, layout, args.shape(layout.input))
    return rms_norm_estimate(args, layout.input, layout.weight, channels)


def aiter_rms_norm(args: CallInputs) -> Estimate:
    """aiter::rmsnorm(out, x, weight, eps): the RMS norm model with C = numel(weight)."""
    return rms_norm_estimate(args, 1, 2, numel(args.shape(2)))


def add_rms_norm(args: CallInputs) -> Estimate:
    """aiter::add_rmsnorm(out, x, residual_in, residual_out, weight, eps): residual_out = x + residual_in,
    out = rmsnorm(residual_out): the RMS norm model with the residual add, C = numel(weight)."""
    return rms_norm_estimate(args, 1, 4, numel(args.shape(4)), residual=(2, 3))


def rms_norm_backward(args: CallInputs) -> Estimate:
    """_fused_rms_norm_backward(dy, x, normalized_shape, rstd, weight, output_mask) (TraceLens's model):
    FLOPs n (x̂) + n with a weight (dy·w) + 6n for dx + n (+ n for more than one row) for dweight;
    read dy + x + weight; written dx, dweight as asked."""
    layout = NormArgs(input=1, weight=4, bias=None, training=True, shape=2, grad=0, mask=5)
    x, grad = args.shape(1), args.shape(0)
    channels = norm_channels(args, layout, x)
    grad_input, grad_weight, _ = backward_mask(args, layout)
    weighted = present(args, 4)
    dtype = args.dtype(1)
    elems = numel(x)
    rows = elems // channels
    flops = elems * (1 + weighted) + 6 * elems * grad_input + grad_weight * weighted * elems * (1 + (rows > 1))
    read = numel(grad) * args.dtype(0).size + elems * dtype.size + weighted * channels * dtype.size
    written = grad_input * elems * dtype.size + grad_weight * weighted * channels * dtype.size
    return estimate_of(flops, read, written, dtype, False, "RMSNorm bwd")


# ----------------------------------------------------------------------------------------- the table

Model = Callable[[CallInputs], Estimate]

_CONV = ConvArgs(bias=2, stride=3, padding=4, dilation=5, transposed=6, output_padding=7, groups=8)
_CONV_ND = ConvArgs(bias=2, stride=3, padding=4, dilation=5, groups=6)
_CONV_TRANSPOSE = ConvArgs(bias=2, stride=3, padding=4, output_padding=5, groups=6, dilation=7,
                           always_transposed=True)
_SDPA_FLASH = AttentionArgs(heads_first=True, query=0, causal=4, top_left=True)
_SDPA_FUSED = AttentionArgs(heads_first=True, query=0, causal=6, top_left=True, bias=3)
_LAYER_NORM = NormArgs(input=0, weight=2, bias=3, training=True, shape=1)
_BATCH_NORM = NormArgs(input=0, weight=1, bias=2, training=5)
_RMS_NORM = NormArgs(input=0, weight=2, bias=None, training=False, shape=1)
_CUDNN_BATCH_NORM_BWD = NormArgs(input=0, weight=2, bias=None, training=True, grad=1)
_REDUCE = ReductionArgs(dim=1, dtype=3)
_REDUCE_WITH_INDICES = ReductionArgs(dim=1, with_indices=True)

UNARY_OPS = ("clamp", "clamp_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_", "sigmoid", "sigmoid_",
             "rsqrt", "rsqrt_", "sqrt", "sqrt_", "silu", "silu_", "neg", "neg_", "pow", "pow_", "relu", "relu_",
             "gelu", "gelu_", "tanh", "tanh_", "exp", "exp_", "log", "log_", "abs", "abs_", "reciprocal",
             "reciprocal_", "sin", "cos", "erf")
BINARY_OPS = ("add", "sub", "mul", "div", "rsub", "threshold_backward", "sigmoid_backward", "silu_backward",
              "tanh_backward", "gelu_backward", "maximum", "minimum")
IN_PLACE_BINARY_OPS = ("add_", "sub_", "mul_", "div_")

MODELS: dict[str, Model] = {
    "aten::mm": mm,
    "aten::addmm": addmm,
    "aten::bmm": bmm,
    "aten::baddbmm": baddbmm,
    "aten::matmul": matmul,
    "aten::linear": linear,
    "aten::_scaled_mm": scaled_mm,
    "aiter::gemm_a16w16": weight_transposed_gemm,
    "aten::convolution": partial(convolution, _CONV),
    "aten::_convolution": partial(convolution, _CONV),
    "aten::conv1d": partial(convolution, _CONV_ND),
    "aten::conv2d": partial(convolution, _CONV_ND),
    "aten::conv3d": partial(convolution, _CONV_ND),
    "aten::conv_transpose1d": partial(convolution, _CONV_TRANSPOSE),
    "aten::conv_transpose2d": partial(convolution, _CONV_TRANSPOSE),
    "aten::conv_transpose3d": partial(convolution, _CONV_TRANSPOSE),
    "aten::cudnn_convolution": partial(convolution, ConvArgs(bias=None, padding=2, stride=3, dilation=4, groups=5)),
    "aten::miopen_convolution": partial(convolution, ConvArgs(bias=2, padding=3, stride=4, dilation=5, groups=6)),
    "aten::convolution_backward": convolution_backward,
    "aten::scaled_dot_product_attention": partial(
        attention, AttentionArgs(heads_first=True, query=0, causal=5, top_left=True, bias=3)),
    "aten::_scaled_dot_product_flash_attention": partial(attention, _SDPA_FLASH),
    "aten::_scaled_dot_product_efficient_attention": partial(attention, _SDPA_FUSED),
    "aten::_scaled_dot_product_cudnn_attention": partial(attention, _SDPA_FUSED),
    "aten::_flash_attention_forward": partial(
        attention, AttentionArgs(heads_first=False, query=0, causal=8, top_left=True, seqlens=3, max_seqlen=5)),
    "aten::_efficient_attention_forward": partial(
        attention, AttentionArgs(heads_first=False, query=0, causal=None, top_left=True, bias=3, mask_type=9,
                                 seqlens=4, max_seqlen=6)),
    "flash_attn::_flash_attn_forward": partial(
        attention, AttentionArgs(heads_first=False, query=0, causal=5, top_left=False)),
    "flash_attn::_flash_attn_varlen_forward": partial(
        attention, AttentionArgs(heads_first=False, query=0, causal=9, top_left=False, seqlens=3, max_seqlen=5)),
    "aten::_scaled_dot_product_flash_attention_backward": partial(
        attention, AttentionArgs(heads_first=True, query=1, causal=11, top_left=True, backward=True, out=4)),
    "aten::_scaled_dot_product_efficient_attention_backward": partial(
        attention, AttentionArgs(heads_first=True, query=1, causal=11, top_left=True, backward=True, out=5,
                                 bias=4)),
    "aten::_scaled_dot_product_cudnn_attention_backward": partial(
        attention, AttentionArgs(heads_first=True, query=1, causal=14, top_left=True, backward=True, out=4,
                                 bias=8)),
    "aten::_flash_attention_backward": partial(
        attention, AttentionArgs(heads_first=False, query=1, causal=11, top_left=True, backward=True, out=4,
                                 seqlens=6, max_seqlen=8)),
    "aten::_efficient_attention_backward": partial(
        attention, AttentionArgs(heads_first=False, query=1, causal=None, top_left=True, backward=True, out=5,
                                 bias=4, mask_type=14, seqlens=6, max_seqlen=8)),
    "flash_attn::_flash_attn_backward": partial(
        attention, AttentionArgs(heads_first=False, query=1, causal=11, top_left=False, backward=True, out=4)),
    "flash_attn::_flash_attn_varlen_backward": partial(
        attention, AttentionArgs(heads_first=False, query=1, causal=15, top_left=False, backward=True, out=4,
                                 seqlens=9, max_seqlen=11)),
    **{f"aten::{name}": unary for name in UNARY_OPS},
    **{f"aten::{name}": binary for name in BINARY_OPS},
    **{f"aten::{name}": partial(binary, in_place=True) for name in IN_PLACE_BINARY_OPS},
    "aten::copy_": copy,
    "aten::copy": copy,
    "aten::to": cast,
    "aten::_to_copy": cast,
    "sgl_kernel::silu_and_mul": gated_activation,
    "aiter::silu_and_mul": gated_activation,
    "_C::silu_and_mul": gated_activation,
    "sgl_kernel::rotary_embedding": rotary_embedding,
    "sglang::store_cache": store_cache,
    "aten::sum": partial(reduction, _REDUCE),
    "aten::mean": partial(reduction, _REDUCE),
    "aten::prod": partial(reduction, ReductionArgs(dim=1, dtype=3)),
    "aten::amax": partial(reduction, ReductionArgs(dim=1)),
    "aten::amin": partial(reduction, ReductionArgs(dim=1)),
    "aten::max": partial(reduction, _REDUCE_WITH_INDICES),
    "aten::min": partial(reduction, _REDUCE_WITH_INDICES),
    "aten::argmax": partial(reduction, ReductionArgs(dim=1, indices_only=True)),
    "aten::argmin": partial(reduction, ReductionArgs(dim=1, indices_only=True)),
    "aten::var": partial(reduction, ReductionArgs(dim=1)),
    "aten::std": partial(reduction, ReductionArgs(dim=1)),
    "aten::logsumexp": partial(reduction, ReductionArgs(dim=1)),
    "aten::norm": partial(reduction, ReductionArgs(dim=2)),
    "aten::linalg_vector_norm": partial(reduction, ReductionArgs(dim=2, dtype=4)),
    "aten::cumsum": partial(reduction, ReductionArgs(dim=1, dtype=2, cumulative=True)),
    "aten::cumprod": partial(reduction, ReductionArgs(dim=1, dtype=2, cumulative=True)),
    "aten::softmax": softmax,
    "aten::_softmax": softmax,
    "aten::log_softmax": softmax,
    "aten::_log_softmax": softmax,
    "aten::_softmax_backward_data": softmax_backward,
    "aten::_log_softmax_backward_data": softmax_backward,
    "aten::embedding": embedding,
    "aten::embedding_dense_backward": embedding_backward,
    "aten::layer_norm": partial(normalisation, _LAYER_NORM),
    "aten::native_layer_norm": partial(normalisation, _LAYER_NORM),
    "aten::batch_norm": partial(normalisation, _BATCH_NORM),
    "aten::native_batch_norm": partial(normalisation, _BATCH_NORM),
    "aten::cudnn_batch_norm": partial(normalisation, _BATCH_NORM),
    "aten::miopen_batch_norm": partial(normalisation, _BATCH_NORM),
    "aten::instance_norm": partial(normalisation, _BATCH_NORM),
    "aten::group_norm": partial(normalisation, NormArgs(input=0, weight=2, bias=3, training=True)),
    "aten::native_group_norm": partial(normalisation, NormArgs(input=0, weight=1, bias=2, training=True)),
    "aten::native_layer_norm_backward": partial(
        normalisation_backward, NormArgs(input=1, weight=5, bias=6, training=True, shape=2, grad=0, mask=7)),
    "aten::native_batch_norm_backward": partial(
        normalisation_backward, NormArgs(input=1, weight=2, bias=None, training=7, grad=0, mask=9)),
    "aten::cudnn_batch_norm_backward": partial(normalisation_backward, _CUDNN_BATCH_NORM_BWD),
    "aten::miopen_batch_norm_backward": partial(normalisation_backward, _CUDNN_BATCH_NORM_BWD),
    "aten::native_group_norm_backward": partial(
        normalisation_backward, NormArgs(input=1, weight=4, bias=None, training=True, grad=0, mask=9)),
    "aten::rms_norm": partial(rms_norm, _RMS_NORM),
    "aten::_fused_rms_norm": partial(rms_norm, _RMS_NORM),
    "aten::_fused_rms_norm_backward": rms_norm_backward,
    "aiter::rmsnorm": aiter_rms_norm,
    "aiter::add_rmsnorm": add_rms_norm,
}


def estimate(call: TorchCall) -> Estimate | str:
    """The call's work, or a one-line reason why there is none ("no model for aten::foo", "aten::mm: ...")."""
    model = MODELS.get(call.op) if isinstance(call.op, str) else None
    if model is None:
        return f"no model for {call.op}"
    try:
        return model(CallInputs(call))
    except (ValueError, TypeError, LookupError, ArithmeticError) as error:
        return f"{call.op}: {error}"
