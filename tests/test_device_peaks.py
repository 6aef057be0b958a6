"""The built-in peak table: which entry each real device name takes, and the figures it gives."""

from __future__ import annotations

import gzip
import json
import math
import sqlite3

import pytest
from conftest import CORPUS

from asysstats.analysis.operators.catalog import (
    BUILTIN_DEVICES,
    PEAK_FIELDS,
    find_device,
)

T = 1e12

# Names real reports hold (nsys TARGET_INFO_GPU.name, Kineto deviceProperties.name) -> entry.
NAMES = [
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"), ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", "NVIDIA H100 NVL"), ("NVIDIA H800", "NVIDIA H100 SXM"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM"), ("NVIDIA A100-PG509-200", "NVIDIA A100 40GB"),
    ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB"), ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 40GB"),
    ("NVIDIA A100 80GB PCIe", "NVIDIA A100 80GB PCIe"), ("NVIDIA A800 80GB PCIe", "NVIDIA A100 80GB PCIe"),
    ("Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2"), ("Tesla V100-SXM2-32GB", "NVIDIA V100 SXM2"),
    ("Tesla V100-DGXS-32GB", "NVIDIA V100 SXM2"), ("Tesla V100-PCIE-16GB", "NVIDIA V100 PCIe"),
    ("Tesla V100S-PCIE-32GB", "NVIDIA V100S PCIe"), ("Tesla T4", "NVIDIA T4"),
    ("NVIDIA A10", "NVIDIA A10"), ("NVIDIA A10G", None), ("NVIDIA A30", "NVIDIA A30"), ("NVIDIA A40", "NVIDIA A40"),
    ("NVIDIA L40S", "NVIDIA L40S"), ("NVIDIA L40", "NVIDIA L40"), ("NVIDIA L4", "NVIDIA L4"),
    ("NVIDIA H200", "NVIDIA H200"), ("NVIDIA H200 NVL", "NVIDIA H200 NVL"), ("NVIDIA H20", "NVIDIA H20"),
    ("NVIDIA GH200 480GB", "NVIDIA GH200 (96GB HBM3)"), ("NVIDIA GH200 144G HBM3e", "NVIDIA GH200 (144GB HBM3e)"),
    ("NVIDIA B200", "NVIDIA B200"), ("NVIDIA GB200", "NVIDIA GB200"),
    ("AMD Instinct MI210", "AMD Instinct MI210"), ("AMD Instinct MI250X", "AMD Instinct MI250X (one die)"),
    ("AMD Instinct MI250X / MI250", "AMD Instinct MI250X (one die)"),
    ("AMD Instinct MI250", "AMD Instinct MI250 (one die)"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X"), ("AMD Instinct MI300X VF", "AMD Instinct MI300X"),
    ("AMD Instinct MI300A", "AMD Instinct MI300A"), ("AMD Instinct MI325X", "AMD Instinct MI325X"),
    ("AMD Instinct MI350X", "AMD Instinct MI350X"), ("AMD Instinct MI355X", "AMD Instinct MI355X"),
    ("AMD Instinct MI100", "AMD Instinct MI100"),
    ("PPU-ZW810E", "PPU-ZW810E"), ("PPU-ZW810", "PPU-ZW810"), ("PPU-ZW610", "PPU-ZW610"), ("ZW-M890P", "ZW-M890P"),
    # not in the table: consumer and workstation cards, an APU, an unnamed MI250 die
    ("AMD Radeon Graphics", None), ("NVIDIA GeForce RTX 3090", None), ("NVIDIA GeForce RTX 4060", None),
    ("NVIDIA RTX A5000", None), ("NVIDIA RTX A4000", None), ("Quadro RTX 6000", None), ("NVIDIA B300", None),
]


@pytest.mark.parametrize("name, entry", NAMES)
def test_each_real_name_takes_its_entry(name, entry):
    spec = find_device(name)
    assert (spec.name if spec else None) == entry
    assert find_device(name.lower()) == spec and find_device(name.upper()) == spec  # case-insensitive


