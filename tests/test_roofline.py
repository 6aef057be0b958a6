"""ppu_op_roofline and the utilisation columns on PyTorch operators: hand-made Kineto traces with
their timelines drawn, a brute-force property test, emit_nvtx and pyprof texts of Nsight
exports, the comparison, and every corpus trace."""

from __future__ import annotations

import csv
import io
import math
import shutil
import sqlite3

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import asysstats
from asysstats.analysis.operators.catalog import find_device

from conftest import NSYS_CORPUS, fingerprint, run_cli
from test_kineto import TRACES, gpu, write_trace, x
from test_operators_build import Build

H100 = find_device("NVIDIA H100 80GB HBM3")
BF16 = "c10::BFloat16"
LINEAR = {"Input Dims": [[4, 64, 128], [256, 128], [256]], "Input type": [BF16] * 3,
          "Input Strides": [[8192, 128, 1], [128, 1], [1]], "Concrete Inputs": ["", "", ""]}
ADDMM = {"Input Dims": [[256], [256, 128], [128, 256], [], []], "Input type": [BF16] * 3 + ["Scalar"] * 2,
         "Input Strides": [[1], [128, 1], [1, 128], [], []], "Concrete Inputs": ["", "", "", "1", "1"]}
# y = x W^T + b with M = 4 * 64 = 256, N = 256, K = 128 (bf16, 2 bytes):
GEMM_FLOPS = 2 * 256 * 256 * 128 + 256 * 256  # the product and the bias: 16,842,752
GEMM_BYTES = (256 * 128 + 128 * 256 + 256 * 256 + 256) * 2  # A, B, output, bias: 262,656

