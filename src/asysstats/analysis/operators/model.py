"""The utilisation model: FLOPs and HBM bytes per operator, peak figures per device.

Utilisation = work / (peak x time): compute = FLOPs / (peak FLOP/s of the data type x
time), HBM load = bytes read / (peak bytes/s x time), HBM store = bytes written / (...).
Bytes count each operand once (e = element size of the data type):

* GEMM (acBLAS, DeepGEMM dense): 2·m·n·k·batch FLOPs; load (m·k + k·n [+ m·n when beta != 0])·e
  per batch; store m·n·e per batch.
* Grouped GEMM (DeepGEMM ``Grouped*``; ``m`` counts the rows of all groups, ``GroupedMasked``
  rows per group): 2·m·n·k FLOPs; load (m·k + groups·k·n)·e (every group's weights);
  store m·n·e. With the rule reference's DeepGEMM rows and PPU-ZW810E peaks this gives
  2.6 / 262.6 and 2.3 / 235.1 (compute / load), as printed.
* Attention: QK^T and PV over the unmasked (query, key) pairs, sq·sk, causal
  sq·sk − sq·(sq−1)/2: 2·b·h·pairs·(d + dv) FLOPs (backward 2.5x); load Q, K, V (MLA: one
  latent K=V), store O (backward: load Q, K, V, O, dO; store dQ, dK, dV).
* MoE (bf16 unless stated): rows = M·topk, experts hit u = ``unique`` (else min(E, rows));
  GEMM1 (gate+up, n = 2·In): 2·rows·2In·H FLOPs, load (rows·H + u·H·2In)·e, store
  rows·2In·e; GEMM2 (down): 2·rows·In·H, load (rows·In + u·In·H)·e, store rows·H·e.
* PyTorch operators with recorded shapes (Kineto ``record_shapes``, ``emit_nvtx(record_shapes=True)``,
  pyprof markers): :mod:`torch_models`. Matrix operators (GEMM, convolution, attention) are
  measured against the dense peak of their data type, vector operators (elementwise,
  reductions, normalisations) against the FP32 peak; without recorded data types
  (``emit_nvtx``) BF16 is assumed, as for other annotations, and shown as ``bf16 (assumed)``. Kineto's
  own ``flops`` argument counts FLOPs where no model does (bytes unknown).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Collection

import numpy as np

from asysstats.analysis.operators.catalog import DEFAULT_DTYPE, DTYPES, PEAK_FIELDS, TABLE_PEAKS, find_device
from asysstats.analysis.operators.parsers import FRAMEWORK_CLAIM, Parsed, number, parse_pytorch, python_list
from asysstats.analysis.operators.torch_models import TorchCall, estimate
from asysstats.compute.distinct import distinct
from asysstats.core.strings import StringPool

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs
    from asysstats.analysis.operators.recognise import Recognised

WORK_FIELDS = ("flops", "load", "store")
DEFAULT_FIELD = PEAK_FIELDS.index(DTYPES[DEFAULT_DTYPE][1])  # the peak field of an operator without a data type
NO_FIELD = len(PEAK_FIELDS)  # work no listed peak applies to (FP64, Kineto's FLOPs): compute utilisation unknown
VECTOR_FIELD = "fp32"  # the peak of vector operators (elementwise, reductions, normalisations)
ASSUMED_DTYPE = DEFAULT_DTYPE  # PyTorch operators whose types were not recorded (emit_nvtx), as other annotations


@dataclass(frozen=True)
class Work:
    """The modelled work of one operator call: FLOPs, bytes loaded and stored, the peak field
    its FLOPs are measured against (``""``: none applies), its data type and the model's name."""

    flops: float
    load: float
    store: float
    field: str = DEFAULT_DTYPE
    dtype: str = DEFAULT_DTYPE
    model: str = ""

    def __add__(self, other: "Work") -> "Work":
        return replace(self, flops=self.flops + other.flops, load=self.load + other.load,
                       store=self.store + other.store)


def element(dtype: str | None) -> tuple[int, str]:
    """(bytes per element, peak field) of a normalised data type (bf16 when unknown)."""
    return DTYPES.get(dtype or DEFAULT_DTYPE, DTYPES[DEFAULT_DTYPE])


