"""The unit-test script of ``ppu_op_unit_test``: one PyTorch test per merged operator.

A test builds random inputs of the operator's recorded shapes on the chosen device and times
the operator: GEMMs as ``matmul``/``bmm`` (grouped GEMMs as one ``bmm`` over the groups),
attention as ``scaled_dot_product_attention``, a MoE layer as its two grouped GEMMs around
SiLU, and a PyTorch operator as ``torch.ops.<ns>.<op>`` on tensors of its ``sizes``
(trailing non-tensor arguments dropped). Operators without a generator (PCCL, kernel names,
custom types, PyTorch operators without tensor shapes) are listed at the end of the script
with the reason. The script runs without PyTorch too: it then reports a clean skip.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from asysstats.analysis.operators.parsers import Parsed, python_list


@dataclass(frozen=True)
class Entry:
    """One merged operator: its rank by total time (from 1), type, name, totals, parameters."""

    rank: int
    type: str
    name: str
    total: int
    instances: int
    parsed: Parsed | None


TORCH_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32", "tf32": "torch.float32",
                "fp8": "torch.bfloat16", "int8": "torch.bfloat16"}  # fp8/int8 inputs are timed in bf16


def body(parsed: Parsed | None) -> tuple[list[str] | None, str]:
    """(lines of the test's set-up returning ``run``, or None; the reason when None)."""
    if parsed is None:
        return None, "no parameters (recognised from a kernel name)"
    p = parsed.params
    if parsed.family == "gemm":
        return gemm(p)
    if parsed.family == "flash":
        return attention(p)
    if parsed.family == "moe" and p.get("M"):
        return moe(p)
    if parsed.family == "pytorch":
        return torch_op(p)
    return None, f"no generator for {parsed.type} operators"


def gemm(p: dict) -> tuple[list[str] | None, str]:
    m, n, k = p.get("m"), p.get("n"), p.get("k")
    if not (m and n and k):
        return None, "GEMM without m, n, k"
    dtype = TORCH_DTYPES.get(p.get("dtype") or "bf16", "torch.bfloat16")
    kind, groups = p.get("kind", ""), p.get("groups") or 1
    if kind.startswith("Grouped"):
        rows = m if kind == "GroupedMasked" else math.ceil(m / groups)
        return [f"a = rand(({groups}, {rows}, {k}), {dtype}, device)", f"b = rand(({groups}, {k}, {n}), {dtype}, device)",
                "return lambda: torch.bmm(a, b)"], ""
    batch = groups if kind == "BatchGemm" else p.get("batch") or 1
    if batch > 1:
        return [f"a = rand(({batch}, {m}, {k}), {dtype}, device)", f"b = rand(({batch}, {k}, {n}), {dtype}, device)",
                "return lambda: torch.bmm(a, b)"], ""
    return [f"a = rand(({m}, {k}), {dtype}, device)", f"b = rand(({k}, {n}), {dtype}, device)",
            "return lambda: torch.matmul(a, b)"], ""


def attention(p: dict) -> tuple[list[str] | None, str]:
    b, h, d, sq, sk = (p.get(x) for x in ("batch", "heads", "head_dim", "seqlen_q", "seqlen_k"))
    if not (b and h and d and sq and sk):
        return None, "attention without batch, heads, head_dim and lengths"
    hk, dv = p.get("heads_k") or h, p.get("head_dim_v") or d
    dtype = TORCH_DTYPES.get(p.get("dtype") or "bf16", "torch.bfloat16")
    causal = bool(p.get("causal")) and sq == sk  # SDPA aligns the causal mask top-left
    grad = ", requires_grad=True" if p.get("backward") else ""
    lines = [f"q = rand(({b}, {h}, {sq}, {d}), {dtype}, device{grad})",
             f"k = rand(({b}, {hk}, {sk}, {d}), {dtype}, device).repeat_interleave({h // max(hk, 1)}, dim=1)"]
    if p.get("shared_kv"):
        lines.append(f"v = k[..., :{dv}]")
    else:
        lines.append(f"v = rand(({b}, {hk}, {sk}, {dv}), {dtype}, device).repeat_interleave({h // max(hk, 1)}, dim=1)")
    call = f"torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal={causal})"
    if p.get("backward"):
        return lines + [f"return lambda: {call}.sum().backward()"], ""
    return lines + [f"return lambda: {call}"], ""


def moe(p: dict) -> tuple[list[str], str]:
    used = p.get("unique") or min(p["E"], p["M"] * p["topk"])
    rows, hidden, inter = math.ceil(p["M"] * p["topk"] / used), p["H"], p["In"]
    return [f"x = rand(({used}, {rows}, {hidden}), torch.bfloat16, device)",
            f"w1 = rand(({used}, {hidden}, {2 * inter}), torch.bfloat16, device)",
            f"w2 = rand(({used}, {inter}, {hidden}), torch.bfloat16, device)",
            "def run():",
            "    gate_up = torch.bmm(x, w1)",
            f"    act = torch.nn.functional.silu(gate_up[..., :{inter}]) * gate_up[..., {inter}:]",
            "    return torch.bmm(act, w2)",
            "return run"], ""


def torch_op(p: dict) -> tuple[list[str] | None, str]:
    sizes = python_list(p.get("sizes"))
    if sizes is None:
        return None, "PyTorch operator without input sizes (collect with --pytorch autograd-shapes-hgtx)"
    while sizes and sizes[-1] == []:
        sizes = sizes[:-1]
    args = []
    for shape in sizes:
        if shape and all(isinstance(x, int) for x in shape):
            args.append(f"rand({tuple(shape)!r}, dtype, device)")
        elif shape and all(isinstance(s, list) and all(isinstance(x, int) for x in s) for s in shape):
            args.append("[" + ", ".join(f"rand({tuple(s)!r}, dtype, device)" for s in shape) + "]")
        else:
            return None, "a non-tensor argument before the last tensor (its value is not recorded)"
    namespace, _, name = p["op"].partition("::")
    return [f"op = getattr(getattr(torch.ops, {namespace!r}), {name!r})",
            f"args = [{', '.join(args)}]", "return lambda: op(*args)"], ""


def test_name(entry: Entry) -> str:
    short = re.split(r"[,\[]", entry.name)[0]
    slug = re.sub(r"\W+", "_", short).strip("_").lower()[:40] or "op"
    return f"test_{entry.rank:03d}_{slug}"