# CPU thread 100 (times in us):
#   aten::linear #1 1000 |---------------------| 1050     aten::linear #2 1100 |-----------| 1140
#   aten::addmm #1    1005 |-----------------| 1045       aten::addmm #2    1105 |-------| 1135
#   launches           c1 1010, c2 1014                    c3 1110
#   aten::foo 1300 |--| 1320 (c5 1305)        aten::mm 1400 |-| 1410 (launches nothing)
# GPU 0 stream 7:
#   k1 1020 |------| 1030   k2 1025 |--------| 1040      k3 1120 |------| 1130      k5 1310 |-| 1312
#   instance #1: union 1020..1040 = 20 us; instance #2: 10 us; aten::foo: 2 us
EVENTS = [
    x("cpu_op", "aten::linear", 1000, 50, **LINEAR),
    x("cpu_op", "aten::addmm", 1005, 40, **ADDMM),
    x("cuda_runtime", "cudaLaunchKernel", 1010, 1, correlation=1),
    x("cuda_runtime", "cudaLaunchKernel", 1014, 1, correlation=2),
    gpu("kernel", "gemm_part_one", 1020, 10, 1),
    gpu("kernel", "gemm_part_two", 1025, 15, 2),
    x("cpu_op", "aten::linear", 1100, 40, **LINEAR),
    x("cpu_op", "aten::addmm", 1105, 30, **ADDMM),
    x("cuda_runtime", "cudaLaunchKernel", 1110, 1, correlation=3),
    gpu("kernel", "gemm_whole", 1120, 10, 3),
    x("cpu_op", "aten::foo", 1300, 20, **{"Input Dims": [[8]], "Input type": ["float"]}),
    x("cuda_runtime", "cudaLaunchKernel", 1305, 1, correlation=5),
    gpu("kernel", "foo_kernel", 1310, 2, 5),
    x("cpu_op", "aten::mm", 1400, 10, **{"Input Dims": [[4, 8], [8, 2]], "Input type": ["float", "float"]}),
]
TOP = {"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]}


@pytest.fixture
def trace(tmp_path):
    return write_trace(tmp_path / "linear.json", EVENTS, **TOP)


def table(path, rule="ppu_op_roofline", **options):
    with asysstats.open(path, cache=False) as report:
        return report.stats(rule, **options).to_pylist()


def test_nested_operators_instances_union_and_mean_rates(trace):
    rows = table(trace)
    assert [r["OP Name"].split(",")[0] for r in rows] == ["aten::addmm", "aten::linear", "aten::foo"]
    for row in rows[:2]:
        assert (row["Instances"], row["Kernel Time (ns)"], row["Avg Kernel Time (ns)"]) == (2, 30_000, 15_000)
        assert row["GFLOPs"] == pytest.approx(GEMM_FLOPS / 1e9, rel=1e-12)
        assert row["Data Moved (MB)"] == pytest.approx(GEMM_BYTES / 1e6, rel=1e-12)
        assert row["FLOPs/Byte"] == pytest.approx(GEMM_FLOPS / GEMM_BYTES)
        # the mean of the instances' rates (20 us and 10 us), not the total over the total time
        rate = (GEMM_FLOPS / 20e-6 + GEMM_FLOPS / 10e-6) / 2 / 1e12
        assert row["TFLOP/s"] == pytest.approx(rate, rel=1e-12) and rate != pytest.approx(2 * GEMM_FLOPS / 30e-6 / 1e12)
        assert row["TB/s"] == pytest.approx((GEMM_BYTES / 20e-6 + GEMM_BYTES / 10e-6) / 2 / 1e12, rel=1e-12)
        assert row["Compute Peak (%)"] == pytest.approx(100 * rate * 1e12 / H100.bf16, rel=1e-12)
        assert row["Memory Peak (%)"] == pytest.approx(100 * row["TB/s"] * 1e12 / H100.bandwidth, rel=1e-12)
        assert (row["Bound"], row["Data Type"], row["Model"], row["Device ID"]) == ("memory", "bf16", "GEMM", 0)
    foo = rows[2]
    assert (foo["Instances"], foo["Kernel Time (ns)"], foo["GFLOPs"], foo["Bound"]) == (1, 2_000, None, "-")
    assert foo["Model"].startswith("no model") and "aten::foo" in foo["Model"]


def test_operator_summary_fills_the_utilisation_columns(trace):
    rows = {r["OP Name"].split(",")[0]: r for r in table(trace, "ppu_op_sum")}
    # The GEMM kernels are kernel-name operators (10 + 15 + 10 us) named by the outermost
    # framework operator, aten::linear; k1 and k2 share the work of linear #1, k3 has #2's.
    linear = rows["aten::linear"]
    assert (linear["OP Type"], linear["Instances"], linear["Total Time (ns)"]) == ("GEMM", 3, 35_000)
    assert linear["Compute Util (%)"] == pytest.approx(100 * 2 * GEMM_FLOPS / H100.bf16 / 35e-6, rel=1e-9)
    assert linear["HBM Load Util (%)"] + linear["HBM Store Util (%)"] == pytest.approx(
        100 * 2 * GEMM_BYTES / H100.bandwidth / 35e-6, rel=1e-9)
    assert rows["aten::foo"]["Compute Util (%)"] is None


def test_csv_prints_three_decimals(trace):
    run = run_cli("stats", "-r", "ppu_op_roofline", "--format", "csv", "--no-cache", trace)
    assert run.code == 0, run.err
    row = next(csv.DictReader(io.StringIO(run.out)))
    assert (row["GFLOPs"], row["Data Moved (MB)"], row["Kernel Time (ns)"]) == ("0.017", "0.263", "30000")


def test_rates_past_the_peak_are_named_in_a_note(tmp_path):
    # a device whose peak the spec sets far too low: 1 TFLOP/s bf16, 1 GB/s
    spec = tmp_path / "spec.json"
    spec.write_text('[{"match": "H100", "name": "tiny", "bandwidth": 1e9, "bf16": 1e12}]')
    run = run_cli("stats", "-r", "ppu_op_roofline", "--device-spec", spec, "--no-cache",
                  write_trace(tmp_path / "t.json", EVENTS, **TOP))
    assert run.code == 0
    notes = [line for line in run.err.splitlines() if "of the peak" in line]
    assert any("aten::linear" in line and "FLOP/s" in line for line in notes)
    assert any("aten::addmm" in line and "bandwidth" in line for line in notes)


def test_an_unknown_device_is_named(tmp_path):
    run = run_cli("stats", "-r", "ppu_op_roofline", "--no-cache",
                  write_trace(tmp_path / "t.json", EVENTS, deviceProperties=[{"id": 0, "name": "Mystery GPU 7"}]))
    assert run.code == 0 and "no peak figures for device 0 (Mystery GPU 7)" in run.err
    assert "Compute Peak" in run.out


def test_comparison_puts_the_rates_side_by_side(tmp_path, trace):
    faster = [dict(e, dur=e["dur"] / 2) if e.get("cat") == "kernel" else e for e in EVENTS]
    target = write_trace(tmp_path / "fast.json", faster, **TOP)
    with asysstats.open(trace, cache=False) as base, asysstats.open(target, cache=False) as other:
        rows = asysstats.compare(base, other, ["ppu_operator_roofline_compare"])[
            "ppu_operator_roofline_compare"].to_pylist()
    addmm = next(r for r in rows if r["Target OP Name"].startswith("aten::addmm"))
    # halved kernels keep their starts: k1 1020..1025, k2 1025..1032.5 (12.5 us), k3 1120..1125 (5 us)
    assert addmm["Kernel Time (ns)"] == {"base": 30_000, "target": 17_500}
    assert addmm["Kernel Time Ratio"] == pytest.approx(17.5 / 30)
    rates = addmm["TFLOP/s"]
    assert rates["target"] == pytest.approx((GEMM_FLOPS / 12.5e-6 + GEMM_FLOPS / 5e-6) / 2 / 1e12, rel=1e-9)
    assert addmm["TFLOP/s Ratio"] == pytest.approx(rates["target"] / rates["base"])
    assert addmm["Bound"] == {"base": "memory", "target": "memory"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 20)), min_size=1, max_size=3),
                min_size=1, max_size=5))
