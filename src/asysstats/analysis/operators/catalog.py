"""Fixed tables of the operator analysis: types, libraries, kernel names, data types, devices.

Device figures are dense (no sparsity) peak FLOP/s per data type and HBM bytes/s. PPU
figures are worked back from the utilisations printed in the rule reference (asys-cli.md,
Devices); PPU-ZW810 and PPU-ZW610 are estimates. NVIDIA figures are the vendors' data
sheets. ``--device-spec FILE`` adds entries (JSON, see :func:`read_device_spec`) that are
tried before the built-in ones.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import regex

from asysstats.core.errors import AsysError, quoted
from asysstats.core.input_files import read_small_file
from asysstats.core.json_bounds import check_json
from asysstats.core.regexes import MATCH_TIMEOUT_S, compile_user_regex

GEMM, FLASH_ATTENTION, MOE, PCCL, PYTORCH, OTHERS = "GEMM", "FlashAttention", "MoE", "PCCL", "PyTorch", "others"
BUILTIN_TYPES = (GEMM, FLASH_ATTENTION, MOE, PCCL, PYTORCH)
FRAMEWORK, LIBRARY = 0, 1  # operator layers of the breakdown rules (kernels are the third)

# ``[LIB] --format=...`` ranges: library name (lower case) -> operator type.
LIBRARIES = {"acblas": GEMM, "cublas": GEMM, "deepgemm": GEMM, "fmha": FLASH_ATTENTION, "mla": FLASH_ATTENTION,
             "flashmla": FLASH_ATTENTION, "moe": MOE}
# PyTorch autograd ranges: ``namespace::op[, key = value ...]``. A name in one of these
# namespaces (or ending in ``_C``), or with autograd fields, is a PyTorch operator.
TORCH_NAMESPACES = frozenset({"aten", "prim", "c10d", "quantized", "torchvision", "torchaudio", "vllm", "sgl_kernel",
                              "trtllm", "fbgemm", "torchao", "xformers", "flash_attn", "mkldnn", "cudnn", "nvte"})
TORCH_NAME = re.compile(r"(?P<ns>[A-Za-z_]\w*)::(?P<op>[A-Za-z_][\w.]*)")
AUTOGRAD_FIELDS = ("seq", "op_id", "sizes", "input_op_ids")
# Kernel names -> type, tried in this order (case-insensitive search in the demangled name).
KERNEL_TYPES = (
    (PCCL, re.compile(r"^(?:void\s+)?(?:pccl|nccl)", re.IGNORECASE)),  # docs/decisions.md D21
    (MOE, re.compile(r"fused_moe|marlin_moe|moe_wna16", re.IGNORECASE)),
    (FLASH_ATTENTION, re.compile(r"flash|fmha|^attn_fwd|^_?attn_bwd", re.IGNORECASE)),
    (GEMM, re.compile(r"gemm|cublas|cutlass|nvjet|^Cijk_|hipblaslt|rocblas", re.IGNORECASE)),
)

# Data types: normalised name -> (element bytes, peak field). Spellings are mapped by ``dtype_of``.
DTYPES = {"bf16": (2, "bf16"), "fp16": (2, "fp16"), "fp32": (4, "fp32"), "tf32": (4, "fp32"), "fp8": (1, "fp8"),
          "int8": (1, "int8")}
DTYPE_SPELLINGS = (("bf16", ("bf16", "16bf", "bfloat16")), ("fp16", ("fp16", "16f", "half", "float16")),
                   ("tf32", ("tf32",)), ("fp32", ("fp32", "32f", "float32", "float")),
                   ("fp8", ("fp8", "8f", "e4m3", "e5m2", "float8")), ("int8", ("int8", "8i", "i8")))
DEFAULT_DTYPE = "bf16"  # annotations without a data type (MoE) are taken as bf16
PEAK_FIELDS = ("bf16", "fp16", "fp32", "fp8", "int8")
TABLE_PEAKS = {"bf16": "peakFlopsBf16", "fp16": "peakFlopsFp16", "fp32": "peakFlopsFp32", "fp8": "peakFlopsFp8",
               "int8": "peakFlopsInt8"}


def dtype_of(text: str | None) -> str | None:
    """Normalised data type of an annotation's spelling (``BF16``, ``16F``, ``float16`` ...)."""
    if not text:
        return None
    lowered = text.strip().lower().removeprefix("cuda_r_").removeprefix("r_")
    for name, spellings in DTYPE_SPELLINGS:
        if lowered in spellings:
            return name
    return None


@dataclass(frozen=True)
class DeviceSpec:
    """Peak figures of one device model; ``match`` is searched case-insensitively in the name."""

    match: str
    name: str
    bandwidth: float  # HBM bytes/s
    bf16: float = math.nan
    fp16: float = math.nan
    fp32: float = math.nan
    fp8: float = math.nan
    int8: float = math.nan
    estimate: bool = False


