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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection

import numpy as np

from asysstats.analysis.operators.catalog import DEFAULT_DTYPE, DTYPES, PEAK_FIELDS, TABLE_PEAKS, find_device
from asysstats.analysis.operators.parsers import Parsed
from asysstats.compute.distinct import distinct

if TYPE_CHECKING:
    from asysstats.analysis.inputs import Inputs

WORK_FIELDS = ("flops", "load", "store")
DEFAULT_FIELD = PEAK_FIELDS.index(DTYPES[DEFAULT_DTYPE][1])  # the peak field of an operator without a data type


@dataclass(frozen=True)
class Work:
    flops: float
    load: float
    store: float
    dtype: str = DEFAULT_DTYPE

    def __add__(self, other: "Work") -> "Work":
        return Work(self.flops + other.flops, self.load + other.load, self.store + other.store, self.dtype)


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


def work_of(parsed: Parsed) -> Work | None:
    """The whole operator's work (a MoE layer: both GEMMs), None without a model."""
    if parsed.family == "gemm":
        return gemm_work(parsed.params)
    if parsed.family == "flash":
        return attention_work(parsed.params)
    if parsed.family == "moe":
        pair = moe_work(parsed.params)
        return pair[0] + pair[1] if pair else None
    return None


def work_arrays(works: Collection[Work | None]) -> dict[str, np.ndarray]:
    """``flops``/``load``/``store`` floats (NaN without a model) and ``field`` (the data type's
    peak field, an index into ``PEAK_FIELDS``) per item."""
    out = {f: np.array([getattr(w, f) if w else math.nan for w in works], dtype=np.float64) for f in WORK_FIELDS}
    out["field"] = np.array([PEAK_FIELDS.index(w.dtype) if w else DEFAULT_FIELD for w in works], dtype=np.int64)
    return out


PEAK_READS = {"devices": ("id", "name", "memoryBandwidth") + tuple(TABLE_PEAKS.values())}  # what device_peaks reads


def device_peaks(inputs: "Inputs") -> dict[int, dict[str, float]]:
    """Per device id: peak FLOP/s per data type and ``bandwidth``, from the devices table
    where it has them, else from the catalogue (``--device-spec`` entries first)."""
    table = inputs.table("devices", PEAK_READS["devices"])
    names = inputs.strings.lookup(table["name"])
    extra = tuple(getattr(inputs.settings, "device_specs", ()))
    peaks: dict[int, dict[str, float]] = {}
    for row, (device, name) in enumerate(zip(table["id"].tolist(), names)):
        spec = find_device(name, extra)
        figures = {f: float(table[TABLE_PEAKS[f]][row]) for f in PEAK_FIELDS}
        figures["bandwidth"] = float(table["memoryBandwidth"][row])
        for f, value in figures.items():
            if not value > 0:
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
    peaks = np.array([[f.get(name, math.nan) for name in PEAK_FIELDS] for f in figures], dtype=np.float64)
    flops = peaks.reshape(len(known), len(PEAK_FIELDS))[device, fields]
    bandwidth = np.array([f.get("bandwidth", math.nan) for f in figures], dtype=np.float64)[device]
    lacking = needed & (np.isnan(flops) | np.isnan(bandwidth))
    for i in distinct(device[lacking])[0].tolist():
        name = figures[i].get("name") or "not listed in the report"
        inputs.notes.append(f"{inputs.path.name}: no peak figures for PPU device {known[i]} ({name}); "
                            "utilisation is '-' (describe the device with --device-spec FILE)")
    return flops, bandwidth