def test_property_against_brute_force(tmp_path, instances):
    """Random instances of one mm, each launching overlapping kernels: instances, kernel time
    (union per instance, by brute force over microseconds) and the mean rate."""
    events, corr, unions = [], 0, []
    for i, kernels in enumerate(instances):
        start = 1000 + i * 1000
        events.append(x("cpu_op", "aten::mm", start, 100, **{"Input Dims": [[64, 32], [32, 16]],
                                                             "Input type": ["float", "float"]}))
        covered = set()
        for offset, length in kernels:
            corr += 1
            events.append(x("cuda_runtime", "cudaLaunchKernel", start + 1 + corr % 50, 0.5, correlation=corr))
            events.append(gpu("kernel", "k", start + 200 + offset, length, corr))
            covered |= set(range(offset, offset + length))
        unions.append(len(covered) * 1000)
    path = write_trace(tmp_path / f"p{len(events)}_{corr}.json", events, **TOP)
    (row,) = table(path)
    flops = 2 * 64 * 16 * 32
    assert (row["Instances"], row["Kernel Time (ns)"]) == (len(instances), sum(unions))
    assert row["TFLOP/s"] == pytest.approx(np.mean([flops / (u * 1e-9) for u in unions]) / 1e12, rel=1e-9)


def test_emit_nvtx_texts_are_modelled_with_bf16_assumed(writer):
    # an asysrep with emit_nvtx(record_shapes=True) ranges (no data types recorded), times in ns:
    #   aten::mm, seq = 3, op_id = 7, sizes = [[64, 32], [32, 16]]  0 |--------| 100
    #   launch 10; kernel                                           200 |----| 240
    build = Build(writer)
    build.device(0, "PPU-ZW810E")
    build.range("aten::mm, seq = 3, op_id = 7, sizes = [[64, 32], [32, 16]], input_op_ids = [(1,0), (2,0)]", 0, 100)
    build.kernel("gemm", 200, 240, launch=10)
    (row,) = table(build.close())
    assert row["GFLOPs"] == pytest.approx(2 * 64 * 16 * 32 / 1e9) and row["Data Type"] == "bf16 (assumed)"
    assert row["OP Name"] == "aten::mm, sizes = [[64, 32], [32, 16]]" and row["Kernel Time (ns)"] == 40
    assert row["TFLOP/s"] == pytest.approx(2 * 64 * 16 * 32 / 40e-9 / 1e12)


