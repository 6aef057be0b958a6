"""Parsers of operator annotation texts (asysrep-schema.md, Operator annotations).

Each parser turns the text of one HGTX range into a :class:`Parsed`: the operator type,
its display name, its named parameter fields (in order, for merge keys), the names of its
minor fields, and the numeric parameters of the utilisation model. ``None`` means the
text is not an operator of that source.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from asysstats.analysis.operators.catalog import (
    AUTOGRAD_FIELDS,
    FLASH_ATTENTION,
    FRAMEWORK,
    GEMM,
    LIBRARIES,
    LIBRARY,
    MARKER,
    MOE,
    PCCL,
    PYTORCH,
    TORCH_NAME,
    TORCH_NAMESPACES,
    dtype_of,
)
from asysstats.analysis.pccl import parse as parse_pccl_text

CUSTOM, LIBRARY_CLAIM, FRAMEWORK_CLAIM = 0, 1, 2  # claim classes, strongest first (see analysis)
MARKER_CLAIM = 3  # pyprof markers claim nothing: the autograd ranges inside them do
AUTOGRAD_SPLIT = re.compile(r", (?=\w+ = )")  # values (shapes) never hold ", word = "
LIBRARY_RANGE = re.compile(r"^\[(?P<lib>[^\]\s]+)\]\s*--format=(?P<params>.*)$", re.DOTALL)
MOE_SHAPE = re.compile(r"^M_?(?P<M>\d+)_E_?(?P<E>\d+)_H_?(?P<H>\d+)_In_?(?P<In>\d+)_topk_?(?P<topk>\d+)"
                          r"(?:_topkids(?P<topkids>\[[^\]]*\]))?(?:_unique_?(?P<unique>\d+))?$")
BLAS_FIELDS = ("kind", "transa", "transb", "m", "n", "k", "lda", "ldb", "ldc", "alpha", "beta", "batch", "math",
               "dtype", "algo", "compute", "epilogue")
BLAS_KINDS = ("GemmEx", "Gemm", "GemmBatchedEx")
LEADING = frozenset({"lda", "ldb", "ldc", "alpha", "beta"})
TORCH_MINOR = frozenset({"seq", "op_id", "input_op_ids"})
SHAPE_FIELDS = ("sizes", "types", "strides", "concrete", "flops")  # what the operator models read of a text
RUN_IDS = "|".join(sorted(TORCH_MINOR))  # the autograd ids a run numbers afresh: no two runs share them
RUN_ID_VALUE = r"(?:-?\d+|\[[^\]]*\])(?!\w)"  # a number, or a list of (op_id, output) pairs
RUN_ID_TEXT = re.compile(rf", (?:{RUN_IDS}) = {RUN_ID_VALUE}")  # in a range text
RUN_ID_KEY = re.compile(rf",(?:{RUN_IDS})={RUN_ID_VALUE}")  # in a merge key (fields joined by ',')


@dataclass(frozen=True)
class Parsed:
    """One recognised operator text. ``family`` names the ``no-merge-*`` option of its minor
    ``fields``; ``claim`` is its claim class; ``params`` feed :mod:`model`."""

    type: str
    layer: int
    claim: int
    library: str
    display: str
    fields: tuple[tuple[str, str], ...]
    family: str = ""
    minor: frozenset[str] = frozenset()
    params: dict[str, Any] = field(default_factory=dict)


def number(text: str | None, kind: type = int) -> Any:
    try:
        return kind(text) if text is not None else None
    except ValueError:
        return None


def parse_pytorch(text: str) -> Parsed | None:
    """``aten::mm, seq = 12, op_id = 345, sizes = [[2048, 6144], [6144, 72]], input_op_ids = ...``."""
    if "::" not in text:  # no operator name: most range texts are rejected before the regex split
        return None
    pieces = AUTOGRAD_SPLIT.split(text)
    if not TORCH_NAME.fullmatch(pieces[0]):
        return None
    fields = []
    for piece in pieces[1:]:
        key, eq, value = piece.partition(" = ")
        if not eq:
            return None
        fields.append((key, value.strip()))
    namespace = pieces[0].split("::", 1)[0]
    if namespace not in TORCH_NAMESPACES and not namespace.endswith("_C") \
            and not any(k in AUTOGRAD_FIELDS for k, _ in fields):
        return None
    values = dict(fields)
    return Parsed(PYTORCH, FRAMEWORK, FRAMEWORK_CLAIM, "PyTorch", text, (("op", pieces[0]), *fields), "pytorch",
                  TORCH_MINOR, {"op": pieces[0], **{k: values.get(k) for k in SHAPE_FIELDS}})


def without_run_ids(text: str | None, key: bool = False) -> str | None:
    """A PyTorch range text (or, with ``key``, a merge key) without the per-run autograd ids
    ``seq``, ``op_id`` and ``input_op_ids``: the operator and its shapes, what two runs share
    (``aten::mm, seq = 12, op_id = 345, sizes = [[8, 4]]`` -> ``aten::mm, sizes = [[8, 4]]``)."""
    if text is None:
        return None
    return (RUN_ID_KEY if key else RUN_ID_TEXT).sub("", text)


def python_list(field: str | None) -> list | None:
    """A list-valued field of a PyTorch range (``sizes``, ``types``, ``strides``, ``concrete``)
    as a Python list (None when absent or unreadable)."""
    try:
        value = ast.literal_eval(field) if field else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, list) else None


PYPROF_HEAD = "{'mod': "
PYPROF_MODULES = frozenset({"torch", "Tensor", "torch.nn.functional", "torch.Tensor"})
# pyprof's (apex.pyprof, DLProf) data type names -> Kineto's spelling, which the models read.
PYPROF_TYPES = {"float32": "float", "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float64": "double",
                "int64": "long int", "int32": "int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool"}


def parse_pyprof(text: str) -> Parsed | None:
    """A pyprof marker (``apex.pyprof.nvtx.init()``, DLProf): ``{'mod': 'torch.nn.functional',
    'op': 'linear', 'args': [{'name': '', 'type': 'tensor', 'shape': (32, 400), 'dtype':
    'float32'}, ...]}``; shown in the autograd form ``torch.nn.functional.linear, sizes =
    [[32, 400], ...], types = ['float', ...]`` and modelled as ``aten::linear``. A marker
    claims no activity and is in no breakdown (the autograd ranges inside it are the
    operators there); ``ppu_op_roofline`` lists it."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("mod") not in PYPROF_MODULES or not isinstance(value.get("op"), str) \
            or not isinstance(value.get("args", []), list):
        return None
    dims, types, concrete = [], [], []
    for arg in value.get("args", []):
        arg = arg if isinstance(arg, dict) else {}
        tensor = arg.get("type") == "tensor"
        shape = arg.get("shape")
        dims.append(list(shape) if tensor and isinstance(shape, (tuple, list)) else [])
        types.append(PYPROF_TYPES.get(str(arg.get("dtype")), str(arg.get("dtype"))) if tensor else "Scalar")
        concrete.append("" if tensor else str(arg.get("value", "")))
    name = f"{value['mod']}.{value['op']}"
    fields = (("op", name), ("sizes", str(dims)), ("types", str(types)), ("concrete", str(concrete)))
    display = ", ".join([name] + [f"{k} = {v}" for k, v in fields[1:]])
    params = {"op": f"aten::{value['op'].strip('_')}", **dict(fields[1:])}
    return Parsed(PYTORCH, MARKER, MARKER_CLAIM, "PyTorch", display, fields, "pytorch", frozenset(), params)