REQUIRED = ("PPU-ZW810E", "NVIDIA V100 SXM2", "NVIDIA T4", "NVIDIA A100 80GB SXM", "NVIDIA A100 40GB", "NVIDIA A10",
            "NVIDIA L40S", "NVIDIA H100 SXM", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA H20", "NVIDIA B200",
            "AMD Instinct MI210", "AMD Instinct MI250X (one die)", "AMD Instinct MI300X")


def test_required_devices_have_bandwidth_and_a_16_bit_peak():
    by_name = {spec.name: spec for spec in BUILTIN_DEVICES}
    assert len(by_name) == len(BUILTIN_DEVICES)  # names are unique
    for name in REQUIRED:
        spec = by_name[name]
        assert spec.bandwidth > 0 and spec.fp16 > 0 and spec.fp32 > 0, name


def test_every_figure_is_positive_or_unknown():
    for spec in BUILTIN_DEVICES:
        for field in ("bandwidth", *PEAK_FIELDS):
            value = getattr(spec, field)
            assert math.isnan(value) or 0 < value < math.inf, (spec.name, field)


@pytest.mark.parametrize("name, field, value", [
    # dense figures: the data sheets' sparse ones halved (H100 SXM: 1,979 sparse, 989.4 dense)
    ("NVIDIA H100 80GB HBM3", "bf16", 989.4 * T), ("NVIDIA H100 80GB HBM3", "fp8", 1978.9 * T),
    ("NVIDIA H100 80GB HBM3", "fp32", 66.9 * T), ("NVIDIA H100 80GB HBM3", "bandwidth", 3.35e12),
    ("NVIDIA H100 PCIe", "bf16", 756.5 * T), ("NVIDIA H100 NVL", "fp8", 1670.5 * T),
    ("NVIDIA H200", "bf16", 989.4 * T), ("NVIDIA H200", "bandwidth", 4.8e12),
    ("NVIDIA A100-SXM4-80GB", "bf16", 312 * T), ("NVIDIA A100-SXM4-80GB", "int8", 624 * T),
    ("NVIDIA A100-SXM4-80GB", "bandwidth", 2.039e12), ("NVIDIA A100 80GB PCIe", "bandwidth", 1.935e12),
    ("NVIDIA A100-SXM4-40GB", "bandwidth", 1.555e12), ("NVIDIA L40S", "bf16", 362.05 * T),
    ("NVIDIA L40S", "fp8", 733 * T), ("NVIDIA L4", "fp8", 242.5 * T), ("NVIDIA B200", "bf16", 2250 * T),
    ("NVIDIA B200", "fp8", 4500 * T), ("Tesla V100-SXM2-16GB", "fp16", 125 * T), ("Tesla T4", "int8", 130 * T),
    ("AMD Instinct MI300X", "bf16", 1307.4 * T), ("AMD Instinct MI300X", "fp8", 2614.9 * T),
    ("AMD Instinct MI300X", "fp32", 163.4 * T), ("AMD Instinct MI300X", "bandwidth", 5.3e12),
    ("AMD Instinct MI325X", "bandwidth", 6.0e12), ("AMD Instinct MI355X", "bf16", 2516.6 * T),
    ("AMD Instinct MI210", "bf16", 181 * T), ("AMD Instinct MI210", "bandwidth", 1.6384e12),
    # one MI250X die: half the module's 383 TFLOP/s and 3.2768 TB/s
    ("AMD Instinct MI250X", "bf16", 191.5 * T), ("AMD Instinct MI250X", "bandwidth", 1.6384e12),
    # the PPU entries are unchanged
    ("PPU-ZW810E", "bf16", 139 * T), ("PPU-ZW810E", "fp32", 34.75 * T), ("PPU-ZW810E", "int8", 278 * T),
    ("PPU-ZW810E", "bandwidth", 2.7648e12), ("ZW-M890P", "bf16", 430 * T),
])
def test_known_dense_figures(name, field, value):
    assert getattr(find_device(name), field) == pytest.approx(value, rel=1e-9)