def dlprof_copy(tmp_path):
    path = NSYS_CORPUS / "dlprof_relu.sqlite"
    if not path.exists():
        pytest.skip("corpus absent")
    return path


def test_pyprof_markers_of_a_real_nsight_export(tmp_path):
    """dlprof_relu: pyprof's markers carry the shapes (DLProf's NVTX plugin); its first linear
    layer is x (32, 400) W (120, 400) b (120,) in fp32: 2 x 32 x 120 x 400 + 32 x 120 FLOPs."""
    path = dlprof_copy(tmp_path)
    before = fingerprint(path)
    rows = [r for r in table(path) if r["OP Name"].startswith("torch.nn.functional.linear")]
    first = next(r for r in rows if "[[32, 400], [120, 400], [120]]" in r["OP Name"])
    assert first["GFLOPs"] * 1e9 == pytest.approx(2 * 32 * 120 * 400 + 32 * 120, rel=1e-12)
    assert first["Data Moved (MB)"] * 1e6 == pytest.approx((32 * 400 + 400 * 120 + 32 * 120 + 120) * 4, rel=1e-12)
    assert (first["Data Type"], first["Model"]) == ("fp32", "GEMM") and first["Instances"] == 1
    assert fingerprint(path) == before


def test_emit_nvtx_sizes_in_a_real_nsight_export(tmp_path):
    """dlprof_relu's emit_nvtx ranges were recorded without shapes; the copy gets the sizes
    emit_nvtx(record_shapes=True) writes (those of the pyprof marker around each range)."""
    path = tmp_path / "relu.sqlite"
    shutil.copyfile(dlprof_copy(tmp_path), path)
    with sqlite3.connect(path) as con:
        con.execute("UPDATE NVTX_EVENTS SET text = text || ', sizes = [[32, 400], [120, 400], [120]]' "
                    "WHERE text LIKE 'aten::linear, seq = %' AND rowid = (SELECT min(rowid) FROM NVTX_EVENTS "
                    "WHERE text LIKE 'aten::linear, seq = %')")
    rows = [r for r in table(path) if r["OP Name"].startswith("aten::linear, sizes")]
    assert len(rows) == 1 and rows[0]["GFLOPs"] * 1e9 == 2 * 32 * 120 * 400 + 32 * 120
    assert rows[0]["Data Type"] == "bf16 (assumed)"


@pytest.mark.parametrize("path", TRACES or [None], ids=lambda p: p.name if p else "absent")
def test_every_kineto_trace(path):
    if path is None:
        pytest.skip("kineto corpus absent")
    for rule in ("ppu_op_roofline", "ppu_op_sum"):
        run = run_cli("stats", "-r", rule, "--format", "csv", path)
        assert run.code == 0 and "Traceback" not in run.err, run.err
    rows = list(csv.DictReader(io.StringIO(run_cli("stats", "-r", "ppu_op_roofline", "--format", "csv", path).out)))
    for row in rows:
        for column in ("Compute Peak (%)", "Memory Peak (%)"):
            value = row[column]
            assert value == "-" or 0 <= float(value) or math.isnan(float(value))


