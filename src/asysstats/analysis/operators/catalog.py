"""Fixed tables of the operator analysis: types, libraries, kernel names, data types, devices.

Device figures are per device as the report lists it: dense (no sparsity) peak FLOP/s per
data type (``fp32`` is the non-tensor FP32 vector rate, also used for vector operators) and
memory bytes/s; NaN where the device has no such rate (V100 bf16) or no public figure. PPU
figures are worked back from the utilisations printed in the rule reference (asys-cli.md,
Devices); PPU-ZW810 and PPU-ZW610 are estimates. NVIDIA and AMD figures are the vendors'
data sheets and architecture white papers (sparse-only figures halved; an MI250/MI250X
device is one of the module's two dies, so half the module's figures); H20 has no public
data sheet and is marked an estimate. The sources are listed in docs/operators.md. Entries
are tried in order, so a specific pattern (``H100.*NVL``) precedes a general one
(``H100``). ``--device-spec FILE`` adds entries (JSON, see :func:`read_device_spec`) that
are tried before the built-in ones.
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
MARKER = 2  # the layer of pyprof markers: modelled (ppu_op_roofline), in no breakdown

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
    # PPU: kept as they are (the reference's example outputs depend on these figures).
    DeviceSpec(r"ZW810E", "PPU-ZW810E", 2.7648 * TB, bf16=139 * T, fp16=139 * T, fp32=34.75 * T, int8=278 * T),
    DeviceSpec(r"M890P", "ZW-M890P", 2.7 * TB, bf16=430 * T, fp16=430 * T),
    DeviceSpec(r"ZW810", "PPU-ZW810", 2.7648 * TB, bf16=139 * T, fp16=139 * T, fp32=34.75 * T, int8=278 * T,
               estimate=True),
    DeviceSpec(r"ZW610", "PPU-ZW610", 1.6 * TB, bf16=70 * T, fp16=70 * T, fp32=17.5 * T, int8=140 * T, estimate=True),
    # NVIDIA Blackwell (GB200 before B200, which its name contains)
    DeviceSpec(r"GB200", "NVIDIA GB200", 8.0 * TB, bf16=2500 * T, fp16=2500 * T, fp32=80 * T, fp8=5000 * T,
               int8=5000 * T),
    DeviceSpec(r"B200", "NVIDIA B200", 8.0 * TB, bf16=2250 * T, fp16=2250 * T, fp32=75 * T, fp8=4500 * T,
               int8=4500 * T),
    # NVIDIA Hopper (GH200 before H200, which its name contains; NVL and PCIe before SXM)
    DeviceSpec(r"GH200.*(144G|HBM3e)", "NVIDIA GH200 (144GB HBM3e)", 4.9 * TB, bf16=989.4 * T, fp16=989.4 * T,
               fp32=66.9 * T, fp8=1978.9 * T, int8=1978.9 * T),
    DeviceSpec(r"GH200", "NVIDIA GH200 (96GB HBM3)", 4.0 * TB, bf16=989.4 * T, fp16=989.4 * T, fp32=66.9 * T,
               fp8=1978.9 * T, int8=1978.9 * T),
    DeviceSpec(r"H200.*NVL", "NVIDIA H200 NVL", 4.8 * TB, bf16=835.5 * T, fp16=835.5 * T, fp32=60 * T,
               fp8=1670.5 * T, int8=1670.5 * T),
    DeviceSpec(r"H200", "NVIDIA H200", 4.8 * TB, bf16=989.4 * T, fp16=989.4 * T, fp32=66.9 * T, fp8=1978.9 * T,
               int8=1978.9 * T),
    DeviceSpec(r"H20\b", "NVIDIA H20", 4.0 * TB, bf16=148 * T, fp16=148 * T, fp32=44 * T, fp8=296 * T, int8=296 * T,
               estimate=True),
    DeviceSpec(r"H100.*NVL", "NVIDIA H100 NVL", 3.9 * TB, bf16=835.5 * T, fp16=835.5 * T, fp32=60 * T,
               fp8=1670.5 * T, int8=1670.5 * T),
    DeviceSpec(r"H[18]00.*PCIe", "NVIDIA H100 PCIe", 2.0 * TB, bf16=756.5 * T, fp16=756.5 * T, fp32=51 * T,
               fp8=1513 * T, int8=1513 * T),
    DeviceSpec(r"H100|H800", "NVIDIA H100 SXM", 3.35 * TB, bf16=989.4 * T, fp16=989.4 * T, fp32=66.9 * T,
               fp8=1978.9 * T, int8=1978.9 * T),
    # NVIDIA Ampere (A100 by memory and form factor: PG509-200 is the 40GB SXM4 board)
    DeviceSpec(r"A[18]00.*(80GB.*PCIe|PCIe.*80GB)", "NVIDIA A100 80GB PCIe", 1.935 * TB, bf16=312 * T, fp16=312 * T,
               fp32=19.5 * T, int8=624 * T),
    DeviceSpec(r"A[18]00.*(40GB|PG509-200)", "NVIDIA A100 40GB", 1.555 * TB, bf16=312 * T, fp16=312 * T,
               fp32=19.5 * T, int8=624 * T),
    DeviceSpec(r"A100|A800", "NVIDIA A100 80GB SXM", 2.039 * TB, bf16=312 * T, fp16=312 * T, fp32=19.5 * T,
               int8=624 * T),
    DeviceSpec(r"A30\b", "NVIDIA A30", 0.933 * TB, bf16=165 * T, fp16=165 * T, fp32=10.3 * T, int8=330 * T),
    DeviceSpec(r"A40\b", "NVIDIA A40", 0.696 * TB, bf16=149.7 * T, fp16=149.7 * T, fp32=37.4 * T, int8=299.3 * T),
    DeviceSpec(r"A10\b", "NVIDIA A10", 0.6 * TB, bf16=125 * T, fp16=125 * T, fp32=31.2 * T, int8=250 * T),
    # NVIDIA Ada (L40S before L40)
    DeviceSpec(r"L40S", "NVIDIA L40S", 0.864 * TB, bf16=362.05 * T, fp16=362.05 * T, fp32=91.6 * T, fp8=733 * T,
               int8=733 * T),
    DeviceSpec(r"L40\b", "NVIDIA L40", 0.864 * TB, bf16=181.05 * T, fp16=181.05 * T, fp32=90.5 * T, fp8=362 * T,
               int8=362 * T),
    DeviceSpec(r"\bL4\b", "NVIDIA L4", 0.3 * TB, bf16=121 * T, fp16=121 * T, fp32=30.3 * T, fp8=242.5 * T,
               int8=242.5 * T),
    # NVIDIA Volta and Turing: no bf16 or fp8 tensor rate; V100 lists no int8 rate.
    DeviceSpec(r"V100S", "NVIDIA V100S PCIe", 1.134 * TB, fp16=130 * T, fp32=16.4 * T),
    DeviceSpec(r"V100.*PCIe", "NVIDIA V100 PCIe", 0.9 * TB, fp16=112 * T, fp32=14 * T),
    DeviceSpec(r"V100", "NVIDIA V100 SXM2", 0.9 * TB, fp16=125 * T, fp32=15.7 * T),
    DeviceSpec(r"\bT4\b", "NVIDIA T4", 0.32 * TB, fp16=65 * T, fp32=8.1 * T, int8=130 * T),
    # AMD CDNA 4 and 3
    DeviceSpec(r"MI355X", "AMD Instinct MI355X", 8.0 * TB, bf16=2516.6 * T, fp16=2516.6 * T, fp32=157.3 * T,
               fp8=5033.2 * T, int8=5033.2 * T),
    DeviceSpec(r"MI350X", "AMD Instinct MI350X", 8.0 * TB, bf16=2306.9 * T, fp16=2306.9 * T, fp32=144.2 * T,
               fp8=4613.7 * T, int8=4613.7 * T),
    DeviceSpec(r"MI325X", "AMD Instinct MI325X", 6.0 * TB, bf16=1307.4 * T, fp16=1307.4 * T, fp32=163.4 * T,
               fp8=2614.9 * T, int8=2614.9 * T),
    DeviceSpec(r"MI300X", "AMD Instinct MI300X", 5.3 * TB, bf16=1307.4 * T, fp16=1307.4 * T, fp32=163.4 * T,
               fp8=2614.9 * T, int8=2614.9 * T),
    DeviceSpec(r"MI300A", "AMD Instinct MI300A", 5.3 * TB, bf16=980.6 * T, fp16=980.6 * T, fp32=122.6 * T,
               fp8=1961.2 * T, int8=1961.2 * T),
    # AMD CDNA 2: an MI250X/MI250 module is two devices (dies); figures per die. ROCm names both
    # modules "MI250X / MI250", which takes the MI250X die (the higher peaks).
    DeviceSpec(r"MI250X", "AMD Instinct MI250X (one die)", 1.6384 * TB, bf16=191.5 * T, fp16=191.5 * T,
               fp32=23.95 * T, int8=191.5 * T),
    DeviceSpec(r"MI250\b", "AMD Instinct MI250 (one die)", 1.6384 * TB, bf16=181.05 * T, fp16=181.05 * T,
               fp32=22.65 * T, int8=181.05 * T),
    DeviceSpec(r"MI210", "AMD Instinct MI210", 1.6384 * TB, bf16=181 * T, fp16=181 * T, fp32=22.6 * T, int8=181 * T),
    DeviceSpec(r"MI100", "AMD Instinct MI100", 1.2288 * TB, bf16=92.3 * T, fp16=184.6 * T, fp32=23.1 * T,
               int8=184.6 * T),
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