T, TB = 1e12, 1e12
BUILTIN_DEVICES = (
    DeviceSpec(r"ZW810E", "PPU-ZW810E", 2.7648 * TB, bf16=139 * T, fp16=139 * T, fp32=34.75 * T, int8=278 * T),
    DeviceSpec(r"M890P", "ZW-M890P", 2.7 * TB, bf16=430 * T, fp16=430 * T),
    DeviceSpec(r"ZW810", "PPU-ZW810", 2.7648 * TB, bf16=139 * T, fp16=139 * T, fp32=34.75 * T, int8=278 * T,
               estimate=True),
    DeviceSpec(r"ZW610", "PPU-ZW610", 1.6 * TB, bf16=70 * T, fp16=70 * T, fp32=17.5 * T, int8=140 * T, estimate=True),
    DeviceSpec(r"B200", "NVIDIA B200", 8.0 * TB, bf16=2250 * T, fp16=2250 * T, fp32=80 * T, fp8=4500 * T,
               int8=4500 * T),
    DeviceSpec(r"H200", "NVIDIA H200", 4.8 * TB, bf16=989 * T, fp16=989 * T, fp32=67 * T, fp8=1979 * T, int8=1979 * T),
    DeviceSpec(r"H20\b", "NVIDIA H20", 4.0 * TB, bf16=148 * T, fp16=148 * T, fp32=44 * T, fp8=296 * T, int8=296 * T),
    DeviceSpec(r"H100.*PCIe", "NVIDIA H100 PCIe", 2.0 * TB, bf16=756 * T, fp16=756 * T, fp32=51 * T, fp8=1513 * T,
               int8=1513 * T),
    DeviceSpec(r"H100|H800", "NVIDIA H100 SXM", 3.35 * TB, bf16=989 * T, fp16=989 * T, fp32=67 * T, fp8=1979 * T,
               int8=1979 * T),
    DeviceSpec(r"A100.*40GB", "NVIDIA A100 40GB", 1.555 * TB, bf16=312 * T, fp16=312 * T, fp32=19.5 * T, int8=624 * T),
    DeviceSpec(r"A100|A800", "NVIDIA A100", 2.0 * TB, bf16=312 * T, fp16=312 * T, fp32=19.5 * T, int8=624 * T),
    DeviceSpec(r"L40S", "NVIDIA L40S", 0.864 * TB, bf16=362 * T, fp16=362 * T, fp32=91.6 * T, fp8=733 * T,
               int8=733 * T),
    DeviceSpec(r"\bL4\b", "NVIDIA L4", 0.3 * TB, bf16=121 * T, fp16=121 * T, fp32=30.3 * T, fp8=242 * T, int8=242 * T),
    DeviceSpec(r"A40\b", "NVIDIA A40", 0.696 * TB, bf16=149.7 * T, fp16=149.7 * T, fp32=37.4 * T, int8=299.3 * T),
    DeviceSpec(r"A10\b", "NVIDIA A10", 0.6 * TB, bf16=125 * T, fp16=125 * T, fp32=31.2 * T, int8=250 * T),
    DeviceSpec(r"V100", "NVIDIA V100", 0.9 * TB, fp16=125 * T, fp32=15.7 * T),
    DeviceSpec(r"\bT4\b", "NVIDIA T4", 0.32 * TB, fp16=65 * T, fp32=8.1 * T, int8=130 * T),
)
SPEC_KEYS = frozenset({"match", "name", "bandwidth", "estimate", *PEAK_FIELDS})


def find_device(name: str | None, extra: tuple[DeviceSpec, ...] = ()) -> DeviceSpec | None:
    """The first entry (user entries first) whose pattern occurs in the device name."""
    if not name:
        return None
    for spec in extra + BUILTIN_DEVICES:
        if regex.search(spec.match, name, regex.IGNORECASE, timeout=MATCH_TIMEOUT_S):
            return spec
    return None


def read_device_spec(path: str) -> tuple[DeviceSpec, ...]:
    """``--device-spec FILE``: a JSON list of objects ``{"match": <regex>, "name": ...,
    "bandwidth": <B/s>, "bf16"/"fp16"/"fp32"/"fp8"/"int8": <FLOP/s>}`` (``match`` and
    ``bandwidth`` required; absent peaks are unknown)."""
    where = f"--device-spec {path}"
    data = read_small_file(Path(path), where)
    try:
        text = data.decode("utf-8")
        check_json(data, where)
        entries = json.loads(text)
    except (UnicodeDecodeError, ValueError) as exc:
        raise AsysError(f"{where}: cannot read a JSON list of devices ({str(exc).splitlines()[0]})") from exc
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        raise AsysError(f"{where}: expected a JSON list of device objects")
    return tuple(_device_entry(entry, f"{where}: entry {i}") for i, entry in enumerate(entries, start=1))


def _device_entry(entry: object, where: str) -> DeviceSpec:
    if not isinstance(entry, dict):
        raise AsysError(f"{where}: expected an object")
    unknown = sorted(set(entry) - SPEC_KEYS)
    if unknown:
        raise AsysError(f"{where}: unknown key(s) {', '.join(unknown)} (keys: {', '.join(sorted(SPEC_KEYS))})")
    match = entry.get("match")
    if not isinstance(match, str) or not match:
        raise AsysError(f"{where}: 'match' must be a non-empty regular expression")
    compile_user_regex(match, f"{where}: 'match'")
    numbers = {}
    for key in ("bandwidth", *PEAK_FIELDS):
        value = entry.get(key)
        if value is None and key != "bandwidth":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or math.isinf(value):
            raise AsysError(f"{where}: '{key}' must be a positive number (FLOP/s or bytes/s), got {quoted(value)}")
        numbers[key] = float(value)
    return DeviceSpec(match, str(entry.get("name", match)), estimate=bool(entry.get("estimate", False)), **numbers)