F32, FP8 = "float", "c10::Float8_e4m3fn"
CONV_TYPES = [F32] * 3 + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"]
# One call per model, its work worked out by hand: (name, Input Dims, Input type, Concrete Inputs, FLOPs, bytes).
MODEL_CALLS = [
    ("aten::mm", [[8, 4], [4, 2]], [BF16] * 2, ["", ""], 2 * 8 * 2 * 4, (32 + 8 + 16) * 2),
    ("aten::bmm", [[3, 8, 4], [3, 4, 2]], [F32] * 2, ["", ""], 3 * 2 * 8 * 2 * 4, 3 * (32 + 8 + 16) * 4),
    # + the bias added: 3 x 16; the bias [3, 8, 2] read
    ("aten::baddbmm", [[3, 8, 2], [3, 8, 4], [3, 4, 2], [], []], [F32] * 3 + ["Scalar"] * 2, ["", "", "", "1", "1"],
     384 + 48, 48 * 4 + 3 * (32 + 8 + 16) * 4),
    ("aten::matmul", [[2, 8, 4], [4, 2]], [BF16] * 2, ["", ""], 2 * 2 * 8 * 2 * 4, (64 + 8 + 32) * 2),
    # M = 2 x 8, N = 6, K = 4, a bias of 6
    ("aten::linear", [[2, 8, 4], [6, 4], [6]], [BF16] * 3, ["", "", ""], 2 * 16 * 6 * 4 + 16 * 6,
     (64 + 24 + 6 + 96) * 2),
    # fp8 operands, two fp32 scales, a bf16 output (out_dtype 15)
    ("aten::_scaled_mm", [[16, 32], [32, 8], [], [], [], [], [], []], [FP8, FP8, F32, F32, "", "", "Scalar", "bool"],
     ["", "", "", "", "", "", "15", "False"], 2 * 16 * 8 * 32, 512 + 256 + 8 + 128 * 2),
    # x [1, 3, 8, 8] * W [4, 3, 3, 3], padding 1: out [1, 4, 8, 8], 27 MACs an output, + the bias
    ("aten::convolution", [[1, 3, 8, 8], [4, 3, 3, 3], [4], [], [], [], [], [], []], CONV_TYPES,
     ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"], 2 * 256 * 27 + 256, (192 + 108 + 4 + 256) * 4),
    # dx and dW (each the forward's 2 x 256 x 27), db (256); reads dy+W, dy+x, dy; writes x, W, b
    ("aten::convolution_backward", [[1, 4, 8, 8], [1, 3, 8, 8], [4, 3, 3, 3]] + [[]] * 8,
     [F32] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"],
     ["", "", "", "[4]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, True]"],
     2 * 13824 + 256, (256 + 108 + 256 + 192 + 256) * 4 + (192 + 108 + 4) * 4),
    # causal 16 x 16 (128 pairs) x 8 heads x 2 x (64 + 64); q, k, v read, o written
    ("aten::_scaled_dot_product_flash_attention", [[1, 8, 16, 64]] * 3 + [[]] * 4, [BF16] * 3 + ["Scalar"] * 4,
     ["", "", "", "0.", "True", "False", "0.125"], 8 * 128 * 2 * 128, 4 * 8 * 16 * 64 * 2),
    ("aten::silu", [[4, 16]], [BF16], [""], 64, 2 * 64 * 2),
    ("aten::mul", [[4, 16], [16]], [BF16] * 2, ["", ""], 64, (64 + 16 + 64) * 2),  # broadcast [16]
    ("aten::sum", [[4, 16], [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[1]", "False", ""], 64,
     64 * 4 + 4 * 4),
    # n = 64, C = 16 in training: 2n + 3n + 6C FLOPs; x + 4 vectors of C read, y + 2 statistics written
    ("aten::layer_norm", [[4, 16], [], [16], [16], [], []], [BF16, "ScalarList", BF16, BF16, "Scalar", "Scalar"],
     ["", "[16]", "", "", "1e-05", "True"], 2 * 64 + 3 * 64 + 6 * 16, (64 + 4 * 16) * 2 + (64 + 2 * 16) * 2),
    ("aten::native_batch_norm", [[2, 4, 8, 8], [4], [4], [4], [4], [], [], []], [F32] * 5 + ["Scalar"] * 3,
     ["", "", "", "", "", "True", "0.1", "1e-05"], 5 * 512 + 6 * 4, (512 + 4 * 4) * 4 + (512 + 2 * 4) * 4),
    # 4 rows of C = 16: R (2C + 2) + n + n for the weight
    ("aten::rms_norm", [[4, 16], [], [16], []], [BF16, "ScalarList", BF16, "Scalar"], ["", "[16]", "", "1e-06"],
     4 * 34 + 64 + 64, (64 + 16 + 64) * 2),
    ("aten::_softmax", [[4, 16], [], []], [F32, "Scalar", "Scalar"], ["", "-1", "False"], 5 * 64, 2 * 64 * 4),
    # 32 indices of a [100, 16] table: 32 rows of 16 read and written, the int64 indices read
    ("aten::embedding", [[100, 16], [4, 8], [], [], []], [BF16, "long int", "Scalar", "Scalar", "Scalar"],
     ["", "", "-1", "False", "False"], 0, 32 * 16 * 2 + 32 * 8 + 32 * 16 * 2),
    ("aten::copy_", [[4, 16], [4, 16], []], [BF16, F32, "Scalar"], ["", "", "False"], 64, 64 * 4 + 64 * 2),
    ("aten::_to_copy", [[4, 16], [], [], [], [], [], []], [F32, "Scalar", "", "", "", "Scalar", ""],
     ["", "15", "", "", "", "False", ""], 64, 64 * 4 + 64 * 2),
]


def test_every_model_through_a_trace(tmp_path):
    """Each call above as a cpu_op launching one 2 us kernel (call i at 1000 + 100 i us):
    the row's work is the hand count, its rate that work over 2 us."""
    events = []
    for i, (name, dims, types, concrete, _, _) in enumerate(MODEL_CALLS):
        start = 1000 + 100 * i
        events += [x("cpu_op", name, start, 50, **{"Input Dims": dims, "Input type": types,
                                                  "Input Strides": [[] for _ in dims], "Concrete Inputs": concrete}),
                   x("cuda_runtime", "cudaLaunchKernel", start + 10, 1, correlation=i + 1),
                   gpu("kernel", f"kernel_{i}", start + 60, 2, i + 1)]
    rows = {r["OP Name"].split(",")[0]: r for r in table(write_trace(tmp_path / "models.json", events, **TOP))}
    assert len(rows) == len(MODEL_CALLS)
    for name, _, _, _, flops, moved in MODEL_CALLS:
        row = rows[name]
        assert (row["GFLOPs"] * 1e9, row["Data Moved (MB)"] * 1e6) == pytest.approx((flops, moved), rel=1e-12), name
        assert row["Kernel Time (ns)"] == 2000 and row["TB/s"] == pytest.approx(moved / 2e-6 / 1e12), name
        assert row["Model"] and not row["Model"].startswith("no model"), name


def test_one_listed_device_is_the_one_the_kernels_run_on(tmp_path):
    # a ROCm trace under HIP_VISIBLE_DEVICES: deviceProperties lists id 0, the kernels run on device 2
    events = [dict(e, args={**e["args"], "device": 2}) if e["cat"] == "kernel" else e for e in EVENTS]
    path = write_trace(tmp_path / "rocm.json", events, deviceProperties=[{"id": 0, "name": "AMD Instinct MI300X"}])
    run = run_cli("stats", "-r", "ppu_op_roofline", "--no-cache", path)
    assert run.code == 0 and "no peak figures" not in run.err
    row = table(path)[0]
    mi300 = find_device("AMD Instinct MI300X")
    assert row["Device ID"] == 2 and row["Compute Peak (%)"] == pytest.approx(100 * row["TFLOP/s"] * 1e12 / mi300.bf16)


def test_past_peak_notes_name_five_then_count(tmp_path):
    # seven mm shapes, each one 1 us kernel, on a device of 1 GFLOP/s: all past the peak
    events = []
    for i in range(7):
        start = 1000 + 100 * i
        events += [x("cpu_op", "aten::mm", start, 50, **{"Input Dims": [[8 + i, 64], [64, 64]],
                                                         "Input type": ["float", "float"]}),
                   x("cuda_runtime", "cudaLaunchKernel", start + 10, 1, correlation=i + 1),
                   gpu("kernel", "k", start + 60, 1, i + 1)]
    spec = tmp_path / "slow.json"
    spec.write_text('[{"match": "H100", "bandwidth": 1e15, "fp32": 1e9}]')
    run = run_cli("stats", "-r", "ppu_op_roofline", "--device-spec", spec, "--no-cache",
                  write_trace(tmp_path / "seven.json", events, **TOP))
    named = [line for line in run.err.splitlines() if "achieves" in line]
    assert len(named) == 5 and "[[14, 64], [64, 64]]" in named[0]  # the largest first
    assert "2 more operators pass 100 % of the peak FLOP/s" in run.err
