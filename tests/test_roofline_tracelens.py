"""ppu_op_roofline against TraceLens's perf-model sheets of the Kineto corpus
(``tracelens_*.golden/{GEMM,SDPA_fwd,CONV_fwd,CONV_bwd,UnaryElementwise,BinaryElementwise,
Normalization,Reduce_fwd}.csv``; MANIFEST.md names how they were made).

* Work: every golden row's ``GFLOPS_first`` and ``Data Moved (MB)_first`` (MB = 2^20 bytes)
  equal our row of the same call (name, Input Dims, Input type, Input Strides, Concrete
  Inputs) to 1e-6, except the rows of ``WORK_DIFFERS``.
* Rates: ``TFLOPS/s_mean`` and ``TB/s_mean`` (means over instances of work / kernel time)
  equal ours within 0.5 %, compared as count-weighted means over (name, Input Dims, Input
  type, Input Strides) on both sides: TraceLens's sheets group by their parameters, which
  leave out flags such as ``copy_``'s non_blocking, and the resnet sheets split each row
  into first pass and activation-checkpoint recompute (``detect_recompute=True``); we
  group by the whole recorded call. Instances and kernel time are compared the same way.
"""

from __future__ import annotations

import ast
import csv
import math
from collections import defaultdict

import pytest

import asysstats

from conftest import CORPUS

KINETO = CORPUS / "kineto"
SHEETS = ("GEMM", "SDPA_fwd", "CONV_fwd", "CONV_bwd", "UnaryElementwise", "BinaryElementwise", "Normalization",
          "Reduce_fwd")
FOLDERS = sorted(KINETO.glob("tracelens_*.golden")) if KINETO.is_dir() else []
MIB = 2 ** 20
# TraceLens's inference report of this trace merges the graph-capture trace into the decode
# trace (merge_capture_trace_into_graph) and attributes the graph's kernels to the captured
# operators; we read the decode trace alone: its rows' instances and times are not ours.
CAPTURE_MERGED = "tracelens_mi300_sglang_decode"
# (folder, operator, Input Dims) -> why our work differs (docs/operators.md, "Models").
REDUCTION_DIM = ("TraceLens skips a string Concrete Input when it looks for the reduced dims and counts one output "
                 "element; we count the real output (bytes differ by the output, FLOPs agree)")
WORK_DIFFERS = {
    ("tracelens_h100_qwen", "aten::mean", "[[16, 559, 1024], [], [], []]"): REDUCTION_DIM,
    ("tracelens_mi300_resnet_ackpt", "aten::sum", "[[10, 1000], [], [], []]"): REDUCTION_DIM,
    ("tracelens_mi300_resnet_ackpt", "aten::mean", "[[10, 512, 7, 7], [], [], []]"): REDUCTION_DIM,
    ("tracelens_mi300_resnet_ackpt", "aten::convolution_backward",
     "[[10, 64, 112, 112], [10, 3, 224, 224], [64, 3, 7, 7], [], [], [], [], [], [], [], []]"):
        "output_mask [False, True, False]: the first layer computes no input gradient; TraceLens ignores the mask "
        "and counts it, we count the weight gradient only (half its FLOPs and bytes)",
}


def memset_named(stem: str, name: str) -> bool:
    """TraceLens leaves the workspace memsets MIOpen's convolutions launch (hipMemsetAsync inside
    aten::convolution / convolution_backward) out of their kernel time, though its H100 GEMM rows
    count cuBLAS's memset; we count every activity an operator launched."""
    return stem == "tracelens_mi300_resnet_ackpt" and name.startswith("aten::convolution")


def call_name(row: dict) -> str:
    """Our OP Name of the golden row's call (the Kineto reader's text of a cpu_op)."""
    return (f"{row['name']}, sizes = {row['Input Dims_first']}, types = {row['Input type_first']}, "
            f"strides = {row['Input Strides_first']}, concrete = {row['Concrete Inputs_first']}")


def coarse(name: str) -> str:
    return name.split(", concrete = ")[0]


def golden_rows(folder):
    for sheet in SHEETS:
        path = folder / f"{sheet}.csv"
        if path.exists():
            with path.open(newline="") as handle:
                yield from ((sheet, row) for row in csv.DictReader(handle))


@pytest.fixture(scope="module", params=FOLDERS or [None], ids=lambda p: p.name if p else "absent")
def case(request):
    folder = request.param
    if folder is None:
        pytest.skip("the Kineto corpus is absent")
    trace = folder.with_name(folder.name.replace(".golden", ".json.gz"))
    with asysstats.open(trace, cache=False) as report:
        ours = report.stats("ppu_op_roofline").to_pylist()
    return folder, list(golden_rows(folder)), ours