def key_values(tokens: list[str], positional: tuple[str, ...]) -> list[tuple[str, str]]:
    """``a,b,k:v,...``: leading bare tokens take the ``positional`` names, the rest split on ':'."""
    fields, names = [], list(positional)
    for i, token in enumerate(tokens):
        key, colon, value = token.partition(":")
        if colon:
            fields.append((key.strip(), value.strip()))
        else:
            fields.append((names.pop(0) if names else f"p{i}", token.strip()))
    return fields


def parse_library(lib: str, params: str) -> Parsed | None:
    """``[LIB] --format=<params>``, displayed ``LIB:<params>``."""
    kind = LIBRARIES.get(lib.lower())
    if kind is None:
        return None
    tokens = params.split(",")
    display = f"{lib}:{params}"
    if kind == MOE:
        return moe_parsed(LIBRARY, LIBRARY_CLAIM, "MoE", display, params)
    if kind == FLASH_ATTENTION:
        return attention(lib, display, tokens)
    if tokens[0] in BLAS_KINDS and len(tokens) >= 11:
        fields = list(zip(BLAS_FIELDS, tokens)) + [(f"p{i}", t) for i, t in enumerate(tokens) if i >= len(BLAS_FIELDS)]
    else:
        fields = key_values(tokens, ("kind",))
    values = dict(fields)
    params_ = {"kind": values.get("kind", ""), "m": number(values.get("m")), "n": number(values.get("n")),
               "k": number(values.get("k")), "batch": number(values.get("batch")) or 1,
               "groups": number(values.get("groups")), "beta": number(values.get("beta"), float) or 0.0,
               "dtype": dtype_of(values.get("dtype") or values.get("data_type"))}
    return Parsed(GEMM, LIBRARY, LIBRARY_CLAIM, lib, display, tuple(fields), "gemm",
                  LEADING & set(values), params_)