def gemm_work(p: dict) -> Work | None:
    m, n, k = p.get("m"), p.get("n"), p.get("k")
    if not (m and n and k):
        return None
    e, field = element(p.get("dtype"))
    kind, groups = p.get("kind", ""), p.get("groups") or 1
    if kind.startswith("Grouped"):
        rows = groups * m if kind == "GroupedMasked" else m
        return Work(2.0 * rows * n * k, (rows * k + groups * k * n) * e, rows * n * e, field)
    batch = groups if kind == "BatchGemm" else p.get("batch") or 1
    c_read = m * n if p.get("beta") else 0
    return Work(2.0 * m * n * k * batch, (m * k + k * n + c_read) * e * batch, m * n * e * batch, field)


def attention_work(p: dict) -> Work | None:
    b, h, d, sq, sk = (p.get(x) for x in ("batch", "heads", "head_dim", "seqlen_q", "seqlen_k"))
    if not (b and h and d and sq and sk):
        return None
    hk, dv = p.get("heads_k") or h, p.get("head_dim_v") or d
    e, field = element(p.get("dtype"))
    pairs = sq * sk - sq * (sq - 1) / 2 if p.get("causal") and sq <= sk else sq * sk
    flops = 2.0 * b * h * pairs * (d + dv)
    q, kk, v, o = b * sq * h * d * e, b * sk * hk * d * e, 0 if p.get("shared_kv") else b * sk * hk * dv * e, \
        b * sq * h * dv * e
    if p.get("backward"):
        return Work(2.5 * flops, q + kk + v + 2 * o, q + kk + v, field)
    return Work(flops, q + kk + v, o, field)


def moe_work(p: dict) -> tuple[Work, Work] | None:
    """(GEMM1, GEMM2) of a MoE layer."""
    if not p.get("M"):
        return None
    rows, hidden, inter = p["M"] * p["topk"], p["H"], p["In"]
    used = p.get("unique") or min(p["E"], rows)
    e, field = element(None)
    first = Work(2.0 * rows * 2 * inter * hidden, (rows * hidden + used * hidden * 2 * inter) * e,
                 rows * 2 * inter * e, field)
    second = Work(2.0 * rows * inter * hidden, (rows * inter + used * inter * hidden) * e, rows * hidden * e, field)
    return first, second


LIBRARY_MODELS = {"gemm": (gemm_work, "GEMM", "no m, n, k"),
                  "flash": (attention_work, "attention", "no batch, heads, head_dim, seqlen_q, seqlen_k"),
                  "moe": (lambda p: moe_pair_total(p), "MoE", "no M_E_H_In_topk shape")}


def moe_pair_total(p: dict) -> Work | None:
    pair = moe_work(p)
    return pair[0] + pair[1] if pair else None


def work_or_reason(parsed: Parsed) -> Work | str:
    """The whole operator's work (a MoE layer: both GEMMs), or why there is none."""
    if parsed.family == "pytorch":
        return pytorch_work(parsed.params)
    model = LIBRARY_MODELS.get(parsed.family)
    if model is None:
        return f"no model for {parsed.type} operators"
    function, name, missing = model
    work = function(parsed.params)
    if work is None:
        return f"{name}: {missing}"
    return replace(work, dtype=parsed.params.get("dtype") or DEFAULT_DTYPE, model=name)


def work_of(parsed: Parsed) -> Work | None:
    """The whole operator's work, None without a model."""
    found = work_or_reason(parsed)
    return found if isinstance(found, Work) else None


def pytorch_work(params: dict) -> Work | str:
    """A PyTorch operator's work from its recorded shapes (:mod:`torch_models`); Kineto's
    ``flops`` argument where no model applies."""
    op = params["op"]
    dims = python_list(params.get("sizes"))
    if dims is None:
        return f"{op}: no input shapes recorded (profile with record_shapes)"
    types = python_list(params.get("types"))
    call = TorchCall(op, dims, types, python_list(params.get("strides")), python_list(params.get("concrete")),
                     fallback_dtype=ASSUMED_DTYPE)
    found = estimate(call)
    if isinstance(found, str):
        flops = number(params.get("flops"), float)
        if flops and flops > 0:
            return Work(flops, math.nan, math.nan, "", "-", "Kineto flops")
        return found
    field = found.dtype if found.matrix else VECTOR_FIELD
    dtype = found.dtype if types is not None else f"{found.dtype} (assumed)"
    return Work(found.flops, found.read, found.written, field if field in PEAK_FIELDS else "", dtype, found.model)