INT8_AT_FP16_RATE = ("AMD Instinct MI100", "AMD Instinct MI210", "AMD Instinct MI250X (one die)",
                     "AMD Instinct MI250 (one die)")


def test_dense_figures_keep_the_tensor_rate_ratios():
    """Dense tensor rates: fp16 = bf16 (MI100: bf16 at half rate), fp8 = 2 × fp16, int8 =
    2 × fp16 (CDNA 1 and 2: int8 = fp16). A sparse figure slipped in for one data type
    breaks its ratio by 2; 2 % allows the data sheets' own rounding (L40S: 362.05 and 733)."""
    for spec in BUILTIN_DEVICES:
        if spec.name != "AMD Instinct MI100" and not math.isnan(spec.bf16):
            assert spec.bf16 == spec.fp16, spec.name
        if not math.isnan(spec.fp8):
            assert spec.fp8 / spec.fp16 == pytest.approx(2, rel=0.02), spec.name
        if not math.isnan(spec.int8):
            expected = 1 if spec.name in INT8_AT_FP16_RATE else 2
            assert spec.int8 / spec.fp16 == pytest.approx(expected, rel=0.02), spec.name


def test_unknown_rates_are_nan():
    v100, t4, a100, mi250x = (find_device(n) for n in ("Tesla V100-SXM2-16GB", "Tesla T4", "NVIDIA A100-SXM4-80GB",
                                                       "AMD Instinct MI250X"))
    assert math.isnan(v100.bf16) and math.isnan(v100.fp8) and math.isnan(v100.int8)  # Volta: fp16 tensor cores only
    assert math.isnan(t4.bf16) and math.isnan(t4.fp8)
    assert math.isnan(a100.fp8) and math.isnan(mi250x.fp8)  # no fp8 before Hopper / CDNA 3


def test_estimates_are_marked():
    assert {spec.name for spec in BUILTIN_DEVICES if spec.estimate} == {"PPU-ZW810", "PPU-ZW610", "NVIDIA H20"}


def corpus_names() -> list[tuple[str, float]]:
    """(device name, memory bandwidth in bytes/s or NaN) of every report in the corpus."""
    names = []
    for path in sorted((CORPUS / "nsys").glob("*.sqlite")):
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            try:
                rows = db.execute("SELECT name, memoryBandwidth FROM TARGET_INFO_GPU").fetchall()
            except sqlite3.OperationalError:  # a CPU-only export
                continue
        names += [(name, float(bandwidth or math.nan)) for name, bandwidth in rows]
    for path in sorted((CORPUS / "kineto").glob("*.json.gz")):
        names += [(props["name"], math.nan) for props in kineto_device_properties(path)]
    return names


def kineto_device_properties(path) -> list[dict]:
    """The ``deviceProperties`` list of a Kineto trace, decoded alone (the traces are large)."""
    with gzip.open(path) as stream:
        text = stream.read().decode("utf-8")
    key = text.find('"deviceProperties"')
    if key < 0:
        return []
    return json.JSONDecoder().raw_decode(text, text.index("[", key))[0]


@pytest.mark.skipif(not (CORPUS / "nsys").is_dir(), reason="corpus absent")
def test_corpus_devices_match_and_their_reported_bandwidth_agrees():
    """Every data-centre device of the corpus has an entry, and where the export states its
    memory bandwidth the table's figure is within 3 % of it (H200: 4.8 TB/s sheet, 4.92 reported)."""
    names = corpus_names()
    assert names
    for name, reported in names:
        spec = find_device(name)
        consumer = any(word in name for word in ("GeForce", "RTX", "Radeon"))
        assert (spec is None) == consumer, name
        if spec and not math.isnan(reported):
            assert spec.bandwidth == pytest.approx(reported, rel=0.03), name