def test_work_equals_the_golden_models(case):
    folder, golden, ours = case
    by_name = {row["OP Name"]: row for row in ours}
    checked = 0
    for sheet, row in golden:
        mine = by_name.get(call_name(row))
        if mine is None:
            # listed by TraceLens without device work (no kernel time), or captured in the graph trace
            assert float(row["Kernel Time (µs)_sum"]) == 0 or folder.stem == CAPTURE_MERGED, (sheet, call_name(row))
            continue
        key = (folder.stem, row["name"], row["Input Dims_first"])
        flops, moved = mine["GFLOPs"], mine["Data Moved (MB)"] * 1e6 / MIB
        if key in WORK_DIFFERS:
            assert flops == pytest.approx(float(row["GFLOPS_first"]), rel=1e-6) or "half" in WORK_DIFFERS[key]
            assert moved != pytest.approx(float(row["Data Moved (MB)_first"]), rel=1e-6), WORK_DIFFERS[key]
            continue
        assert flops == pytest.approx(float(row["GFLOPS_first"]), rel=1e-6, abs=1e-15), (sheet, call_name(row))
        assert moved == pytest.approx(float(row["Data Moved (MB)_first"]), rel=1e-6), (sheet, call_name(row))
        checked += 1
    assert checked >= {"tracelens_mi300_sglang_decode": 1}.get(folder.stem, len(golden) // 2)


def grouped(rows, count: str, time: str, *rates: str) -> dict[str, tuple[float, ...]]:
    """Per coarse name: the summed count and time, and the count-weighted mean of each rate."""
    out: dict[str, list[float]] = {}
    for name, row in rows:
        n = float(row[count])
        entry = out.setdefault(coarse(name), [0.0] * (2 + len(rates)))
        entry[0] += n
        entry[1] += float(row[time])
        for i, column in enumerate(rates, start=2):
            value = row[column]
            entry[i] += n * (float("nan") if value in ("", None) else float(value))
    return {k: (v[0], v[1], *(x / v[0] for x in v[2:])) for k, v in out.items()}


def test_rates_instances_and_kernel_time_equal_the_golden(case):
    folder, golden, ours = case
    if folder.stem == CAPTURE_MERGED:
        pytest.skip(f"{CAPTURE_MERGED}: TraceLens merged the graph-capture trace into this one")
    timed = [(call_name(row), row) for _, row in golden if float(row["Kernel Time (µs)_sum"]) > 0]
    theirs = grouped(timed, "name_count", "Kernel Time (µs)_sum", "TFLOPS/s_mean", "TB/s_mean")
    mine = grouped([(row["OP Name"], row) for row in ours], "Instances", "Kernel Time (ns)", "TFLOP/s", "TB/s")
    differ = {}
    for name, (count, time_us, tflops, tbs) in theirs.items():
        our_count, time_ns, our_tflops, our_tbs = mine[name]
        reason = next((r for (stem, op, dims), r in WORK_DIFFERS.items()
                       if stem == folder.stem and name.startswith(f"{op}, sizes = {dims}")), None)
        if reason is not None and "half" in reason:  # the weight gradient alone: half the work
            tflops, tbs = tflops / 2, tbs / 2
        elif reason is not None:  # the reductions: FLOPs agree, bytes differ by the output
            tbs = our_tbs if our_tbs > tbs else math.nan
        same = (our_count == count and time_ns == pytest.approx(time_us * 1000, rel=5e-3)
                and (our_tflops, our_tbs) == pytest.approx((tflops, tbs), rel=5e-3, nan_ok=True))
        if not same:
            differ[name] = (our_count, count, time_ns, time_us * 1000)
    assert [n for n in differ if not memset_named(folder.stem, n)] == []
    assert all(ours_n == theirs_n and ours_t > theirs_t for ours_n, theirs_n, ours_t, theirs_t in differ.values())


def test_every_golden_call_with_kernels_has_a_row(case):
    folder, golden, ours = case
    names = {row["OP Name"] for row in ours}
    timed = {call_name(row) for _, row in golden if float(row["Kernel Time (µs)_sum"]) > 0}
    missing = sorted(timed - names)
    if folder.stem == CAPTURE_MERGED:
        assert missing  # the graph-captured operators are not in the decode trace's own calls
    else:
        assert missing == []
    assert all(ast.literal_eval(name.split("sizes = ")[1].split(", types")[0]) is not None for name in timed)