def text_work(pool: StringPool, parsed: Recognised) -> dict[str, np.ndarray]:
    """Per recognised text: the work columns (:func:`work_arrays`) and the ``model`` and
    ``dtype`` string ids (``model``: the model's name, or why there is none). PyTorch texts
    recognised in bulk are modelled once per distinct text without its per-run ids."""
    eager = [work_or_reason(p) if p.claim != FRAMEWORK_CLAIM or p.family == "pytorch"
             else f"{p.library}: modelled where its library operators are" for p in parsed.eager]
    distinct_texts, slots = parsed.torch_shapes
    torch_works = [work_or_reason(found) if (found := parse_pytorch(text)) else "no model"
                   for text in distinct_texts.to_pylist()]
    works = eager + torch_works
    out = work_arrays([w if isinstance(w, Work) else None for w in works])
    labels = [w.model if isinstance(w, Work) else w for w in works]
    dtypes = [w.dtype if isinstance(w, Work) else "-" for w in works]
    index = np.concatenate([np.arange(len(eager)), len(eager) + slots])
    for column in list(out):
        out[column] = out[column][index]
    out["model"] = pool.intern(labels)[index] if works else np.empty(0, np.int64)
    out["dtype"] = pool.intern(dtypes)[index] if works else np.empty(0, np.int64)
    return out


def work_arrays(works: Collection[Work | None]) -> dict[str, np.ndarray]:
    """``flops``/``load``/``store`` floats (NaN without a model) and ``field`` (the peak field,
    an index into ``PEAK_FIELDS``; ``NO_FIELD`` where none applies) per item."""
    out = {f: np.array([getattr(w, f) if w else math.nan for w in works], dtype=np.float64) for f in WORK_FIELDS}
    out["field"] = np.array([field_index(w.field) if w else DEFAULT_FIELD for w in works], dtype=np.int64)
    return out


def field_index(field: str) -> int:
    return PEAK_FIELDS.index(field) if field in PEAK_FIELDS else NO_FIELD


PEAK_READS = {"devices": ("id", "name", "memoryBandwidth") + tuple(TABLE_PEAKS.values())}  # what device_peaks reads


def device_peaks(inputs: "Inputs") -> dict[int, dict[str, float]]:
    """Per device id: peak FLOP/s per data type and ``bandwidth``: a ``--device-spec`` entry
    matching the device's name first, then the figures of the devices table, then the
    built-in catalogue, figure by figure (an unknown figure falls through to the next)."""
    table = inputs.table("devices", PEAK_READS["devices"])
    names = inputs.strings.lookup(table["name"])
    extra = tuple(getattr(inputs.settings, "device_specs", ()))
    peaks: dict[int, dict[str, float]] = {}
    for row, (device, name) in enumerate(zip(table["id"].tolist(), names)):
        spec = find_device(name, extra)
        given = spec if spec in extra else None
        figures = {f: float(table[TABLE_PEAKS[f]][row]) for f in PEAK_FIELDS}
        figures["bandwidth"] = float(table["memoryBandwidth"][row])
        for f, value in figures.items():
            if given is not None and getattr(given, f) > 0:
                figures[f] = getattr(given, f)
            elif not value > 0:
                figures[f] = getattr(spec, f) if spec else math.nan
        figures["name"] = name
        peaks.setdefault(int(device), figures)
    return peaks


def peak_arrays(inputs: "Inputs", devices: np.ndarray, fields: np.ndarray,
                needed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Peak FLOP/s (of each row's peak ``fields``, indices into ``PEAK_FIELDS``) and bandwidth
    of each row's device; NaN when unknown, with one note per device whose figures a
    ``needed`` row lacks."""
    table = device_peaks(inputs)
    known, device = distinct(devices)
    figures = [table.get(d, {}) for d in known.tolist()]
    columns = PEAK_FIELDS + ("none",)  # NO_FIELD: no peak applies
    peaks = np.array([[f.get(name, math.nan) for name in columns] for f in figures], dtype=np.float64)
    flops = peaks.reshape(len(known), len(columns))[device, fields]
    bandwidth = np.array([f.get("bandwidth", math.nan) for f in figures], dtype=np.float64)[device]
    lacking = needed & (np.isnan(bandwidth) | (np.isnan(flops) & (fields != NO_FIELD)))
    for i in distinct(device[lacking])[0].tolist():
        name = figures[i].get("name") or "not listed in the report"
        inputs.notes.append(f"{inputs.path.name}: no peak figures for device {known[i]} ({name}); "
                            "utilisation is '-' (describe the device with --device-spec FILE)")
    return flops, bandwidth