def attention(lib: str, display: str, tokens: list[str]) -> Parsed:
    """FlashAttention (``[FMHA]``: implementation, direction, key:value) and FlashMLA (``[MLA]``)."""
    mla = lib.lower() != "fmha"
    fields = key_values(tokens, () if mla else ("impl", "direction"))
    v = dict(fields)
    seqlen_q = number(v.get("seqlen_q"))
    decode = seqlen_q == 1 or v.get("sparse") == "decode" or v.get("phase") == "decode"
    params = {"batch": number(v.get("batch_size")), "heads": number(v.get("num_heads")),
              "heads_k": number(v.get("num_heads_kv" if mla else "num_heads_k")),
              "head_dim": number(v.get("head_dim")), "head_dim_v": number(v.get("head_dim_v" if mla else "head_dim_value")),
              "seqlen_q": seqlen_q, "seqlen_k": number(v.get("seqlen_k")), "causal": v.get("causal") == "1",
              "backward": v.get("direction", "").lower().startswith("back"), "shared_kv": mla, "decode": decode,
              "dtype": dtype_of(v.get("data_type") or v.get("dtype"))}
    return Parsed(FLASH_ATTENTION, LIBRARY, LIBRARY_CLAIM, lib, display, tuple(fields), "flash",
                  frozenset({"seqlen_k"}) if decode else frozenset(), params)


def moe_parsed(layer: int, claim: int, library: str, display: str, shape: str) -> Parsed:
    """``M_876_E_128_H_4096_In_384_topk_8[_topkids[...]][_unique_102]`` (underscores optional)."""
    match = MOE_SHAPE.match(shape.strip())
    if match is None:
        return Parsed(MOE, layer, claim, library, display, (("shape", shape),), "moe")
    values = {k: v for k, v in match.groupdict().items() if v is not None}
    params = {k: int(values[k]) for k in ("M", "E", "H", "In", "topk")}
    params["unique"] = number(values.get("unique"))
    return Parsed(MOE, layer, claim, library, display, tuple(values.items()), "moe", frozenset({"topkids", "unique"}),
                  params)


def parse_pccl(canonical: str) -> Parsed | None:
    """``NCCL:AllReduce, p:0, c:..., r:1, w:4, h:..., t:1, b:...`` (the text is the name)."""
    parsed = parse_pccl_text(canonical)
    if parsed is None:
        return None
    body = parsed[0]
    pieces = [p.strip() for p in body.split(",")]
    fields = [("op", pieces[0])] + [tuple(p.split(":", 1)) for p in pieces[1:] if ":" in p]
    return Parsed(PCCL, LIBRARY, LIBRARY_CLAIM, "PCCL", body, tuple((k.strip(), v.strip()) for k, v in fields),
                  "pccl", frozenset({"r", "h", "b"}))


def parse_builtin(canonical: str, bare: str, domain: str | None) -> Parsed | None:
    """The built-in recognition of one range: library format, framework MoE, PCCL, PyTorch (autograd or pyprof)."""
    match = LIBRARY_RANGE.match(bare)
    if match:
        return parse_library(match["lib"], match["params"])
    if bare.startswith("D_MoE,"):
        return moe_parsed(FRAMEWORK, FRAMEWORK_CLAIM, "D_MoE", bare, bare[len("D_MoE,"):])
    if domain is not None and domain.upper() in ("NCCL", "PCCL"):
        return parse_pccl(canonical)
    if domain is None:
        return parse_pyprof(bare) if bare.startswith(PYPROF_HEAD) else parse_pytorch(bare)
    return None
